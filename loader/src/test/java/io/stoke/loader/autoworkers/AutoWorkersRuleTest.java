package io.stoke.loader.autoworkers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * {@link AutoWorkersRule} against {@link SimulatedPipeline} in virtual time: deterministic. The reference
 * for "the right count" is the same simulation run with every fixed count: the fewest workers with
 * which the consumer waits at most 1% of the time (or, when none is enough, the most).
 */
class AutoWorkersRuleTest {
    private static final long MS = 1_000_000L;

    /** The fewest fixed workers that keep the consumer's wait at most 1%, or {@code cores} if none do. */
    private static int fewestEnough(int cores, int batch, double cpuPerSample, long step, boolean spins) {
        for (int w = 1; w <= cores; w++) {
            SimulatedPipeline p = new SimulatedPipeline(cores, batch, 4, cpuPerSample, step, spins, 0.1, 7, w);
            p.run(200, null);
            if (p.run(600, null).stallFraction() <= 0.01) {
                return w;
            }
        }
        return cores;
    }

    private static SimulatedPipeline auto(int cores, int batch, double cpuPerSample, long step, boolean spins) {
        return new SimulatedPipeline(cores, batch, 4, cpuPerSample, step, spins, 0.1, 11, cores);
    }

    @Test
    void modelBoundConvergesToTheFewestWorkersThatKeepUp() {
        // 64 samples of 4 ms CPU each per 100 ms step: 2.56 cores of decoding.
        int expected = fewestEnough(8, 64, 4 * MS, 100 * MS, false);
        assertEquals(3, expected, "the reference itself");
        SimulatedPipeline p = auto(8, 64, 4 * MS, 100 * MS, false);
        AutoWorkersRule tuner = new AutoWorkersRule(8, 8);
        p.run(300, tuner);
        SimulatedPipeline.Totals after = p.run(1000, tuner);
        assertTrue(
                after.activeAtEnd() == expected || after.activeAtEnd() == expected + 1,
                "settled at " + after.activeAtEnd() + ", expected " + expected + ": " + p.decisions);
        assertTrue(after.stallFraction() <= 0.02, "stall " + after.stallFraction() + ": " + p.decisions);
    }

    @Test
    void loaderBoundKeepsEveryWorker() {
        SimulatedPipeline p = auto(8, 64, 4 * MS, 0, false);
        AutoWorkersRule tuner = new AutoWorkersRule(8, 8);
        SimulatedPipeline.Totals t = p.run(1000, tuner);
        assertEquals(8, t.activeAtEnd(), p.decisions.toString());
        assertTrue(p.decisions.isEmpty(), p.decisions.toString());
    }

    @Test
    void startingFromOneWorkerItClimbsToWhatTheConsumerNeeds() {
        int expected = fewestEnough(8, 64, 4 * MS, 50 * MS, false); // 5.12 cores
        SimulatedPipeline p = new SimulatedPipeline(8, 64, 4, 4 * MS, 50 * MS, false, 0.1, 3, 1);
        AutoWorkersRule tuner = new AutoWorkersRule(8, 1);
        p.run(600, tuner);
        SimulatedPipeline.Totals t = p.run(1000, tuner);
        assertTrue(
                t.activeAtEnd() == expected || t.activeAtEnd() == expected + 1,
                t.activeAtEnd() + " vs " + expected + ": " + p.decisions);
    }

    @Test
    void reconvergesWhenTheStepTimeChangesFourfoldEitherWay() {
        SimulatedPipeline p = auto(8, 64, 4 * MS, 200 * MS, false);
        AutoWorkersRule tuner = new AutoWorkersRule(8, 8);
        long[] steps = {200 * MS, 50 * MS, 200 * MS, 800 * MS};
        for (long step : steps) {
            p.stepNanos = step;
            int expected = fewestEnough(8, 64, 4 * MS, step, false);
            int before = p.decisions.size();
            p.run(400, tuner);
            SimulatedPipeline.Totals settled = p.run(600, tuner);
            assertTrue(
                    settled.activeAtEnd() == expected || settled.activeAtEnd() == expected + 1,
                    "step " + step / MS + " ms: " + settled.activeAtEnd() + " workers, expected " + expected + ": "
                            + p.decisions.subList(before, p.decisions.size()));
            assertTrue(settled.stallFraction() <= 0.02, "step " + step / MS + " ms: stall " + settled.stallFraction());
        }
    }

    @Test
    void makesFewChangesPerThousandBatchesOnANoisyBorder() {
        // 1.9 cores of decoding, with 30% jitter per batch: close to a boundary between 2 and 3.
        SimulatedPipeline p = new SimulatedPipeline(8, 64, 4, 4 * MS, 135 * MS, false, 0.3, 5, 8);
        AutoWorkersRule tuner = new AutoWorkersRule(8, 8);
        p.run(300, tuner);
        int before = p.decisions.size();
        SimulatedPipeline.Totals t = p.run(3000, tuner);
        int changes = p.decisions.size() - before;
        assertTrue(changes <= 9, changes + " changes in 3000 batches: " + p.decisions);
        assertTrue(t.stallFraction() <= 0.02, "stall " + t.stallFraction());
    }

    @Test
    void aCpuBoundModelOnTheSameCoresKeepsItsCore() {
        // Two cores, a consumer that spins one of them for 100 ms a batch, 0.32 cores of decoding:
        // one worker leaves the model its core; two take a share of it.
        SimulatedPipeline alone = new SimulatedPipeline(2, 32, 4, 1 * MS, 100 * MS, true, 0.1, 9, 2);
        AutoWorkersRule tuner = new AutoWorkersRule(2, 2);
        alone.run(200, tuner);
        SimulatedPipeline.Totals t = alone.run(500, tuner);
        assertEquals(1, t.activeAtEnd(), alone.decisions.toString());
        double stepMs = t.elapsedNanos() / 1e6 / t.batches();
        assertTrue(stepMs < 100 * 1.05, "step " + stepMs + " ms");
    }

    @Test
    void workersYieldToAModelThatFillsEveryCoreAndTheModelGetsItsStepBack() {
        // A model on both of 2 cores for 60 ms of a 100 ms step (then it waits, as on a sync);
        // 32 samples of 1 ms: 0.32 cores of decoding, which fits in the model's gaps. At the
        // process's priority the worker takes a share of the cores while the model computes.
        SimulatedPipeline fair = new SimulatedPipeline(2, 32, 4, 1 * MS, 100 * MS, true, 0.1, 9, 1);
        fair.consumerThreads = 2;
        fair.spinFraction = 0.6;
        double fairStep = perStep(fair.run(300, null));
        SimulatedPipeline p = new SimulatedPipeline(2, 32, 4, 1 * MS, 100 * MS, true, 0.1, 9, 2);
        p.consumerThreads = 2;
        p.spinFraction = 0.6;
        AutoWorkersRule tuner = new AutoWorkersRule(2, 2, true);
        p.run(300, tuner);
        double autoStep = perStep(p.run(500, tuner));
        assertTrue(tuner.yielding(), p.decisions.toString());
        assertTrue(
                p.decisions.stream().anyMatch(d -> d.toYielding() && d.reason().contains("for a CPU")),
                p.decisions.toString());
        assertTrue(autoStep < fairStep * 0.97, autoStep + " ms against " + fairStep + " ms: " + p.decisions);
        assertTrue(autoStep < 100 * 1.02, autoStep + " ms: the model's own step");
        // When the consumer changes (its step 4x shorter), the workers go back to the process's
        // priority and the tuner looks again.
        p.stepNanos = 25 * MS;
        p.run(400, tuner);
        assertTrue(p.decisions.stream().anyMatch(d -> d.fromYielding() && !d.toYielding()), p.decisions.toString());
    }

    @Test
    void aModelWithNoGapsKeepsTheWorkersAtItsPriorityForTheRate() {
        // Both cores busy all step long: decoding at the lowest priority would run only while the
        // model waits for it, serialising the two; the rate falls and yielding is undone.
        SimulatedPipeline p = new SimulatedPipeline(2, 32, 4, 1 * MS, 100 * MS, true, 0.1, 9, 2);
        p.consumerThreads = 2;
        AutoWorkersRule tuner = new AutoWorkersRule(2, 2, true);
        p.run(1500, tuner);
        assertTrue(!tuner.yielding(), p.decisions.toString());
        assertTrue(p.decisions.stream().anyMatch(d -> d.reason().contains("cut the rate")), p.decisions.toString());
        assertTrue(p.decisions.size() <= 9, p.decisions.size() + " changes in 1500 batches: " + p.decisions);
    }

    @Test
    void withoutLeaveToYieldTheWorkersKeepTheirPriority() {
        SimulatedPipeline p = new SimulatedPipeline(2, 32, 4, 1 * MS, 100 * MS, true, 0.1, 9, 2);
        p.consumerThreads = 2;
        AutoWorkersRule tuner = new AutoWorkersRule(2, 2, false);
        p.run(800, tuner);
        assertTrue(p.decisions.stream().noneMatch(WorkerChange::toYielding), p.decisions.toString());
    }

    private static double perStep(SimulatedPipeline.Totals t) {
        return t.elapsedNanos() / 1e6 / t.batches();
    }

    @Test
    void anAddedWorkerThatDoesNotPayIsUndoneAndNotRetriedAtOnce() {
        AutoWorkersRule tuner = new AutoWorkersRule(4, 2);
        MeasuredWindow stalled = new MeasuredWindow(500 * MS, 10, 640, 2, 250 * MS, 900 * MS, 400 * MS, 0, 0, 1);
        WorkerChange add = tuner.observe(stalled, 0);
        assertEquals(3, add.toWorkers());
        assertNull(tuner.observe(stalled, 1), "the window after a change is skipped");
        WorkerChange undo = tuner.observe(stalled, 2);
        assertEquals(2, undo.toWorkers(), "no faster, still waiting: undone");
        assertTrue(undo.reason().contains("did not pay"), undo.reason());
        for (int i = 0; i < 5; i++) {
            assertNull(tuner.observe(stalled, 3 + i), "backing off, window " + i);
        }
        assertEquals(3, tuner.observe(stalled, 9).toWorkers(), "tried again after the back-off");
        assertNull(tuner.observe(stalled, 10));
        assertEquals(2, tuner.observe(stalled, 11).toWorkers());
        for (int i = 0; i < 9; i++) {
            assertNull(tuner.observe(stalled, 12 + i), "the back-off doubled, window " + i);
        }
        assertEquals(3, tuner.observe(stalled, 21).toWorkers());
    }

    @Test
    void aRemovalThatCostsTheRateIsUndoneEvenWhenTheConsumerNeverWaits() {
        // A model on the CPU: with 2 workers decoding in bursts it never waits and runs 340/s;
        // the 1 worker left decodes all the time beside it and its steps slow to 306/s.
        AutoWorkersRule tuner = new AutoWorkersRule(2, 2);
        MeasuredWindow two = new MeasuredWindow(1000 * MS, 6, 340, 2, 0, 830 * MS, 100 * MS, 0, 1, 3);
        MeasuredWindow one = new MeasuredWindow(1000 * MS, 5, 306, 1, 0, 830 * MS, 100 * MS, 0, 0, 2);
        WorkerChange remove = tuner.observe(two, 0);
        assertEquals(1, remove.toWorkers(), "0.83 cores of decoding: one worker's worth");
        assertNull(tuner.observe(one, 1));
        WorkerChange undo = tuner.observe(one, 2);
        assertEquals(2, undo.toWorkers());
        assertTrue(undo.reason().contains("the rate fell to 5.0 batches/s from 6.0"), undo.reason());
        for (int i = 0; i < 5; i++) {
            assertNull(tuner.observe(two, 3 + i), "not tried again at once, window " + i);
        }
    }

    @Test
    void windowsNeedEnoughBatchesOrEnoughTime() {
        assertTrue(!AutoWorkersRule.windowComplete(100 * MS, 100));
        assertTrue(!AutoWorkersRule.windowComplete(300 * MS, 3));
        assertTrue(AutoWorkersRule.windowComplete(300 * MS, 8));
        assertTrue(AutoWorkersRule.windowComplete(2000 * MS, 1));
    }
}
