package io.stoke.loader.resample;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A worker's resizes allocate nothing once warm: the kernels' arguments ({@link KernelArguments})
 * are the resampler's own, re-pointed per image, whatever the kernels, the box, the flip and the
 * output type. Measured with the JVM's count of the bytes this thread allocated.
 */
class ResamplerAllocationTest {
    @Test
    void resizesAllocateNothingAfterWarmUp() {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(threads.isThreadAllocatedMemorySupported(), "no per-thread allocation count here");
        threads.setThreadAllocatedMemoryEnabled(true);
        int w = 500;
        int h = 375;
        byte[] src = ResamplerTest.rgbx(TestImages.rgb(w, h, 5));
        List<ResampleKernels> kernels = new ArrayList<>(List.of(new ScalarKernels()));
        if (ResamplerTest.nativeOrSkipLoudly()) {
            kernels.add(new NativeKernels());
        }
        TransformSpec uint8 = TransformSpec.defaults().withTrain(64, RandomResizedCrop.defaults());
        TransformSpec f32 = uint8.withOutput(TransformSpec.Output.FLOAT32_CHW);
        CropBox[] boxes = {
            new CropBox().set(37, 12, 301, 250, false),
            new CropBox().set(0, 0, 500, 375, true),
            new CropBox().set(440, 300, 60, 75, true),
            new CropBox().set(1, 2, 17, 9, false)
        };
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(src.length);
            MemorySegment.copy(src, 0, in, JAVA_BYTE, 0, src.length);
            MemorySegment out = arena.allocate(f32.sampleBytes());
            for (ResampleKernels k : kernels) {
                for (TransformSpec spec : new TransformSpec[] {uint8, f32}) {
                    try (Resampler r = new Resampler(spec, k)) {
                        for (int i = 0; i < 200; i++) { // every box's coefficients sized, the loops compiled
                            r.resizedCrop(in, w, h, w, h, boxes[i % boxes.length], out, 0);
                            r.resizeCenterCrop(in, w, h, w, h, out, 0);
                        }
                        long before = threads.getCurrentThreadAllocatedBytes();
                        for (int i = 0; i < 100; i++) {
                            r.resizedCrop(in, w, h, w, h, boxes[i % boxes.length], out, 0);
                            r.resizeCenterCrop(in, w, h, w, h, out, 0);
                        }
                        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
                        assertEquals(
                                0,
                                allocated,
                                "bytes allocated by 200 warm resizes with "
                                        + k.getClass().getSimpleName() + ", " + spec.output());
                    }
                }
            }
        }
    }
}
