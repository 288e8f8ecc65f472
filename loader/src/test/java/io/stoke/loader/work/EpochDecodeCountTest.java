package io.stoke.loader.work;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The per-epoch decode count: an epoch stops the stream only when not one of its samples decoded. */
class EpochDecodeCountTest {
    private static List<SampleError> failures(int n) {
        List<SampleError> errors = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            errors.add(new SampleError(i, 100 + i, "f" + i, SampleStatus.CORRUPT, null));
        }
        return errors;
    }

    @Test
    void anEpochWithOneDecodedSampleGoesOn() {
        EpochDecodeCount count = new EpochDecodeCount();
        assertNull(count.count(0, 4, failures(4), false));
        assertNull(count.count(0, 3, failures(2), true)); // one of the 7 decoded
    }

    @Test
    void anEpochWithNothingDecodedStopsAtItsLastBatch() {
        EpochDecodeCount count = new EpochDecodeCount();
        assertNull(count.count(3, 4, failures(4), false));
        NoSampleDecodedException e = count.count(3, 2, failures(2), true);
        assertNotNull(e);
        assertEquals(3, e.epoch());
        assertEquals(6, e.failed());
        assertEquals(100, e.errors().getFirst().sample());
    }

    @Test
    void eachEpochCountsAfresh() {
        EpochDecodeCount count = new EpochDecodeCount();
        assertNull(count.count(0, 2, List.of(), true)); // all decoded
        NoSampleDecodedException e = count.count(1, 2, failures(2), true);
        assertNotNull(e, "the second epoch decoded nothing, whatever the first did");
        assertEquals(2, e.failed());
        assertNull(count.count(2, 2, failures(1), true));
    }

    @Test
    void keepsAtMostTheExceptionsShareOfErrors() {
        EpochDecodeCount count = new EpochDecodeCount();
        int n = NoSampleDecodedException.KEPT + 5;
        NoSampleDecodedException e = count.count(0, n, failures(n), true);
        assertEquals(NoSampleDecodedException.KEPT, e.errors().size());
        assertEquals(n, e.failed());
    }
}
