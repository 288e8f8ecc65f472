package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stoke.ffm.StokeJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.format.NpyHeader;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TarHeaders;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestPython;
import io.stoke.pack.PackOptions;
import io.stoke.pack.ShardWriter;
import io.stoke.serve.ByteSize;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import javax.imageio.ImageReader;
import javax.imageio.stream.ImageInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code stoke pack} end to end: the shards read back in Java (Commons Compress) and, where
 * Debian's Python has PIL and numpy, by Python's own {@code tarfile}, PIL and numpy, with the
 * expected keys and labels computed there independently from the folder.
 */
class PackCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    record Member(String name, byte[] data) {}

    static String[] pack(Object... args) {
        List<String> all = new ArrayList<>(List.of("pack"));
        for (Object a : args) {
            all.add(a.toString());
        }
        return BenchCommandTest.run(all.toArray(String[]::new));
    }

    static void assertOk(String[] r) {
        assertEquals("0", r[0], "stdout:\n" + r[1] + "\nstderr:\n" + r[2]);
    }

    static JsonNode manifest(Path dir) throws IOException {
        return JSON.readTree(dir.resolve("index.json").toFile());
    }

    private static List<Path> shards(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith("shard-"))
                    .sorted()
                    .toList();
        }
    }

    private static List<Member> members(Path shard) throws IOException {
        List<Member> out = new ArrayList<>();
        try (InputStream in = Files.newInputStream(shard);
                TarArchiveInputStream t = new TarArchiveInputStream(in)) {
            for (TarArchiveEntry e = t.getNextEntry(); e != null; e = t.getNextEntry()) {
                out.add(new Member(e.getName(), t.readAllBytes()));
            }
        }
        return out;
    }

    /** Every member of the pack, in the manifest's shard order; each shard checked against its record. */
    static List<Member> allMembers(Path dir) throws IOException {
        JsonNode m = manifest(dir);
        assertEquals("wids-shard-index-v1", m.path("__kind__").asText());
        assertEquals(1, m.path("wids_version").asInt());
        assertTrue(m.path("stoke").path("complete").asBoolean(), "pack marked complete");
        List<Member> all = new ArrayList<>();
        int n = 0;
        for (JsonNode s : m.path("shardlist")) {
            assertEquals(String.format("shard-%06d.tar", n++), s.path("url").asText());
            Path f = dir.resolve(s.path("url").asText());
            assertEquals(s.path("filesize").asLong(), Files.size(f), f.toString());
            List<Member> ms = members(f);
            assertEquals(2 * s.path("nsamples").asInt(), ms.size(), f.toString());
            all.addAll(ms);
        }
        assertEquals(n, shards(dir).size(), "shard files besides those the manifest lists");
        return all;
    }

    /** The key the brief defines: the path without its extension, the file name's dots made '_'. */
    private static String key(Dataset dataset, int i) {
        String p = dataset.path(i);
        int slash = p.lastIndexOf('/');
        String stem = p.substring(slash + 1, p.lastIndexOf('.'));
        return p.substring(0, slash + 1) + stem.replace('.', '_');
    }

    private static int[] jpegSize(byte[] jpeg) throws IOException {
        try (ImageInputStream in = ImageIO.createImageInputStream(new ByteArrayInputStream(jpeg))) {
            ImageReader r = ImageIO.getImageReadersByFormatName("jpeg").next();
            r.setInput(in);
            return new int[] {r.getWidth(0), r.getHeight(0)};
        }
    }

    /** 24 JPEGs of 40-160 pixels a side in 3 classes: some larger than a 64-pixel target, some not. */
    private Path data() {
        return TestImages.imageFolder(tmp.resolve("data"), 24, 3, 5);
    }

    @Test
    void jpegShardsHoldEverySampleInOrderWithItsLabelResizedAndNeverUpscaled() throws Exception {
        Path data = data();
        Path out = tmp.resolve("out");
        String[] r = pack(data, "--out", out, "--resize", 64, "--shard-size", "48K", "--workers", 2);
        assertOk(r);
        for (String s : new String[] {"images/s", "shards", "bytes in", "bytes out", "24 packed, 0 skipped"}) {
            assertTrue(r[1].contains(s), s + " in:\n" + r[1]);
        }
        // Not a terminal: the progress line is printed once, at the end.
        assertEquals(
                1,
                r[2].lines()
                        .filter(l -> l.contains("images/s") && l.contains("24/24"))
                        .count(),
                r[2]);
        FileDataset dataset = ImageFolder.scan(data);
        List<Member> ms = allMembers(out);
        assertEquals(2 * dataset.size(), ms.size());
        int kept = 0;
        for (int i = 0; i < dataset.size(); i++) {
            String key = key(dataset, i);
            assertEquals(key + ".jpg", ms.get(2 * i).name());
            assertEquals(key + ".cls", ms.get(2 * i + 1).name());
            assertEquals(
                    Integer.toString(dataset.label(i)),
                    new String(ms.get(2 * i + 1).data(), StandardCharsets.US_ASCII));
            byte[] original = Files.readAllBytes(dataset.resolve(i));
            int[] wh = jpegSize(original);
            byte[] stored = ms.get(2 * i).data();
            if (Math.min(wh[0], wh[1]) <= 64) {
                assertArrayEquals(original, stored, key + ": an image at or below the target is kept byte for byte");
                kept++;
            } else {
                int[] got = jpegSize(stored);
                int[] want = wh[0] <= wh[1]
                        ? new int[] {64, (int) (64.0 * wh[1] / wh[0])}
                        : new int[] {(int) (64.0 * wh[0] / wh[1]), 64};
                assertArrayEquals(want, got, key + " from " + wh[0] + "x" + wh[1]);
            }
        }
        assertTrue(kept > 0 && kept < dataset.size(), "the data has images on both sides of the target: " + kept);
        assertTrue(r[1].contains("(" + kept + " kept as they were"), r[1]);
        assertCutGreedily(out, 48 * 1024);
        for (Path s : shards(out)) {
            TarHeaders.assertDeterministic(Files.readAllBytes(s));
        }
    }

    /**
     * Each shard but the last would have gone past the limit with the next shard's first sample,
     * and none is past it unless it holds a single sample.
     */
    private static void assertCutGreedily(Path dir, long limit) throws IOException {
        JsonNode list = manifest(dir).path("shardlist");
        assertTrue(list.size() >= 2, "the test needs several shards, got " + list.size());
        for (int k = 0; k < list.size(); k++) {
            long size = list.get(k).path("filesize").asLong();
            assertTrue(
                    size <= limit || list.get(k).path("nsamples").asInt() == 1, "shard " + k + ": " + size + " bytes");
            if (k + 1 < list.size()) {
                List<Member> next =
                        members(dir.resolve(list.get(k + 1).path("url").asText()));
                long first =
                        ShardWriter.memberBytes(next.get(0).name(), next.get(0).data().length)
                                + ShardWriter.memberBytes(
                                        next.get(1).name(), next.get(1).data().length);
                assertTrue(
                        size + first > limit, "shard " + k + " (" + size + " bytes) had room for " + first + " more");
            }
        }
    }

    /** A URL is refused as one, its credential redacted, not taken for a path that lost a slash. */
    @Test
    void aUrlIsRefusedAsOneNotAsAMangledPath() {
        String[] r = pack("https://host/train.parquet?X-Amz-Signature=secret", "--out", tmp.resolve("url"));
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], r[1] + r[2]);
        assertTrue(
                r[2].contains("stoke pack: https://host/train.parquet?REDACTED is a URL: pack reads data on this"
                        + " machine"),
                r[2]);
        assertFalse(r[2].contains("secret") || r[2].contains("https:/host"), r[2]);
        assertFalse(Files.exists(tmp.resolve("url")));
    }

    @Test
    void shardsAreNotPackedAgain() throws Exception {
        Path out = tmp.resolve("out");
        assertOk(pack(data(), "--out", out, "--resize", 64));
        String[] again = pack(out, "--out", tmp.resolve("again"));
        assertEquals(Integer.toString(Main.EXIT_USAGE), again[0], again[1] + again[2]);
        assertTrue(again[2].contains("is tar shards already"), again[2]);
        assertFalse(Files.exists(tmp.resolve("again").resolve("index.json")));
    }

    @Test
    void maxSideBoundsTheLongerSide() throws Exception {
        Path data = data();
        Path out = tmp.resolve("out");
        assertOk(pack(data, "--out", out, "--max-side", 100, "--quality", 80));
        FileDataset dataset = ImageFolder.scan(data);
        List<Member> ms = allMembers(out);
        for (int i = 0; i < dataset.size(); i++) {
            byte[] original = Files.readAllBytes(dataset.resolve(i));
            int[] wh = jpegSize(original);
            if (Math.max(wh[0], wh[1]) <= 100) {
                assertArrayEquals(original, ms.get(2 * i).data());
            } else {
                int[] got = jpegSize(ms.get(2 * i).data());
                assertEquals(100, Math.max(got[0], got[1]));
                assertEquals((int) (100.0 * Math.min(wh[0], wh[1]) / Math.max(wh[0], wh[1])), Math.min(got[0], got[1]));
            }
        }
        assertEquals(
                80, manifest(out).path("stoke").path("options").path("quality").asInt());
        assertEquals(
                100,
                manifest(out).path("stoke").path("options").path("max_side").asInt());
    }

    private static final String CHECK_JPEG = """
            import io, json, os, sys, tarfile
            from PIL import Image
            out, data, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
            exts = ('.jpg', '.jpeg', '.png', '.ppm', '.bmp', '.pgm', '.tif', '.tiff', '.webp')
            # torchvision's ImageFolder: classes are the sorted folders, files sorted within each.
            classes = sorted(e.name for e in os.scandir(data) if e.is_dir())
            expected = []
            for label, c in enumerate(classes):
                for f in sorted(os.listdir(os.path.join(data, c))):
                    if f.lower().endswith(exts):
                        stem = f.rsplit('.', 1)[0].replace('.', '_')
                        expected.append((c + '/' + stem, label, os.path.join(data, c, f)))
            index = json.load(open(os.path.join(out, 'index.json')))
            names, blobs = [], []
            for s in index['shardlist']:
                with tarfile.open(os.path.join(out, s['url'])) as t:
                    for m in t.getmembers():
                        names.append(m.name)
                        blobs.append(t.extractfile(m).read())
            assert len(names) == 2 * len(expected), (len(names), len(expected))
            kept = resized = 0
            for i, (key, label, path) in enumerate(expected):
                assert names[2 * i] == key + '.jpg', (names[2 * i], key)
                assert names[2 * i + 1] == key + '.cls', (names[2 * i + 1], key)
                assert blobs[2 * i + 1] == str(label).encode(), (key, blobs[2 * i + 1], label)
                src = Image.open(path).convert('RGB')
                w, h = src.size
                if min(w, h) <= size:
                    assert blobs[2 * i] == open(path, 'rb').read(), key + ': not kept byte for byte'
                    kept += 1
                    continue
                ow, oh = (size, int(size * h / w)) if w <= h else (int(size * w / h), size)
                got = Image.open(io.BytesIO(blobs[2 * i]))
                assert got.format == 'JPEG' and got.size == (ow, oh), (key, got.size, (ow, oh))
                ref = src.resize((ow, oh), Image.BILINEAR)
                a, b = got.convert('RGB').tobytes(), ref.tobytes()
                mean = sum(abs(x - y) for x, y in zip(a, b)) / len(a)
                assert mean < 4.0, (key, 'mean difference from PIL resize', mean)
                resized += 1
            assert kept and resized, (kept, resized)
            print('checked', len(expected), 'samples:', kept, 'kept,', resized, 'resized')
            """;

    private static final String CHECK_RAW = """
            import io, json, os, sys, tarfile
            import numpy as np
            out, expected_file, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
            expected = np.fromfile(expected_file, dtype=np.uint8).reshape(n, 224, 224, 3)
            arrays = []
            index = json.load(open(os.path.join(out, 'index.json')))
            for s in index['shardlist']:
                with tarfile.open(os.path.join(out, s['url'])) as t:
                    for m in t.getmembers():
                        if m.name.endswith('.npy'):
                            arrays.append(np.load(io.BytesIO(t.extractfile(m).read())))
            assert len(arrays) == n, len(arrays)
            for i, a in enumerate(arrays):
                assert a.shape == (224, 224, 3) and a.dtype == np.uint8, (i, a.shape, a.dtype)
                assert np.array_equal(a, expected[i]), ('sample', i, 'differs from the Loader')
            print('checked', n, 'arrays')
            """;

    private static boolean pythonHas(String modules) {
        try {
            Process p = new ProcessBuilder(TestPython.PATH, "-c", "import " + modules)
                    .redirectErrorStream(true)
                    .start();
            p.getInputStream().readAllBytes();
            return p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    static void assumePython(String modules) {
        boolean ok = pythonHas(modules);
        if (!ok) {
            System.err.println("[stoke] SKIPPING the Python read-back of stoke pack's shards: " + TestPython.PATH
                    + " cannot import " + modules);
        }
        Assumptions.assumeTrue(ok, "SKIPPED: " + TestPython.PATH + " cannot import " + modules);
    }

    static void python(String script, Object... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(TestPython.PATH, "-c", script));
        for (Object a : args) {
            cmd.add(a.toString());
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "python timed out: " + log);
        assertEquals(0, p.exitValue(), "the Python check failed:\n" + log);
        assertTrue(log.contains("checked"), log);
    }

    @Test
    void pythonsTarfileAndPilReadTheJpegShardsWithImageFolderLabels() throws Exception {
        assumePython("PIL");
        Path data = data();
        Path out = tmp.resolve("out");
        assertOk(pack(data, "--out", out, "--resize", 64, "--shard-size", "48K"));
        python(CHECK_JPEG, out, data, 64);
    }

    private static final String CHECK_MARKERS = """
            import io, json, os, sys, tarfile
            from PIL import Image
            def members(out):
                index = json.load(open(os.path.join(out, 'index.json')))
                blobs = []
                for s in index['shardlist']:
                    with tarfile.open(os.path.join(out, s['url'])) as t:
                        blobs += [t.extractfile(m).read() for m in t.getmembers() if m.name.endswith('.jpg')]
                return blobs
            marked, plain = members(sys.argv[1]), members(sys.argv[2])
            assert len(marked) == len(plain) > 0
            restarts = 0
            for a, b in zip(marked, plain):
                pa, pb = Image.open(io.BytesIO(a)), Image.open(io.BytesIO(b))
                assert pa.size == pb.size and pa.convert('RGB').tobytes() == pb.convert('RGB').tobytes(), 'pixels differ'
                restarts += b'\\xff\\xdd' in a
            assert restarts > 0
            print('checked', len(marked), 'pairs decoded by PIL to the same pixels,', restarts, 'with a DRI')
            """;

    @Test
    void restartMarkersChangeTheBytesNotThePixels() throws Exception {
        Path data = data();
        Path marked = tmp.resolve("marked");
        Path plain = tmp.resolve("plain");
        String[] run = pack(data, "--out", marked, "--resize", 64);
        assertOk(run);
        if (!StokeJpeg.available()) {
            // Stoke's encoder was not built: said once, and the manifest says no markers.
            assertTrue(run[2].contains("packing without restart markers"), run[2]);
            assertEquals(
                    0,
                    manifest(marked)
                            .path("stoke")
                            .path("options")
                            .path("restart_interval_mcus")
                            .asInt(-1));
            System.err.println("[stoke] NOT CHECKED: restart markers in packs: " + StokeJpeg.unavailableReason());
            return;
        }
        assertOk(pack(data, "--out", plain, "--resize", 64, "--no-restart-markers"));
        assertEquals(
                PackOptions.DEFAULT_RESTART_MCUS,
                manifest(marked)
                        .path("stoke")
                        .path("options")
                        .path("restart_interval_mcus")
                        .asInt(-1));
        assertEquals(
                0,
                manifest(plain)
                        .path("stoke")
                        .path("options")
                        .path("restart_interval_mcus")
                        .asInt(-1));
        List<Member> a = allMembers(marked);
        List<Member> b = allMembers(plain);
        assertEquals(b.size(), a.size());
        int withMarkers = 0;
        for (int i = 0; i < a.size(); i += 2) {
            byte[] ma = a.get(i).data();
            byte[] mb = b.get(i).data();
            int dri = indexOf(ma, (byte) 0xDD);
            if (dri < 0) {
                assertArrayEquals(mb, ma, a.get(i).name() + ": kept as it was, in both packs");
                continue;
            }
            withMarkers++;
            assertEquals(-1, indexOf(mb, (byte) 0xDD), "a DRI in the pack without restart markers");
            // The interval: the divisor of the image's MCUs per row nearest the default.
            int w = jpegSize(ma)[0];
            int interval = ((ma[dri + 4] & 0xFF) << 8) | (ma[dri + 5] & 0xFF);
            int perRow = (w + 15) / 16;
            assertEquals(0, perRow % interval, a.get(i).name());
            assertEquals(
                    PackOptions.jpegShorterSide(64, 90, 1).restartInterval(w),
                    interval,
                    a.get(i).name());
            // Java's own JPEG decoder, independent of libjpeg-turbo: the same pixels.
            assertArrayEquals(pixels(mb), pixels(ma), a.get(i).name());
        }
        assertTrue(withMarkers > 0, "no resized image has restart markers");
        assumePython("PIL");
        python(CHECK_MARKERS, marked, plain);
    }

    /** The offset of the first 0xFF {@code marker} pair in {@code jpeg}, or -1. */
    static int indexOf(byte[] jpeg, byte marker) {
        for (int i = 0; i + 1 < jpeg.length; i++) {
            if (jpeg[i] == (byte) 0xFF && jpeg[i + 1] == marker) {
                return i;
            }
        }
        return -1;
    }

    private static int[] pixels(byte[] jpeg) throws IOException {
        java.awt.image.BufferedImage img = ImageIO.read(new ByteArrayInputStream(jpeg));
        return img.getRGB(0, 0, img.getWidth(), img.getHeight(), null, 0, img.getWidth());
    }

    /** What the Loader delivers for every sample of {@code data} (eval transform, dataset order). */
    private static byte[] loaderPixels(Path data) {
        FileDataset dataset = ImageFolder.scan(data);
        int sample = 224 * 224 * 3;
        byte[] all = new byte[dataset.size() * sample];
        try (Loader loader = Loader.builder(dataset).batchSize(5).workers(2).build()) {
            for (Batch b : loader) {
                try (b) {
                    for (int i = 0; i < b.size(); i++) {
                        MemorySegment.copy(
                                b.sample(i), ValueLayout.JAVA_BYTE, 0, all, (int) b.index(i) * sample, sample);
                    }
                }
            }
        }
        return all;
    }

    @Test
    void rawShardsHoldTheLoadersPixelsAsNpy() throws Exception {
        Path data = data();
        Path out = tmp.resolve("out");
        assertOk(pack(data, "--out", out, "--format", "raw", "--shard-size", "1M", "--workers", 2));
        FileDataset dataset = ImageFolder.scan(data);
        byte[] expected = loaderPixels(data);
        byte[] header = NpyHeader.uint8(224, 224, 3);
        List<Member> ms = allMembers(out);
        assertEquals(2 * dataset.size(), ms.size());
        int sample = 224 * 224 * 3;
        for (int i = 0; i < dataset.size(); i++) {
            assertEquals(key(dataset, i) + ".npy", ms.get(2 * i).name());
            assertEquals(key(dataset, i) + ".cls", ms.get(2 * i + 1).name());
            byte[] npy = ms.get(2 * i).data();
            assertArrayEquals(header, Arrays.copyOf(npy, header.length));
            assertArrayEquals(
                    Arrays.copyOfRange(expected, i * sample, (i + 1) * sample),
                    Arrays.copyOfRange(npy, header.length, npy.length),
                    "sample " + i + " differs from the Loader's");
        }
    }

    @Test
    void numpyLoadsTheRawShardsAsTheLoadersPixels() throws Exception {
        assumePython("numpy");
        Path data = data();
        Path out = tmp.resolve("out");
        assertOk(pack(data, "--out", out, "--format", "raw", "--shard-size", "1M"));
        Path file = tmp.resolve("expected.u8");
        Files.write(file, loaderPixels(data));
        python(CHECK_RAW, out, file, ImageFolder.scan(data).size());
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

    private static void assertSamePack(byte[][] expected, Path dir) throws IOException {
        byte[][] got = contents(dir);
        assertEquals(expected.length, got.length, "number of shards");
        for (int i = 0; i < got.length; i++) {
            assertArrayEquals(expected[i], got[i], i == got.length - 1 ? "index.json" : "shard " + i);
        }
    }

    private static void setComplete(Path dir, boolean complete) throws IOException {
        ObjectNode m = (ObjectNode) manifest(dir);
        ((ObjectNode) m.get("stoke")).put("complete", complete);
        Files.write(dir.resolve("index.json"), JSON.writeValueAsBytes(m));
    }

    private static Object inode(Path p) throws IOException {
        return Files.getAttribute(p, "unix:ino");
    }

    @ParameterizedTest(name = "--format {0}")
    @ValueSource(strings = {"jpeg", "raw"})
    void packsAreByteIdenticalAndResumeWithoutRewritingWholeShards(String format) throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 20, 2, 9);
        String limit = format.equals("jpeg") ? "16K" : "24K";
        List<Object> options = new ArrayList<>(List.of("--format", format, "--resize", 64, "--shard-size", limit));
        if (format.equals("raw")) {
            options.addAll(List.of("--crop", 48));
        }
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        assertOk(pack(args(data, a, options, "--workers", 2)));
        assertOk(pack(args(data, b, options, "--workers", 1)));
        String[] again = pack(args(data, a, options));
        assertOk(again);
        assertTrue(again[1].contains("already complete"), again[1]);
        // Two runs, two worker counts: the same bytes, the manifest included.
        byte[][] expected = contents(b);
        assertSamePack(expected, a);
        List<Path> files = shards(a);
        assertTrue(files.size() >= 4, "the test needs several shards, got " + files.size());
        assertCutGreedily(a, ByteSize.parse(limit));
        for (Path f : files) {
            TarHeaders.assertDeterministic(Files.readAllBytes(f));
        }

        // An interrupted pack: the last shard gone, a partial .tmp in its place, the manifest incomplete.
        FileTime old = FileTime.fromMillis(978_307_200_000L); // 2001-01-01
        List<Object> inodes = new ArrayList<>();
        for (Path f : files) {
            Files.setLastModifiedTime(f, old);
            inodes.add(inode(f));
        }
        Path last = files.getLast();
        Files.delete(last);
        Files.write(last.resolveSibling(last.getFileName() + ".tmp"), "half a shard".getBytes());
        setComplete(a, false);
        String[] resumed = pack(args(data, a, options));
        assertOk(resumed);
        int resumeAt = manifest(b)
                .path("shardlist")
                .get(files.size() - 1)
                .path("first_sample")
                .asInt();
        assertTrue(resumeAt > 0);
        assertTrue(resumed[1].contains("resumed at sample     " + resumeAt), resumed[1]);
        assertTrue(resumed[1].contains("1 written, " + files.size() + " in the pack"), resumed[1]);
        assertSamePack(expected, a);
        for (int i = 0; i < files.size() - 1; i++) {
            assertEquals(old, Files.getLastModifiedTime(files.get(i)), "shard " + i + " was rewritten");
            assertEquals(inodes.get(i), inode(files.get(i)), "shard " + i + " was replaced");
        }

        // A damaged shard in the middle: it and every later one are written again, the ones before kept.
        Files.write(files.get(1), Arrays.copyOf(Files.readAllBytes(files.get(1)), 1000));
        assertOk(pack(args(data, a, options)));
        assertSamePack(expected, a);
        assertEquals(old, Files.getLastModifiedTime(files.get(0)));
        assertEquals(inodes.get(0), inode(files.get(0)));
        assertNotEquals(old, Files.getLastModifiedTime(files.get(2)), "shards after a damaged one are written again");
        try (Stream<Path> s = Files.list(a)) {
            assertEquals(List.of(), s.filter(p -> p.toString().endsWith(".tmp")).toList());
        }
    }

    private static Object[] args(Path data, Path out, List<Object> options, Object... more) {
        List<Object> all = new ArrayList<>(List.of(data, "--out", out));
        all.addAll(options);
        all.addAll(List.of(more));
        return all.toArray();
    }

    @Test
    void anotherPackInTheFolderIsRefusedUnlessOverwrite() throws Exception {
        Path data = data();
        Path out = tmp.resolve("out");
        assertOk(pack(data, "--out", out, "--resize", 64));
        byte[][] before = contents(out);
        String[] r = pack(data, "--out", out, "--resize", 64, "--quality", 70);
        assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], r[2]);
        assertTrue(
                r[2].contains("--quality 90") && r[2].contains("--quality 70") && r[2].contains("--overwrite"), r[2]);
        assertSamePack(before, out);
        assertOk(pack(data, "--out", out, "--resize", 64, "--quality", 70, "--overwrite"));
        assertEquals(
                70, manifest(out).path("stoke").path("options").path("quality").asInt());

        // Shard files with no manifest are not resumed blindly.
        Path strays = tmp.resolve("strays");
        Files.createDirectories(strays);
        Files.write(strays.resolve("shard-000000.tar"), new byte[1024]);
        String[] s = pack(data, "--out", strays);
        assertEquals(Integer.toString(Main.EXIT_USAGE), s[0], s[2]);
        assertTrue(s[2].contains("no index.json"), s[2]);
    }

    @Test
    void longNestedKeysRoundTripThroughPaxHeaders() throws Exception {
        Path root = tmp.resolve("list");
        String[] paths = {
            "short/a.jpg",
            "deep/" + "f".repeat(120) + "/" + "g".repeat(150) + "/img.v2.final.jpg",
            "deeper/" + "p".repeat(200) + "/" + "q".repeat(200) + "/" + "r".repeat(180) + "/x.jpeg",
        };
        int[] labels = {0, 7, 12};
        StringBuilder list = new StringBuilder();
        for (int i = 0; i < paths.length; i++) {
            Path f = root.resolve(paths[i]);
            Files.createDirectories(f.getParent());
            Files.write(f, TestImages.jpeg(90 + 10 * i, 70, i));
            list.append(paths[i]).append(' ').append(labels[i]).append('\n');
        }
        Path listFile = root.resolve("train.txt");
        Files.writeString(listFile, list);
        Path out = tmp.resolve("out");
        assertOk(pack(listFile, "--out", out, "--resize", 64));
        String[] keys = {"short/a", paths[1].replace("img.v2.final.jpg", "img_v2_final"), paths[2].replace(".jpeg", "")
        };
        assertTrue(keys[1].length() > 100 && keys[2].length() > 512, "long enough for one and for two PAX records");
        List<Member> ms = allMembers(out);
        assertEquals(6, ms.size());
        for (int i = 0; i < keys.length; i++) {
            assertEquals(keys[i] + ".jpg", ms.get(2 * i).name());
            assertEquals(keys[i] + ".cls", ms.get(2 * i + 1).name());
            assertEquals(
                    Integer.toString(labels[i]), new String(ms.get(2 * i + 1).data(), StandardCharsets.US_ASCII));
        }
        byte[] tar = Files.readAllBytes(out.resolve("shard-000000.tar"));
        assertEquals(
                4,
                TarHeaders.of(tar).stream()
                        .filter(h -> TarHeaders.type(h) == 'x')
                        .count(),
                "a PAX header before each member whose name is 100 bytes or more");
        TarHeaders.assertDeterministic(tar);
        if (pythonHas("tarfile")) {
            python(
                    """
                    import sys, tarfile
                    names = tarfile.open(sys.argv[1]).getnames()
                    assert names == sys.argv[2:], names
                    print('checked', len(names), 'names')
                    """,
                    out.resolve("shard-000000.tar"),
                    keys[0] + ".jpg",
                    keys[0] + ".cls",
                    keys[1] + ".jpg",
                    keys[1] + ".cls",
                    keys[2] + ".jpg",
                    keys[2] + ".cls");
        } else {
            System.err.println("[stoke] SKIPPING Python's tarfile read-back of long names: no " + TestPython.PATH);
        }
    }

    @Test
    void aBadFileStopsThePackNamingItAndSkipLeavesItOutAndResumes() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 12, 2, 4);
        Path bad = data.resolve("class01/zz_broken.jpg");
        Files.write(bad, "not a jpeg at all".getBytes());
        Path out = tmp.resolve("out");
        String[] r = pack(data, "--out", out, "--resize", 64, "--shard-size", "8K");
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[2]);
        assertTrue(r[2].contains(bad.toString()) && r[2].contains("NOT_IMAGE"), r[2]);
        JsonNode m = manifest(out);
        assertFalse(m.path("stoke").path("complete").asBoolean());
        assertTrue(m.path("shardlist").size() >= 1, "whole shards before the bad file stay");
        for (JsonNode s : m.path("shardlist")) {
            assertEquals(
                    s.path("filesize").asLong(),
                    Files.size(out.resolve(s.path("url").asText())));
        }
        try (Stream<Path> s = Files.list(out)) {
            assertEquals(
                    List.of(), s.filter(p -> p.toString().endsWith(".tmp")).toList(), "the partial shard is removed");
        }

        String[] skip = pack(data, "--out", out, "--resize", 64, "--shard-size", "8K", "--on-error", "skip");
        assertOk(skip);
        assertTrue(skip[1].contains("resumed at sample"), skip[1]);
        assertTrue(skip[2].contains("skipped: " + bad) && skip[2].contains("SKIPPED 1 file"), skip[2]);
        FileDataset dataset = ImageFolder.scan(data);
        List<Member> ms = allMembers(out);
        assertEquals(2 * (dataset.size() - 1), ms.size());
        assertTrue(ms.stream().noneMatch(x -> x.name().startsWith("class01/zz_broken")));
        JsonNode skipped = manifest(out)
                .path("shardlist")
                .get(manifest(out).path("shardlist").size() - 1)
                .path("skipped");
        assertEquals(bad.toString(), skipped.get(0).path("path").asText());
        assertEquals(1, manifest(out).path("stoke").path("skipped").asInt());
        // Resuming after the failure gives what one run under skip gives.
        Path fresh = tmp.resolve("fresh");
        assertOk(pack(data, "--out", fresh, "--resize", 64, "--shard-size", "8K", "--on-error", "skip"));
        assertSamePack(contents(fresh), out);
    }

    @Test
    void twoFilesWithOneKeyAreAnErrorNamingBoth() throws Exception {
        Path data = tmp.resolve("data");
        Files.createDirectories(data.resolve("c"));
        Files.write(data.resolve("c/a.b.jpg"), TestImages.jpeg(50, 40, 1));
        Files.write(data.resolve("c/a_b.jpg"), TestImages.jpeg(50, 40, 2));
        Path out = tmp.resolve("out");
        String[] r = pack(data, "--out", out);
        assertEquals(Integer.toString(Main.EXIT_FAILED), r[0], r[2]);
        assertTrue(
                r[2].contains(data.resolve("c/a.b.jpg").toString())
                        && r[2].contains(data.resolve("c/a_b.jpg").toString()),
                r[2]);
        assertFalse(Files.exists(out.resolve("shard-000000.tar")));
    }

    @Test
    void wrongUsageIsExitCodeTwoWithTheReason() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 2, 1, 1);
        String o = tmp.resolve("out").toString();
        String[][] cases = {
            {"--crop", "100"},
            {"--resize", "64", "--max-side", "100"},
            {"--format", "gif"},
            {"--format", "png", "--quality", "80"},
            {"--format", "png", "--crop", "64"},
            {"--shard-size", "12X"},
            {"--format", "raw", "--quality", "80"},
            {"--quality", "0"},
            {"--format", "raw", "--resize", "100", "--crop", "200"},
            {"--on-error", "ignore"},
            {"--workers", "0"},
            {"--shard-cache-size", "0"},
            {"--key-column", "key"},
        };
        for (String[] c : cases) {
            List<Object> args = new ArrayList<>(List.of(data, "--out", o));
            args.addAll(List.of((Object[]) c));
            String[] r = pack(args.toArray());
            assertEquals(Integer.toString(Main.EXIT_USAGE), r[0], String.join(" ", c) + ": " + r[2]);
            // Pack's own checks say "stoke pack: ..."; a word outside an option's choices is picocli's to name.
            assertTrue(r[2].contains("stoke pack: ") || r[2].contains("Invalid value for option '" + c[0] + "'"), r[2]);
        }
        assertFalse(Files.exists(tmp.resolve("out")));
    }

    @Test
    void sizesTakeBinarySuffixes() {
        assertEquals(1000, ByteSize.parse("1000"));
        assertEquals(64L << 20, ByteSize.parse("64M"));
        assertEquals(1L << 30, ByteSize.parse("1G"));
        assertEquals(512L << 10, ByteSize.parse("512KiB"));
        assertEquals(3L << 40, ByteSize.parse("3t"));
        assertEquals(20, ByteSize.parse("20B"));
        for (String bad : new String[] {"", "M", "1.5G", "-1", "12X", "99999999999999999999"}) {
            assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(bad), bad);
        }
    }
}
