package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.remote.Retry.TransientFailure;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The retry policy on a clock that only moves when the policy sleeps: no test here waits. */
class RetryTest {
    private static final long MS = 1_000_000L;

    /** Time advances by exactly the pauses the policy takes, and each attempt costs {@code attemptCost}. */
    static final class FakeClock implements Retry.Clock {
        long now = 1_000 * MS;
        long attemptCost;
        final List<Long> sleeps = new ArrayList<>();

        @Override
        public long nanoTime() {
            return now;
        }

        @Override
        public void sleepNanos(long nanos) {
            sleeps.add(nanos / MS);
            now += nanos;
        }
    }

    static Retry retry(int attempts, FakeClock clock, double random) {
        return new Retry(attempts, Retry.FIRST_BACKOFF, Retry.MAX_BACKOFF, clock, () -> random);
    }

    @Test
    void backoffDoublesFrom100MillisecondsUpTo2SecondsWithJitterDownToHalf() {
        FakeClock clock = new FakeClock();
        Retry full = retry(10, clock, 0.999_999_999);
        Retry half = retry(10, clock, 0.0);
        long[] expected = {100, 200, 400, 800, 1600, 2000, 2000};
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], Math.round(full.backoffNanos(i + 1) / (double) MS), "after failure " + (i + 1));
            assertEquals(expected[i] / 2, half.backoffNanos(i + 1) / MS, "after failure " + (i + 1));
        }
    }

    @Test
    void transientFailuresAreRetriedWithBackoffUntilOneSucceeds() {
        FakeClock clock = new FakeClock();
        AtomicInteger calls = new AtomicInteger();
        Retry.Tally tally = new Retry.Tally();
        String result = retry(5, clock, 0.0).run("s3://b/k", "HEAD", clock.now + 60_000 * MS, tally, remaining -> {
            if (calls.incrementAndGet() < 3) {
                throw new TransientFailure("HTTP 503");
            }
            return "ok";
        });
        assertEquals("ok", result);
        assertEquals(3, calls.get());
        assertEquals(3, tally.attempts());
        assertEquals(List.of(50L, 100L), clock.sleeps);
    }

    @Test
    void givesUpAfterTheAttemptsNamingTheUrlTheAttemptsAndTheLastCause() {
        FakeClock clock = new FakeClock();
        AtomicInteger calls = new AtomicInteger();
        IOException last = new IOException("Connection reset");
        ShardFetchException e = assertThrows(
                ShardFetchException.class,
                () -> retry(5, clock, 0.0)
                        .run("s3://b/k.tar", "bytes 0-99", clock.now + 60_000 * MS, new Retry.Tally(), remaining -> {
                            calls.incrementAndGet();
                            throw new TransientFailure("connection dropped after 10 of 100 bytes", last);
                        }));
        assertEquals(5, calls.get());
        assertEquals(List.of(50L, 100L, 200L, 400L), clock.sleeps);
        assertEquals("s3://b/k.tar", e.url());
        assertTrue(e.getMessage().startsWith("s3://b/k.tar: bytes 0-99: gave up after 5 attempts"), e.getMessage());
        assertTrue(e.getMessage().endsWith("last failure: connection dropped after 10 of 100 bytes"), e.getMessage());
        assertSame(last, e.getCause());
    }

    @Test
    void aFinalFailurePassesThroughAtOnce() {
        FakeClock clock = new FakeClock();
        AtomicInteger calls = new AtomicInteger();
        ShardFetchException notFound = new ShardFetchException("s3://b/k", "not found (HTTP 404)");
        ShardFetchException e = assertThrows(
                ShardFetchException.class,
                () -> retry(5, clock, 0.0)
                        .run("s3://b/k", "HEAD", clock.now + 60_000 * MS, new Retry.Tally(), remaining -> {
                            calls.incrementAndGet();
                            throw notFound;
                        }));
        assertSame(notFound, e);
        assertEquals(1, calls.get());
        assertEquals(List.of(), clock.sleeps);
    }

    @Test
    void noPauseIsTakenThatWouldEndPastTheDeadline() {
        FakeClock clock = new FakeClock();
        clock.attemptCost = 0;
        AtomicInteger calls = new AtomicInteger();
        List<Long> remainingSeen = new ArrayList<>();
        long deadline = clock.now + 250 * MS;
        ShardFetchException e = assertThrows(
                ShardFetchException.class,
                () -> retry(10, clock, 0.999_999_999)
                        .run("https://h/x.tar", "HEAD", deadline, new Retry.Tally(), remaining -> {
                            calls.incrementAndGet();
                            remainingSeen.add(remaining / MS);
                            throw new TransientFailure("HTTP 500");
                        }));
        // 1st attempt, 100 ms pause, 2nd attempt; a 200 ms pause would end at 300 ms > 250 ms.
        assertEquals(2, calls.get());
        assertEquals(List.of(250L, 150L), remainingSeen);
        assertTrue(
                e.getMessage().contains("gave up after 2 attempts")
                        && e.getMessage().contains("deadline")
                        && e.getMessage().contains("HTTP 500"),
                e.getMessage());
    }

    @Test
    void aDeadlineAlreadyPastMakesNoAttempt() {
        FakeClock clock = new FakeClock();
        AtomicInteger calls = new AtomicInteger();
        ShardFetchException e = assertThrows(
                ShardFetchException.class,
                () -> retry(5, clock, 0.5)
                        .run("s3://b/k", "HEAD", clock.now, new Retry.Tally(), remaining -> calls.incrementAndGet()));
        assertEquals(0, calls.get());
        assertTrue(e.getMessage().contains("0 attempts") && e.getMessage().contains("none yet"), e.getMessage());
        assertNull(e.getCause());
    }

    @Test
    void contentRangeHeadersAreParsedAndMalformedOnesRefused() {
        assertEquals(new ContentRange(0, 99, 1000), ContentRange.parse("bytes 0-99/1000"));
        assertEquals(new ContentRange(5, 5, -1), ContentRange.parse("bytes 5-5/*"));
        assertEquals(new ContentRange(-1, -1, 0), ContentRange.parse("bytes */0"));
        assertEquals(new ContentRange(0, 0, 1), ContentRange.parse("Bytes 0-0/1"));
        for (String bad : new String[] {
            null,
            "",
            "bytes 0-99",
            "bytes 9-1/100",
            "bytes 0-100/100",
            "items 0-1/2",
            "bytes */*",
            "bytes -5/10",
            "bytes a-b/c"
        }) {
            assertNull(ContentRange.parse(bad), bad);
        }
    }

    @Test
    void optionsRefuseNonsenseWithTheValue() {
        RemoteOptions d = RemoteOptions.defaults();
        assertEquals(new RemoteOptions(4, 8L << 20, 5, Duration.ofSeconds(60), Duration.ofSeconds(10)), d);
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> new RemoteOptions(0, d.partBytes(), d.attempts(), d.deadline(), d.connectTimeout()));
        assertTrue(e.getMessage().contains("parallelism") && e.getMessage().contains("0"), e.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> new RemoteOptions(4, d.partBytes(), 0, d.deadline(), d.connectTimeout()));
        assertThrows(
                IllegalArgumentException.class,
                () -> new RemoteOptions(4, d.partBytes(), 5, Duration.ZERO, d.connectTimeout()));
        assertEquals(Duration.ofSeconds(15), d.stallTimeout());
        assertEquals(
                Duration.ofMillis(500),
                d.withStallTimeout(Duration.ofMillis(500)).stallTimeout());
        e = assertThrows(IllegalArgumentException.class, () -> d.withStallTimeout(Duration.ZERO));
        assertTrue(e.getMessage().contains("stallTimeout") && e.getMessage().contains("PT0S"), e.getMessage());
    }
}
