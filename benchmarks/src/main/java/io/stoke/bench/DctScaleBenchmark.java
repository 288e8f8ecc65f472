package io.stoke.bench;

import io.stoke.ffm.JpegDecompressor;
import io.stoke.ffm.TurboJpeg;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
 * libjpeg-turbo through Stoke's FFM binding decoding every image at a fixed DCT scale M/8 (into
 * RGBX, as the loader does): what each scale saves before the resize. 8/8 is full size; 4/8, 2/8
 * and 1/8 have SIMD inverse DCTs; the others are the "all" mode's extra choices.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "--add-exports",
            "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--enable-native-access=ALL-UNNAMED"
        })
public class DctScaleBenchmark {
    @Param("")
    public String dataset;

    /** The scale numerator over 8. */
    @Param({"8", "7", "6", "5", "4", "3", "2", "1"})
    public int eighths;

    private BenchData.Jpegs files;
    private Arena arena;
    private JpegDecompressor tj;
    private MemorySegment out;
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        files = BenchData.load(dataset);
        arena = Arena.ofConfined();
        tj = new JpegDecompressor();
        out = arena.allocate((long) files.maxPixels() * 4, 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        tj.close();
        arena.close();
    }

    @Benchmark
    public int decodeAtScale() {
        int i = next;
        next = i + 1 == files.count() ? 0 : i + 1;
        MemorySegment src = files.segment(i);
        long size = files.length(i);
        if (tj.readHeader(src, size) != 0) {
            throw new IllegalStateException(tj.errorMessage());
        }
        int w = TurboJpeg.scaled(tj.width(), eighths, 8);
        int h = TurboJpeg.scaled(tj.height(), eighths, 8);
        if (tj.decompress(src, size, out, w, w * 4, h, TurboJpeg.TJPF_RGBX, 0) != 0
                && tj.errorCode() == TurboJpeg.TJERR_FATAL) {
            throw new IllegalStateException(tj.errorMessage());
        }
        return w;
    }
}
