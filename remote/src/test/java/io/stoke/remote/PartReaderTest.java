package io.stoke.remote;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The protocol-free part of a read, against made-up responses: checks, the write guard, retries of short bodies. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class PartReaderTest {
    static final String URL = "s3://bucket/shard.tar";
    static final byte[] DATA = new byte[2500];

    static {
        new Random(7).nextBytes(DATA);
    }

    static PartReader reader(int attempts, Duration deadline) {
        RemoteOptions options = new RemoteOptions(2, 1000, attempts, deadline, Duration.ofSeconds(1));
        Retry retry = new Retry(attempts, Duration.ofMillis(1), Duration.ofMillis(4), Retry.SYSTEM_CLOCK, () -> 0.5);
        return new PartReader("test-get", options.withStallTimeout(Duration.ofSeconds(5)), retry);
    }

    static RangeResponse response(long first, long last, long total, String etag, InputStream body) {
        return new RangeResponse(new ContentRange(first, last, total), true, etag, body, () -> {});
    }

    static RangeResponse honest(long first, long last) {
        return response(first, last, DATA.length, "\"v1\"", new ByteArrayInputStream(DATA, (int) first, (int)
                (last - first + 1)));
    }

    static long noSize(String url) {
        throw new AssertionError("size() is only for an empty dst");
    }

    @Test
    void partsLandWhereTheyBelong() {
        try (PartReader reader = reader(3, Duration.ofSeconds(5))) {
            MemorySegment dst = Arena.ofAuto().allocate(DATA.length);
            reader.read(URL, dst, (u, first, last, t) -> honest(first, last), PartReaderTest::noSize);
            assertArrayEquals(DATA, dst.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aServerSendingMoreThanAskedIsRefusedAndNothingLandsOutsideDst() {
        try (PartReader reader = reader(3, Duration.ofSeconds(5))) {
            MemorySegment whole = Arena.ofAuto().allocate(3 * DATA.length);
            whole.fill((byte) 0x7f);
            MemorySegment dst = whole.asSlice(DATA.length, DATA.length);
            ShardFetchException e = assertThrows(
                    ShardFetchException.class,
                    () -> reader.read(
                            URL,
                            dst,
                            (u, first, last, t) -> response(
                                    first,
                                    last,
                                    DATA.length,
                                    null,
                                    new ByteArrayInputStream(new byte[(int) (last - first + 1) + 500])),
                            PartReaderTest::noSize));
            assertTrue(
                    e.getMessage().startsWith(URL + ": bytes ")
                            && e.getMessage().contains("more than"),
                    e.getMessage());
            byte[] before = whole.asSlice(0, DATA.length).toArray(ValueLayout.JAVA_BYTE);
            byte[] after = whole.asSlice(2L * DATA.length, DATA.length).toArray(ValueLayout.JAVA_BYTE);
            byte[] untouched = new byte[DATA.length];
            Arrays.fill(untouched, (byte) 0x7f);
            assertArrayEquals(untouched, before);
            assertArrayEquals(untouched, after);
        }
    }

    @Test
    void aRangeOfTheObjectLandsAtTheStartOfDstInParts() {
        try (PartReader reader = reader(3, Duration.ofSeconds(5))) {
            MemorySegment whole = Arena.ofAuto().allocate(DATA.length);
            whole.fill((byte) 0x7f);
            long offset = 300;
            int length = 2 * 1000 + 77; // three parts, the last short
            MemorySegment dst = whole.asSlice(0, length);
            reader.read(
                    URL,
                    offset,
                    DATA.length,
                    dst,
                    (u, first, last, t) -> honest(first, last),
                    PartReaderTest::noSize,
                    null);
            assertArrayEquals(
                    Arrays.copyOfRange(DATA, (int) offset, (int) offset + length), dst.toArray(ValueLayout.JAVA_BYTE));
            byte[] untouched = new byte[DATA.length - length];
            Arrays.fill(untouched, (byte) 0x7f);
            assertArrayEquals(untouched, whole.asSlice(length).toArray(ValueLayout.JAVA_BYTE));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> reader.read(
                            URL,
                            DATA.length - 10,
                            DATA.length,
                            dst,
                            (u, f, l, t) -> honest(f, l),
                            PartReaderTest::noSize,
                            null));
        }
    }

    @Test
    void anotherRangeAnotherSizeOrAnotherEtagIsRefused() {
        try (PartReader reader = reader(3, Duration.ofSeconds(5))) {
            MemorySegment dst = Arena.ofAuto().allocate(DATA.length);
            ShardFetchException shifted = assertThrows(
                    ShardFetchException.class,
                    () -> reader.read(
                            URL,
                            dst,
                            (u, first, last, t) -> honest(first + 1, Math.min(last + 1, DATA.length - 1)),
                            PartReaderTest::noSize));
            assertTrue(shifted.getMessage().contains("asked for bytes"), shifted.getMessage());

            ShardFetchException grown = assertThrows(
                    ShardFetchException.class,
                    () -> reader.read(
                            URL,
                            dst,
                            (u, first, last, t) -> response(
                                    first,
                                    last,
                                    DATA.length + 1,
                                    null,
                                    new ByteArrayInputStream(DATA, (int) first, (int) (last - first + 1))),
                            PartReaderTest::noSize));
            assertTrue(grown.getMessage().contains("the object has 2501 bytes, not 2500"), grown.getMessage());

            ShardFetchException replaced = assertThrows(
                    ShardFetchException.class,
                    () -> reader.read(
                            URL,
                            dst,
                            (u, first, last, t) -> response(
                                    first,
                                    last,
                                    DATA.length,
                                    first == 0 ? "\"v1\"" : "\"v2\"",
                                    new ByteArrayInputStream(DATA, (int) first, (int) (last - first + 1))),
                            PartReaderTest::noSize));
            assertTrue(replaced.getMessage().contains("changed while it was read"), replaced.getMessage());
        }
    }

    @Test
    void aShortBodyIsRetriedAndAfterTheLastAttemptNamed() {
        AtomicInteger opens = new AtomicInteger();
        try (PartReader reader = reader(3, Duration.ofSeconds(5))) {
            MemorySegment dst = Arena.ofAuto().allocate(1000);
            reader.read(
                    URL,
                    dst,
                    (u, first, last, t) -> opens.incrementAndGet() == 1
                            ? response(first, last, 1000, null, new ByteArrayInputStream(DATA, 0, 600))
                            : response(first, last, 1000, null, new ByteArrayInputStream(DATA, 0, 1000)),
                    PartReaderTest::noSize);
            assertEquals(2, opens.get());
            assertArrayEquals(Arrays.copyOf(DATA, 1000), dst.toArray(ValueLayout.JAVA_BYTE));

            ShardFetchException e = assertThrows(
                    ShardFetchException.class,
                    () -> reader.read(
                            URL,
                            dst,
                            (u, first, last, t) ->
                                    response(first, last, 1000, null, new ByteArrayInputStream(DATA, 0, 600)),
                            PartReaderTest::noSize));
            assertTrue(
                    e.getMessage().contains("gave up after 3 attempts")
                            && e.getMessage().contains("short body: the response ended after 600 of 1000 bytes"),
                    e.getMessage());
        }
    }

    /**
     * A part whose connection can be neither aborted nor interrupted keeps receiving bytes after
     * another part failed; none of them may reach dst once read() has thrown.
     */
    @Test
    void bytesArrivingAfterTheReadHasFailedNeverReachDst() throws Exception {
        CountDownLatch secondPartStarted = new CountDownLatch(1);
        AtomicInteger reads = new AtomicInteger();
        InputStream endless = new InputStream() {
            @Override
            public int read() {
                long until = System.nanoTime() + 2_000_000; // 2 ms a byte, deaf to interrupts
                while (System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                if (reads.incrementAndGet() == 3) {
                    secondPartStarted.countDown();
                }
                return 0x55;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                b[off] = (byte) read();
                return 1;
            }
        };
        try (PartReader reader = reader(3, Duration.ofSeconds(5))) {
            MemorySegment dst = Arena.ofAuto().allocate(2000);
            ShardFetchException e = assertThrows(
                    ShardFetchException.class,
                    () -> reader.read(
                            URL,
                            dst,
                            (u, first, last, t) -> {
                                if (first == 0) {
                                    try {
                                        secondPartStarted.await(5, TimeUnit.SECONDS);
                                    } catch (InterruptedException ie) {
                                        Thread.currentThread().interrupt();
                                    }
                                    throw new ShardFetchException(u, "bytes 0-999: refused (HTTP 400)");
                                }
                                return response(first, last, 2000, null, endless);
                            },
                            PartReaderTest::noSize));
            assertTrue(e.getMessage().contains("refused (HTTP 400)"), e.getMessage());
            byte[] atThrow = dst.toArray(ValueLayout.JAVA_BYTE);
            Thread.sleep(200);
            assertArrayEquals(atThrow, dst.toArray(ValueLayout.JAVA_BYTE));
            // The stuck attempt did get one byte more than dst holds: the guard refused it and the attempt ended.
            long landed = 0;
            for (byte b : atThrow) {
                landed += b == 0x55 ? 1 : 0;
            }
            assertTrue(landed >= 2, landed + " bytes landed before the failure"); // the 3rd read set the failure off
            assertEquals(landed + 1, reads.get());
        }
    }

    @Test
    void aConfinedOrReadOnlyDstIsRefusedBeforeAnyRequest() {
        try (PartReader reader = reader(3, Duration.ofSeconds(5));
                Arena confined = Arena.ofConfined()) {
            MemorySegment dst = confined.allocate(100);
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> reader.read(
                            URL,
                            dst,
                            (u, first, last, t) -> {
                                throw new AssertionError("no request");
                            },
                            PartReaderTest::noSize));
            assertTrue(e.getMessage().contains(URL) && e.getMessage().contains("shared"), e.getMessage());
            MemorySegment readOnly = Arena.ofAuto().allocate(100).asReadOnly();
            assertThrows(
                    IllegalArgumentException.class,
                    () -> reader.read(
                            URL,
                            readOnly,
                            (u, first, last, t) -> {
                                throw new AssertionError("no request");
                            },
                            PartReaderTest::noSize));
        }
    }

    @Test
    void anEmptyDstAsksTheSizeSoThatAMissingOrNonEmptyObjectStillFails() {
        try (PartReader reader = reader(3, Duration.ofSeconds(5))) {
            MemorySegment empty = Arena.ofAuto().allocate(0);
            reader.read(
                    URL,
                    empty,
                    (u, f, l, t) -> {
                        throw new AssertionError("no GET");
                    },
                    u -> 0);
            ShardFetchException e = assertThrows(
                    ShardFetchException.class,
                    () -> reader.read(
                            URL,
                            empty,
                            (u, f, l, t) -> {
                                throw new AssertionError("no GET");
                            },
                            u -> 10));
            assertTrue(e.getMessage().contains("the object has 10 bytes, not 0"), e.getMessage());
        }
    }
}
