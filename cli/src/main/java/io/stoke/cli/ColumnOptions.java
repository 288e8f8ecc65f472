package io.stoke.cli;

import io.stoke.loader.source.TableColumns;
import io.stoke.serve.OptionTable;
import java.util.Set;
import picocli.CommandLine.Command;

/**
 * {@code --image-column}, {@code --label-column} and {@code --key-column} alone, from the options
 * table: which Parquet columns hold a sample, for the commands that read a dataset without driving
 * a loader ({@code pack}, {@code cache}). {@link LoaderOptions#install} adds them.
 */
@Command // what picocli asks of a mixin
final class ColumnOptions {
    final LoaderOptions options =
            new LoaderOptions(OptionTable.shipped(), Set.of("image_column", "label_column", "key_column"));

    TableColumns columns() {
        return options.columns();
    }
}
