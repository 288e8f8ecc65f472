package io.stoke.remote;

import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;

/**
 * The retry policy of both stores, in one place: up to {@code attempts} tries of one request,
 * with exponential backoff between them (100 ms, doubling, at most 2 s; each pause drawn between
 * half and all of that, so that the parts of many loaders that met the same 503 do not come back
 * in step), and never past the object's deadline: a pause that would end after it is not taken.
 *
 * <p>An attempt reports a failure worth another try by throwing {@link TransientFailure}; a
 * {@link ShardFetchException} (404, 403, a malformed answer) is final and passes through at once.
 * The clock and the sleep are injected so that the policy is tested without waiting.
 */
final class Retry {
    static final Duration FIRST_BACKOFF = Duration.ofMillis(100);
    static final Duration MAX_BACKOFF = Duration.ofSeconds(2);

    /** Time as the policy sees it. */
    interface Clock {
        long nanoTime();

        void sleepNanos(long nanos) throws InterruptedException;
    }

    static final Clock SYSTEM_CLOCK = new Clock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void sleepNanos(long nanos) throws InterruptedException {
            TimeUnit.NANOSECONDS.sleep(nanos);
        }
    };

    /** A failure that another attempt may not meet: 5xx, 429, a refused, dropped or stalled connection, a short body. */
    static final class TransientFailure extends Exception {
        TransientFailure(String reason, Throwable cause) {
            super(reason, cause);
        }

        TransientFailure(String reason) {
            super(reason);
        }
    }

    /** One try; {@code remainingNanos} is what is left of the deadline, for the attempt's own timeouts. */
    @FunctionalInterface
    interface Attempt<T> {
        T run(long remainingNanos) throws TransientFailure;
    }

    /**
     * Attempts made so far for one request and the last failure, readable from another thread:
     * when the object's deadline passes while a part is still at it, the message says how far it got.
     */
    static final class Tally {
        private volatile int attempts;
        private volatile TransientFailure last;

        int attempts() {
            return attempts;
        }

        TransientFailure last() {
            return last;
        }

        String lastCause() {
            return last == null ? "none yet" : last.getMessage();
        }
    }

    private final int attempts;
    private final long firstBackoffNanos;
    private final long maxBackoffNanos;
    private final Clock clock;
    private final DoubleSupplier random;

    Retry(int attempts, Duration firstBackoff, Duration maxBackoff, Clock clock, DoubleSupplier random) {
        if (attempts < 1) {
            throw new IllegalArgumentException("attempts must be at least 1, got " + attempts);
        }
        this.attempts = attempts;
        this.firstBackoffNanos = firstBackoff.toNanos();
        this.maxBackoffNanos = maxBackoff.toNanos();
        this.clock = clock;
        this.random = random;
    }

    /** The policy of {@code options}, on the real clock. */
    static Retry of(RemoteOptions options) {
        return new Retry(
                options.attempts(),
                FIRST_BACKOFF,
                MAX_BACKOFF,
                SYSTEM_CLOCK,
                () -> ThreadLocalRandom.current().nextDouble());
    }

    int attempts() {
        return attempts;
    }

    Clock clock() {
        return clock;
    }

    /**
     * Runs {@code attempt} until it returns, throws something final, or the attempts or the
     * deadline ({@link System#nanoTime()} scale) are spent; then a {@link ShardFetchException}
     * naming {@code url}, {@code what} was asked for, the attempts made and the last cause.
     */
    <T> T run(String url, String what, long deadlineNanos, Tally tally, Attempt<T> attempt) {
        long start = clock.nanoTime();
        for (int n = 1; ; n++) {
            long remaining = deadlineNanos - clock.nanoTime();
            if (remaining <= 0) {
                throw pastDeadline(url, what, n - 1, start, tally);
            }
            tally.attempts = n;
            try {
                return attempt.run(remaining);
            } catch (TransientFailure failure) {
                tally.last = failure;
                if (n >= attempts) {
                    throw new ShardFetchException(
                            url,
                            what + ": gave up after " + n + (n == 1 ? " attempt" : " attempts") + " in "
                                    + seconds(clock.nanoTime() - start) + "; last failure: " + failure.getMessage(),
                            causeOf(failure));
                }
                long pause = backoffNanos(n);
                if (clock.nanoTime() + pause >= deadlineNanos) {
                    throw pastDeadline(url, what, n, start, tally);
                }
                try {
                    clock.sleepNanos(pause);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ShardFetchException(url, what + ": interrupted after " + n + " attempts", e);
                }
            }
        }
    }

    /** The pause after the {@code failures}-th failed attempt: 100 ms doubling up to 2 s, times [0.5, 1]. */
    long backoffNanos(int failures) {
        long base = firstBackoffNanos;
        for (int i = 1; i < failures && base < maxBackoffNanos; i++) {
            base *= 2;
        }
        base = Math.min(base, maxBackoffNanos);
        return base / 2 + (long) (random.getAsDouble() * (base / 2));
    }

    private ShardFetchException pastDeadline(String url, String what, int made, long start, Tally tally) {
        return new ShardFetchException(
                url,
                what + ": gave up after " + made + (made == 1 ? " attempt" : " attempts")
                        + " in " + seconds(clock.nanoTime() - start) + ": the object's deadline passed; last failure: "
                        + tally.lastCause(),
                tally.last() == null ? null : causeOf(tally.last()));
    }

    /** The failure's own cause (the IOException, the SDK's exception) when it has one: that is what to debug. */
    private static Throwable causeOf(TransientFailure failure) {
        return failure.getCause() != null ? failure.getCause() : failure;
    }

    /** An exception in a few words for a message: {@code ConnectException: Connection refused}. */
    static String describe(Throwable e) {
        String message = e.getMessage();
        if (message != null) {
            int newline = message.indexOf('\n');
            message = newline < 0 ? message : message.substring(0, newline);
        }
        return e.getClass().getSimpleName() + (message == null || message.isBlank() ? "" : ": " + message);
    }

    static String seconds(long nanos) {
        return String.format(Locale.ROOT, "%.1f s", nanos / 1e9);
    }
}
