package io.stoke.cli;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.testing.TestPython;
import io.stoke.loader.transform.TransformSpec;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.zip.CRC32;

/** Test data, process launching and output parsing for the cross-process ring tests. */
final class ShmTestSupport {
    static final int RESIZE = 32;
    static final int CROP = 32;

    private ShmTestSupport() {}

    /** {@code classes x perClass} small random JPEGs in ImageFolder layout. */
    static void makeDataset(Path root, int classes, int perClass) throws IOException {
        int w = 40;
        int h = 36;
        Random random = new Random(7);
        try (Arena arena = Arena.ofConfined();
                JpegCompressor jpeg = new JpegCompressor()) {
            MemorySegment rgb = arena.allocate((long) w * h * 3);
            MemorySegment out = arena.allocate(JpegCompressor.maxSize(w, h, TurboJpeg.TJSAMP_444));
            for (int c = 0; c < classes; c++) {
                Path dir = Files.createDirectories(root.resolve("class" + c));
                for (int i = 0; i < perClass; i++) {
                    for (long p = 0; p < rgb.byteSize(); p++) {
                        rgb.set(JAVA_BYTE, p, (byte) random.nextInt(256));
                    }
                    long n = jpeg.compress(rgb, w, w * 3, h, TurboJpeg.TJPF_RGB, TurboJpeg.TJSAMP_444, 90, 0, out);
                    Files.write(
                            root.resolve("class" + c).resolve(String.format("img%03d.jpg", i)),
                            out.asSlice(0, n).toArray(JAVA_BYTE));
                }
            }
        }
    }

    /** Dataset dataset -> "label crc" of its decoded pixels, from an in-process loader. */
    static Map<Long, String> expected(Path root) {
        Map<Long, String> map = new HashMap<>();
        CRC32 crc = new CRC32();
        try (Loader loader = Loader.imageFolder(root)
                .batchSize(4)
                .workers(1)
                .transform(transform())
                .build()) {
            for (Batch b : loader) {
                try (b) {
                    for (int i = 0; i < b.size(); i++) {
                        crc.reset();
                        crc.update(b.sample(i).asByteBuffer());
                        map.put(b.index(i), b.label(i) + " " + String.format("%08x", crc.getValue()));
                    }
                }
            }
        }
        return map;
    }

    static TransformSpec transform() {
        return TransformSpec.defaults().withResize(RESIZE, CROP);
    }

    static Path shmPath(String what) {
        Path dir = Files.isDirectory(Path.of("/dev/shm"))
                ? Path.of("/dev/shm")
                : Path.of(System.getProperty("java.io.tmpdir"));
        return dir.resolve("stoke-it-" + what + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    }

    static Path repoRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("native/stoke_ring.h"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("repository root (native/stoke_ring.h) not found");
        }
        return dir;
    }

    static List<String> javaCommand(String mainClass, String... args) {
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED",
                "--add-exports",
                "java.base/jdk.internal.misc=ALL-UNNAMED",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                mainClass));
        Collections.addAll(cmd, args);
        return cmd;
    }

    // ---- consumers in three languages ----

    enum Kind {
        JAVA,
        PYTHON,
        C
    }

    private static Path cConsumer;

    static synchronized List<String> consumerCommand(Kind kind, Path ring, String... extra) throws Exception {
        List<String> cmd = new ArrayList<>();
        switch (kind) {
            case JAVA -> cmd.addAll(javaCommand(RingDump.class.getName(), ring.toString()));
            case PYTHON -> {
                requirePython();
                cmd.addAll(List.of(TestPython.PATH, "-m", "tests._dump", ring.toString()));
            }
            case C -> {
                requireGcc();
                if (cConsumer == null) {
                    Path out =
                            Files.createDirectories(Path.of("target", "native")).resolve("stoke_consumer");
                    Process p = new ProcessBuilder(
                                    "gcc",
                                    "-O2",
                                    "-Wall",
                                    "-Werror",
                                    "-o",
                                    out.toString(),
                                    repoRoot()
                                            .resolve("native/stoke_consumer.c")
                                            .toString())
                            .redirectErrorStream(true)
                            .start();
                    String msg = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    if (p.waitFor() != 0) {
                        throw new AssertionError("gcc failed:\n" + msg);
                    }
                    cConsumer = out.toAbsolutePath();
                }
                cmd.addAll(List.of(cConsumer.toString(), ring.toString()));
            }
        }
        Collections.addAll(cmd, extra);
        return cmd;
    }

    static void requireGcc() {
        boolean ok = runs("gcc", "--version");
        if (!ok) {
            System.err.println("\n*** SKIPPING C-consumer test: gcc is not installed (./stoke test installs it) ***\n");
        }
        assumeTrue(ok, "gcc is not installed: C consumer tests skipped");
    }

    static void requirePython() {
        boolean ok = runs(TestPython.PATH, "-c", "import numpy");
        if (!ok) {
            System.err.println("\n*** SKIPPING Python-consumer test: " + TestPython.PATH
                    + " with numpy is not installed" + " (./stoke test installs python3-numpy) ***\n");
        }
        assumeTrue(ok, TestPython.PATH + " with numpy is missing: Python consumer tests skipped");
    }

    private static boolean runs(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /** A child process whose output lines are collected as they come. */
    static final class Child implements AutoCloseable {
        final Process process;
        final List<String> lines = Collections.synchronizedList(new ArrayList<>());
        Path ring; // the ring a producer serves, for its test to read and remove
        private final Thread reader;

        Child(List<String> command) throws IOException {
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            pb.environment()
                    .put("PYTHONPATH", repoRoot().resolve("clients/python").toString());
            pb.environment().put("PYTHONUNBUFFERED", "1");
            process = pb.start();
            reader = Thread.ofPlatform().daemon(true).start(() -> {
                try (BufferedReader r =
                        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        lines.add(line);
                    }
                } catch (IOException e) {
                    // process gone
                }
            });
        }

        /** Waits until a line matches; returns it. */
        String await(Predicate<String> match, long millis) throws InterruptedException {
            long deadline = System.nanoTime() + millis * 1_000_000L;
            while (System.nanoTime() < deadline) {
                synchronized (lines) {
                    for (String l : lines) {
                        if (match.test(l)) {
                            return l;
                        }
                    }
                }
                Thread.sleep(5);
            }
            throw new AssertionError("no matching line within " + millis + " ms; output:\n" + output());
        }

        int exit(long millis) throws InterruptedException {
            if (!process.waitFor(millis, TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("process did not exit within " + millis + " ms; output:\n" + output());
            }
            reader.join(5000);
            return process.exitValue();
        }

        void kill9() throws InterruptedException {
            process.destroyForcibly(); // SIGKILL on Linux
            process.waitFor();
        }

        String output() {
            synchronized (lines) {
                return String.join("\n", lines);
            }
        }

        List<String> snapshot() {
            synchronized (lines) {
                return new ArrayList<>(lines);
            }
        }

        @Override
        public void close() {
            if (process.isAlive()) {
                try {
                    kill9();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** One S line. */
    record Sample(long sequence, long index, int label, int status, String crc) {
        static Sample parse(String line) {
            String[] f = line.split(" ");
            return new Sample(
                    Long.parseLong(f[1]), Long.parseLong(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[4]), f[5]);
        }
    }

    static List<Sample> samples(List<String> lines) {
        List<Sample> out = new ArrayList<>();
        for (String l : lines) {
            if (l.startsWith("S ")) {
                out.add(Sample.parse(l));
            }
        }
        return out;
    }

    static List<Long> batchSequences(List<String> lines) {
        List<Long> out = new ArrayList<>();
        for (String l : lines) {
            if (l.startsWith("B ")) {
                out.add(Long.parseLong(l.split(" ")[1]));
            }
        }
        return out;
    }
}
