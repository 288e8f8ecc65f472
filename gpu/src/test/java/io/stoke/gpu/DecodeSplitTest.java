package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The balance between the GPU and the CPU threads, on rates given to it. */
class DecodeSplitTest {
    /** {@code n} candidate files of {@code units} each. */
    static long[] files(int n, long units) {
        long[] u = new long[n];
        Arrays.fill(u, units);
        return u;
    }

    /** A split measured: the GPU side {@code gpuNanos} an image, a CPU thread {@code threadNanosPerUnit}. */
    static DecodeSplit measured(long gpuNanos, long threadNanosPerUnit) {
        DecodeSplit s = new DecodeSplit();
        s.gpuMeasured(gpuNanos * 100, 100);
        s.cpuMeasured(1_000_000, 10, threadNanosPerUnit * 1_000, 1_000);
        return s;
    }

    @Test
    void untilBothSidesAreMeasuredTheCpuTakesAnEighth() {
        DecodeSplit s = new DecodeSplit();
        assertEquals(32, s.share(files(256, 1000), 256, 0, 0, 4));
        s.gpuMeasured(1_000_000, 100);
        assertEquals(32, s.share(files(256, 1000), 256, 0, 0, 4), "the CPU is not measured yet");
        assertEquals(0, s.share(files(0, 1000), 0, 0, 0, 4));
        assertEquals(1, s.share(files(7, 1000), 7, 0, 0, 4), "at least one, to measure the CPU");
        assertEquals(1, s.share(files(1, 1000), 1, 0, 0, 4), "the GPU is measured: a batch of one goes to the CPU");
        DecodeSplit fresh = new DecodeSplit();
        assertEquals(0, fresh.share(files(1, 1000), 1, 0, 0, 4), "a batch of one goes to the GPU first");
    }

    @Test
    void bothSidesFinishTogether() {
        // The GPU side 1 ms an image; a CPU thread 1 us a unit, so 1 ms a file of 1,000 units, and
        // four threads take four at once: 0.25 ms a file. 0.25 m = 100 - m: m = 80, both 20 ms.
        DecodeSplit s = measured(1_000_000, 1_000);
        assertEquals(80, s.share(files(100, 1_000), 100, 0, 0, 4));
        assertEquals(20_000_000, s.roundNanos(80 * 1_000, 1_000, 4), 1e-3);
        // Twice the units a file: 0.5 m = 100 - m at 66.7; 67 ends the batch at 33.5 ms, 66 at 34.
        assertEquals(67, s.share(files(100, 2_000), 100, 0, 0, 4));
    }

    @Test
    void whatMustGoToTheCpuCountsInItsRoundAndTheRoundEndsNoSoonerThanItsLargestFile() {
        DecodeSplit s = measured(1_000_000, 1_000);
        // Ten files nvJPEG leaves, 4,000 units (a progressive file's bytes, three times over): 10 ms
        // of the round already; then 10 + 0.25 m = 100 - m: m = 72.
        assertEquals(72, s.share(files(100, 1_000), 100, 40_000, 4_000, 4));
        // One file of 30,000 units left to the CPU: the round takes 30 ms whatever is added while its
        // units over the threads stay below that; with 70 files on the CPU the GPU's 30 end at 30 ms
        // too, and a 71st to the CPU would end the batch no sooner.
        assertEquals(70, s.share(files(100, 1_000), 100, 30_000, 30_000, 4));
        assertEquals(30_000_000, s.roundNanos(30_000 + 70 * 1_000, 30_000, 4), 1e-3);
    }

    @Test
    void aRoundsTailDoesNotShrinkTheShare() {
        // Two rounds, the same work (busy 40 ms over 40,000 units), one of them ending 30 ms after
        // its threads' busy time would (one slow file last): the share is the same.
        DecodeSplit even = new DecodeSplit();
        DecodeSplit tail = new DecodeSplit();
        for (DecodeSplit s : new DecodeSplit[] {even, tail}) {
            s.gpuMeasured(100_000_000, 100);
        }
        even.cpuMeasured(10_000_000, 40, 40_000_000, 40_000);
        tail.cpuMeasured(40_000_000, 40, 40_000_000, 40_000);
        assertEquals(even.share(files(100, 1_000), 100, 0, 0, 4), tail.share(files(100, 1_000), 100, 0, 0, 4));
        assertEquals(4 * even.cpuNanosPerImage(), tail.cpuNanosPerImage(), 1e-6, "the wall per image, as shown");
    }

    @Test
    void theDecodeThreadsHostTimeBoundsTheGpuSideWhereItIsLongerThanTheEventsSpan() {
        DecodeSplit s = new DecodeSplit();
        // The events span 0.05 ms an image, the decode thread's host side 0.2 ms an image.
        s.gpuMeasured(5_000_000, 100);
        s.cpuMeasured(1_000_000, 10, 1_000_000, 1_000); // a thread 1 us a unit
        int spanOnly = s.share(files(256, 100), 256, 0, 0, 1);
        s.gpuHostMeasured(20_000_000, 100);
        assertEquals(200_000, s.gpuNanosPerImage(), 1e-6);
        // 0.1 ms a file on the CPU's one thread: 0.1 m = 0.2 (256 - m) at 170.7; 171 ends the batch at
        // 17.1 ms, 170 at 17.2.
        assertEquals(171, s.share(files(256, 100), 256, 0, 0, 1));
        assertEquals(85, spanOnly, "the events' span alone, before the host's time is measured");
    }

    @Test
    void aMuchFasterGpuStillLeavesTheCpuOneImageSoItsRateStaysKnown() {
        DecodeSplit s = measured(1_000, 1_000_000);
        assertEquals(1, s.share(files(256, 1_000), 256, 0, 0, 4));
        assertEquals(0, s.share(files(8, 1_000), 8, 0, 0, 4));
    }

    @Test
    void ratesAreSmoothedNotReplaced() {
        DecodeSplit s = new DecodeSplit();
        s.gpuMeasured(1_000_000, 1);
        s.gpuMeasured(2_000_000, 1);
        assertEquals(DecodeSplit.KEEP * 1e6 + (1 - DecodeSplit.KEEP) * 2e6, s.gpuNanosPerImage(), 1e-6);
        s.cpuMeasured(0, 5, 0, 0); // nothing measured: ignored
        assertEquals(Double.NaN, s.cpuNanosPerImage());
        assertEquals(Double.NaN, s.threadNanosPerUnit());
        s.cpuMeasured(1_000, 1, 3_000, 1_000);
        s.cpuMeasured(1_000, 1, 6_000, 1_000);
        assertEquals(DecodeSplit.KEEP * 3 + (1 - DecodeSplit.KEEP) * 6, s.threadNanosPerUnit(), 1e-9);
    }

    @Test
    void aBatchGoesWholeToTheCpuWhenItEndsBeforeTheGpuRunsOutOfBuffersBesideIt() {
        DecodeSplit s = new DecodeSplit();
        assertFalse(s.whole(100, 0, 3, 1_000, 4), "not before both sides are measured");
        // The GPU side 1 ms an image: 100 ms a batch of 100. A thread 1 us a unit, images of 1,000
        // units, four threads: 0.25 ms an image, 25 ms a batch of 100 on the CPU.
        s = measured(1_000_000, 1_000);
        assertTrue(s.whole(100, 0, 0, 1_000, 4), "25 ms against the GPU's batch now, 100 ms");
        assertTrue(s.whole(100, 300, 0, 1_000, 4), "a backlog of 300 images: 100 ms, no later than the GPU's");
        assertFalse(s.whole(100, 301, 0, 1_000, 4), "one image later");
        assertTrue(s.whole(100, 700, 1, 1_000, 4), "one GPU batch beside it: 200 ms");
        assertFalse(s.whole(100, 0, 0, 5_000, 1), "one thread, images of 5,000 units: 500 ms");
        assertTrue(s.whole(100, 0, 4, 5_000, 1), "with four GPU batches beside it");
        // A whole batch measured at 2 ms an image, all threads together, 200 ms a batch: 8 times what
        // the threads' rate foresaw (0.25 ms), sharing them with the GPU's batches' rounds and reads.
        s.wholeMeasured(200_000_000, 100, 1_000, 4);
        assertEquals(2_000_000, s.wholeNanosPerImage(), 1e-6);
        assertFalse(s.whole(100, 0, 0, 1_000, 4), "8 x 25 ms: 200 ms against 100");
        assertTrue(s.whole(100, 0, 1, 1_000, 4));
        assertFalse(s.whole(100, 50, 1, 1_000, 4), "a backlog of 50: 300 ms against 200");
        // The rounds then measure the threads twice as fast: the whole batches' rate follows.
        for (int k = 0; k < 60; k++) {
            s.cpuMeasured(1_000_000, 10, 500 * 1_000, 1_000);
        }
        assertEquals(500, s.threadNanosPerUnit(), 1e-6);
        assertTrue(s.whole(100, 50, 1, 1_000, 4), "1 ms an image: 150 ms against 200");
        assertFalse(s.whole(0, 0, 4, 1_000, 4), "an empty batch is never whole");
    }
}
