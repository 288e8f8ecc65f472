package io.stoke.loader.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/** Writing tar shards in tests (the independent writers are Python's tarfile and stoke pack). */
public final class TestTars {
    private TestTars() {}

    /** Appends one regular-file member. */
    public static void member(TarArchiveOutputStream tar, String name, byte[] data) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(data.length);
        tar.putArchiveEntry(e);
        tar.write(data);
        tar.closeArchiveEntry();
    }

    /**
     * Writes shard {@code shard} of the remote tests' small labelled set: {@code perShard} samples
     * keyed {@code k/<shard>-<i>}, a JPEG of a size that differs by sample and shard, and a
     * {@code .cls} label {@code (shard * perShard + i) % 4}.
     *
     * @return the shard's size in bytes
     */
    public static long labelledShard(Path file, int shard, int perShard) throws IOException {
        try (OutputStream os = Files.newOutputStream(file);
                TarArchiveOutputStream tar = new TarArchiveOutputStream(os)) {
            for (int i = 0; i < perShard; i++) {
                String key = "k/" + shard + "-" + i;
                member(tar, key + ".jpg", TestImages.jpeg(48 + 3 * i, 40 + 5 * shard, 100L * shard + i));
                member(
                        tar,
                        key + ".cls",
                        Integer.toString((shard * perShard + i) % 4).getBytes(StandardCharsets.US_ASCII));
            }
        }
        return Files.size(file);
    }

    /**
     * A ustar header record written by hand, not by a tar library, so that it can declare what no
     * library writes: {@code type} ('0' a file, 'L' a GNU long name, 'K' a long link, 'x' a PAX
     * header, 'g' a global one) and any {@code size} up to 8 GiB.
     */
    public static byte[] header(String name, long size, char type) {
        byte[] h = new byte[512];
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        System.arraycopy(n, 0, h, 0, Math.min(100, n.length));
        ascii(h, 100, "0000644\0");
        ascii(h, 108, "0000000\0");
        ascii(h, 116, "0000000\0");
        ascii(h, 124, String.format("%011o\0", size));
        ascii(h, 136, "00000000000\0");
        h[156] = (byte) type;
        ascii(h, 257, "ustar\0" + "00");
        ascii(h, 148, "        ");
        int sum = 0;
        for (byte b : h) {
            sum += b & 0xFF;
        }
        ascii(h, 148, String.format("%06o\0 ", sum));
        return h;
    }

    /** A member written by hand: its header, {@code data}, and the padding to 512 bytes. */
    public static void rawMember(ByteArrayOutputStream out, String name, char type, byte[] data) {
        out.writeBytes(header(name, data.length, type));
        out.writeBytes(data);
        out.writeBytes(new byte[(512 - data.length % 512) % 512]);
    }

    /** PAX records ({@code "LENGTH key=value\n"}) from {@code "key=value"} strings. */
    public static byte[] pax(String... records) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (String r : records) {
            int body = r.getBytes(StandardCharsets.UTF_8).length + 2; // the space and the newline
            int len = body + Integer.toString(body).length();
            if (Integer.toString(len).length() != Integer.toString(body).length()) {
                len++;
            }
            out.writeBytes((len + " " + r + "\n").getBytes(StandardCharsets.UTF_8));
        }
        return out.toByteArray();
    }

    /**
     * Writes {@code before}, then a header of {@code type} that declares {@code declared} bytes, then
     * grows the file to hold them without writing them: a sparse file, a few KB on disk, that reads
     * as {@code declared} zero bytes (Commons Compress would read them all onto the heap).
     */
    public static void bomb(Path file, byte[] before, char type, long declared) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.write(before);
            f.write(header(type == 'x' || type == 'g' ? "PaxHeader" : "././@LongLink", declared, type));
            f.setLength(before.length + 512 + declared + 1024);
        }
    }

    private static void ascii(byte[] h, int at, String s) {
        byte[] b = s.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(b, 0, h, at, b.length);
    }
}
