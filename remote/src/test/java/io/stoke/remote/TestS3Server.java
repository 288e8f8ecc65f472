package io.stoke.remote;

import java.net.URI;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.eclipse.jetty.util.component.AbstractLifeCycle;
import org.gaul.s3proxy.BlobStores;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.blobstore.BlobStore;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.BucketCannedACL;
import software.amazon.awssdk.services.s3.model.ObjectCannedACL;

/**
 * A real S3 server for the tests: s3proxy (Jetty and its S3 protocol handler, SigV4 checks
 * included) over its in-memory "transient" blob store, on 127.0.0.1 and a free port, with one
 * access key; the current release in this JVM, or with {@link #oldRelease} an old one in its own
 * process. Objects are uploaded with the AWS SDK, as a user would; their bytes are kept here to
 * compare what a store reads back.
 */
public final class TestS3Server implements AutoCloseable {
    static final String ACCESS_KEY = "stoke-test-access-key";
    static final String SECRET_KEY = "stoke-test-secret-key";

    private final AutoCloseable server; // stops the in-process s3proxy, or the old one's process
    private final URI endpoint;
    private final S3Client client;
    private final Map<String, byte[]> objects = new HashMap<>();

    /** The current s3proxy ({@code s3proxy.version} of the parent pom), in this JVM. */
    public TestS3Server() throws Exception {
        BlobStore blobStore = BlobStores.create("transient", new Properties());
        S3Proxy proxy = S3Proxy.builder()
                .blobStore(blobStore)
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
                .endpoint(URI.create("http://127.0.0.1:0"))
                .stopTimeout(0)
                .build();
        proxy.start();
        long until = System.nanoTime() + 10_000_000_000L;
        while (!proxy.getState().equals(AbstractLifeCycle.STARTED)) {
            if (System.nanoTime() > until) {
                throw new IllegalStateException("s3proxy did not start: " + proxy.getState());
            }
            Thread.sleep(5);
        }
        endpoint = URI.create("http://127.0.0.1:" + proxy.getPort());
        server = () -> {
            proxy.stop();
            blobStore.close();
        };
        client = uploader(endpoint);
    }

    private TestS3Server(S3ProxyProcess process) {
        server = process;
        endpoint = process.endpoint();
        client = uploader(endpoint);
    }

    /**
     * The old s3proxy release that loader/pom.xml fetches ({@code s3proxy.old.version}), in its own
     * process with its files in {@code dir}: it refuses the checksum headers of AWS SDK 2.30+.
     */
    public static TestS3Server oldRelease(Path dir) throws Exception {
        return new TestS3Server(S3ProxyProcess.start(S3ProxyProcess.oldReleaseJar(), dir));
    }

    /**
     * Uploads with checksums only where required: the old release refuses the trailing checksum
     * that the SDK sends by default, and the uploads are not what the tests test.
     */
    private static S3Client uploader(URI endpoint) {
        return S3Client.builder()
                .endpointOverride(endpoint)
                .forcePathStyle(true)
                .region(Region.US_EAST_1)
                .credentialsProvider(
                        StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
                .httpClientBuilder(UrlConnectionHttpClient.builder())
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .build();
    }

    public URI endpoint() {
        return endpoint;
    }

    public int port() {
        return endpoint.getPort();
    }

    public void createBucket(String bucket, boolean publicRead) {
        client.createBucket(b -> {
            b.bucket(bucket);
            if (publicRead) {
                b.acl(BucketCannedACL.PUBLIC_READ);
            }
        });
    }

    /** Uploads {@code size} random bytes (seeded by the key) and keeps them to compare with. */
    public byte[] put(String bucket, String key, int size, boolean publicRead) {
        byte[] bytes = new byte[size];
        new Random(key.hashCode()).nextBytes(bytes);
        put(bucket, key, bytes, publicRead);
        return bytes;
    }

    /** Uploads {@code bytes} as they are. */
    public void put(String bucket, String key, byte[] bytes) {
        put(bucket, key, bytes, false);
    }

    /** Uploads {@code bytes} as they are, readable by anyone (over plain HTTP) where {@code publicRead}. */
    public void put(String bucket, String key, byte[] bytes, boolean publicRead) {
        client.putObject(
                b -> {
                    b.bucket(bucket).key(key);
                    if (publicRead) {
                        b.acl(ObjectCannedACL.PUBLIC_READ);
                    }
                },
                RequestBody.fromBytes(bytes));
        objects.put(bucket + "/" + key, bytes);
    }

    public byte[] bytes(String bucket, String key) {
        return objects.get(bucket + "/" + key);
    }

    public static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    @Override
    public void close() {
        client.close();
        try {
            server.close();
        } catch (Exception e) {
            throw new IllegalStateException("s3proxy did not stop", e);
        }
    }

    /**
     * The JVM-wide AWS settings a test of the stores runs under: this server's test credentials,
     * us-east-1, no instance metadata, no profile files; {@link #close()} puts back what was there.
     */
    public static final class TestAwsProperties implements AutoCloseable {
        private static final String[] NAMES = {
            "aws.accessKeyId",
            "aws.secretAccessKey",
            "aws.region",
            "aws.disableEc2Metadata",
            "aws.sharedCredentialsFile",
            "aws.configFile",
            S3ObjectStore.ENDPOINT_PROPERTY,
            "aws.requestChecksumCalculation",
            "aws.responseChecksumValidation",
        };
        private final Map<String, String> saved = new HashMap<>();

        public TestAwsProperties(Path home) {
            for (String p : NAMES) {
                saved.put(p, System.getProperty(p));
            }
            System.setProperty("aws.accessKeyId", ACCESS_KEY);
            System.setProperty("aws.secretAccessKey", SECRET_KEY);
            System.setProperty("aws.region", "us-east-1");
            System.setProperty("aws.disableEc2Metadata", "true");
            System.setProperty(
                    "aws.sharedCredentialsFile", home.resolve("no-credentials").toString());
            System.setProperty("aws.configFile", home.resolve("no-config").toString());
        }

        @Override
        public void close() {
            saved.forEach((k, v) -> {
                if (v == null) {
                    System.clearProperty(k);
                } else {
                    System.setProperty(k, v);
                }
            });
        }
    }
}
