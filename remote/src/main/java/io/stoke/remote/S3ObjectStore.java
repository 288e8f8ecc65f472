package io.stoke.remote;

import io.stoke.loader.internal.Urls;
import io.stoke.remote.Retry.TransientFailure;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.UnaryOperator;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.regions.providers.AwsProfileRegionProvider;
import software.amazon.awssdk.regions.providers.AwsRegionProviderChain;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;
import software.amazon.awssdk.regions.providers.SystemSettingsRegionProvider;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Reads {@code s3://bucket/key} objects with the AWS SDK for Java 2.x, through the SDK's small
 * blocking HTTP client ({@code HttpURLConnection}).
 *
 * <p>Configuration is the SDK's own, so that what works for the AWS CLI works here:
 * <ul>
 * <li>Credentials: the SDK's default chain ({@code AWS_ACCESS_KEY_ID}/{@code AWS_SECRET_ACCESS_KEY},
 *     {@code AWS_PROFILE} and {@code ~/.aws}, web identity, container and instance roles). They
 *     are looked up when the store is made; finding none is an error that says what to set, never
 *     a silent switch to anonymous requests (which would turn a typo into "access denied" later).
 * <li>Region: the SDK's default chain ({@code AWS_REGION}, the profile, instance metadata); when
 *     none is configured, us-east-1, where a request for a bucket elsewhere gets a clear error.
 * <li>Endpoint: a custom one from the system property {@value #ENDPOINT_PROPERTY}, else
 *     {@code AWS_ENDPOINT_URL_S3}, else {@code AWS_ENDPOINT_URL}. With a custom endpoint the
 *     bucket goes in the path ({@code http://host:9000/bucket/key}), which MinIO, Ceph and
 *     s3proxy need, and the region is not asked of instance metadata (it only signs).
 * <li>Checksums: computed and asked for only where the operation requires them, unless the
 *     standard AWS settings say otherwise ({@link ChecksumSettings}): the SDK's own default adds
 *     checksum headers that older S3-compatible servers refuse.
 * <li>Uploads (catalogs, spark-embed's tables and markers): one PUT whose body is the object's
 *     bytes, never {@code aws-chunked} frames, which the SDK sends by default over plain HTTP and
 *     which a server that does not decode them stores as the object's bytes, without an error.
 * </ul>
 * The SDK's own retries are off and its call timeouts follow {@link RemoteOptions}: the retry
 * policy is {@link Retry}'s, the same as for HTTP, bounded by the attempts and the deadline. A
 * server that refuses a request it does not support fails it at once ({@link FailureKind}).
 */
public final class S3ObjectStore implements ObjectStore {
    /** A custom endpoint (MinIO, Ceph, s3proxy, a test server) that wins over the environment's. */
    public static final String ENDPOINT_PROPERTY = "stoke.s3.endpoint";

    private final RemoteOptions options;
    private final URI endpoint; // null: the SDK's (AWS)
    private final Region region;
    private final DefaultCredentialsProvider credentials;
    private final ChecksumSettings checksums;
    private final S3Client s3;
    private final Retry retry;
    private final PartReader parts;

    /** A store configured from the environment, as the class comment says. */
    public S3ObjectStore(RemoteOptions options) {
        this(options, customEndpoint(System::getProperty, System::getenv));
    }

    /** A store for {@code endpoint} (path-style), or for the SDK's own endpoint when null. */
    S3ObjectStore(RemoteOptions options, URI endpoint) {
        this.options = options;
        this.endpoint = endpoint;
        this.region = region(endpoint != null);
        this.checksums = ChecksumSettings.fromEnvironment(); // before the credentials, which must be closed
        DefaultCredentialsProvider chain = DefaultCredentialsProvider.builder().build();
        try {
            chain.resolveCredentials();
        } catch (SdkException e) {
            chain.close();
            throw new IllegalStateException(
                    "no AWS credentials found for s3:// URLs: set AWS_ACCESS_KEY_ID and"
                            + " AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or AWS_PROFILE to a"
                            + " profile in ~/.aws/credentials (the SDK looked everywhere it knows: " + e.getMessage()
                            + ")",
                    e);
        }
        this.credentials = chain;
        S3ClientBuilder builder = S3Client.builder()
                .region(region)
                .credentialsProvider(credentials)
                .httpClientBuilder(UrlConnectionHttpClient.builder()
                        .connectionTimeout(options.connectTimeout())
                        .socketTimeout(options.stallTimeout()))
                // when_required unless the AWS settings say otherwise: older S3-compatible servers
                // refuse the checksum headers of the SDK's own default (ChecksumSettings).
                .requestChecksumCalculation(checksums.request())
                .responseChecksumValidation(checksums.response())
                // An upload's bytes go as they are, signed by their SHA-256 (they are in memory):
                // over plain HTTP the SDK would frame them as aws-chunked, and a server that does not
                // decode that framing (s3rver, some gateways) stores the frames as the object.
                .serviceConfiguration(
                        S3Configuration.builder().chunkedEncodingEnabled(false).build())
                .overrideConfiguration(o -> o.addExecutionInterceptor(new ChecksumHeaders())
                        .retryStrategy(AwsRetryStrategy.doNotRetry())
                        .apiCallTimeout(options.deadline()));
        if (endpoint != null) {
            builder.endpointOverride(endpoint).forcePathStyle(true);
        }
        this.s3 = builder.build();
        this.retry = Retry.of(options);
        this.parts = new PartReader("stoke-s3-get", options, retry);
    }

    /**
     * The custom endpoint: {@value #ENDPOINT_PROPERTY}, else {@code AWS_ENDPOINT_URL_S3}, else
     * {@code AWS_ENDPOINT_URL}; null when none is set. The lookups are parameters for the tests.
     */
    static URI customEndpoint(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        String[][] sources = {
            {ENDPOINT_PROPERTY, properties.apply(ENDPOINT_PROPERTY)},
            {"AWS_ENDPOINT_URL_S3", environment.apply("AWS_ENDPOINT_URL_S3")},
            {"AWS_ENDPOINT_URL", environment.apply("AWS_ENDPOINT_URL")},
        };
        for (String[] source : sources) {
            String value = source[1];
            if (value == null || value.isBlank()) {
                continue;
            }
            URI uri;
            try {
                uri = URI.create(value.strip());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(source[0] + " is not a URL: '" + value + "'", e);
            }
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
                throw new IllegalArgumentException(source[0] + " must be an http:// or https:// URL such as"
                        + " http://127.0.0.1:9000, got '" + value + "'");
            }
            return uri;
        }
        return null;
    }

    /** The SDK's region chain (without instance metadata for a custom endpoint), else us-east-1. */
    private static Region region(boolean customEndpoint) {
        AwsRegionProviderChain chain = customEndpoint
                ? new AwsRegionProviderChain(new SystemSettingsRegionProvider(), new AwsProfileRegionProvider())
                : new DefaultAwsRegionProviderChain();
        try {
            return chain.getRegion();
        } catch (SdkException e) {
            return Region.US_EAST_1;
        }
    }

    /** The custom endpoint in use, or null for AWS's. */
    URI endpoint() {
        return endpoint;
    }

    Region region() {
        return region;
    }

    ChecksumSettings checksums() {
        return checksums;
    }

    @Override
    public Stat stat(String url) {
        HeadObjectResponse head = head(url);
        Long length = head.contentLength();
        if (length == null || length < 0) {
            throw new ShardFetchException(url, "HEAD answered without a Content-Length");
        }
        return new Stat(
                length,
                head.eTag(),
                head.lastModified() == null ? null : head.lastModified().toString());
    }

    @Override
    public void write(String url, byte[] bytes) {
        Location at = Location.of(url, false);
        long deadline = retry.clock().nanoTime() + options.deadline().toNanos();
        retry.run(url, "PUT", deadline, new Retry.Tally(), remaining -> {
            ChecksumHeaders.Seen seen = new ChecksumHeaders.Seen();
            return call(
                    url,
                    seen,
                    () -> s3.putObject(
                            b -> b.bucket(at.bucket).key(at.key).overrideConfiguration(attempt(remaining, seen)),
                            RequestBody.fromBytes(bytes)));
        });
    }

    @Override
    public boolean create(String url, byte[] bytes) {
        Location at = Location.of(url, false);
        long deadline = retry.clock().nanoTime() + options.deadline().toNanos();
        int[] tries = {0};
        try {
            return retry.run(url, "conditional PUT", deadline, new Retry.Tally(), remaining -> {
                ChecksumHeaders.Seen seen = new ChecksumHeaders.Seen();
                tries[0]++;
                return call(url, seen, () -> {
                    try {
                        s3.putObject(
                                b -> b.bucket(at.bucket)
                                        .key(at.key)
                                        .ifNoneMatch("*")
                                        .overrideConfiguration(attempt(remaining, seen)),
                                RequestBody.fromBytes(bytes));
                        return true;
                    } catch (S3Exception e) {
                        if (e.statusCode() == 412) {
                            // Another writer's object is there; or, after a try whose answer was
                            // lost, this writer's own (its bytes, which callers make their own).
                            return tries[0] > 1 && holds(url, bytes);
                        }
                        throw e;
                    }
                });
            });
        } catch (ShardFetchException e) {
            if (e.getCause() instanceof SdkServiceException s
                    && FailureKind.of(s.statusCode(), errorCode(s)) == FailureKind.UNSUPPORTED) {
                throw new UnsupportedOperationException(
                        Urls.redact(url) + ": the store does not support conditional writes (If-None-Match: *): "
                                + e.getMessage(),
                        e);
            }
            throw e;
        }
    }

    /** Whether the object at {@code url} is exactly {@code bytes}. */
    private boolean holds(String url, byte[] bytes) {
        return size(url) == bytes.length && Arrays.equals(readBytes(url, bytes.length), bytes);
    }

    private static String errorCode(SdkServiceException e) {
        AwsErrorDetails details = e instanceof AwsServiceException aws ? aws.awsErrorDetails() : null;
        return details == null ? null : details.errorCode();
    }

    @Override
    public void delete(String url) {
        Location at = Location.of(url, false);
        long deadline = retry.clock().nanoTime() + options.deadline().toNanos();
        retry.run(url, "DELETE", deadline, new Retry.Tally(), remaining -> {
            ChecksumHeaders.Seen seen = new ChecksumHeaders.Seen();
            return call(
                    url,
                    seen,
                    () -> s3.deleteObject(
                            b -> b.bucket(at.bucket).key(at.key).overrideConfiguration(attempt(remaining, seen))));
        });
    }

    private HeadObjectResponse head(String url) {
        Location at = Location.of(url, false);
        long deadline = retry.clock().nanoTime() + options.deadline().toNanos();
        return retry.run(url, "HEAD", deadline, new Retry.Tally(), remaining -> {
            ChecksumHeaders.Seen seen = new ChecksumHeaders.Seen();
            return call(
                    url,
                    seen,
                    () -> s3.headObject(
                            b -> b.bucket(at.bucket).key(at.key).overrideConfiguration(attempt(remaining, seen))));
        });
    }

    @Override
    public void read(String url, MemorySegment dst) {
        read(url, dst, null);
    }

    @Override
    public String read(String url, MemorySegment dst, String etag) {
        Location at = Location.of(url, false);
        return parts.read(
                url,
                dst,
                (u, first, last, timeoutNanos) -> openRange(u, at, first, last, timeoutNanos),
                this::size,
                etag);
    }

    @Override
    public String readRange(String url, long offset, long objectSize, MemorySegment dst, String etag) {
        Location at = Location.of(url, false);
        return parts.read(
                url,
                offset,
                objectSize,
                dst,
                (u, first, last, timeoutNanos) -> openRange(u, at, first, last, timeoutNanos),
                this::size,
                etag);
    }

    private RangeResponse openRange(String url, Location at, long first, long last, long timeoutNanos)
            throws TransientFailure {
        ChecksumHeaders.Seen seen = new ChecksumHeaders.Seen();
        GetObjectRequest request = GetObjectRequest.builder()
                .bucket(at.bucket)
                .key(at.key)
                .range("bytes=" + first + "-" + last)
                .overrideConfiguration(attempt(timeoutNanos, seen))
                .build();
        ResponseInputStream<GetObjectResponse> stream = call(url, seen, () -> s3.getObject(request));
        GetObjectResponse response = stream.response();
        ContentRange range = ContentRange.parse(response.contentRange());
        boolean partial = range != null;
        if (range == null) {
            Long length = response.contentLength();
            if (response.contentRange() != null || length == null) {
                stream.abort();
                throw new ShardFetchException(
                        url,
                        "bytes " + first + "-" + last + ": unreadable Content-Range '" + response.contentRange()
                                + "' (Content-Length " + length + ")");
            }
            range = new ContentRange(0, length - 1, length);
        }
        return new RangeResponse(range, partial, response.eTag(), new SdkErrorsAsIo(stream), stream::abort);
    }

    @Override
    public List<String> list(String prefixUrl, String suffix) {
        List<String> urls = new ArrayList<>();
        for (Listed o : listFrom(prefixUrl, null)) {
            if (o.url().endsWith(suffix)) {
                urls.add(o.url());
            }
        }
        return urls; // sorted by name, as listFrom gives them
    }

    @Override
    public List<Listed> listFrom(String prefixUrl, String startAfter) {
        Location at = Location.of(prefixUrl, true);
        String after = null;
        if (startAfter != null) {
            if (!startAfter.startsWith(prefixUrl)) {
                throw new IllegalArgumentException(Urls.redact(startAfter) + " is not under " + Urls.redact(prefixUrl));
            }
            after = Location.of(startAfter, false).key;
        }
        List<Listed> out = new ArrayList<>();
        String token = null;
        do {
            String continuation = token;
            String from = after;
            long deadline = retry.clock().nanoTime() + options.deadline().toNanos();
            ListObjectsV2Response page = retry.run(prefixUrl, "list", deadline, new Retry.Tally(), remaining -> {
                ChecksumHeaders.Seen seen = new ChecksumHeaders.Seen();
                return call(
                        prefixUrl,
                        seen,
                        () -> s3.listObjectsV2(ListObjectsV2Request.builder()
                                .bucket(at.bucket)
                                .prefix(at.key.isEmpty() ? null : at.key)
                                .startAfter(continuation == null ? from : null)
                                .continuationToken(continuation)
                                .overrideConfiguration(attempt(remaining, seen))
                                .build()));
            });
            for (S3Object object : page.contents()) {
                long modified = object.lastModified() == null
                        ? 0
                        : object.lastModified().toEpochMilli();
                out.add(new Listed("s3://" + at.bucket + "/" + object.key(), object.size(), modified));
            }
            token = Boolean.TRUE.equals(page.isTruncated()) ? page.nextContinuationToken() : null;
        } while (token != null);
        out.sort(java.util.Comparator.comparing(Listed::url));
        return out;
    }

    @Override
    public void close() {
        parts.close();
        s3.close();
        credentials.close();
    }

    /** One attempt's configuration: its timeouts, and where {@link ChecksumHeaders} notes what was sent. */
    private static AwsRequestOverrideConfiguration attempt(long nanos, ChecksumHeaders.Seen seen) {
        Duration d = Duration.ofNanos(Math.max(nanos, 1_000_000));
        return AwsRequestOverrideConfiguration.builder()
                .apiCallTimeout(d)
                .apiCallAttemptTimeout(d)
                .putExecutionAttribute(ChecksumHeaders.SEEN, seen)
                .build();
    }

    @FunctionalInterface
    private interface SdkCall<T> {
        T call();
    }

    /** Runs one SDK call, sorting its failure into final (a {@link ShardFetchException}) or worth a retry. */
    private <T> T call(String url, ChecksumHeaders.Seen seen, SdkCall<T> call) throws TransientFailure {
        try {
            return call.call();
        } catch (SdkServiceException e) {
            throw serviceFailure(url, e, seen);
        } catch (SdkException e) {
            // Refused, reset or timed-out connections, truncated answers, an interrupt by the stall
            // watchdog: the client never got an answer from S3, so another attempt may.
            throw new TransientFailure(firstLine(e), e);
        }
    }

    private TransientFailure serviceFailure(String url, SdkServiceException e, ChecksumHeaders.Seen seen) {
        int status = e.statusCode();
        AwsErrorDetails details = e instanceof AwsServiceException aws ? aws.awsErrorDetails() : null;
        String errorCode = details == null ? null : details.errorCode();
        String code = errorCode == null ? "" : " " + errorCode;
        String what = "HTTP " + status + code;
        FailureKind kind = e.isThrottlingException() ? FailureKind.TRANSIENT : FailureKind.of(status, errorCode);
        if (kind == FailureKind.TRANSIENT) {
            return new TransientFailure(what, e);
        }
        if (kind == FailureKind.UNSUPPORTED) {
            String message = details == null || details.errorMessage() == null ? firstLine(e) : details.errorMessage();
            String reason = "the server does not support this request (" + what + ": " + message + ")";
            if (!seen.names().isEmpty()) {
                reason += "; the request carried " + String.join(", ", seen.names()) + ", which the AWS SDK adds"
                        + " when checksums are when_supported: " + checksums.remedy();
            }
            throw new ShardFetchException(url, reason, e);
        }
        String reason = switch (status) {
            case 404 ->
                code.contains("NoSuchBucket") ? "not found: no such bucket (" + what + ")" : "not found (" + what + ")";
            case 403 -> "access denied (" + what + "): check the credentials and the bucket's policy";
            case 301, 307 -> "the bucket is in another region (" + what + "): set AWS_REGION to the bucket's region";
            default -> "refused (" + what + "): " + firstLine(e);
        };
        throw new ShardFetchException(url, reason, e);
    }

    private static String firstLine(Throwable e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }

    /**
     * The body of a GET, with the SDK's unchecked failures while reading (an aborted stream) as
     * {@link IOException}s, which is how {@link PartReader} recognizes a dropped transfer.
     */
    private static final class SdkErrorsAsIo extends FilterInputStream {
        SdkErrorsAsIo(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            try {
                return super.read();
            } catch (SdkException e) {
                throw new IOException(firstLine(e), e);
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            try {
                return super.read(b, off, len);
            } catch (SdkException e) {
                throw new IOException(firstLine(e), e);
            }
        }

        @Override
        public void close() throws IOException {
            try {
                super.close();
            } catch (SdkException e) {
                throw new IOException(firstLine(e), e);
            }
        }
    }

    /** An {@code s3://bucket/key} URL, split; the key is taken as written (S3 keys are not URL-encoded in it). */
    private record Location(String bucket, String key) {
        static Location of(String url, boolean prefix) {
            if (url == null || !url.regionMatches(true, 0, "s3://", 0, 5)) {
                throw new IllegalArgumentException("not an s3:// URL: " + Urls.redact(url));
            }
            String rest = url.substring(5);
            int slash = rest.indexOf('/');
            String bucket = slash < 0 ? rest : rest.substring(0, slash);
            String key = slash < 0 ? "" : rest.substring(slash + 1);
            if (bucket.isEmpty()) {
                throw new IllegalArgumentException("no bucket in " + Urls.redact(url) + " (expected s3://bucket/key)");
            }
            if (!prefix && key.isEmpty()) {
                throw new IllegalArgumentException("no key in " + Urls.redact(url) + " (expected s3://bucket/key)");
            }
            return new Location(bucket, key);
        }
    }
}
