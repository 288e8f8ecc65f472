package io.stoke.loader.source;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Raw shards ({@code KEY.npy}, uint8 HWC, as {@code stoke pack --format raw} writes them): a sample
 * whose stored size is the requested output is delivered without decode or resize, its pixels
 * exactly the stored ones (uint8) or their normalisation (float32); any other array is named.
 */
class RawShardsTest {
    static final int SIDE = 40;
    static final TransformSpec EVAL = TransformSpec.defaults().withResize(48, SIDE);

    @TempDir
    Path tmp;

    /** An .npy file as NumPy's format documentation describes it (version 1.0), written independently of Stoke's reader. */
    static byte[] npy(byte[] pixels, int h, int w, int c) {
        String dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (" + h + ", " + w + ", " + c + "), }";
        int total = (10 + dict.length() + 1 + 63) / 64 * 64;
        StringBuilder header = new StringBuilder(dict);
        while (10 + header.length() + 1 < total) {
            header.append(' ');
        }
        header.append('\n');
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(new byte[] {
            (byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (byte) header.length(), (byte) (header.length() >> 8)
        });
        out.writeBytes(header.toString().getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(pixels);
        return out.toByteArray();
    }

    static byte[][] writeShard(Path file) throws IOException {
        byte[][] pixels = new byte[4][];
        SplittableRandom r = new SplittableRandom(11);
        try (OutputStream os = Files.newOutputStream(file);
                TarArchiveOutputStream tar = new TarArchiveOutputStream(os)) {
            for (int i = 0; i < 4; i++) {
                pixels[i] = new byte[SIDE * SIDE * 3];
                r.nextBytes(pixels[i]);
                TestTars.member(tar, "raw/s" + i + ".npy", npy(pixels[i], SIDE, SIDE, 3));
                TestTars.member(tar, "raw/s" + i + ".cls", Integer.toString(i).getBytes(StandardCharsets.US_ASCII));
            }
            TestTars.member(tar, "raw/small.npy", npy(new byte[32 * 32 * 3], 32, 32, 3));
            TestTars.member(tar, "raw/small.cls", "9".getBytes(StandardCharsets.US_ASCII));
        }
        return pixels;
    }

    @Test
    void rawSamplesOfTheOutputSizeAreDeliveredAsStoredAndOthersNamed() throws Exception {
        Path shard = tmp.resolve("raw-000000.tar");
        byte[][] pixels = writeShard(shard);
        try (Dataset dataset = Datasets.openLocal(shard.toString())) {
            assertEquals(5, dataset.size());
            for (TransformSpec spec : List.of(EVAL, EVAL.withOutput(TransformSpec.Output.FLOAT32_CHW))) {
                try (Loader loader = Loader.builder(dataset)
                        .transform(spec)
                        .batchSize(5)
                        .workers(2)
                        .slots(2)
                        .onError(ErrorPolicy.SKIP)
                        .build()) {
                    Batch b = loader.next();
                    try (b) {
                        for (int i = 0; i < 4; i++) {
                            assertEquals(SampleStatus.OK, b.status(i));
                            assertEquals(i, b.labels().getAtIndex(ValueLayout.JAVA_INT, i));
                            if (spec.output() == TransformSpec.Output.UINT8_HWC) {
                                byte[] got = b.pixels()
                                        .asSlice((long) i * pixels[i].length, pixels[i].length)
                                        .toArray(ValueLayout.JAVA_BYTE);
                                assertArrayEquals(pixels[i], got, "sample " + i);
                            } else {
                                long plane = (long) SIDE * SIDE;
                                for (int p = 0; p < plane; p += 97) {
                                    for (int c = 0; c < 3; c++) {
                                        float expected =
                                                ((pixels[i][3 * p + c] & 0xFF) / 255f - spec.mean()[c]) / spec.std()[c];
                                        float got = b.pixels()
                                                .getAtIndex(
                                                        ValueLayout.JAVA_FLOAT_UNALIGNED,
                                                        i * 3 * plane + c * plane + p);
                                        assertEquals(
                                                expected, got, 1e-6, "sample " + i + " pixel " + p + " channel " + c);
                                    }
                                }
                            }
                        }
                        assertEquals(SampleStatus.BAD_RAW, b.status(4));
                        SampleError e = b.skipped().get(0);
                        assertEquals(shard + "/raw/small", e.path());
                        assertTrue(
                                e.detail().contains("(32, 32, 3)") || e.detail().contains("(32,32,3)"), e.detail());
                    }
                }
            }
            TransformSpec train = EVAL.withTrain(SIDE, new RandomResizedCrop(0.5, 1, 0.75, 4 / 3.0, 0.5));
            try (Loader loader = Loader.builder(dataset)
                            .transform(train)
                            .batchSize(5)
                            .workers(1)
                            .slots(2)
                            .onError(ErrorPolicy.SKIP)
                            .build();
                    Batch b = loader.next()) {
                assertEquals(5, b.skipped().size());
                assertTrue(
                        b.skipped().get(0).detail().contains("training transform needs JPEG shards"),
                        b.skipped().get(0).detail());
            }
            // Raw samples are stoke pack's shorter-side resize: a squash would serve them as if squashed.
            try (Loader loader = Loader.builder(dataset)
                            .transform(EVAL.withSquash(EVAL.resize(), SIDE))
                            .batchSize(5)
                            .workers(1)
                            .slots(2)
                            .onError(ErrorPolicy.SKIP)
                            .build();
                    Batch b = loader.next()) {
                assertEquals(5, b.skipped().size());
                assertTrue(
                        b.skipped().get(0).detail().contains("--transform squash needs JPEG shards"),
                        b.skipped().get(0).detail());
            }
        }
    }
}
