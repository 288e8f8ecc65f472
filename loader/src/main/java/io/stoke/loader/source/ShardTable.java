package io.stoke.loader.source;

import io.stoke.loader.error.SampleStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One shard's samples, as its tar headers give them: each sample's key, label, image member
 * (offset and size in the shard) and format, and what a scan found wrong with it. Immutable once
 * built; {@link TarShards} holds one per shard, built when the dataset is opened or, from an
 * index, when the shard is first read.
 */
final class ShardTable {
    private final byte[] keyBytes;
    private final int[] keyStart; // length size()+1
    private final int[] labels;
    private final long[] offsets;
    private final int[] lengths;
    private final byte[] status;
    private final byte[] formats;
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
        problem = scan.problem;
    }

    int size() {
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

    /** What the scan found wrong with the shard as a whole, or null. */
    String problem() {
        return problem;
    }
}
