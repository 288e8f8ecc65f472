package io.stoke.bench;

import static io.stoke.ring.RingLayout.DTYPE_UINT8;
import static io.stoke.ring.RingLayout.LAYOUT_HWC;
import static io.stoke.ring.RingLayout.PAGE;
import static io.stoke.ring.RingLayout.SLOT_STATE_FREE;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.loader.Batch;
import io.stoke.loader.RingConsumer;
import io.stoke.ring.RingGeometry;
import io.stoke.ring.ShmRing;
import io.stoke.ring.SlotHeader;
import io.stoke.ring.SlotRing;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.agrona.concurrent.BusySpinIdleStrategy;

/**
 * The hand-off cost of a shared-memory ring: the time from the producer publishing a slot to a
 * consumer in another process holding it as a {@link Batch} ({@link RingConsumer#next()} returned),
 * for batches of 1 MB to 600 MB, both sides busy-spinning.
 *
 * <pre>
 *   java -cp benchmarks/target/benchmarks.jar io.stoke.bench.ShmHandoff [--sizes-mb 1,16,64,256,600] [--iterations 2000]
 *        [--consumer java|python]
 * </pre>
 *
 * {@code --consumer python} runs {@code benchmarks/shm_handoff_consumer.py} (stoke, busy-polling)
 * with {@code /usr/bin/python3} from the repository root instead of a Java {@link RingConsumer}.
 *
 * The producer writes {@link System#nanoTime()} (CLOCK_MONOTONIC, the same clock in every process)
 * into the slot's first pixel bytes just before {@link SlotRing#publish}; the consumer reads the
 * clock as soon as {@code next()} returns, then reads the stamp. One batch is in flight at a time
 * (the producer waits until it is released), so no figure includes queueing behind another batch.
 * Every page of every slot is touched once by both processes before timing: a long-running loader
 * reuses its slots, so first-touch page faults are not part of the steady hand-off.
 */
public final class ShmHandoff {
    private ShmHandoff() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 2 && args[0].equals("--consume")) {
            consume(Path.of(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            return;
        }
        int[] sizes = {1, 16, 64, 256, 600};
        int iterations = 2000;
        int warmup = 500;
        String consumer = "java";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--sizes-mb" ->
                    sizes = Arrays.stream(args[++i].split(","))
                            .mapToInt(Integer::parseInt)
                            .toArray();
                case "--iterations" -> iterations = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--consumer" -> consumer = args[++i];
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        System.out.println("consumer: " + consumer);
        System.out.printf("%-10s %12s %12s %12s %12s %8s%n", "batch", "median us", "p99 us", "mean us", "max us", "n");
        for (int mb : sizes) {
            produce(mb, iterations, warmup, consumer);
        }
    }

    private static void produce(int mb, int iterations, int warmup, String consumer) throws Exception {
        // One sample of mb MiB per batch: only its size matters here.
        RingGeometry g = new RingGeometry(2, 1, DTYPE_UINT8, LAYOUT_HWC, mb, 1024, 1024);
        Path path =
                Path.of("/dev/shm", "stoke-handoff-" + ProcessHandle.current().pid());
        try (ShmRing shm = ShmRing.create(path, g, null)) {
            SlotRing ring = shm.slots();
            SlotHeader header = new SlotHeader();
            for (int s = 0; s < g.slotCount(); s++) {
                ring.pixels(s).fill((byte) 0); // fault every page in once
                header.wrap(ring.slot(s)).sampleCount(1).pixelBytes(g.sampleBytes());
            }
            List<String> cmd = switch (consumer) {
                case "java" ->
                    new ArrayList<>(List.of(
                            ProcessHandle.current().info().command().orElse("java"),
                            "--enable-native-access=ALL-UNNAMED",
                            "--add-exports",
                            "java.base/jdk.internal.misc=ALL-UNNAMED",
                            "-cp",
                            System.getProperty("java.class.path"),
                            ShmHandoff.class.getName(),
                            "--consume",
                            path.toString(),
                            String.valueOf(iterations),
                            String.valueOf(warmup)));
                case "python" ->
                    List.of(
                            "/usr/bin/python3",
                            "benchmarks/shm_handoff_consumer.py",
                            path.toString(),
                            String.valueOf(iterations),
                            String.valueOf(warmup));
                default -> throw new IllegalArgumentException("--consumer must be java or python: " + consumer);
            };
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
            pb.environment()
                    .put(
                            "PYTHONPATH",
                            Path.of("clients/python").toAbsolutePath().toString());
            Process child = pb.start();
            BusySpinIdleStrategy spin = new BusySpinIdleStrategy();
            try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream()))) {
                while (shm.consumerPid() <= 0) {
                    if (!child.isAlive()) {
                        throw new IllegalStateException("consumer exited before attaching: " + cmd);
                    }
                    Thread.onSpinWait();
                }
                for (long seq = 0; seq < warmup + iterations; seq++) {
                    int slot = ring.acquire(spin, () -> true);
                    header.wrap(ring.slot(slot)).sequence(seq);
                    MemorySegment px = ring.pixels(slot);
                    px.set(JAVA_LONG, 0, System.nanoTime());
                    ring.publish(slot);
                    while (ring.state(slot) != SLOT_STATE_FREE) { // one batch in flight at a time
                        Thread.onSpinWait();
                    }
                }
                ring.ringState().endStream();
                String line = out.readLine();
                if (child.waitFor() != 0 || line == null) {
                    throw new IllegalStateException("consumer failed");
                }
                String[] f = line.split(" ");
                System.out.printf(
                        "%-10s %12.2f %12.2f %12.2f %12.2f %8s%n",
                        mb + " MiB",
                        Long.parseLong(f[0]) / 1e3,
                        Long.parseLong(f[1]) / 1e3,
                        Long.parseLong(f[2]) / 1e3,
                        Long.parseLong(f[3]) / 1e3,
                        f[4]);
            } finally {
                child.destroyForcibly();
            }
        }
    }

    private static void consume(Path path, int iterations, int warmup) {
        long[] latencies = new long[iterations];
        int n = 0;
        try (RingConsumer ring = RingConsumer.attach(path, Duration.ofSeconds(10), new BusySpinIdleStrategy())) {
            long sink = 0;
            RingGeometry g = ring.geometry();
            long seen = 0;
            for (Batch b; (b = ring.next()) != null; ) {
                long now = System.nanoTime();
                long stamp = b.pixels().get(JAVA_LONG, 0);
                if (seen < g.slotCount()) {
                    // Touch every page of each slot once (during warm-up), as a long-running consumer will have.
                    MemorySegment px = b.pixels();
                    for (long off = 0; off < px.byteSize(); off += PAGE) {
                        sink += px.get(JAVA_BYTE, off);
                    }
                }
                if (seen >= warmup && n < iterations) {
                    latencies[n++] = now - stamp;
                }
                seen++;
                b.close();
            }
            if (sink == Long.MIN_VALUE) {
                System.err.print(""); // keeps the page-touching loop from being optimised away
            }
        }
        Arrays.sort(latencies, 0, n);
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += latencies[i];
        }
        System.out.println(latencies[n / 2] + " " + latencies[(int) Math.min(n - 1, Math.ceil(n * 0.99) - 1)] + " "
                + (sum / Math.max(1, n)) + " " + latencies[n - 1] + " " + n);
    }
}
