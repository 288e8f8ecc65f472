package io.stoke.remote;

import java.util.Set;

/**
 * What an error answer of a server means for the request that got it, for both stores: worth
 * another attempt, or final. Only what can succeed on a retry is retried: a busy or failing server
 * (5xx), throttling; a server that says it does not do what was asked (501, or S3's 400
 * {@code NotImplemented}, {@code InvalidRequest}, {@code InvalidArgument}) answers the same every
 * time, and retrying it five times with backoff only hides the reason behind "gave up".
 */
enum FailureKind {
    /** May succeed on another attempt: 5xx other than 501 and 505, 429 and throttling, S3's 400 RequestTimeout. */
    TRANSIENT,
    /** The server does not support the request (a header, a parameter, the HTTP version): final. */
    UNSUPPORTED,
    /** Any other refusal (not found, access denied, a bad request): final; the store says which. */
    REFUSED;

    /**
     * S3 error codes (on a 400) that mean the server will not do this request as sent. Old
     * s3proxy answers a trailing checksum on an upload with {@code XAmzContentSHA256Mismatch}.
     */
    private static final Set<String> UNSUPPORTED_CODES =
            Set.of("NotImplemented", "InvalidRequest", "InvalidArgument", "XAmzContentSHA256Mismatch");

    /** S3 error codes that a later attempt may not meet, whatever the status. */
    private static final Set<String> TRANSIENT_CODES = Set.of(
            "RequestTimeout",
            "SlowDown",
            "Throttling",
            "ThrottlingException",
            "RequestThrottled",
            "RequestLimitExceeded",
            "TooManyRequestsException",
            "InternalError",
            "ServiceUnavailable");

    /** The kind of an HTTP error status without an S3 error code (the plain HTTP store). */
    static FailureKind of(int status) {
        return of(status, null);
    }

    /** The kind of an HTTP error status and the S3 error code of the answer's body (null when none). */
    static FailureKind of(int status, String errorCode) {
        if (errorCode != null && TRANSIENT_CODES.contains(errorCode)) {
            return TRANSIENT;
        }
        if (status == 501 || status == 505) { // Not Implemented, HTTP Version Not Supported
            return UNSUPPORTED;
        }
        if (status == 429 || status >= 500) {
            return TRANSIENT;
        }
        if (status == 400 && errorCode != null && UNSUPPORTED_CODES.contains(errorCode)) {
            return UNSUPPORTED;
        }
        return REFUSED;
    }
}
