package io.stoke.lakehouse;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.delta.kernel.internal.actions.DeletionVectorDescriptor;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * A log whose deletion vectors claim more rows than Stoke holds is refused by the log's own counts,
 * before any vector is read (its file need not exist), naming the table, the file and the rewrite.
 */
class DeletionVectorLimitTest {
    @Test
    void vectorsDeletingMoreRowsThanStokeHoldsAreRefusedBeforeTheyAreRead() {
        DeletionVectorDescriptor claim = new DeletionVectorDescriptor(
                "u", "ab^-aqEH.-t@S}K{vb[*k^", Optional.of(1), 40, TableSnapshot.MAX_DELETED_ROWS - 9);
        KernelEngine engine = new KernelEngine(new KernelFileIO(null));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> DeltaSnapshots.deletedRows(
                        "/lake/t", "file:/lake/t", "part-1.parquet", claim.toRow(), engine, 10));
        assertTrue(
                e.getMessage().startsWith("/lake/t: its deletion vectors delete more than 8,388,608 rows"),
                e.getMessage());
        assertTrue(
                e.getMessage().contains("8,388,609 up to part-1.parquet")
                        && e.getMessage().contains("REORG TABLE"),
                e.getMessage());
    }
}
