package io.stoke.loader.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.TransformSpec;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Opening shards from {@code index.json}: the same samples, keys and labels as reading every
 * shard's headers, with nothing read at open; a stale index named, never read past.
 */
class ShardCatalogTest {
    private static final int SHARDS = 3;
    private static final int PER_SHARD = 5;

    @TempDir
    Path tmp;

    private Path shards() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("shards"));
        for (int s = 0; s < SHARDS; s++) {
            TestTars.labelledShard(dir.resolve("train-" + s + ".tar"), s, PER_SHARD + s); // 5, 6, 7 samples
        }
        return dir;
    }

    /** What stoke catalog writes, from a scan of the folder. */
    private static ShardCatalog indexOf(Path dir) {
        try (ShardDataset scanned = (ShardDataset) Datasets.openScanned(dir.toString())) {
            Shards tar = scanned.shards();
            List<ShardCatalog.Entry> entries = new ArrayList<>();
            for (int s = 0; s < tar.shardCount(); s++) {
                entries.add(new ShardCatalog.Entry(
                        Path.of(tar.shardName(s)).getFileName().toString(),
                        tar.firstSample(s + 1) - tar.firstSample(s),
                        tar.bytes().size(s)));
            }
            return new ShardCatalog(entries, tar.labelled());
        }
    }

    private static void write(ShardCatalog index, Path file) throws IOException {
        try (OutputStream o = Files.newOutputStream(file)) {
            index.write(o, "test");
        }
    }

    /** Every (key, label) of one epoch in dataset order, through a Loader. */
    private static List<String> epoch(Dataset dataset) {
        List<String> seen = new ArrayList<>();
        try (Loader loader = Loader.builder(dataset)
                .batchSize(4)
                .workers(2)
                .transform(TransformSpec.defaults().withResize(32, 32))
                .build()) {
            for (Batch b : loader) {
                try (b) {
                    assertTrue(b.skipped().isEmpty(), b.skipped().toString());
                    for (int i = 0; i < b.size(); i++) {
                        seen.add(dataset.path((int) b.index(i)) + "=" + b.label(i));
                    }
                }
            }
        }
        return seen;
    }

    @Test
    void theCatalogRoundTripsAndReadsAsAWidsShardList() throws IOException {
        ShardCatalog index = new ShardCatalog(
                List.of(
                        new ShardCatalog.Entry("a.tar", 3, 100),
                        new ShardCatalog.Entry("s3://b/c.tar", 0, 0, "\"e1\"")),
                true);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        index.write(out, "x");
        String json = out.toString(StandardCharsets.UTF_8);
        assertTrue(json.contains("\"__kind__\":\"wids-shard-index-v1\""), json);
        assertEquals(index, ShardCatalog.read(new ByteArrayInputStream(out.toByteArray()), "x"));
        // Another JSON file, or a wids list without Stoke's `labelled`: not a catalog to open from.
        assertNull(ShardCatalog.read(new ByteArrayInputStream("{\"a\": 1}".getBytes(StandardCharsets.UTF_8)), "y"));
        String wids = "{\"__kind__\": \"wids-shard-index-v1\", \"shardlist\": [{\"url\": \"a.tar\", \"nsamples\": 3}]}";
        assertNull(ShardCatalog.read(new ByteArrayInputStream(wids.getBytes(StandardCharsets.UTF_8)), "z"));
        String broken =
                "{\"__kind__\": \"wids-shard-index-v1\", \"shardlist\": [{\"url\": \"a.tar\"}], \"stoke\": {\"labelled\": true}}";
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ShardCatalog.read(new ByteArrayInputStream(broken.getBytes(StandardCharsets.UTF_8)), "w"));
        assertEquals(
                "w: shard entry 1 (url a.tar) has nsamples missing (or not a whole number), not a count of samples (0"
                        + " to 2147483647)",
                e.getMessage());
        // Each entry's fault by name, with the value it has: a hand-edited catalog's typo is found at once.
        String[][] faults = {
            {"{\"url\": \"\", \"nsamples\": 3, \"filesize\": 10}", "has no url"},
            {"{\"url\": \"b.tar\", \"nsamples\": -5, \"filesize\": 10}", "has nsamples -5, not a count"},
            {"{\"url\": \"b.tar\", \"nsamples\": 1000000000000, \"filesize\": 10}", "has nsamples 1000000000000,"},
            {"{\"url\": \"b.tar\", \"nsamples\": 3}", "has filesize missing (or not a whole number), not a size"},
            {"{\"url\": \"b.tar\", \"nsamples\": 3, \"filesize\": 2.5}", "has filesize missing"},
        };
        for (String[] fault : faults) {
            String faulty = "{\"__kind__\": \"wids-shard-index-v1\", \"stoke\": {\"labelled\": true}, \"shardlist\":"
                    + " [{\"url\": \"a.tar\", \"nsamples\": 3, \"filesize\": 10}, " + fault[0] + "]}";
            IllegalArgumentException f = assertThrows(
                    IllegalArgumentException.class,
                    () -> ShardCatalog.read(new ByteArrayInputStream(faulty.getBytes(StandardCharsets.UTF_8)), "v"));
            assertTrue(
                    f.getMessage().startsWith("v: shard entry 2 (url ")
                            && f.getMessage().contains(fault[1]),
                    f.getMessage());
        }
    }

    @Test
    void openingFromTheCatalogGivesWhatTheHeadersGiveWithoutReadingAShard() throws IOException {
        Path dir = shards();
        List<String> scanned;
        try (Dataset d = Datasets.openLocal(dir.toString())) {
            assertFalse(((ShardDataset) d).shards().catalogued());
            scanned = epoch(d);
        }
        write(indexOf(dir), dir.resolve(ShardCatalog.FILE));
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(dir.toString())) {
            Shards tar = d.shards();
            assertTrue(tar.catalogued());
            assertEquals(SHARDS * PER_SHARD + 3, d.size());
            assertEquals(PER_SHARD, tar.firstSample(1));
            assertTrue(tar.labelled());
            assertEquals(scanned, epoch(d));
        }
        // The index file itself names the dataset too.
        try (Dataset d = Datasets.openLocal(dir.resolve(ShardCatalog.FILE).toString())) {
            assertEquals(scanned, epoch(d));
        }
        assertEquals(SHARDS * PER_SHARD + 3, scanned.size());
    }

    @Test
    void aShardOfAnotherSizeIsNamedAsAStaleCatalogAtOpen() throws IOException {
        Path dir = shards();
        write(indexOf(dir), dir.resolve(ShardCatalog.FILE));
        Files.write(dir.resolve("train-1.tar"), new byte[512], StandardOpenOption.APPEND);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(dir.toString()));
        assertTrue(
                e.getMessage().contains("train-1.tar") && e.getMessage().contains("the shard catalog is stale"),
                e.getMessage());
    }

    /** A listed shard that is not a file (here a pipe) is named as what it is, not as a stale catalog. */
    @Test
    void aListedShardThatIsNotAFileIsNamedAsWhatItIs() throws IOException, InterruptedException {
        Path dir = shards();
        write(indexOf(dir), dir.resolve(ShardCatalog.FILE));
        Path shard = dir.resolve("train-1.tar");
        Files.delete(shard);
        assertEquals(0, new ProcessBuilder("mkfifo", shard.toString()).start().waitFor());
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(dir.toString()));
        assertEquals(
                "shard " + shard + " (listed in " + dir.resolve(ShardCatalog.FILE) + ") is a pipe (FIFO), not a file",
                e.getMessage());
    }

    @Test
    void aShardWithOtherSamplesThanTheCatalogSaysIsNeverRead() throws IOException {
        Path dir = shards();
        ShardCatalog honest = indexOf(dir);
        List<ShardCatalog.Entry> lying = new ArrayList<>(honest.shards());
        ShardCatalog.Entry second = lying.get(1);
        lying.set(1, new ShardCatalog.Entry(second.url(), second.nsamples() + 1, second.filesize()));
        write(new ShardCatalog(lying, true), dir.resolve(ShardCatalog.FILE));
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(dir.toString())) {
            Shards tar = d.shards();
            assertEquals("k/0-0", d.path(0)); // the first shard is as indexed
            int inSecond = tar.firstSample(1);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> d.label(inSecond));
            assertTrue(
                    e.getMessage().contains("train-1.tar")
                            && e.getMessage().contains("says 7 samples, the shard holds 6")
                            && e.getMessage().contains("stoke catalog"),
                    e.getMessage());
            // A loader over it stops with the same reason rather than deliver the shard's samples.
            RuntimeException failed = assertThrows(RuntimeException.class, () -> epoch(d));
            Throwable cause = failed;
            while (cause.getCause() != null && !cause.getMessage().contains("the shard catalog")) {
                cause = cause.getCause();
            }
            assertTrue(cause.getMessage().contains("train-1.tar"), failed.toString());
        }
    }

    @Test
    void aCatalogLargerThanTheLimitIsRefusedByItsSizeBeforeItIsRead() throws IOException {
        Path dir = shards();
        Path index = dir.resolve(ShardCatalog.FILE);
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(index.toFile(), "rw")) {
            f.write("{\"__kind__\": \"wids-shard-index-v1\", \"shardlist\": [".getBytes(StandardCharsets.US_ASCII));
            f.setLength(ReadLimits.CATALOG_FILE + 1); // sparse: 64 MiB of NULs that no parser is shown
        }
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(dir.toString()));
        assertEquals(
                index + " is 67108865 bytes, more than the 64 MiB limit of a file Stoke reads whole"
                        + " (a catalog or a marker)",
                e.getMessage());
    }

    @Test
    void aCatalogWithAStringOverTheLimitIsNamedAsUnreadable() {
        String url = "u".repeat(ReadLimits.CATALOG_STRING + 1);
        String json =
                "{\"__kind__\": \"wids-shard-index-v1\", \"stoke\": {\"labelled\": true}, \"shardlist\": [{\"url\": \""
                        + url + "\", \"nsamples\": 1, \"filesize\": 1}]}";
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ShardCatalog.read(
                        new ByteArrayInputStream(json.getBytes(StandardCharsets.US_ASCII)), "x/index.json"));
        assertTrue(
                e.getMessage()
                        .startsWith("x/index.json: not a readable shard catalog (String value length (1048577)"
                                + " exceeds the maximum allowed (1048576"),
                e.getMessage());
    }

    @Test
    void aFolderWithAnotherJsonIsReadFromItsHeaders() throws IOException {
        Path dir = shards();
        Files.writeString(dir.resolve(ShardCatalog.FILE), "{\"written_by\": \"someone else\"}");
        try (ShardDataset d = (ShardDataset) Datasets.openLocal(dir.toString())) {
            assertFalse(d.shards().catalogued());
            assertEquals(SHARDS * PER_SHARD + 3, d.size());
        }
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocal(dir.resolve(ShardCatalog.FILE).toString()));
        assertTrue(e.getMessage().contains("stoke catalog"), e.getMessage());
    }
}
