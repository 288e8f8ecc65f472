package io.stoke.remote;

import java.time.Duration;

/**
 * How an {@link ObjectStore} reads remote objects.
 *
 * @param parallelism    ranged GETs in flight at once, for the whole store (reads running at the
 *                       same time share them); several TCP connections are what fills a fast
 *                       link to S3, one is limited by its window
 * @param partBytes      bytes per ranged GET: a failed part costs at most this much to fetch again
 * @param attempts       tries per request (HEAD, list page or part), the first one included
 * @param deadline       per object: a {@code read} (all of its parts, retries and backoff
 *                       included, and the time its parts wait for a connection that other reads
 *                       hold), a {@code size} or one page of a {@code list} fails once this has
 *                       passed, whatever attempts are left
 * @param connectTimeout to open one TCP (and TLS) connection
 * @param stallTimeout   an attempt that receives no byte for this long is cut off and retried (a
 *                       connection that stays open but sends nothing would otherwise hold its part
 *                       until the deadline)
 */
public record RemoteOptions(
        int parallelism,
        long partBytes,
        int attempts,
        Duration deadline,
        Duration connectTimeout,
        Duration stallTimeout) {
    public static final int DEFAULT_PARALLELISM = 4;
    public static final long DEFAULT_PART_BYTES = 8L << 20;
    public static final int DEFAULT_ATTEMPTS = 5;
    public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(60);
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(10);
    public static final long DEFAULT_STALL_SECONDS = 15;
    public static final Duration DEFAULT_STALL_TIMEOUT = Duration.ofSeconds(DEFAULT_STALL_SECONDS);

    public RemoteOptions {
        if (parallelism < 1) {
            throw new IllegalArgumentException("parallelism must be at least 1, got " + parallelism);
        }
        if (partBytes < 1) {
            throw new IllegalArgumentException("partBytes must be at least 1, got " + partBytes);
        }
        if (attempts < 1) {
            throw new IllegalArgumentException("attempts must be at least 1 (the first try), got " + attempts);
        }
        if (deadline == null || deadline.isNegative() || deadline.isZero()) {
            throw new IllegalArgumentException("deadline must be positive, got " + deadline);
        }
        if (connectTimeout == null || connectTimeout.isNegative() || connectTimeout.isZero()) {
            throw new IllegalArgumentException("connectTimeout must be positive, got " + connectTimeout);
        }
        if (stallTimeout == null || stallTimeout.isNegative() || stallTimeout.isZero()) {
            throw new IllegalArgumentException("stallTimeout must be positive, got " + stallTimeout);
        }
    }

    /** With the default stall timeout ({@value #DEFAULT_STALL_SECONDS} s). */
    public RemoteOptions(int parallelism, long partBytes, int attempts, Duration deadline, Duration connectTimeout) {
        this(parallelism, partBytes, attempts, deadline, connectTimeout, DEFAULT_STALL_TIMEOUT);
    }

    /** These options with another stall timeout. */
    public RemoteOptions withStallTimeout(Duration timeout) {
        return new RemoteOptions(parallelism, partBytes, attempts, deadline, connectTimeout, timeout);
    }

    /** 4 ranged GETs at once of 8 MiB each, 5 attempts, 60 s per object, 10 s to connect, 15 s of silence. */
    public static RemoteOptions defaults() {
        return new RemoteOptions(
                DEFAULT_PARALLELISM, DEFAULT_PART_BYTES, DEFAULT_ATTEMPTS, DEFAULT_DEADLINE, DEFAULT_CONNECT_TIMEOUT);
    }
}
