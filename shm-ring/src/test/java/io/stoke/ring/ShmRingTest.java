package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ShmRingTest {
    private static final AtomicLong COUNTER = new AtomicLong();
    private static final RingGeometry G = new RingGeometry(4, 8, DTYPE_UINT8, LAYOUT_HWC, 16, 16, 3);
    private final List<Path> made = new ArrayList<>();

    static Path shmPath(String what) {
        Path dir = Files.isDirectory(Path.of("/dev/shm"))
                ? Path.of("/dev/shm")
                : Path.of(System.getProperty("java.io.tmpdir"));
        return dir.resolve(
                "stoke-test-" + what + "-" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet());
    }

    private Path track(Path p) {
        made.add(p);
        return p;
    }

    @AfterEach
    void cleanUp() throws IOException {
        for (Path p : made) {
            Files.deleteIfExists(p);
        }
    }

    @Test
    void createWritesAValidRingWithMode0600AndCloseRemovesIt() throws Exception {
        Path path = shmPath("create");
        try (ShmRing ring = ShmRing.create(path, G, null)) {
            assertTrue(Files.exists(path));
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(path)));
            assertEquals(G.totalLength(), Files.size(path));
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
                var seg = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), Arena.ofAuto());
                assertEquals(G, RingHeader.validate(seg, ch.size(), path.toString()));
                assertEquals(ProcessHandle.current().pid(), seg.get(JAVA_LONG, PRODUCER_PID_OFFSET));
            }
            // The heartbeat moves.
            long first = ring.slots().memory().get(JAVA_LONG, PRODUCER_HEARTBEAT_OFFSET);
            Thread.sleep(3L * HEARTBEAT_INTERVAL_MILLIS);
            assertTrue(ring.slots().memory().get(JAVA_LONG, PRODUCER_HEARTBEAT_OFFSET) > first);
        }
        assertFalse(Files.exists(path), "a clean close removes the file");
    }

    @Test
    void aNamedRingsPagesAreReservedWhenItIsCreated() throws Exception {
        // Reserved pages are what keeps a worker from touching one that a full tmpfs cannot back
        // (SIGBUS, which aborts the JVM): the file's allocated blocks, as stat(1) counts them.
        Path path = shmPath("reserved");
        try (ShmRing _ = ShmRing.create(path, G, null)) {
            Process stat = new ProcessBuilder("stat", "-c", "%b %B", path.toString()).start();
            String[] blocks =
                    new String(stat.getInputStream().readAllBytes()).trim().split(" ");
            assertEquals(0, stat.waitFor());
            assertTrue(
                    Long.parseLong(blocks[0]) * Long.parseLong(blocks[1]) >= G.totalLength(),
                    "allocated " + Arrays.toString(blocks) + " for " + G.totalLength() + " bytes");
        }
    }

    @Test
    void aRingThatDoesNotFitFailsBeforeAnythingIsWrittenWithTheBytesNeededAndFree() throws Exception {
        Path path = track(shmPath("too-big"));
        long free = Files.getFileStore(path.getParent()).getUsableSpace();
        // 64 slots of 256 float32 samples of 3x1024x1024 (3 GiB each): more than any test machine's /dev/shm.
        int slots = (int) Math.min(1 << 16, Math.max(64, 2 * free / (3L << 30) + 1));
        RingGeometry huge = new RingGeometry(slots, 256, DTYPE_FLOAT32, LAYOUT_CHW, 3, 1024, 1024);
        RingSpaceException e = assertThrows(RingSpaceException.class, () -> ShmRing.create(path, huge, null));
        assertEquals(huge.totalLength(), e.needed());
        assertTrue(e.free() <= free + (64L << 20) && e.free() >= 0, e.free() + " free, " + free + " before");
        assertTrue(
                e.getMessage().contains(huge.totalLength() + " bytes")
                        && e.getMessage().contains(" free"),
                e.getMessage());
        assertFalse(Files.exists(path));
        try (var left = Files.list(path.getParent())) {
            assertEquals(
                    List.of(),
                    left.filter(p -> p.getFileName().toString().startsWith(path.getFileName() + ".tmp"))
                            .toList());
        }
    }

    @Test
    void aRingInAnInheritedDescriptorIsLaidOutInPlaceAndLeftToItsOwner() throws Exception {
        // stoke.DataLoader hands its producer an anonymous file as a descriptor; here the JVM's own
        // descriptor of an empty file stands for it, found by where /proc/self/fd points.
        Path file = track(shmPath("descriptor"));
        try (FileChannel owner = FileChannel.open(
                file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            Path descriptor = null;
            try (var fds = Files.list(Path.of("/proc/self/fd"))) {
                for (Path fd : fds.toList()) {
                    try {
                        if (Files.readSymbolicLink(fd).equals(file)) {
                            descriptor = fd;
                        }
                    } catch (IOException gone) {
                        // the listing's own descriptor, closed since
                    }
                }
            }
            assertTrue(descriptor != null && InheritedDescriptor.names(descriptor), String.valueOf(descriptor));
            try (ShmRing ring = ShmRing.create(descriptor, G, null)) {
                assertEquals(G.totalLength(), owner.size());
                try (ShmRing consumer = ShmRing.attach(descriptor, Duration.ofSeconds(1))) {
                    assertEquals(G, consumer.geometry());
                    assertEquals(ProcessHandle.current().pid(), consumer.consumerPid());
                }
                assertEquals(G, ring.geometry());
            }
            assertTrue(Files.exists(file), "closing leaves an inherited file to the descriptors' owners");
            // A descriptor that already holds something is not a fresh ring's place.
            Path again = descriptor;
            assertThrows(IllegalArgumentException.class, () -> ShmRing.create(again, G, null));
        }
        assertFalse(InheritedDescriptor.names(Path.of("/dev/shm/fd/3")));
        assertTrue(InheritedDescriptor.names(Path.of("/dev/fd/12")));
    }

    @Test
    void aLeftoverFileFromADeadProducerIsReplaced() throws Exception {
        Path path = track(shmPath("stale"));
        Files.write(path, new byte[100]); // garbage: e.g. a crash during an older format
        try (ShmRing _ = ShmRing.create(path, G, null)) {
            assertEquals(G.totalLength(), Files.size(path));
        }
    }

    /**
     * A producer killed between creating its file and renaming it into place leaves {@code
     * PATH.tmp-PID}, up to the ring's size in {@code /dev/shm}'s memory; the next producer of that
     * path removes it once its process is gone, and leaves one of a live process (a producer
     * creating it now) and any other name alone.
     */
    @Test
    void anUnfinishedRingOfAProducerThatIsGoneIsRemovedAndOneOfALiveProcessKept() throws Exception {
        Path path = track(shmPath("unfinished"));
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        Process live = new ProcessBuilder("sleep", "60").start();
        try {
            Path dead = track(path.resolveSibling(path.getFileName() + ".tmp-" + gone.pid()));
            Path alive = track(path.resolveSibling(path.getFileName() + ".tmp-" + live.pid()));
            Path other = track(path.resolveSibling(path.getFileName() + ".tmp-x" + gone.pid()));
            for (Path p : List.of(dead, alive, other)) {
                Files.write(p, new byte[4096]);
            }
            List<String> log = new ArrayList<>();
            try (ShmRing _ = ShmRing.create(path, G, log::add)) {
                assertFalse(Files.exists(dead), "the unfinished ring of a producer that is gone is left");
                assertTrue(Files.exists(alive), "a live process's file was removed");
                assertTrue(Files.exists(other));
                assertEquals(
                        List.of("removed " + dead.toAbsolutePath() + ", a ring left unfinished by producer pid "
                                + gone.pid() + ", which is gone"),
                        log);
            }
        } finally {
            live.destroyForcibly().waitFor();
        }
    }

    @Test
    void consumerAttachesInTheSameProcessAndSeesPublishedSlots() {
        Path path = shmPath("attach");
        try (ShmRing producer = ShmRing.create(path, G, null)) {
            int slot = producer.slots().acquire(new NoOpIdleStrategy(), () -> true);
            producer.slots().slot(slot).set(JAVA_LONG, SLOT_SEQUENCE_OFFSET, 41);
            producer.slots().publish(slot);
            try (ShmRing consumer = ShmRing.attach(path, Duration.ofSeconds(1))) {
                assertEquals(G, consumer.geometry());
                assertEquals(ProcessHandle.current().pid(), producer.consumerPid());
                int got = consumer.slots().pollReady();
                assertEquals(slot, got);
                assertEquals(41, consumer.slots().slot(got).get(JAVA_LONG, SLOT_SEQUENCE_OFFSET));
                assertEquals(SLOT_STATE_HELD, producer.slots().state(got));
                // The seat is taken: a second consumer in a live process is refused.
                IllegalStateException busy =
                        assertThrows(IllegalStateException.class, () -> ShmRing.attach(path, Duration.ofMillis(100)));
                assertTrue(busy.getMessage().contains("already has a consumer"), busy.getMessage());
            }
            // Closing the consumer detached it (-pid); the monitor reclaims and frees the seat,
            // re-delivering the slot it never released.
            long deadline = System.nanoTime() + 2_000_000_000L;
            while (producer.consumerPid() != 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(0, producer.consumerPid());
            assertEquals(1, producer.redelivered());
            try (ShmRing again = ShmRing.attach(path, Duration.ofSeconds(1))) {
                assertEquals(slot, again.slots().pollReady());
            }
        }
    }

    @Test
    void reclaimRedeliversHeldAndReadySlotsInBatchOrderAndKeepsReleasedOnesFree() {
        RingGeometry g = new RingGeometry(6, 1, DTYPE_UINT8, LAYOUT_HWC, 1, 1, 3);
        try (SlotRing ring = SlotRing.allocate(g)) {
            int[] slots = new int[5];
            for (int i = 0; i < 5; i++) {
                slots[i] = ring.acquire(new NoOpIdleStrategy(), () -> true);
                ring.slot(slots[i]).set(JAVA_LONG, SLOT_SEQUENCE_OFFSET, 100 + i);
                ring.publish(slots[i]);
            }
            int a = ring.pollReady(); // seq 100: released
            int b = ring.pollReady(); // seq 101: held
            int c = ring.pollReady(); // seq 102: held
            ring.release(a);
            assertEquals(2, ring.reclaimFromConsumer());
            List<Long> order = new ArrayList<>();
            for (int s; (s = ring.pollReady()) >= 0; ) {
                order.add(ring.slot(s).get(JAVA_LONG, SLOT_SEQUENCE_OFFSET));
            }
            assertEquals(List.of(101L, 102L, 103L, 104L), order);
            assertEquals(2, ring.memory().get(JAVA_LONG, REDELIVERED_OFFSET));
            // Two slots are free (the released one and the never-used one), no more.
            assertTrue(ring.acquire(new NoOpIdleStrategy(), () -> true) >= 0);
            assertTrue(ring.acquire(new NoOpIdleStrategy(), () -> true) >= 0);
            int[] tries = {0};
            assertEquals(-1, ring.acquire(new NoOpIdleStrategy(), () -> tries[0]++ < 100));
            assertTrue(b != c);
        }
    }

    // ---- hostile and broken files ----

    /** A valid ring's bytes, written into a plain file so that tests can corrupt them. */
    private Path copyOfValidRing(String what) throws IOException {
        Path src = shmPath("src");
        Path copy = track(shmPath(what));
        try (ShmRing _ = ShmRing.create(src, G, null)) {
            Files.copy(src, copy);
        }
        return copy;
    }

    private static void poke(Path file, long offset, long value, int bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
            if (bytes == 8) {
                b.putLong(value);
            } else {
                b.putInt((int) value);
            }
            b.flip();
            ch.write(b, offset);
        }
    }

    record Corruption(String field, int offset, int bytes, long value, String expectInMessage) {}

    static List<Corruption> corruptions() {
        return List.of(
                new Corruption("magic", MAGIC_OFFSET, 8, 0x1234, "magic"),
                new Corruption("version", VERSION_OFFSET, 4, 99, "version"),
                new Corruption("header length", HEADER_LENGTH_OFFSET, 4, 64, "header length"),
                new Corruption("total length", TOTAL_LENGTH_OFFSET, 8, 1L << 40, "total length"),
                new Corruption("total length small", TOTAL_LENGTH_OFFSET, 8, G.totalLength() - 4096, "total length"),
                new Corruption("slot count", SLOT_COUNT_OFFSET, 4, 5, "total length"),
                new Corruption("slot count huge", SLOT_COUNT_OFFSET, 4, Integer.MAX_VALUE, "slotCount"),
                new Corruption("slot count negative", SLOT_COUNT_OFFSET, 4, -1, "slotCount"),
                new Corruption("samples per slot", SAMPLES_PER_SLOT_OFFSET, 4, 9, "offset"),
                new Corruption("samples per slot zero", SAMPLES_PER_SLOT_OFFSET, 4, 0, "samplesPerSlot"),
                new Corruption("slot stride", SLOT_STRIDE_OFFSET, 8, 4096, "slot stride"),
                new Corruption("sample bytes", SAMPLE_BYTES_OFFSET, 8, 1, "sample bytes"),
                new Corruption("dtype", DTYPE_OFFSET, 4, 7, "dtype"),
                new Corruption("dtype float", DTYPE_OFFSET, 4, DTYPE_FLOAT32, "sample bytes"),
                new Corruption("layout", DIM_LAYOUT_OFFSET, 4, 5, "layout"),
                new Corruption("shape 0", SHAPE_OFFSET, 4, 0, "shape"),
                new Corruption("shape 1", SHAPE_OFFSET + 4, 4, 1 << 30, "shape"),
                new Corruption("shape 2", SHAPE_OFFSET + 8, 4, 4, "sample bytes"),
                new Corruption("label type", LABEL_TYPE_OFFSET, 4, 2, "label type"),
                new Corruption("ready queue offset", READY_QUEUE_OFFSET_OFFSET, 8, 0, "ready queue offset"),
                new Corruption("free queue offset", FREE_QUEUE_OFFSET_OFFSET, 8, 1L << 50, "free queue offset"),
                new Corruption("queue length", QUEUE_LENGTH_OFFSET, 4, 1 << 30, "queue length"),
                new Corruption("slots offset", SLOTS_OFFSET_OFFSET, 8, G.slotsOffset() + PAGE, "slots offset"),
                new Corruption("labels offset", SLOT_LABELS_OFFSET_OFFSET, 4, 0, "labels offset"),
                new Corruption("indices offset", SLOT_INDICES_OFFSET_OFFSET, 4, -64, "indices offset"),
                new Corruption("status offset", SLOT_STATUS_OFFSET_OFFSET, 4, 1 << 30, "status offset"),
                new Corruption("pixels offset", SLOT_PIXELS_OFFSET_OFFSET, 4, 64, "pixels offset"));
    }

    @Test
    void everyCorruptedHeaderFieldIsRejectedWithAMessage() throws Exception {
        for (Corruption c : corruptions()) {
            Path file = copyOfValidRing("corrupt");
            poke(file, c.offset(), c.value(), c.bytes());
            RingFormatException e = assertThrows(
                    RingFormatException.class, () -> ShmRing.attach(file, Duration.ofMillis(100)), c.field());
            assertTrue(e.getMessage().contains(c.expectInMessage()), c.field() + ": " + e.getMessage());
            assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
        }
    }

    @Test
    void truncatedEmptyAndForeignFilesAreRejected() throws Exception {
        Path empty = track(shmPath("empty"));
        Files.write(empty, new byte[0]);
        assertTrue(assertThrows(RingFormatException.class, () -> ShmRing.attach(empty, Duration.ZERO))
                .getMessage()
                .contains("too short"));

        Path foreign = track(shmPath("foreign"));
        byte[] text = new byte[8192];
        Arrays.fill(text, (byte) 'x');
        Files.write(foreign, text);
        assertTrue(assertThrows(RingFormatException.class, () -> ShmRing.attach(foreign, Duration.ZERO))
                .getMessage()
                .contains("magic"));

        Path truncated = copyOfValidRing("truncated");
        try (FileChannel ch = FileChannel.open(truncated, StandardOpenOption.WRITE)) {
            ch.truncate(G.totalLength() - 1);
        }
        assertTrue(assertThrows(RingFormatException.class, () -> ShmRing.attach(truncated, Duration.ZERO))
                .getMessage()
                .contains("total length"));

        Path missing = shmPath("missing");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ShmRing.attach(missing, Duration.ZERO))
                .getMessage()
                .contains("no ring at"));
    }

    @Test
    void aRingWhoseProducerIsGoneIsRefused() throws Exception {
        Path file = copyOfValidRing("orphan"); // its producer (this process) closed it: the copy is valid but...
        poke(file, PRODUCER_PID_OFFSET, Integer.MAX_VALUE - 7, 8); // ...a pid that does not exist
        ProducerGoneException e = assertThrows(ProducerGoneException.class, () -> ShmRing.attach(file, Duration.ZERO));
        assertTrue(e.getMessage().contains("gone"), e.getMessage());
        poke(file, PRODUCER_PID_OFFSET, ProcessHandle.current().pid(), 8);
        poke(file, STATE_OFFSET, STATE_PRODUCER_FAILED, 4);
        assertTrue(assertThrows(ProducerGoneException.class, () -> ShmRing.attach(file, Duration.ZERO))
                .getMessage()
                .contains("failure"));
        poke(file, STATE_OFFSET, STATE_RUNNING, 4);
        poke(file, PRODUCER_HEARTBEAT_OFFSET, System.currentTimeMillis() - 60_000, 8);
        assertTrue(assertThrows(ProducerGoneException.class, () -> ShmRing.attach(file, Duration.ZERO))
                .getMessage()
                .contains("heartbeat"));
    }

    @Test
    void aHostileQueueEntryIsRefusedNotFollowed() throws Exception {
        try (SlotRing ring = SlotRing.allocate(G)) {
            // Write a record with slot number 1000 into the ready queue as another process could.
            var q = ring.memory().asSlice(G.readyQueueOffset(), G.queueLength());
            q.set(JAVA_INT, 8, 1000);
            q.set(JAVA_INT, 4, MSG_SLOT);
            q.set(JAVA_INT, 0, 12);
            q.set(JAVA_LONG, G.queueCapacity() + QUEUE_TAIL_POSITION_OFFSET, 16);
            IllegalStateException e = assertThrows(IllegalStateException.class, ring::pollReady);
            assertTrue(e.getMessage().contains("1000"), e.getMessage());
        }
    }
}
