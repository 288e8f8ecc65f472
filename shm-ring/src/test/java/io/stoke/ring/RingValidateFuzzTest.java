package io.stoke.ring;

import static io.stoke.ring.RingLayout.*;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.testing.LibFuzzerRun;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short libFuzzer run (clang, AddressSanitizer, UndefinedBehaviorSanitizer) over the C ring
 * header validator, stoke_ring_validate in native/stoke_ring.h: the target (native/fuzz/
 * fuzz_ring_validate.c) takes its input as a whole ring file and, when validation passes, touches
 * every slot and both queues through the geometry it returned. Seeded with real rings written by
 * {@link SlotRing} (fresh, and after enough traffic that both queues wrapped), truncated and
 * bit-flipped copies. The long run is done by hand (native/fuzz/README.md).
 */
class RingValidateFuzzTest {
    /** 20 s in the build; -Dstoke.fuzz.seconds=N for a longer run from the same seeds. */
    private static final int SECONDS = Integer.getInteger("stoke.fuzz.seconds", 20);

    @TempDir
    Path tmp;

    /** The bytes of a fresh ring of {@code geometry}. */
    private static byte[] fresh(RingGeometry geometry) {
        try (SlotRing ring = SlotRing.allocate(geometry)) {
            return ring.memory().toArray(JAVA_BYTE);
        }
    }

    /**
     * A ring after {@code cycles} batches went round (acquire, publish, poll, release: the queues'
     * records wrap past their end every 64), then one batch left on the ready queue and the stream
     * ended: what a consumer attaching late would map.
     */
    private static byte[] used(RingGeometry geometry, int cycles) {
        try (SlotRing ring = SlotRing.allocate(geometry)) {
            SlotHeader h = new SlotHeader();
            for (int i = 0; i <= cycles; i++) {
                int slot = ring.acquire(NoOpIdleStrategy.INSTANCE, () -> false);
                assertTrue(slot >= 0);
                h.wrap(ring.slot(slot))
                        .sequence(i)
                        .sampleCount(geometry.samplesPerSlot())
                        .flags(SLOT_FLAG_LAST_IN_EPOCH);
                ring.pixels(slot).fill((byte) i);
                ring.publish(slot);
                if (i < cycles) {
                    assertEquals(slot, ring.pollReady());
                    ring.release(slot);
                }
            }
            ring.ringState().producerPid(ProcessHandle.current().pid());
            ring.ringState().producerHeartbeat(System.currentTimeMillis());
            ring.ringState().published(cycles + 1);
            ring.ringState().endStream();
            return ring.memory().toArray(JAVA_BYTE);
        }
    }

    private static byte[] withLong(byte[] ring, long offset, long value) {
        byte[] copy = ring.clone();
        MemorySegment.ofArray(copy).set(JAVA_LONG_UNALIGNED, offset, value);
        return copy;
    }

    private static List<byte[]> seeds() {
        List<byte[]> valid = List.of(
                fresh(new RingGeometry(1, 1, DTYPE_UINT8, LAYOUT_HWC, 1, 1, 3)),
                fresh(new RingGeometry(2, 2, DTYPE_FLOAT32, LAYOUT_CHW, 3, 2, 2)),
                used(new RingGeometry(3, 1, DTYPE_UINT8, LAYOUT_HWC, 2, 2, 3), 70),
                used(new RingGeometry(1, 3, DTYPE_UINT8, LAYOUT_HWC, 1, 2, 3), 130));
        List<byte[]> seeds = new ArrayList<>(valid);
        // What the fuzzer found first: queue positions that are not record boundaries made
        // stoke_queue_poll (and offer) access an int32 atomic at a misaligned address. Kept as seeds
        // so that every run replays them.
        RingGeometry small = new RingGeometry(1, 1, DTYPE_UINT8, LAYOUT_HWC, 1, 1, 3);
        seeds.add(withLong(
                valid.get(0),
                small.readyQueueOffset() + small.queueCapacity() + RingBufferDescriptor.HEAD_POSITION_OFFSET,
                5));
        seeds.add(withLong(
                valid.get(0),
                small.freeQueueOffset() + small.queueCapacity() + RingBufferDescriptor.TAIL_POSITION_OFFSET,
                21));
        SplittableRandom random = new SplittableRandom(7);
        for (byte[] ring : valid) {
            for (int n : new int[] {ring.length - 1, ring.length / 2, HEADER_LENGTH, HEADER_LENGTH - 1, 128}) {
                seeds.add(Arrays.copyOf(ring, n));
            }
            for (int i = 0; i < 6; i++) {
                byte[] flipped = ring.clone();
                for (int k = 0; k < 1 + i % 3; k++) {
                    // the geometry words, then anywhere in the header page and queues
                    int at = i < 3 ? random.nextInt(128) : random.nextInt(Math.min(ring.length, 8192));
                    flipped[at] ^= (byte) (1 << random.nextInt(8));
                }
                seeds.add(flipped);
            }
        }
        return seeds;
    }

    @Test
    void aShortFuzzRunFindsNothing() throws Exception {
        LibFuzzerRun.run("the ring validator", "build_ring.sh", "fuzz_ring_validate", tmp, SECONDS, seeds(), List.of());
    }

    /** The seeds are what they claim: the valid rings pass the Java reader's checks, so C must accept them too. */
    @Test
    void theValidSeedsAreRings() {
        for (byte[] ring : seeds().subList(0, 4)) {
            assertEquals(MAGIC, MemorySegment.ofArray(ring).get(JAVA_LONG_UNALIGNED, MAGIC_OFFSET));
        }
    }
}
