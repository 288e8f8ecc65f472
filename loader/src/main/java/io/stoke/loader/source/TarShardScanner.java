package io.stoke.loader.source;

import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.internal.InParallel;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.SegmentInputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarFile;

/**
 * Builds the {@link Dataset} of a WebDataset dataset: reads every shard's tar headers (Apache
 * Commons Compress: ustar, PAX and GNU long names) and groups members into samples by WebDataset's
 * rules. A sample is the run of consecutive members sharing a key, the member path up to the first
 * dot of its file name; its image is the {@code jpg}/{@code jpeg} member, else its {@code npy} (a raw
 * image) or other image member ({@code png}, {@code webp}, ...: decoded by its bytes, or named by the
 * decoder when Stoke does not decode its format), its label the {@code cls}
 * member, an ASCII integer. Members without an extension, and those of other extensions, are not
 * read. Dataset order is shard order, then member order.
 *
 * <p>{@link TarFile} seeks from header to header without reading the data. When it stops at a
 * damaged header (a truncated shard, garbage), the shard is read again as a stream up to the
 * damage, so the samples before it are kept, and the damage is reported as one of the index's
 * {@link Shards#problems()}. An extension header (long name, long link, PAX header) whose declared
 * length breaks a {@link ReadLimits} limit is damage of the same kind, found before Commons Compress
 * would read it onto the heap ({@link TarExtensionLimits}). Shards are scanned in parallel; the
 * result does not depend on it.
 */
public final class TarShardScanner {
    /** A label member longer than this is not a label. */
    private static final int MAX_LABEL_BYTES = 32;

    private TarShardScanner() {}

    /**
     * Scans {@code names.size()} shards whose bytes {@code bytes} gives, by shard number, on up to
     * {@code threads} threads. The dataset owns {@code bytes} from here on, even when this throws.
     */
    public static ShardDataset scan(List<String> names, ShardBytes bytes, Path root, int threads) {
        try {
            return build(names, bytes, root, scanAll(names, bytes, threads));
        } catch (RuntimeException | Error e) {
            bytes.close();
            throw e;
        }
    }

    private static List<ShardScan> scanAll(List<String> names, ShardBytes bytes, int threads) {
        return InParallel.map(names.size(), threads, "stoke-shard-scan", shard -> scanShard(bytes, shard));
    }

    private static ShardScan scanShard(ShardBytes bytes, int shard) {
        MemorySegment data = bytes.acquire(shard);
        try {
            return scanOne(data);
        } finally {
            bytes.release(shard);
        }
    }

    private static ShardDataset build(List<String> names, ShardBytes bytes, Path root, List<ShardScan> scans) {
        boolean labelled = false;
        for (ShardScan scan : scans) {
            labelled |= scan.anyLabel;
        }
        ShardTable[] tables = new ShardTable[scans.size()];
        List<String> problems = new ArrayList<>();
        for (int s = 0; s < scans.size(); s++) {
            ShardScan scan = scans.get(s);
            if (scan.problem != null) {
                problems.add(names.get(s) + ": " + scan.problem);
            } else if (scan.keys.isEmpty()) {
                problems.add(names.get(s) + ": holds no samples");
            }
            tables[s] = new ShardTable(scan, labelled);
        }
        Shards shards = new Shards(names.toArray(String[]::new), tables, bytes, problems, labelled);
        return new ShardDataset(root, shards);
    }

    /** One tar member that is a regular file: its path, and where its data lies. */
    private record Member(String name, long offset, long size) {}

    /** The samples of one shard, in member order. */
    static final class ShardScan {
        final List<String> keys = new ArrayList<>();
        long[] offsets = new long[64];
        int[] lengths = new int[64];
        int[] labels = new int[64];
        byte[] formats = new byte[64];
        boolean[] hasLabel = new boolean[64];
        SampleStatus[] status = new SampleStatus[64];
        boolean anyLabel;
        String problem;

        void add(String key, long offset, int length, byte format, int label, boolean labelled, SampleStatus st) {
            int i = keys.size();
            if (i == offsets.length) {
                int n = i * 2;
                offsets = Arrays.copyOf(offsets, n);
                lengths = Arrays.copyOf(lengths, n);
                labels = Arrays.copyOf(labels, n);
                formats = Arrays.copyOf(formats, n);
                hasLabel = Arrays.copyOf(hasLabel, n);
                status = Arrays.copyOf(status, n);
            }
            keys.add(key);
            offsets[i] = offset;
            lengths[i] = length;
            formats[i] = format;
            labels[i] = label;
            hasLabel[i] = labelled;
            anyLabel |= labelled;
            status[i] = st;
        }
    }

    /** Scans one shard's bytes. Never throws on bad data: damage is in the result. */
    static ShardScan scanOne(MemorySegment whole) {
        ShardScan out = new ShardScan();
        List<Member> members = new ArrayList<>();
        // Commons Compress reads extension headers onto the heap at any length they declare: it gets
        // only the bytes before the first one that breaks a limit, which is then the shard's damage.
        TarExtensionLimits.Verdict verdict = TarExtensionLimits.check(whole);
        MemorySegment shard = whole.asSlice(0, verdict.readable());
        try (TarFile tar = new TarFile(new SegmentChannel(shard))) {
            for (TarArchiveEntry e : tar.getEntries()) {
                if (e.isFile()) {
                    members.add(new Member(e.getName(), e.getDataOffset(), e.getSize()));
                }
            }
        } catch (IOException | RuntimeException damage) {
            members.clear();
            out.problem = readAsStream(shard, members);
            if (out.problem == null) {
                out.problem = describe(damage); // the stream read on where TarFile stopped: still damage
            }
        }
        if (verdict.problem() != null && out.problem == null) {
            out.problem = members.isEmpty()
                    ? "not a tar file Stoke reads (" + verdict.problem() + ")"
                    : verdict.problem() + "; the samples before it are read";
        }
        group(shard, members, out);
        return out;
    }

    /** Reads members until the end or the damage; returns the damage in words, or null. */
    private static String readAsStream(MemorySegment shard, List<Member> members) {
        try (TarArchiveInputStream in = new TarArchiveInputStream(new SegmentInputStream(shard))) {
            for (TarArchiveEntry e = in.getNextEntry(); e != null; e = in.getNextEntry()) {
                if (e.isFile()) {
                    // After a header (and its PAX or GNU extension records), the stream stands at the data.
                    members.add(new Member(e.getName(), in.getBytesRead(), e.getSize()));
                }
            }
            return null;
        } catch (IOException | RuntimeException e) {
            String what = describe(e);
            return members.isEmpty()
                    ? "not a readable tar file (" + what + ")"
                    : "tar damaged after member "
                            + members.get(members.size() - 1).name() + " (" + what
                            + "); the samples before the damage are read";
        }
    }

    private static String describe(Throwable e) {
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    private static void group(MemorySegment shard, List<Member> members, ShardScan out) {
        String key = null;
        Member image = null;
        Member label = null;
        byte format = Shards.ENCODED;
        for (Member m : members) {
            String name = m.name();
            int slash = name.lastIndexOf('/');
            int dot = name.indexOf('.', slash + 1);
            if (dot <= slash + 1) {
                continue; // no extension, or a hidden file: WebDataset makes no sample of it
            }
            String k = name.substring(0, dot);
            String ext = name.substring(dot + 1).toLowerCase(Locale.ROOT);
            if (!k.equals(key)) {
                if (key != null) {
                    flush(shard, key, image, format, label, out);
                }
                key = k;
                image = null;
                label = null;
            }
            switch (ext) {
                case "jpg", "jpeg" -> {
                    if (image == null || format != Shards.ENCODED || !isJpegName(image)) {
                        image = m;
                        format = Shards.ENCODED;
                    }
                }
                case "npy" -> {
                    if (image == null) {
                        image = m;
                        format = Shards.NPY;
                    }
                }
                case "cls" -> label = m;
                case "png", "webp", "bmp", "ppm", "pgm", "tif", "tiff", "gif", "avif", "heic", "jxl" -> {
                    if (image == null) {
                        image = m; // decoded by its content, or named by the decoder
                        format = Shards.ENCODED;
                    }
                }
                default -> {
                    // .txt, .json, ...: other fields of the sample, not read
                }
            }
        }
        if (key != null) {
            flush(shard, key, image, format, label, out);
        }
    }

    private static boolean isJpegName(Member m) {
        String lower = m.name().toLowerCase(Locale.ROOT);
        return lower.endsWith(".jpg") || lower.endsWith(".jpeg");
    }

    private static void flush(MemorySegment shard, String key, Member image, byte format, Member label, ShardScan out) {
        long size = shard.byteSize();
        SampleStatus status = SampleStatus.OK;
        int value = -1;
        if (label != null) {
            if (label.offset() + label.size() > size) {
                status = SampleStatus.MEMBER_TRUNCATED;
            } else {
                value = parseLabel(shard, label);
                if (value < 0) {
                    status = SampleStatus.BAD_LABEL;
                }
            }
        }
        long offset = 0;
        int length = 0;
        if (image == null) {
            status = SampleStatus.NO_IMAGE;
        } else if (image.offset() + image.size() > size) {
            status = SampleStatus.MEMBER_TRUNCATED;
        } else if (image.size() > Integer.MAX_VALUE) {
            status = SampleStatus.TOO_LARGE;
        } else {
            offset = image.offset();
            length = (int) image.size();
        }
        out.add(key, offset, length, format, value, label != null, status);
    }

    /** The label in a {@code .cls} member: ASCII digits, surrounding white space allowed; -1 if not. */
    static int parseLabel(MemorySegment shard, Member m) {
        if (m.size() > MAX_LABEL_BYTES) {
            return -1;
        }
        long start = m.offset();
        long end = start + m.size();
        while (start < end && isSpace(shard.get(ValueLayout.JAVA_BYTE, start))) {
            start++;
        }
        while (end > start && isSpace(shard.get(ValueLayout.JAVA_BYTE, end - 1))) {
            end--;
        }
        if (start == end) {
            return -1;
        }
        long value = 0;
        for (long p = start; p < end; p++) {
            byte b = shard.get(ValueLayout.JAVA_BYTE, p);
            if (b < '0' || b > '9') {
                return -1;
            }
            value = value * 10 + (b - '0');
            if (value > Integer.MAX_VALUE) {
                return -1;
            }
        }
        return (int) value;
    }

    private static boolean isSpace(byte b) {
        return b == ' ' || b == '\n' || b == '\r' || b == '\t';
    }

    /** A read-only, seekable view of a segment, for {@link TarFile}. */
    private static final class SegmentChannel implements SeekableByteChannel {
        private final MemorySegment data;
        private long position;
        private boolean open = true;

        SegmentChannel(MemorySegment data) {
            this.data = data;
        }

        @Override
        public int read(ByteBuffer dst) {
            long left = data.byteSize() - position;
            if (left <= 0) {
                return -1;
            }
            int n = (int) Math.min(dst.remaining(), left);
            MemorySegment.copy(data, position, MemorySegment.ofBuffer(dst), 0, n);
            dst.position(dst.position() + n);
            position += n;
            return n;
        }

        @Override
        public int write(ByteBuffer src) {
            throw new NonWritableChannelException();
        }

        @Override
        public long position() {
            return position;
        }

        @Override
        public SeekableByteChannel position(long newPosition) {
            if (newPosition < 0) {
                throw new IllegalArgumentException("negative position " + newPosition);
            }
            position = newPosition;
            return this;
        }

        @Override
        public long size() {
            return data.byteSize();
        }

        @Override
        public SeekableByteChannel truncate(long size) {
            throw new NonWritableChannelException();
        }

        @Override
        public boolean isOpen() {
            return open;
        }

        @Override
        public void close() {
            open = false;
        }
    }
}
