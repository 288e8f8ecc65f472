package io.stoke.bench;

import io.stoke.ffm.JpegDecompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.decode.JpegDecoder;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.transform.TransformSpec;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import javax.imageio.ImageIO;
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
 * Decoding one ImageNet-like JPEG at full size, in images per second on one thread, three ways:
 * Stoke's FFM binding to libjpeg-turbo into a {@link MemorySegment} (RGB, as the other two give),
 * Stoke's {@link JpegDecoder} as the loader calls it (RGBX, header checks, colour handling), and
 * {@code javax.imageio}. TurboJPEG's own JNI wrapper is in {@code io.stoke.bench.jni}, built when
 * {@code /usr/share/java/turbojpeg.jar} exists. The files are held in memory: no I/O is timed.
 *
 * <p>{@code -p dataset=DIR} names an ImageFolder tree; the default is the demo's built-in sample.
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
public class DecodeBenchmark {
    @Param("")
    public String dataset;

    private BenchData.Jpegs files;
    private Arena arena;
    private JpegDecompressor tj;
    private JpegDecoder decoder;
    private MemorySegment rgb;
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        files = BenchData.load(dataset);
        arena = Arena.ofConfined();
        tj = new JpegDecompressor();
        decoder = new JpegDecoder(TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE));
        rgb = arena.allocate((long) files.maxPixels() * 3, 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        tj.close();
        decoder.close();
        arena.close();
    }

    private int nextFile() {
        int i = next;
        next = i + 1 == files.count() ? 0 : i + 1;
        return i;
    }

    /** Stoke's FFM binding: header, then decode to RGB at full size into an off-heap segment. */
    @Benchmark
    public int stokeFfm() {
        int i = nextFile();
        MemorySegment src = files.segment(i);
        long size = files.length(i);
        if (tj.readHeader(src, size) != 0) {
            throw new IllegalStateException(tj.errorMessage());
        }
        int w = tj.width();
        int h = tj.height();
        if (tj.decompress(src, size, rgb, w, w * 3, h, TurboJpeg.TJPF_RGB, 0) != 0
                && tj.errorCode() == TurboJpeg.TJERR_FATAL) {
            throw new IllegalStateException(tj.errorMessage());
        }
        return w;
    }

    /** The loader's decoder: signature and size checks, RGBX, gray/CMYK handling, full size. */
    @Benchmark
    public int stokeJpegDecoder() {
        int i = nextFile();
        if (decoder.decode(files.segment(i), files.length(i)) != SampleStatus.OK) {
            throw new IllegalStateException(decoder.message());
        }
        return decoder.decoded().width();
    }

    /** The JDK's own decoder (pure Java), into a BufferedImage. */
    @Benchmark
    public int imageIo() {
        int i = nextFile();
        try {
            BufferedImage img = ImageIO.read(new ByteArrayInputStream(files.bytes(i), 0, files.length(i)));
            return img.getWidth();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
