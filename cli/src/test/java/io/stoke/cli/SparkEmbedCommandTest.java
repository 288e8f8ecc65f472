package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stoke spark-embed} where Spark is not: this module's tests run without Spark's jars (it
 * is {@code provided} to stoke-spark), as Stoke's jar and the wheel do. The options that make no
 * sense for the job are refused first, each in one sentence; then the missing Spark is said in
 * one. SparkClusterIT runs the command with Spark.
 */
class SparkEmbedCommandTest {
    static final String MODEL =
            Path.of("..", "embed", "models", "tiny_cnn_f32.onnx").toString();

    @TempDir
    Path tmp;

    String[] run(String... extra) {
        String[] args = new String[5 + extra.length];
        args[0] = "spark-embed";
        args[1] = tmp.resolve("shards").toString();
        args[2] = "--model=" + MODEL;
        args[3] = "--out";
        args[4] = tmp.resolve("out").toString();
        System.arraycopy(extra, 0, args, 5, extra.length);
        return BenchCommandTest.run(args);
    }

    @Test
    void sparkIsNotOnThisClassPath() {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("org.apache.spark.sql.SparkSession"));
    }

    @Test
    void withoutSparkItSaysWhereToRunItInOneSentence() {
        String[] r = run();
        assertEquals("1", r[0], r[2]);
        assertTrue(
                r[2].contains("Apache Spark 4.2 is not on the class path")
                        && r[2].contains("./stoke spark-embed")
                        && r[2].contains("spark-submit --class io.stoke.cli.Main"),
                r[2]);
        assertEquals(1, r[2].strip().lines().count(), r[2]);
    }

    @Test
    void optionsThatMakeNoSenseForTheJobAreRefused() {
        String[][] cases = {
            {"--shuffle", "whole shard in order"},
            {"--world-size=2", "whole shard in order"},
            {"--epochs=2", "one pass"},
            {"--transform=train", "evaluation transform"},
            {"--on-error=fail", "status"},
        };
        for (String[] c : cases) {
            String[] r = run(c[0]);
            assertEquals("2", r[0], c[0] + ": " + r[2]);
            assertTrue(r[2].contains(c[1]), c[0] + ": " + r[2]);
        }
        String[] grouped = run("--shards-per-task=0");
        assertEquals("2", grouped[0], grouped[2]);
        assertTrue(grouped[2].contains("at least 1"), grouped[2]);
        String[] table = run("--output-table=hudi");
        assertEquals("2", table[0], table[2]);
        assertTrue(table[2].contains("no table format hudi: delta or iceberg"), table[2]);
    }

    @Test
    void aMissingModelIsNamed() {
        String[] r = BenchCommandTest.run(
                "spark-embed", "x", "--model", tmp.resolve("none.onnx").toString(), "--out", tmp.toString());
        assertEquals("2", r[0], r[2]);
        assertTrue(r[2].contains("none.onnx"), r[2]);
    }
}
