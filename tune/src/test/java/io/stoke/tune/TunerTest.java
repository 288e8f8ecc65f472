package io.stoke.tune;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.stoke.tune.CostModel.Bound;
import io.stoke.tune.CostModel.Prediction;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The recommendation rule on made-up measurements. */
class TunerTest {
    private static Tuner.Point point(int batchSize, int workers, double imagesPerSecond) {
        Trial.Measurement m = new Trial.Measurement(
                batchSize, workers, 10, 10, 10 / imagesPerSecond, imagesPerSecond, 0, 0, 0, -1, -1, -1);
        return new Tuner.Point(m, new Prediction(batchSize, workers, imagesPerSecond, Bound.decode));
    }

    @Test
    void theFastestWinsUnlessFewerWorkersComeWithinThreePercent() {
        Tuner.Point fast = point(256, 4, 1000);
        Tuner.Point close = point(128, 2, 975);
        Tuner.Point closer = point(256, 2, 990);
        Tuner.Point slow = point(256, 1, 960);
        assertEquals(closer, Tuner.recommend(List.of(fast, close, closer, slow)));
        assertEquals(fast, Tuner.recommend(List.of(fast, slow)));
        assertEquals(close, Tuner.recommend(List.of(fast, close)));
    }
}
