package io.stoke.remote;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.stream.Stream;

/**
 * The soak's S3 server as a process (benchmarks/soak/soak.py starts it): the tests' s3proxy
 * ({@link TestS3Server}) on 127.0.0.1 with the files of one folder uploaded, behind a
 * {@link FaultProxy} that injects seeded random faults. It lives with the test code because both
 * classes do, and s3proxy is a test-scope dependency: run it with the loader's test class path.
 *
 * <pre>
 * java -cp remote/target/test-classes:remote/target/classes:loader/target/classes:$(test class path) \
 *     io.stoke.remote.SoakS3Server DIR BUCKET PREFIX SEED FAULT_RATE MAX_SECONDS STATS_FILE
 * </pre>
 *
 * Prints {@code READY <proxy port> <direct port>} once serving. Every second it writes the
 * proxy's counts by action to STATS_FILE (JSON, replaced atomically). It stops by itself after
 * MAX_SECONDS, or as soon as its standard input ends (the runner holds the other end of a pipe: a
 * runner that dies, even by kill -9, takes this process with it).
 */
public final class SoakS3Server {
    private SoakS3Server() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: SoakS3Server DIR BUCKET PREFIX SEED FAULT_RATE MAX_SECONDS STATS_FILE");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        String bucket = args[1];
        String prefix = args[2];
        long seed = Long.parseLong(args[3]);
        double rate = Double.parseDouble(args[4]);
        long maxSeconds = Long.parseLong(args[5]);
        Path stats = Path.of(args[6]);

        try (TestS3Server s3 = new TestS3Server();
                FaultProxy proxy = new FaultProxy(s3.port())) {
            s3.createBucket(bucket, false);
            List<Path> files;
            try (Stream<Path> list = Files.list(dir)) {
                files = list.filter(Files::isRegularFile).sorted().toList();
            }
            for (Path f : files) {
                s3.put(bucket, prefix + f.getFileName(), Files.readAllBytes(f));
            }
            proxy.randomFaults(seed, rate);
            Thread stdinWatch = new Thread(SoakS3Server::waitForEndOfInput, "soak-stdin-watch");
            stdinWatch.setDaemon(true);
            stdinWatch.start();
            System.out.println("READY " + proxy.port() + " " + s3.port());
            System.out.flush();
            long until = System.nanoTime() + maxSeconds * 1_000_000_000L;
            while (stdinWatch.isAlive() && System.nanoTime() < until) {
                writeStats(proxy, stats, files.size());
                Thread.sleep(1000);
            }
            writeStats(proxy, stats, files.size());
        }
        // s3proxy's Jetty and the proxy's handler threads are stopped or daemons; exit regardless.
        System.exit(0);
    }

    private static void waitForEndOfInput() {
        try (InputStream in = System.in) {
            while (in.read() >= 0) {
                // the runner writes nothing; only the end matters
            }
        } catch (IOException e) {
            // the pipe broke: the same as its end
        }
    }

    private static void writeStats(FaultProxy proxy, Path stats, int objects) throws IOException {
        StringBuilder json = new StringBuilder("{\"objects\": ").append(objects);
        for (FaultProxy.Action a : FaultProxy.Action.values()) {
            json.append(", \"").append(a.name()).append("\": ").append(proxy.count(a));
        }
        json.append("}\n");
        Path tmp = stats.resolveSibling(stats.getFileName() + ".tmp");
        Files.writeString(tmp, json);
        Files.move(tmp, stats, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
