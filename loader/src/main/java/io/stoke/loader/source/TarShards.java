package io.stoke.loader.source;

import io.stoke.loader.error.SampleStatus;
import java.util.Arrays;
import java.util.List;

/**
 * Where each sample of a WebDataset tar dataset lies: its shard, and the offset and length of its
 * image member in that shard, found once when the dataset is opened ({@link TarShardScanner}).
 * Flat arrays, so a million samples cost 14 bytes each. A sample the scan already knows to be bad
 * (no image member, no label, a member past the shard's end) keeps its place in the dataset order
 * and carries its {@link SampleStatus}, so that it is named when its batch reaches it, under either
 * error policy, as a bad file in a folder is.
 */
public final class TarShards implements AutoCloseable {
    /** Format of a sample's image member. */
    public static final byte JPEG = 0;
    /** A raw uint8 HWC image in NumPy's {@code .npy} format ({@code stoke pack --format raw}). */
    public static final byte NPY = 1;

    private final String[] names;
    private final int[] firstSample; // length shards + 1: shard s holds samples [firstSample[s], firstSample[s+1])
    private final long[] offsets;
    private final int[] lengths;
    private final byte[] status;
    private final byte[] formats;
    private final ShardBytes bytes;
    private final List<String> problems;
    private final boolean labelled;

    TarShards(
            String[] names,
            int[] firstSample,
            long[] offsets,
            int[] lengths,
            byte[] status,
            byte[] formats,
            ShardBytes bytes,
            List<String> problems,
            boolean labelled) {
        this.names = names;
        this.firstSample = firstSample;
        this.offsets = offsets;
        this.lengths = lengths;
        this.status = status;
        this.formats = formats;
        this.bytes = bytes;
        this.problems = List.copyOf(problems);
        this.labelled = labelled;
    }

    public int shardCount() {
        return names.length;
    }

    /** The shard as the user named it: its path or URL. */
    public String shardName(int shard) {
        return names[shard];
    }

    /** The first sample of {@code shard}; {@code firstSample(shardCount())} is the dataset's size. */
    public int firstSample(int shard) {
        return firstSample[shard];
    }

    /** The shard holding {@code sample}: a binary search over the shards' first samples. */
    public int shardOf(int sample) {
        int i = Arrays.binarySearch(firstSample, sample);
        if (i < 0) {
            return -i - 2;
        }
        // Empty shards share a first sample with the next one: take the last shard starting here.
        while (i + 1 < names.length && firstSample[i + 1] == sample) {
            i++;
        }
        return i;
    }

    /** Offset of the sample's image member's data in its shard. */
    public long offset(int sample) {
        return offsets[sample];
    }

    /** Length of the sample's image member. */
    public int length(int sample) {
        return lengths[sample];
    }

    /** {@link SampleStatus#OK}, or why the scan already knows the sample cannot be read. */
    public SampleStatus status(int sample) {
        return SampleStatus.of(status[sample]);
    }

    /** {@link #JPEG} or {@link #NPY}. */
    public byte format(int sample) {
        return formats[sample];
    }

    /** Whether the samples carry {@code .cls} labels; without any, every label is -1. */
    public boolean labelled() {
        return labelled;
    }

    /**
     * Damage found in whole shards: a shard that is not a tar file, or whose members stop at a
     * damaged header (the samples before it are kept). Empty when every shard read cleanly.
     */
    public List<String> problems() {
        return problems;
    }

    /** Whether the shards are remote: fetched whole into a bounded cache, so shuffled within windows of shards by default. */
    public boolean remote() {
        return bytes.remote();
    }

    public ShardBytes bytes() {
        return bytes;
    }

    @Override
    public void close() {
        bytes.close();
    }
}
