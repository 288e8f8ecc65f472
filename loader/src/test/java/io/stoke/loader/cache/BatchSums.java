package io.stoke.loader.cache;

import io.stoke.loader.Batch;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.zip.CRC32;

/** A batch as the cache tests compare batches: its sample indices and its pixels' CRC-32. */
final class BatchSums {
    private BatchSums() {}

    static String of(Batch b) {
        CRC32 crc = new CRC32();
        crc.update(b.pixels().asByteBuffer());
        return Arrays.toString(b.indices().toArray(ValueLayout.JAVA_LONG)) + " " + crc.getValue();
    }
}
