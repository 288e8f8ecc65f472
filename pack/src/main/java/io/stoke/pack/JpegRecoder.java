package io.stoke.pack;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.LibC;
import io.stoke.ffm.StokeJpeg;
import io.stoke.ffm.TurboJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.FileReader;
import io.stoke.loader.transform.JpegDecoder;
import io.stoke.loader.transform.Resampler;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One pack worker's tools: reads a sample's file, decodes it whole with Stoke's decoder (no DCT
 * scaling, so the pixels are the full image's), resizes it with Stoke's resampler (PIL's
 * antialiased bilinear filter, torchvision's {@code Resize} geometry) and re-encodes it with
 * libjpeg-turbo, 4:2:0, at the pack's quality: with TurboJPEG, or, with restart markers, with
 * Stoke's encoder (libjpeg's, with tjCompress2's settings: the same pixels, plus a DRI segment and
 * the markers). An image already no larger than the target is
 * decoded only to check that it is whole, and kept byte for byte: never upscaled, never
 * re-encoded. One per thread; its buffers grow to the largest image seen.
 */
final class JpegRecoder implements AutoCloseable {
    private final PackOptions options;
    private final FileReader reader;
    private final JpegDecoder decoder;
    private final Resampler resampler;
    private final JpegCompressor compressor = new JpegCompressor();
    private Arena arena = Arena.ofConfined();
    private MemorySegment rgb = MemorySegment.NULL;
    private MemorySegment jpeg = MemorySegment.NULL;
    private final Arena outArena = Arena.ofConfined();
    private final MemorySegment jpegSize = outArena.allocate(JAVA_LONG);
    private final MemorySegment message = outArena.allocate(256);

    JpegRecoder(FileDataset index, PackOptions options, TransformSpec decoding) {
        this.options = options;
        this.reader = new FileReader(index, decoding.maxFileBytes());
        this.decoder = new JpegDecoder(decoding);
        this.resampler = new Resampler(decoding);
    }

    /** The decoder's settings for a pack: whole images (no DCT scaling), the default pixel and file budgets. */
    static TransformSpec decoding() {
        return TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE);
    }

    /** Fills {@code out} with sample {@code sample}'s JPEG, or the reason it has none. */
    void encode(int sample, EncodedSample out) {
        out.sourceBytes = 0;
        SampleStatus status = reader.read(sample);
        if (status != SampleStatus.OK) {
            out.fail(
                    status,
                    status == SampleStatus.READ_ERROR ? LibC.strerror(reader.lastErrno()) : status.description());
            return;
        }
        out.sourceBytes = reader.length();
        status = decoder.decode(reader.buffer(), reader.length());
        if (status != SampleStatus.OK) {
            out.fail(status, decoder.message());
            return;
        }
        int w = decoder.originalWidth();
        int h = decoder.originalHeight();
        if (decoder.width() != w || decoder.height() != h) {
            throw new IllegalStateException("decoded " + decoder.width() + "x" + decoder.height() + " of a " + w + "x"
                    + h + " image with DCT scaling off");
        }
        if (!options.resizes(w, h)) {
            out.set(reader.buffer(), reader.length(), true);
            return;
        }
        int tw = options.targetWidth(w, h);
        int th = options.targetHeight(w, h);
        long rgbBytes = 3L * tw * th;
        int restart = options.restartInterval(tw);
        // Each restart marker adds 2 bytes and at most one of padding, past TurboJPEG's bound.
        long maxJpeg = JpegCompressor.maxSize(tw, th, TurboJpeg.TJSAMP_420)
                + (restart == 0 ? 0 : 3L * ((tw + 15) / 16) * ((th + 15) / 16) / restart + 16);
        if (rgb.byteSize() < rgbBytes || jpeg.byteSize() < maxJpeg) {
            grow(Math.max(rgbBytes, rgb.byteSize()), Math.max(maxJpeg, jpeg.byteSize()));
        }
        resampler.resize(decoder.image(), w, h, tw, th, rgb, 0);
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
                resampler;
                compressor) {
            arena.close();
            outArena.close();
        }
    }
}
