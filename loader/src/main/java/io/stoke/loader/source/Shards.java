package io.stoke.loader.source;

import io.stoke.loader.error.SampleStatus;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Where each sample of a dataset of shards lies: its shard, and the offset and length of its image
 * in that shard's bytes, one {@link ShardTable} per shard. A shard is a WebDataset tar file, or
 * another {@link ShardFormat}'s unit of fetch (a Parquet row group, whose bytes are its image
 * column's decompressed pages). A sample the scan already knows to
 * be bad (no image member, no label, a member past the shard's end) keeps its place in the dataset
 * order and carries its {@link SampleStatus}, so that it is named when its batch reaches it, under
 * either error policy, as a bad file in a folder is.
 *
 * <p>Opened without a shard catalog, every shard is scanned up front ({@link TarShardScanner}). Opened
 * from a shard catalog ({@link ShardCatalog}), only the shards' sample counts are known at first: a shard's
 * table is built from its own bytes the first time one of its samples is read (the shard is being
 * fetched for that read anyway), and a shard whose samples differ from the catalog's count is named
 * as a stale catalog rather than read.
 */
public final class Shards implements AutoCloseable {
    /** Format of a sample's image member: an encoded image (JPEG, PNG, WebP, ...: told by its bytes). */
    public static final byte ENCODED = 0;
    /** A raw uint8 HWC image in NumPy's {@code .npy} format ({@code stoke pack --format raw}). */
    public static final byte NPY = 1;

    private final String[] names;
    private final int[] firstSample; // length shards + 1: shard s holds samples [firstSample[s], firstSample[s+1])
    private final AtomicReferenceArray<ShardTable> tables;
    private final Object[] locks;
    private final ShardBytes bytes;
    private final List<String> problems;
    private final boolean labelled;
    private final String catalogName;
    private final ShardFormat format;

    /** Every table known: the dataset was scanned. */
    Shards(String[] names, ShardTable[] tables, ShardBytes bytes, List<String> problems, boolean labelled) {
        this(names, firstSamples(tables), bytes, problems, labelled, null);
        for (int s = 0; s < tables.length; s++) {
            this.tables.set(s, tables[s]);
        }
    }

    /**
     * Only the counts known, from the shard catalog named {@code catalogName}: each table is built when its
     * shard is first read.
     */
    Shards(
            String[] names,
            int[] firstSample,
            ShardBytes bytes,
            List<String> problems,
            boolean labelled,
            String catalogName) {
        this.names = names;
        this.firstSample = firstSample;
        this.tables = new AtomicReferenceArray<>(names.length);
        this.locks = new Object[Math.min(names.length, 256)];
        for (int i = 0; i < locks.length; i++) {
            locks[i] = new Object();
        }
        this.bytes = bytes;
        this.problems = List.copyOf(problems);
        this.labelled = labelled;
        this.catalogName = catalogName;
        this.format = null;
    }

    private Shards(String[] names, int[] firstSample, ShardBytes bytes, boolean labelled, ShardFormat format) {
        this.names = names.clone();
        this.firstSample = firstSample.clone();
        this.tables = new AtomicReferenceArray<>(names.length);
        this.locks = new Object[Math.min(names.length, 256)];
        for (int i = 0; i < locks.length; i++) {
            locks[i] = new Object();
        }
        this.bytes = bytes;
        this.problems = List.of();
        this.labelled = labelled;
        this.catalogName = null;
        this.format = format;
    }

    /**
     * Shards of another format than tar, of which only the sample counts are known at first: shard
     * {@code s} holds samples {@code [firstSample[s], firstSample[s + 1])}, and its table is built by
     * {@code format} from its bytes the first time one of its samples is read.
     *
     * @param names    each shard as an error names it
     * @param labelled whether the samples carry labels (else every label is -1, said once)
     */
    public static Shards of(String[] names, int[] firstSample, ShardBytes bytes, boolean labelled, ShardFormat format) {
        if (firstSample.length != names.length + 1 || firstSample[0] != 0) {
            throw new IllegalArgumentException("first samples must start at 0, one per shard and the total");
        }
        for (int s = 0; s < names.length; s++) {
            if (firstSample[s + 1] < firstSample[s]) {
                throw new IllegalArgumentException("first samples must not decrease: " + names[s]);
            }
        }
        return new Shards(names, firstSample, bytes, labelled, format);
    }

    private static int[] firstSamples(ShardTable[] tables) {
        int[] first = new int[tables.length + 1];
        for (int s = 0; s < tables.length; s++) {
            first[s + 1] = Math.addExact(first[s], tables[s].size());
        }
        return first;
    }

    /**
     * The file (or object) shard {@code shard} lies in: the shard itself for a tar shard; its file for a
     * Parquet row group. Consecutive shards of one file share it.
     */
    public String fileOf(int shard) {
        return format != null ? format.fileOf(shard) : names[shard];
    }

    /** Number of shards. */
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

    /** How many samples {@code shard} holds. */
    public int samples(int shard) {
        return firstSample[shard + 1] - firstSample[shard];
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

    /**
     * {@code shard}'s samples; from a shard catalog, built from the shard's bytes on first use (which
     * fetches a remote shard into the shard cache, where the read that asked for it finds it).
     *
     * @throws IllegalStateException when the shard does not hold what the shard catalog says: the catalog
     *     is stale, and no sample of the shard is delivered
     */
    ShardTable table(int shard) {
        ShardTable t = tables.get(shard);
        return t != null ? t : load(shard);
    }

    private ShardTable load(int shard) {
        synchronized (locks[shard % locks.length]) {
            ShardTable t = tables.get(shard);
            if (t != null) {
                return t;
            }
            MemorySegment data = bytes.acquire(shard);
            try {
                t = format != null
                        ? format.table(shard, data)
                        : new ShardTable(TarShardScanner.scanOne(data), labelled);
            } finally {
                bytes.release(shard);
            }
            int expected = firstSample[shard + 1] - firstSample[shard];
            if (format != null && t.size() != expected) {
                throw new IllegalStateException(
                        names[shard] + ": its metadata says " + expected + " samples, its table holds " + t.size());
            }
            if (t.problem() != null || t.size() != expected) {
                throw new IllegalStateException(
                        names[shard] + ": the shard catalog " + catalogName + " says " + expected
                                + " samples, the shard holds " + t.size()
                                + (t.problem() != null ? " (" + t.problem() + ")" : "")
                                + ": the shard catalog is stale or the shard damaged; run `stoke catalog` on the shards again");
            }
            tables.set(shard, t);
            return t;
        }
    }

    /** The sample's key: its members' common name before the extension. */
    public String key(int sample) {
        int s = shardOf(sample);
        return table(s).key(sample - firstSample[s]);
    }

    int keyLength(int sample) {
        int s = shardOf(sample);
        return table(s).keyLength(sample - firstSample[s]);
    }

    int copyKey(int sample, MemorySegment dst, long offset) {
        int s = shardOf(sample);
        return table(s).copyKey(sample - firstSample[s], dst, offset);
    }

    /** How a log or an error names the sample: {@code <shard>/<key>}, or its format's words (a file and a row). */
    public String name(int sample) {
        int s = shardOf(sample);
        String key = key(sample);
        return format != null ? format.sampleName(s, sample - firstSample[s], key) : names[s] + "/" + key;
    }

    /** Said once when no sample has a label, for the dataset {@code spec}. */
    String unlabelledNote(String spec) {
        return format != null ? format.unlabelledNote(spec) : "no .cls member in " + spec + ": every label is -1";
    }

    /** The sample's label, -1 when it has none. */
    public int label(int sample) {
        int s = shardOf(sample);
        return table(s).label(sample - firstSample[s]);
    }

    /** Offset of the sample's image member's data in its shard. */
    public long offset(int sample) {
        int s = shardOf(sample);
        return table(s).offset(sample - firstSample[s]);
    }

    /** Length of the sample's image member. */
    public int length(int sample) {
        int s = shardOf(sample);
        return table(s).length(sample - firstSample[s]);
    }

    /** {@link SampleStatus#OK}, or why the scan already knows the sample cannot be read. */
    public SampleStatus status(int sample) {
        int s = shardOf(sample);
        return table(s).status(sample - firstSample[s]);
    }

    /** {@link #ENCODED} or {@link #NPY}. */
    public byte format(int sample) {
        int s = shardOf(sample);
        return table(s).format(sample - firstSample[s]);
    }

    /** Whether the samples carry {@code .cls} labels; without any, every label is -1. */
    public boolean labelled() {
        return labelled;
    }

    /**
     * Damage found in whole shards: a shard that is not a tar file, or whose members stop at a
     * damaged header (the samples before it are kept). Empty when every shard read cleanly, and
     * for a dataset opened from a shard catalog (a damaged shard is named when it is read).
     */
    public List<String> problems() {
        return problems;
    }

    /** Whether the dataset was opened from a shard catalog or metadata, its shards' tables built when first read. */
    public boolean catalogued() {
        return catalogName != null || format != null;
    }

    /**
     * {@link #catalogued()}.
     *
     * @deprecated "index" means a sample's position only; use {@link #catalogued()}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    public boolean indexed() {
        return catalogued();
    }

    /** Whether the shards are remote: fetched whole into the bounded shard cache, so shuffled within windows of shards by default. */
    public boolean remote() {
        return bytes.remote();
    }

    /**
     * Whether a shard's bytes are loaded into the bounded shard cache when read (remote shards, Parquet row
     * groups), rather than mapped where they lie: such shards are shuffled within windows by default,
     * and are not read ahead to list their samples.
     */
    public boolean cached() {
        return bytes.remote() || (format != null && format.cached());
    }

    /** The shards' bytes, by shard number. */
    public ShardBytes bytes() {
        return bytes;
    }

    @Override
    public void close() {
        bytes.close();
    }
}
