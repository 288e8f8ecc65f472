package io.stoke.parquet;

import io.stoke.loader.source.TableColumns;
import java.util.ArrayList;
import java.util.List;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;

/**
 * The columns of one Parquet file that hold a sample's image bytes, label and key, found in its
 * schema by {@link TableColumns}: the image is a binary column or the {@code bytes} field of an
 * image struct ({@code struct<bytes: binary, path: string>}); the label an integer column; the key a
 * string or integer column. Each is a top-level, non-repeated field.
 *
 * @param image  the leaf holding the image's bytes
 * @param label  the label's leaf, or null (every label -1)
 * @param key    the key's leaf, or null (samples named by their row)
 * @param imageName how the image column is named to users ({@code image} or {@code image.bytes})
 */
record ImageColumns(ColumnDescriptor image, ColumnDescriptor label, ColumnDescriptor key, String imageName) {
    /** The leaves a row group's load reads, and no other. */
    List<ColumnDescriptor> projection() {
        List<ColumnDescriptor> out = new ArrayList<>(3);
        out.add(image);
        if (label != null) {
            out.add(label);
        }
        if (key != null) {
            out.add(key);
        }
        return out;
    }

    /**
     * The columns of {@code file}'s {@code schema}.
     *
     * @throws IllegalArgumentException naming the file and the column when a named column is
     *     missing or of the wrong type, or when no image column can be told by default
     */
    static ImageColumns resolve(MessageType schema, TableColumns wanted, String file) {
        Type imageField;
        if (wanted.image() != null) {
            imageField = field(schema, wanted.image(), file, "image");
            if (!isImageStruct(imageField) && !isBinary(imageField)) {
                throw new IllegalArgumentException(file + ": column " + wanted.image() + " is " + describe(imageField)
                        + ": an image column is binary, or a struct<bytes: binary, path: string>");
            }
        } else {
            imageField = defaultImage(schema, file);
        }
        ColumnDescriptor image;
        String imageName;
        if (isImageStruct(imageField)) {
            image = schema.getColumnDescription(new String[] {imageField.getName(), "bytes"});
            imageName = imageField.getName() + ".bytes";
        } else {
            image = schema.getColumnDescription(new String[] {imageField.getName()});
            imageName = imageField.getName();
        }

        ColumnDescriptor label = null;
        if (wanted.label() != null) {
            Type f = field(schema, wanted.label(), file, "label");
            if (!isInteger(f)) {
                throw new IllegalArgumentException(file + ": label column " + wanted.label() + " is " + describe(f)
                        + ": a label column is int32 or int64");
            }
            label = schema.getColumnDescription(new String[] {f.getName()});
        } else if (schema.containsField("label") && isInteger(schema.getType("label"))) {
            label = schema.getColumnDescription(new String[] {"label"});
        }

        ColumnDescriptor key = null;
        if (wanted.key() != null) {
            Type f = field(schema, wanted.key(), file, "key");
            if (!isInteger(f) && !isBinary(f)) {
                throw new IllegalArgumentException(file + ": key column " + wanted.key() + " is " + describe(f)
                        + ": a key column is a string or an integer");
            }
            key = schema.getColumnDescription(new String[] {f.getName()});
        }
        return new ImageColumns(image, label, key, imageName);
    }

    private static Type field(MessageType schema, String name, String file, String role) {
        if (!schema.containsField(name)) {
            List<String> names = new ArrayList<>();
            for (Type t : schema.getFields()) {
                names.add(t.getName());
            }
            throw new IllegalArgumentException(
                    file + " has no " + role + " column " + name + " (its columns: " + String.join(", ", names) + ")");
        }
        Type t = schema.getType(name);
        if (t.isRepetition(Type.Repetition.REPEATED)) {
            throw new IllegalArgumentException(file + ": " + role + " column " + name + " is repeated (a list)");
        }
        return t;
    }

    private static Type defaultImage(MessageType schema, String file) {
        for (Type t : schema.getFields()) {
            if (isImageStruct(t)) {
                return t;
            }
        }
        List<Type> binary = new ArrayList<>();
        for (Type t : schema.getFields()) {
            if (isBinary(t) && !isString(t)) {
                binary.add(t);
            }
        }
        if (binary.size() == 1) {
            return binary.get(0);
        }
        List<String> names = new ArrayList<>();
        for (Type t : binary) {
            names.add(t.getName());
        }
        throw new IllegalArgumentException(file
                + (binary.isEmpty()
                        ? " has no image struct (struct<bytes: binary, path: string>) and no binary column"
                        : " has no image struct and " + binary.size() + " binary columns (" + String.join(", ", names)
                                + ")")
                + ": name the image column (--image-column, image_column=)");
    }

    static boolean isImageStruct(Type t) {
        if (t.isPrimitive() || t.isRepetition(Type.Repetition.REPEATED)) {
            return false;
        }
        GroupType g = t.asGroupType();
        return g.containsField("bytes")
                && isBinary(g.getType("bytes"))
                && !g.getType("bytes").isRepetition(Type.Repetition.REPEATED);
    }

    private static boolean isBinary(Type t) {
        return t.isPrimitive() && t.asPrimitiveType().getPrimitiveTypeName() == PrimitiveTypeName.BINARY;
    }

    private static boolean isString(Type t) {
        LogicalTypeAnnotation a = t.getLogicalTypeAnnotation();
        return a instanceof LogicalTypeAnnotation.StringLogicalTypeAnnotation
                || a instanceof LogicalTypeAnnotation.EnumLogicalTypeAnnotation
                || a instanceof LogicalTypeAnnotation.JsonLogicalTypeAnnotation;
    }

    private static boolean isInteger(Type t) {
        if (!t.isPrimitive()) {
            return false;
        }
        PrimitiveTypeName p = t.asPrimitiveType().getPrimitiveTypeName();
        return p == PrimitiveTypeName.INT32 || p == PrimitiveTypeName.INT64;
    }

    private static String describe(Type t) {
        if (t.isPrimitive()) {
            PrimitiveType p = t.asPrimitiveType();
            LogicalTypeAnnotation a = p.getLogicalTypeAnnotation();
            return p.getPrimitiveTypeName().name().toLowerCase(java.util.Locale.ROOT)
                    + (a != null ? " (" + a + ")" : "");
        }
        return "a group "
                + t.asGroupType().getFields().stream().map(Type::getName).toList();
    }
}
