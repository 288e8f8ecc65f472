package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.Nvjpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The GPU decode stage's batches against the CPU loader's on the same files, image by image, after
 * the evaluation transform (what {@code stoke gpu-check --decode DIR} adds to the decoders'
 * comparison): the pixel check. Only the images nvJPEG decoded are compared (the CPU's
 * share is the loader's own code). Against two CPU paths: full-size decodes ({@code --dct-scaling
 * none}, where the difference is the decoders' alone) and the loader's default (which first decodes
 * a large JPEG at a reduced DCT scale). On the doubles the first must be 0: the double decodes with
 * libjpeg.
 */
final class StageComparison {
    /** Levels of difference the GPU path may have from the CPU path's, after resize (the target). */
    static final int TARGET = 2;

    private StageComparison() {}

    static List<GpuCheck.BatchDifference> run(
            CudaDriver driver, int device, Nvjpeg nvjpeg, Path dir, List<Path> files, int batch) {
        List<String> paths = new ArrayList<>(files.size());
        for (Path f : files) {
            paths.add(dir.relativize(f).toString());
        }
        FileDataset dataset = FileDataset.of(dir, paths, new int[files.size()]);
        TransformSpec defaults = TransformSpec.defaults();
        TransformSpec full = defaults.withDctScaling(TransformSpec.DctScaling.NONE);
        Tally none = new Tally("--dct-scaling none (full-size decodes)");
        Tally scaled = new Tally("the loader's default (DCT scaling "
                + defaults.dctScaling().name().toLowerCase(Locale.ROOT) + ")");
        try (GpuDecodeStage stage = GpuDecodeStage.builder(settings(dataset, batch, full))
                        .driver(driver)
                        .device(device)
                        .nvjpeg(nvjpeg)
                        .build();
                Loader cpuFull = settings(dataset, batch, full).build();
                Loader cpuScaled = settings(dataset, batch, defaults).build();
                Arena arena = Arena.ofConfined()) {
            long sample = defaults.sampleBytes();
            MemorySegment gpu = arena.allocate(sample * batch);
            while (true) {
                DeviceBatch b = stage.next();
                if (b == null) {
                    break;
                }
                try (b;
                        Batch f = cpuFull.next();
                        Batch s = cpuScaled.next()) {
                    b.copyToHost(gpu);
                    for (int i = 0; i < b.size(); i++) {
                        if (!b.decodedOnGpu(i) || skipped(f, i) || skipped(s, i)) {
                            continue;
                        }
                        Path file = files.get((int) b.index(i));
                        none.add(gpu, f.pixels(), i * sample, sample, file);
                        scaled.add(gpu, s.pixels(), i * sample, sample, file);
                    }
                }
            }
        }
        return List.of(none.result(), scaled.result());
    }

    private static Loader.Builder settings(FileDataset dataset, int batch, TransformSpec spec) {
        return Loader.builder(dataset)
                .batchSize(batch)
                .workers(2)
                .transform(spec)
                .onError(ErrorPolicy.SKIP);
    }

    private static boolean skipped(Batch b, int i) {
        return b.skipped().stream().anyMatch(e -> e.position() == i);
    }

    /** Differences against one CPU path. */
    private static final class Tally {
        final String against;
        int images;
        double sum;
        long values;
        int largest;
        Path largestFile;
        int overTarget;

        Tally(String against) {
            this.against = against;
        }

        void add(MemorySegment gpu, MemorySegment cpu, long offset, long n, Path file) {
            int worst = 0;
            for (long o = offset; o < offset + n; o++) {
                int d = Math.abs((gpu.get(JAVA_BYTE, o) & 0xFF) - (cpu.get(JAVA_BYTE, o) & 0xFF));
                sum += d;
                worst = Math.max(worst, d);
            }
            values += n;
            images++;
            if (worst > TARGET) {
                overTarget++;
            }
            if (largestFile == null || worst > largest) {
                largest = worst;
                largestFile = file;
            }
        }

        GpuCheck.BatchDifference result() {
            return new GpuCheck.BatchDifference(
                    against, images, values == 0 ? 0 : sum / values, largest, largestFile, overTarget);
        }
    }
}
