package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stoke.ffm.StokeImage;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code stoke pack} of Parquet written by DuckDB (the Hub's layout: an image struct and an int64
 * label; img2dataset's: a binary column and a key), checked against packing the same images from
 * their folder: the same members' bytes in the same order, the same labels, the same pixels through
 * the loader; bad rows named by file and row; a resumed pack as one run, a changed file refused.
 */
class PackParquetTest {
    static final int N = 18;
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path tmp;

    static Path folder;
    static Path parts;

    record Member(String name, byte[] data) {}

    @BeforeAll
    static void makeData() throws Exception {
        folder = TestImages.imageFolder(tmp.resolve("folder"), N, 3, 21);
        // read_blob gives each file's bytes; ordered by path, rows come in ImageFolder's order.
        String rows = "SELECT {'bytes': content, 'path': substr(filename, "
                + (folder.toString().length() + 2)
                + ")} AS image, regexp_extract(filename, 'class(\\d+)', 1)::BIGINT AS label, filename AS ord"
                + " FROM read_blob('" + folder + "/*/*.jpg')";
        String images = "SELECT image, label FROM (" + rows + ") ORDER BY ord";
        parts = Files.createDirectories(tmp.resolve("hub-parts"));
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("COPY (" + images + " LIMIT 7) TO '" + parts.resolve("train-00000-of-00002.parquet")
                    + "' (FORMAT parquet, COMPRESSION snappy)");
            s.execute("COPY (" + images + " OFFSET 7) TO '" + parts.resolve("train-00001-of-00002.parquet")
                    + "' (FORMAT parquet, COMPRESSION snappy)");
            // Rows N and N + 1: an image that is null, then bytes that are no image.
            s.execute("COPY (SELECT image, label FROM (" + rows
                    + " UNION ALL SELECT NULL::STRUCT(bytes BLOB, path VARCHAR), 1, '~1'"
                    + " UNION ALL SELECT {'bytes': 'not a jpeg at all'::BLOB, 'path': 'bad.jpg'}, 2, '~2')"
                    + " ORDER BY ord) TO '" + tmp.resolve("bad.parquet") + "' (FORMAT parquet, COMPRESSION snappy)");
            s.execute("COPY (SELECT lpad((row_number() OVER (ORDER BY filename) - 1)::VARCHAR, 9, '0') AS key, "
                    + "'a photograph' AS caption, content AS jpg FROM read_blob('" + folder
                    + "/*/*.jpg') ORDER BY filename) TO '" + tmp.resolve("img2dataset.parquet")
                    + "' (FORMAT parquet, COMPRESSION snappy)");
        }
    }

    private static String[] pack(Object... args) {
        List<String> all = new ArrayList<>(List.of("pack"));
        for (Object a : args) {
            all.add(a.toString());
        }
        return BenchCommandTest.run(all.toArray(String[]::new));
    }

    private static void assertOk(String[] r) {
        assertEquals("0", r[0], "stdout:\n" + r[1] + "\nstderr:\n" + r[2]);
    }

    private static JsonNode manifest(Path dir) throws IOException {
        return JSON.readTree(dir.resolve("index.json").toFile());
    }

    /** Every member of the pack, in the manifest's shard order. */
    private static List<Member> members(Path dir) throws IOException {
        List<Member> out = new ArrayList<>();
        for (JsonNode s : manifest(dir).path("shardlist")) {
            try (InputStream in = Files.newInputStream(dir.resolve(s.path("url").asText()));
                    TarArchiveInputStream t = new TarArchiveInputStream(in)) {
                for (TarArchiveEntry e = t.getNextEntry(); e != null; e = t.getNextEntry()) {
                    out.add(new Member(e.getName(), t.readAllBytes()));
                }
            }
        }
        return out;
    }

    private static List<Path> shards(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith("shard-"))
                    .sorted()
                    .toList();
        }
    }

    /** Each batch's indices, labels and a CRC of its pixels, as the loader delivers the pack. */
    private static List<String> loaded(Path pack) {
        List<String> out = new ArrayList<>();
        try (Dataset d = Datasets.openLocal(pack.toString());
                Loader loader = Loader.builder(d)
                        .transform(TransformSpec.defaults().withResize(48, 40))
                        .batchSize(5)
                        .workers(2)
                        .shuffle(false)
                        .build()) {
            for (Batch b : loader) {
                try (b) {
                    CRC32 crc = new CRC32();
                    crc.update(b.pixels().asByteBuffer());
                    out.add(Arrays.toString(b.indices().toArray(ValueLayout.JAVA_LONG)) + " "
                            + Arrays.toString(b.labels().toArray(ValueLayout.JAVA_INT)) + " " + crc.getValue());
                }
            }
        }
        return out;
    }

    private static byte[][] contents(Path dir) throws IOException {
        List<Path> files = shards(dir);
        byte[][] out = new byte[files.size() + 1][];
        for (int i = 0; i < files.size(); i++) {
            out[i] = Files.readAllBytes(files.get(i));
        }
        out[files.size()] = Files.readAllBytes(dir.resolve("index.json"));
        return out;
    }

    @ParameterizedTest(name = "--format {0}")
    @ValueSource(strings = {"jpeg", "png", "raw"})
    void parquetPacksAsItsFolderDoes(String format) throws Exception {
        // PNG is written by Stoke's image library, which a build without a C compiler does not make.
        Assumptions.assumeTrue(
                !format.equals("png") || StokeImage.available(),
                "SKIPPED --format png: " + (StokeImage.available() ? "" : StokeImage.unavailableReason()));
        List<Object> options = new ArrayList<>(List.of("--format", format, "--resize", 64, "--shard-size", "40K"));
        if (format.equals("raw")) {
            options.addAll(List.of("--crop", 48));
        }
        Path fromFolder = tmp.resolve(format + "-folder");
        Path fromParquet = tmp.resolve(format + "-parquet");
        List<Object> a = new ArrayList<>(List.of(folder, "--out", fromFolder, "--workers", 2));
        a.addAll(options);
        assertOk(pack(a.toArray()));
        List<Object> b = new ArrayList<>(List.of(parts, "--out", fromParquet, "--workers", 3));
        b.addAll(options);
        String[] r = pack(b.toArray());
        assertOk(r);
        assertTrue(r[1].contains(N + " packed, 0 skipped"), r[1]);

        List<Member> want = members(fromFolder);
        List<Member> got = members(fromParquet);
        assertEquals(2 * N, want.size());
        assertEquals(want.size(), got.size(), "members");
        String ext = format.equals("raw") ? ".npy" : format.equals("png") ? ".png" : ".jpg";
        for (int i = 0; i < N; i++) {
            String key = i < 7 ? "train-00000-of-00002/" + i : "train-00001-of-00002/" + (i - 7);
            assertEquals(key + ext, got.get(2 * i).name());
            assertEquals(key + ".cls", got.get(2 * i + 1).name());
            assertArrayEquals(want.get(2 * i).data(), got.get(2 * i).data(), "sample " + i + " vs " + want.get(2 * i));
            assertArrayEquals(want.get(2 * i + 1).data(), got.get(2 * i + 1).data(), "label of sample " + i);
        }
        JsonNode stoke = manifest(fromParquet).path("stoke");
        assertTrue(stoke.path("labelled").asBoolean());
        assertEquals(2, stoke.path("source_files").size(), stoke.toString());
        assertEquals(
                Files.size(parts.resolve("train-00001-of-00002.parquet")),
                stoke.path("source_files").get(1).path("size").asLong());
        if (!format.equals("raw")) {
            assertEquals(loaded(fromFolder), loaded(fromParquet));
        }
    }

    @Test
    void unlabelledRowsHaveNoClsAndTheKeyColumnNamesThem() throws Exception {
        Path out = tmp.resolve("img2dataset-pack");
        String[] r = pack(tmp.resolve("img2dataset.parquet"), "--out", out, "--key-column", "key", "--resize", 64);
        assertOk(r);
        assertTrue(r[2].contains("no integer label column"), r[2]);
        List<Member> ms = members(out);
        assertEquals(N, ms.size(), "one member a sample: no .cls");
        for (int i = 0; i < N; i++) {
            assertEquals(String.format("img2dataset/%09d.jpg", i), ms.get(i).name());
        }
        assertFalse(manifest(out).path("stoke").path("labelled").asBoolean());
        assertEquals(
                "key", manifest(out).path("stoke").path("columns").path("key").asText());
        try (Dataset d = Datasets.openLocal(out.toString())) {
            assertInstanceOf(ShardDataset.class, d);
            assertEquals(N, d.size());
            assertEquals(-1, d.label(5));
        }
        // A rerun naming other columns is another pack.
        String[] other = pack(tmp.resolve("img2dataset.parquet"), "--out", out, "--resize", 64);
        assertEquals(Integer.toString(Main.EXIT_USAGE), other[0], other[2]);
        assertTrue(other[2].contains("columns key key") && other[2].contains("--overwrite"), other[2]);
    }

    @Test
    void aKeyColumnWithRepeatedValuesIsAnErrorNamingBothRows() {
        Path file = tmp.resolve("img2dataset.parquet");
        String[] r = pack(file, "--out", tmp.resolve("captions"), "--key-column", "caption");
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[2]);
        assertTrue(r[2].contains("two samples have the key 'img2dataset/a photograph'"), r[2]);
        assertTrue(
                r[2].contains(file + " row 0 (a photograph)") && r[2].contains(file + " row 1 (a photograph)"), r[2]);
        assertFalse(Files.exists(tmp.resolve("captions").resolve("shard-000000.tar")));
    }

    @Test
    void twoFilesOfOneNameInTwoFoldersAreAnErrorNamingBoth() throws Exception {
        for (String d : List.of("x", "y")) {
            Files.copy(
                    parts.resolve("train-00000-of-00002.parquet"),
                    Files.createDirectories(tmp.resolve("same").resolve(d)).resolve("train.parquet"));
        }
        String[] r = pack(tmp.resolve("same") + "/{x,y}/train.parquet", "--out", tmp.resolve("same-pack"));
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[2]);
        assertTrue(
                r[2].contains("x/train.parquet and of ") && r[2].contains("y/train.parquet would have the same keys"),
                r[2]);
        assertFalse(Files.exists(tmp.resolve("same-pack").resolve("shard-000000.tar")));
    }

    @Test
    void badRowsStopThePackNamedByFileAndRowAndSkipLeavesThemOut() throws Exception {
        Path file = tmp.resolve("bad.parquet");
        Path out = tmp.resolve("bad-pack");
        String[] r = pack(file, "--out", out, "--resize", 64);
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[2]);
        assertTrue(r[2].contains(file + " row " + N + ":"), r[2]);

        String[] skip = pack(file, "--out", out, "--resize", 64, "--on-error", "skip");
        assertOk(skip);
        assertTrue(skip[2].contains("SKIPPED 2 files"), skip[2]);
        assertTrue(skip[2].contains("skipped: " + file + " row " + N + ": "), skip[2]);
        assertTrue(skip[2].contains("skipped: " + file + " row " + (N + 1) + ": NOT_IMAGE"), skip[2]);
        JsonNode shardlist = manifest(out).path("shardlist");
        JsonNode skipped = shardlist.get(shardlist.size() - 1).path("skipped");
        assertEquals(file + " row " + N, skipped.get(0).path("path").asText());
        assertEquals(file + " row " + (N + 1), skipped.get(1).path("path").asText());
        assertEquals(2, manifest(out).path("stoke").path("skipped").asInt());
        List<Member> ms = members(out);
        assertEquals(2 * N, ms.size());
        // The rows before the bad ones are the folder's images.
        Path fromFolder = tmp.resolve("bad-folder");
        assertOk(pack(folder, "--out", fromFolder, "--resize", 64));
        List<Member> want = members(fromFolder);
        for (int i = 0; i < 2 * N; i++) {
            assertArrayEquals(want.get(i).data(), ms.get(i).data(), ms.get(i).name());
        }
    }

    @ParameterizedTest(name = "--format {0}")
    @ValueSource(strings = {"jpeg", "raw"})
    void anInterruptedPackResumesAsOneRunAndAChangedFileIsRefused(String format) throws Exception {
        Path data = Files.createDirectories(tmp.resolve("resume-parts-" + format));
        for (String f : List.of("train-00000-of-00002.parquet", "train-00001-of-00002.parquet")) {
            Files.copy(parts.resolve(f), data.resolve(f));
        }
        Object[] options = format.equals("raw")
                ? new Object[] {"--format", "raw", "--resize", 64, "--crop", 48, "--shard-size", "24K"}
                : new Object[] {"--resize", 64, "--shard-size", "12K"};
        Path a = tmp.resolve("resume-a-" + format);
        Path b = tmp.resolve("resume-b-" + format);
        assertOk(pack(concat(data, a, options)));
        assertOk(pack(concat(data, b, options)));
        byte[][] expected = contents(b);
        List<Path> files = shards(a);
        assertTrue(files.size() >= 3, "the test needs several shards, got " + files.size());

        // Interrupted: the last shard gone, a partial .tmp in its place, the manifest incomplete.
        Path last = files.getLast();
        Files.delete(last);
        Files.write(last.resolveSibling(last.getFileName() + ".tmp"), "half a shard".getBytes());
        ObjectNode m = (ObjectNode) manifest(a);
        ((ObjectNode) m.get("stoke")).put("complete", false);
        Files.write(a.resolve("index.json"), JSON.writeValueAsBytes(m));
        String[] resumed = pack(concat(data, a, options));
        assertOk(resumed);
        assertTrue(resumed[1].contains("resumed at sample"), resumed[1]);
        assertTrue(resumed[1].contains("1 written, " + files.size() + " in the pack"), resumed[1]);
        byte[][] got = contents(a);
        assertEquals(expected.length, got.length);
        for (int i = 0; i < got.length; i++) {
            assertArrayEquals(expected[i], got[i], i == got.length - 1 ? "index.json" : "shard " + i);
        }

        // A file rewritten since: a rerun is refused, naming it, and the pack stays as it was.
        Path changed = data.resolve("train-00001-of-00002.parquet");
        Files.setLastModifiedTime(changed, FileTime.fromMillis(978_307_200_000L));
        String[] refused = pack(concat(data, a, options));
        assertEquals(Integer.toString(Main.EXIT_USAGE), refused[0], refused[2]);
        assertTrue(
                refused[2].contains(changed + " has changed since the pack began")
                        && refused[2].contains("--overwrite"),
                refused[2]);
        assertArrayEquals(expected[expected.length - 1], Files.readAllBytes(a.resolve("index.json")));
    }

    private static Object[] concat(Path data, Path out, Object[] options) {
        List<Object> all = new ArrayList<>(List.of(data, "--out", out));
        all.addAll(List.of(options));
        return all.toArray();
    }

    @Test
    void columnsForAFolderTarShardsAndACacheTooSmallAreRefused() throws Exception {
        String[] r = pack(folder, "--out", tmp.resolve("cols"), "--key-column", "key");
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], r[2]);
        assertTrue(r[2].contains("is not a Parquet dataset"), r[2]);
        String[] small = pack(parts, "--out", tmp.resolve("small"), "--shard-cache-size", "64K");
        assertNotEquals("0", small[0], small[2]);
        assertTrue(small[2].contains("row group 0 needs") && small[2].contains("--shard-cache-size"), small[2]);
        assertFalse(Files.exists(tmp.resolve("small")));
        Path packed = tmp.resolve("tar-in");
        assertOk(pack(parts, "--out", packed, "--resize", 64));
        String[] again = pack(packed, "--out", tmp.resolve("tar-again"));
        assertEquals(Integer.toString(Main.EXIT_USAGE), again[0], again[2]);
        assertTrue(again[2].contains("is tar shards already") && again[2].contains("Parquet"), again[2]);
    }
}
