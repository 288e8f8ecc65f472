package io.stoke.remote;

import static io.stoke.remote.FailureKind.REFUSED;
import static io.stoke.remote.FailureKind.TRANSIENT;
import static io.stoke.remote.FailureKind.UNSUPPORTED;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** Which error answers are retried: only those that another attempt may not meet. */
class FailureKindTest {
    @Test
    void aServerThatDoesNotDoItIsUnsupportedNotTransient() {
        assertEquals(UNSUPPORTED, FailureKind.of(501));
        assertEquals(UNSUPPORTED, FailureKind.of(501, "NotImplemented"));
        assertEquals(UNSUPPORTED, FailureKind.of(505));
        assertEquals(UNSUPPORTED, FailureKind.of(400, "NotImplemented"));
        assertEquals(UNSUPPORTED, FailureKind.of(400, "InvalidRequest"));
        assertEquals(UNSUPPORTED, FailureKind.of(400, "InvalidArgument"));
        assertEquals(UNSUPPORTED, FailureKind.of(400, "XAmzContentSHA256Mismatch"));
    }

    @Test
    void busyFailingOrThrottlingServersAreTransient() {
        for (int status : new int[] {500, 502, 503, 504, 429}) {
            assertEquals(TRANSIENT, FailureKind.of(status), "HTTP " + status);
        }
        assertEquals(TRANSIENT, FailureKind.of(503, "SlowDown"));
        assertEquals(TRANSIENT, FailureKind.of(500, "InternalError"));
        // S3's "your socket was not read from in time": the next connection may be.
        assertEquals(TRANSIENT, FailureKind.of(400, "RequestTimeout"));
        assertEquals(TRANSIENT, FailureKind.of(400, "Throttling"));
    }

    @Test
    void otherRefusalsAreFinalButNotUnsupported() {
        assertEquals(REFUSED, FailureKind.of(404));
        assertEquals(REFUSED, FailureKind.of(404, "NoSuchKey"));
        assertEquals(REFUSED, FailureKind.of(403, "AccessDenied"));
        assertEquals(REFUSED, FailureKind.of(400));
        assertEquals(REFUSED, FailureKind.of(400, "InvalidBucketName"));
        assertEquals(REFUSED, FailureKind.of(416, "InvalidRange"));
        assertEquals(REFUSED, FailureKind.of(301, "PermanentRedirect"));
        // The codes name unsupported requests only on a 400: a 403 InvalidRequest stays access denied.
        assertEquals(REFUSED, FailureKind.of(403, "InvalidRequest"));
    }
}
