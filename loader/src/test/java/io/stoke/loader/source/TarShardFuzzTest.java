package io.stoke.loader.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import io.stoke.loader.transform.TransformSpec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarFile;
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

    /**
     * The limit check walks the headers as Commons Compress does: over the good shard and every
     * mutant that Commons Compress reads to the end (in the part the check hands it), both find
     * the same members at the same data offsets, so Commons Compress reads no header the check
     * has not seen.
     */
    @Test
    void theLimitCheckWalksTheHeadersAsCommonsCompressDoes() throws Exception {
        byte[] good = goodShard();
        SplittableRandom r = new SplittableRandom(20261128);
        int compared = 0;
        for (int m = 0; m <= MUTANTS; m++) {
            byte[] b = m == 0 ? good : mutate(good, r);
            MemorySegment shard = MemorySegment.ofArray(b);
            List<Long> walked = new ArrayList<>();
            TarExtensionLimits.Verdict v = TarExtensionLimits.check(shard, walked::add);
            List<Long> read = new ArrayList<>();
            try (TarFile tar = new TarFile(Arrays.copyOf(b, (int) v.readable()))) {
                for (TarArchiveEntry e : tar.getEntries()) {
                    read.add(e.getDataOffset());
                }
            } catch (IOException | RuntimeException damaged) {
                continue; // named as damage; the stream read sees no more of the shard than TarFile
            }
            assertEquals(walked.subList(0, Math.min(walked.size(), read.size())), read, "mutant " + m);
            compared++;
        }
        assertTrue(compared > MUTANTS / 3, compared + " compared");
    }

    /**
     * Extension headers that declare more than a limit, in a JVM whose heap (48 MiB) an unbounded
     * read of any of them would exhaust: the four 512 MiB bombs (long name, long link, PAX, global
     * PAX), and mutants with a long name, long link or PAX header of a random declared length (up to
     * 1 GiB, sparse) and random content at a random member boundary, with good members after it.
     * Every shard opens or is refused in a sentence, each one over a limit is named with it, and the
     * child never runs out of memory.
     */
    @Test
    void extensionHeaderBombsAreNamedInASmallHeap() throws Exception {
        byte[] before = TarExtensionLimitsTest.twoSamples();
        List<String> args = new ArrayList<>();
        List<String> expected = new ArrayList<>();
        for (char type : new char[] {'L', 'K', 'x', 'g'}) {
            Path shard = tmp.resolve("bomb-" + type + ".tar");
            TestTars.bomb(shard, before, type, TarExtensionLimitsTest.BOMB);
            args.add(shard.toString());
            expected.add(shard + "\twarning\tWARNING: skipping what is past the damage: " + shard
                    + ": the member header at byte " + before.length + " declares ");
            expected.add(shard + "\tsamples\t2\tbad\t0");
        }
        SplittableRandom r = new SplittableRandom(20261128);
        List<Path> overLimit = new ArrayList<>();
        for (int m = 0; m < 40; m++) {
            Path shard = tmp.resolve("ext" + m + ".tar");
            if (bombMutant(shard, r)) {
                overLimit.add(shard);
            }
            args.add(shard.toString());
        }
        String out = runChild("-Xmx48m", args);
        for (String line : expected) {
            assertTrue(out.contains(line), "missing: " + line + "\n" + out);
        }
        for (String shard : args) {
            assertTrue(out.contains(shard + "\tsamples\t") || out.contains(shard + "\tnone"), shard + "\n" + out);
        }
        for (Path shard : overLimit) {
            assertTrue(
                    out.lines()
                            .anyMatch(l -> l.startsWith(shard + "\twarning\t")
                                    && l.contains("the member header at byte ")
                                    && l.contains(", more than the ")),
                    shard + "\n" + out);
        }
        assertTrue(overLimit.size() > 10 && overLimit.size() < 40, overLimit.size() + " of 40 over a limit");
    }

    /**
     * Writes a shard of {@code k} good samples, an extension header of a random type, declared
     * length and content, then good samples again after the length it declares (the gap left
     * sparse). Returns whether the declared length is over its limit.
     */
    private static boolean bombMutant(Path file, SplittableRandom r) throws Exception {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int k = r.nextInt(3);
        for (int i = 0; i < k; i++) {
            TestTars.rawMember(head, "m/s" + i + ".jpg", '0', TestImages.jpeg(40, 32, i));
        }
        char type = "LKxXg".charAt(r.nextInt(5));
        long limit = type == 'L' || type == 'K' ? ReadLimits.TAR_LONG_NAME : ReadLimits.TAR_PAX_HEADER;
        long declared = switch (r.nextInt(3)) {
            case 0 -> 1 + r.nextLong(limit); // within: its content is read, whatever it is
            case 1 -> limit + 1 + r.nextLong(1024);
            default -> limit + r.nextLong(1L << 30);
        };
        byte[] content = new byte[(int) Math.min(declared, 4096)];
        if (r.nextBoolean()) {
            r.nextBytes(content);
        } else {
            byte[] pax = TestTars.pax("path=m/long" + "n".repeat(r.nextInt(200)) + ".jpg", "mtime=1");
            System.arraycopy(pax, 0, content, 0, Math.min(pax.length, content.length));
        }
        ByteArrayOutputStream tail = new ByteArrayOutputStream();
        TestTars.rawMember(tail, "m/after.jpg", '0', TestImages.jpeg(40, 40, 99));
        TestTars.rawMember(tail, "m/after.cls", '0', "3".getBytes(StandardCharsets.US_ASCII));
        tail.writeBytes(new byte[1024]);
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(file.toFile(), "rw")) {
            f.write(head.toByteArray());
            f.write(TestTars.header("././@LongLink", declared, type));
            f.write(content);
            f.seek(head.size() + 512 + (declared + 511) / 512 * 512);
            f.write(tail.toByteArray());
        }
        return declared > limit;
    }

    /** Runs {@link TarScanChild} over {@code shards} in a JVM with {@code heap}; its output, once it exits 0. */
    static String runChild(String heap, List<String> shards) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED",
                "--add-exports",
                "java.base/jdk.internal.misc=ALL-UNNAMED",
                heap,
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                TarScanChild.class.getName()));
        cmd.addAll(shards);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    /** Reads every sample of the shard under skip: {samples, bad ones}; null when it has none to read. */
    private static int[] readAll(Path shard) {
        return readAll(shard, warning -> {});
    }

    /** {@link #readAll(Path)}, saying the shard's damage through {@code warn}. */
    static int[] readAll(Path shard, Consumer<String> warn) {
        Dataset dataset;
        try {
            dataset = Datasets.openLocalChecked(shard.toString(), ErrorPolicy.SKIP, warn);
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
