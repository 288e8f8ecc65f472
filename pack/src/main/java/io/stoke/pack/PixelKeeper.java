package io.stoke.pack;

import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.ImageFormat;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.transform.TransformSpec;
import java.util.Locale;

/**
 * {@code stoke pack --keep-pixels}'s worker tool: every image's decoded pixels as they are. A JPEG
 * is given restart markers losslessly ({@link RestartCopy}: its coefficients rewritten, each copy
 * decoded beside its original and compared), or kept byte for byte where it seeks already or
 * cannot be copied (the reason is counted); a PNG or WebP is stored as it is, under its own
 * extension. A file in no image format is refused, as every pack refuses it. One per thread.
 */
final class PixelKeeper implements SampleEncoder {
    private final SampleReader reader;
    private final RestartCopy copier;

    PixelKeeper(Dataset dataset, PackOptions options, TransformSpec decoding) {
        this.reader = dataset.reader(decoding.maxFileBytes());
        this.copier = new RestartCopy(options.restartMcus(), decoding, true);
    }

    @Override
    public void encode(int sample, EncodedSample out) {
        if (!SampleEncoder.read(reader, sample, out)) {
            return;
        }
        try {
            out.sourceBytes = reader.length();
            ImageFormat format = ImageFormat.sniff(reader.bytes(), reader.length());
            if (format == ImageFormat.JPEG) {
                RestartCopy.Outcome outcome = copier.copy(reader.bytes(), reader.length());
                if (outcome == RestartCopy.Outcome.KEPT) {
                    // Kept only if it decodes: a file that does not is bad input, as in every pack.
                    String kept = copier.reason();
                    SampleStatus whole = copier.decodes(reader.bytes(), reader.length());
                    if (whole != SampleStatus.OK) {
                        out.fail(whole, copier.reason());
                        return;
                    }
                    out.set(reader.bytes(), reader.length(), true);
                    out.kept = kept;
                } else if (outcome == RestartCopy.Outcome.COPIED) {
                    out.set(copier.bytes(), copier.length(), false);
                } else {
                    out.set(reader.bytes(), reader.length(), true);
                    out.kept = "has restart markers already";
                }
                out.copy = outcome;
            } else if (format == ImageFormat.UNKNOWN) {
                out.fail(SampleStatus.NOT_IMAGE, ImageFormat.describeUnknown(reader.bytes(), reader.length()));
            } else {
                out.set(reader.bytes(), reader.length(), true);
                out.extension = extension(format);
            }
        } finally {
            reader.done();
        }
    }

    /** The member extension of an image kept as it is: the one WebDataset readers know it by. */
    static String extension(ImageFormat format) {
        return switch (format) {
            case JPEG -> "jpg";
            case PNG -> "png";
            case WEBP -> "webp";
            case GIF -> "gif";
            case BMP -> "bmp";
            case TIFF -> "tiff";
            case PNM -> "ppm";
            case AVIF -> "avif";
            case HEIC -> "heic";
            case JPEG_XL -> "jxl";
            default -> format.name().toLowerCase(Locale.ROOT);
        };
    }

    @Override
    public void close() {
        copier.close();
    }
}
