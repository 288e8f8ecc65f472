package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The committed PTX: its kernels' signatures, and that it is what nvcc makes of native/cuda/stoke_kernels.cu. */
class DeviceKernelsPtxTest {
    static final Path SOURCE = Path.of("..", "native", "cuda", "stoke_kernels.cu");
    static final Path SCRIPT = Path.of("..", "native", "cuda", "gen-ptx.sh");

    @Test
    void ptxDeclaresTheKernelsWithTheParametersJavaAndTheDoublePass() {
        String ptx = DeviceKernels.ptx();
        assertTrue(ptx.contains(".target sm_75"), "compute_75 PTX, JIT-compiled forward by the driver");
        assertEquals(
                List.of("u64", "u64", "u32", "u32", "f32", "f32", "f32", "f32", "f32", "f32"),
                params(ptx, DeviceKernels.NORMALIZE),
                "DeviceKernels writes its argument block in this order");
        assertEquals(List.of("u64"), params(ptx, DeviceKernels.SPIN));
        // (const stoke_resize_job *jobs, const int *tables): DeviceKernels.resample passes these two.
        assertEquals(List.of("u64", "u64"), params(ptx, DeviceKernels.RESAMPLE_H));
        assertEquals(List.of("u64", "u64"), params(ptx, DeviceKernels.RESAMPLE_V));
        // (const stoke_ycc_job *jobs): DeviceKernels.yccToRgb passes the one.
        assertEquals(List.of("u64"), params(ptx, DeviceKernels.YCC));
        // The math must be the correctly rounded one the CPU reference uses: no approximate division.
        assertTrue(ptx.contains("div.rn.f32") && !ptx.contains("div.approx") && !ptx.contains("div.full"));
    }

    static List<String> params(String ptx, String kernel) {
        Matcher m = Pattern.compile("\\.entry " + kernel + "\\(([^)]*)\\)").matcher(ptx);
        assertTrue(m.find(), "no .entry " + kernel);
        return Pattern.compile("\\.param \\.(\\w+)")
                .matcher(m.group(1))
                .results()
                .map(r -> r.group(1))
                .toList();
    }

    @Test
    void committedPtxIsWhatNvccMakesOfTheSource(@TempDir Path tmp) throws Exception {
        Path nvcc = findNvcc();
        if (nvcc == null) {
            System.err.println(
                    "[stoke] SKIPPING PTX regeneration check: nvcc not found (set NVCC or CUDA_HOME,"
                            + " or install the CUDA toolkit); the committed PTX was not compared with native/cuda/stoke_kernels.cu");
        }
        assumeTrue(nvcc != null, "nvcc not found: PTX regeneration check skipped");
        Path out = tmp.resolve("stoke_kernels.ptx");
        ProcessBuilder pb = new ProcessBuilder("sh", SCRIPT.toString(), out.toString()).redirectErrorStream(true);
        pb.environment().put("NVCC", nvcc.toString());
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "nvcc took over 2 minutes");
        // nvcc preprocesses with the host's C++ compiler even for device-only PTX: an nvcc without
        // a working gcc is a toolkit that cannot run here, not a stale PTX.
        boolean noHostCompiler = p.exitValue() != 0 && log.contains("host compiler");
        if (noHostCompiler) {
            System.err.println("[stoke] SKIPPING PTX regeneration check: " + nvcc
                    + " cannot run without a host compiler" + " (install gcc and g++): " + log.strip());
        }
        assumeTrue(!noHostCompiler, "nvcc has no host compiler: PTX regeneration check skipped");
        assertEquals(0, p.exitValue(), "gen-ptx.sh failed:\n" + log);
        assertEquals(
                code(Files.readString(out)),
                code(DeviceKernels.ptx()),
                "gpu/src/main/resources" + DeviceKernels.PTX_RESOURCE
                        + " is stale: run native/cuda/gen-ptx.sh and commit it");
    }

    /** The PTX without its "//" header (compiler build ids), which differ between toolkit updates. */
    static String code(String ptx) {
        return ptx.lines().filter(l -> !l.startsWith("//")).reduce("", (a, b) -> a + b + "\n");
    }

    /** NVCC when set (exactly that one: NVCC=none hides the toolkit), else CUDA_HOME's, the usual place, PATH. */
    static Path findNvcc() throws IOException {
        String named = System.getenv("NVCC");
        if (named != null && !named.isBlank()) {
            return Files.isExecutable(Path.of(named)) ? Path.of(named) : null;
        }
        for (String candidate : new String[] {
            System.getenv("CUDA_HOME") == null ? null : System.getenv("CUDA_HOME") + "/bin/nvcc",
            "/usr/local/cuda/bin/nvcc"
        }) {
            if (candidate != null && Files.isExecutable(Path.of(candidate))) {
                return Path.of(candidate);
            }
        }
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "nvcc");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }
}
