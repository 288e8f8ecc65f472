package io.stoke.loader.decode;

import io.stoke.ffm.StokeJpeg;
import io.stoke.loader.augment.AugmentPolicy;
import io.stoke.loader.augment.AugmentStage;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import io.stoke.loader.resample.DecodedImage;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import io.stoke.loader.transform.CounterRandom;
import io.stoke.loader.transform.CropBox;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Read, decode, resize and crop one sample into its place in a slot. One per worker thread; it
 * owns that thread's reader (a file buffer, or a view of a tar shard), {@code tjhandle} and
 * scratch images. The format is told by the sample's first bytes: JPEG goes through libjpeg-turbo
 * (DCT scaling, region decoding), PNG and WebP through {@link WholeImageDecoder}. A raw sample of a packed shard that already has the output's size is only
 * copied (or normalised): decode and resize would be identities. The training transform's
 * crop and flip are drawn from the header's size before anything is decoded, from a generator
 * keyed by (seed, epoch, dataset index) alone.
 */
public final class SampleTransform implements AutoCloseable {
    private final SampleReader reader;
    /** The reader, where it wants some of its reads copied as they are decoded (a restart cache's); else null. */
    private final CopyOnDecode copyOnDecode;

    private final Shards shards;
    private final NpyImage npy;
    private final JpegDecoder decoder;
    private final WholeImageDecoder whole;
    private final Resampler resampler;
    private final Dataset dataset;
    private final RandomResizedCrop train;
    private final boolean squash;
    private final long seed;
    private final int resize;
    private final boolean evalRegion;
    private final CounterRandom random = new CounterRandom();
    private final CropBox box = new CropBox();
    /** The auto-augment policy's stage, or null: the crop goes through its scratch images first. */
    private final AugmentStage augment;

    private final ErasingStage erasing;
    private final int crop;
    private long lastSourceBytes;
    private String message;

    /** The evaluation transform, or the training one with seed 0. */
    public SampleTransform(Dataset dataset, TransformSpec spec) {
        this(dataset, spec, 0);
    }

    /** @param seed keys the training transform's random crops and flips (with the epoch and index) */
    public SampleTransform(Dataset dataset, TransformSpec spec, long seed) {
        this(dataset, spec, seed, dataset.reader(spec.maxFileBytes()));
    }

    /** With {@code reader} for {@code dataset}'s bytes (a restart cache's, say), which this transform then owns. */
    public SampleTransform(Dataset dataset, TransformSpec spec, long seed, SampleReader reader) {
        this.dataset = dataset;
        this.train = spec.train();
        this.squash = spec.squash();
        this.seed = seed;
        this.resize = spec.resize();
        this.evalRegion = spec.evalRegion();
        this.crop = spec.crop();
        this.shards = dataset instanceof ShardDataset s ? s.shards() : null; // raw .npy samples are in shards only
        this.reader = reader;
        this.copyOnDecode = reader instanceof CopyOnDecode c ? c : null;
        this.npy = new NpyImage(spec.crop());
        this.decoder = new JpegDecoder(spec);
        this.whole = new WholeImageDecoder(spec);
        this.resampler = new Resampler(spec);
        this.augment = spec.augment() == null
                ? null
                : new AugmentStage(AugmentPolicy.parse(spec.augment()), spec.crop(), spec.crop());
        this.erasing = spec.erasing() == null
                ? null
                : new ErasingStage(
                        spec.erasing(),
                        spec.crop(),
                        seed,
                        spec.output() == TransformSpec.Output.FLOAT32_CHW,
                        spec.mean(),
                        spec.std());
    }

    /** {@link #apply(int, long, MemorySegment, long)} in epoch 0. */
    public SampleStatus apply(int sample, MemorySegment dst, long offset) {
        return apply(sample, 0, dst, offset);
    }

    /**
     * Writes sample {@code sample}'s pixels, as transformed in epoch {@code epoch}, at
     * {@code dst[offset, offset + sampleBytes)}. On any status but {@link SampleStatus#OK}
     * nothing has been written there.
     */
    public SampleStatus apply(int sample, long epoch, MemorySegment dst, long offset) {
        try {
            SampleStatus status = transform(sample, epoch, dst, offset);
            if (status == SampleStatus.OK && erasing != null) {
                erasing.apply(sample, epoch, dst, offset);
            }
            return status;
        } finally {
            reader.done();
        }
    }

    /**
     * The rest of the transform for sample {@code sample}, {@code width x height} as its header
     * says, whose crop another stage decoded and resized (the GPU decode stage):
     * {@code rgb[rgbOffset]} holds it as {@link Resampler#resizedCropRgb} gives it (the crop's side
     * squared, 3 bytes a pixel, flipped where drawn). From there as {@link #apply}: the training
     * transform's box and flip drawn again from (seed, epoch, sample), so that the policy's draws
     * follow them on the same stream; the policy; the output's conversion at {@code dst[offset]};
     * random erasing. Reads nothing and decodes nothing.
     */
    public void finish(
            int sample,
            long epoch,
            int width,
            int height,
            MemorySegment rgb,
            long rgbOffset,
            MemorySegment dst,
            long offset) {
        if (train != null && augment != null) {
            random.reset(seed, epoch, sample);
            train.draw(width, height, random, box);
            MemorySegment.copy(rgb, rgbOffset, augment.input(), 0, 3L * crop * crop);
            resampler.writeRgb(augment.apply(random), 0, dst, offset);
        } else {
            resampler.writeRgb(rgb, rgbOffset, dst, offset);
        }
        if (erasing != null) {
            erasing.apply(sample, epoch, dst, offset);
        }
    }

    private SampleStatus transform(int sample, long epoch, MemorySegment dst, long offset) {
        message = null;
        lastSourceBytes = 0;
        SampleStatus status = reader.read(sample);
        if (status != SampleStatus.OK) {
            message = reader.message() != null ? reader.message() : status.description();
            return status;
        }
        lastSourceBytes = reader.length();
        if (shards != null && shards.format(sample) == Shards.NPY) {
            return applyRaw(dst, offset);
        }
        // By content, never by name: a PNG named .jpg is a PNG.
        ImageFormat format = ImageFormat.sniff(reader.bytes(), reader.length());
        if (format != ImageFormat.JPEG) {
            return applyWhole(format, sample, epoch, dst, offset);
        }
        if (train == null) {
            return applyEval(sample, dst, offset);
        }
        status = decoder.readHeader(reader.bytes(), reader.length());
        if (status == SampleStatus.OK) {
            random.reset(seed, epoch, sample);
            DecodedImage header = decoder.decoded();
            train.draw(header.originalWidth(), header.originalHeight(), random, box);
            status = decodeBox(box, Math.min(box.width, box.height), resampler.outputSide());
            noteFallBack(sample, status);
        }
        if (status != SampleStatus.OK) {
            message = decoder.message();
            return status;
        }
        writeTrain(decoder.decoded(), dst, offset);
        return SampleStatus.OK;
    }

    /** The JPEG just read, decoded in {@code box}; copied in the same pass where the reader wants it. */
    private SampleStatus decodeBox(CropBox box, int covered, int target) {
        RestartCopy copier = copyOnDecode != null ? copyOnDecode.wantedCopy() : null;
        SampleStatus status = decoder.decodeBox(reader.bytes(), reader.length(), box, covered, target, copier);
        if (copier != null) {
            copyOnDecode.decoded(decoder.copied());
        }
        return status;
    }

    /**
     * The evaluation transform. Only the region of the image that the centre crop reads is decoded
     * (the rows below it not at all); an image that already has the resize's size (a packed
     * dataset) is only cropped. {@link TransformSpec#evalRegion()} false decodes whole images.
     */
    private SampleStatus applyEval(int sample, MemorySegment dst, long offset) {
        SampleStatus status = decoder.readHeader(reader.bytes(), reader.length());
        if (status != SampleStatus.OK) {
            message = decoder.message();
            return status;
        }
        int w = decoder.decoded().originalWidth();
        int h = decoder.decoded().originalHeight();
        int covered = Math.min(w, h);
        if (evalRegion) {
            // Only the part of the image that the centre crop's filter reads: no IDCT or colour
            // conversion for the columns outside it, and nothing at all below it.
            resampler.evalSourceBox(
                    w, h, decoder.scaledWidthAt(covered, resize), decoder.scaledHeightAt(covered, resize), box);
            status = decodeBox(box, covered, resize);
            noteFallBack(sample, status);
        } else {
            status = decoder.decodePixels(reader.bytes(), reader.length(), covered, resize);
        }
        if (status != SampleStatus.OK) {
            message = decoder.message();
            return status;
        }
        resampler.resizeCenterCrop(decoder.decoded(), dst, offset);
        return SampleStatus.OK;
    }

    /**
     * A sample that is not a JPEG: a PNG or WebP is decoded at full scale (a WebP under the training
     * transform only around its box), then resized and cropped as a JPEG decoded at full scale is, so
     * its pixels are torchvision's; any other format is named.
     */
    private SampleStatus applyWhole(ImageFormat format, int sample, long epoch, MemorySegment dst, long offset) {
        if (format == ImageFormat.UNKNOWN) {
            message = ImageFormat.describeUnknown(reader.bytes(), reader.length());
            return SampleStatus.NOT_IMAGE;
        }
        if (!format.decoded()) {
            message = format.notDecoded();
            return SampleStatus.FORMAT_NOT_DECODED;
        }
        SampleStatus status = whole.readHeader(format, reader.bytes(), reader.length());
        if (status != SampleStatus.OK) {
            message = whole.message();
            return status;
        }
        int w = whole.decoded().originalWidth();
        int h = whole.decoded().originalHeight();
        if (train == null) {
            status = whole.decode(reader.bytes(), reader.length());
        } else {
            // The box is drawn from the header's size, as for a JPEG; a WebP then decodes only around it.
            random.reset(seed, epoch, sample);
            train.draw(w, h, random, box);
            status = whole.decodeBox(reader.bytes(), reader.length(), box);
        }
        if (status != SampleStatus.OK) {
            message = whole.message();
            return status;
        }
        if (train == null) {
            resampler.resizeCenterCrop(whole.decoded(), dst, offset);
        } else {
            writeTrain(whole.decoded(), dst, offset);
        }
        return SampleStatus.OK;
    }

    /**
     * The training transform's crop, resized and flipped, at {@code dst[offset]}; with a policy,
     * as torchvision orders them: the crop into the stage's RGB scratch, the policy's ops (drawn
     * from the sample's stream after the crop's and the flip's draws), then stored as the output.
     */
    private void writeTrain(DecodedImage image, MemorySegment dst, long offset) {
        if (augment == null) {
            resampler.resizedCrop(image, box, dst, offset);
            return;
        }
        resampler.resizedCropRgb(image, box, augment.input(), 0);
        resampler.writeRgb(augment.apply(random), 0, dst, offset);
    }

    /**
     * How the last JPEG sample's region was decoded: {@code StokeJpeg.PATH_SEEKED} from the restart
     * segments that hold it, otherwise sequentially ({@link JpegDecoder#regionPath()}).
     */
    public int regionPath() {
        return decoder.regionPath();
    }

    /** Restart markers that could not be trusted, in any sample of this process: said once, loudly. */
    private static final AtomicBoolean FELL_BACK = new AtomicBoolean();

    private void noteFallBack(int sample, SampleStatus status) {
        if (status == SampleStatus.OK
                && decoder.regionPath() == StokeJpeg.PATH_FELL_BACK
                && FELL_BACK.compareAndSet(false, true)) {
            System.err.println("stoke: WARNING: " + dataset.name(sample) + ": its restart markers were not used ("
                    + decoder.message() + "); decoded without them, as a file without markers is (said once for"
                    + " all files)");
        }
    }

    private SampleStatus applyRaw(MemorySegment dst, long offset) {
        if (train != null) {
            message = "raw samples hold the evaluation transform's output; the training transform needs JPEG shards";
            return SampleStatus.BAD_RAW;
        }
        if (squash) {
            message = "raw samples hold stoke pack's evaluation transform (the shorter side resized); --transform"
                    + " squash needs JPEG shards or the original files";
            return SampleStatus.BAD_RAW;
        }
        if (!npy.check(reader.bytes(), reader.length())) {
            message = npy.message();
            return SampleStatus.BAD_RAW;
        }
        resampler.writeRgb(reader.bytes(), npy.pixelsOffset(), dst, offset);
        return SampleStatus.OK;
    }

    /** Compressed bytes read for the last sample. */
    public long lastSourceBytes() {
        return lastSourceBytes;
    }

    /** Why the last sample failed, in words (allocates only on failure). */
    public String message() {
        return message;
    }

    public Dataset dataset() {
        return dataset;
    }

    @Override
    public void close() {
        reader.close();
        decoder.close();
        whole.close();
        resampler.close();
        if (augment != null) {
            augment.close();
        }
    }
}
