package io.stoke.loader.work;

import io.stoke.loader.autoworkers.WorkerPool;
import io.stoke.ring.SlotRing;

/** A pipeline as {@link io.stoke.loader.autoworkers.AutoWorkers} sees it: read-only but for which workers run. */
final class PipelineWorkers implements WorkerPool {
    private final Pipeline pipeline;
    private final WorkerActivity activity;
    private final WorkerCounters counters;
    private final Thread[] threads;

    PipelineWorkers(Pipeline pipeline, WorkerActivity activity, WorkerCounters counters, Thread[] threads) {
        this.pipeline = pipeline;
        this.activity = activity;
        this.counters = counters;
        this.threads = threads;
    }

    @Override
    public SlotRing ring() {
        return pipeline.ring();
    }

    @Override
    public boolean isRunningOrPublishing() {
        return pipeline.isRunningOrPublishing();
    }

    @Override
    public long consumerTaken() {
        return pipeline.consumerTaken();
    }

    @Override
    public long consumerWaitNanos() {
        return pipeline.consumerWaitNanos();
    }

    @Override
    public boolean consumerInProcess() {
        return pipeline.consumerInProcess();
    }

    @Override
    public Thread thread(int worker) {
        return threads[worker];
    }

    @Override
    public long threadId(int worker) {
        return counters.get(worker, WorkerCounters.TID);
    }

    @Override
    public long samples(int worker) {
        return counters.get(worker, WorkerCounters.SAMPLES);
    }

    @Override
    public long slotWaitNanos(int worker) {
        return counters.get(worker, WorkerCounters.SLOT_WAIT_NANOS);
    }

    @Override
    public void activate(int workers, boolean yielding) {
        activity.activate(workers, yielding);
    }
}
