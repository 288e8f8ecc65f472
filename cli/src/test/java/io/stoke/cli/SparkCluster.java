package io.stoke.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A real Spark standalone cluster on 127.0.0.1 for the tests: a master and workers, each its own
 * JVM, started from the jars the build put in spark/home/target/spark-home (Maven Central's, no
 * Spark distribution), each worker's executors in JVMs of their own.
 */
final class SparkCluster implements AutoCloseable {
    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    static final Path SPARK_HOME = ROOT.resolve("spark/home/target/spark-home");
    static final Path JAR = ROOT.resolve("cli/target/stoke.jar");

    private final List<Process> daemons = new ArrayList<>();
    private final String master;
    private final Path logs;
    private int ui;

    private SparkCluster(Path logs, int workers) throws IOException, InterruptedException {
        this.logs = Files.createDirectories(logs);
        int port = freePort();
        ui = freePort();
        master = "spark://127.0.0.1:" + port;
        daemons.add(start(
                "master",
                "127.0.0.1",
                List.of(
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        Integer.toString(port),
                        "--webui-port",
                        Integer.toString(ui))));
        for (int w = 0; w < workers; w++) {
            // Each worker on an address of its own (127.0.0.2, 127.0.0.3: loopback too), as on
            // machines of their own: Spark never runs a speculative copy on the host of the original.
            String host = "127.0.0." + (2 + w);
            daemons.add(start(
                    "worker-" + w,
                    host,
                    List.of(
                            "org.apache.spark.deploy.worker.Worker",
                            "--host",
                            host,
                            "--cores",
                            "1",
                            "--memory",
                            "2g",
                            "--webui-port",
                            Integer.toString(freePort()),
                            "--work-dir",
                            logs.resolve("work-" + w).toString(),
                            master)));
        }
        awaitStatus(
                json -> json.path("aliveworkers").asInt() >= workers,
                "the cluster did not have " + workers + " alive workers",
                Duration.ofSeconds(90));
    }

    /** A master and {@code workers} workers of one core each, their logs in {@code logs}. */
    static SparkCluster start(Path logs, int workers) throws IOException, InterruptedException {
        return new SparkCluster(logs, workers);
    }

    String master() {
        return master;
    }

    /** The java of this JVM, with Spark's and Stoke's options. */
    static List<String> java(List<String> classPath) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("@" + ROOT.resolve("spark/jvm.options"));
        cmd.add("-Xmx512m");
        cmd.add("-cp");
        cmd.add(String.join(":", classPath));
        return cmd;
    }

    /** Spark's environment for its daemons and drivers: where Spark is, one Scala, only 127.0.0.1. */
    static void environment(Map<String, String> env) {
        env.put("SPARK_HOME", SPARK_HOME.toString());
        env.put("SPARK_SCALA_VERSION", "2.13");
        env.put("SPARK_LOCAL_IP", "127.0.0.1");
        env.put("SPARK_CONF_DIR", SPARK_HOME.resolve("conf").toString());
    }

    private Process start(String name, String host, List<String> mainAndArgs) throws IOException {
        List<String> cmd = java(List.of(SPARK_HOME.resolve("conf").toString(), SPARK_HOME.resolve("jars") + "/*"));
        cmd.addAll(mainAndArgs);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        environment(pb.environment());
        pb.environment().put("SPARK_LOCAL_IP", host);
        pb.redirectOutput(logs.resolve(name + ".log").toFile());
        return pb.start();
    }

    /**
     * Polls the master's status page (its web UI's /json/) until {@code done} holds of it, or
     * throws with {@code what} and the last answer.
     */
    private void awaitStatus(Predicate<JsonNode> done, String what, Duration timeout)
            throws IOException, InterruptedException {
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest status = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ui + "/json/"))
                .timeout(Duration.ofSeconds(5))
                .build();
        long until = System.nanoTime() + timeout.toNanos();
        String last = "(no answer)";
        while (System.nanoTime() < until) {
            try {
                last = http.send(status, HttpResponse.BodyHandlers.ofString()).body();
                if (done.test(new ObjectMapper().readTree(last))) {
                    return;
                }
            } catch (IOException e) {
                last = e.toString(); // not listening yet
            }
            Thread.sleep(200);
        }
        StringBuilder logsNow = new StringBuilder();
        try (var files = Files.list(logs)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                logsNow.append("\n--- ").append(f.getFileName()).append('\n').append(Files.readString(f));
            }
        }
        throw new IllegalStateException(what + " after " + timeout + ": " + last + logsNow);
    }

    /**
     * Waits until no application holds a core: an earlier test's killed driver leaves executors
     * the master reclaims only when it notices, and a run that found one worker busy would get one
     * executor (and never a speculative copy, which must run on another host).
     */
    void awaitIdle(Duration timeout) throws IOException, InterruptedException {
        awaitStatus(
                json -> json.get("coresused").asInt() == 0
                        && json.get("activeapps").isEmpty(),
                "the cluster still runs an application",
                timeout);
    }

    /** The executors' JVMs running now. */
    static List<ProcessHandle> executors() {
        return ProcessHandle.allProcesses()
                .filter(p -> p.info()
                        .commandLine()
                        .map(c -> c.contains("CoarseGrainedExecutorBackend"))
                        .orElse(false))
                .toList();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        for (ProcessHandle e : executors()) {
            e.destroyForcibly();
        }
        for (Process p : daemons) {
            p.destroy();
        }
        for (Process p : daemons) {
            try {
                if (!p.waitFor(10, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
