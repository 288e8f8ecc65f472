package io.stoke.loader.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.TransformSpec;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mutation fuzzing of the shard path: a good shard with bytes flipped, runs overwritten, headers
 * zeroed and the file cut at random, hundreds of times from fixed seeds. Each mutant must open
 * (whatever the damage, under {@code skip}) or fail with a sentence, and every sample it yields must
 * go through read, decode and resize under {@code skip} without crashing, hanging, or producing a
 * status that names nothing. The JPEG members' bytes reach libjpeg-turbo and Stoke's region decoder
 * as they lie in the mapping, so this also feeds them damaged JPEGs at arbitrary offsets.
 */
class TarShardFuzzTest {
    static final TransformSpec SMALL = TransformSpec.defaults().withResize(40, 32);
    static final int MUTANTS = 300;

    @TempDir
    Path tmp;

    static byte[] goodShard() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(out)) {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            for (int i = 0; i < 6; i++) {
                String key = "d/" + "x".repeat(i * 30) + "s" + i;
                TestTars.member(tar, key + ".jpg", TestImages.jpeg(50 + 9 * i, 40 + 7 * i, 70 + i));
                TestTars.member(tar, key + ".cls", Integer.toString(i).getBytes(StandardCharsets.US_ASCII));
            }
        }
        return out.toByteArray();
    }

    static byte[] mutate(byte[] good, SplittableRandom r) {
        byte[] b = good.clone();
        switch (r.nextInt(5)) {
            case 0 -> { // flip bytes anywhere
                for (int k = 1 + r.nextInt(20); k > 0; k--) {
                    b[r.nextInt(b.length)] ^= (byte) (1 + r.nextInt(255));
                }
            }
            case 1 -> { // overwrite a header block's fields (size, checksum, name)
                int block = r.nextInt(b.length / 512) * 512;
                for (int k = 0; k < 16; k++) {
                    b[block + 100 + r.nextInt(60)] = (byte) ("0123456777 \0x".charAt(r.nextInt(13)));
                }
            }
            case 2 -> b = Arrays.copyOf(b, r.nextInt(b.length)); // cut
            case 3 -> { // a run of garbage
                int at = r.nextInt(b.length);
                for (int k = at; k < Math.min(b.length, at + 1 + r.nextInt(2000)); k++) {
                    b[k] = (byte) r.nextInt(256);
                }
            }
            default -> { // zero a block
                int block = r.nextInt(b.length / 512) * 512;
                Arrays.fill(b, block, block + 512, (byte) 0);
            }
        }
        return b;
    }

    @Test
    void mutatedShardsOpenOrFailWithASentenceAndNeverCrashOrHang() throws Exception {
        byte[] good = goodShard();
        SplittableRandom r = new SplittableRandom(20261123);
        int opened = 0;
        int samples = 0;
        int bad = 0;
        List<String> refusals = new ArrayList<>();
        for (int m = 0; m < MUTANTS; m++) {
            Path shard = tmp.resolve("m" + m + ".tar");
            Files.write(shard, mutate(good, r));
            int[] counts = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> readAll(shard), "mutant " + m);
            if (counts == null) {
                refusals.add(shard.toString());
                continue;
            }
            opened++;
            samples += counts[0];
            bad += counts[1];
            Files.delete(shard);
        }
        // Mutants are mostly readable in part, and the damage shows up as named samples.
        assertTrue(opened > MUTANTS / 2, "only " + opened + " of " + MUTANTS + " mutants opened");
        assertTrue(bad > 0 && samples > bad, samples + " samples, " + bad + " bad");
    }

    /** Reads every sample of the shard under skip: {samples, bad ones}; null when it has none to read. */
    private static int[] readAll(Path shard) {
        List<String> warnings = new ArrayList<>();
        Dataset dataset;
        try {
            dataset = Datasets.open(shard.toString(), ErrorPolicy.SKIP, warnings::add);
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().contains(shard.toString()), e.getMessage());
            return null;
        }
        try (dataset;
                Loader loader = Loader.builder(dataset)
                        .transform(SMALL)
                        .batchSize(4)
                        .workers(2)
                        .slots(2)
                        .onError(ErrorPolicy.SKIP)
                        .build()) {
            int n = 0;
            int bad = 0;
            for (Batch b : loader) {
                try (b) {
                    for (int i = 0; i < b.size(); i++) {
                        n++;
                        if (b.status(i) != SampleStatus.OK) {
                            bad++;
                        }
                    }
                    b.skipped().forEach(e -> assertTrue(e.path().startsWith(shard + "/"), e.path()));
                    assertEquals(b.skipped().size(), countBad(b));
                }
            }
            assertEquals(dataset.size(), n);
            return new int[] {n, bad};
        } catch (NoSampleDecodedException e) {
            return new int[] {dataset.size(), dataset.size()}; // every sample bad: named, and the run ends
        }
    }

    private static int countBad(Batch b) {
        int bad = 0;
        for (int i = 0; i < b.size(); i++) {
            bad += b.status(i) != SampleStatus.OK ? 1 : 0;
        }
        return bad;
    }
}
