package io.stoke.cli;

import io.stoke.gpu.DeviceUnavailableException;
import io.stoke.gpu.GpuCheck;
import io.stoke.gpu.NvjpegLibrary;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code stoke gpu-check}: checks the whole host-to-device path on this machine's GPU ({@link GpuCheck}). Known
 * patterns go through a pinned ring, the GPU stage and back; the normalisation kernel is compared
 * with the CPU reference; pinned and pageable copy bandwidth are measured; and the overlap of copies
 * with a simulated compute kernel is reported.
 */
@Command(
        name = "gpu-check",
        mixinStandardHelpOptions = true,
        description = {
            "Checks the GPU path: pattern round trip through the pinned ring and the GPU stage, the "
                    + "normalisation kernel against the CPU reference, pinned vs pageable bandwidth, and copy/compute overlap. "
                    + "First it says which nvJPEG the GPU decode would use (STOKE_NVJPEG, the CUDA toolkit, the active "
                    + "Python environment's nvidia or torchvision wheel), with its version, or why there is none. "
                    + "Exit codes: 0 all good, 1 a check failed, 4 no CUDA driver or device."
        })
public final class GpuCheckCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--device", description = "CUDA device ordinal (default: ${DEFAULT-VALUE})")
    int device = 0;

    @Option(names = "--mib", description = "MiB per bandwidth copy (default: ${DEFAULT-VALUE})")
    int mib = 64;

    @Option(
            names = "--iterations",
            description = "copies per bandwidth and overlap measurement (default: ${DEFAULT-VALUE})")
    int iterations = 10;

    @Option(
            names = "--stage-batch",
            description = "samples per batch in the GPU stage's rate check (default: ${DEFAULT-VALUE})")
    int stageBatch = 256;

    @Option(
            names = "--stage-crop",
            description = "C: each sample of the stage's rate check is C x C x 3 uint8 (default: ${DEFAULT-VALUE})")
    int stageCrop = 224;

    @Option(
            names = "--compute-ms",
            description = "length of the simulated compute kernel, ms (default: ${DEFAULT-VALUE})")
    double computeMs = 20;

    @Option(
            names = "--decode",
            paramLabel = "DIR",
            description = {
                "Also decodes the JPEGs under DIR with nvJPEG and compares every image it takes with TurboJPEG's "
                        + "full-size decode (mean and largest difference of a channel value), with both decoders' rates."
            })
    Path decodeDir;

    @Option(
            names = "--decode-images",
            paramLabel = "N",
            description = "at most N files of --decode DIR, in name order (default: ${DEFAULT-VALUE})")
    int decodeImages = 256;

    @Option(
            names = "--decode-batch",
            paramLabel = "B",
            description = "files per nvJPEG batched decode (default: ${DEFAULT-VALUE})")
    int decodeBatch = 64;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (mib < 1
                || iterations < 1
                || computeMs < 0
                || stageBatch < 1
                || stageCrop < 1
                || decodeImages < 1
                || decodeBatch < 1) {
            err.println("stoke gpu-check: --mib, --iterations, --stage-batch, --stage-crop, --decode-images and "
                    + "--decode-batch must be positive, --compute-ms not negative");
            return Main.EXIT_USAGE;
        }
        List<Path> decodeFiles = List.of();
        if (decodeDir != null) {
            try {
                decodeFiles = GpuCheck.jpegsUnder(decodeDir, decodeImages);
            } catch (IOException | UncheckedIOException e) {
                err.println("stoke gpu-check: --decode " + decodeDir + ": " + e.getMessage());
                return Main.EXIT_USAGE;
            }
            if (decodeFiles.isEmpty()) {
                err.println("stoke gpu-check: --decode " + decodeDir + " holds no .jpg or .jpeg file");
                return Main.EXIT_USAGE;
            }
        }
        // Before the device: nvJPEG loads (and says its version) without one, and what was found where
        // is the first question when the GPU decode does not start.
        NvjpegLibrary.Loaded nvjpeg = NvjpegLibrary.load();
        out.println("nvjpeg     " + nvjpeg.description());
        out.flush();
        GpuCheck check;
        try {
            check = GpuCheck.open(device, new GpuCheck.Settings(mib, iterations, stageBatch, stageCrop, computeMs));
        } catch (DeviceUnavailableException e) {
            err.println("stoke gpu-check: " + e.getMessage());
            return Main.EXIT_NO_DEVICE;
        } catch (GpuCheck.Failed e) {
            err.println("stoke gpu-check: " + e.getMessage());
            return Main.EXIT_FAILED;
        }
        boolean ok = true;
        try (check) {
            int v = check.driverVersion();
            out.printf("driver     %s, CUDA %d.%d%n", check.driverLibrary(), v / 1000, (v % 1000) / 10);
            out.printf("device     %s%n", check.device());
            GpuCheck.Patterns p = check.patterns();
            out.printf(
                    "patterns   %d batches through the pinned ring and the GPU stage and back: %s%n",
                    p.batches(), p.ok() ? "OK" : p.bytesDiffering() + " BYTES DIFFER");
            GpuCheck.Normalise n = check.normalise();
            out.printf(
                    "normalise  uint8 NHWC -> float32 NCHW kernel vs CPU reference: %s%n",
                    n.ok()
                            ? "OK (bit-identical)"
                            : n.valuesDiffering() + " VALUES DIFFER, max |diff| " + n.maxDifference());
            ok = p.ok() && n.ok();
            GpuCheck.Bandwidth b = check.bandwidth();
            out.printf(
                    "bandwidth  host->device, %d x %d MiB: pinned (cuMemHostRegister + cuMemcpyHtoDAsync) %.2f GB/s,"
                            + " pageable (cuMemcpyHtoD) %.2f GB/s, ratio %.2fx%n",
                    iterations, mib, b.pinnedGBs(), b.pageableGBs(), b.pinnedGBs() / b.pageableGBs());
            GpuCheck.StageRate s = check.stageRate();
            out.printf(
                    "stage      %d batches of %d x %dx%dx3 uint8 (%.1f MB) from pinned ring slots through the GPU stage:"
                            + " %.2f GB/s, %.0f%% of one registered buffer copied back to back (%.2f GB/s)%n",
                    s.batches(),
                    stageBatch,
                    stageCrop,
                    stageCrop,
                    s.batchBytes() / 1e6,
                    s.stageGBs(),
                    100 * s.stageGBs() / s.peakGBs(),
                    s.peakGBs());
            GpuCheck.Overlap o = check.overlap();
            out.printf(
                    "overlap    %d x (%d MiB copy | %.1f ms compute kernel): copies %.1f ms, compute %.1f ms,"
                            + " together %.1f ms -> %.0f%% of the shorter hidden%n",
                    iterations,
                    mib,
                    computeMs,
                    o.copiesNanos() / 1e6,
                    o.computeNanos() / 1e6,
                    o.togetherNanos() / 1e6,
                    o.hiddenPercent());
            if (decodeDir != null) {
                if (nvjpeg.nvjpeg().isEmpty()) {
                    out.println("decode     not run: no nvJPEG (above)");
                    ok = false;
                } else {
                    ok &= printDecode(out, check.decode(nvjpeg.nvjpeg().get(), decodeFiles, decodeBatch));
                    printBatches(out, check.batches(nvjpeg.nvjpeg().get(), decodeDir, decodeFiles, decodeBatch));
                }
            }
        } catch (GpuCheck.Failed | UncheckedIOException e) {
            // UncheckedIOException: a file of --decode DIR could not be read (the message names it).
            err.println("stoke gpu-check: " + e.getMessage());
            return Main.EXIT_FAILED;
        }
        out.println(ok ? "result     all checks passed" : "result     FAILED");
        out.flush();
        return ok ? 0 : Main.EXIT_FAILED;
    }

    /**
     * Says how far the GPU decode stage's images are from the CPU loader's, after the evaluation
     * transform: a measurement against the target of 2 levels, said, not a pass or fail
     * (the decoders' IDCTs differ by design; above it the line names the worst file).
     */
    private void printBatches(PrintWriter out, List<GpuCheck.BatchDifference> all) {
        out.println("           the GPU decode stage's batches vs the CPU loader's (Resize 256 + CenterCrop 224), per"
                + " image nvJPEG decoded:");
        for (GpuCheck.BatchDifference d : all) {
            out.printf(
                    Locale.ROOT,
                    "             vs %s: %d images, mean |diff| %.4f, largest %d%s; %s%n",
                    d.against(),
                    d.images(),
                    d.meanDifference(),
                    d.largestDifference(),
                    d.largestDifference() > 0 ? " (" + d.largestFile() + ")" : "",
                    d.overTarget() == 0 ? "every image within 2 levels" : d.overTarget() + " image(s) over 2 levels");
        }
    }

    /**
     * Says the decode comparison; whether it passed: the GPU took at least one file, its pixels are
     * within 2 levels of TurboJPEG's on average, and the device's resize is the CPU's, byte for byte.
     */
    private boolean printDecode(PrintWriter out, GpuCheck.Decode d) {
        out.printf(
                Locale.ROOT,
                "decode     %d JPEGs under %s: %d decoded by nvJPEG (%s), %d left to the CPU%n",
                d.files(),
                decodeDir,
                d.onGpu(),
                d.backend(),
                d.files() - d.onGpu());
        if (d.backendNote() != null) {
            out.println("           " + d.backendNote());
        }
        d.cpuReasons().forEach((why, n) -> out.printf(Locale.ROOT, "           %d x %s%n", n, why));
        out.printf(
                Locale.ROOT,
                "           pixels vs TurboJPEG's full-size decode: mean |diff| %.4f, largest %d%s%n",
                d.meanDifference(),
                d.largestDifference(),
                d.largestFile() != null ? " (" + d.largestFile() + ")" : "");
        out.printf(
                Locale.ROOT,
                "           rate: nvJPEG %.0f images/s (batches of %d), with the device's resize %.0f images/s;"
                        + " TurboJPEG %.0f images/s on one thread%n",
                d.gpuImagesPerSecond(),
                decodeBatch,
                d.gpuResizeImagesPerSecond(),
                d.cpuImagesPerSecond());
        out.printf(
                Locale.ROOT,
                "           resize on the device (Resize 256 + CenterCrop 224, bilinear) vs the CPU resampler on the"
                        + " same decoded pixels: %s%n",
                d.resizeBytesDiffering() == 0
                        ? "OK (" + d.resizeBytes() + " bytes, identical)"
                        : d.resizeBytesDiffering() + " OF " + d.resizeBytes() + " BYTES DIFFER");
        return d.onGpu() > 0 && d.meanDifference() <= 2 && d.resizeBytesDiffering() == 0;
    }
}
