package io.stoke.bench;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.loader.decode.JpegDecoder;
import io.stoke.loader.decode.SampleTransform;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.transform.CounterRandom;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
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
 * One thread's rate, in images per second, of the work a loader worker does per sample: the
 * whole transform (read + decode + resize + crop into a slot), the decode alone, and the resize
 * alone. The loader's overhead is judged against {@code sample}: N workers should reach about N
 * times its rate.
 *
 * <p>The training transform's decode is timed both ways on the same boxes (RandomResizedCrop's,
 * drawn per file as the loader draws them): {@code trainRegionDecode} decodes the box (Stoke's
 * region decoder), {@code trainWholeDecode} the whole image at the same DCT scale, as a decoder
 * without regions must before it crops. {@code trainRegionFloor} decodes, of the same files at the
 * same scale, only one pixel of the box's last row without seeking: every Huffman code above that
 * row is still read (a JPEG without restart markers is one sequential stream), so it is the least
 * a region decoder that cannot seek can spend. {@code trainRegionSequential} is
 * {@code trainRegionDecode} with seeking to restart markers turned off: on files with markers
 * ({@code stoke pack}'s) the two differ by what seeking saves.
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
public class TransformBenchmark {
    @Param("")
    public String dataset;

    @Param({"NONE", "POWERS_OF_TWO", "ALL"})
    public String dctScaling;

    private Dataset images;
    private TransformSpec spec;
    private SampleTransform transform;
    private JpegDecoder decoder;
    /** The same decoder with seeking to restart markers turned off: today's sequential region decode. */
    private JpegDecoder sequential;

    private Resampler resampler;
    private Resampler trainResampler;
    private Arena arena;
    private BenchData.Jpegs files;
    private MemorySegment out;
    private int next;
    private final RandomResizedCrop crop = RandomResizedCrop.defaults();
    private final CounterRandom random = new CounterRandom();
    private final CropBox box = new CropBox();
    private final CropBox lastRow = new CropBox();

    @Setup(Level.Trial)
    public void setUp() {
        Path root = dataset.isEmpty() ? BenchData.defaultSample() : Path.of(dataset);
        images = ImageFolder.scan(root);
        spec = TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.valueOf(dctScaling));
        transform = new SampleTransform(images, spec);
        decoder = new JpegDecoder(spec);
        sequential = new JpegDecoder(spec);
        sequential.seekRestartMarkers(false);
        resampler = new Resampler(spec);
        trainResampler = new Resampler(spec.withTrain(spec.crop(), RandomResizedCrop.defaults()));
        arena = Arena.ofConfined();
        out = arena.allocate(spec.sampleBytes());
        // In memory for the decode-only benchmarks, so they time libjpeg-turbo alone.
        files = BenchData.load(root.toString());
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        transform.close();
        decoder.close();
        sequential.close();
        resampler.close();
        trainResampler.close();
        arena.close();
    }

    private int nextSample() {
        int i = next;
        next = i + 1 == images.size() ? 0 : i + 1;
        return i;
    }

    /** Read + decode + resize + crop, written into a slot-like buffer: one worker's work per sample. */
    @Benchmark
    public byte sample() {
        if (transform.apply(nextSample(), out, 0) != SampleStatus.OK) {
            throw new IllegalStateException("decode failed");
        }
        return out.get(JAVA_BYTE, 0);
    }

    /** libjpeg-turbo decoding an in-memory file into scratch (at the chosen DCT scale). */
    @Benchmark
    public int decode() {
        int i = nextSample();
        if (decoder.decode(files.segment(i), files.length(i)) != SampleStatus.OK) {
            throw new IllegalStateException("decode failed");
        }
        return decoder.decoded().width();
    }

    /** Decode then resize + crop, from memory: {@link #sample} without the file read. */
    @Benchmark
    public byte decodeResizeCrop() {
        int i = nextSample();
        if (decoder.decode(files.segment(i), files.length(i)) != SampleStatus.OK) {
            throw new IllegalStateException("decode failed");
        }
        resampler.resizeCenterCrop(
                decoder.decoded().pixels(),
                decoder.decoded().width(),
                decoder.decoded().height(),
                decoder.decoded().originalWidth(),
                decoder.decoded().originalHeight(),
                out,
                0);
        return out.get(JAVA_BYTE, 0);
    }

    /** The header of file {@code i}, then its box as the training transform draws it in epoch 0. */
    private void drawBox(int i) {
        if (decoder.readHeader(files.segment(i), files.length(i)) != SampleStatus.OK) {
            throw new IllegalStateException("header failed: " + decoder.message());
        }
        random.reset(0, 0, i);
        crop.draw(decoder.decoded().originalWidth(), decoder.decoded().originalHeight(), random, box);
    }

    /**
     * The training transform's decode: only the box (plus a small margin), from memory; in a file
     * with restart markers, only the segments that hold it.
     */
    @Benchmark
    public int trainRegionDecode() {
        int i = nextSample();
        drawBox(i);
        if (decoder.decodeBox(files.segment(i), files.length(i), box, spec.crop()) != SampleStatus.OK) {
            throw new IllegalStateException("decode failed: " + decoder.message());
        }
        return decoder.decoded().width();
    }

    /**
     * {@link #trainRegionDecode}, then the box resized to the crop (antialiased bilinear, flipped
     * where drawn so) into a sample: against it, the resize's share of a training sample.
     */
    @Benchmark
    public byte trainRegionDecodeResize() {
        int i = nextSample();
        drawBox(i);
        if (decoder.decodeBox(files.segment(i), files.length(i), box, spec.crop()) != SampleStatus.OK) {
            throw new IllegalStateException("decode failed: " + decoder.message());
        }
        trainResampler.resizedCrop(decoder.decoded(), box, out, 0);
        return out.get(JAVA_BYTE, 0);
    }

    /** {@link #trainRegionDecode} without seeking to restart markers: every row above the box is decoded. */
    @Benchmark
    public int trainRegionSequential() {
        int i = nextSample();
        drawBox(i);
        if (sequential.readHeader(files.segment(i), files.length(i)) != SampleStatus.OK
                || sequential.decodeBox(files.segment(i), files.length(i), box, spec.crop()) != SampleStatus.OK) {
            throw new IllegalStateException("decode failed: " + sequential.message());
        }
        return sequential.decoded().width();
    }

    /** The same boxes' images decoded whole at the scale that covers the box: the crop comes after. */
    @Benchmark
    public int trainWholeDecode() {
        int i = nextSample();
        drawBox(i);
        if (decoder.decodePixels(files.segment(i), files.length(i), Math.min(box.width, box.height), spec.crop())
                != SampleStatus.OK) {
            throw new IllegalStateException("decode failed: " + decoder.message());
        }
        return decoder.decoded().width();
    }

    /**
     * The same boxes' files decoded sequentially only up to the box's last row, one pixel wide: the
     * floor of a region decoder that cannot seek.
     */
    @Benchmark
    public int trainRegionFloor() {
        int i = nextSample();
        drawBox(i);
        lastRow.set(box.left, box.top + box.height - 1, 1, 1, false);
        if (sequential.readHeader(files.segment(i), files.length(i)) != SampleStatus.OK
                || sequential.decodeBox(
                                files.segment(i),
                                files.length(i),
                                lastRow,
                                Math.min(box.width, box.height),
                                spec.crop())
                        != SampleStatus.OK) {
            throw new IllegalStateException("decode failed: " + sequential.message());
        }
        return sequential.decoded().width();
    }
}
