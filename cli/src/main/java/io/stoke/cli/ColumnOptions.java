package io.stoke.cli;

import io.stoke.loader.source.TableColumns;
import io.stoke.serve.OptionTable;
import java.util.Set;
import picocli.CommandLine.Command;

/**
 * {@code --image-column}, {@code --label-column} and {@code --key-column}, and a table's
 * {@code --table-version} and {@code --as-of}, alone, from the options table: which Parquet columns
 * hold a sample, and which snapshot of a Delta Lake or Iceberg table, for the commands that read a dataset
 * without driving a loader ({@code pack}, {@code cache}). {@link LoaderOptions#install} adds them.
 */
@Command // what picocli asks of a mixin
final class ColumnOptions {
    final LoaderOptions options = new LoaderOptions(
            OptionTable.shipped(), Set.of("image_column", "label_column", "key_column", "table_version", "as_of"));

    TableColumns columns() {
        return options.columns();
    }

    /** {@code data} with the snapshot {@code --table-version} or {@code --as-of} names (LoaderSetup#dataSpec). */
    String dataSpec(String data) {
        return options.dataSpec(data);
    }
}
