package io.stoke.bench;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.loader.decode.JpegDecoder;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.transform.TransformSpec;
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
 * The resize + crop kernel alone ({@link Resampler}: antialiased bilinear Resize(256), then
 * CenterCrop(224) into a uint8 sample), on images decoded once at full size in setup, in images
 * per second on one thread.
 *
 * <p>{@code -Dstoke.pixels.path=none} (in {@code -jvmArgsAppend}) times the Java fallback kernels
 * instead of Stoke's C library; their first iterations run interpreted, hence five warm-ups.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "--add-exports",
            "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--enable-native-access=ALL-UNNAMED"
        })
public class ResampleBenchmark {
    @Param("")
    public String dataset;

    /** Decoded images kept in memory (RGBX at full size, about 0.75 MB each). */
    @Param("64")
    public int images;

    private Arena arena;
    private Resampler resampler;
    private MemorySegment[] decoded;
    private int[] widths;
    private int[] heights;
    private MemorySegment out;
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        BenchData.Jpegs files = BenchData.load(dataset);
        TransformSpec spec = TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE);
        int n = Math.min(images, files.count());
        arena = Arena.ofConfined();
        decoded = new MemorySegment[n];
        widths = new int[n];
        heights = new int[n];
        try (JpegDecoder decoder = new JpegDecoder(spec)) {
            for (int i = 0; i < n; i++) {
                if (decoder.decode(files.segment(i), files.length(i)) != SampleStatus.OK) {
                    throw new IllegalStateException(decoder.message());
                }
                widths[i] = decoder.decoded().width();
                heights[i] = decoder.decoded().height();
                long bytes = (long) widths[i] * heights[i] * 4;
                // Slack past the end, as the decoder's scratch has.
                decoded[i] = arena.allocate(bytes + 4096, 64);
                MemorySegment.copy(decoder.decoded().pixels(), 0, decoded[i], 0, bytes);
            }
        }
        resampler = new Resampler(spec);
        out = arena.allocate(spec.sampleBytes(), 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        resampler.close();
        arena.close();
    }

    @Benchmark
    public byte resizeCenterCrop() {
        int i = next;
        next = i + 1 == decoded.length ? 0 : i + 1;
        resampler.resizeCenterCrop(decoded[i], widths[i], heights[i], widths[i], heights[i], out, 0);
        return out.get(JAVA_BYTE, 0);
    }
}
