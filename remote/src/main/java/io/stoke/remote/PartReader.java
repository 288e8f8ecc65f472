package io.stoke.remote;

import io.stoke.loader.internal.Urls;
import io.stoke.remote.Retry.TransientFailure;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.ToLongFunction;

/**
 * Reads one object into a segment by parallel ranged GETs, for both stores: the part of a
 * remote read that does not depend on the protocol. Each part is retried on its own by
 * {@link Retry}; the calling thread waits, watches for stalled transfers, and enforces the
 * object's deadline.
 *
 * <p>Why the care about writes: a part's attempt writes into {@code dst} as its bytes arrive
 * (no 8 MiB staging copy per part), and an attempt cut off by a failure elsewhere or by the
 * deadline may still be inside a socket read when {@link #read} gives up. Every write therefore
 * goes through a guard that {@code read} closes before it returns or throws; after that, a late
 * attempt finds the guard closed and stops. The caller can free or reuse {@code dst} at once.
 */
final class PartReader implements AutoCloseable {
    /** How often the waiting caller looks for stalled attempts and the deadline. */
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private static final int BUFFER_BYTES = 64 << 10;
    /** A thread that is not the caller's, to ask whether dst can be written from the pool. */
    private static final Thread OTHER_THREAD = Thread.ofPlatform().unstarted(() -> {});

    /** Opens a GET of bytes {@code first..last} (inclusive) of {@code url}, returning once the headers are in. */
    @FunctionalInterface
    interface RangeSource {
        RangeResponse open(String url, long first, long last, long timeoutNanos) throws TransientFailure;
    }

    private final RemoteOptions options;
    private final Retry retry;
    private final long stallNanos;
    private final ThreadPoolExecutor pool;
    /** The servers found ignoring the Range header: a whole object from them is read by one GET. */
    private final Set<String> ignoringRange = ConcurrentHashMap.newKeySet();

    /** With no byte arriving for {@link RemoteOptions#stallTimeout}, an attempt is cut off and retried. */
    PartReader(String threadName, RemoteOptions options, Retry retry) {
        this.options = options;
        this.retry = retry;
        this.stallNanos = options.stallTimeout().toNanos();
        AtomicInteger counter = new AtomicInteger();
        this.pool = new ThreadPoolExecutor(
                options.parallelism(),
                options.parallelism(),
                0,
                TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(),
                task -> {
                    Thread t = new Thread(task, threadName + "-" + counter.incrementAndGet());
                    t.setDaemon(true); // a store that was never closed must not keep the JVM alive
                    return t;
                });
    }

    Retry retry() {
        return retry;
    }

    long stallNanos() {
        return stallNanos;
    }

    /**
     * Reads {@code url} into {@code dst}. An empty {@code dst} asks {@code size} instead, so that
     * a missing object still fails and a non-empty one is not taken for empty.
     */
    void read(String url, MemorySegment dst, RangeSource source, ToLongFunction<String> size) {
        read(url, dst, source, size, null);
    }

    /**
     * {@link #read(String, MemorySegment, RangeSource, ToLongFunction)} of the version {@code etag}
     * (null: any); returns the ETag the parts came with, or null when the server sent none.
     */
    String read(String url, MemorySegment dst, RangeSource source, ToLongFunction<String> size, String etag) {
        return read(url, 0, dst.byteSize(), dst, source, size, etag);
    }

    /**
     * Bytes {@code [offset, offset + dst.byteSize())} of the object at {@code url}, whose size is
     * {@code objectSize}, into {@code dst}, by the same checked, retried parallel parts as a whole
     * read; returns the ETag the parts came with.
     */
    String read(
            String url,
            long offset,
            long objectSize,
            MemorySegment dst,
            RangeSource source,
            ToLongFunction<String> size,
            String etag) {
        if (offset < 0 || offset + dst.byteSize() > objectSize) {
            throw new IllegalArgumentException(Urls.redact(url) + ": bytes " + offset + "+" + dst.byteSize()
                    + " are not inside the object's " + objectSize);
        }
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("dst for " + Urls.redact(url) + " is read-only");
        }
        if (!dst.isAccessibleBy(OTHER_THREAD)) {
            throw new IllegalArgumentException(
                    "dst for " + Urls.redact(url) + " is confined to one thread, but the parts are"
                            + " written by the store's threads: allocate it from a shared, automatic or global arena");
        }
        long length = dst.byteSize();
        if (length == 0) {
            long actual = size.applyAsLong(url);
            if (actual != objectSize) {
                throw new ShardFetchException(url, "the object has " + actual + " bytes, not " + objectSize);
            }
            return etag;
        }
        boolean whole = offset == 0 && length == objectSize;
        String server = server(url);
        if (whole && length > options.partBytes() && ignoringRange.contains(server)) {
            return readInParts(url, offset, objectSize, dst, source, etag, length);
        }
        try {
            return readInParts(url, offset, objectSize, dst, source, etag, options.partBytes());
        } catch (RangeIgnored e) {
            if (!whole) {
                throw new ShardFetchException(
                        url, e.getMessage() + "; reading part of an object needs a server with Range support");
            }
            if (ignoringRange.add(server)) {
                System.err.println("stoke: WARNING: " + server + " ignores the Range header (it answered 200 with the"
                        + " whole object): each object from it is read whole by one GET, not in parallel parts of "
                        + options.partBytes() + " bytes, and part of an object (a Parquet footer) cannot be read");
            }
            return readInParts(url, offset, objectSize, dst, source, etag, length);
        }
    }

    /** {@link #read} in parts of {@code partBytes}. */
    private String readInParts(
            String url,
            long offset,
            long objectSize,
            MemorySegment dst,
            RangeSource source,
            String etag,
            long partBytes) {
        long length = dst.byteSize();
        long count = (length + partBytes - 1) / partBytes;
        if (count > 1 << 20) {
            throw new IllegalArgumentException(Urls.redact(url) + ": " + length + " bytes in parts of " + partBytes
                    + " would take " + count + " requests; use larger parts");
        }
        long start = retry.clock().nanoTime();
        Transfer transfer = new Transfer(
                url, dst, offset, objectSize, start + options.deadline().toNanos(), etag);
        for (int i = 0; i < count; i++) {
            long first = offset + i * partBytes;
            transfer.parts.add(new Part(first, Math.min(offset + length, first + partBytes) - 1));
        }
        transfer.unfinished = transfer.parts.size();
        boolean complete = false;
        try {
            for (Part part : transfer.parts) {
                transfer.futures.add(pool.submit(() -> runPart(transfer, part, source)));
            }
            complete = transfer.await();
        } catch (RejectedExecutionException e) {
            throw new IllegalStateException("the object store is closed; cannot read " + Urls.redact(url), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ShardFetchException(url, "interrupted while reading", e);
        } finally {
            transfer.close(complete);
        }
        return transfer.etag.get();
    }

    private void runPart(Transfer transfer, Part part, RangeSource source) {
        try {
            retry.run(transfer.url, part.toString(), transfer.deadlineNanos, part.tally, remaining -> {
                attempt(transfer, part, source, remaining);
                return null;
            });
            transfer.partDone(part);
        } catch (Abandoned e) {
            // The read is over (failed elsewhere, or its deadline passed); nothing left to report.
        } catch (Throwable e) {
            transfer.partFailed(e);
        }
    }

    private void attempt(Transfer transfer, Part part, RangeSource source, long remainingNanos)
            throws TransientFailure {
        Inflight inflight = transfer.begin();
        RangeResponse response = null;
        boolean clean = false;
        long written = 0;
        try {
            response = source.open(transfer.url, part.first, part.last, Math.min(remainingNanos, stallNanos));
            inflight.attach(response.abort());
            check(transfer, part, response);
            InputStream in = response.body();
            byte[] buffer = new byte[(int) Math.min(BUFFER_BYTES, part.length())];
            while (written < part.length()) {
                int n = in.read(buffer, 0, (int) Math.min(buffer.length, part.length() - written));
                if (n < 0) {
                    throw new TransientFailure(
                            "short body: the response ended after " + written + " of " + part.length() + " bytes");
                }
                transfer.write(part.first - transfer.offset + written, buffer, n);
                written += n;
                inflight.progressed();
            }
            if (in.read() >= 0) {
                throw new ShardFetchException(
                        transfer.url, part + ": the server sent more than the " + part.length() + " bytes asked for");
            }
            in.close();
            clean = true;
        } catch (IOException e) {
            if (transfer.closed) {
                throw Abandoned.INSTANCE;
            }
            String abortedBecause = inflight.abortedBecause();
            throw new TransientFailure(
                    abortedBecause != null
                            ? abortedBecause
                            : response == null
                                    ? "request failed: " + Retry.describe(e)
                                    : "connection dropped after " + written + " of " + part.length() + " bytes: "
                                            + Retry.describe(e),
                    e);
        } catch (TransientFailure e) {
            if (transfer.closed) {
                throw Abandoned.INSTANCE;
            }
            String abortedBecause = inflight.abortedBecause();
            throw abortedBecause == null ? e : new TransientFailure(abortedBecause, e);
        } finally {
            if (!clean && response != null) {
                response.abort().run(); // not close(): it may wait to drain a body that is not coming
            }
            transfer.end(inflight);
        }
    }

    /** What the server says it sends must be what was asked for, of the object dst was sized for. */
    private static void check(Transfer transfer, Part part, RangeResponse response) {
        ContentRange range = response.range();
        long size = transfer.objectSize;
        if (range.total() >= 0 && range.total() != size) {
            throw ShardFetchException.sizeChanged(
                    transfer.url,
                    part + ": the object has " + range.total()
                            + " bytes, not " + size
                            + " (it changed since its size was read, or the size came from a stale catalog)",
                    range.total());
        }
        if (!response.partial() && (part.first != 0 || part.last != size - 1)) {
            throw new RangeIgnored(
                    part + ": the server ignored the Range header (it answered 200 with the whole object)");
        }
        if (range.first() != part.first || range.last() != part.last) {
            throw new ShardFetchException(
                    transfer.url,
                    part + ": asked for bytes " + part.first + "-" + part.last + ", the server sent bytes "
                            + range.first() + "-" + range.last());
        }
        String etag = response.etag();
        if (etag != null && transfer.expectedEtag != null && !transfer.expectedEtag.equals(etag)) {
            throw ShardFetchException.etagChanged(
                    transfer.url,
                    part + ": the object's ETag is " + etag + ", not " + transfer.expectedEtag + " as expected",
                    etag);
        }
        if (etag != null) {
            String seen = transfer.etag.compareAndExchange(null, etag);
            if (seen != null && !seen.equals(etag)) {
                throw new ShardFetchException(
                        transfer.url,
                        part + ": the object changed while it was read (ETag " + seen + ", then " + etag + ")");
            }
        }
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }

    /** The scheme, host and port of {@code url}: what answers it, and ignores Range or not. */
    private static String server(String url) {
        try {
            java.net.URI uri = java.net.URI.create(url);
            return uri.getScheme() + "://" + uri.getHost() + (uri.getPort() >= 0 ? ":" + uri.getPort() : "");
        } catch (IllegalArgumentException e) {
            return Urls.redact(url);
        }
    }

    /**
     * A part's answer was the whole object (200, not 206): {@link #read} reads a whole object again
     * by one GET; part of one cannot be read from that server. Not retried: the server will not change.
     */
    private static final class RangeIgnored extends RuntimeException {
        RangeIgnored(String message) {
            super(message, null, false, false);
        }
    }

    /** Bytes {@code first..last} of the object, and how its attempts went. */
    private static final class Part {
        final long first;
        final long last;
        final Retry.Tally tally = new Retry.Tally();
        volatile boolean done;

        Part(long first, long last) {
            this.first = first;
            this.last = last;
        }

        long length() {
            return last - first + 1;
        }

        @Override
        public String toString() {
            return "bytes " + first + "-" + last;
        }
    }

    /** The read has ended while this attempt was still going: it stops, reporting nothing. */
    private static final class Abandoned extends RuntimeException {
        static final Abandoned INSTANCE = new Abandoned();

        private Abandoned() {
            super("abandoned", null, false, false);
        }
    }

    /** One attempt in progress: when it last received bytes, and how to cut it off from another thread. */
    private static final class Inflight {
        private final Thread thread = Thread.currentThread();
        private volatile long lastProgress = System.nanoTime();
        private Runnable abort;
        private String abortedBecause;
        private boolean finished;

        void progressed() {
            lastProgress = System.nanoTime();
        }

        void attach(Runnable abortResponse) {
            boolean already;
            synchronized (this) {
                abort = abortResponse;
                already = abortedBecause != null;
            }
            if (already) {
                abortResponse.run();
            }
        }

        /** Cuts the attempt off: closes its connection and interrupts its thread (a blocked JDK HttpClient body read waits on a queue). */
        void abort(String reason) {
            Runnable toRun;
            synchronized (this) {
                if (finished || abortedBecause != null) {
                    return;
                }
                abortedBecause = reason;
                toRun = abort;
                thread.interrupt(); // under the lock: never after finish(), so never into the next attempt
            }
            if (toRun != null) {
                toRun.run();
            }
        }

        synchronized String abortedBecause() {
            return abortedBecause;
        }

        void finish() {
            boolean aborted;
            synchronized (this) {
                finished = true;
                aborted = abortedBecause != null;
            }
            if (aborted) {
                Thread.interrupted(); // ours, consumed: the retry's backoff must not see it
            }
        }
    }

    /** One call of {@link #read}: its parts, their outcome, and the guard on dst. */
    private final class Transfer {
        final String url;
        final MemorySegment dst;
        final long offset; // of dst's first byte in the object
        final long objectSize;
        final long deadlineNanos;
        final List<Part> parts = new ArrayList<>();
        final List<Future<?>> futures = new ArrayList<>();
        final AtomicReference<String> etag = new AtomicReference<>();
        final String expectedEtag;
        final Set<Inflight> inflight = ConcurrentHashMap.newKeySet();
        final ReentrantReadWriteLock guard = new ReentrantReadWriteLock();
        volatile boolean closed;
        private int unfinished;
        private Throwable failure;

        Transfer(String url, MemorySegment dst, long offset, long objectSize, long deadlineNanos, String expectedEtag) {
            this.expectedEtag = expectedEtag;
            this.url = url;
            this.dst = dst;
            this.offset = offset;
            this.objectSize = objectSize;
            this.deadlineNanos = deadlineNanos;
        }

        /** Copies into dst unless the read is over; attempts write in parallel, close() waits them out. */
        void write(long offset, byte[] buffer, int n) {
            ReentrantReadWriteLock.ReadLock lock = guard.readLock();
            lock.lock();
            try {
                if (closed) {
                    throw Abandoned.INSTANCE;
                }
                MemorySegment.copy(buffer, 0, dst, ValueLayout.JAVA_BYTE, offset, n);
            } finally {
                lock.unlock();
            }
        }

        Inflight begin() {
            Inflight attempt = new Inflight();
            inflight.add(attempt);
            if (closed) {
                inflight.remove(attempt);
                throw Abandoned.INSTANCE;
            }
            return attempt;
        }

        void end(Inflight attempt) {
            inflight.remove(attempt);
            attempt.finish();
        }

        synchronized void partDone(Part part) {
            part.done = true;
            unfinished--;
            notifyAll();
        }

        synchronized void partFailed(Throwable e) {
            if (failure == null && !closed) {
                failure = e;
                notifyAll();
            }
        }

        /** Waits for every part, a failure, or the deadline; cuts off stalled attempts meanwhile. */
        boolean await() throws InterruptedException {
            while (true) {
                synchronized (this) {
                    if (failure != null) {
                        throw rethrow(failure);
                    }
                    if (unfinished == 0) {
                        return true;
                    }
                    long left = deadlineNanos - retry.clock().nanoTime();
                    if (left <= 0) {
                        throw pastDeadline();
                    }
                    TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, POLL_NANOS));
                }
                long now = System.nanoTime();
                for (Inflight attempt : inflight) {
                    if (now - attempt.lastProgress > stallNanos) {
                        attempt.abort("stalled: no bytes for " + Retry.seconds(stallNanos));
                    }
                }
            }
        }

        private RuntimeException rethrow(Throwable e) {
            if (e instanceof RuntimeException r) {
                return r;
            }
            if (e instanceof Error err) {
                throw err;
            }
            return new ShardFetchException(url, "failed: " + e, e);
        }

        private ShardFetchException pastDeadline() {
            List<Part> open = parts.stream().filter(p -> !p.done).toList();
            Part worst = open.stream()
                    .filter(p -> p.tally.last() != null)
                    .findFirst()
                    .orElse(open.getFirst());
            TransientFailure last = worst.tally.last();
            return new ShardFetchException(
                    url,
                    "gave up: the deadline of "
                            + Retry.seconds(options.deadline().toNanos())
                            + " for the object passed with " + open.size() + " of " + parts.size()
                            + " parts unfinished; "
                            + worst + " was at attempt " + worst.tally.attempts() + " of " + retry.attempts()
                            + ", last failure: " + worst.tally.lastCause(),
                    last == null ? null : last.getCause() != null ? last.getCause() : last);
        }

        /**
         * Ends the read: from here on nothing is written into dst (the write lock waits out any
         * copy in progress). A read that did not complete also cuts off its attempts and wakes
         * the parts waiting in a backoff.
         */
        void close(boolean complete) {
            ReentrantReadWriteLock.WriteLock lock = guard.writeLock();
            lock.lock();
            try {
                closed = true;
            } finally {
                lock.unlock();
            }
            if (!complete) {
                for (Inflight attempt : inflight) {
                    attempt.abort("abandoned: the read of the object ended");
                }
                for (Future<?> future : futures) {
                    future.cancel(true);
                }
            }
        }
    }
}
