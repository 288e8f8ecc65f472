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
    UNSUPPORTED(7, "unsupported JPEG variant");

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
