package io.stoke.loader.internal;

import java.util.Locale;

/**
 * The most Stoke reads onto the heap for a length that a file declares: a tar shard's extension
 * headers, a dataset's shard catalog ({@code index.json}) and Parquet catalog ({@code parquet-index.json}), a Parquet footer. The
 * length is checked before anything is allocated, so that a damaged or hostile file (an 8 KB sparse
 * file that declares a 512 MiB long name) is refused in a sentence naming it instead of ending the
 * process with {@link OutOfMemoryError}. Each limit is far above what a real dataset needs.
 */
public final class ReadLimits {
    /** A GNU long name or long link name (tar type {@code L} or {@code K}): Linux paths end at 4 KiB. */
    public static final long TAR_LONG_NAME = 64 << 10;

    /** A PAX extended header (tar type {@code x}, {@code X} or {@code g}): a few records a member. */
    public static final long TAR_PAX_HEADER = 1 << 20;

    /**
     * Records in a shard's global PAX headers (tar type {@code g}), all together: each is copied into
     * every member that follows, so a few thousand would multiply by the members.
     */
    public static final int TAR_GLOBAL_PAX_RECORDS = 64;

    /** Extension headers before one member (tar's PAX, long name and long link: three in practice). */
    public static final int TAR_EXTENSIONS_PER_MEMBER = 16;

    /**
     * A shard catalog ({@code index.json}) or Parquet catalog ({@code parquet-index.json}), or another
     * file read whole. A shard's line is about 100 bytes, so this is some 600,000 shards, and what
     * the parser keeps of them fits the CLI's 384 MiB heap.
     */
    public static final long CATALOG_FILE = 64L << 20;

    /** A string in a shard catalog (a URL, an ETag); a Parquet catalog's footers are bounded by the file's limit. */
    public static final int CATALOG_STRING = 1 << 20;

    /**
     * A Parquet file's footer (its schema and row groups), by the length the file declares for it. A
     * footer in a Parquet catalog is bounded by {@link #CATALOG_FILE}, the same size.
     */
    public static final long PARQUET_FOOTER = 64L << 20;

    /**
     * A Delta Lake deletion vector, by the size the table's log declares for it: a roaring bitmap of
     * the rows deleted from one data file, some 2 bytes a row at most, so 32 million rows.
     */
    public static final long DELETION_VECTOR = 64L << 20;

    private ReadLimits() {}

    /**
     * {@code bytes} in words: "512 MiB", "64 KiB", "1.5 GiB", for the sentences that name a length
     * and its limit; exactly ("65537 bytes") where one decimal would round it to a whole number of
     * units, so that a length just over a limit never reads as the limit.
     */
    public static String bytes(long bytes) {
        String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        int unit = -1;
        double value = bytes;
        while (value >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        long whole = (long) value;
        if (unit >= 0 && whole == value) {
            return whole + " " + units[unit];
        }
        String rounded = String.format(Locale.ROOT, "%.1f", value);
        if (unit < 0 || rounded.endsWith(".0")) {
            return bytes + (bytes == 1 ? " byte" : " bytes");
        }
        return rounded + " " + units[unit];
    }

    /**
     * Throws {@link IllegalArgumentException} "{@code file} is N, more than the M limit of a file
     * Stoke reads whole (a catalog or a marker)" when {@code size} exceeds {@code limit}: such a file
     * is checked by its size before it is read.
     */
    public static void checkSize(String file, long size, long limit) {
        if (size > limit) {
            throw new IllegalArgumentException(file + " is " + bytes(size) + ", more than the " + bytes(limit)
                    + " limit of a file Stoke reads whole (a catalog or a marker)");
        }
    }

    /** "declares {@code what} of N, more than the M limit" ({@code what}: "a GNU long name"). */
    public static String exceeds(String what, long declared, long limit) {
        return "declares " + what + " of " + bytes(declared) + ", more than the " + bytes(limit) + " limit";
    }
}
