package io.stoke.cli;

import io.stoke.loader.source.TableColumns;
import picocli.CommandLine.Option;

/** {@code --image-column}, {@code --label-column} and {@code --key-column}: which Parquet columns hold a sample. */
final class ColumnOptions {
    @Option(
            names = "--image-column",
            paramLabel = "NAME",
            description = "Parquet: the column holding each image, binary or an image struct "
                    + "(default: the first struct<bytes, path>, else the one binary column).")
    String imageColumn;

    @Option(
            names = "--label-column",
            paramLabel = "NAME",
            description = "Parquet: the integer column holding each label (default: label, when there is one).")
    String labelColumn;

    @Option(
            names = "--key-column",
            paramLabel = "NAME",
            description = "Parquet: the string or integer column naming each sample (default: its row in its file).")
    String keyColumn;

    TableColumns columns() {
        return new TableColumns(imageColumn, labelColumn, keyColumn);
    }
}
