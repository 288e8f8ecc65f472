package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * What users can see, read from every module's build output (what its jar holds): each JPMS module
 * exports exactly its API packages (javac's exports lint, an error under -Werror, already fails the
 * build when an exported signature names a type its clients cannot read), and no shipped class is a
 * test aid.
 */
class PublicFaceTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    /** The modules named before issue 46's last step. */
    private static final Map<String, List<String>> FIRST_EXPORTS = Map.of(
            "io.stoke.ffm",
            List.of(
                    "io.stoke.ffm to io.stoke.bench, io.stoke.cli, io.stoke.embed, io.stoke.gpu, io.stoke.loader,"
                            + " io.stoke.pack, io.stoke.remote, io.stoke.ring, io.stoke.serve, io.stoke.spark,"
                            + " io.stoke.testdata, io.stoke.tune",
                    "io.stoke.ffm.cuda"),
            "io.stoke.ring",
            List.of("io.stoke.ring"),
            "io.stoke.loader",
            List.of(
                    "io.stoke.loader",
                    "io.stoke.loader.autoworkers",
                    "io.stoke.loader.cache",
                    "io.stoke.loader.decode to io.stoke.bench, io.stoke.cli, io.stoke.gpu, io.stoke.pack, io.stoke.parquet,"
                            + " io.stoke.remote",
                    "io.stoke.loader.error",
                    "io.stoke.loader.format",
                    "io.stoke.loader.fs",
                    "io.stoke.loader.internal to io.stoke.cli, io.stoke.embed, io.stoke.gpu, io.stoke.lakehouse, io.stoke.pack,"
                            + " io.stoke.parquet, io.stoke.remote, io.stoke.serve, io.stoke.spark, io.stoke.tune",
                    "io.stoke.loader.resample to io.stoke.bench, io.stoke.gpu, io.stoke.pack",
                    "io.stoke.loader.sample",
                    "io.stoke.loader.shardcache to io.stoke.parquet, io.stoke.remote",
                    "io.stoke.loader.source",
                    "io.stoke.loader.transform",
                    "io.stoke.loader.work to io.stoke.bench, io.stoke.cli, io.stoke.embed, io.stoke.gpu,"
                            + " io.stoke.spark, io.stoke.tune"),
            "io.stoke.remote",
            List.of("io.stoke.remote"),
            "io.stoke.pack",
            List.of("io.stoke.pack"),
            "io.stoke.gpu",
            List.of("io.stoke.gpu"),
            "io.stoke.testdata",
            List.of("io.stoke.testdata"),
            "io.stoke.serve",
            List.of("io.stoke.serve"));

    /**
     * module -> its exported packages, each "package" or "package to module, ..."; parquet, embed and
     * tune are named since parquet-java became one module (the CLI, an application, exports nothing) (stoke-parquet-java: its own exports, parquet-java's API,
     * are LibraryModulesTest's).
     */
    static final Map<String, List<String>> EXPORTS = union(
            FIRST_EXPORTS,
            Map.of(
                    "io.stoke.parquet", List.of("io.stoke.parquet"),
                    "io.stoke.lakehouse", List.of("io.stoke.lakehouse"),
                    "io.stoke.arrow", List.of("io.stoke.arrow"),
                    "io.stoke.embed", List.of("io.stoke.embed"),
                    "io.stoke.tune", List.of("io.stoke.tune"),
                    "io.stoke.cli", List.of()));

    private static Map<String, List<String>> union(Map<String, List<String>> first, Map<String, List<String>> second) {
        Map<String, List<String>> all = new TreeMap<>(first);
        all.putAll(second);
        return Map.copyOf(all);
    }

    private static List<Path> moduleFolders() throws IOException {
        try (Stream<Path> s = Files.list(ROOT)) {
            return s.filter(m -> Files.isDirectory(m.resolve("src/main/java")))
                    .sorted()
                    .toList();
        }
    }

    @Test
    void eachModuleExportsItsApiPackagesOnly() throws IOException {
        Map<String, List<String>> found = new TreeMap<>();
        for (Path module : moduleFolders()) {
            Path info = module.resolve("target/classes/module-info.class");
            if (!Files.exists(module.resolve("src/main/java/module-info.java"))) {
                continue;
            }
            assertTrue(Files.exists(info), module + " has a module-info.java but no compiled descriptor");
            ModuleDescriptor d;
            try (InputStream in = Files.newInputStream(info)) {
                d = ModuleDescriptor.read(in);
            }
            if (!d.name().startsWith("io.stoke.")) {
                continue; // parquet-java's
            }
            found.put(
                    d.name(),
                    d.exports().stream()
                            .map(e -> e.source()
                                    + (e.isQualified() ? " to " + String.join(", ", new TreeSet<>(e.targets())) : ""))
                            .sorted()
                            .toList());
        }
        assertEquals(new TreeMap<>(EXPORTS), found);
    }

    @Test
    void theOtherArtifactsNameTheirAutomaticModule() throws IOException {
        // spark: Spark's and Hadoop's jars split packages; benchmarks: an application shaded onto the
        // class path (their poms say so).
        for (String module : List.of("spark", "benchmarks")) {
            String pom = Files.readString(ROOT.resolve(module).resolve("pom.xml"));
            assertTrue(pom.contains("<Automatic-Module-Name>io.stoke."), module + " names no Automatic-Module-Name");
        }
    }

    @Test
    void noShippedClassIsATestAid() throws IOException {
        List<String> aids = new ArrayList<>();
        for (Path module : moduleFolders()) {
            Path classes = module.resolve("target/classes");
            if (!Files.isDirectory(classes)) {
                continue;
            }
            try (Stream<Path> files = Files.walk(classes)) {
                for (Path f : files.filter(Files::isRegularFile).toList()) {
                    String name = classes.relativize(f).toString();
                    boolean aid = name.contains("/testing/")
                            || name.contains("TestDouble")
                            || (name.endsWith(".class") && containsFaultSwitch(f));
                    if (aid) {
                        aids.add(module.getFileName() + ": " + name);
                    }
                }
            }
        }
        assertEquals(List.of(), aids);
        assertTrue(moduleFolders().size() > 10, "the modules were not found under " + ROOT);
    }

    @Test
    void aBatchIsMadeByItsSourcesOrFromACallersOwnSlotOnly() {
        // Loaders and ring consumers build batches in their package; a producer of its own ring
        // uses Batch.ofSlot, which takes the geometry and memory from the ring itself.
        assertEquals(0, io.stoke.loader.Batch.class.getConstructors().length);
    }

    /** A class naming the old fault-injection switch ({@code spark.stoke.test...}) or an injected failure. */
    private static boolean containsFaultSwitch(Path classFile) throws IOException {
        String text = new String(Files.readAllBytes(classFile), StandardCharsets.ISO_8859_1);
        return Stream.of("spark.stoke.test", "failFirstAttempt", "injected failure")
                .anyMatch(text::contains);
    }
}
