package io.stoke.gpu;

import io.stoke.loader.Loader;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * Opens the GPU decode stage for the loader option {@code decode} ({@code --decode gpu|auto}, {@code
 * decode=} of stoke.DataLoader) on behalf of a command (bench, demo, embed, serve), or says in one
 * line why it cannot, and the CPU decodes then: the one place those lines are written.
 */
public final class GpuDecodeOpening {
    /** The values of the loader option {@code decode}: where the JPEGs are decoded. */
    public enum Decode {
        CPU,
        GPU,
        AUTO;

        /** The option's word ({@code cpu}, {@code gpu}, {@code auto}, any case). */
        public static Decode of(String word) {
            return valueOf(word.toUpperCase(Locale.ROOT));
        }

        /** Whether the GPU decodes (gpu or auto). */
        public boolean onGpu() {
            return this != CPU;
        }

        /** Whether the CPU threads also take whole batches or a share of the JPEGs (auto). */
        public boolean shared() {
            return this == AUTO;
        }

        /** How the user asked: {@code --decode gpu}, for the lines said. */
        public String flag() {
            return "--decode " + name().toLowerCase(Locale.ROOT);
        }
    }

    private GpuDecodeOpening() {}

    /**
     * The stage over {@code settings} on CUDA device {@code ordinal}, with {@code readers} CPU threads
     * and {@code cpuBatches} device buffers for the batches they still work on
     * ({@link GpuDecodeStage.Builder#cpuBatches}; the option {@code decode_cpu_batches}), each
     * batch's nvJPEG call split over {@code gpuThreads} threads ({@link
     * GpuDecodeStage.Builder#decodeThreads}; the option {@code decode_gpu_threads}), or null
     * after one line to {@code say} on why not (no libnvjpeg, no driver or device, the driver
     * refusing the device). Said once nvJPEG has opened (under
     * {@code auto}, after the first whole batches of the CPU threads may have been handed out): the
     * library, the backend, and what the CPU threads do.
     *
     * @param consumerOnGpu whether the consumer's own work runs on the GPU ({@link
     *     GpuDecodeStage.Builder#consumerOnGpu}: under auto, the GPU is left to it while it is behind)
     * @param say takes each line, to be prefixed with the command's name
     */
    public static GpuDecodeStage open(
            Loader.Builder settings,
            Decode decode,
            int ordinal,
            int readers,
            int cpuBatches,
            int gpuThreads,
            boolean consumerOnGpu,
            Consumer<String> say) {
        if (!decode.onGpu()) {
            throw new IllegalArgumentException("--decode cpu opens no GPU decode stage");
        }
        boolean shared = decode.shared();
        String flag = decode.flag();
        String refused = GpuDecodeStage.refusal(settings);
        if (refused != null) {
            say.accept(flag + ": " + refused + "; decoding on the CPU");
            return null;
        }
        NvjpegLibrary.Loaded nvjpeg = NvjpegLibrary.load();
        if (nvjpeg.nvjpeg().isEmpty()) {
            say.accept(flag + ": " + nvjpeg.description() + "; decoding on the CPU");
            return null;
        }
        GpuDecodeStage.Builder builder = GpuDecodeStage.builder(settings)
                .device(ordinal)
                .readers(readers)
                .cpuBatches(cpuBatches)
                .decodeThreads(gpuThreads)
                .nvjpeg(nvjpeg.nvjpeg().get())
                .shareWithCpu(shared)
                .consumerOnGpu(consumerOnGpu);
        return GpuDecodeStage.openOrCpu(builder, reason -> say.accept(flag + ": " + reason))
                .map(stage -> {
                    // Under auto nvJPEG may still be opening (the CPU threads decode whole batches
                    // meanwhile): the line comes once it has, and a failure reaches the consumer.
                    stage.whenOpened(backend -> say(say, stage, backend, ordinal, nvjpeg, readers, gpuThreads, shared));
                    return stage;
                })
                .orElse(null);
    }

    /** The line said once nvJPEG has opened: the library, the backend, what the CPU threads do. */
    private static void say(
            Consumer<String> say,
            GpuDecodeStage stage,
            GpuJpegDecoder.Backend backend,
            int ordinal,
            NvjpegLibrary.Loaded nvjpeg,
            int readers,
            int gpuThreads,
            boolean shared) {
        long meanwhile = stage.stats().opening().wholeMeanwhile(); // one stats record, read once
        say.accept("decoding on CUDA device " + ordinal
                + " (EXPERIMENTAL) with "
                + nvjpeg.description()
                + ", "
                + (backend == GpuJpegDecoder.Backend.HARDWARE ? "hardware engine" : "GPU hybrid decoder")
                + (stage.backendNote() != null ? " (" + stage.backendNote() + ")" : "")
                + (stage.convertsColour() ? ", chroma upsampled as the CPU does" : "")
                + (gpuThreads > 1 ? ", each batch's call split over " + gpuThreads + " threads" : "")
                + "; " + readers
                + " CPU threads read and decode what nvJPEG leaves"
                + (shared ? ", and whole batches or a share of the JPEGs, balanced live" : "")
                + (meanwhile > 0
                        ? "; " + meanwhile + " whole batches began on the CPU threads while nvJPEG opened"
                        : ""));
    }
}
