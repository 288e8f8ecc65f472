package io.stoke.arrow;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.ShardTable;
import io.stoke.loader.source.Shards;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.source.TableDatasetProvider;
import io.stoke.loader.source.UrlDatasetProvider;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Hugging Face {@code datasets.Dataset} read in place from its own Arrow files: each row's image is a
 * (file offset, length) in the file's mapping, decoded from there as a tar shard's member is; an image
 * stored as a path (bytes null) is read from its file, relative paths from the working folder as
 * datasets opens them. The dataset is named by one of:
 * <ul>
 *   <li>an {@code .arrow} file (a cache file, or one of {@code save_to_disk}'s);</li>
 *   <li>a folder {@code save_to_disk} wrote: the files its {@code state.json} lists;</li>
 *   <li>{@value Datasets#ARROW_SPEC}{@code {"files": [...], "indices": FILE}}: what {@code stoke.DataLoader}
 *       passes for a {@code datasets.Dataset}, its cache files in order and, where {@code select},
 *       {@code shuffle}, {@code filter} or a slice left an indices mapping, an Arrow file whose one
 *       integer column gives the row (over the files in order) of each sample.</li>
 * </ul>
 * Found by {@link Datasets#openLocalOrUrl(String, UrlDatasetProvider.ShardCache, TableColumns)} through
 * {@code META-INF/services}; {@link #open(String, TableColumns)} is the same for Java callers.
 */
public final class ArrowDatasets implements TableDatasetProvider {
    private static final ValueLayout.OfLong LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    /** For the service loader. */
    public ArrowDatasets() {}

    @Override
    public boolean opens(String spec) {
        return Datasets.isArrow(spec);
    }

    @Override
    public Dataset open(String spec, TableColumns columns, UrlDatasetProvider.ShardCache shardCache) {
        return open(spec, columns);
    }

    /** The files and indices mapping a spec names. */
    record Spec(List<Path> files, Path indices) {}

    /**
     * The Arrow dataset at {@code spec}: a {@link ShardDataset} over the mapped files when its images
     * are stored as bytes, a {@link FileDataset} when they are stored as paths.
     *
     * @throws IllegalArgumentException naming the file and the reason: not Arrow, compressed, a column
     *     missing or of a type not read, an index past the rows, images stored both ways
     */
    public static Dataset open(String spec, TableColumns columns) {
        Spec s = parse(spec);
        List<ArrowStreamFile> files = new ArrayList<>();
        for (Path p : s.files()) {
            files.add(ArrowStreamFile.read(p));
        }
        ArrowStreamFile first = files.get(0);
        for (ArrowStreamFile f : files) {
            ArrowColumns.sameSchema(first.path, first.schema, f.path, f.schema);
        }
        ArrowColumns cols = ArrowColumns.find(first.path, first.schema, columns);
        long total = 0;
        long[] firstRow = new long[files.size() + 1];
        for (int f = 0; f < files.size(); f++) {
            total = Math.addExact(total, files.get(f).rows);
            firstRow[f + 1] = total;
        }
        long[] rows = s.indices() != null ? indices(s.indices(), total) : null;
        long n = rows != null ? rows.length : total;
        if (n == 0) {
            throw new IllegalArgumentException(
                    "no rows in " + s.files() + (rows != null ? " (its indices select none)" : ""));
        }
        if (n > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(spec + ": " + n + " rows, more than a dataset holds (2^31)");
        }
        Arena arena = Arena.ofShared();
        try {
            return dataset(files, cols, firstRow, rows, (int) n, arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private static Dataset dataset(
            List<ArrowStreamFile> files, ArrowColumns cols, long[] firstRow, long[] rows, int n, Arena arena) {
        MemorySegment[] maps = new MemorySegment[files.size()];
        long[] versions = new long[files.size()];
        String[] names = new String[files.size()];
        for (int f = 0; f < maps.length; f++) {
            ArrowStreamFile file = files.get(f);
            names[f] = file.path.toString();
            try (FileChannel channel = FileChannel.open(file.path, StandardOpenOption.READ)) {
                if (channel.size() != file.size) {
                    throw new IllegalArgumentException(file.path + " changed while it was opened");
                }
                maps[f] = channel.map(FileChannel.MapMode.READ_ONLY, 0, file.size, arena);
                versions[f] = io.stoke.loader.source.ShardBytes.versionOf(
                        file.size, Files.getLastModifiedTime(file.path).to(TimeUnit.NANOSECONDS));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot map " + file.path + ": " + e.getMessage(), e);
            }
        }
        // Each sample's file, and its row in that file.
        int[] fileOf = new int[n];
        long[] rowOf = new long[n];
        for (int i = 0; i < n; i++) {
            long row = rows != null ? rows[i] : i;
            int f = Arrays.binarySearch(firstRow, row);
            f = f >= 0 ? f : -f - 2;
            while (firstRow[f + 1] == row) {
                f++; // past empty files
            }
            fileOf[i] = f;
            rowOf[i] = row - firstRow[f];
        }
        ArrowRowReader reader = new ArrowRowReader(files, maps, cols);
        long[] offsets = new long[n];
        int[] lengths = new int[n];
        int[] labels = new int[n];
        SampleStatus[] status = new SampleStatus[n];
        String[] details = new String[n];
        String[] paths = new String[n];
        int withBytes = 0;
        int withPath = 0;
        for (int i = 0; i < n; i++) {
            reader.read(fileOf[i], rowOf[i]);
            labels[i] = reader.label;
            status[i] = reader.status;
            details[i] = reader.detail;
            if (reader.status == SampleStatus.OK) {
                if (reader.path != null) {
                    paths[i] = reader.path;
                    withPath++;
                } else {
                    offsets[i] = reader.offset;
                    lengths[i] = reader.length;
                    withBytes++;
                }
            }
        }
        if (withPath > 0 && withBytes > 0) {
            throw new IllegalArgumentException(names[0] + ": the image column " + cols.imageName + " holds "
                    + withBytes + " images as bytes and " + withPath + " as paths; Stoke reads one or the other: "
                    + "cast_column(\"" + cols.imageName + "\", Image()) after embedding the files"
                    + " (ds.map(lambda r: r, features=...) with the bytes read, or save_to_disk of a dataset made from"
                    + " the files' bytes)");
        }
        if (withPath > 0) {
            List<String> list = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                if (paths[i] == null) {
                    throw new IllegalArgumentException(names[fileOf[i]] + " row " + rowOf[i] + ": " + details[i]);
                }
                list.add(paths[i]);
            }
            arena.close(); // the images are files: nothing of the mappings is read again
            return FileDataset.of(Path.of("").toAbsolutePath(), list, labels);
        }
        // Shards: runs of samples in one file.
        List<Integer> starts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (i == 0 || fileOf[i] != fileOf[i - 1]) {
                starts.add(i);
            }
        }
        int shards = starts.size();
        int[] firstSample = new int[shards + 1];
        int[] fileOfShard = new int[shards];
        String[] shardNames = new String[shards];
        ShardTable[] tables = new ShardTable[shards];
        for (int s = 0; s < shards; s++) {
            int from = starts.get(s);
            int to = s + 1 < shards ? starts.get(s + 1) : n;
            firstSample[s] = from;
            fileOfShard[s] = fileOf[from];
            shardNames[s] = names[fileOf[from]];
            List<String> keys = new ArrayList<>(to - from);
            for (int i = from; i < to; i++) {
                keys.add(Long.toString(rowOf[i]));
            }
            tables[s] = ShardTable.of(
                    keys,
                    Arrays.copyOfRange(labels, from, to),
                    Arrays.copyOfRange(offsets, from, to),
                    Arrays.copyOfRange(lengths, from, to),
                    Arrays.copyOfRange(status, from, to),
                    Arrays.copyOfRange(details, from, to));
        }
        firstSample[shards] = n;
        ArrowFiles bytes = new ArrowFiles(arena, maps, versions, names, fileOfShard, tables);
        Path root = Path.of(names[0]).toAbsolutePath().getParent();
        return ShardDataset.of(root, Shards.of(shardNames, firstSample, bytes, cols.label != null, bytes));
    }

    /** The rows an indices file gives, each checked against the dataset's {@code total} rows. */
    private static long[] indices(Path file, long total) {
        ArrowStreamFile f = ArrowStreamFile.read(file);
        if (f.schema.getFields().size() != 1
                || !(f.schema.getFields().get(0).getType()
                        instanceof org.apache.arrow.vector.types.pojo.ArrowType.Int t)
                || t.getBitWidth() != 64) {
            throw new IllegalArgumentException(
                    file + ": an indices mapping is one int64 or uint64 column, not " + f.schema.getFields());
        }
        if (f.rows > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(file + ": " + f.rows + " indices, more than a dataset holds");
        }
        long[] rows = new long[(int) f.rows];
        try (Arena arena = Arena.ofConfined();
                FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            MemorySegment map = channel.map(FileChannel.MapMode.READ_ONLY, 0, f.size, arena);
            int at = 0;
            for (ArrowStreamFile.Batch b : f.batches) {
                if (b.nodeNulls()[0] != 0) {
                    throw new IllegalArgumentException(file + ": an indices mapping with null indices");
                }
                if (b.bufferLength()[1] < b.rows() * 8) {
                    throw new IllegalArgumentException(file + ": an indices buffer shorter than its rows");
                }
                long base = b.body() + b.bufferOffset()[1];
                for (long r = 0; r < b.rows(); r++) {
                    long row = map.get(LONG, base + r * 8);
                    if (row < 0 || row >= total) {
                        throw new IllegalArgumentException(file + ": index " + at + " is row " + row
                                + ", and the dataset's files hold " + total + " rows");
                    }
                    rows[at++] = row;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        return rows;
    }

    /** The files (and indices file) that {@code spec} names. */
    static Spec parse(String spec) {
        if (spec.startsWith(Datasets.ARROW_SPEC)) {
            List<Path> files = new ArrayList<>();
            Path indices = null;
            try (JsonParser p = new JsonFactory().createParser(spec.substring(Datasets.ARROW_SPEC.length()))) {
                expect(p.nextToken() == JsonToken.START_OBJECT, spec);
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    JsonToken value = p.nextToken();
                    if (name.equals("files") && value == JsonToken.START_ARRAY) {
                        while (p.nextToken() == JsonToken.VALUE_STRING) {
                            files.add(Path.of(p.getText()));
                        }
                    } else if (name.equals("indices")) {
                        indices = value == JsonToken.VALUE_NULL ? null : Path.of(p.getText());
                    } else {
                        throw new IllegalArgumentException(
                                spec + ": an arrow: spec holds \"files\" and \"indices\"," + " not \"" + name + "\"");
                    }
                }
            } catch (IOException e) {
                throw new IllegalArgumentException(spec + " is not an arrow: spec (" + e.getMessage() + ")");
            }
            expect(!files.isEmpty(), spec);
            return new Spec(files, indices);
        }
        Path path = Path.of(spec);
        if (Files.isDirectory(path)) {
            return new Spec(stateFiles(path), null);
        }
        if (!Files.isRegularFile(path)) {
            throw new IllegalArgumentException(spec + " does not exist");
        }
        return new Spec(List.of(path), null);
    }

    /** The data files a {@code save_to_disk} folder's {@code state.json} lists, in its order. */
    private static List<Path> stateFiles(Path folder) {
        Path state = folder.resolve("state.json");
        List<Path> files = new ArrayList<>();
        try (JsonParser p = new JsonFactory().createParser(state.toFile())) {
            JsonToken t;
            int depth = 0;
            boolean inFiles = false;
            while ((t = p.nextToken()) != null) {
                if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
                    depth++;
                } else if (t == JsonToken.END_OBJECT || t == JsonToken.END_ARRAY) {
                    depth--;
                    if (depth == 1) {
                        inFiles = false;
                    }
                } else if (t == JsonToken.FIELD_NAME
                        && depth == 1
                        && p.currentName().equals("_data_files")) {
                    inFiles = true;
                } else if (t == JsonToken.VALUE_STRING && inFiles && "filename".equals(p.currentName())) {
                    files.add(folder.resolve(p.getText()));
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + state + ": " + e.getMessage());
        }
        if (files.isEmpty()) {
            throw new IllegalArgumentException(state + " lists no _data_files");
        }
        return files;
    }

    private static void expect(boolean ok, String spec) {
        if (!ok) {
            throw new IllegalArgumentException(
                    spec + " is not an arrow: spec: arrow:{\"files\": [FILE, ...]," + " \"indices\": FILE or null}");
        }
    }
}
