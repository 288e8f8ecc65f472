package io.stoke.pack;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.StokeImage;
import io.stoke.ffm.StokeJpeg;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.decode.JpegDecoder;
import io.stoke.loader.decode.WholeImageDecoder;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One pack worker's tools: reads a sample's bytes (a folder's file, or a Parquet row's image where
 * it lies in its loaded row group: the dataset's {@link SampleReader}), decodes it whole (a JPEG with no DCT scaling, a
 * PNG or WebP through {@link WholeImageDecoder}), resizes it with Stoke's resampler (PIL's
 * antialiased bilinear filter, torchvision's {@code Resize} geometry) and re-encodes it with
 * libjpeg-turbo, 4:2:0, at the pack's quality: with TurboJPEG, or, with restart markers, with
 * Stoke's encoder (libjpeg's, with tjCompress2's settings: the same pixels, plus a DRI segment and
 * the markers); or, for {@code --format png}, as a lossless 8-bit RGB PNG with libspng. A file of
 * the pack's own format already no larger than the target is decoded only to check that it is
 * whole, and kept byte for byte: never upscaled, never re-encoded; any other image that small is
 * encoded at its own size. One per thread; its buffers grow to the largest image seen.
 */
final class JpegRecoder implements SampleEncoder {
    private final PackOptions options;
    private final SampleReader reader;
    private final JpegDecoder decoder;
    private final WholeImageDecoder whole;
    private final Resampler resampler;
    private final JpegCompressor compressor = new JpegCompressor();
    private Arena arena = Arena.ofConfined();
    private MemorySegment rgb = MemorySegment.NULL;
    private MemorySegment jpeg = MemorySegment.NULL;
    private final Arena outArena = Arena.ofConfined();
    private final MemorySegment jpegSize = outArena.allocate(JAVA_LONG);
    private final MemorySegment message = outArena.allocate(256);

    JpegRecoder(Dataset dataset, PackOptions options, TransformSpec decoding) {
        this.options = options;
        this.reader = dataset.reader(decoding.maxFileBytes());
        this.decoder = new JpegDecoder(decoding);
        this.whole = new WholeImageDecoder(decoding);
        this.resampler = new Resampler(decoding);
    }

    /** The decoder's settings for a pack: whole images (no DCT scaling), the default pixel and file budgets. */
    static TransformSpec decoding() {
        return TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE);
    }

    /** Fills {@code out} with sample {@code sample}'s JPEG, or the reason it has none. */
    @Override
    public void encode(int sample, EncodedSample out) {
        if (!SampleEncoder.read(reader, sample, out)) {
            return;
        }
        try {
            encodeRead(out);
        } finally {
            reader.done(); // a Parquet row group is held only while its image is decoded
        }
    }

    /** {@link #encode} of the bytes just read; {@code out} copies what it keeps of them. */
    private void encodeRead(EncodedSample out) {
        out.sourceBytes = reader.length();
        // By content. A file of the pack's own format that needs no resize is kept byte for byte
        // (only decoded, to check it is whole); any other is decoded and encoded in the pack's format,
        // at its own size when it needs no resize.
        MemorySegment bytes = reader.bytes();
        long length = reader.length();
        ImageFormat format = ImageFormat.sniff(bytes, length);
        boolean png = options.format() == PackOptions.Format.PNG;
        int w;
        int h;
        MemorySegment image;
        if (format == ImageFormat.JPEG) {
            SampleStatus status = decoder.decode(bytes, length);
            if (status != SampleStatus.OK) {
                out.fail(status, decoder.message());
                return;
            }
            w = decoder.decoded().originalWidth();
            h = decoder.decoded().originalHeight();
            if (decoder.decoded().width() != w || decoder.decoded().height() != h) {
                throw new IllegalStateException("decoded " + decoder.decoded().width() + "x"
                        + decoder.decoded().height() + " of a " + w + "x" + h + " image with DCT scaling off");
            }
            if (!png && !options.resizes(w, h)) {
                out.set(bytes, length, true);
                return;
            }
            image = decoder.decoded().pixels();
        } else if (format.decoded()) {
            SampleStatus status = whole.readHeader(format, bytes, length);
            if (status == SampleStatus.OK) {
                status = whole.decode(bytes, length);
            }
            if (status != SampleStatus.OK) {
                out.fail(status, whole.message());
                return;
            }
            w = whole.decoded().originalWidth();
            h = whole.decoded().originalHeight();
            if (png && format == ImageFormat.PNG && !options.resizes(w, h)) {
                out.set(bytes, length, true);
                return;
            }
            image = whole.decoded().pixels();
        } else {
            out.fail(
                    format == ImageFormat.UNKNOWN ? SampleStatus.NOT_IMAGE : SampleStatus.FORMAT_NOT_DECODED,
                    format == ImageFormat.UNKNOWN ? ImageFormat.describeUnknown(bytes, length) : format.notDecoded());
            return;
        }
        boolean resize = options.resizes(w, h);
        int tw = resize ? options.targetWidth(w, h) : w;
        int th = resize ? options.targetHeight(w, h) : h;
        long rgbBytes = 3L * tw * th;
        if (png) {
            // Raw rows with a filter byte each, and deflate's worst-case growth on incompressible data.
            long maxPng = rgbBytes + th + rgbBytes / 1000 + 4096;
            if (rgb.byteSize() < rgbBytes || jpeg.byteSize() < maxPng) {
                grow(Math.max(rgbBytes, rgb.byteSize()), Math.max(maxPng, jpeg.byteSize()));
            }
            resampler.resize(image, w, h, tw, th, rgb, 0);
            int rc = StokeImage.pngEncodeRgb(
                    rgb, tw, th, jpeg, jpeg.byteSize(), jpegSize, message, (int) message.byteSize());
            if (rc != StokeImage.OK) {
                throw new IllegalStateException("encoding a " + tw + "x" + th + " PNG failed: " + message.getString(0));
            }
            out.set(jpeg, jpegSize.get(JAVA_LONG, 0), false);
            return;
        }
        int restart = options.restartInterval(tw);
        // Each restart marker adds 2 bytes and at most one of padding, past TurboJPEG's bound.
        long maxJpeg = JpegCompressor.maxSize(tw, th, TurboJpeg.TJSAMP_420)
                + (restart == 0 ? 0 : 3L * ((tw + 15) / 16) * ((th + 15) / 16) / restart + 16);
        if (rgb.byteSize() < rgbBytes || jpeg.byteSize() < maxJpeg) {
            grow(Math.max(rgbBytes, rgb.byteSize()), Math.max(maxJpeg, jpeg.byteSize()));
        }
        resampler.resize(image, w, h, tw, th, rgb, 0);
        long n;
        if (restart == 0) {
            n = compressor.compress(
                    rgb, tw, 3 * tw, th, TurboJpeg.TJPF_RGB, TurboJpeg.TJSAMP_420, options.quality(), 0, jpeg);
        } else {
            int rc = StokeJpeg.encodeRgb(
                    rgb,
                    tw,
                    3 * tw,
                    th,
                    StokeJpeg.SAMP_420,
                    options.quality(),
                    restart,
                    jpeg,
                    jpeg.byteSize(),
                    jpegSize,
                    message,
                    (int) message.byteSize());
            if (rc != StokeJpeg.OK) {
                throw new IllegalStateException(
                        "encoding a " + tw + "x" + th + " image failed: " + message.getString(0));
            }
            n = jpegSize.get(JAVA_LONG, 0);
        }
        out.set(jpeg, n, false);
    }

    private void grow(long rgbBytes, long jpegBytes) {
        Arena next = Arena.ofConfined();
        MemorySegment r = next.allocate(rgbBytes, 64);
        MemorySegment j = next.allocate(jpegBytes, 64);
        arena.close();
        arena = next;
        rgb = r;
        jpeg = j;
    }

    @Override
    public void close() {
        try (reader;
                decoder;
                whole;
                resampler;
                compressor) {
            arena.close();
            outArena.close();
        }
    }
}
