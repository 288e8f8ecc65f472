package io.stoke.cli;

import static io.stoke.cli.ShmTestSupport.Kind;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.cli.ShmTestSupport.Child;
import io.stoke.cli.ShmTestSupport.Sample;
import io.stoke.loader.testing.TestPython;
import io.stoke.ring.RingLayout;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A Java producer process ({@code stoke serve}) and consumer processes in Java, Python and C:
 * checksums, exactly-once delivery, consumer and producer crashes, hostile headers.
 */
class ShmCrossProcessTest {
    private static final int CLASSES = 2;
    private static final int PER_CLASS = 11; // 22 images
    private static final int BATCH = 4; // 6 batches per epoch, the last of 2
    private static final int BATCHES_PER_EPOCH = 6;

    @TempDir
    static Path data;

    private static Map<Long, String> expected;
    private final List<Child> children = new ArrayList<>();
    private final List<Path> rings = new ArrayList<>();

    @BeforeAll
    static void dataset() throws Exception {
        ShmTestSupport.makeDataset(data, CLASSES, PER_CLASS);
        expected = ShmTestSupport.expected(data);
        assertEquals(CLASSES * PER_CLASS, expected.size());
    }

    @AfterEach
    void cleanUp() throws Exception {
        for (Child c : children) {
            c.close();
        }
        for (Path p : rings) {
            Files.deleteIfExists(p);
        }
    }

    private Child start(List<String> command) throws Exception {
        Child c = new Child(command);
        children.add(c);
        return c;
    }

    private Path ring(String what) {
        Path p = ShmTestSupport.shmPath(what);
        rings.add(p);
        return p;
    }

    /** Starts {@code stoke serve} and waits until its ring is ready. */
    private Child producer(Path ring, long epochs) throws Exception {
        Child p = start(ShmTestSupport.javaCommand(
                Main.class.getName(),
                "serve",
                data.toString(),
                "--ring",
                ring.toString(),
                "--batch-size",
                String.valueOf(BATCH),
                "--workers",
                "2",
                "--epochs",
                String.valueOf(epochs),
                "--slots",
                "3",
                "--shuffle",
                "--seed",
                "5",
                "--resize",
                String.valueOf(ShmTestSupport.RESIZE),
                "--crop",
                String.valueOf(ShmTestSupport.CROP),
                "--status-interval",
                "200"));
        p.await(l -> l.contains("ready:"), 30_000);
        assertTrue(Files.exists(ring));
        return p;
    }

    /** Every sample's label and checksum equal the in-process loader's. */
    private static void assertSamplesMatch(List<Sample> samples) {
        for (Sample s : samples) {
            assertEquals(0, s.status(), "status of " + s);
            assertEquals(
                    expected.get(s.index()),
                    s.label() + " " + s.crc(),
                    "sample " + s.index() + " in batch " + s.sequence());
        }
    }

    /** Every dataset index exactly once in each epoch's batches. */
    private static void assertEachEpochExactlyOnce(Map<Long, List<Long>> indicesBySequence, int epochs) {
        for (int e = 0; e < epochs; e++) {
            List<Long> seen = new ArrayList<>();
            for (long seq = (long) e * BATCHES_PER_EPOCH; seq < (long) (e + 1) * BATCHES_PER_EPOCH; seq++) {
                List<Long> batch = indicesBySequence.get(seq);
                assertTrue(batch != null, "batch " + seq + " never delivered");
                seen.addAll(batch);
            }
            assertEquals(CLASSES * PER_CLASS, seen.size(), "samples in epoch " + e);
            assertEquals(CLASSES * PER_CLASS, seen.stream().distinct().count(), "distinct samples in epoch " + e);
        }
    }

    private static Map<Long, List<Long>> bySequence(List<Sample> samples) {
        Map<Long, List<Long>> map = new HashMap<>();
        for (Sample s : samples) {
            map.computeIfAbsent(s.sequence(), k -> new ArrayList<>()).add(s.index());
        }
        return map;
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void consumerInAnotherProcessReadsEverySampleOncePerEpochWithEqualChecksums(Kind kind) throws Exception {
        ShmTestSupport.consumerCommand(kind, Path.of("unused")); // skips early when the tool is missing
        Path ring = ring("all-" + kind);
        Child producer = producer(ring, 2);
        Child consumer = start(ShmTestSupport.consumerCommand(kind, ring));
        assertEquals(0, consumer.exit(60_000), consumer.output());
        List<String> out = consumer.snapshot();
        assertEquals("END", out.getLast(), consumer.output());
        List<Long> sequences = ShmTestSupport.batchSequences(out);
        assertEquals(
                LongStream.range(0, 2 * BATCHES_PER_EPOCH).boxed().toList(), sequences, "every batch once, in order");
        List<Sample> samples = ShmTestSupport.samples(out);
        assertEquals(2 * CLASSES * PER_CLASS, samples.size());
        assertSamplesMatch(samples);
        assertEachEpochExactlyOnce(bySequence(samples), 2);
        // The producer sees every batch released, exits cleanly and removes the file.
        assertEquals(0, producer.exit(30_000), producer.output());
        assertTrue(producer.output().contains("the consumer has read every batch"), producer.output());
        assertTrue(producer.output().contains("batches produced"), "status line: " + producer.output());
        assertFalse(Files.exists(ring), "clean shutdown removes the ring file");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void consumerKilledMidEpochLosesNothingAndOnlyTheHeldBatchIsDeliveredAgain(Kind kind) throws Exception {
        ShmTestSupport.consumerCommand(kind, Path.of("unused")); // skips early when the tool is missing
        Path ring = ring("kill-consumer-" + kind);
        Child producer = producer(ring, 2);
        // First consumer: releases batches 0..2, takes batch 3 and never releases it; then kill -9.
        Child first = start(ShmTestSupport.consumerCommand(kind, ring, "--hold-after", "3"));
        String holding = first.await(l -> l.startsWith("HOLDING "), 30_000);
        long held = Long.parseLong(holding.substring("HOLDING ".length()));
        assertEquals(3, held);
        first.kill9();
        List<String> firstOut = first.snapshot();

        Child second = start(ShmTestSupport.consumerCommand(kind, ring));
        assertEquals(0, second.exit(60_000), second.output());
        List<String> secondOut = second.snapshot();
        assertEquals("END", secondOut.getLast());

        List<Long> firstSeqs = ShmTestSupport.batchSequences(firstOut);
        List<Long> secondSeqs = ShmTestSupport.batchSequences(secondOut);
        assertEquals(List.of(0L, 1L, 2L, 3L), firstSeqs);
        // The held batch comes first again, then the rest in order: nothing lost, nothing else twice.
        assertEquals(LongStream.range(3, 2 * BATCHES_PER_EPOCH).boxed().toList(), secondSeqs);

        List<Sample> all = new ArrayList<>(ShmTestSupport.samples(firstOut));
        List<Sample> again = ShmTestSupport.samples(secondOut);
        assertSamplesMatch(all);
        assertSamplesMatch(again);
        // The re-delivered batch holds the same samples with the same pixels.
        assertEquals(
                all.stream().filter(s -> s.sequence() == held).toList(),
                again.stream().filter(s -> s.sequence() == held).toList());
        all.removeIf(s -> s.sequence() == held);
        all.addAll(again);
        assertEachEpochExactlyOnce(bySequence(all), 2);
        assertEquals(2 * CLASSES * PER_CLASS, all.size());

        assertEquals(0, producer.exit(30_000), producer.output());
        assertTrue(producer.output().contains("1 batch(es) it held will be delivered again"), producer.output());
        assertFalse(Files.exists(ring));
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void producerKilledGivesTheConsumerAnErrorWithinBoundedTime(Kind kind) throws Exception {
        ShmTestSupport.consumerCommand(kind, Path.of("unused"));
        Path ring = ring("kill-producer-" + kind);
        Child producer = producer(ring, 0); // endless
        Child consumer = start(ShmTestSupport.consumerCommand(kind, ring));
        consumer.await(l -> l.startsWith("B 3 "), 30_000);
        long killed = System.nanoTime();
        producer.kill9();
        String error = consumer.await(l -> l.startsWith("ERROR "), 10_000);
        long millis = (System.nanoTime() - killed) / 1_000_000;
        assertEquals(3, consumer.exit(10_000), consumer.output());
        assertTrue(error.contains("producer"), error);
        assertTrue(millis < 2_000, "the consumer noticed after " + millis + " ms");
        System.out.println(kind + " consumer reported the dead producer " + millis + " ms after kill -9: " + error);

        // The crash left the file; it does not block the next start.
        assertTrue(Files.exists(ring));
        Child next = producer(ring, 1);
        assertTrue(next.output().contains("replacing"), next.output());
    }

    @Test
    void sigtermStopsTheProducerCleanlyAndRemovesTheFile() throws Exception {
        Path ring = ring("sigterm");
        Child producer = producer(ring, 0);
        Child consumer = start(ShmTestSupport.consumerCommand(Kind.JAVA, ring));
        consumer.await(l -> l.startsWith("B 2 "), 30_000);
        producer.process.destroy(); // SIGTERM
        producer.exit(20_000);
        assertFalse(Files.exists(ring), "SIGTERM removes the ring file");
        // The consumer is told, within bounded time, that no more batches come.
        String error = consumer.await(l -> l.startsWith("ERROR "), 10_000);
        assertTrue(error.contains("producer"), error);
    }

    @Test
    void aSecondProducerOnALiveRingIsRefused() throws Exception {
        Path ring = ring("busy");
        Child producer = producer(ring, 1);
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream old = System.err;
        int exit;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            exit = Main.execute(
                    "serve",
                    data.toString(),
                    "--ring",
                    ring.toString(),
                    "--batch-size",
                    "4",
                    "--resize",
                    "32",
                    "--crop",
                    "32");
        } finally {
            System.setErr(old);
        }
        assertEquals(Main.EXIT_FAILED, exit);
        assertTrue(
                err.toString(StandardCharsets.UTF_8).contains("live producer (pid " + producer.process.pid() + ")"),
                err.toString(StandardCharsets.UTF_8));
        assertTrue(producer.process.isAlive());
        assertTrue(Files.exists(ring), "the refused producer left the live ring alone");
    }

    /** Each header field corrupted in turn: the C and Python consumers refuse with a message. */
    @ParameterizedTest
    @EnumSource(
            value = Kind.class,
            names = {"PYTHON", "C"})
    void corruptedHeadersAreRejectedByNonJavaConsumers(Kind kind) throws Exception {
        ShmTestSupport.consumerCommand(kind, Path.of("unused"));
        Path live = ring("valid");
        Child producer = producer(live, 1);
        Path copy = ring("corrupt-" + kind);
        record Poke(String name, int offset, int bytes, long value, String message) {}
        List<Poke> fields = List.of(
                new Poke("magic", RingLayout.MAGIC_OFFSET, 8, 42, "magic"),
                new Poke("version", RingLayout.VERSION_OFFSET, 4, 2, "version"),
                new Poke("header length", RingLayout.HEADER_LENGTH_OFFSET, 4, 8, "header length"),
                new Poke("total length", RingLayout.TOTAL_LENGTH_OFFSET, 8, 1L << 45, "total length"),
                new Poke("slot count", RingLayout.SLOT_COUNT_OFFSET, 4, 0, "slot"),
                new Poke("slot count large", RingLayout.SLOT_COUNT_OFFSET, 4, 40, "offset"),
                new Poke("samples", RingLayout.SAMPLES_PER_SLOT_OFFSET, 4, -3, "samples"),
                new Poke("slot stride", RingLayout.SLOT_STRIDE_OFFSET, 8, 64, "slot stride"),
                new Poke("sample bytes", RingLayout.SAMPLE_BYTES_OFFSET, 8, 3, "sample bytes"),
                new Poke("dtype", RingLayout.DTYPE_OFFSET, 4, 9, "dtype"),
                new Poke("layout", RingLayout.DIM_LAYOUT_OFFSET, 4, 3, "layout"),
                new Poke("shape", RingLayout.SHAPE_OFFSET, 4, -1, "shape"),
                new Poke("shape overflow", RingLayout.SHAPE_OFFSET + 4, 4, Integer.MAX_VALUE, "e"),
                new Poke("label type", RingLayout.LABEL_TYPE_OFFSET, 4, 0, "label type"),
                new Poke("ready queue", RingLayout.READY_QUEUE_OFFSET_OFFSET, 8, -4096, "ready queue offset"),
                new Poke("free queue", RingLayout.FREE_QUEUE_OFFSET_OFFSET, 8, 0, "free queue offset"),
                new Poke("queue length", RingLayout.QUEUE_LENGTH_OFFSET, 4, 16, "queue length"),
                new Poke("slots offset", RingLayout.SLOTS_OFFSET_OFFSET, 8, 1L << 40, "slots offset"),
                new Poke("labels", RingLayout.SLOT_LABELS_OFFSET_OFFSET, 4, 8, "labels offset"),
                new Poke("indices", RingLayout.SLOT_INDICES_OFFSET_OFFSET, 4, 0, "indices offset"),
                new Poke("status", RingLayout.SLOT_STATUS_OFFSET_OFFSET, 4, 1 << 30, "status offset"),
                new Poke("pixels", RingLayout.SLOT_PIXELS_OFFSET_OFFSET, 4, 4096 * 1000, "pixels offset"));
        for (Poke f : fields) {
            Files.copy(live, copy, StandardCopyOption.REPLACE_EXISTING);
            try (FileChannel ch = FileChannel.open(copy, StandardOpenOption.WRITE)) {
                ByteBuffer b = ByteBuffer.allocate(f.bytes()).order(ByteOrder.LITTLE_ENDIAN);
                if (f.bytes() == 8) {
                    b.putLong(f.value());
                } else {
                    b.putInt((int) f.value());
                }
                ch.write(b.flip(), f.offset());
            }
            Child c = start(ShmTestSupport.consumerCommand(kind, copy));
            assertEquals(3, c.exit(20_000), f.name() + ": " + c.output());
            String out = c.output();
            assertTrue(out.startsWith("ERROR ") && out.contains(f.message()), f.name() + ": " + out);
        }
        // Truncated: the header promises more than the file holds.
        Files.copy(live, copy, StandardCopyOption.REPLACE_EXISTING);
        try (FileChannel ch = FileChannel.open(copy, StandardOpenOption.WRITE)) {
            ch.truncate(ch.size() - 4096);
        }
        Child t = start(ShmTestSupport.consumerCommand(kind, copy));
        assertEquals(3, t.exit(20_000), t.output());
        assertTrue(t.output().contains("total length"), t.output());
        // Too short for a header.
        Files.write(copy, new byte[100]);
        Child s = start(ShmTestSupport.consumerCommand(kind, copy));
        assertEquals(3, s.exit(20_000), s.output());
        assertTrue(s.output().contains("too short"), s.output());
        assertTrue(producer.process.isAlive());
    }

    /**
     * A named ring that another user could have planted (given to {@code nobody}, which needs root
     * as the tests and CI run; writable by others; a link to it) is refused by the C and Python
     * consumers in one sentence naming its path, owner and mode, and the same file owned right is
     * read whole. RingOwnerTest checks the Java ends.
     */
    @ParameterizedTest
    @EnumSource(
            value = Kind.class,
            names = {"PYTHON", "C"})
    void aRingOfAnotherUserWritableByOthersOrBehindALinkIsRefusedByNonJavaConsumers(Kind kind) throws Exception {
        ShmTestSupport.consumerCommand(kind, Path.of("unused"));
        Path live = ring("owner-" + kind);
        producer(live, 1);
        if ("root".equals(System.getProperty("user.name"))) {
            UserPrincipal me = Files.getOwner(live);
            Files.setOwner(
                    live, live.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody"));
            assertRefused(kind, live, "owned by uid 65534 with mode 0600");
            Files.setOwner(live, me);
        }
        Files.setPosixFilePermissions(live, PosixFilePermissions.fromString("rw-rw-rw-"));
        assertRefused(kind, live, "with mode 0666");
        Files.setPosixFilePermissions(live, PosixFilePermissions.fromString("rw-------"));
        Path link = ring("owner-link-" + kind);
        Files.createSymbolicLink(link, live);
        assertRefused(kind, link, "symbolic link (to " + live + ")");
        Child c = start(ShmTestSupport.consumerCommand(kind, live));
        assertEquals(0, c.exit(60_000), c.output());
        assertTrue(c.output().contains("END"), c.output());
    }

    private void assertRefused(Kind kind, Path ring, String says) throws Exception {
        Child c = start(ShmTestSupport.consumerCommand(kind, ring));
        assertEquals(3, c.exit(20_000), c.output());
        String out = c.output();
        assertTrue(out.startsWith("ERROR refusing the ring " + ring + ": ") && out.contains(says), out);
    }

    /** Python batches view the shared slot (no copy), and so does torch.from_numpy when torch is there. */
    @Test
    void pythonBatchesAreZeroCopyViewsAndReleaseExplicitly() throws Exception {
        ShmTestSupport.requirePython();
        Path ring = ring("zero-copy");
        Child producer = producer(ring, 1);
        String script = String.join(
                "\n",
                "import sys, numpy as np",
                "from stoke import Ring",
                "r = Ring(sys.argv[1], release_on_next=False)",
                "b = r.next()",
                "base = np.frombuffer(r._mm, dtype=np.uint8).ctypes.data",
                "px = b.pixels.ctypes.data",
                "assert base <= px and px + b.pixels.nbytes <= base + len(r._mm), 'pixels outside the mapping'",
                "assert not b.pixels.flags.owndata and b.pixels.base is not None",
                "assert b.pixels.shape == (4, 32, 32, 3) and b.pixels.dtype == np.uint8, b.pixels.shape",
                "try:",
                "    import torch",
                "    t = torch.from_numpy(b.pixels)",
                "    assert t.data_ptr() == px, 'torch copied'",
                "    print('TORCH_ZERO_COPY')",
                "except ImportError:",
                "    print('NO_TORCH')",
                "with b:",
                "    pass",
                "assert b._released",
                "b.release()  # idempotent",
                "n = 1",
                "while True:",
                "    x = r.next()",
                "    if x is None: break",
                "    n += 1",
                "    x.release()",
                "print('BATCHES', n)",
                "r.close()",
                "print('OK')");
        Child py = start(List.of(TestPython.PATH, "-c", script, ring.toString()));
        assertEquals(0, py.exit(60_000), py.output());
        assertTrue(py.output().contains("BATCHES " + BATCHES_PER_EPOCH), py.output());
        assertTrue(py.output().contains("OK"), py.output());
        if (py.output().contains("NO_TORCH")) {
            System.err.println(
                    "*** torch is not installed for " + TestPython.PATH + ": zero-copy checked for numpy only ***");
        } else {
            assertTrue(py.output().contains("TORCH_ZERO_COPY"), py.output());
        }
        assertEquals(0, producer.exit(30_000), producer.output());
    }

    /** The Python client's copy of the layout equals RingLayout, name by name. */
    @Test
    void pythonConstantsEqualRingLayout() throws Exception {
        ShmTestSupport.requirePython();
        Child py = start(List.of(
                TestPython.PATH,
                "-c",
                "import stoke.ring as s\nfor k in sorted(dir(s)):\n  v = getattr(s, k)\n"
                        + "  if k.isupper() and isinstance(v, int): print(k, v)"));
        assertEquals(0, py.exit(20_000), py.output());
        Map<String, Long> python = new HashMap<>();
        for (String line : py.snapshot()) {
            String[] kv = line.split(" ");
            python.put(kv[0], Long.parseLong(kv[1]));
        }
        int compared = 0;
        for (Field f : RingLayout.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && (f.getType() == int.class || f.getType() == long.class)) {
                String name = f.getName();
                assertTrue(python.containsKey(name), name + " missing in stoke");
                assertEquals(
                        ((Number) f.get(null)).longValue(), python.get(name).longValue(), name);
                compared++;
            }
        }
        assertTrue(compared > 60, "compared " + compared);
    }
}
