package io.stoke.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** What a job's session is given: the user's settings kept, Stoke's filled in only where missing. */
class SessionSettingsTest {
    static final Path JAR = Path.of("/opt/stoke.jar");

    @Test
    void aClusterGetsStokesJarAndItsExecutorOptions() {
        Map<String, String> s = SparkEmbed.settings("spark://h:7077", Map.of(), new Properties(), JAR);
        assertEquals("spark://h:7077", s.get("spark.master"));
        assertEquals(JAR.toString(), s.get("spark.jars"));
        assertEquals(SparkEmbed.EXECUTOR_JAVA_OPTIONS, s.get("spark.executor.extraJavaOptions"));
    }

    @Test
    void optionsGivenByConfOrSparkSubmitAreKeptAndStokesAdded() {
        Map<String, String> conf = Map.of("spark.executor.extraJavaOptions", "-Xss4m", "spark.jars", "/x.jar");
        Map<String, String> s = SparkEmbed.settings("yarn", conf, new Properties(), JAR);
        assertEquals("/x.jar", s.get("spark.jars"));
        assertEquals("-Xss4m " + SparkEmbed.EXECUTOR_JAVA_OPTIONS, s.get("spark.executor.extraJavaOptions"));
        Properties submitted = new Properties();
        submitted.setProperty("spark.master", "k8s://api:6443");
        submitted.setProperty("spark.jars", "/submitted.jar");
        Map<String, String> t = SparkEmbed.settings(null, Map.of(), submitted, JAR);
        assertEquals("k8s://api:6443", t.get("spark.master"));
        assertFalse(t.containsKey("spark.jars"), "spark-submit's jar is Spark's to ship");
    }

    @Test
    void withoutAMasterItRunsHereWithNoJarToShip() {
        Map<String, String> s = SparkEmbed.settings(null, Map.of(), new Properties(), JAR);
        assertEquals("local[*]", s.get("spark.master"));
        assertFalse(s.containsKey("spark.jars"));
    }
}
