package io.stoke.loader.source;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.List;

/** A dataset of one file per sample: an ImageFolder tree ({@link ImageFolder}) or a list file ({@link ListFile}). */
public final class FileDataset extends Dataset {
    private final byte[] pathBytes;
    private final int[] pathStart; // length size()+1; path i is pathBytes[pathStart[i], pathStart[i+1])
    private final int[] labels;

    FileDataset(Path root, byte[] pathBytes, int[] pathStart, int[] labels, List<String> classNames) {
        super(root, classNames);
        this.pathBytes = pathBytes;
        this.pathStart = pathStart;
        this.labels = labels;
    }

    @Override
    public int size() {
        return labels.length;
    }

    /**
     * {@link Dataset#line}'s bytes for each sample, fed from the stored path: a path's bytes are the
     * UTF-8 encoding of its String ({@link Builder#add}), which is what line() encodes again, so the
     * digest is the same without a String, a concatenation and a byte[] per sample. Over ImageNet's
     * 1.28 million samples that was about 0.1 s of the fingerprint's 0.6 s in a fresh producer (JFR);
     * the rest is SHA-256 itself, Java's code under C1.
     */
    @Override
    void digest(MessageDigest digest) {
        byte[] tail = new byte[13]; // '\t', an int's at most 11 characters, '\n'
        for (int i = 0; i < size(); i++) {
            digest.update(pathBytes, pathStart[i], pathLength(i));
            digest.update(tail, 0, labelLine(labels[i], tail));
        }
    }

    /** Writes {@code "\t" + label + "\n"} into {@code into} as ASCII bytes; returns their count. */
    static int labelLine(int label, byte[] into) {
        into[0] = '\t';
        int n = 1;
        long value = label;
        if (value < 0) {
            into[n++] = '-';
            value = -value;
        }
        int digits = 1;
        for (long v = value; v >= 10; v /= 10) {
            digits++;
        }
        for (int d = n + digits - 1; d >= n; d--) {
            into[d] = (byte) ('0' + value % 10);
            value /= 10;
        }
        n += digits;
        into[n++] = '\n';
        return n;
    }

    @Override
    public int label(int sample) {
        return labels[sample];
    }

    @Override
    public String path(int sample) {
        return new String(pathBytes, pathStart[sample], pathLength(sample), StandardCharsets.UTF_8);
    }

    @Override
    public int pathLength(int sample) {
        return pathStart[sample + 1] - pathStart[sample];
    }

    @Override
    public boolean isAbsolute(int sample) {
        return pathLength(sample) > 0 && pathBytes[pathStart[sample]] == '/';
    }

    @Override
    public int copyPath(int sample, MemorySegment dst, long offset) {
        int length = pathLength(sample);
        MemorySegment.copy(pathBytes, pathStart[sample], dst, ValueLayout.JAVA_BYTE, offset, length);
        return length;
    }

    /** The sample's file; allocates, so for messages, not the hot path. */
    public Path resolve(int sample) {
        return root().resolve(path(sample));
    }

    /**
     * The sample's path resolved against the root. An absolute path that {@link Path} would not
     * change (no doubled or trailing slash, no NUL) is its own name: the sample list names every
     * sample before the ring is ready, and parsing each into a Path took 0.2 s over 1.28 million.
     */
    @Override
    public String name(int sample) {
        return isAbsolute(sample) && isNormal(sample)
                ? path(sample)
                : resolve(sample).toString();
    }

    /** Whether the path has no {@code //}, no trailing {@code /} and no NUL: what a Path would rewrite or refuse. */
    private boolean isNormal(int sample) {
        int end = pathStart[sample + 1];
        byte previous = 0;
        for (int i = pathStart[sample]; i < end; i++) {
            byte b = pathBytes[i];
            if (b == 0 || (b == '/' && previous == '/')) {
                return false;
            }
            previous = b;
        }
        return previous != '/';
    }

    @Override
    public SampleReader reader(long maxBytes) {
        return new FileReader(this, maxBytes);
    }

    /**
     * A dataset of {@code paths} (absolute, or relative to {@code root}) labelled {@code labels} (-1:
     * none): a table's rows whose images are files (a Hugging Face {@code Image} stored as a path).
     */
    public static FileDataset of(Path root, List<String> paths, int[] labels) {
        if (paths.size() != labels.length) {
            throw new IllegalArgumentException(paths.size() + " paths and " + labels.length + " labels");
        }
        Builder builder = new Builder();
        for (int i = 0; i < labels.length; i++) {
            builder.add(paths.get(i).getBytes(StandardCharsets.UTF_8), labels[i]);
        }
        return builder.build(root, List.of());
    }

    /** The paths and labels of a folder or list file, added one by one into the flat arrays. */
    static final class Builder {
        private byte[] bytes = new byte[1 << 16];
        private int[] starts = new int[1025];
        private int[] labels = new int[1024];
        private int size;
        private int used;

        /**
         * Adds a sample whose path is {@code String.getBytes(UTF_8)} of its name (every caller's):
         * {@link FileDataset#digest} and {@link FileDataset#path} rely on the bytes decoding back to it.
         */
        void add(byte[] path, int label) {
            if (used + path.length > bytes.length) {
                long grown = Math.max((long) bytes.length * 2, (long) used + path.length);
                if (grown > Integer.MAX_VALUE - 8) {
                    throw new IllegalStateException("dataset paths exceed 2 GiB");
                }
                bytes = Arrays.copyOf(bytes, (int) grown);
            }
            if (size == labels.length) {
                // starts keeps one more entry than labels: the end of the last path.
                labels = Arrays.copyOf(labels, labels.length * 2);
                starts = Arrays.copyOf(starts, labels.length + 1);
            }
            System.arraycopy(path, 0, bytes, used, path.length);
            starts[size] = used;
            labels[size] = label;
            used += path.length;
            size++;
            starts[size] = used;
        }

        FileDataset build(Path root, List<String> classNames) {
            return new FileDataset(
                    root,
                    Arrays.copyOf(bytes, used),
                    Arrays.copyOf(starts, size + 1),
                    Arrays.copyOf(labels, size),
                    classNames);
        }
    }
}
