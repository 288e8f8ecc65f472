package io.stoke.loader.source;

import io.stoke.loader.error.SampleStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * One shard's samples: each sample's key, label, image bytes (offset and size in the shard's bytes,
 * as {@link ShardBytes#acquire} gives them) and format, and what is known wrong with it. A tar
 * shard's table comes from its headers; another {@link ShardFormat} (a Parquet row group) builds
 * one with {@link #of}. Immutable once built; {@link Shards} holds one per shard, built when the
 * dataset is opened or when the shard is first read.
 */
public final class ShardTable {
    private final byte[] keyBytes;
    private final int[] keyStart; // length size()+1
    private final int[] labels;
    private final long[] offsets;
    private final int[] lengths;
    private final byte[] status;
    private final byte[] formats;
    private final String[] details; // null, or per sample: why its status is not OK, in words
    private final String problem;

    /**
     * The scan's samples; with {@code labelled} (some sample of the dataset has a label) a sample
     * without one is {@link SampleStatus#NO_LABEL}.
     */
    ShardTable(TarShardScanner.ShardScan scan, boolean labelled) {
        int n = scan.keys.size();
        byte[][] keys = new byte[n][];
        int total = 0;
        for (int i = 0; i < n; i++) {
            keys[i] = scan.keys.get(i).getBytes(StandardCharsets.UTF_8);
            total = Math.addExact(total, keys[i].length);
        }
        keyBytes = new byte[total];
        keyStart = new int[n + 1];
        for (int i = 0, at = 0; i < n; i++) {
            keyStart[i] = at;
            System.arraycopy(keys[i], 0, keyBytes, at, keys[i].length);
            at += keys[i].length;
            keyStart[i + 1] = at;
        }
        labels = Arrays.copyOf(scan.labels, n);
        offsets = Arrays.copyOf(scan.offsets, n);
        lengths = Arrays.copyOf(scan.lengths, n);
        formats = Arrays.copyOf(scan.formats, n);
        status = new byte[n];
        for (int i = 0; i < n; i++) {
            SampleStatus st = scan.status[i];
            if (st == SampleStatus.OK && labelled && !scan.hasLabel[i]) {
                st = SampleStatus.NO_LABEL;
            }
            status[i] = (byte) st.code();
        }
        details = null;
        problem = scan.problem;
    }

    private ShardTable(
            List<String> keys, int[] labels, long[] offsets, int[] lengths, byte[] status, String[] details) {
        int n = labels.length;
        if (keys.size() != n
                || offsets.length != n
                || lengths.length != n
                || status.length != n
                || (details != null && details.length != n)) {
            throw new IllegalArgumentException("a shard table's columns differ in length");
        }
        byte[][] bytes = new byte[n][];
        int total = 0;
        for (int i = 0; i < n; i++) {
            bytes[i] = keys.get(i).getBytes(StandardCharsets.UTF_8);
            total = Math.addExact(total, bytes[i].length);
        }
        this.keyBytes = new byte[total];
        this.keyStart = new int[n + 1];
        for (int i = 0, at = 0; i < n; i++) {
            keyStart[i] = at;
            System.arraycopy(bytes[i], 0, keyBytes, at, bytes[i].length);
            at += bytes[i].length;
            keyStart[i + 1] = at;
        }
        this.labels = labels.clone();
        this.offsets = offsets.clone();
        this.lengths = lengths.clone();
        this.status = status.clone();
        this.formats = new byte[n]; // all Shards.ENCODED
        this.details = details != null ? details.clone() : null;
        this.problem = null;
    }

    /**
     * A table of encoded images: sample {@code i} is {@code keys[i]}, labelled {@code labels[i]} (-1:
     * none), its bytes at {@code offsets[i]} for {@code lengths[i]} bytes of its shard's bytes, or,
     * when {@code status[i]} is not {@link SampleStatus#OK}, failed for the reason {@code details[i]}
     * gives (null: the status's own words).
     */
    public static ShardTable of(
            List<String> keys, int[] labels, long[] offsets, int[] lengths, SampleStatus[] status, String[] details) {
        byte[] codes = new byte[status.length];
        for (int i = 0; i < codes.length; i++) {
            codes[i] = (byte) status[i].code();
        }
        return new ShardTable(keys, labels, offsets, lengths, codes, details);
    }

    public int size() {
        return labels.length;
    }

    String key(int i) {
        return new String(keyBytes, keyStart[i], keyLength(i), StandardCharsets.UTF_8);
    }

    int keyLength(int i) {
        return keyStart[i + 1] - keyStart[i];
    }

    int copyKey(int i, MemorySegment dst, long offset) {
        int length = keyLength(i);
        MemorySegment.copy(keyBytes, keyStart[i], dst, ValueLayout.JAVA_BYTE, offset, length);
        return length;
    }

    int label(int i) {
        return labels[i];
    }

    long offset(int i) {
        return offsets[i];
    }

    int length(int i) {
        return lengths[i];
    }

    SampleStatus status(int i) {
        return SampleStatus.of(status[i]);
    }

    byte format(int i) {
        return formats[i];
    }

    /** Whether {@code other} places every sample's bytes where this table does. */
    public boolean sameLayout(ShardTable other) {
        return Arrays.equals(offsets, other.offsets) && Arrays.equals(lengths, other.lengths);
    }

    /** Why sample {@code i} failed, in words, when the table says more than its status. */
    String detail(int i) {
        String d = details != null ? details[i] : null;
        return d != null ? d : SampleStatus.of(status[i]).description();
    }

    /** What the scan found wrong with the shard as a whole, or null. */
    String problem() {
        return problem;
    }
}
