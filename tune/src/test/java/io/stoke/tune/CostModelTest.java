package io.stoke.tune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.tune.CostModel.Bound;
import io.stoke.tune.CostModel.DecodeCost;
import io.stoke.tune.CostModel.Prediction;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The cost model's arithmetic on made-up probes: each bound where it should bind. */
class CostModelTest {
    /** 4 cores; one worker decodes 250 images/s, four 900 (CPU-bound: 4 cores busy). */
    private static final DecodeCost ONE = new DecodeCost(64, 1, 250, 0.004, 0.004, 0);

    private static final DecodeCost FOUR = new DecodeCost(64, 4, 900, 4 / 900.0, 4 / 900.0, 0);

    private static CostModel sleeping(double stepMs, int... sizes) {
        List<Step.StepCost> steps = java.util.Arrays.stream(sizes)
                .mapToObj(b -> new Step.StepCost(b, stepMs / 1e3, 0, false))
                .toList();
        return new CostModel(4, ONE, FOUR, steps);
    }

    @Test
    void withoutAStepDecodingBoundsItAndScalesAsTheProbesSay() {
        CostModel m = sleeping(0, 32, 256);
        assertEquals(250, m.predict(32, 1).imagesPerSecond(), 1e-9);
        assertEquals(900, m.predict(256, 4).imagesPerSecond(), 1e-9);
        assertEquals(Bound.decode, m.predict(32, 2).bound());
        // Between the probes the time per image per worker is interpolated: 4 ms at one worker,
        // 4.44 ms at four, so 4.15 ms at two.
        double perWorker = 0.004 + (4 / 900.0 - 0.004) / 3;
        assertEquals(2 / perWorker, m.predict(32, 2).imagesPerSecond(), 1e-9);
        // Past the cores, CPU-bound decoding gains nothing.
        assertEquals(900, m.predict(32, 8).imagesPerSecond(), 1e-9);
    }

    @Test
    void pastTheCoresMoreWorkersHelpOnlyWhereDecodingLeftCoresIdle() {
        // Four workers kept only 2 of 4 cores busy (waiting on reads): the cores allow twice as much.
        DecodeCost waiting = new DecodeCost(64, 4, 900, 2 / 900.0, 2 / 900.0, 0);
        CostModel m = new CostModel(4, ONE, waiting, List.of(new Step.StepCost(64, 0, 0, false)));
        assertEquals(6 / (4 / 900.0), m.predict(64, 6).imagesPerSecond(), 1e-6);
        assertEquals(1800, m.predict(64, 16).imagesPerSecond(), 1e-6);
        // The same probe while another process kept the other 2 cores busy: no idle core to fill.
        DecodeCost crowded = new DecodeCost(64, 4, 900, 2 / 900.0, 2 / 900.0, 2);
        CostModel c = new CostModel(4, ONE, crowded, List.of(new Step.StepCost(64, 0, 0, false)));
        assertEquals(900, c.predict(64, 8).imagesPerSecond(), 1e-6);
    }

    @Test
    void aSleepingStepBoundsItWhenLongerThanDecodingTheBatch() {
        // Four workers decode 256 images in 0.28 s, inside the 0.4 s sleep.
        CostModel m = sleeping(400, 32, 256);
        Prediction p = m.predict(256, 4);
        assertEquals(Bound.step, p.bound());
        assertEquals(256 / 0.4, p.imagesPerSecond(), 1e-9);
        // One worker needs 1.024 s for 256 images: decoding bounds it, the sleep overlaps.
        assertEquals(Bound.decode, m.predict(256, 1).bound());
        assertEquals(250, m.predict(256, 1).imagesPerSecond(), 1e-9);
    }

    @Test
    void aModelOnTheSameCoresLeavesDecodingOnlyWhatItDoesNotUse() {
        // 100 ms per batch of 64 on 3 of the 4 cores: per batch, 0.3 core-seconds for the model
        // and 64 x 4.44 ms for decoding at 4 workers, over 4 cores.
        double cpu = 4 / 900.0;
        CostModel m = new CostModel(4, ONE, FOUR, List.of(new Step.StepCost(64, 0.1, 3, true)));
        Prediction p = m.predict(64, 4);
        assertEquals(Bound.cores, p.bound());
        assertEquals(64 / ((3 * 0.1 + 64 * cpu) / 4), p.imagesPerSecond(), 1e-9);
        // With the model alone on the machine the step would bound it at 640 images/s.
        assertTrue(p.imagesPerSecond() < 640);
    }

    @Test
    void aBatchSizeWithoutAStepCostIsAnError() {
        CostModel m = sleeping(0, 32);
        assertThrows(IllegalArgumentException.class, () -> m.predict(64, 1));
    }
}
