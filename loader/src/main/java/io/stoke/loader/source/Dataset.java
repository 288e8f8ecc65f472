package io.stoke.loader.source;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * A dataset: samples in a fixed order, each with a path (or key) and a label.
 *
 * <p>Two kinds: {@link FileDataset}, one file per sample (an ImageFolder tree or a list file),
 * held as flat arrays (every path, UTF-8 and relative to {@link #root()}, packed end to end in one
 * {@code byte[]}; a million samples cost about their path bytes plus 12 bytes each, and no object
 * per file); and {@link ShardDataset}, WebDataset tar shards, whose {@link ShardDataset#shards()}
 * say where each sample's members lie; its paths are then the samples' keys, and {@link #name} is
 * {@code <shard>/<key>}. A shard dataset owns the shards' memory (mappings or a download cache):
 * close it when the last loader over it is closed. Closing a file dataset does nothing.
 */
public abstract sealed class Dataset implements AutoCloseable permits FileDataset, ShardDataset {
    private final Path root;
    private final List<String> classNames;
    private String fingerprint;

    Dataset(Path root, List<String> classNames) {
        this.root = root;
        this.classNames = List.copyOf(classNames);
    }

    /** Number of samples. */
    public abstract int size();

    /** The folder that relative paths are resolved against. */
    public Path root() {
        return root;
    }

    /** The sample's label, -1 when it has none. */
    public abstract int label(int sample);

    /** Class names by label, when the source has them (ImageFolder); empty otherwise. */
    public List<String> classNames() {
        return classNames;
    }

    /** The sample's path as given (relative to {@link #root()} unless it was absolute), or its key in a shard; allocates. */
    public abstract String path(int sample);

    /** How a log or an error names the sample: its file, or {@code <shard>/<key>}. */
    public abstract String name(int sample);

    /** A reader of this dataset's samples' bytes, for one thread; files larger than {@code maxBytes} are refused. */
    public abstract SampleReader reader(long maxBytes);

    /**
     * A short digest of what the dataset holds, in order, to tell a saved loader state's dataset
     * from another of the same size: the hex SHA-256 (its first 16 digits) of each sample's path
     * (relative to the root) and label for files, of each shard's file name and sample count for
     * shards. It does not change when the data moves to another folder or bucket. Computed once.
     */
    public final synchronized String fingerprint() {
        if (fingerprint == null) {
            MessageDigest digest;
            try {
                digest = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("no SHA-256 in this JVM", e);
            }
            digest(digest);
            fingerprint = HexFormat.of().formatHex(digest.digest(), 0, 8);
        }
        return fingerprint;
    }

    /** Feeds {@link #fingerprint()}'s digest: one line per sample or shard. */
    abstract void digest(MessageDigest digest);

    static void line(MessageDigest digest, String name, long number) {
        digest.update((name + '\t' + number + '\n').getBytes(StandardCharsets.UTF_8));
    }

    /** Lets go of what the dataset holds (a shard dataset's mappings or cache); nothing for files. */
    @Override
    public void close() {}

    /** Bytes of {@link #path}'s UTF-8. */
    public abstract int pathLength(int sample);

    /** Whether the stored path is absolute, so it must not be prefixed with the root. */
    public abstract boolean isAbsolute(int sample);

    /**
     * Copies the path's UTF-8 bytes into {@code dst} at {@code offset} without allocating.
     *
     * @return the number of bytes copied ({@link #pathLength})
     */
    public abstract int copyPath(int sample, MemorySegment dst, long offset);
}
