package io.stoke.loader.source;

import java.io.Serializable;

/**
 * Which columns of a table dataset (Parquet) hold a sample's image, label and key; null for each
 * means its default: the first image struct ({@code struct<bytes: binary, path: string>}, the
 * Hugging Face {@code datasets} library's {@code Image} feature), else the one binary column; an
 * integer column named {@code label}, else none; no key column (a sample is named by its row).
 * Serializable: Spark ships it to the tasks of {@code stoke spark-embed}, each of which opens a file.
 */
public record TableColumns(String image, String label, String key) implements Serializable {
    /** Every column found by its default. */
    public static final TableColumns DEFAULT = new TableColumns(null, null, null);

    public TableColumns {
        for (String c : new String[] {image, label, key}) {
            if (c != null && c.isBlank()) {
                throw new IllegalArgumentException("a column name must not be blank");
            }
        }
    }

    /** Whether every column is found by its default. */
    public boolean isDefault() {
        return image == null && label == null && key == null;
    }
}
