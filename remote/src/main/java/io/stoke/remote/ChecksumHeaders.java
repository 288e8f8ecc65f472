package io.stoke.remote;

import java.util.List;
import java.util.Locale;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttribute;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;

/**
 * Notes which checksum headers the AWS SDK put on a request as it was sent, so that a server's
 * refusal of that request can say whether the checksum settings are the likely reason. A request
 * that wants to know carries a {@link Seen} under {@link #SEEN} in its override configuration.
 */
final class ChecksumHeaders implements ExecutionInterceptor {
    static final ExecutionAttribute<Seen> SEEN = new ExecutionAttribute<>("io.stoke.remote.ChecksumHeaders.Seen");

    /** The checksum headers of one request's last attempt; none until it was sent. */
    static final class Seen {
        private volatile List<String> names = List.of();

        List<String> names() {
            return names;
        }
    }

    @Override
    public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
        Seen seen = attributes.getAttribute(SEEN);
        if (seen != null) {
            seen.names = context.httpRequest().headers().keySet().stream()
                    .filter(ChecksumHeaders::isChecksum)
                    .sorted()
                    .toList();
        }
    }

    /**
     * {@code x-amz-checksum-*} (a checksum of the body, even the empty one of a GET, or the mode
     * that asks for the object's), {@code x-amz-sdk-checksum-algorithm}, {@code x-amz-trailer} (a
     * checksum sent after the body), and {@code x-amz-te} (asks S3 to append an MD5 of a GET's
     * body, which the SDK does when response validation is when_supported).
     */
    static boolean isChecksum(String header) {
        String name = header.toLowerCase(Locale.ROOT);
        return name.startsWith("x-amz-checksum-")
                || name.equals("x-amz-sdk-checksum-algorithm")
                || name.equals("x-amz-trailer")
                || name.equals("x-amz-te");
    }
}
