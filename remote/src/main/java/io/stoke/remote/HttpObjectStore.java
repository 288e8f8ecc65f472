package io.stoke.remote;

import io.stoke.loader.internal.Urls;
import io.stoke.remote.Retry.TransientFailure;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * Reads {@code http://} and {@code https://} objects with {@link java.net.http.HttpClient}: HEAD
 * for the size, ranged GETs for the bytes, the same retry policy as S3 ({@link Retry}). A server
 * that refuses HEAD (405, 501, or 403 as a URL presigned for GET answers it) is asked for its
 * first byte instead, and the size read from the {@code Content-Range} of the answer.
 *
 * <p>The client speaks HTTP/1.1 only: parallel ranged GETs are meant to travel on parallel TCP
 * connections, which HTTP/2 would fold into one. Redirects are followed (not from https to http).
 */
public final class HttpObjectStore implements ObjectStore {
    private final RemoteOptions options;
    private final HttpClient client;
    private final Retry retry;
    private final PartReader parts;

    public HttpObjectStore(RemoteOptions options) {
        this.options = options;
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(options.connectTimeout())
                .followRedirects(HttpClient.Redirect.NORMAL)
                .build();
        this.retry = Retry.of(options);
        this.parts = new PartReader("stoke-http-get", options, retry);
    }

    @Override
    public Stat stat(String url) {
        URI uri = uri(url);
        long deadline = retry.clock().nanoTime() + options.deadline().toNanos();
        return retry.run(url, "HEAD", deadline, new Retry.Tally(), remaining -> {
            HttpResponse<Void> head = send(
                    url,
                    HttpRequest.newBuilder(uri)
                            .method("HEAD", HttpRequest.BodyPublishers.noBody())
                            .timeout(timeout(remaining))
                            .build(),
                    BodyHandlers.discarding());
            int status = head.statusCode();
            if (status == 200) {
                OptionalLong length = head.headers().firstValueAsLong("Content-Length");
                if (length.isPresent() && length.getAsLong() >= 0) {
                    return stat(length.getAsLong(), head);
                }
                return sizeFromFirstByte(url, uri, remaining); // HEAD without a length (chunked)
            }
            if (status == 405 || status == 501 || status == 403) {
                return sizeFromFirstByte(url, uri, remaining);
            }
            throw failure(url, "HEAD", status);
        });
    }

    private static Stat stat(long size, HttpResponse<?> response) {
        return new Stat(
                size,
                response.headers().firstValue("ETag").orElse(null),
                response.headers().firstValue("Last-Modified").orElse(null));
    }

    /** The size from a GET of byte 0: {@code Content-Range: bytes 0-0/SIZE}, or a 416 for an empty object. */
    private Stat sizeFromFirstByte(String url, URI uri, long remaining) throws TransientFailure {
        HttpResponse<InputStream> response = send(
                url,
                HttpRequest.newBuilder(uri)
                        .GET()
                        .header("Range", "bytes=0-0")
                        .timeout(timeout(remaining))
                        .build(),
                BodyHandlers.ofInputStream());
        closeQuietly(response.body()); // one byte, or the whole object of a server without Range: not wanted
        int status = response.statusCode();
        String header = response.headers().firstValue("Content-Range").orElse(null);
        ContentRange range = ContentRange.parse(header);
        if (status == 206 || status == 416) {
            if (range == null || range.total() < 0) {
                throw new ShardFetchException(
                        url,
                        "GET of byte 0 (HEAD was refused) answered " + status
                                + " without the object's size (Content-Range: " + header + ")");
            }
            return stat(range.total(), response);
        }
        if (status == 200) {
            OptionalLong length = response.headers().firstValueAsLong("Content-Length");
            if (length.isEmpty()) {
                throw new ShardFetchException(
                        url,
                        "the server tells the size neither by HEAD nor by a ranged GET"
                                + " (200 without Content-Length)");
            }
            return stat(length.getAsLong(), response);
        }
        throw failure(url, "GET of byte 0 (HEAD was refused)", status);
    }

    @Override
    public void read(String url, MemorySegment dst) {
        read(url, dst, null);
    }

    @Override
    public String read(String url, MemorySegment dst, String etag) {
        URI uri = uri(url);
        return parts.read(
                url,
                dst,
                (u, first, last, timeoutNanos) -> openRange(u, uri, first, last, timeoutNanos),
                this::size,
                etag);
    }

    @Override
    public String readRange(String url, long offset, long objectSize, MemorySegment dst, String etag) {
        URI uri = uri(url);
        return parts.read(
                url,
                offset,
                objectSize,
                dst,
                (u, first, last, timeoutNanos) -> openRange(u, uri, first, last, timeoutNanos),
                this::size,
                etag);
    }

    @Override
    public void write(String url, byte[] bytes) {
        throw new UnsupportedOperationException(
                "cannot write " + Urls.redact(url) + ": Stoke reads HTTP stores, it does not write"
                        + " to them; write the file locally and upload it yourself");
    }

    private RangeResponse openRange(String url, URI uri, long first, long last, long timeoutNanos)
            throws TransientFailure {
        HttpResponse<InputStream> response = send(
                url,
                HttpRequest.newBuilder(uri)
                        .GET()
                        .header("Range", "bytes=" + first + "-" + last)
                        .timeout(timeout(timeoutNanos))
                        .build(),
                BodyHandlers.ofInputStream());
        InputStream body = response.body();
        Runnable abort = () -> closeQuietly(body);
        int status = response.statusCode();
        String etag = response.headers().firstValue("ETag").orElse(null);
        if (status == 206) {
            String header = response.headers().firstValue("Content-Range").orElse(null);
            ContentRange range = ContentRange.parse(header);
            if (range == null || range.first() < 0) {
                abort.run();
                throw new ShardFetchException(
                        url, "bytes " + first + "-" + last + ": 206 with an unreadable Content-Range '" + header + "'");
            }
            return new RangeResponse(range, true, etag, body, abort);
        }
        if (status == 200) {
            OptionalLong length = response.headers().firstValueAsLong("Content-Length");
            if (length.isEmpty()) {
                abort.run();
                throw new ShardFetchException(
                        url,
                        "bytes " + first + "-" + last + ": the server ignored the Range"
                                + " header and sent no Content-Length; reading in parts needs a server with Range support");
            }
            return new RangeResponse(
                    new ContentRange(0, length.getAsLong() - 1, length.getAsLong()), false, etag, body, abort);
        }
        abort.run();
        if (status == 416) {
            throw new ShardFetchException(
                    url,
                    "bytes " + first + "-" + last + ": range not satisfiable (HTTP 416,"
                            + " Content-Range "
                            + response.headers().firstValue("Content-Range").orElse("none")
                            + "): the object is smaller than dst (it changed since its size was read, or dst was sized"
                            + " for another)");
        }
        throw failure(url, "bytes " + first + "-" + last, status);
    }

    /** HTTP has no listing: the shards of an http(s) dataset are named by a pattern instead. */
    @Override
    public boolean create(String url, byte[] bytes) {
        write(url, bytes);
        return true;
    }

    @Override
    public void delete(String url) {
        throw new UnsupportedOperationException(
                "cannot delete " + Urls.redact(url) + ": Stoke reads HTTP stores, it does not" + " change them");
    }

    @Override
    public List<String> list(String prefixUrl, String suffix) {
        throw new UnsupportedOperationException(
                "cannot list " + Urls.redact(prefixUrl) + ": HTTP has no directory listing; name the files with a"
                        + " brace pattern instead, such as https://host/train-{000000..000146}.tar, or serve the catalog"
                        + " `stoke catalog` writes beside them (index.json for shards, parquet-index.json for Parquet)");
    }

    @Override
    public List<Listed> listFrom(String prefixUrl, String startAfter) {
        throw new UnsupportedOperationException("cannot list " + Urls.redact(prefixUrl)
                + ": HTTP has no directory listing, and a table's log is found by listing it");
    }

    @Override
    public void close() {
        parts.close();
        client.shutdownNow(); // not close(): that waits for exchanges, and a stalled one may never end
    }

    private <T> HttpResponse<T> send(String url, HttpRequest request, HttpResponse.BodyHandler<T> handler)
            throws TransientFailure {
        try {
            return client.send(request, handler);
        } catch (IOException e) {
            // Refused, reset, timed out, closed before the status line: the server may answer next time.
            throw new TransientFailure(request.method() + " failed: " + Retry.describe(e), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransientFailure(request.method() + " interrupted", e);
        }
    }

    /**
     * A non-2xx answer: worth another attempt for 5xx and 429 ({@link FailureKind}), final otherwise
     * (404: not found; 501: the server does not do this, and will not on the next attempt either).
     */
    private static TransientFailure failure(String url, String what, int status) {
        FailureKind kind = FailureKind.of(status);
        if (kind == FailureKind.TRANSIENT) {
            return new TransientFailure("HTTP " + status);
        }
        String reason = kind == FailureKind.UNSUPPORTED
                ? "the server does not support this request (HTTP " + status + ")"
                : switch (status) {
                    case 404, 410 -> "not found (HTTP " + status + ")";
                    case 401, 403 -> "access denied (HTTP " + status + ")";
                    default -> "refused (HTTP " + status + ")";
                };
        throw new ShardFetchException(url, what + ": " + reason);
    }

    private static URI uri(String url) {
        String lower = url == null ? "" : url.toLowerCase(Locale.ROOT);
        if (!(lower.startsWith("http://") || lower.startsWith("https://"))) {
            throw new IllegalArgumentException("not an http:// or https:// URL: " + Urls.redact(url));
        }
        try {
            return URI.create(url);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "malformed URL " + Urls.redact(url) + ": " + Urls.redactAll(e.getMessage())
                            + " (characters such as spaces must be percent-encoded)",
                    e);
        }
    }

    private static Duration timeout(long nanos) {
        return Duration.ofNanos(Math.max(nanos, 1_000_000));
    }

    private static void closeQuietly(InputStream in) {
        try {
            in.close();
        } catch (IOException e) {
            // Cutting the connection off is all that was wanted.
        }
    }
}
