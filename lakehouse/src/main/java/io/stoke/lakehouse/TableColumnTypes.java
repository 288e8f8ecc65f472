package io.stoke.lakehouse;

import java.util.ArrayList;
import java.util.List;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.Type;

/**
 * The columns of a Parquet file Stoke wrote, as a table's schema names them: what a Delta Lake and an
 * Iceberg schema are made of when Stoke appends its files to a table ({@link OutputTable}). Flat
 * columns of a primitive type, and lists of them in Parquet's three-level form, which is all Stoke's
 * tables hold; anything else is refused.
 */
record TableColumnTypes(List<Column> columns) {
    /** A column's value type. */
    enum Kind {
        STRING,
        BINARY,
        BOOLEAN,
        INT,
        LONG,
        FLOAT,
        DOUBLE
    }

    /**
     * A column.
     *
     * @param name            its name
     * @param kind            its value's type (a list's element's)
     * @param required        whether every row has a value
     * @param list            whether it is a list of {@code kind}
     * @param elementRequired for a list, whether every element has a value
     */
    record Column(String name, Kind kind, boolean required, boolean list, boolean elementRequired) {}

    static TableColumnTypes of(MessageType schema) {
        List<Column> columns = new ArrayList<>();
        for (Type field : schema.getFields()) {
            boolean required = field.getRepetition() == Type.Repetition.REQUIRED;
            if (field.isPrimitive()) {
                columns.add(new Column(field.getName(), kind(field.asPrimitiveType()), required, false, false));
                continue;
            }
            GroupType group = field.asGroupType();
            boolean isList = group.getLogicalTypeAnnotation() instanceof LogicalTypeAnnotation.ListLogicalTypeAnnotation
                    && group.getFieldCount() == 1
                    && !group.getType(0).isPrimitive()
                    && group.getType(0).isRepetition(Type.Repetition.REPEATED)
                    && group.getType(0).asGroupType().getFieldCount() == 1
                    && group.getType(0).asGroupType().getType(0).isPrimitive();
            if (!isList) {
                throw new IllegalArgumentException(
                        "column " + field.getName() + " is neither a primitive nor a list of one: not a table column");
            }
            Type element = group.getType(0).asGroupType().getType(0);
            columns.add(new Column(
                    field.getName(),
                    kind(element.asPrimitiveType()),
                    required,
                    true,
                    element.getRepetition() == Type.Repetition.REQUIRED));
        }
        return new TableColumnTypes(List.copyOf(columns));
    }

    private static Kind kind(PrimitiveType type) {
        LogicalTypeAnnotation logical = type.getLogicalTypeAnnotation();
        return switch (type.getPrimitiveTypeName()) {
            case BINARY ->
                logical instanceof LogicalTypeAnnotation.StringLogicalTypeAnnotation ? Kind.STRING : Kind.BINARY;
            case BOOLEAN -> Kind.BOOLEAN;
            case INT32 -> {
                if (logical != null) {
                    throw refused(type);
                }
                yield Kind.INT;
            }
            case INT64 -> {
                if (logical != null) {
                    throw refused(type);
                }
                yield Kind.LONG;
            }
            case FLOAT -> Kind.FLOAT;
            case DOUBLE -> Kind.DOUBLE;
            default -> throw refused(type);
        };
    }

    private static IllegalArgumentException refused(PrimitiveType type) {
        return new IllegalArgumentException(
                "column " + type.getName() + " is of type " + type + ", which Stoke does not name in a table's schema");
    }
}
