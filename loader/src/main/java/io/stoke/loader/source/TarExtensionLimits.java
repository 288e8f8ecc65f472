package io.stoke.loader.source;

import io.stoke.loader.internal.ReadLimits;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.function.LongConsumer;
import org.apache.commons.compress.archivers.tar.TarUtils;

/**
 * Walks a shard's tar headers as Commons Compress will, before it does, and finds the first
 * extension header whose declared length breaks a {@link ReadLimits} limit. Commons Compress reads
 * a long name, long link or PAX header whole onto the heap at whatever length its header declares
 * (bounded only by the file's size, and a sparse file is large for free), and offers no limit of
 * its own; so the scanner hands it only the bytes before the member that such a header belongs to
 * (before the first of that member's extension headers), and names the header as the shard's
 * damage.
 *
 * <p>The walk follows Commons Compress 1.28's {@code TarFile} step for step: a header's size field
 * (octal or base-256), a PAX {@code size} for the member after it, padding to 512 bytes except after
 * a directory. Where its steps would depend on more than that (two PAX headers for one member, a
 * global PAX header that sets a size or path, sparse members, a directory that holds data), the
 * walk stops and names it too, so that Commons Compress never reaches a header the walk has not
 * seen. Where the walk meets ordinary damage it stops one header past it: Commons Compress then
 * describes the damage as before, and can read nothing further. The walk copies a header's 12-byte
 * size field onto the heap, and nothing else.
 */
final class TarExtensionLimits {
    private static final int BLOCK = 512;
    private static final int NAME = 0;
    private static final int NAME_LENGTH = 100;
    private static final int SIZE = 124;
    private static final int SIZE_LENGTH = 12;
    private static final int TYPE = 156;

    private TarExtensionLimits() {}

    /**
     * What of a shard may be handed to Commons Compress: its first {@code readable} bytes; when that
     * is less than the whole shard, {@code problem} says why. Cut at a limit, the bytes end where a
     * member's headers begin, so Commons Compress reads them as a whole tar and any damage it names
     * lies before the cut; stopped at damage, they end one header past it, which Commons Compress
     * names in its words.
     */
    record Verdict(long readable, String problem) {
        static Verdict whole(MemorySegment shard) {
            return new Verdict(shard.byteSize(), null);
        }
    }

    static Verdict check(MemorySegment shard) {
        return check(shard, dataOffset -> {});
    }

    /**
     * {@link #check(MemorySegment)}, passing {@code members} the data offset of every member the
     * walk steps over (extension headers aside), as Commons Compress's entries give theirs: how a
     * test sees that the two walks agree.
     */
    static Verdict check(MemorySegment shard, LongConsumer members) {
        long n = shard.byteSize();
        long pos = 0;
        long member = 0; // where the member being read begins: its first extension header
        int globalRecords = 0;
        int extensions = 0; // before the member being read
        int paxHeaders = 0;
        long paxSize = -1; // a PAX header's size for the member that follows
        boolean slashName = false; // a long name or PAX path ending in '/': the member may be a directory
        while (n - pos >= BLOCK) {
            if (isZero(shard, pos)) {
                return Verdict.whole(shard); // the end-of-archive block: Commons Compress stops here
            }
            long size;
            try {
                size = TarUtils.parseOctalOrBinary(header(shard, pos, SIZE, SIZE_LENGTH), 0, SIZE_LENGTH);
            } catch (IllegalArgumentException e) {
                size = -1;
            }
            if (size < 0) {
                return damage(pos, "a header at byte " + pos + " has no readable size");
            }
            long data = pos + BLOCK;
            byte type = shard.get(ValueLayout.JAVA_BYTE, pos + TYPE);
            boolean directory;
            switch (type) {
                case 'L', 'K' -> {
                    String what = type == 'L' ? "a GNU long name" : "a GNU long link name";
                    if (size > ReadLimits.TAR_LONG_NAME) {
                        return cut(member, pos, ReadLimits.exceeds(what, size, ReadLimits.TAR_LONG_NAME));
                    }
                    if (size > n - data) {
                        return Verdict.whole(shard); // truncated: Commons Compress says so
                    }
                    slashName |= type == 'L' && endsInSlash(shard, data, size);
                    directory = nameFieldEndsInSlash(shard, pos);
                    extensions++;
                }
                case 'x', 'X', 'g' -> {
                    boolean global = type == 'g';
                    String what = global ? "a global PAX header" : "a PAX header";
                    if (size > ReadLimits.TAR_PAX_HEADER) {
                        return cut(member, pos, ReadLimits.exceeds(what, size, ReadLimits.TAR_PAX_HEADER));
                    }
                    if (size > n - data) {
                        return Verdict.whole(shard);
                    }
                    if (!global && ++paxHeaders > 1) {
                        return cut(member, pos, "is a second PAX header for one member, which Stoke does not read");
                    }
                    Pax pax = Pax.read(shard, data, size);
                    if (pax.problem != null) {
                        return cut(member, pos, "is " + what + " that " + pax.problem);
                    }
                    // Commons Compress adds each global header's records to those before, and copies them all
                    // into every member after: counted over the shard, so that many small ones add up.
                    if (global && (globalRecords += pax.records) > ReadLimits.TAR_GLOBAL_PAX_RECORDS) {
                        return cut(
                                member,
                                pos,
                                "is a global PAX header that brings the shard's global PAX records to "
                                        + globalRecords + ", more than the " + ReadLimits.TAR_GLOBAL_PAX_RECORDS
                                        + " limit (each is copied into every member after it)");
                    }
                    if (global && (pax.size >= 0 || pax.path)) {
                        return cut(
                                member,
                                pos,
                                "is " + what + " that sets every member's " + (pax.path ? "path" : "size")
                                        + ", which Stoke does not read");
                    }
                    if (!global) {
                        paxSize = pax.size;
                        slashName |= pax.slashPath;
                    }
                    directory = false;
                    extensions++;
                }
                case 'S' -> {
                    return cut(member, pos, "is a GNU sparse member, which Stoke does not read");
                }
                default -> {
                    if (paxSize >= 0) {
                        size = paxSize;
                    }
                    directory = type == '5' || slashName || nameFieldEndsInSlash(shard, pos);
                    members.accept(data);
                    extensions = 0;
                    paxHeaders = 0;
                    paxSize = -1;
                    slashName = false;
                }
            }
            if (extensions > ReadLimits.TAR_EXTENSIONS_PER_MEMBER) {
                return cut(
                        member,
                        pos,
                        "is extension header " + extensions + " for one member, more than the "
                                + ReadLimits.TAR_EXTENSIONS_PER_MEMBER + " limit");
            }
            if (size > n - data) {
                return Verdict.whole(shard); // the member runs past the end: Commons Compress names it
            }
            long padding = size % BLOCK == 0 ? 0 : BLOCK - size % BLOCK;
            if (directory && padding != 0) {
                // Commons Compress skips no padding after a directory: the next header would be unaligned.
                return cut(member, pos, "is a directory that holds data, which Stoke does not read");
            }
            pos = data + size + padding;
            if (extensions == 0) {
                member = pos;
            }
        }
        return Verdict.whole(shard);
    }

    /** Cut before {@code member}, whose extension header at {@code header} breaks a limit. */
    private static Verdict cut(long member, long header, String why) {
        return new Verdict(member, "the member header at byte " + header + " " + why);
    }

    /** Damage at {@code header}: Commons Compress may read that header, and nothing after it. */
    private static Verdict damage(long header, String why) {
        return new Verdict(header + BLOCK, why);
    }

    private static byte[] header(MemorySegment shard, long pos, int field, int length) {
        byte[] b = new byte[length];
        MemorySegment.copy(shard, ValueLayout.JAVA_BYTE, pos + field, b, 0, length);
        return b;
    }

    private static boolean isZero(MemorySegment shard, long pos) {
        for (int i = 0; i < BLOCK; i += 8) {
            if (shard.get(ValueLayout.JAVA_LONG_UNALIGNED, pos + i) != 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether the header's name may end in '/' once Commons Compress has read it (it prefixes the
     * ustar prefix with a '/', so an empty name field ends in one too).
     */
    private static boolean nameFieldEndsInSlash(MemorySegment shard, long pos) {
        int len = 0;
        while (len < NAME_LENGTH && shard.get(ValueLayout.JAVA_BYTE, pos + NAME + len) != 0) {
            len++;
        }
        return len == 0 || shard.get(ValueLayout.JAVA_BYTE, pos + NAME + len - 1) == '/';
    }

    /** Whether bytes {@code [from, from + length)}, less trailing NULs, end in '/' (or are empty). */
    private static boolean endsInSlash(MemorySegment shard, long from, long length) {
        long end = from + length;
        while (end > from && shard.get(ValueLayout.JAVA_BYTE, end - 1) == 0) {
            end--;
        }
        return end == from || shard.get(ValueLayout.JAVA_BYTE, end - 1) == '/';
    }

    /**
     * What the walk needs of a PAX header's records ({@code "LENGTH KEY=VALUE\n"}): its {@code size},
     * whether it has a {@code path} and whether that ends in '/', how many records it holds; or
     * why they cannot be read as Commons Compress reads them.
     */
    private static final class Pax {
        long size = -1;
        boolean path;
        boolean slashPath;
        int records;
        String problem;

        static Pax read(MemorySegment shard, long from, long length) {
            Pax pax = new Pax();
            long end = from + length;
            long p = from;
            while (p < end && pax.problem == null) {
                if (shard.get(ValueLayout.JAVA_BYTE, p) == '\n') {
                    p++; // a blank line, which Commons Compress passes over
                    continue;
                }
                long start = p;
                long len = 0;
                byte b;
                while (p < end && (b = shard.get(ValueLayout.JAVA_BYTE, p)) != ' ') {
                    if (b < '0' || b > '9' || len > length) {
                        pax.problem = "has a record whose length is not a number";
                        return pax;
                    }
                    len = len * 10 + (b - '0');
                    p++;
                }
                long recordEnd = start + len;
                long eq = p + 1;
                while (eq < end && eq < recordEnd && shard.get(ValueLayout.JAVA_BYTE, eq) != '=') {
                    eq++;
                }
                if (p >= end
                        || recordEnd > end
                        || eq >= recordEnd
                        || shard.get(ValueLayout.JAVA_BYTE, recordEnd - 1) != '\n') {
                    pax.problem = "has a record that is not LENGTH KEY=VALUE";
                    return pax;
                }
                pax.record(shard, p + 1, eq, eq + 1, recordEnd - 1);
                p = recordEnd;
            }
            return pax;
        }

        private void record(MemorySegment shard, long key, long keyEnd, long value, long valueEnd) {
            records++;
            if (is(shard, key, keyEnd, "size")) {
                // Commons Compress takes an empty value as no size: the header's own stands.
                size = value == valueEnd ? -1 : parseSize(shard, value, valueEnd);
            } else if (is(shard, key, keyEnd, "path")) {
                path = true;
                slashPath = value == valueEnd || shard.get(ValueLayout.JAVA_BYTE, valueEnd - 1) == '/';
            } else if (startsWith(shard, key, keyEnd, "GNU.sparse.") || is(shard, key, keyEnd, "SCHILY.filetype")) {
                problem = "describes a sparse member, which Stoke does not read";
            }
        }

        private long parseSize(MemorySegment shard, long from, long to) {
            if (to - from > 19) {
                problem = "declares a size that is not a number";
                return -1;
            }
            String s = new String(header(shard, from, 0, (int) (to - from)), StandardCharsets.US_ASCII);
            try {
                long v = Long.parseLong(s);
                if (v >= 0) {
                    return v;
                }
            } catch (NumberFormatException e) {
                // named below
            }
            problem = "declares a size that is not a number";
            return -1;
        }

        private static boolean is(MemorySegment shard, long from, long to, String word) {
            return to - from == word.length() && startsWith(shard, from, to, word);
        }

        private static boolean startsWith(MemorySegment shard, long from, long to, String word) {
            if (to - from < word.length()) {
                return false;
            }
            for (int i = 0; i < word.length(); i++) {
                if (shard.get(ValueLayout.JAVA_BYTE, from + i) != word.charAt(i)) {
                    return false;
                }
            }
            return true;
        }
    }
}
