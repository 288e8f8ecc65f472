package io.stoke.loader.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A tar's 512-byte header records (PAX headers included), walked by hand rather than by a tar
 * library, so that tests see the fields a library would hide: what makes two shards byte-identical.
 */
public final class TarHeaders {
    private TarHeaders() {}

    /** Every header record, in order, up to the end-of-archive records. */
    public static List<byte[]> of(byte[] tar) {
        List<byte[]> out = new ArrayList<>();
        int at = 0;
        while (at + 512 <= tar.length) {
            byte[] h = Arrays.copyOfRange(tar, at, at + 512);
            if (isZero(h)) {
                break;
            }
            out.add(h);
            long size = octal(h, 124, 12);
            at += 512 + (int) ((size + 511) / 512 * 512);
        }
        return out;
    }

    /** The type flag: '0' a file, 'x' a PAX extended header. */
    public static char type(byte[] header) {
        return (char) header[156];
    }

    /** mtime 0, uid and gid 0, no user or group names, mode 0644, in every header (PAX headers too). */
    public static void assertDeterministic(byte[] tar) {
        List<byte[]> hs = of(tar);
        assertFalse(hs.isEmpty(), "no tar header");
        for (byte[] h : hs) {
            String what = "header of '" + text(h, 0, 100) + "'";
            assertEquals(0, octal(h, 136, 12), "mtime, " + what);
            assertEquals(0, octal(h, 108, 8), "uid, " + what);
            assertEquals(0, octal(h, 116, 8), "gid, " + what);
            assertEquals(0644, octal(h, 100, 8) & 07777, "mode, " + what);
            assertEquals("", text(h, 265, 32), "user name, " + what);
            assertEquals("", text(h, 297, 32), "group name, " + what);
        }
    }

    private static boolean isZero(byte[] b) {
        for (byte x : b) {
            if (x != 0) {
                return false;
            }
        }
        return true;
    }

    private static long octal(byte[] h, int offset, int length) {
        String s = new String(h, offset, length, StandardCharsets.US_ASCII)
                .replace("\0", "")
                .trim();
        return s.isEmpty() ? 0 : Long.parseLong(s, 8);
    }

    private static String text(byte[] h, int offset, int length) {
        return new String(h, offset, length, StandardCharsets.UTF_8).replace("\0", "");
    }
}
