package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The balance between the GPU and the CPU threads, on rates given to it. */
class DecodeSplitTest {
    @Test
    void untilBothSidesAreMeasuredTheCpuTakesAnEighth() {
        DecodeSplit s = new DecodeSplit();
        assertEquals(32, s.cpuCount(256));
        s.gpuMeasured(1_000_000, 100);
        assertEquals(32, s.cpuCount(256), "the CPU is not measured yet");
        assertEquals(0, s.cpuCount(0));
        assertEquals(1, s.cpuCount(7), "at least one, to measure the CPU");
        assertEquals(1, s.cpuCount(1), "the GPU is measured: a batch of one goes to the CPU to measure it");
        DecodeSplit fresh = new DecodeSplit();
        assertEquals(0, fresh.cpuCount(1), "a batch of one goes to the GPU first");
    }

    @Test
    void bothSidesFinishTogether() {
        DecodeSplit s = new DecodeSplit();
        // The GPU side takes 1 ms an image, the CPU side (all threads) 3 ms: the CPU gets a quarter.
        s.gpuMeasured(100_000_000, 100);
        s.cpuMeasured(30_000_000, 10);
        assertEquals(64, s.cpuCount(256));
        // Then m * 3 ms = (256 - m) * 1 ms: both take 192 ms.
        assertEquals(64 * 3, (256 - 64) * 1);
    }

    @Test
    void theDecodeThreadsHostTimeBoundsTheGpuSideWhereItIsLongerThanTheEventsSpan() {
        DecodeSplit s = new DecodeSplit();
        // The events around the decode and resize span 0.05 ms an image, but the decode thread's
        // nvJPEG host side takes 0.2 ms an image; the CPU threads together take 0.1 ms: the GPU side
        // is 0.2 ms, the CPU gets two thirds (on the events' span alone it would get a third).
        s.gpuMeasured(5_000_000, 100);
        s.cpuMeasured(10_000_000, 100);
        assertEquals(85, s.cpuCount(256), "the events' span alone, before the host's time is measured");
        s.gpuHostMeasured(20_000_000, 100);
        assertEquals(200_000, s.gpuNanosPerImage(), 1e-6);
        assertEquals(171, s.cpuCount(256));
        // A span longer than the host's time: the span bounds it.
        DecodeSplit d = new DecodeSplit();
        d.gpuMeasured(30_000_000, 100);
        d.gpuHostMeasured(10_000_000, 100);
        d.cpuMeasured(30_000_000, 100);
        assertEquals(128, d.cpuCount(256));
    }

    @Test
    void aMuchFasterGpuStillLeavesTheCpuOneImageSoItsRateStaysKnown() {
        DecodeSplit s = new DecodeSplit();
        s.gpuMeasured(1_000, 100);
        s.cpuMeasured(100_000_000, 10);
        assertEquals(1, s.cpuCount(256));
        assertEquals(0, s.cpuCount(8));
    }

    @Test
    void ratesAreSmoothedNotReplaced() {
        DecodeSplit s = new DecodeSplit();
        s.gpuMeasured(1_000_000, 1);
        s.gpuMeasured(2_000_000, 1);
        assertEquals(DecodeSplit.KEEP * 1e6 + (1 - DecodeSplit.KEEP) * 2e6, s.gpuNanosPerImage(), 1e-6);
        s.cpuMeasured(0, 5); // nothing measured: ignored
        assertEquals(Double.NaN, s.cpuNanosPerImage());
    }
}
