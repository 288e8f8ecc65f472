package io.stoke.lakehouse;

import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Datasets;
import io.stoke.remote.ObjectStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToLongFunction;
import java.util.regex.Matcher;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.LocationProviders;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;
import org.apache.iceberg.mapping.MappingUtil;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * {@link OutputTable}'s Apache Iceberg side: one {@code AppendFiles} of Iceberg's library (a new
 * snapshot; its manifest and manifest list written beside the metadata), committed as Hadoop's
 * layout commits: {@code metadata/v(N+1).metadata.json} created at most once ({@link LogFiles}),
 * then {@code version-hint.text} pointed at it. Iceberg's own retries are off
 * ({@code commit.retry.num-retries=0}): where another writer took the version, the table is read
 * again here and what it still lacks is appended, so no file is added twice.
 *
 * <p>Stoke's Parquet files carry no Iceberg field ids, so the table holds a name mapping
 * ({@code schema.name-mapping.default}), by which Iceberg's readers (Spark's, Trino's, PyIceberg)
 * find the columns by name.
 */
final class IcebergAppend {
    /** Commits tried before giving up, each after reading the table again. */
    private static final int ATTEMPTS = 10;

    private IcebergAppend() {}

    static OutputTable.Appended append(
            String root,
            TableColumnTypes columns,
            List<OutputTable.DataFile> files,
            ToLongFunction<String> sizes,
            ObjectStore store) {
        String shown = Urls.redact(root);
        // As Spark and Hadoop's file systems name places: a URL, or file: and the path as it is
        // (unencoded, as Hadoop's Path takes it: a space stays a space).
        String location = Datasets.isUrl(root)
                ? root
                : "file:" + PositionedFile.local(root).toAbsolutePath().normalize();
        LogFiles log = new LogFiles(store);
        IcebergFileIO io = new IcebergFileIO(store, null, null, log);
        Schema schema = schema(columns);
        for (int attempt = 1; ; attempt++) {
            HadoopLayout ops = new HadoopLayout(root, location, io, log, store);
            try {
                if (ops.current() == null) {
                    ops.commit(null, created(schema, location));
                }
                Table table = new BaseTable(ops, shown);
                if (!table.schema().sameSchema(schema)) {
                    throw new IllegalArgumentException(shown + " is an Apache Iceberg table of another schema ("
                            + table.schema() + "): not appended to; write to another output");
                }
                Set<String> held = locations(table);
                AppendFiles append = table.newAppend();
                int added = 0;
                for (OutputTable.DataFile f : files) {
                    String path = location + "/" + f.name();
                    if (!held.contains(path)) {
                        append.appendFile(DataFiles.builder(table.spec())
                                .withPath(path)
                                .withFormat(FileFormat.PARQUET)
                                .withFileSizeInBytes(sizes.applyAsLong(f.name()))
                                .withRecordCount(f.rows())
                                .build());
                        added++;
                    }
                }
                if (added > 0) {
                    append.commit();
                }
                long version = ops.current().currentSnapshot() == null
                        ? 0
                        : ops.current().currentSnapshot().snapshotId();
                return new OutputTable.Appended(OutputTable.Format.ICEBERG, version, added, held.size() + added);
            } catch (CommitFailedException e) {
                if (attempt == ATTEMPTS) {
                    throw new IllegalStateException(
                            shown + ": " + ATTEMPTS
                                    + " commits to the Apache Iceberg table found another writer's version first: not appended",
                            e);
                }
            }
        }
    }

    /** The table's first metadata: unpartitioned, format 2, its columns mapped by name, no retries of Iceberg's own. */
    private static TableMetadata created(Schema schema, String location) {
        return TableMetadata.newTableMetadata(
                schema,
                PartitionSpec.unpartitioned(),
                location,
                Map.of(
                        TableProperties.FORMAT_VERSION, "2",
                        TableProperties.DEFAULT_NAME_MAPPING, NameMappingParser.toJson(MappingUtil.create(schema)),
                        TableProperties.COMMIT_NUM_RETRIES, "0"));
    }

    private static Set<String> locations(Table table) {
        Set<String> held = new HashSet<>();
        if (table.currentSnapshot() == null) {
            return held;
        }
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                held.add(task.file().location());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the table's manifests: " + e.getMessage(), e);
        }
        return held;
    }

    /**
     * The table's schema, its field ids given as Iceberg gives them to a new table's (the top-level
     * columns first, in order, then a list's element), so the name mapping made from it holds.
     */
    static Schema schema(TableColumnTypes columns) {
        List<Types.NestedField> fields = new ArrayList<>();
        int id = 0;
        for (TableColumnTypes.Column c : columns.columns()) {
            Type type = type(c.kind());
            if (c.list()) {
                type = c.elementRequired() ? Types.ListType.ofRequired(0, type) : Types.ListType.ofOptional(0, type);
            }
            fields.add(
                    c.required()
                            ? Types.NestedField.required(++id, c.name(), type)
                            : Types.NestedField.optional(++id, c.name(), type));
        }
        AtomicInteger last = new AtomicInteger();
        return TypeUtil.assignFreshIds(new Schema(fields), last::incrementAndGet);
    }

    private static Type type(TableColumnTypes.Kind kind) {
        return switch (kind) {
            case STRING -> Types.StringType.get();
            case BINARY -> Types.BinaryType.get();
            case BOOLEAN -> Types.BooleanType.get();
            case INT -> Types.IntegerType.get();
            case LONG -> Types.LongType.get();
            case FLOAT -> Types.FloatType.get();
            case DOUBLE -> Types.DoubleType.get();
        };
    }

    /**
     * A table's operations in Hadoop's layout, over Stoke's file access: the current metadata is the
     * highest {@code vN.metadata.json} (found from {@code version-hint.text}, or a listing, then by
     * looking past it for a later writer's), and a commit creates the next at most once.
     */
    private static final class HadoopLayout implements TableOperations {
        private final String root; // as given: a local folder or a URL
        private final String location; // as the metadata names it: file:/a/b or a URL
        private final IcebergFileIO io;
        private final LogFiles log;
        private final ObjectStore store;
        private TableMetadata current;
        private long version; // of current; 0: no table yet

        HadoopLayout(String root, String location, IcebergFileIO io, LogFiles log, ObjectStore store) {
            this.root = root;
            this.location = location;
            this.io = io;
            this.log = log;
            this.store = store;
            refresh();
        }

        @Override
        public TableMetadata current() {
            return current;
        }

        @Override
        public TableMetadata refresh() {
            if (OutputTable.at(root, store) == null) {
                current = null;
                version = 0;
                return null;
            }
            String file = IcebergSnapshots.metadataFile(location, store);
            Matcher m = IcebergSnapshots.METADATA_VERSION.matcher(file.substring(file.lastIndexOf('/') + 1));
            if (!m.matches() || m.group(1) == null) {
                throw new IllegalArgumentException(Urls.redact(location) + " is an Apache Iceberg table whose metadata"
                        + " is named as a catalog names it (" + file.substring(file.lastIndexOf('/') + 1)
                        + "), where Stoke appends in Hadoop's layout (vN.metadata.json): write to another output");
            }
            // metadataFile looked past the hint for versions a writer has not pointed it at yet.
            version = Long.parseLong(m.group(1));
            current = TableMetadataParser.read(io, file);
            return current;
        }

        @Override
        public void commit(TableMetadata base, TableMetadata metadata) {
            if (base != current) {
                throw new CommitFailedException("the table changed since it was read");
            }
            long next = version + 1;
            String file = metadataFileLocation("v" + next + ".metadata.json");
            if (!log.createOnce(file, TableMetadataParser.toJson(metadata).getBytes(StandardCharsets.UTF_8))) {
                throw new CommitFailedException("another writer made version %d first", next);
            }
            log.replace(
                    metadataFileLocation("version-hint.text"),
                    Long.toString(next).getBytes(StandardCharsets.UTF_8));
            version = next;
            current = TableMetadataParser.read(io, file);
        }

        @Override
        public FileIO io() {
            return io;
        }

        @Override
        public String metadataFileLocation(String fileName) {
            return location + "/metadata/" + fileName;
        }

        @Override
        public LocationProvider locationProvider() {
            return LocationProviders.locationsFor(location, current == null ? Map.of() : current.properties());
        }
    }
}
