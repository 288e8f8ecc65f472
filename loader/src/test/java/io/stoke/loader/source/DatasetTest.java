package io.stoke.loader.source;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DatasetTest {
    @TempDir
    Path tmp;

    @Test
    void listFileOfManyThousandSamplesKeepsEveryPathAndLabel() throws Exception {
        int n = 100_003; // well past every growth step of the builder's arrays
        List<String> lines = new ArrayList<>();
        lines.add("# a comment, then a blank line");
        lines.add("");
        for (int i = 0; i < n; i++) {
            lines.add("dir" + (i % 7) + "/image with space " + i + ".jpg\t" + (i % 1000));
        }
        Path list = tmp.resolve("train.txt");
        Files.write(list, lines);
        FileDataset dataset = ListFile.read(list);
        assertEquals(n, dataset.size());
        for (int i : new int[] {0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 65536, n - 1}) {
            assertEquals("dir" + (i % 7) + "/image with space " + i + ".jpg", dataset.path(i));
            assertEquals(i % 1000, dataset.label(i));
        }
        assertEquals(tmp.toAbsolutePath().resolve("dir0/image with space 0.jpg"), dataset.resolve(0));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(64);
            int len = dataset.copyPath(2049, dst, 3);
            assertEquals(dataset.path(2049), new String(dst.asSlice(3, len).toArray(ValueLayout.JAVA_BYTE)));
        }
    }

    @Test
    void aFileDatasetsFingerprintAndNamesAreTheirDefinitionsOverEveryKindOfPath() throws Exception {
        // The digest is fed from the stored bytes and absolute names skip Path: both against the
        // definitions they stand for (Dataset.line over each path String, root.resolve(path)).
        List<String> paths = List.of(
                "a/b.jpg",
                "/abs/c.jpg",
                "/abs//doubled.jpg",
                "/abs/trailing/",
                "//two/leading.jpg",
                "/abs/./dot.jpg",
                "/abs/../up.jpg",
                "rel/../x.jpg",
                "caf\u00e9/\u4e2d\u6587.jpg",
                "/emoji/\ud83d\udcf7.png",
                "/lone/\ud800.jpg",
                "/",
                "x",
                "/with space/and\ttab.jpg");
        int[] labels = new int[paths.size()];
        int[] values = {0, 1, 9, 10, 99, 100, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 123456789, 7, 42, -10, 5};
        System.arraycopy(values, 0, labels, 0, labels.length);
        FileDataset dataset = FileDataset.of(tmp, paths, labels);
        java.security.MessageDigest reference = java.security.MessageDigest.getInstance("SHA-256");
        for (int i = 0; i < paths.size(); i++) {
            Dataset.line(reference, dataset.path(i), dataset.label(i));
            assertEquals(tmp.resolve(dataset.path(i)).toString(), dataset.name(i), paths.get(i));
        }
        assertEquals(java.util.HexFormat.of().formatHex(reference.digest(), 0, 8), dataset.fingerprint());
        byte[] line = new byte[13];
        for (int label : values) {
            int n = FileDataset.labelLine(label, line);
            assertEquals("\t" + label + "\n", new String(line, 0, n, java.nio.charset.StandardCharsets.US_ASCII));
        }
    }

    @Test
    void aUrlWithoutItsStoreOnTheClassPathNamesTheModuleToAdd() {
        // The loader's own tests run without stoke-remote: no provider for s3:// or https://.
        for (String url : List.of("s3://bucket/train/", "https://host/train-0.tar")) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> Datasets.openLocalOrUrl(url, new UrlDatasetProvider.ShardCache(1 << 20, null)));
            assertTrue(
                    e.getMessage().contains(url) && e.getMessage().contains("io.stoke:stoke-remote"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal("s3://bucket/train/"));
        // The module itself carries no object store: the AWS SDK is not on its class path.
        assertThrows(ClassNotFoundException.class, () -> Class.forName("software.amazon.awssdk.services.s3.S3Client"));
    }

    @Test
    void malformedListLinesNameTheFileAndLine() throws Exception {
        Path list = tmp.resolve("bad.txt");
        Files.write(list, List.of("a.jpg 1", "b.jpg notanumber"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ListFile.read(list));
        assertTrue(e.getMessage().contains("bad.txt:2"), e.getMessage());
        Files.write(list, List.of("lonely"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ListFile.read(list))
                .getMessage()
                .contains(":1"));
    }

    @Test
    void absolutePathsInListsStayAbsolute() throws Exception {
        Path list = tmp.resolve("abs.txt");
        Files.write(list, List.of("/data/x.jpg 3", "rel/y.jpg 4"));
        FileDataset dataset = ListFile.read(list);
        assertTrue(dataset.isAbsolute(0));
        assertFalse(dataset.isAbsolute(1));
        assertEquals(Path.of("/data/x.jpg"), dataset.resolve(0));
    }

    @Test
    void imageFolderIgnoresNonImagesAndRefusesEmptyTrees() throws Exception {
        Files.createDirectories(tmp.resolve("t/b"));
        Files.createDirectories(tmp.resolve("t/a"));
        Files.write(tmp.resolve("t/b/1.JPEG"), new byte[1]);
        Files.write(tmp.resolve("t/a/2.jpg"), new byte[1]);
        Files.write(tmp.resolve("t/a/notes.txt"), new byte[1]);
        Dataset dataset = ImageFolder.scan(tmp.resolve("t"));
        assertEquals(2, dataset.size());
        assertEquals(List.of("a", "b"), dataset.classNames());
        assertEquals("a/2.jpg", dataset.path(0));
        assertEquals(1, dataset.label(1));
        Files.createDirectories(tmp.resolve("empty"));
        assertThrows(IllegalArgumentException.class, () -> ImageFolder.scan(tmp.resolve("empty")));
    }

    /**
     * A folder whose sub-folders hold Parquet files or shards, not images, is named as what it holds,
     * with what to name instead: Spark's {@code train.parquet/part-*.parquet} beside a folder of
     * shards, and a table partitioned by a column ({@code label=0/}), which is not read as one.
     */
    @Test
    void aTreeOfParquetFilesOrShardsInsteadOfImagesSaysWhatToName() throws Exception {
        Path spark = tmp.resolve("spark");
        Files.createDirectories(spark.resolve("train.parquet"));
        Files.write(spark.resolve("train.parquet/part-00000.parquet"), new byte[1]);
        Files.write(spark.resolve("train.parquet/_SUCCESS"), new byte[0]);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(spark.toString()));
        assertEquals(
                "no image files under " + spark + "; its folders train.parquet/ hold .parquet files: name one of"
                        + " them, " + spark.resolve("train.parquet"),
                e.getMessage());
        Path partitioned = tmp.resolve("partitioned");
        for (int label = 0; label < 5; label++) {
            Files.createDirectories(partitioned.resolve("label=" + label));
            Files.write(partitioned.resolve("label=" + label + "/part-0.parquet"), new byte[1]);
        }
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(partitioned.toString()));
        assertEquals(
                "no image files under " + partitioned + "; its folders label=0/, label=1/, label=2/ and 2 more hold"
                        + " .parquet files: a table partitioned by label, which is not read as one dataset (a"
                        + " partition's value is not read as a column); write it unpartitioned, or name one"
                        + " partition's folder, " + partitioned.resolve("label=0"),
                e.getMessage());
        Path shards = tmp.resolve("shard-folders");
        io.stoke.loader.testing.TestTars.labelledShard(
                Files.createDirectories(shards.resolve("val")).resolve("s-0.tar"), 0, 2);
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(shards.toString()));
        assertEquals(
                "no image files under " + shards + "; its folders val/ hold .tar shards: name one of them, "
                        + shards.resolve("val"),
                e.getMessage());
    }
    /**
     * Files in folders below a class folder are samples of that class, in torchvision's order
     * ({@code sorted(os.walk(class folder, followlinks=True))}, each folder's files sorted, by code
     * point): a folder's own files before its sub-folders', and "sub b" before "sub/deeper" as their
     * paths sort (' ' before '/'); a link to a folder outside is walked, one back up to the class folder (a loop) is
     * not. {@code test_dataloader.py} checks the same against torchvision's own ImageFolder.
     */
    @Test
    void imageFolderWalksTheFoldersBelowAClassInTorchvisionsOrder() throws Exception {
        Path root = tmp.resolve("nested");
        Path cls = Files.createDirectories(root.resolve("cat"));
        Path outside = Files.createDirectories(tmp.resolve("outside"));
        Files.write(outside.resolve("o.jpg"), new byte[1]);
        for (String f : List.of(
                "z.jpg",
                "a.jpg",
                "sub/b.jpg",
                "sub b/c.jpg",
                "sub/deeper/d.jpg",
                "sub/A.png",
                "\uD83D\uDE00.jpg",
                "\uFF5E.jpg",
                "sub/notes.txt")) {
            Path p = cls.resolve(f);
            Files.createDirectories(p.getParent());
            Files.write(p, new byte[1]);
        }
        Files.createSymbolicLink(cls.resolve("sub/up"), cls);
        Files.createSymbolicLink(cls.resolve("linked"), outside);
        Files.createDirectories(root.resolve("dog/empty-below/deeper"));
        Files.write(root.resolve("dog/d.jpg"), new byte[1]);
        Dataset dataset = ImageFolder.scan(root);
        List<String> paths = new ArrayList<>();
        for (int i = 0; i < dataset.size(); i++) {
            paths.add(dataset.path(i));
        }
        assertEquals(
                List.of(
                        "cat/a.jpg",
                        "cat/z.jpg",
                        "cat/\uFF5E.jpg", // U+FF5E before U+1F600 by code point (UTF-16 units sort it after)
                        "cat/\uD83D\uDE00.jpg",
                        "cat/linked/o.jpg",
                        "cat/sub/A.png",
                        "cat/sub/b.jpg",
                        "cat/sub b/c.jpg",
                        "cat/sub/deeper/d.jpg",
                        "dog/d.jpg"),
                paths);
        assertEquals(List.of("cat", "dog"), dataset.classNames());
        assertEquals(0, dataset.label(8));
        assertEquals(1, dataset.label(9));
    }
    /**
     * A {@code .tar} in a folder of shards that cannot be read (a pipe, a link into a volume not
     * mounted) is named with what it is when the dataset is opened, never left out: the dataset is
     * not one shard short without a word. A shard pattern and a path say the same.
     */
    @Test
    void aShardThatIsNotAFileIsNamedNotLeftOut() throws Exception {
        Path folder = Files.createDirectories(tmp.resolve("shards"));
        io.stoke.loader.testing.TestTars.labelledShard(folder.resolve("s-0.tar"), 0, 3);
        try (Dataset whole = Datasets.openLocal(folder.toString())) {
            assertEquals(3, whole.size());
        }
        Path fifo = folder.resolve("s-1.tar");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(folder.toString()));
        assertEquals("shard " + fifo + " is a pipe (FIFO), not a file", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(folder + "/s-{0..1}.tar"));
        assertEquals(
                "shard " + fifo + " (from " + folder + "/s-{0..1}.tar) is a pipe (FIFO), not a file", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(fifo.toString()));
        assertEquals(
                fifo
                        + " is neither a folder, a list file, a .tar shard nor a shard pattern (a pipe (FIFO), not a file)",
                e.getMessage());
        Files.delete(fifo);
        Path unmounted = tmp.resolve("volume-not-mounted").resolve("s-1.tar");
        Files.createSymbolicLink(fifo, unmounted);
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(folder.toString()));
        assertEquals("shard " + fifo + " is a link to " + unmounted + ", which does not exist", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(folder + "/s-{0..2}.tar"));
        assertEquals(
                "shard " + fifo + " (from " + folder + "/s-{0..2}.tar) is a link to " + unmounted
                        + ", which does not exist",
                e.getMessage());
        Files.delete(fifo);
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(folder + "/s-{0..1}.tar"));
        assertEquals("shard " + fifo + " (from " + folder + "/s-{0..1}.tar) does not exist", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Datasets.openLocal(fifo.toString()));
        assertEquals(
                fifo + " is neither a folder, a list file, a .tar shard nor a shard pattern (no such file)",
                e.getMessage());
    }
}
