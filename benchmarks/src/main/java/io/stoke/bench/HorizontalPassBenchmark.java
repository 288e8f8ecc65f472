package io.stoke.bench;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.stoke.ffm.StokePixels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The resize's horizontal pass alone ({@code stoke_resample_horizontal} in Stoke's C library), in
 * microseconds a call: every row of a {@code source} (WIDTHxHEIGHT, RGBX noise) to 224 columns,
 * PIL's antialiased coefficients for the filter. 2000x1300 is a RandomResizedCrop box of a 4-5 MP
 * photograph (18 taps a column, bilinear), 300x250 one of a 0.2 MP one (3 taps).
 *
 * <p>{@code -Dstoke.pixels.path=FILE} (in {@code -jvmArgsAppend}) times another build of the
 * library, e.g. the one before a change.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
public class HorizontalPassBenchmark {
    private static final int PRECISION_BITS = 22;
    private static final int OUT = 224;

    @Param({"2000x1300", "300x250"})
    public String source;

    @Param({"bilinear", "bicubic"})
    public String filter;

    private Arena arena;
    private MemorySegment src;
    private MemorySegment bounds;
    private MemorySegment weights;
    private MemorySegment tmp;
    private int rows;
    private int width;
    private int taps;

    @Setup(Level.Trial)
    public void setUp() {
        if (!StokePixels.available()) {
            throw new IllegalStateException("Stoke's C library is not loaded: " + StokePixels.unavailableReason());
        }
        String[] wh = source.split("x");
        width = Integer.parseInt(wh[0]);
        rows = Integer.parseInt(wh[1]);
        arena = Arena.ofConfined();
        byte[] noise = new byte[width * rows * 4];
        new SplittableRandom(width).nextBytes(noise);
        src = arena.allocate(noise.length, 64);
        MemorySegment.copy(MemorySegment.ofArray(noise), 0, src, 0, noise.length);
        coefficients("bicubic".equals(filter));
        tmp = arena.allocate(4L * OUT * rows, 64);
    }

    /** PIL's {@code precompute_coeffs} from {@code width} to {@link #OUT} pixels, in 22-bit fixed point. */
    private void coefficients(boolean bicubic) {
        double support = bicubic ? 2 : 1;
        double scale = (double) width / OUT;
        double filterScale = Math.max(scale, 1);
        support *= filterScale;
        taps = (int) Math.ceil(support) * 2 + 1;
        bounds = arena.allocate(8L * OUT, 4);
        weights = arena.allocate(4L * OUT * taps, 4);
        double[] k = new double[taps];
        for (int x = 0; x < OUT; x++) {
            double center = (x + 0.5) * scale;
            int min = Math.max((int) (center - support + 0.5), 0);
            int n = Math.min((int) (center + support + 0.5), width) - min;
            double sum = 0;
            for (int t = 0; t < n; t++) {
                double d = Math.abs((t + min - center + 0.5) / filterScale);
                k[t] = bicubic ? cubic(d) : Math.max(0, 1 - d);
                sum += k[t];
            }
            for (int t = 0; t < n; t++) {
                double w = k[t] / sum * (1 << PRECISION_BITS);
                weights.setAtIndex(JAVA_INT, (long) x * taps + t, (int) (w < 0 ? w - 0.5 : w + 0.5));
            }
            bounds.setAtIndex(JAVA_INT, 2L * x, min);
            bounds.setAtIndex(JAVA_INT, 2L * x + 1, n);
        }
    }

    private static double cubic(double d) {
        double a = -0.5;
        if (d < 1) {
            return ((a + 2) * d - (a + 3)) * d * d + 1;
        }
        return d < 2 ? (((d - 5) * d + 8) * d - 4) * a : 0;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment horizontal() {
        StokePixels.resampleHorizontal(src, 4L * width, 0, rows, OUT, bounds, weights, taps, tmp);
        return tmp;
    }
}
