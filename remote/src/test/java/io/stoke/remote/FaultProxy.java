package io.stoke.remote;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.stream.Collectors;

/**
 * An HTTP proxy on 127.0.0.1 that forwards requests byte for byte to a server on this machine
 * and injects faults: 503 answers for the first N requests or for all of them, or a connection
 * dropped in the middle of the body of the first GET of each range. It records every request and
 * what it did with it, so that a test asserts what the server was really asked.
 *
 * <p>For the soak ({@link SoakS3Server}), {@link #randomFaults} draws a fault for a share of the
 * requests from a seeded generator: a 503, a reset before the answer, a body cut by a reset or by
 * a clean close, or an answer held back and trickled. There the log of requests is off (it would
 * grow for an hour and show up as the server's memory growing); {@link #count} still counts.
 *
 * <p>One request per connection: the proxy asks the upstream to close after its answer
 * ({@code Connection: close}, a header SigV4 does not sign) and pipes the answer back until the
 * upstream closes, so it never has to find where one response ends and the next begins.
 */
final class FaultProxy implements AutoCloseable {
    enum Action {
        FORWARDED,
        SERVICE_UNAVAILABLE,
        DROPPED,
        /** Soak only: the connection reset before any byte of the answer. */
        RESET,
        /** Soak only: headers and half the body, then a clean close (FIN): a body shorter than its Content-Length. */
        TRUNCATED,
        /** Soak only: forwarded whole, after a delay and in small, spaced chunks (under the client's stall timeout). */
        SLOW
    }

    /** One request as received: method, target, its Range header (or null), and the proxy's action. */
    record Seen(String method, String target, String range, Action action) {}

    /**
     * One request body as it went over the wire, with the headers that say how it is framed and
     * signed: {@code Content-Encoding} and {@code x-amz-content-sha256} (null when absent).
     */
    record Body(String method, String target, String contentEncoding, String contentSha256, byte[] bytes) {}

    private final ServerSocket server;
    private final int upstreamPort;
    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private final List<Body> bodies = new CopyOnWriteArrayList<>();
    private final AtomicInteger unavailableLeft = new AtomicInteger();
    private final Set<String> rangesSeen = new HashSet<>();
    private volatile boolean alwaysUnavailable;
    private volatile boolean dropFirstGetOfEachRange;
    private volatile boolean closed;
    private final AtomicLongArray counts = new AtomicLongArray(Action.values().length);
    private volatile boolean keepLog = true;
    private SplittableRandom random; // guarded by this; null: no random faults
    private double faultRate;

    FaultProxy(int upstreamPort) throws IOException {
        this.upstreamPort = upstreamPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "fault-proxy-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    int port() {
        return server.getLocalPort();
    }

    /** The next {@code n} requests get a 503; then requests are forwarded. */
    FaultProxy unavailableFor(int n) {
        unavailableLeft.set(n);
        return this;
    }

    FaultProxy alwaysUnavailable() {
        alwaysUnavailable = true;
        return this;
    }

    /** The first GET of each Range gets its headers and half its body, then the connection is reset. */
    FaultProxy dropFirstGetOfEachRange() {
        dropFirstGetOfEachRange = true;
        return this;
    }

    /** What happened to each Range asked for, in order. */
    Map<String, List<Action>> actionsByRange() {
        return seen.stream()
                .collect(Collectors.groupingBy(Seen::range, Collectors.mapping(Seen::action, Collectors.toList())));
    }

    /** {@link #actionsByRange()} of a read of 3 MiB + 12,345 bytes in 1 MiB parts, each part dropped once then retried. */
    static final Map<String, List<Action>> EACH_OF_FOUR_PARTS_DROPPED_THEN_FORWARDED = Map.of(
            "bytes=0-1048575", List.of(Action.DROPPED, Action.FORWARDED),
            "bytes=1048576-2097151", List.of(Action.DROPPED, Action.FORWARDED),
            "bytes=2097152-3145727", List.of(Action.DROPPED, Action.FORWARDED),
            "bytes=3145728-3158072", List.of(Action.DROPPED, Action.FORWARDED));

    /**
     * From now on a share {@code rate} of the requests (drawn from {@code seed}) gets one of the
     * faults 503, RESET, DROPPED, TRUNCATED or SLOW, in equal shares; the log of requests is off.
     */
    synchronized FaultProxy randomFaults(long seed, double rate) {
        random = new SplittableRandom(seed);
        faultRate = rate;
        keepLog = false;
        return this;
    }

    List<Seen> seen() {
        return List.copyOf(seen);
    }

    /** The request bodies received, in order (requests without one are left out). */
    List<Body> bodies() {
        return List.copyOf(bodies);
    }

    long count(Action action) {
        return counts.get(action.ordinal());
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = server.accept();
                Thread handler = new Thread(() -> handle(client), "fault-proxy-conn");
                handler.setDaemon(true);
                handler.start();
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void handle(Socket client) {
        try (client) {
            client.setSoTimeout(10_000);
            InputStream in = client.getInputStream();
            byte[] head = readHead(in);
            if (head == null) {
                return;
            }
            String text = new String(head, StandardCharsets.ISO_8859_1);
            String[] lines = text.split("\r\n");
            String[] requestLine = lines[0].split(" ");
            String method = requestLine[0];
            String target = requestLine.length > 1 ? requestLine[1] : "";
            String range = null;
            String contentEncoding = null;
            String contentSha256 = null;
            long contentLength = 0;
            StringBuilder forwarded = new StringBuilder(lines[0]).append("\r\n");
            for (int i = 1; i < lines.length; i++) {
                String line = lines[i];
                if (line.isEmpty()) {
                    continue;
                }
                String name = line.substring(0, Math.max(0, line.indexOf(':')))
                        .strip()
                        .toLowerCase(Locale.ROOT);
                String value = line.substring(line.indexOf(':') + 1).strip();
                if (name.equals("range")) {
                    range = value;
                } else if (name.equals("content-length")) {
                    contentLength = Long.parseLong(value);
                } else if (name.equals("content-encoding")) {
                    contentEncoding = value;
                } else if (name.equals("x-amz-content-sha256")) {
                    contentSha256 = value;
                } else if (name.equals("connection")) {
                    continue;
                }
                forwarded.append(line).append("\r\n");
            }
            forwarded.append("Connection: close\r\n\r\n");

            Action action = decide(method, target, range);
            counts.incrementAndGet(action.ordinal());
            if (keepLog) {
                seen.add(new Seen(method, target, range, action));
            }
            OutputStream out = client.getOutputStream();
            if (action == Action.RESET) {
                client.setSoLinger(true, 0);
                return; // the try-with-resources closes it: a reset, no answer at all
            }
            if (action == Action.SERVICE_UNAVAILABLE) {
                out.write(("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
                                + "Connection: close\r\n\r\nfault: 503\r\n\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
                return;
            }
            try (Socket upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort)) {
                upstream.setSoTimeout(10_000);
                OutputStream up = upstream.getOutputStream();
                up.write(forwarded.toString().getBytes(StandardCharsets.ISO_8859_1));
                // A request body, if any: only writes send one; kept as it came, for the log.
                ByteArrayOutputStream body = new ByteArrayOutputStream();
                copy(in, keepLog ? new TeeStream(up, body) : up, contentLength);
                if (keepLog && contentLength > 0) {
                    bodies.add(new Body(method, target, contentEncoding, contentSha256, body.toByteArray()));
                }
                up.flush();
                switch (action) {
                    case DROPPED -> pipeBack(upstream.getInputStream(), out, client, true);
                    case TRUNCATED -> pipeBack(upstream.getInputStream(), out, client, false);
                    case SLOW -> trickle(upstream.getInputStream(), out);
                    default -> pipeBack(upstream.getInputStream(), out, null, false);
                }
            }
        } catch (IOException e) {
            // A client that went away, or the drop itself: nothing to do.
        }
    }

    private synchronized Action decide(String method, String target, String range) {
        if (alwaysUnavailable) {
            return Action.SERVICE_UNAVAILABLE;
        }
        if (unavailableLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            return Action.SERVICE_UNAVAILABLE;
        }
        if (dropFirstGetOfEachRange && method.equals("GET") && range != null && rangesSeen.add(target + " " + range)) {
            return Action.DROPPED;
        }
        if (random != null && random.nextDouble() < faultRate) {
            Action[] faults = {Action.SERVICE_UNAVAILABLE, Action.RESET, Action.DROPPED, Action.TRUNCATED, Action.SLOW};
            return faults[random.nextInt(faults.length)];
        }
        return Action.FORWARDED;
    }

    /** A slow server: the answer after 0.5 s, then 16 KiB every 2 ms (8 MiB in about a second). */
    private static void trickle(InputStream up, OutputStream out) throws IOException {
        byte[] buffer = new byte[16 << 10];
        try {
            Thread.sleep(500);
            int n;
            while ((n = up.read(buffer)) >= 0) {
                out.write(buffer, 0, n);
                out.flush();
                Thread.sleep(2);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    /**
     * Copies the upstream's answer to the client. With {@code dropClient}, stops after the headers
     * and half the body (by its Content-Length) and closes the client's connection: with a reset
     * when {@code reset}, else cleanly (the client sees a body shorter than announced).
     */
    private static void pipeBack(InputStream up, OutputStream out, Socket dropClient, boolean reset)
            throws IOException {
        byte[] buffer = new byte[16 << 10];
        if (dropClient == null) {
            int n;
            while ((n = up.read(buffer)) >= 0) {
                out.write(buffer, 0, n);
            }
            out.flush();
            return;
        }
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        long budget = -1; // bytes of body still to send before the drop, once the head is complete
        int n;
        while ((n = up.read(buffer)) >= 0) {
            if (budget < 0) {
                head.write(buffer, 0, n);
                byte[] soFar = head.toByteArray();
                int end = indexOf(soFar, "\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                if (end < 0) {
                    continue;
                }
                int headLength = end + 4;
                long bodyLength = contentLength(new String(soFar, 0, headLength, StandardCharsets.ISO_8859_1));
                budget = Math.max(1, bodyLength / 2);
                long body = soFar.length - headLength;
                int send = (int) (headLength + Math.min(body, budget));
                out.write(soFar, 0, send);
                budget -= Math.min(body, budget);
            } else {
                int send = (int) Math.min(n, budget);
                out.write(buffer, 0, send);
                budget -= send;
            }
            if (budget == 0) {
                out.flush();
                if (reset) {
                    dropClient.setSoLinger(true, 0); // close with a reset, as a crashed server or a middlebox does
                }
                dropClient.close();
                return;
            }
        }
    }

    private static long contentLength(String head) {
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                return Long.parseLong(line.substring(15).strip());
            }
        }
        return 2;
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** The request head, up to and including the blank line; null if the client closed first. */
    private static byte[] readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int state = 0; // how much of \r\n\r\n has been seen
        int b;
        while ((b = in.read()) >= 0) {
            head.write(b);
            state = (b == '\r' && (state == 0 || state == 2))
                    ? state + 1
                    : (b == '\n' && (state == 1 || state == 3)) ? state + 1 : (b == '\r' ? 1 : 0);
            if (state == 4) {
                return head.toByteArray();
            }
            if (head.size() > 64 << 10) {
                throw new IOException("request head over 64 KiB");
            }
        }
        return null;
    }

    private static void copy(InputStream in, OutputStream out, long length) throws IOException {
        byte[] buffer = new byte[16 << 10];
        while (length > 0) {
            int n = in.read(buffer, 0, (int) Math.min(buffer.length, length));
            if (n < 0) {
                throw new IOException("request body ended early");
            }
            out.write(buffer, 0, n);
            length -= n;
        }
    }

    /** Writes to two streams. */
    private static final class TeeStream extends OutputStream {
        private final OutputStream first;
        private final OutputStream second;

        TeeStream(OutputStream first, OutputStream second) {
            this.first = first;
            this.second = second;
        }

        @Override
        public void write(int b) throws IOException {
            first.write(b);
            second.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            first.write(b, off, len);
            second.write(b, off, len);
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
    }
}
