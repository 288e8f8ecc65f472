package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.testing.BadImages;
import io.stoke.loader.testing.TestImages;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code stoke embed} end to end: files, rows, bad input under both policies, refusals. */
class EmbedCommandTest {
    static final Path MODELS = Path.of("..", "embed", "models");
    static final String F32 = MODELS.resolve("tiny_cnn_f32.onnx").toString();
    static final String U8 = MODELS.resolve("tiny_cnn_u8.onnx").toString();
    /** {@link #F32}'s network with its height and width free: {@code [N, 3, H, W]}. */
    static final String ANY_SIZE = MODELS.resolve("tiny_cnn_f32_any_size.onnx").toString();

    @TempDir
    Path tmp;

    private Path dataWithBadFiles() {
        Path root = TestImages.imageFolder(tmp.resolve("data"), 10, 2, 3);
        BadImages.allBadFolder(root);
        return root;
    }

    /** Rows of a float32 [rows, columns] .npy file, with its header checked by the first bytes and the length. */
    static float[][] npy(Path file, int columns) throws IOException {
        byte[] all = Files.readAllBytes(file);
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals((byte) 0x93, all[0]);
        int header = 10 + Short.toUnsignedInt(b.getShort(8));
        int rows = (all.length - header) / (4 * columns);
        assertEquals(all.length, header + 4 * rows * columns, "whole rows");
        float[][] out = new float[rows][columns];
        b.position(header);
        for (float[] row : out) {
            b.asFloatBuffer().get(row);
            b.position(b.position() + 4 * columns);
        }
        return out;
    }

    private List<String> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void underSkipBadFilesGetZeroRowsAndAreListedAndEveryOtherRowIsInDatasetOrder() throws Exception {
        Path data = dataWithBadFiles();
        Path out = tmp.resolve("out");
        String[] r = BenchCommandTest.run(
                "embed",
                data.toString(),
                "--model",
                U8,
                "--out",
                out.toString(),
                "--on-error",
                "skip",
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--intra-op-threads",
                "1");
        assertEquals("0", r[0], r[2]);
        assertTrue(
                r[1].contains("images/s")
                        && r[1].contains("model time per batch")
                        && r[1].contains("loader wait per batch")
                        && r[1].contains("CPU per image"),
                r[1]);
        // Decoding is part of the process's CPU time over the same window, never more than it (the ring's
        // first slots, filled while the model loaded, counted in the one and not the other before).
        java.util.regex.Matcher cpu = java.util.regex.Pattern.compile(
                        "CPU per image +([0-9.]+) ms \\(all threads\\), of which decoding ([0-9.]+) ms")
                .matcher(r[1]);
        assertTrue(cpu.find(), r[1]);
        assertTrue(Double.parseDouble(cpu.group(2)) <= Double.parseDouble(cpu.group(1)), cpu.group());
        FileDataset dataset = ImageFolder.scan(data);
        List<String> paths = Files.readAllLines(out.resolve("paths.txt"));
        assertEquals(dataset.size(), paths.size());
        for (int i = 0; i < dataset.size(); i++) {
            assertEquals(dataset.resolve(i).toString(), paths.get(i), "row " + i);
        }
        float[][] rows = npy(out.resolve("embeddings.npy"), 32);
        assertEquals(dataset.size(), rows.length);
        Map<String, String> skipped = Files.readAllLines(out.resolve("skipped.txt")).stream()
                .collect(Collectors.toMap(
                        l -> Path.of(l.split("\t")[0]).getFileName().toString(), l -> l.split("\t")[1]));
        assertEquals(BadImages.EXPECTED.keySet(), skipped.keySet());
        for (var e : BadImages.EXPECTED.entrySet()) {
            assertTrue(skipped.get(e.getKey()).startsWith(e.getValue()), e.getKey() + ": " + skipped.get(e.getKey()));
        }
        for (int i = 0; i < rows.length; i++) {
            boolean bad =
                    skipped.containsKey(Path.of(paths.get(i)).getFileName().toString());
            boolean zero = true;
            for (float v : rows[i]) {
                zero &= v == 0f;
            }
            assertEquals(bad, zero, "row " + i + " (" + paths.get(i) + ")");
        }
        assertEquals(List.of("embeddings.npy", "paths.txt", "skipped.txt"), files(out));
        String[] again = BenchCommandTest.run(
                "embed", data.toString(), "--model", U8, "--out", out.toString(), "--on-error", "skip");
        assertEquals("2", again[0], "a finished output is not overwritten without --overwrite");
        assertTrue(again[2].contains("--overwrite"), again[2]);
    }

    /**
     * --format parquet: the .npy run's rows, one table per shard (read back by Parquet's own record
     * reader), bad images as status rows; a folder gives one table; --shuffle is refused.
     */
    @Test
    void parquetTablesHoldTheNpyRowsAShardEachWithStatusRows() throws Exception {
        Path data = dataWithBadFiles();
        FileDataset dataset = ImageFolder.scan(data);
        String[] npyRun = BenchCommandTest.run(
                "embed",
                data.toString(),
                "--model",
                U8,
                "--out",
                tmp.resolve("npy").toString(),
                "--on-error",
                "skip");
        assertEquals("0", npyRun[0], npyRun[2]);
        float[][] rows = npy(tmp.resolve("npy/embeddings.npy"), 32);
        Path folderOut = tmp.resolve("folder-pq");
        String[] folderRun = BenchCommandTest.run(
                "embed",
                data.toString(),
                "--model",
                U8,
                "--out",
                folderOut.toString(),
                "--on-error",
                "skip",
                "--format",
                "parquet",
                "--batch-size",
                "3");
        assertEquals("0", folderRun[0], folderRun[2]);
        assertEquals(List.of("embeddings.parquet"), files(folderOut));
        List<ParquetRows> table = ParquetRows.read(folderOut.resolve("embeddings.parquet"));
        assertEquals(dataset.size(), table.size());
        Set<String> bad = BadImages.EXPECTED.keySet();
        for (int i = 0; i < table.size(); i++) {
            ParquetRows row = table.get(i);
            assertEquals("", row.shard());
            assertEquals(i, row.row());
            assertEquals(dataset.name(i), row.key());
            assertEquals(dataset.label(i), row.label());
            boolean isBad = bad.contains(Path.of(row.key()).getFileName().toString());
            assertEquals(isBad, !row.status().equals("ok"), row.key() + ": " + row.status());
            Assertions.assertArrayEquals(rows[i], row.embedding(), "row " + i);
        }
        // The same images as two shards: a table each, the shard's own positions and keys.
        Path shards = Files.createDirectories(tmp.resolve("shards"));
        String[] packed = BenchCommandTest.run(
                "pack", data.toString(), "--out", shards.toString(), "--shard-size", "30K", "--on-error", "skip");
        assertEquals("0", packed[0], packed[2]);
        Path shardOut = tmp.resolve("shards-pq");
        String[] shardRun = BenchCommandTest.run(
                "embed",
                shards.toString(),
                "--model",
                U8,
                "--out",
                shardOut.toString(),
                "--format",
                "parquet",
                "--on-error",
                "skip");
        assertEquals("0", shardRun[0], shardRun[2]);
        List<String> tables = files(shardOut);
        assertTrue(tables.size() >= 2, tables.toString());
        int total = 0;
        for (String t : tables) {
            List<ParquetRows> part = ParquetRows.read(shardOut.resolve(t));
            for (int i = 0; i < part.size(); i++) {
                assertEquals(t.replace(".parquet", ".tar"), part.get(i).shard());
                assertEquals(i, part.get(i).row());
                assertEquals("ok", part.get(i).status());
            }
            total += part.size();
        }
        assertEquals(dataset.size() - bad.size(), total, "pack leaves the bad files out; every other image has a row");
        String[] shuffled = BenchCommandTest.run(
                "embed",
                data.toString(),
                "--model",
                U8,
                "--out",
                tmp.resolve("x").toString(),
                "--format",
                "parquet",
                "--shuffle");
        assertEquals("2", shuffled[0]);
        assertTrue(shuffled[2].contains("--format parquet"), shuffled[2]);
    }

    /**
     * Parquet input written by DuckDB (the Hub's layout, a key column, two files of several row
     * groups): one table per input file, named after it, every row once in order with the file's
     * name, the row's key (the key column, else its row) and its row in the file, and the
     * embeddings of the same images embedded from their folder.
     */
    @Test
    void parquetInputGivesATablePerInputFileWithEachRowsKeyAndTheFoldersEmbeddings() throws Exception {
        int n = 20;
        int first = 12; // rows of the first file
        Path folder = TestImages.imageFolder(tmp.resolve("folder"), n, 2, 13);
        FileDataset images = ImageFolder.scan(folder);
        Path hub = Files.createDirectories(tmp.resolve("hub"));
        // read_blob gives each file's bytes; ordered by path, rows come in ImageFolder's order.
        String rows = "SELECT {'bytes': content, 'path': substr(filename, "
                + (folder.toString().length() + 2)
                + ")} AS image, regexp_extract(filename, 'class(\\d+)', 1)::BIGINT AS label,"
                + " 'img-' || lpad((row_number() OVER (ORDER BY filename) - 1)::VARCHAR, 3, '0') AS key"
                + " FROM read_blob('" + folder + "/*/*.jpg') ORDER BY filename";
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement st = c.createStatement()) {
            // DuckDB cuts a row group where a chunk of rows comes in past ROW_GROUP_SIZE: each part of
            // the UNION ALL is a chunk of 5 rows, and one thread runs the parts in order.
            st.execute("SET threads = 1");
            st.execute("COPY (" + chunks(rows, 0, first, 5) + ") TO '" + hub.resolve("train-00000-of-00002.parquet")
                    + "' (FORMAT parquet, ROW_GROUP_SIZE 5)");
            st.execute("COPY (" + chunks(rows, first, n, 5) + ") TO '" + hub.resolve("train-00001-of-00002.parquet")
                    + "' (FORMAT parquet, ROW_GROUP_SIZE 5)");
        }
        try (Dataset d = Datasets.openLocal(hub.toString())) {
            assertTrue(
                    ((ShardDataset) d).shards().shardCount() > 2,
                    "several row groups per file, so that a table gathers them: "
                            + ((ShardDataset) d).shards().shardCount());
        }
        String[] npyRun = BenchCommandTest.run(
                "embed",
                folder.toString(),
                "--model",
                U8,
                "--out",
                tmp.resolve("npy").toString(),
                "--batch-size",
                "4");
        assertEquals("0", npyRun[0], npyRun[2]);
        float[][] expected = npy(tmp.resolve("npy/embeddings.npy"), 32);
        assertEquals(n, expected.length);
        for (String keyColumn : new String[] {null, "key"}) {
            Path out = tmp.resolve(keyColumn == null ? "by-row" : "by-key");
            List<String> args = new ArrayList<>(List.of(
                    "embed",
                    hub.toString(),
                    "--model",
                    U8,
                    "--out",
                    out.toString(),
                    "--format",
                    "parquet",
                    "--batch-size",
                    "3"));
            if (keyColumn != null) {
                args.addAll(List.of("--key-column", keyColumn));
            }
            String[] r = BenchCommandTest.run(args.toArray(String[]::new));
            assertEquals("0", r[0], r[2]);
            assertEquals(List.of("train-00000-of-00002.parquet", "train-00001-of-00002.parquet"), files(out));
            int sample = 0;
            for (String table : files(out)) {
                List<ParquetRows> part = ParquetRows.read(out.resolve(table));
                assertEquals(table.startsWith("train-00000") ? first : n - first, part.size(), table);
                for (int i = 0; i < part.size(); i++, sample++) {
                    ParquetRows row = part.get(i);
                    String where = table + " row " + i;
                    assertEquals(table, row.shard(), where);
                    assertEquals(i, row.row(), where);
                    assertEquals(
                            keyColumn == null ? Integer.toString(i) : String.format("img-%03d", sample),
                            row.key(),
                            where);
                    assertEquals(images.label(sample), row.label(), where);
                    assertEquals("ok", row.status(), where);
                    Assertions.assertArrayEquals(
                            expected[sample], row.embedding(), where + " is " + images.resolve(sample));
                }
            }
            assertEquals(n, sample, "every row once");
        }
    }

    /** Rows {@code [from, to)} of {@code query}, in parts of {@code size} rows one after the other. */
    private static String chunks(String query, int from, int to, int size) {
        List<String> parts = new ArrayList<>();
        for (int i = from; i < to; i += size) {
            parts.add("SELECT * FROM (" + query + " LIMIT " + Math.min(size, to - i) + " OFFSET " + i + ")");
        }
        return String.join(" UNION ALL ", parts);
    }

    @Test
    void underFailABadFileEndsTheRunWithNothingThatLooksComplete() throws Exception {
        Path out = tmp.resolve("out");
        String[] r = embedding(dataWithBadFiles(), F32, out, "--batch-size", "4");
        assertEquals("1", r[0], r[2]);
        assertTrue(r[2].contains("broken/") && r[2].contains("nothing written"), r[2]);
        assertEquals(List.of(), files(out), "no partial or complete-looking file is left");
    }

    /**
     * A model that leaves its height and width free is fed the run's crop, and the run says which:
     * at the default crop, the same network's embeddings as the 224x224 model's; at another, that
     * size, said.
     */
    @Test
    void aModelOfAnySizeIsFedTheRunsCropAndSaysWhich() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 6, 2, 5);
        String[] fixed = embedding(data, F32, tmp.resolve("f"));
        String[] free = embedding(data, ANY_SIZE, tmp.resolve("a"));
        assertEquals("0", fixed[0], fixed[2]);
        assertEquals("0", free[0], free[2]);
        assertFalse(fixed[2].contains("any size"), fixed[2]);
        assertTrue(
                free[2].contains("stoke embed: the model takes images of any size; this run gives it 224x224"
                        + " (--crop 224, after --resize 256)"),
                free[2]);
        float[][] a = npy(tmp.resolve("f/embeddings.npy"), 32);
        float[][] b = npy(tmp.resolve("a/embeddings.npy"), 32);
        for (int i = 0; i < a.length; i++) {
            assertArrayEquals(a[i], b[i], 1e-6f, "row " + i);
        }
        String[] small = embedding(data, ANY_SIZE, tmp.resolve("s"), "--resize", "180", "--crop", "160");
        assertEquals("0", small[0], small[2]);
        assertTrue(small[2].contains("this run gives it 160x160 (--crop 160, after --resize 180)"), small[2]);
        assertEquals(a.length, npy(tmp.resolve("s/embeddings.npy"), 32).length);
    }

    @Test
    void aModelWithSeveralOutputsNeedsOutputNameAndTheFloatModelMatchesTheUint8One() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 6, 2, 5);
        String[] r = BenchCommandTest.run(
                "embed",
                data.toString(),
                "--model",
                F32,
                "--out",
                tmp.resolve("x").toString());
        assertEquals("1", r[0]);
        assertTrue(r[2].contains("--output-name") && r[2].contains("logits"), r[2]);
        assertFalse(Files.exists(tmp.resolve("x").resolve("embeddings.npy")));
        String[] f = embedding(data, F32, tmp.resolve("f"), "--dct-scaling", "none");
        String[] u = BenchCommandTest.run(
                "embed",
                data.toString(),
                "--model",
                U8,
                "--out",
                tmp.resolve("u").toString(),
                "--dct-scaling",
                "none");
        assertEquals("0", f[0], f[2]);
        assertEquals("0", u[0], u[2]);
        float[][] a = npy(tmp.resolve("f/embeddings.npy"), 32);
        float[][] b = npy(tmp.resolve("u/embeddings.npy"), 32);
        String[] shuffled = embedding(
                data, F32, tmp.resolve("s"), "--dct-scaling", "none", "--shuffle", "--seed", "3", "--batch-size", "4");
        assertEquals("0", shuffled[0], shuffled[2]);
        float[][] s = npy(tmp.resolve("s/embeddings.npy"), 32);
        for (int i = 0; i < a.length; i++) {
            Assertions.assertArrayEquals(a[i], s[i], "row " + i + ": rows stay in dataset order");
        }
        for (int i = 0; i < a.length; i++) {
            for (int j = 0; j < 32; j++) {
                // The same network; normalisation in Java's table or in the graph differs in the last bits.
                assertEquals(a[i][j], b[i][j], 1e-4 * Math.max(1, Math.abs(a[i][j])), "row " + i);
            }
        }
    }

    @Test
    void ranksOverAnUnevenDatasetEmbedEachSampleOnceLeavingThePaddingOut() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("odd"), 7, 2, 5);
        Set<String> all = new TreeSet<>();
        int rows = 0;
        for (int rank = 0; rank < 2; rank++) {
            Path out = tmp.resolve("rank" + rank);
            String[] r = BenchCommandTest.run(
                    "embed",
                    data.toString(),
                    "--model",
                    U8,
                    "--out",
                    out.toString(),
                    "--rank",
                    Integer.toString(rank),
                    "--world-size",
                    "2",
                    "--shuffle",
                    "--seed",
                    "2",
                    "--batch-size",
                    "2");
            assertEquals("0", r[0], r[2]);
            List<String> paths = Files.readAllLines(out.resolve("paths.txt"));
            assertEquals(rank == 0 ? 4 : 3, paths.size(), "rank " + rank + ": 4 positions each, rank 1's last padding");
            assertEquals(paths.size(), npy(out.resolve("embeddings.npy"), 32).length);
            all.addAll(paths);
            rows += paths.size();
        }
        assertEquals(7, rows);
        assertEquals(7, all.size(), "every sample once over the ranks");
    }

    /**
     * kill -9 in the middle of a run: what is left must not look like a finished output, and nothing
     * of ONNX Runtime is left in {@code java.io.tmpdir} (its Java API makes a folder there at each
     * start, whatever it loads from, and removes it only at a normal exit).
     */
    @Test
    void aKilledRunLeavesNoCompleteLookingOutput() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 400, 4, 9);
        Path out = tmp.resolve("out");
        Path tmpdir = Files.createDirectories(tmp.resolve("tmpdir"));
        Process p = embedCommand(data, out, tmpdir, tmp.resolve("cache"), "--intra-op-threads", "1")
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!Files.exists(out.resolve(".embeddings.npy.partial"))
                    && p.isAlive()
                    && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            Thread.sleep(100); // some rows written
            assertTrue(p.isAlive(), "the run ended before it could be killed; make it longer");
        } finally {
            p.destroyForcibly().waitFor();
        }
        assertFalse(Files.exists(out.resolve("embeddings.npy")), "files left: " + files(out));
        assertFalse(Files.exists(out.resolve("paths.txt")), "files left: " + files(out));
        try (Stream<Path> left = Files.list(tmpdir)) {
            assertEquals(List.of(), left.toList(), "left in java.io.tmpdir by a run killed with kill -9");
        }
    }

    /**
     * ONNX Runtime's Java API, left to itself, copies its 22 MB of libraries into a new
     * {@code onnxruntime-java*} folder of {@code java.io.tmpdir} at each start and leaves the folder
     * there at exit (the whole copy after a kill -9, which {@link #aKilledRunLeavesNoCompleteLookingOutput}
     * checks). Stoke has it open them from Stoke's own cache of
     * libraries: a run leaves nothing of it in the temporary folder, and the next reuses the copy.
     */
    @Test
    void onnxRuntimesLibrariesAreOpenedFromStokesCacheNotCopiedIntoTheTemporaryFolder() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 4, 1, 1);
        Path tmpdir = Files.createDirectories(tmp.resolve("tmpdir"));
        Path cache = tmp.resolve("cache");
        Object inode = null;
        for (int run = 0; run < 2; run++) {
            embedInChild(data, tmp.resolve("out" + run), tmpdir, cache);
            assertEquals(4, npy(tmp.resolve("out" + run).resolve("embeddings.npy"), 32).length);
            try (Stream<Path> left = Files.list(tmpdir)) {
                assertEquals(
                        List.of(),
                        left.map(f -> f.getFileName().toString())
                                .filter(f -> f.startsWith("onnxruntime"))
                                .toList(),
                        "left in java.io.tmpdir by run " + run);
            }
            List<Path> copies;
            try (Stream<Path> all = Files.walk(cache)) {
                copies = all.filter(f -> f.getFileName().toString().equals("libonnxruntime.so"))
                        .toList();
            }
            assertEquals(1, copies.size(), copies.toString());
            Path jni = copies.get(0).resolveSibling("libonnxruntime4j_jni.so");
            assertTrue(Files.isRegularFile(jni), "the binding lies beside the library");
            Object now = Files.readAttributes(copies.get(0), "unix:ino").get("ino");
            if (run == 1) {
                assertEquals(inode, now, "the second run copied the library again");
            }
            inode = now;
        }
    }

    /**
     * Where Stoke's library cache is refused (here its {@code stoke/} folder is a link someone
     * planted), ONNX Runtime's libraries are left to its Java API, and that is said once, naming why;
     * the run goes on.
     */
    @Test
    void aRefusedLibraryCacheLeavesOnnxRuntimeToItsOwnCopySaidOnce() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 4, 1, 1);
        Path tmpdir = Files.createDirectories(tmp.resolve("tmpdir"));
        Path cache = Files.createDirectories(tmp.resolve("cache"));
        Path planted = Files.createDirectories(tmp.resolve("planted"));
        Files.createSymbolicLink(cache.resolve("stoke"), planted);
        String output = embedInChild(data, tmp.resolve("out"), tmpdir, cache);
        assertEquals(4, npy(tmp.resolve("out").resolve("embeddings.npy"), 32).length);
        List<String> said = output.lines()
                .filter(l -> l.contains("ONNX Runtime's libraries are not cached"))
                .toList();
        assertEquals(1, said.size(), output);
        assertTrue(said.get(0).contains(cache.resolve("stoke") + " is a symbolic link"), said.get(0));
        try (Stream<Path> planted2 = Files.list(planted)) {
            assertEquals(List.of(), planted2.toList(), "written through the planted link");
        }
    }

    /**
     * {@code stoke embed DATA --model MODEL --output-name embedding --out OUT} then {@code more}, in
     * this JVM: the exit code, stdout and stderr.
     */
    private static String[] embedding(Path data, String model, Path out, String... more) {
        List<String> args = new ArrayList<>(List.of(
                "embed", data.toString(), "--model", model, "--output-name", "embedding", "--out", out.toString()));
        args.addAll(List.of(more));
        return BenchCommandTest.run(args.toArray(String[]::new));
    }

    /**
     * Runs {@code stoke embed} of {@code data} into {@code out} in a child JVM with its own
     * {@code java.io.tmpdir} and {@code XDG_CACHE_HOME}; asserts it exits 0.
     *
     * @return what it printed, stdout and stderr together
     */
    private static String embedInChild(Path data, Path out, Path tmpdir, Path cache) throws Exception {
        Process p = embedCommand(data, out, tmpdir, cache).start();
        String output = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), output);
        return output;
    }

    /**
     * {@code stoke embed} of {@code data} into {@code out} (the 32-float model, batches of 2, one
     * worker, then {@code more}) as a child JVM with its own {@code java.io.tmpdir} and
     * {@code XDG_CACHE_HOME}, its stderr into its stdout.
     */
    private static ProcessBuilder embedCommand(Path data, Path out, Path tmpdir, Path cache, String... more) {
        List<String> command = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED",
                "--add-exports",
                "java.base/jdk.internal.misc=ALL-UNNAMED",
                "-Djava.io.tmpdir=" + tmpdir,
                "-cp",
                System.getProperty("java.class.path"),
                Main.class.getName(),
                "embed",
                data.toString(),
                "--model",
                F32,
                "--output-name",
                "embedding",
                "--out",
                out.toString(),
                "--batch-size",
                "2",
                "--workers",
                "1"));
        command.addAll(List.of(more));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("XDG_CACHE_HOME", cache.toString());
        return pb;
    }

    @Test
    void cudaWithoutADriverSaysSoInOneLineAndExitsNoDevice() throws Exception {
        Assumptions.assumeTrue(CudaDriver.tryLoad().driver().isEmpty(), "a CUDA driver is present here");
        String[] r = BenchCommandTest.run(
                "embed",
                TestImages.imageFolder(tmp.resolve("d"), 4, 1, 1).toString(),
                "--model",
                U8,
                "--out",
                tmp.resolve("o").toString(),
                "--device",
                "cuda");
        assertEquals(Integer.toString(Main.EXIT_NO_DEVICE), r[0], r[2]);
        assertEquals(1, r[2].strip().lines().count(), r[2]);
        assertFalse(Files.exists(tmp.resolve("o")));
    }
}
