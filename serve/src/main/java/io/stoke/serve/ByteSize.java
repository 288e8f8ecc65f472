package io.stoke.serve;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A size in bytes as people write it on a command line: {@code 1048576}, {@code 64M},
 * {@code 1G}, {@code 512KiB}. Suffixes are binary (K = 1024) and case does not matter.
 */
public final class ByteSize {
    private static final Pattern FORM = Pattern.compile("(\\d+)\\s*(?:([KMGT])(?:I?B)?|B)?");

    private ByteSize() {}

    /** The bytes {@code text} names; an error that quotes it when it names none. */
    public static long parse(String text) {
        Matcher m = FORM.matcher(text.strip().toUpperCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("'" + text
                    + "' is not a size: write bytes, or a number with K, M, G or T" + " (binary: 64M = 64 MiB)");
        }
        int shift = m.group(2) == null
                ? 0
                : switch (m.group(2)) {
                    case "K" -> 10;
                    case "M" -> 20;
                    case "G" -> 30;
                    default -> 40;
                };
        try {
            long n = Long.parseLong(m.group(1));
            if (n > (Long.MAX_VALUE >> shift)) {
                throw new NumberFormatException();
            }
            return n << shift;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + text + "' is too large a size");
        }
    }
}
