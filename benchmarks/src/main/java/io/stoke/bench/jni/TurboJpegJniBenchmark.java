package io.stoke.bench.jni;

import io.stoke.bench.BenchData;
import java.util.concurrent.TimeUnit;
import org.libjpegturbo.turbojpeg.TJ;
import org.libjpegturbo.turbojpeg.TJDecompressor;
import org.libjpegturbo.turbojpeg.TJException;
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
 * The same decode as {@code DecodeBenchmark.stokeFfm} (full size, RGB) through TurboJPEG's own JNI
 * wrapper, into a {@code byte[]}: the baseline Stoke's FFM binding is judged against.
 *
 * <p>Compiled only when {@code /usr/share/java/turbojpeg.jar} exists (Debian's
 * {@code libturbojpeg-java}); run with that jar on the class path and
 * {@code -Djava.library.path} naming the folder of {@code libturbojpeg.so}, as {@code ./stoke jmh} does.
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
public class TurboJpegJniBenchmark {
    @Param("")
    public String dataset;

    private BenchData.Jpegs files;
    private TJDecompressor tj;
    private byte[] rgb;
    private int next;

    @Setup(Level.Trial)
    public void setUp() throws TJException {
        files = BenchData.load(dataset);
        tj = new TJDecompressor();
        rgb = new byte[files.maxPixels() * 3];
    }

    @TearDown(Level.Trial)
    public void tearDown() throws TJException {
        tj.close();
    }

    @Benchmark
    public int turbojpegJni() throws TJException {
        int i = next;
        next = i + 1 == files.count() ? 0 : i + 1;
        tj.setSourceImage(files.bytes(i), files.length(i));
        int w = tj.getWidth();
        int h = tj.getHeight();
        tj.decompress(rgb, 0, 0, w, w * 3, h, TJ.PF_RGB, 0);
        return w;
    }
}
