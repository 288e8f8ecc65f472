package io.stoke.serve;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.Loader;
import java.io.ByteArrayInputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The options table as the Java side reads it: every entry well formed, and each reaching Loader.Builder. */
class OptionTableTest {
    @Test
    void theShippedTableHasEveryLoaderOptionOnceEachWithAParsableDefault() {
        OptionTable t = OptionTable.shipped();
        assertEquals(49, t.options().size());
        for (LoaderOption o : t.options()) {
            assertEquals(o.cli(), "--" + o.name().replace('_', '-'), o.name() + ": its flag spells its name");
            Object d = o.parsedDefault();
            assertTrue(o.defaultValue() == null || d != null, o.toString());
            assertFalse(o.help().isBlank(), o.toString());
        }
        assertEquals(List.of("pad", "drop"), t.option("partition_tail").choices());
        assertEquals("--shard-tail", t.option("partition_tail").deprecated().cli());
        assertEquals(256, LoaderSettings.defaults().integer("batch_size"));
        assertArrayEquals(
                new double[] {0.485, 0.456, 0.406}, LoaderSettings.defaults().numbers("mean"));
        assertEquals(64L << 30, LoaderSettings.defaults().bytes("restart_cache_size"));
    }

    /** Help says the names issue 46 decided: no deprecated spelling, and the loader's own remote window. */
    @Test
    void theHelpNamesNoDeprecatedSpelling() {
        List<String> old = new ArrayList<>();
        for (LoaderOption o : OptionTable.shipped().options()) {
            if (o.deprecated() != null) {
                old.add(o.deprecated().cli());
            }
        }
        assertTrue(
                old.containsAll(List.of("--cache-dir", "--cache-size", "--shard-cache", "--shard-tail")),
                old.toString());
        for (LoaderOption o : OptionTable.shipped().options()) {
            for (String spelling : old) {
                assertFalse(
                        o.help().matches("(?s).*" + spelling + "(?![\\w-]).*"), o.cli() + "'s help says " + spelling);
            }
        }
        assertTrue(OptionTable.shipped()
                .option("shuffle_window")
                .help()
                .contains(io.stoke.loader.source.Datasets.DEFAULT_REMOTE_WINDOW + " for remote ones"));
    }

    @Test
    void everyBuilderMethodTheTableNamesIsOnLoaderBuilder() {
        Set<String> methods = Arrays.stream(Loader.Builder.class.getMethods())
                .filter(m -> Modifier.isPublic(m.getModifiers()) && m.getDeclaringClass() == Loader.Builder.class)
                .filter(m -> !m.isAnnotationPresent(Deprecated.class)) // a table names today's methods only
                .map(Method::getName)
                .collect(Collectors.toCollection(TreeSet::new));
        List<String> missing = new ArrayList<>();
        for (LoaderOption o : OptionTable.shipped().options()) {
            if (o.builder() != null && !methods.contains(o.builder())) {
                missing.add(o.name() + " -> " + o.builder());
            }
        }
        assertEquals(List.of(), missing, "Loader.Builder's methods: " + methods);
        // A made-up option naming a method the builder lacks is what this test catches.
        assertFalse(methods.contains("madeUpOption"));
    }

    @Test
    void eachBadValueIsOneSentenceNamingTheFlag() {
        LoaderSettings s = LoaderSettings.defaults();
        assertEquals(
                "--batch-size takes a whole number of at least 1, not '0'",
                assertThrows(IllegalArgumentException.class, () -> s.set("batch_size", "0"))
                        .getMessage());
        assertEquals(
                "--worker-nice takes a whole number from 0 to 19, not '20'",
                assertThrows(IllegalArgumentException.class, () -> s.set("worker_nice", "20"))
                        .getMessage());
        assertEquals(
                "--partition-tail takes one of pad, drop, not 'sideways'",
                assertThrows(IllegalArgumentException.class, () -> s.set("partition_tail", "sideways"))
                        .getMessage());
        assertEquals(
                "--mean takes 3 numbers separated by commas, not '0.5,0.5'",
                assertThrows(IllegalArgumentException.class, () -> s.set("mean", "0.5,0.5"))
                        .getMessage());
        assertEquals(
                "--workers takes a positive number or auto, not 'many'",
                assertThrows(IllegalArgumentException.class, () -> s.set("workers", "many"))
                        .getMessage());
        assertEquals(
                "--flip takes a number from 0 to 1, not '1.5'",
                assertThrows(IllegalArgumentException.class, () -> s.set("flip", "1.5"))
                        .getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> s.set("restart_cache_size", "lots"))
                .getMessage()
                .startsWith("--restart-cache-size: 'lots' is not a size"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> s.set("start_cuts", "[{"))
                .getMessage()
                .startsWith("--start-cuts takes JSON"));
        assertEquals(256, s.integer("batch_size"), "a refused value leaves the setting as it was");
        assertFalse(s.given("batch_size"));
        s.set("batch_size", "32").set("output", "FLOAT32").set("shard_cache_dir", "/tmp/x");
        assertEquals(32, s.integer("batch_size"));
        assertTrue(s.given("batch_size"));
        assertEquals("float32", s.text("output"));
        assertEquals(Path.of("/tmp/x"), s.path("shard_cache_dir"));
        assertThrows(IllegalArgumentException.class, () -> s.set("made_up", "1"));
    }

    @Test
    void aTableThatBreaksItsRulesIsRefusedNamingItsSource() {
        String typo = "{\"about\": \"\", \"format\": 1, \"options\": [{\"name\": \"x\", \"type\": \"int\","
                + " \"cli\": \"--x\", \"help\": \"h\", \"hepl\": \"typo\"}]}";
        String twice = "{\"about\": \"\", \"format\": 1, \"options\": ["
                + "{\"name\": \"x\", \"type\": \"int\", \"cli\": \"--x\", \"help\": \"h\"},"
                + "{\"name\": \"y\", \"type\": \"int\", \"cli\": \"--x\", \"help\": \"h\"}]}";
        String noDefault = "{\"about\": \"\", \"format\": 1, \"options\": [{\"name\": \"x\", \"type\": \"int\","
                + " \"cli\": \"--x\", \"help\": \"h (default: ${DEFAULT-VALUE})\"}]}";
        String badDefault = "{\"about\": \"\", \"format\": 1, \"options\": [{\"name\": \"x\", \"type\": \"int\","
                + " \"min\": 1, \"default\": \"0\", \"cli\": \"--x\", \"help\": \"h\"}]}";
        for (String table : List.of(typo, twice, noDefault, badDefault)) {
            RuntimeException e = assertThrows(
                    RuntimeException.class,
                    () -> OptionTable.read(
                            new ByteArrayInputStream(table.getBytes(StandardCharsets.UTF_8)), "test-table.json"));
            assertTrue(e.getMessage().startsWith("test-table.json"), e.getMessage());
        }
    }
}
