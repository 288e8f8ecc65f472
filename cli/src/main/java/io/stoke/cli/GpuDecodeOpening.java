package io.stoke.cli;

import io.stoke.gpu.GpuDecodeStage;
import io.stoke.gpu.GpuJpegDecoder;
import io.stoke.gpu.NvjpegLibrary;
import io.stoke.loader.Loader;
import java.util.function.Consumer;

/**
 * Opens the GPU decode stage for {@code --decode gpu} or {@code auto} (bench, demo, embed), or says
 * in one line why it cannot, and the CPU decodes then: the one place those lines are written.
 */
final class GpuDecodeOpening {
    private GpuDecodeOpening() {}

    /**
     * The stage over {@code settings} on CUDA device {@code ordinal}, with {@code readers} CPU threads,
     * or null after one line to {@code say} on why not (no libnvjpeg, no driver or device, the driver
     * refusing the device, --augment, --erasing, an order feed, a restart cache). Said first when it
     * opens: the library, the backend, and what the CPU threads do.
     *
     * @param flag how the user asked, {@code --decode gpu} or {@code --decode auto}, for the lines said
     */
    static GpuDecodeStage open(
            Loader.Builder settings, int ordinal, int readers, boolean shared, Consumer<String> say) {
        String flag = shared ? "--decode auto" : "--decode gpu";
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
                .nvjpeg(nvjpeg.nvjpeg().get())
                .shareWithCpu(shared);
        return GpuDecodeStage.openOrCpu(builder, reason -> say.accept(flag + ": " + reason))
                .map(stage -> {
                    say.accept("decoding on CUDA device " + ordinal + " (EXPERIMENTAL) with "
                            + nvjpeg.description()
                            + ", "
                            + (stage.backend() == GpuJpegDecoder.Backend.HARDWARE
                                    ? "hardware engine"
                                    : "GPU hybrid decoder")
                            + (stage.backendNote() != null ? " (" + stage.backendNote() + ")" : "") + "; " + readers
                            + " CPU threads read and decode what nvJPEG leaves"
                            + (shared ? ", and a share of the JPEGs balanced live" : ""));
                    return stage;
                })
                .orElse(null);
    }
}
