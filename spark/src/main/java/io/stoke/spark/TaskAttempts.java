package io.stoke.spark;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.Success$;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;

/**
 * What Spark did with a job's tasks, counted on the driver for the manifest: attempts launched,
 * of which speculative copies, attempts that failed or were killed, executors lost.
 */
final class TaskAttempts extends SparkListener {
    final AtomicInteger launched = new AtomicInteger();
    final AtomicInteger speculative = new AtomicInteger();
    final AtomicInteger failed = new AtomicInteger();
    final AtomicInteger executorsLost = new AtomicInteger();

    @Override
    public void onTaskStart(SparkListenerTaskStart start) {
        launched.incrementAndGet();
        if (start.taskInfo().speculative()) {
            speculative.incrementAndGet();
        }
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
        if (end.reason() != Success$.MODULE$) {
            failed.incrementAndGet();
        }
    }

    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
        executorsLost.incrementAndGet();
    }

    Manifest.Attempts snapshot() {
        return new Manifest.Attempts(launched.get(), speculative.get(), failed.get(), executorsLost.get());
    }
}
