package io.stoke.remote;

/**
 * A {@code Content-Range} header, {@code bytes FIRST-LAST/TOTAL} (RFC 9110 14.4), as a 206 or
 * 416 answer carries it. {@code first} and {@code last} are -1 for the unsatisfied form
 * {@code bytes *}{@code /TOTAL}; {@code total} is -1 when the server does not know it ({@code /*}).
 */
record ContentRange(long first, long last, long total) {

    /** Parses {@code header}; null when it is not of that form. */
    static ContentRange parse(String header) {
        if (header == null) {
            return null;
        }
        String h = header.strip();
        if (!h.regionMatches(true, 0, "bytes ", 0, 6)) {
            return null;
        }
        h = h.substring(6).strip();
        int slash = h.indexOf('/');
        if (slash < 0) {
            return null;
        }
        try {
            String range = h.substring(0, slash).strip();
            String size = h.substring(slash + 1).strip();
            long total = size.equals("*") ? -1 : Long.parseLong(size);
            if (range.equals("*")) {
                return total < 0 ? null : new ContentRange(-1, -1, total);
            }
            int dash = range.indexOf('-');
            if (dash <= 0) {
                return null;
            }
            long first = Long.parseLong(range.substring(0, dash));
            long last = Long.parseLong(range.substring(dash + 1));
            if (first < 0 || last < first || (total >= 0 && last >= total)) {
                return null;
            }
            return new ContentRange(first, last, total);
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
