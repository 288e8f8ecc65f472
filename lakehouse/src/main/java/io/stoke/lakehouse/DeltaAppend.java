package io.stoke.lakehouse;

import io.delta.kernel.DataWriteContext;
import io.delta.kernel.Operation;
import io.delta.kernel.Snapshot;
import io.delta.kernel.Table;
import io.delta.kernel.Transaction;
import io.delta.kernel.TransactionBuilder;
import io.delta.kernel.TransactionCommitResult;
import io.delta.kernel.data.Row;
import io.delta.kernel.engine.Engine;
import io.delta.kernel.exceptions.ConcurrentWriteException;
import io.delta.kernel.exceptions.KernelException;
import io.delta.kernel.exceptions.TableAlreadyExistsException;
import io.delta.kernel.exceptions.TableNotFoundException;
import io.delta.kernel.internal.util.Utils;
import io.delta.kernel.statistics.DataFileStatistics;
import io.delta.kernel.types.ArrayType;
import io.delta.kernel.types.BinaryType;
import io.delta.kernel.types.BooleanType;
import io.delta.kernel.types.DataType;
import io.delta.kernel.types.DoubleType;
import io.delta.kernel.types.FloatType;
import io.delta.kernel.types.IntegerType;
import io.delta.kernel.types.LongType;
import io.delta.kernel.types.StringType;
import io.delta.kernel.types.StructType;
import io.delta.kernel.utils.CloseableIterable;
import io.delta.kernel.utils.CloseableIterator;
import io.delta.kernel.utils.DataFileStatus;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Datasets;
import io.stoke.remote.ObjectStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.ToLongFunction;

/**
 * {@link OutputTable}'s Delta Lake side: one transaction of Delta Kernel's that adds the files (a
 * {@code CREATE_TABLE} with their schema at the first), committed as the log's next version, created
 * at most once ({@link LogFiles}). Kernel itself reads the log again and retries where another writer
 * took that version, a blind append being free of conflicts; the log's replay keeps one {@code add}
 * per path, so two drivers adding the same file give it once. Kernel's post-commit hooks
 * (checkpoints, checksums) are not run: a log of commits alone is a whole table, read by every
 * reader, at the cost of replaying its JSON.
 */
final class DeltaAppend {
    /** How the commits name their writer ({@code commitInfo.engineInfo}). */
    static final String ENGINE_INFO = "Stoke";

    private DeltaAppend() {}

    /** Appends tried before giving up, each after reading the table again. */
    private static final int ATTEMPTS = 10;

    static OutputTable.Appended append(
            String root,
            TableColumnTypes columns,
            List<OutputTable.DataFile> files,
            ToLongFunction<String> sizes,
            ObjectStore store) {
        String shown = Urls.redact(root);
        Engine engine = new KernelEngine(new KernelFileIO(store, new LogFiles(store)));
        for (int attempt = 1; ; attempt++) {
            try {
                return appendOnce(shown, root, engine, schema(columns), files, sizes);
            } catch (ConcurrentWriteException | TableAlreadyExistsException e) {
                // Kernel rebases a blind append on another writer's commit itself; what reaches here is a
                // conflict it cannot (another writer created the table first): read it again, append what it lacks.
                if (attempt == ATTEMPTS) {
                    throw new IllegalStateException(
                            shown + ": " + ATTEMPTS + " appends to the Delta Lake table"
                                    + " met another writer's commit first: not appended: " + e.getMessage(),
                            e);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(shown + ": cannot append to the Delta Lake table: " + e.getMessage(), e);
            } catch (KernelException e) {
                throw new IllegalArgumentException(
                        shown + ": Delta Kernel cannot append to the table: " + e.getMessage(), e);
            }
        }
    }

    private static OutputTable.Appended appendOnce(
            String shown,
            String root,
            Engine engine,
            StructType schema,
            List<OutputTable.DataFile> files,
            ToLongFunction<String> sizes)
            throws IOException {
        Table table = Table.forPath(engine, root);
        String tablePath = table.getPath(engine);
        Set<String> held;
        boolean exists;
        long version = -1;
        try {
            Snapshot snapshot = table.getLatestSnapshot(engine);
            if (!snapshot.getSchema().equals(schema)) {
                throw new IllegalArgumentException(shown + " is a Delta Lake table of another schema ("
                        + snapshot.getSchema() + "): not appended to; write to another output");
            }
            held = locations(root, snapshot, engine);
            exists = true;
            version = snapshot.getVersion();
        } catch (TableNotFoundException e) {
            held = Set.of();
            exists = false;
        }
        List<DataFileStatus> added = new ArrayList<>();
        long now = System.currentTimeMillis();
        for (OutputTable.DataFile f : files) {
            // Where the log's path of the file resolves to: the name as it is, never parsed as a URI.
            String at = Datasets.isUrl(root)
                    ? root + "/" + f.name()
                    : Path.of(root).resolve(f.name()).toString();
            if (!held.contains(at)) {
                Optional<DataFileStatistics> stats =
                        Optional.of(new DataFileStatistics(f.rows(), Map.of(), Map.of(), Map.of(), Optional.empty()));
                added.add(new DataFileStatus(tablePath + "/" + f.name(), sizes.applyAsLong(f.name()), now, stats));
            }
        }
        if (added.isEmpty()) {
            return new OutputTable.Appended(OutputTable.Format.DELTA, version, 0, held.size());
        }
        TransactionBuilder builder =
                table.createTransactionBuilder(engine, ENGINE_INFO, exists ? Operation.WRITE : Operation.CREATE_TABLE);
        if (!exists) {
            builder = builder.withSchema(engine, schema);
        }
        Transaction txn = builder.build(engine);
        Row state = txn.getTransactionState(engine);
        DataWriteContext context = Transaction.getWriteContext(engine, state, Map.of());
        List<Row> actions = new ArrayList<>();
        try (CloseableIterator<Row> rows = Transaction.generateAppendActions(
                engine, state, Utils.toCloseableIterator(added.iterator()), context)) {
            rows.forEachRemaining(actions::add);
        }
        TransactionCommitResult result =
                txn.commit(engine, CloseableIterable.inMemoryIterable(Utils.toCloseableIterator(actions.iterator())));
        return new OutputTable.Appended(
                OutputTable.Format.DELTA, result.getVersion(), added.size(), held.size() + added.size());
    }

    /** The data files of {@code snapshot}, where each is ({@link DeltaSnapshots#resolve}). */
    private static Set<String> locations(String root, Snapshot snapshot, Engine engine) throws IOException {
        Set<String> held = new HashSet<>();
        DeltaSnapshots.forEachAdd(
                snapshot,
                engine,
                add -> held.add(DeltaSnapshots.resolve(
                        root, add.getString(add.getSchema().indexOf("path")))));
        return held;
    }

    /** The table's schema: each column nullable where its Parquet column is optional. */
    static StructType schema(TableColumnTypes columns) {
        StructType schema = new StructType();
        for (TableColumnTypes.Column c : columns.columns()) {
            DataType type = type(c.kind());
            schema = schema.add(c.name(), c.list() ? new ArrayType(type, !c.elementRequired()) : type, !c.required());
        }
        return schema;
    }

    private static DataType type(TableColumnTypes.Kind kind) {
        return switch (kind) {
            case STRING -> StringType.STRING;
            case BINARY -> BinaryType.BINARY;
            case BOOLEAN -> BooleanType.BOOLEAN;
            case INT -> IntegerType.INTEGER;
            case LONG -> LongType.LONG;
            case FLOAT -> FloatType.FLOAT;
            case DOUBLE -> DoubleType.DOUBLE;
        };
    }
}
