package io.stoke.remote;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * An s3proxy release run as its own process ({@code java -jar} on its jar-with-dependencies, with
 * the in-memory "transient" blob store and the test access key) on 127.0.0.1 and a free port.
 * Its own process because the old releases' dependencies (Jetty 11, jclouds) clash with those of
 * the s3proxy 4 on the test class path. It runs on the JDK that runs the tests.
 */
final class S3ProxyProcess implements AutoCloseable {
    /** Where Maven put the old release's jar (loader/pom.xml, phase process-test-resources). */
    static final String JAR_PROPERTY = "stoke.test.oldS3proxyJar";

    private static final long START_TIMEOUT_NANOS = 60_000_000_000L; // two busy cores can make Jetty slow to start

    private final Process process;
    private final URI endpoint;
    private final Path log;
    private final Thread killOnExit;

    private S3ProxyProcess(Process process, URI endpoint, Path log) {
        this.process = process;
        this.endpoint = endpoint;
        this.log = log;
        // Should the test JVM end without close() (a crash, a kill), the server must not outlive it.
        this.killOnExit = new Thread(process::destroyForcibly, "s3proxy-process-kill");
        Runtime.getRuntime().addShutdownHook(killOnExit);
    }

    /** The jar named by {@value #JAR_PROPERTY}, which Maven's test runs set; an error saying how to get it otherwise. */
    static Path oldReleaseJar() {
        String jar = System.getProperty(JAR_PROPERTY);
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException("the old s3proxy's jar is not there (" + JAR_PROPERTY + "=" + jar + "):"
                    + " run the tests through Maven, whose process-test-resources phase copies it from Maven Central"
                    + " (mvn -pl loader process-test-resources)");
        }
        return Path.of(jar);
    }

    /** Starts {@code jar} with its files (properties, log) in {@code dir} and waits until it answers HTTP. */
    static S3ProxyProcess start(Path jar, Path dir) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort(); // free now; s3proxy binds it a moment later
        }
        URI endpoint = URI.create("http://127.0.0.1:" + port);
        Path properties = Files.writeString(
                dir.resolve("s3proxy.properties"),
                String.join(
                        "\n",
                        "s3proxy.endpoint=" + endpoint,
                        "s3proxy.authorization=aws-v2-or-v4",
                        "s3proxy.identity=" + TestS3Server.ACCESS_KEY,
                        "s3proxy.credential=" + TestS3Server.SECRET_KEY,
                        "jclouds.provider=transient",
                        "jclouds.identity=unused",
                        "jclouds.credential=unused",
                        ""));
        Path log = dir.resolve("s3proxy.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process process = new ProcessBuilder(List.of(
                        java,
                        "-Xmx256m",
                        "-XX:+UseSerialGC",
                        "-XX:TieredStopAtLevel=1",
                        "-jar",
                        jar.toString(),
                        "--properties",
                        properties.toString()))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        S3ProxyProcess server = new S3ProxyProcess(process, endpoint, log);
        try {
            server.awaitAnswer();
        } catch (IOException | InterruptedException | RuntimeException e) {
            server.close();
            throw e;
        }
        return server;
    }

    /** Polls until any HTTP answer (403 to an anonymous GET /), the process's end, or the timeout. */
    private void awaitAnswer() throws IOException, InterruptedException {
        long until = System.nanoTime() + START_TIMEOUT_NANOS;
        while (true) {
            if (!process.isAlive()) {
                throw new IllegalStateException("s3proxy exited with " + process.exitValue() + " before answering on "
                        + endpoint + "; its log:\n" + tail());
            }
            try {
                HttpURLConnection c = (HttpURLConnection) endpoint.toURL().openConnection();
                c.setConnectTimeout(1000);
                c.setReadTimeout(5000);
                c.getResponseCode();
                c.disconnect();
                return;
            } catch (IOException notYet) {
                // Refused until Jetty listens.
            }
            if (System.nanoTime() > until) {
                throw new IllegalStateException(
                        "s3proxy did not answer on " + endpoint + " within 60 s; its log:\n" + tail());
            }
            Thread.sleep(100);
        }
    }

    private String tail() throws IOException {
        List<String> lines = Files.readAllLines(log);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    URI endpoint() {
        return endpoint;
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        Runtime.getRuntime().removeShutdownHook(killOnExit);
    }
}
