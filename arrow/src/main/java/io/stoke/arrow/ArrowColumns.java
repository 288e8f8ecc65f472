package io.stoke.arrow;

import io.stoke.loader.source.TableColumns;
import java.nio.file.Path;
import java.util.List;
import org.apache.arrow.vector.TypeLayout;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Where a dataset's image and label columns lie in each record batch of its files: field node and
 * buffer numbers, counted over the schema depth first as the IPC format lays them out (each type's
 * buffer count is Arrow Java's {@link TypeLayout}'s).
 *
 * <p>The image is the Hugging Face {@code Image} feature, {@code struct<bytes: binary, path: string>}
 * (the first such struct unless named), or a binary column; the label an integer column ({@code
 * ClassLabel} is int64), {@code label} unless named, or none.
 */
final class ArrowColumns {
    /** A binary or string column: its validity, offsets and data buffers, and its offsets' width. */
    record Values(int node, int validity, int offsets, int data, boolean large) {}

    /** An integer column: its validity and data buffers, its width in bytes and whether it is signed. */
    record Integers(int node, int validity, int data, int bytes, boolean signed) {}

    final String imageName;
    /** The image struct's own node and validity buffer, -1 for a binary image column. */
    final int structNode;

    final int structValidity;
    final Values bytes;
    /** The struct's path, null for a binary image column. */
    final Values path;
    /** The label, null for none. */
    final Integers label;

    private ArrowColumns(
            String imageName, int structNode, int structValidity, Values bytes, Values path, Integers label) {
        this.imageName = imageName;
        this.structNode = structNode;
        this.structValidity = structValidity;
        this.bytes = bytes;
        this.path = path;
        this.label = label;
    }

    /**
     * The columns of {@code schema} (of {@code file}) that {@code columns} names, or their defaults.
     *
     * @throws IllegalArgumentException naming the file and the column: missing, or of a type not read
     */
    static ArrowColumns find(Path file, Schema schema, TableColumns columns) {
        if (columns.key() != null) {
            throw new IllegalArgumentException(file + ": a key column (" + columns.key() + ") is read from Parquet"
                    + " only; an Arrow dataset's sample is named by its file and row");
        }
        List<Field> fields = schema.getFields();
        Field image = null;
        if (columns.image() != null) {
            image = field(file, fields, columns.image());
        } else {
            for (Field f : fields) {
                if (isImageStruct(f)) {
                    image = f;
                    break;
                }
            }
            if (image == null) {
                List<Field> binary =
                        fields.stream().filter(ArrowColumns::isBinary).toList();
                if (binary.size() != 1) {
                    throw new IllegalArgumentException(file + ": no image column (a struct<bytes: binary, path: "
                            + "string>, datasets' Image feature, or the one binary column) among " + names(fields)
                            + ": name it (image_column=)");
                }
                image = binary.get(0);
            }
        }
        if (image.getDictionary() != null) {
            throw new IllegalArgumentException(file + ": the image column " + image.getName()
                    + " is dictionary-encoded, which Stoke does not read");
        }
        Field label = null;
        if (columns.label() != null) {
            label = field(file, fields, columns.label());
        } else {
            label = fields.stream()
                    .filter(f -> f.getName().equals("label"))
                    .findFirst()
                    .orElse(null);
        }
        if (label != null && (!(label.getType() instanceof ArrowType.Int) || label.getDictionary() != null)) {
            throw new IllegalArgumentException(file + ": the label column " + label.getName() + " is "
                    + label.getType() + (label.getDictionary() != null ? " (dictionary-encoded)" : "")
                    + ", not an integer column (datasets' ClassLabel or an int Value)");
        }
        try {
            return place(fields, image, label);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
    }

    /** Numbers the nodes and buffers of {@code image} and {@code label} among {@code fields}. */
    private static ArrowColumns place(List<Field> fields, Field image, Field label) {
        int node = 0;
        int buffer = 0;
        int structNode = -1;
        int structValidity = -1;
        Values bytes = null;
        Values path = null;
        Integers labels = null;
        for (Field f : fields) {
            if (f == image) {
                if (isImageStruct(f)) {
                    structNode = node;
                    structValidity = buffer;
                    int childNode = node + 1;
                    int childBuffer = buffer + buffers(f.getType());
                    for (Field child : f.getChildren()) {
                        Values v = new Values(
                                childNode, childBuffer, childBuffer + 1, childBuffer + 2, isLarge(child.getType()));
                        if (child.getName().equals("bytes")) {
                            bytes = v;
                        } else if (child.getName().equals("path")) {
                            path = v;
                        }
                        childNode += nodes(child);
                        childBuffer += buffersOf(child);
                    }
                } else if (isBinary(f)) {
                    bytes = new Values(node, buffer, buffer + 1, buffer + 2, isLarge(f.getType()));
                } else {
                    throw new IllegalArgumentException("the image column " + f.getName() + " is "
                            + f.getType() + ", neither a struct<bytes: binary, path: string> (datasets' Image) nor"
                            + " binary");
                }
            }
            if (f == label) {
                ArrowType.Int t = (ArrowType.Int) f.getType();
                labels = new Integers(node, buffer, buffer + 1, t.getBitWidth() / 8, t.getIsSigned());
            }
            node += nodes(f);
            buffer += buffersOf(f);
        }
        return new ArrowColumns(image.getName(), structNode, structValidity, bytes, path, labels);
    }

    /** Whether the schema of another file of the dataset is this one's, as a dataset's files are. */
    static void sameSchema(Path first, Schema a, Path file, Schema b) {
        if (!a.getFields().equals(b.getFields())) {
            throw new IllegalArgumentException(file + ": its columns " + b.getFields() + " differ from those of "
                    + first + " (" + a.getFields() + "): a dataset's files share one schema");
        }
    }

    private static Field field(Path file, List<Field> fields, String name) {
        return fields.stream()
                .filter(f -> f.getName().equals(name))
                .findFirst()
                .orElseThrow(
                        () -> new IllegalArgumentException(file + ": no column " + name + " among " + names(fields)));
    }

    private static List<String> names(List<Field> fields) {
        return fields.stream().map(Field::getName).toList();
    }

    private static boolean isImageStruct(Field f) {
        if (!(f.getType() instanceof ArrowType.Struct)) {
            return false;
        }
        boolean bytes = false;
        boolean path = false;
        for (Field c : f.getChildren()) {
            bytes |= c.getName().equals("bytes") && isBinary(c) && c.getDictionary() == null;
            path |= c.getName().equals("path")
                    && (c.getType() instanceof ArrowType.Utf8 || c.getType() instanceof ArrowType.LargeUtf8)
                    && c.getDictionary() == null;
        }
        return bytes && path;
    }

    private static boolean isBinary(Field f) {
        return f.getType() instanceof ArrowType.Binary || f.getType() instanceof ArrowType.LargeBinary;
    }

    private static boolean isLarge(ArrowType t) {
        return t instanceof ArrowType.LargeBinary || t instanceof ArrowType.LargeUtf8;
    }

    private static int nodes(Field f) {
        int n = 1;
        for (Field c : f.getChildren()) {
            n += nodes(c);
        }
        return n;
    }

    private static int buffersOf(Field f) {
        int n = buffers(f.getType());
        for (Field c : f.getChildren()) {
            n += buffersOf(c);
        }
        return n;
    }

    private static int buffers(ArrowType t) {
        if (t instanceof ArrowType.BinaryView || t instanceof ArrowType.Utf8View) {
            throw new IllegalArgumentException(
                    "binary and string view columns are not read: cast them to binary and" + " string");
        }
        return TypeLayout.getTypeBufferCount(t);
    }
}
