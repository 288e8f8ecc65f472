package io.stoke.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.lakehouse.DeltaSnapshots;
import io.stoke.lakehouse.IcebergSnapshots;
import io.stoke.lakehouse.OutputTable;
import io.stoke.lakehouse.SnapshotChoice;
import io.stoke.lakehouse.TableSnapshot;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.testing.TestTars;
import io.stoke.parquet.ParquetDatasets;
import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteDatasets;
import io.stoke.remote.RemoteOptions;
import io.stoke.remote.S3ObjectStore;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.eclipse.jetty.util.component.AbstractLifeCycle;
import org.gaul.s3proxy.BlobStores;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The job with its shards and its output in S3 (s3proxy, a real S3 server, in this JVM): shards
 * listed through their index.json, tables PUT under the output prefix, markers created by
 * conditional PUTs. The tables, fetched back, are the local-output job's, read by Spark.
 */
class SparkEmbedS3Test {
    static final String ACCESS_KEY = "stoke-test-access-key";
    static final String SECRET_KEY = "stoke-test-secret-key";
    static final String[] PROPERTIES = {
        "aws.accessKeyId", "aws.secretAccessKey", "aws.region", S3ObjectStore.ENDPOINT_PROPERTY
    };

    @TempDir
    static Path tmp;

    static S3Proxy proxy;
    static BlobStore blobs;
    static final Map<String, String> saved = new HashMap<>();

    @BeforeAll
    static void start() throws Exception {
        blobs = BlobStores.create("transient", new Properties());
        proxy = S3Proxy.builder()
                .blobStore(blobs)
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
                .endpoint(URI.create("http://127.0.0.1:0"))
                .stopTimeout(0)
                .build();
        proxy.start();
        while (!proxy.getState().equals(AbstractLifeCycle.STARTED)) {
            Thread.sleep(5);
        }
        for (String p : PROPERTIES) {
            saved.put(p, System.getProperty(p));
        }
        System.setProperty("aws.accessKeyId", ACCESS_KEY);
        System.setProperty("aws.secretAccessKey", SECRET_KEY);
        System.setProperty("aws.region", "us-east-1");
        System.setProperty(S3ObjectStore.ENDPOINT_PROPERTY, "http://127.0.0.1:" + proxy.getPort());
        try (S3Client client = S3Client.builder()
                .endpointOverride(URI.create("http://127.0.0.1:" + proxy.getPort()))
                .forcePathStyle(true)
                .region(Region.US_EAST_1)
                .credentialsProvider(
                        StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
                .httpClientBuilder(UrlConnectionHttpClient.builder())
                .build()) {
            client.createBucket(b -> b.bucket("data"));
            client.createBucket(b -> b.bucket("out"));
        }
        // The same shards as SparkEmbedTest's, here in a folder and in the bucket.
        SparkEmbedTest.shards = Files.createDirectories(tmp.resolve("shards"));
        try (ObjectStore s3 = ObjectStore.forUrl("s3://data/", RemoteOptions.defaults())) {
            for (int s = 0; s < SparkEmbedTest.SHARDS; s++) {
                Path file = SparkEmbedTest.shards.resolve("train-" + s + ".tar");
                TestTars.labelledShard(file, s, SparkEmbedTest.PER_SHARD);
                s3.write("s3://data/train/train-" + s + ".tar", Files.readAllBytes(file));
            }
        }
        RemoteDatasets.writeCatalog("s3://data/train/", RemoteOptions.defaults(), 64L << 20);
        SparkEmbedTest.spark = SparkEmbed.session("local[2,2]");
    }

    @AfterAll
    static void stop() throws Exception {
        SparkEmbedTest.stop();
        saved.forEach((k, v) -> {
            if (v == null) {
                System.clearProperty(k);
            } else {
                System.setProperty(k, v);
            }
        });
        if (proxy != null) {
            proxy.stop();
        }
    }

    /** The attempts' local folders in this JVM's {@code java.io.tmpdir}, where Spark's local tasks run. */
    static Set<String> attemptFolders() throws IOException {
        try (Stream<Path> all = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return all.map(p -> p.getFileName().toString())
                    .filter(name -> name.startsWith("stoke-spark-"))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    @Test
    void tablesGoToS3OnceEach() throws Exception {
        Set<String> before = attemptFolders();
        Manifest m = SparkEmbedTest.runFailingFirstAttempts(
                SparkEmbedTest.request("s3://data/train/", SparkEmbedTest.MODEL, "s3://out/emb/", 256));
        assertTrue(m.complete(), m.toString());
        // Every attempt's local folder is gone: the committed ones' at their commit, the failed
        // first attempts' (their partial tables in them) when their task ended.
        Set<String> left = attemptFolders();
        left.removeAll(before);
        assertEquals(Set.of(), left, "attempt folders left in java.io.tmpdir");
        assertEquals(SparkEmbedTest.SHARDS * SparkEmbedTest.PER_SHARD, m.rows());
        Path fetched = Files.createDirectories(tmp.resolve("fetched"));
        List<String> tables = new ArrayList<>();
        try (ObjectStore s3 = ObjectStore.forUrl("s3://out/", RemoteOptions.defaults())) {
            for (String url : s3.list("s3://out/emb/", ".parquet")) {
                String name = url.substring("s3://out/emb/".length());
                tables.add(name);
                Files.write(fetched.resolve(name), s3.readBytes(url));
            }
            assertEquals(
                    SparkEmbedTest.SHARDS,
                    s3.list("s3://out/emb/_committed/", ".json").size());
            assertTrue(new String(s3.readBytes("s3://out/emb/_manifest.json")).contains("\"committed\" : 4"));
        }
        assertEquals(List.of("train-0.parquet", "train-1.parquet", "train-2.parquet", "train-3.parquet"), tables);
        List<Row> fromS3 = SparkEmbedTest.rows(fetched);
        SparkEmbedTest.assertOncePerSample(fromS3, SparkEmbedTest.SHARDS * SparkEmbedTest.PER_SHARD);
        Path local = tmp.resolve("local");
        SparkEmbedTest.run(
                SparkEmbedTest.request(SparkEmbedTest.shards.toString(), SparkEmbedTest.MODEL, local.toString(), 256));
        List<Row> fromDisk = SparkEmbedTest.rows(local);
        for (int i = 0; i < fromDisk.size(); i++) {
            assertEquals(fromDisk.get(i).getString(1), fromS3.get(i).getString(1));
            assertArrayEquals(SparkEmbedTest.floats(fromDisk.get(i)), SparkEmbedTest.floats(fromS3.get(i)), 1e-5f);
        }
        // A second run skips all four shards: their markers are in the bucket.
        Manifest again = SparkEmbedTest.run(
                SparkEmbedTest.request("s3://data/train/", SparkEmbedTest.MODEL, "s3://out/emb/", 256));
        assertEquals(SparkEmbedTest.SHARDS, again.committedBefore());
        assertEquals(0, again.attempts().launched());
    }

    /**
     * The output made a Delta Lake and an Iceberg table under S3 prefixes: each log's versions created by
     * conditional PUTs, read back by the formats' own libraries (Delta Kernel's replay, Iceberg's
     * planning, in stoke-lakehouse) as the four shards' tables, and a rerun adds no version.
     */
    @Test
    void theOutputIsADeltaOrIcebergTableInS3() throws Exception {
        for (OutputTable.Format format : OutputTable.Format.values()) {
            String out = "s3://out/" + format.name().toLowerCase(Locale.ROOT) + "/";
            SparkEmbed.Request request = SparkEmbedTest.request("s3://data/train/", SparkEmbedTest.MODEL, out, 256)
                    .withOutputTable(format);
            Manifest m = SparkEmbedTest.run(request);
            assertTrue(m.complete(), m.toString());
            assertTrue(m.table().endsWith("(4 files added, 4 in all)"), m.table());
            Manifest again = SparkEmbedTest.run(request);
            assertTrue(again.table().endsWith("(0 files added, 4 in all)"), again.table());
            try (ObjectStore s3 = ObjectStore.forUrl(out, RemoteOptions.defaults())) {
                TableSnapshot snapshot = format == OutputTable.Format.DELTA
                        ? DeltaSnapshots.read(out, SnapshotChoice.LATEST, TableColumns.DEFAULT, s3)
                        : IcebergSnapshots.read(out, SnapshotChoice.LATEST, TableColumns.DEFAULT, s3);
                List<String> files = new ArrayList<>();
                for (ParquetDatasets.TableFile f : snapshot.files()) {
                    files.add(f.location());
                    assertEquals(s3.size(f.location()), f.size(), f.location());
                }
                assertEquals(
                        List.of(
                                out + "train-0.parquet",
                                out + "train-1.parquet",
                                out + "train-2.parquet",
                                out + "train-3.parquet"),
                        files,
                        format.toString());
            }
        }
    }
}
