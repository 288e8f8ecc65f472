package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.cli.ShmTestSupport.Child;
import io.stoke.cli.ShmTestSupport.Sample;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tar header bomb of issue 45 against a real {@code stoke serve}, launched with the CLI's own
 * JVM options (cli/jvm.options: its 384 MiB heap), over three shards: the middle one holds two
 * samples and then a GNU long-name header that declares 512 MiB (a sparse file, a few KB on disk).
 * Before the limit check, serve ended with OutOfMemoryError while opening, and no shard was read.
 * Now the bomb is named with its byte and the limit, and a consumer in another process gets every
 * sample of the other shards and the two before the bomb.
 */
class TarHeaderBombTest {
    @TempDir
    Path tmp;

    @Test
    void theBombIsNamedAndTheOtherShardsSamplesArrive() throws Exception {
        Path data = Files.createDirectories(tmp.resolve("shards"));
        TestTars.labelledShard(data.resolve("shard-0.tar"), 0, 5); // labels 0 1 2 3 0
        ByteArrayOutputStream before = new ByteArrayOutputStream();
        for (int i = 0; i < 2; i++) {
            TestTars.rawMember(before, "b/" + i + ".jpg", '0', TestImages.jpeg(44, 40, 50 + i));
            TestTars.rawMember(
                    before, "b/" + i + ".cls", '0', Integer.toString(3 - i).getBytes(StandardCharsets.US_ASCII));
        }
        Path bomb = data.resolve("shard-1.tar");
        TestTars.bomb(bomb, before.toByteArray(), 'L', 512L << 20);
        TestTars.labelledShard(data.resolve("shard-2.tar"), 2, 7); // labels 2 3 0 1 2 3 0
        List<Integer> labels = List.of(0, 1, 2, 3, 0, 3, 2, 2, 3, 0, 1, 2, 3, 0);

        Path ring = ShmTestSupport.shmPath("tar-bomb");
        List<String> serve = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "@" + ShmTestSupport.repoRoot().resolve("cli/jvm.options"),
                "--enable-native-access=ALL-UNNAMED",
                "--add-exports",
                "java.base/jdk.internal.misc=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                Main.class.getName(),
                "serve",
                data.toString(),
                "--ring",
                ring.toString(),
                "--on-error",
                "skip",
                "--epochs",
                "1",
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--resize",
                "32",
                "--crop",
                "32"));
        try (Child producer = new Child(serve)) {
            producer.await(
                    l -> l.contains("ready:") || l.contains("OutOfMemoryError") || l.startsWith("error"), 60_000);
            String output = producer.output();
            assertFalse(output.contains("OutOfMemoryError"), output);
            assertTrue(
                    output.contains("WARNING: skipping what is past the damage: " + bomb
                            + ": the member header at byte " + before.size()
                            + " declares a GNU long name of 512 MiB, more than the 64 KiB limit;"
                            + " the samples before it are read"),
                    output);
            try (Child consumer = new Child(ShmTestSupport.consumerCommand(ShmTestSupport.Kind.JAVA, ring))) {
                assertEquals(0, consumer.exit(60_000), consumer.output());
                List<Sample> samples = ShmTestSupport.samples(consumer.snapshot());
                assertEquals(labels.size(), samples.size(), consumer.output());
                for (Sample s : samples) {
                    assertEquals(0, s.status(), s.toString());
                    assertEquals(labels.get((int) s.index()), s.label(), s.toString());
                }
            }
            assertEquals(0, producer.exit(30_000), producer.output());
        } finally {
            Files.deleteIfExists(ring);
        }
    }
}
