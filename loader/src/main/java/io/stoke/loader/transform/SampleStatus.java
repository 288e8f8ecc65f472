package io.stoke.loader.transform;

/**
 * Why a sample has no pixels. Stored as an int32 per sample in the slot, so non-Java consumers
 * read the same codes ({@code native/stoke_ring.h} repeats them).
 */
public enum SampleStatus {
    OK(0, "ok"),
    READ_ERROR(1, "cannot read file"),
    EMPTY_FILE(2, "file is empty"),
    NOT_JPEG(3, "not a JPEG file"),
    CORRUPT(4, "corrupt JPEG data"),
    TRUNCATED(5, "truncated JPEG (premature end of data)"),
    TOO_LARGE(6, "image exceeds the size budget"),
    UNSUPPORTED(7, "unsupported JPEG variant"),
    /** A tar shard's sample with no {@code jpg}/{@code jpeg}/{@code npy} member (a lone {@code .cls}, say). */
    NO_IMAGE(8, "sample has no image member"),
    /** A sample without a {@code .cls} member in a dataset whose other samples have one. */
    NO_LABEL(9, "sample has no .cls label"),
    /** A {@code .cls} member that is not a non-negative ASCII integer. */
    BAD_LABEL(10, "label is not a non-negative integer"),
    /** A tar member whose header claims more bytes than its shard holds. */
    MEMBER_TRUNCATED(11, "member extends past the end of its shard"),
    /** A raw ({@code .npy}) sample whose header is not uint8 HWC of the requested output size. */
    BAD_RAW(12, "raw sample is not uint8 [crop, crop, 3] .npy");

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

    private static final SampleStatus[] BY_CODE = values();

    public static SampleStatus of(int code) {
        if (code < 0 || code >= BY_CODE.length) {
            throw new IllegalArgumentException("unknown sample status " + code);
        }
        return BY_CODE[code];
    }
}
