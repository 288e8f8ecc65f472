package io.stoke.arrow;

import io.stoke.loader.error.SampleStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Reads one row's image place (its file offset and length, or its path) and label from the mapped
 * files, at opening: every read of an offsets, validity or label buffer is checked against the buffer's
 * length first, and an image's place against its data buffer. One per opening, not thread-safe: the
 * last row's results are its fields.
 */
final class ArrowRowReader {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final List<ArrowStreamFile> files;
    private final MemorySegment[] maps;
    private final ArrowColumns cols;
    private final long[][] batchFirstRow;

    long offset;
    int length;
    String path;
    int label;
    SampleStatus status;
    String detail;

    ArrowRowReader(List<ArrowStreamFile> files, MemorySegment[] maps, ArrowColumns cols) {
        this.files = files;
        this.maps = maps;
        this.cols = cols;
        this.batchFirstRow = new long[files.size()][];
        for (int f = 0; f < files.size(); f++) {
            List<ArrowStreamFile.Batch> batches = files.get(f).batches;
            long[] first = new long[batches.size() + 1];
            for (int b = 0; b < batches.size(); b++) {
                first[b + 1] = first[b] + batches.get(b).rows();
            }
            batchFirstRow[f] = first;
        }
    }

    void read(int file, long rowInFile) {
        long[] first = batchFirstRow[file];
        int b = Arrays.binarySearch(first, rowInFile);
        b = b >= 0 ? b : -b - 2;
        while (first[b + 1] == rowInFile) {
            b++; // past empty batches
        }
        ArrowStreamFile.Batch batch = files.get(file).batches.get(b);
        long r = rowInFile - first[b];
        MemorySegment map = maps[file];
        Path where = files.get(file).path;
        path = null;
        detail = null;
        status = SampleStatus.OK;
        label = cols.label != null ? label(map, batch, r, where) : -1;
        if (cols.structNode >= 0 && !valid(map, batch, cols.structNode, cols.structValidity, r, where)) {
            none("its " + cols.imageName + " is null");
            return;
        }
        ArrowColumns.Values v = cols.bytes;
        if (valid(map, batch, v.node(), v.validity(), r, where)) {
            long start = offsetAt(map, batch, v, r, where);
            long end = offsetAt(map, batch, v, r + 1, where);
            long data = batch.bufferLength()[v.data()];
            if (start < 0 || end < start || end > data || end - start > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(where + " row " + rowInFile + ": its image's offsets [" + start
                        + ", " + end + ") lie outside the column's data buffer of " + data + " bytes");
            }
            offset = batch.body() + batch.bufferOffset()[v.data()] + start;
            length = (int) (end - start);
            if (length == 0) {
                status = SampleStatus.EMPTY_FILE;
                detail = "its image's bytes are empty";
            }
            return;
        }
        ArrowColumns.Values p = cols.path;
        if (p != null && valid(map, batch, p.node(), p.validity(), r, where)) {
            long start = offsetAt(map, batch, p, r, where);
            long end = offsetAt(map, batch, p, r + 1, where);
            long data = batch.bufferLength()[p.data()];
            if (start < 0 || end < start || end > data || end - start > 65536) {
                throw new IllegalArgumentException(where + " row " + rowInFile + ": its image path's offsets [" + start
                        + ", " + end + ") lie outside the column's data buffer of " + data + " bytes");
            }
            byte[] utf8 = map.asSlice(batch.body() + batch.bufferOffset()[p.data()] + start, end - start)
                    .toArray(ValueLayout.JAVA_BYTE);
            path = new String(utf8, StandardCharsets.UTF_8);
            if (path.contains("://")) {
                // datasets fetches such an image itself (hf://, https://); Stoke reads local files.
                throw new IllegalArgumentException(where + " row " + rowInFile + ": its image is the URL " + path
                        + ", not a local file: download the dataset's files (load_dataset does, unless"
                        + " streaming) or embed the images' bytes (save_to_disk)");
            }
            return;
        }
        none("its " + cols.imageName + " has neither bytes nor a path");
    }

    private void none(String why) {
        status = SampleStatus.NO_IMAGE;
        detail = why;
    }

    private static boolean valid(
            MemorySegment map, ArrowStreamFile.Batch batch, int node, int validity, long r, Path where) {
        if (batch.nodeNulls()[node] == 0 || batch.bufferLength()[validity] == 0) {
            return true;
        }
        long byteAt = r >>> 3;
        if (byteAt >= batch.bufferLength()[validity]) {
            throw new IllegalArgumentException(where + ": a validity bitmap of " + batch.bufferLength()[validity]
                    + " bytes is shorter than its " + batch.rows() + " rows");
        }
        byte bits = map.get(ValueLayout.JAVA_BYTE, batch.body() + batch.bufferOffset()[validity] + byteAt);
        return (bits >> (r & 7) & 1) != 0;
    }

    private static long offsetAt(
            MemorySegment map, ArrowStreamFile.Batch batch, ArrowColumns.Values v, long r, Path where) {
        int width = v.large() ? 8 : 4;
        if ((r + 1) * width > batch.bufferLength()[v.offsets()]) {
            throw new IllegalArgumentException(where + ": an offsets buffer of " + batch.bufferLength()[v.offsets()]
                    + " bytes is shorter than its " + batch.rows() + " rows");
        }
        long at = batch.body() + batch.bufferOffset()[v.offsets()] + r * width;
        return v.large() ? map.get(LONG, at) : map.get(INT, at);
    }

    private int label(MemorySegment map, ArrowStreamFile.Batch batch, long r, Path where) {
        ArrowColumns.Integers l = cols.label;
        if (!valid(map, batch, l.node(), l.validity(), r, where)) {
            return -1;
        }
        if ((r + 1) * l.bytes() > batch.bufferLength()[l.data()]) {
            throw new IllegalArgumentException(where + ": a label buffer of " + batch.bufferLength()[l.data()]
                    + " bytes is shorter than its " + batch.rows() + " rows");
        }
        long at = batch.body() + batch.bufferOffset()[l.data()] + r * l.bytes();
        long value = switch (l.bytes()) {
            case 1 -> l.signed() ? map.get(ValueLayout.JAVA_BYTE, at) : map.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
            case 2 -> l.signed() ? map.get(SHORT, at) : map.get(SHORT, at) & 0xFFFF;
            case 4 -> l.signed() ? map.get(INT, at) : map.get(INT, at) & 0xFFFF_FFFFL;
            default -> map.get(LONG, at);
        };
        if (value < 0 || value > Integer.MAX_VALUE) {
            if (value != -1) { // ClassLabel's -1: no label
                status = SampleStatus.BAD_LABEL;
                detail = "its label " + value + " is not a non-negative int";
            }
            return -1;
        }
        return (int) value;
    }
}
