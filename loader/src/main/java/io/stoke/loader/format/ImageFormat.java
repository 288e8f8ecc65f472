package io.stoke.loader.format;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * An image's format, told by its first bytes and never by its file name: a PNG named {@code .jpg}
 * is a PNG. Stoke decodes {@link #decoded() some}; the others are recognised so that an error can
 * name them ("TIFF is not decoded by Stoke") rather than call them garbage.
 */
public enum ImageFormat {
    JPEG("JPEG", true),
    PNG("PNG", true),
    WEBP("WebP", true),
    GIF("GIF", false),
    BMP("BMP", false),
    TIFF("TIFF", false),
    PNM("PNM (PBM/PGM/PPM)", false),
    AVIF("AVIF", false),
    HEIC("HEIC/HEIF", false),
    JPEG_XL("JPEG XL", false),
    JPEG_2000("JPEG 2000", false),
    /** No signature this enum knows. */
    UNKNOWN("unknown", false);

    /** What Stoke decodes, for messages. */
    public static final String DECODED = "JPEG, PNG and WebP";

    private final String title;
    private final boolean decoded;

    ImageFormat(String title, boolean decoded) {
        this.title = title;
        this.decoded = decoded;
    }

    /** The format's usual name, e.g. "WebP". */
    public String title() {
        return title;
    }

    /** Whether Stoke decodes it. */
    public boolean decoded() {
        return decoded;
    }

    /** The sentence for a recognised format that is not decoded. */
    public String notDecoded() {
        return title + " is not decoded by Stoke (it decodes " + DECODED + ")";
    }

    /** The format of {@code data[0, size)}, from its signature; {@link #UNKNOWN} when none matches. */
    public static ImageFormat sniff(MemorySegment data, long size) {
        if (size >= 3 && u(data, 0) == 0xFF && u(data, 1) == 0xD8) {
            return JPEG;
        }
        if (size >= 8 && u(data, 0) == 0x89 && ascii(data, 1, "PNG") && u(data, 4) == 0x0D && u(data, 5) == 0x0A) {
            return PNG;
        }
        if (size >= 12 && ascii(data, 0, "RIFF") && ascii(data, 8, "WEBP")) {
            return WEBP;
        }
        if (size >= 6 && (ascii(data, 0, "GIF87a") || ascii(data, 0, "GIF89a"))) {
            return GIF;
        }
        if (size >= 4
                && (ascii(data, 0, "II") && u(data, 2) == 42 && u(data, 3) == 0
                        || ascii(data, 0, "MM") && u(data, 2) == 0 && u(data, 3) == 42
                        || ascii(data, 0, "II") && u(data, 2) == 43 && u(data, 3) == 0)) {
            return TIFF;
        }
        if (size >= 2 && u(data, 0) == 0xFF && u(data, 1) == 0x0A) {
            return JPEG_XL; // a bare JPEG XL codestream
        }
        if (size >= 12 && u(data, 0) == 0 && u(data, 1) == 0 && u(data, 2) == 0 && u(data, 3) == 12) {
            if (ascii(data, 4, "JXL ")) {
                return JPEG_XL;
            }
            if (ascii(data, 4, "jP  ")) {
                return JPEG_2000;
            }
        }
        if (size >= 4 && u(data, 0) == 0xFF && u(data, 1) == 0x4F && u(data, 2) == 0xFF && u(data, 3) == 0x51) {
            return JPEG_2000; // a bare codestream
        }
        if (size >= 12 && ascii(data, 4, "ftyp")) {
            String brand = new String(
                    new char[] {(char) u(data, 8), (char) u(data, 9), (char) u(data, 10), (char) u(data, 11)});
            switch (brand) {
                case "avif", "avis" -> {
                    return AVIF;
                }
                case "heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "msf1" -> {
                    return HEIC;
                }
                default -> {}
            }
        }
        if (size >= 3 && ascii(data, 0, "BM")) {
            return BMP;
        }
        if (size >= 3 && u(data, 0) == 'P' && u(data, 1) >= '1' && u(data, 1) <= '7' && isSpace(u(data, 2))) {
            return PNM;
        }
        return UNKNOWN;
    }

    /** Why {@code data[0, size)} is no image, for an {@link #UNKNOWN} file: its size, or its first bytes. */
    public static String describeUnknown(MemorySegment data, long size) {
        if (size < 4) {
            return "only " + size + " bytes: too short for an image";
        }
        return String.format(
                Locale.ROOT,
                "no known image signature (first bytes %02x %02x %02x %02x; Stoke decodes %s)",
                u(data, 0),
                u(data, 1),
                u(data, 2),
                u(data, 3),
                DECODED);
    }

    private static int u(MemorySegment data, long i) {
        return data.get(JAVA_BYTE, i) & 0xFF;
    }

    private static boolean ascii(MemorySegment data, long at, String s) {
        for (int i = 0; i < s.length(); i++) {
            if (u(data, at + i) != s.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    private static boolean isSpace(int c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
    }
}
