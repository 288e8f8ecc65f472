package io.stoke.loader.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * Expands shard patterns as WebDataset writes them: {@code train-{000000..000127}.tar} (a numeric
 * range, zero-padded to the wider bound's width when a bound has a leading zero, as Python's
 * {@code braceexpand}) and
 * {@code {a,b,c}} (alternatives). Several groups expand left to right, the last varying fastest;
 * groups do not nest. Text without braces is itself.
 */
public final class BracePattern {
    /** More names than this is a typo, not a dataset. */
    private static final int MAX_NAMES = 10_000_000;

    private BracePattern() {}

    public static boolean hasBraces(String pattern) {
        return pattern.indexOf('{') >= 0;
    }

    public static List<String> expand(String pattern) {
        List<String> out = new ArrayList<>();
        expand(pattern, 0, new StringBuilder(), out);
        return out;
    }

    private static void expand(String pattern, int from, StringBuilder prefix, List<String> out) {
        int open = pattern.indexOf('{', from);
        if (open < 0) {
            if (pattern.indexOf('}', from) >= 0) {
                throw new IllegalArgumentException("unbalanced '}' in " + pattern);
            }
            add(out, prefix + pattern.substring(from), pattern);
            return;
        }
        int close = pattern.indexOf('}', open);
        if (close < 0) {
            throw new IllegalArgumentException("unbalanced '{' in " + pattern);
        }
        String body = pattern.substring(open + 1, close);
        if (body.indexOf('{') >= 0) {
            throw new IllegalArgumentException("nested braces are not supported: " + pattern);
        }
        int mark = prefix.length();
        prefix.append(pattern, from, open);
        int base = prefix.length();
        for (String choice : choices(body, pattern)) {
            prefix.setLength(base);
            prefix.append(choice);
            expand(pattern, close + 1, prefix, out);
        }
        prefix.setLength(mark);
    }

    private static List<String> choices(String body, String pattern) {
        int dots = body.indexOf("..");
        if (dots >= 0 && body.indexOf(',') < 0) {
            String lo = body.substring(0, dots);
            String hi = body.substring(dots + 2);
            if (!isDigits(lo) || !isDigits(hi)) {
                throw new IllegalArgumentException(
                        "a range needs two non-negative integers, not {" + body + "} in " + pattern);
            }
            long a = Long.parseLong(lo);
            long b = Long.parseLong(hi);
            if (b < a) {
                throw new IllegalArgumentException("empty range {" + body + "} in " + pattern);
            }
            if (b - a >= MAX_NAMES) {
                throw new IllegalArgumentException(
                        "range {" + body + "} in " + pattern + " names over " + MAX_NAMES + " shards");
            }
            boolean padded = (lo.length() > 1 && lo.charAt(0) == '0') || (hi.length() > 1 && hi.charAt(0) == '0');
            int width = padded ? Math.max(lo.length(), hi.length()) : 0;
            List<String> out = new ArrayList<>((int) (b - a + 1));
            for (long v = a; v <= b; v++) {
                String digits = Long.toString(v);
                out.add(digits.length() < width ? "0".repeat(width - digits.length()) + digits : digits);
            }
            return out;
        }
        return List.of(body.split(",", -1));
    }

    private static boolean isDigits(String s) {
        if (s.isEmpty() || s.length() > 18) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }

    private static void add(List<String> out, String name, String pattern) {
        if (out.size() >= MAX_NAMES) {
            throw new IllegalArgumentException(pattern + " names over " + MAX_NAMES + " shards");
        }
        out.add(name);
    }
}
