package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokeJpeg;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.decode.JpegDecoder;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.loader.transform.TransformSpec.DctScaling;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stoke pack --keep-pixels}: every JPEG of every kind (4:2:0, 4:2:2, 4:4:4, gray,
 * progressive, odd sizes) rewritten with restart markers, one that has them kept as it is, a PNG
 * stored as it is; the shards read through the loader give the folder's bytes, for the evaluation
 * and the training transform at every DCT scale; PIL decodes every member to its original's pixels.
 */
class PackKeepPixelsTest {
    @TempDir
    Path tmp;

    private static final int[] SAMPLING = {
        TurboJpeg.TJSAMP_420, TurboJpeg.TJSAMP_422, TurboJpeg.TJSAMP_444, TurboJpeg.TJSAMP_GRAY
    };

    /** 33 JPEGs of every sampling, a third progressive, plus one with restart markers and a PNG, in 3 classes. */
    private Path data() throws IOException {
        Path root = tmp.resolve("data");
        SplittableRandom r = new SplittableRandom(7);
        for (int i = 0; i < 33; i++) {
            Path dir = Files.createDirectories(root.resolve("c" + i % 3));
            int w = 17 + r.nextInt(300);
            int h = 17 + r.nextInt(240);
            int samp = SAMPLING[i % SAMPLING.length];
            byte[] rgb = TestImages.rgb(w, h, i);
            byte[] pixels = rgb;
            if (samp == TurboJpeg.TJSAMP_GRAY) {
                pixels = new byte[w * h];
                for (int p = 0; p < pixels.length; p++) {
                    pixels[p] = rgb[3 * p + 1];
                }
            }
            int flags = i % 3 == 0 ? TurboJpeg.TJFLAG_PROGRESSIVE : 0;
            byte[] jpeg = TestImages.jpeg(pixels, w, h, samp == TurboJpeg.TJSAMP_GRAY ? 1 : 3, 85, samp, flags);
            Files.write(dir.resolve(String.format("img%03d.jpg", i)), jpeg);
        }
        // A file with restart markers already: Stoke's encoder's, as stoke pack writes them.
        Path shard = tmp.resolve("marked");
        assertEquals("0", PackCommandTest.pack(root, "--out", shard, "--resize", 64)[0]);
        byte[] marked = PackCommandTest.allMembers(shard).stream()
                .filter(m -> m.name().endsWith(".jpg") && PackCommandTest.indexOf(m.data(), (byte) 0xDD) >= 0)
                .findFirst()
                .orElseThrow()
                .data();
        Files.write(root.resolve("c0").resolve("marked.jpg"), marked);
        Files.write(root.resolve("c1").resolve("plain.png"), PNG);
        return root;
    }

    @Test
    void everyImageKeepsItsPixelsAndEveryJpegSeeks() throws Exception {
        Assumptions.assumeTrue(StokeJpeg.available(), "NOT CHECKED: " + StokeJpeg.unavailableReason());
        Path data = data();
        Path out = tmp.resolve("out");
        String[] run = PackCommandTest.pack(data, "--out", out, "--keep-pixels", "--shard-size", "64K");
        PackCommandTest.assertOk(run);
        assertTrue(
                run[1].contains("33 rewritten with restart markers, 1 kept as they were (1 with markers already)"),
                run[1]);
        assertTrue(run[1].contains("1 stored as they were"), run[1]);
        assertEquals(
                "original",
                PackCommandTest.manifest(out)
                        .path("stoke")
                        .path("options")
                        .path("format")
                        .asText());
        int copied = 0;
        for (PackCommandTest.Member m : PackCommandTest.allMembers(out)) {
            if (m.name().endsWith(".png")) {
                assertArrayEquals(PNG, m.data(), m.name());
            } else if (m.name().endsWith(".jpg")) {
                assertTrue(PackCommandTest.indexOf(m.data(), (byte) 0xDD) >= 0, m.name() + " has no DRI");
                assertFalse(TestImages.isProgressive(m.data()), m.name() + " is still progressive");
                assertEquals(
                        StokeJpeg.PATH_SEEKED, seekPath(m.data()), m.name() + ": a box in its middle is not seeked");
                copied++;
            }
        }
        assertEquals(34, copied);
        try (Dataset folder = ImageFolder.scan(data);
                Dataset shards = Datasets.openLocal(out.toString())) {
            assertEquals(folder.size(), shards.size());
            for (DctScaling scaling : DctScaling.values()) {
                TransformSpec eval = TransformSpec.defaults().withResize(48, 40).withDctScaling(scaling);
                TransformSpec train = TransformSpec.defaults()
                        .withTrain(40, RandomResizedCrop.defaults())
                        .withDctScaling(scaling);
                for (TransformSpec spec : List.of(eval, train)) {
                    assertEquals(batches(folder, spec), batches(shards, spec), spec + ": the shards' pixels differ");
                }
            }
        }
        PackCommandTest.assumePython("PIL");
        PackCommandTest.python(CHECK_PIL, out, data);
    }

    /** How the region decoder decodes the middle ninth of {@code jpeg}, at full scale. */
    private static int seekPath(byte[] jpeg) {
        try (Arena arena = Arena.ofConfined();
                JpegDecoder decoder = new JpegDecoder(TransformSpec.defaults().withDctScaling(DctScaling.NONE))) {
            MemorySegment bytes = arena.allocateFrom(ValueLayout.JAVA_BYTE, jpeg);
            assertEquals(SampleStatus.OK, decoder.readHeader(bytes, jpeg.length));
            int w = decoder.scaledWidthAt(1, 1); // no DCT scaling: the image's own size
            int h = decoder.scaledHeightAt(1, 1);
            CropBox box = new CropBox().set(w / 3, h / 3, Math.max(1, w / 3), Math.max(1, h / 3), false);
            assertEquals(SampleStatus.OK, decoder.decodeBox(bytes, jpeg.length, box, Math.max(w, h)));
            return decoder.regionPath();
        }
    }

    private static final String CHECK_PIL = """
            import io, json, os, sys, tarfile
            from PIL import Image
            out, data = sys.argv[1], sys.argv[2]
            originals = {}
            for d, _, files in os.walk(data):
                for f in files:
                    path = os.path.join(d, f)
                    originals[os.path.splitext(os.path.relpath(path, data))[0]] = path
            n = 0
            for s in json.load(open(os.path.join(out, 'index.json')))['shardlist']:
                with tarfile.open(os.path.join(out, s['url'])) as t:
                    for m in t.getmembers():
                        key, ext = os.path.splitext(m.name)
                        if ext == '.cls':
                            continue
                        a = Image.open(io.BytesIO(t.extractfile(m).read()))
                        b = Image.open(originals[key])
                        assert a.size == b.size and a.mode == b.mode, (key, a.size, b.size, a.mode, b.mode)
                        assert a.tobytes() == b.tobytes(), key + ': PIL decodes other pixels'
                        n += 1
            assert n == len(originals), (n, len(originals))
            print('checked', n, 'members decoded by PIL to their originals pixels')
            """;

    /** Every batch's indices and pixels, shuffled with one seed: the same for the same pixels. */
    private static List<String> batches(Dataset dataset, TransformSpec spec) {
        List<String> out = new ArrayList<>();
        try (Loader l = Loader.builder(dataset)
                .transform(spec)
                .batchSize(7)
                .workers(2)
                .shuffle(true)
                .seed(3)
                .build()) {
            for (Batch b : l) {
                try (b) {
                    long[] idx = b.indices().toArray(ValueLayout.JAVA_LONG);
                    java.util.zip.CRC32 crc = new java.util.zip.CRC32();
                    crc.update(b.pixels().asByteBuffer());
                    out.add(java.util.Arrays.toString(idx) + " " + crc.getValue() + " " + b.skipped());
                }
            }
        }
        return out;
    }

    @Test
    void aDamagedJpegIsSkippedOrStopsThePackAsInEveryPack() throws Exception {
        Assumptions.assumeTrue(StokeJpeg.available(), "NOT CHECKED: " + StokeJpeg.unavailableReason());
        Path data = TestImages.imageFolder(tmp.resolve("few"), 6, 2, 3);
        Path bad = data.resolve("class00").resolve("img0000.jpg");
        byte[] whole = Files.readAllBytes(bad);
        Files.write(bad, java.util.Arrays.copyOf(whole, whole.length / 2));
        String[] fail = PackCommandTest.pack(data, "--out", tmp.resolve("a"), "--keep-pixels");
        assertEquals("1", fail[0], fail[1] + fail[2]);
        assertTrue(fail[2].contains("img0000.jpg"), fail[2]);
        String[] skip = PackCommandTest.pack(data, "--out", tmp.resolve("b"), "--keep-pixels", "--on-error", "skip");
        PackCommandTest.assertOk(skip);
        assertTrue(skip[1].contains("5 packed, 1 skipped"), skip[1]);
        String[] usage = PackCommandTest.pack(data, "--out", tmp.resolve("c"), "--keep-pixels", "--resize", "64");
        assertEquals("2", usage[0]);
        assertTrue(usage[2].contains("--keep-pixels keeps every image as it is: no --resize"), usage[2]);
    }

    /** A 40 x 30 RGB PNG, written by the JDK's ImageIO. */
    private static final byte[] PNG = png(40, 30);

    private static byte[] png(int w, int h) {
        byte[] rgb = TestImages.rgb(w, h, 3);
        java.awt.image.BufferedImage img =
                new java.awt.image.BufferedImage(w, h, java.awt.image.BufferedImage.TYPE_INT_RGB);
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                int p = 3 * (y * w + x);
                img.setRGB(x, y, (rgb[p] & 0xFF) << 16 | (rgb[p + 1] & 0xFF) << 8 | (rgb[p + 2] & 0xFF));
            }
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try {
            javax.imageio.ImageIO.write(img, "png", out);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
