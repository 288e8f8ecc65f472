package io.stoke.loader.work;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** The loader's slack, as the restart cache's fillers read it: only a waiting, finished or stopped pipeline has any. */
class WorkerSlackTest {
    @Test
    void workersThatAllDecodeLeaveNoSlack() {
        WorkerSlack slack = new WorkerSlack(new RunState(10));
        assertFalse(slack.getAsBoolean(), "every worker decoding");
        slack.waitStarts();
        assertTrue(slack.getAsBoolean(), "one waits for a slot");
        slack.waitStarts();
        slack.waitEnds();
        assertTrue(slack.getAsBoolean(), "the other still waits");
        slack.waitEnds();
        assertFalse(slack.getAsBoolean(), "both decode again");
    }

    @Test
    void aFinishedWorkerOrAStoppedPipelineLeavesSlack() {
        WorkerSlack finished = new WorkerSlack(new RunState(10));
        finished.workerFinished();
        assertTrue(finished.getAsBoolean(), "past the last ticket");
        RunState state = new RunState(10);
        WorkerSlack stopped = new WorkerSlack(state);
        state.running = false;
        assertTrue(stopped.getAsBoolean(), "closed");
    }
}
