package io.stoke.loader.error;

/**
 * Why a sample has no pixels. Stored as an int32 per sample in the slot, so non-Java consumers
 * read the same codes. This enum is where the codes are defined: {@code native/stoke_ring.h}
 * ({@code STOKE_SAMPLE_<NAME>}) and the Python client ({@code stoke.ring.SAMPLE_<NAME>}) repeat
 * them, and {@code SampleStatusTablesTest} checks both copies against it, name by name. A code,
 * once given, never changes meaning: rings and shards written by older versions carry it.
 */
public enum SampleStatus {
    OK(0, "ok"),
    READ_ERROR(1, "cannot read file"),
    EMPTY_FILE(2, "file is empty"),
    /** No signature of any image format: named NOT_JPEG while JPEG was the only format. */
    NOT_IMAGE(3, "not an image file (no known signature)"),
    CORRUPT(4, "corrupt image data"),
    TRUNCATED(5, "truncated image (premature end of data)"),
    TOO_LARGE(6, "image exceeds the size budget"),
    UNSUPPORTED(7, "unsupported variant of its format"),
    /** A tar shard's sample with no {@code jpg}/{@code jpeg}/{@code npy} member (a lone {@code .cls}, say). */
    NO_IMAGE(8, "sample has no image member"),
    /** A sample without a {@code .cls} member in a dataset whose other samples have one. */
    NO_LABEL(9, "sample has no .cls label"),
    /** A {@code .cls} member that is not a non-negative ASCII integer. */
    BAD_LABEL(10, "label is not a non-negative integer"),
    /** A tar member whose header claims more bytes than its shard holds. */
    MEMBER_TRUNCATED(11, "member extends past the end of its shard"),
    /** A raw ({@code .npy}) sample whose header is not uint8 HWC of the requested output size. */
    BAD_RAW(12, "raw sample is not uint8 [crop, crop, 3] .npy"),
    /** An image of a format Stoke recognises but does not decode (TIFF, GIF, AVIF, ...; the message names it). */
    FORMAT_NOT_DECODED(13, "image format not decoded by Stoke");

    private final int code;
    private final String description;

    SampleStatus(int code, String description) {
        this.code = code;
        this.description = description;
    }

    public int code() {
        return code;
    }

    public String description() {
        return description;
    }

    /** Indexed by code, filled from the codes themselves: declaration order means nothing. */
    private static final SampleStatus[] BY_CODE = byCode();

    private static SampleStatus[] byCode() {
        int max = 0;
        for (SampleStatus s : values()) {
            max = Math.max(max, s.code);
        }
        SampleStatus[] table = new SampleStatus[max + 1];
        for (SampleStatus s : values()) {
            if (s.code < 0 || table[s.code] != null) {
                throw new ExceptionInInitializerError(
                        "sample status code " + s.code + " of " + s + " is negative or taken");
            }
            table[s.code] = s;
        }
        return table;
    }

    /**
     * The status whose code is {@code code}, as read from a slot's status array.
     *
     * @throws IllegalArgumentException for a code no status has (a slot written by something else)
     */
    public static SampleStatus of(int code) {
        SampleStatus s = code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
        if (s == null) {
            throw new IllegalArgumentException("unknown sample status " + code);
        }
        return s;
    }
}
