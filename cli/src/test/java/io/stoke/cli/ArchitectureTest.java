package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The shape of the house, read from the main sources of every module: packages import in one
 * direction only (no cycles), the loader's core names no object store, no JSON library and no
 * generator, and the CLI holds no benchmark code.
 */
class ArchitectureTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern PACKAGE = Pattern.compile("(?m)^package ([\\w.]+);");
    private static final Pattern IMPORT = Pattern.compile("(?m)^import (?:static )?([\\w.]+?)\\.[A-Z]");

    /** package -> the packages (of any library) its main sources import, per module folder. */
    private static Map<String, Map<String, Set<String>>> imports() throws IOException {
        Map<String, Map<String, Set<String>>> byModule = new TreeMap<>();
        try (Stream<Path> modules = Files.list(ROOT)) {
            for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src/main/java")))
                    .toList()) {
                Map<String, Set<String>> graph =
                        byModule.computeIfAbsent(module.getFileName().toString(), k -> new TreeMap<>());
                try (Stream<Path> files = Files.walk(module.resolve("src/main/java"))) {
                    for (Path f : files.filter(p -> p.toString().endsWith(".java"))
                            // descriptors import nothing; PublicFaceTest reads them
                            .filter(p -> !p.endsWith("module-info.java"))
                            .toList()) {
                        String src = Files.readString(f);
                        Matcher p = PACKAGE.matcher(src);
                        String pkg = p.find() ? p.group(1) : "";
                        Set<String> to = graph.computeIfAbsent(pkg, k -> new TreeSet<>());
                        Matcher m = IMPORT.matcher(src);
                        while (m.find()) {
                            if (!m.group(1).equals(pkg)) {
                                to.add(m.group(1));
                            }
                        }
                    }
                }
            }
        }
        return byModule;
    }

    @Test
    void packagesHaveNoCycles() throws IOException {
        Map<String, Set<String>> all = new HashMap<>();
        imports()
                .values()
                .forEach(g -> g.forEach(
                        (k, v) -> all.computeIfAbsent(k, x -> new TreeSet<>()).addAll(v)));
        assertTrue(all.size() > 15, "the sources were not found under " + ROOT);
        List<List<String>> cycles = new ArrayList<>();
        for (String start : new TreeSet<>(all.keySet())) {
            List<String> path = new ArrayList<>();
            path.add(start);
            findCycle(all, start, start, path, new TreeSet<>(), cycles);
        }
        assertEquals(List.of(), cycles, "package cycles (each as a path back to its start)");
    }

    private static void findCycle(
            Map<String, Set<String>> g,
            String start,
            String at,
            List<String> path,
            Set<String> seen,
            List<List<String>> cycles) {
        for (String next : g.getOrDefault(at, Set.of())) {
            if (next.equals(start)) {
                cycles.add(List.copyOf(path));
            } else if (g.containsKey(next) && seen.add(next)) {
                path.add(next);
                findCycle(g, start, next, path, seen, cycles);
                path.removeLast();
            }
        }
    }

    @Test
    void theCoreNamesNoObjectStoreNoJsonDataBindingAndNoGenerator() throws IOException {
        // Jackson's streaming parser (jackson-core) reads the shard index; its data binding stays out.
        List<String> forbidden = List.of(
                "software.amazon",
                "com.fasterxml.jackson.databind",
                "io.stoke.remote",
                "io.stoke.pack",
                "io.stoke.gpu",
                "io.stoke.testdata",
                "io.stoke.embed",
                "io.stoke.spark",
                "org.apache.spark",
                "org.apache.parquet",
                "org.apache.arrow",
                "io.stoke.arrow",
                "io.stoke.cli",
                "io.stoke.bench");
        imports()
                .get("loader")
                .forEach((pkg, to) -> to.forEach(imported ->
                        assertTrue(forbidden.stream().noneMatch(imported::startsWith), pkg + " imports " + imported)));
    }

    @Test
    void onlyTheSparkModuleNamesSparkAndEmbedKnowsNoEngine() throws IOException {
        // The CLI starts a job through io.stoke.spark, with no Spark type of its own: Stoke's jar
        // runs where Spark's jars are not (the wheel), and says so in one sentence.
        imports()
                .forEach((module, graph) -> graph.forEach((pkg, to) -> to.forEach(imported -> {
                    if (imported.startsWith("org.apache.spark") || imported.startsWith("scala")) {
                        assertEquals("spark", module, pkg + " imports " + imported);
                    }
                })));
        imports()
                .get("spark")
                .forEach((pkg, to) -> to.forEach(imported -> assertTrue(
                        !imported.startsWith("io.stoke.cli") && !imported.startsWith("io.stoke.bench"),
                        pkg + " imports " + imported)));
    }

    @Test
    void theCliHoldsNoBenchmarkCode() throws IOException {
        imports().get("cli").forEach((pkg, to) -> {
            assertTrue(pkg.startsWith("io.stoke.cli"), pkg);
            to.forEach(imported -> assertTrue(
                    !imported.startsWith("io.stoke.bench") && !imported.startsWith("org.knowm"),
                    pkg + " imports " + imported));
        });
    }

    /**
     * A slot body's layout is drawn once, in shm-ring ({@code RingGeometry}, behind the
     * {@code SlotBody} flyweight): no other main source asks for a body array's offset within a
     * slot, from the geometry or from the ring header's copy of it, to compute element addresses.
     */
    @Test
    void slotBodyOffsetsAreComputedOnlyInTheRing() throws IOException {
        Pattern bodyOffset = Pattern.compile(
                "\\bslot(?:Labels|Indices|Status|Pixels)Offset\\s*\\(|\\bSLOT_(?:LABELS|INDICES|STATUS|PIXELS)_OFFSET_OFFSET\\b");
        List<String> found = new ArrayList<>();
        try (Stream<Path> modules = Files.list(ROOT)) {
            for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src/main/java")))
                    .toList()) {
                try (Stream<Path> files = Files.walk(module.resolve("src/main/java"))) {
                    for (Path f :
                            files.filter(p -> p.toString().endsWith(".java")).toList()) {
                        String src = Files.readString(f);
                        Matcher p = PACKAGE.matcher(src);
                        if (p.find() && p.group(1).equals("io.stoke.ring")) {
                            continue;
                        }
                        Matcher m = bodyOffset.matcher(src);
                        while (m.find()) {
                            found.add(ROOT.relativize(f) + ": " + m.group());
                        }
                    }
                }
            }
        }
        assertEquals(List.of(), found, "slot body offsets used outside io.stoke.ring (use SlotBody)");
    }

    /**
     * The worker pipeline stays in small parts (schedule, worker loop, publisher, activity...),
     * each testable alone: no source file of {@code io.stoke.loader.work} grows past 300 lines.
     */
    @Test
    void theWorkerPipelineIsSmallParts() throws IOException {
        Path work = ROOT.resolve("loader/src/main/java/io/stoke/loader/work");
        List<String> large = new ArrayList<>();
        try (Stream<Path> files = Files.list(work)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                long lines = Files.readAllLines(f).size();
                if (lines > 300) {
                    large.add(f.getFileName() + ": " + lines + " lines");
                }
            }
        }
        assertTrue(Files.isDirectory(work), work + " is not there");
        assertEquals(List.of(), large, "classes of io.stoke.loader.work over 300 lines");
    }

    /**
     * The command line reaches the ring and the native bindings only through the libraries: serving
     * through io.stoke.serve, memfd through its AnonymousFile, CUDA through io.stoke.gpu
     * (CudaAvailability, GpuCheck.open).
     */
    @Test
    void theCliImportsNeitherTheRingNorTheBindings() throws IOException {
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(ROOT.resolve("cli/src/main/java"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = IMPORT.matcher(Files.readString(f));
                while (m.find()) {
                    String imported = m.group(1);
                    if (imported.startsWith("io.stoke.ring") || imported.startsWith("io.stoke.ffm")) {
                        found.add(f.getFileName() + " imports " + imported);
                    }
                }
            }
        }
        assertEquals(List.of(), found);
    }

    /** stoke serve's command parses flags and calls io.stoke.serve.RingServer: what serves is the library's. */
    @Test
    void theServeCommandOnlyParsesFlags() throws IOException {
        long lines = Files.readAllLines(ROOT.resolve("cli/src/main/java/io/stoke/cli/ServeCommand.java"))
                .size();
        // A flag is about 8 lines: 140 holds the serving protocol's flags (five side files, two of them
        // deprecated spellings), not serving code, which is RingServer's.
        assertTrue(lines < 140, "ServeCommand.java has " + lines + " lines");
    }
}
