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
class ShardIndexTest {
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

    /** What stoke index writes, from a scan of the folder. */
    private static ShardIndex indexOf(Path dir) {
        try (ShardDataset scanned = (ShardDataset) Datasets.openScanned(dir.toString())) {
            Shards tar = scanned.shards();
            List<ShardIndex.Entry> entries = new ArrayList<>();
            for (int s = 0; s < tar.shardCount(); s++) {
                entries.add(new ShardIndex.Entry(
                        Path.of(tar.shardName(s)).getFileName().toString(),
                        tar.firstSample(s + 1) - tar.firstSample(s),
                        tar.bytes().size(s)));
            }
            return new ShardIndex(entries, tar.labelled());
        }
    }

    private static void write(ShardIndex index, Path file) throws IOException {
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
    void theIndexRoundTripsAndReadsAsAWidsShardList() throws IOException {
        ShardIndex index = new ShardIndex(
                List.of(new ShardIndex.Entry("a.tar", 3, 100), new ShardIndex.Entry("s3://b/c.tar", 0, 0, "\"e1\"")),
                true);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        index.write(out, "x");
        String json = out.toString(StandardCharsets.UTF_8);
        assertTrue(json.contains("\"__kind__\":\"wids-shard-index-v1\""), json);
        assertEquals(index, ShardIndex.read(new ByteArrayInputStream(out.toByteArray()), "x"));
        // Another JSON file, or a wids list without Stoke's `labelled`: not an index to open from.
        assertNull(ShardIndex.read(new ByteArrayInputStream("{\"a\": 1}".getBytes(StandardCharsets.UTF_8)), "y"));
        String wids = "{\"__kind__\": \"wids-shard-index-v1\", \"shardlist\": [{\"url\": \"a.tar\", \"nsamples\": 3}]}";
        assertNull(ShardIndex.read(new ByteArrayInputStream(wids.getBytes(StandardCharsets.UTF_8)), "z"));
        String broken =
                "{\"__kind__\": \"wids-shard-index-v1\", \"shardlist\": [{\"url\": \"a.tar\"}], \"stoke\": {\"labelled\": true}}";
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ShardIndex.read(new ByteArrayInputStream(broken.getBytes(StandardCharsets.UTF_8)), "w"));
        assertTrue(e.getMessage().contains("w: a shard entry lacks"), e.getMessage());
    }

    @Test
    void openingFromTheIndexGivesWhatTheHeadersGiveWithoutReadingAShard() throws IOException {
        Path dir = shards();
        List<String> scanned;
        try (Dataset d = Datasets.open(dir.toString())) {
            assertFalse(((ShardDataset) d).shards().indexed());
            scanned = epoch(d);
        }
        write(indexOf(dir), dir.resolve(ShardIndex.FILE));
        try (ShardDataset d = (ShardDataset) Datasets.open(dir.toString())) {
            Shards tar = d.shards();
            assertTrue(tar.indexed());
            assertEquals(SHARDS * PER_SHARD + 3, d.size());
            assertEquals(PER_SHARD, tar.firstSample(1));
            assertTrue(tar.labelled());
            assertEquals(scanned, epoch(d));
        }
        // The index file itself names the dataset too.
        try (Dataset d = Datasets.open(dir.resolve(ShardIndex.FILE).toString())) {
            assertEquals(scanned, epoch(d));
        }
        assertEquals(SHARDS * PER_SHARD + 3, scanned.size());
    }

    @Test
    void aShardOfAnotherSizeIsNamedAsAStaleIndexAtOpen() throws IOException {
        Path dir = shards();
        write(indexOf(dir), dir.resolve(ShardIndex.FILE));
        Files.write(dir.resolve("train-1.tar"), new byte[512], StandardOpenOption.APPEND);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Datasets.open(dir.toString()));
        assertTrue(
                e.getMessage().contains("train-1.tar") && e.getMessage().contains("the index is stale"),
                e.getMessage());
    }

    @Test
    void aShardWithOtherSamplesThanTheIndexSaysIsNeverRead() throws IOException {
        Path dir = shards();
        ShardIndex honest = indexOf(dir);
        List<ShardIndex.Entry> lying = new ArrayList<>(honest.shards());
        ShardIndex.Entry second = lying.get(1);
        lying.set(1, new ShardIndex.Entry(second.url(), second.nsamples() + 1, second.filesize()));
        write(new ShardIndex(lying, true), dir.resolve(ShardIndex.FILE));
        try (ShardDataset d = (ShardDataset) Datasets.open(dir.toString())) {
            Shards tar = d.shards();
            assertEquals("k/0-0", d.path(0)); // the first shard is as indexed
            int inSecond = tar.firstSample(1);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> d.label(inSecond));
            assertTrue(
                    e.getMessage().contains("train-1.tar")
                            && e.getMessage().contains("says 7 samples, the shard holds 6")
                            && e.getMessage().contains("stoke index"),
                    e.getMessage());
            // A loader over it stops with the same reason rather than deliver the shard's samples.
            RuntimeException failed = assertThrows(RuntimeException.class, () -> epoch(d));
            Throwable cause = failed;
            while (cause.getCause() != null && !cause.getMessage().contains("the index")) {
                cause = cause.getCause();
            }
            assertTrue(cause.getMessage().contains("train-1.tar"), failed.toString());
        }
    }

    @Test
    void anIndexLargerThanTheLimitIsRefusedByItsSizeBeforeItIsRead() throws IOException {
        Path dir = shards();
        Path index = dir.resolve(ShardIndex.FILE);
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(index.toFile(), "rw")) {
            f.write("{\"__kind__\": \"wids-shard-index-v1\", \"shardlist\": [".getBytes(StandardCharsets.US_ASCII));
            f.setLength(ReadLimits.INDEX_FILE + 1); // sparse: 64 MiB of NULs that no parser is shown
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Datasets.open(dir.toString()));
        assertEquals(
                index + " is 67108865 bytes, more than the 64 MiB limit of a file Stoke reads whole"
                        + " (an index or a marker)",
                e.getMessage());
    }

    @Test
    void anIndexWithAStringOverTheLimitIsNamedAsUnreadable() {
        String url = "u".repeat(ReadLimits.INDEX_STRING + 1);
        String json =
                "{\"__kind__\": \"wids-shard-index-v1\", \"stoke\": {\"labelled\": true}, \"shardlist\": [{\"url\": \""
                        + url + "\", \"nsamples\": 1, \"filesize\": 1}]}";
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ShardIndex.read(
                        new ByteArrayInputStream(json.getBytes(StandardCharsets.US_ASCII)), "x/index.json"));
        assertTrue(
                e.getMessage()
                        .startsWith("x/index.json: not a readable shard index (String value length (1048577)"
                                + " exceeds the maximum allowed (1048576"),
                e.getMessage());
    }

    @Test
    void aFolderWithAnotherJsonIsReadFromItsHeaders() throws IOException {
        Path dir = shards();
        Files.writeString(dir.resolve(ShardIndex.FILE), "{\"written_by\": \"someone else\"}");
        try (ShardDataset d = (ShardDataset) Datasets.open(dir.toString())) {
            assertFalse(d.shards().indexed());
            assertEquals(SHARDS * PER_SHARD + 3, d.size());
        }
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.open(dir.resolve(ShardIndex.FILE).toString()));
        assertTrue(e.getMessage().contains("stoke index"), e.getMessage());
    }
}
