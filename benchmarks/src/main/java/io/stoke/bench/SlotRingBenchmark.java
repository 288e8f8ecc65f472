package io.stoke.bench;

import io.stoke.ring.RingGeometry;
import io.stoke.ring.RingLayout;
import io.stoke.ring.SlotRing;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Control;

/**
 * The ring's hand-over cost, in nanoseconds: one slot's acquire + publish + poll + release on one
 * thread (the bare queue operations), and the same split between a producer thread and a consumer
 * thread (what a batch hand-over costs when the two sides really are different threads). Set
 * against a batch's decode time (tens of milliseconds), it shows the ring is not what limits.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "--add-exports",
            "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--enable-native-access=ALL-UNNAMED"
        })
public class SlotRingBenchmark {
    private static final BooleanSupplier FOREVER = () -> true;

    /** A small ring: 4 slots of 2 samples (the payload size does not change the queue cost). */
    @State(Scope.Group)
    public static class Ring {
        SlotRing ring;

        @Setup(Level.Trial)
        public void setUp() {
            ring = SlotRing.allocate(
                    new RingGeometry(4, 2, RingLayout.DTYPE_UINT8, RingLayout.LAYOUT_HWC, 224, 224, 3));
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            ring.close();
        }
    }

    @State(Scope.Thread)
    public static class Idle {
        final IdleStrategy idle = new BusySpinIdleStrategy();
    }

    /** acquire, publish, pollReady, release: one slot round trip on one thread. */
    @Benchmark
    @Group("oneThread")
    public int roundTrip(Ring r, Idle i) {
        int slot = r.ring.acquire(i.idle, FOREVER);
        r.ring.publish(slot);
        int ready = r.ring.pollReady();
        r.ring.release(ready);
        return ready;
    }

    /** Producer side: take a free slot and publish it. */
    @Benchmark
    @Group("twoThreads")
    public int produce(Ring r, Idle i, Control control) {
        // Gives up when the iteration ends, or it would spin forever once the consumer has stopped.
        int slot = r.ring.acquire(i.idle, () -> !control.stopMeasurement);
        if (slot >= 0) {
            r.ring.publish(slot);
        }
        return slot;
    }

    /** Consumer side: wait for a ready slot and release it. */
    @Benchmark
    @Group("twoThreads")
    public int consume(Ring r, Idle i, Control control) {
        int slot;
        while ((slot = r.ring.pollReady()) < 0) {
            if (control.stopMeasurement) {
                return -1;
            }
            i.idle.idle();
        }
        r.ring.release(slot);
        return slot;
    }
}
