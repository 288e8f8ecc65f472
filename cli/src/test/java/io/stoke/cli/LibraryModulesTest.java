package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.TestImages;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.module.FindException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.spi.ToolProvider;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every library artifact as a user's module sees it. Its jar describes the module it should
 * ({@code jar --describe-module}: the name, and the exports {@link PublicFaceTest} lists; spark as
 * the automatic module of its {@code Automatic-Module-Name}); and an application in a
 * module of its own that {@code requires} the library compiles against it and runs one public call on
 * the module path, with native access granted by module name and no warning.
 *
 * <p>Explicit modules go on the module path with the modules they require, found from their
 * descriptors: io.stoke.parquet with parquet-java as one module ({@code org.apache.parquet}, the
 * stoke-parquet-java jar) and Hadoop's client API, embed with ONNX Runtime (an automatic module).
 * Nothing goes on the class path.
 *
 * <p>The jars are those the build made: with the library modules' class folders on the test's
 * class path (a run that stopped before {@code package}), each module's jar beside them is taken.
 */
class LibraryModulesTest {
    /**
     * One library: its module, a class of its API (whose code source is its artifact), the
     * application's body (statements of {@code main(String[] args)}, args[0] a temporary folder with
     * ten images in two classes) and a line it must print.
     */
    record Library(String module, String anchor, String body, String expected) {
        @Override
        public String toString() {
            return module;
        }
    }

    static final List<Library> LIBRARIES = List.of(
            new Library("io.stoke.ffm", "io.stoke.ffm.cuda.CudaDriver", """
                    var a = io.stoke.ffm.cuda.CudaDriver.tryLoad();
                    say(io.stoke.ffm.cuda.CudaDriver.class, "driver " + (a.driver().isPresent() ? "loaded" : "absent"));
                    """, "driver "),
            new Library("io.stoke.ring", "io.stoke.ring.RingGeometry", """
                    var g = new io.stoke.ring.RingGeometry(4, 8, io.stoke.ring.RingLayout.DTYPE_UINT8,
                            io.stoke.ring.RingLayout.LAYOUT_HWC, 32, 24, 3);
                    say(g.getClass(), "sample bytes " + g.sampleBytes());
                    """, "sample bytes 2304"),
            new Library("io.stoke.loader", "io.stoke.loader.Loader", """
                    long samples = 0;
                    try (var loader = io.stoke.loader.Loader.imageFolder(java.nio.file.Path.of(args[0]))
                            .batchSize(4).workers(2).build()) {
                        for (var b : loader) {
                            try (b) {
                                samples += b.size();
                            }
                        }
                    }
                    say(io.stoke.loader.Loader.class, "samples " + samples);
                    """, "samples 10"),
            new Library("io.stoke.remote", "io.stoke.remote.RemoteOptions", """
                    var o = io.stoke.remote.RemoteOptions.defaults().withStallTimeout(java.time.Duration.ofMillis(250));
                    say(o.getClass(), "stall " + o.stallTimeout());
                    """, "stall PT0.25S"),
            new Library("io.stoke.pack", "io.stoke.pack.PackOptions", """
                    var o = io.stoke.pack.PackOptions.jpegShorterSide(64, 90, 1 << 20);
                    say(o.getClass(), o.format() + " " + o.resize());
                    """, "JPEG 64"),
            new Library("io.stoke.gpu", "io.stoke.gpu.NormalizeReference", """
                    say(io.stoke.gpu.NormalizeReference.class,
                            "normalized " + io.stoke.gpu.NormalizeReference.normalize(255, 0.5f, 0.25f));
                    """, "normalized 2.0"),
            new Library("io.stoke.serve", "io.stoke.serve.OptionTable", """
                    var t = io.stoke.serve.OptionTable.shipped();
                    say(t.getClass(), "workers flag " + t.option("workers").cli());
                    """, "workers flag --workers"),
            new Library("io.stoke.testdata", "io.stoke.testdata.SyntheticImageNet", """
                    var s = io.stoke.testdata.SyntheticImageNet.generate(java.nio.file.Path.of(args[0], "synthetic"),
                            new io.stoke.testdata.SyntheticImageNet.Options(6, 2, 7, null));
                    say(s.getClass(), "images " + s.images());
                    """, "images 6"),
            new Library("io.stoke.embed", "io.stoke.embed.Embedder", """
                    var rows = java.lang.foreign.MemorySegment.ofArray(new float[] {1, 2, 3, 4, 5, 6});
                    say(io.stoke.embed.Embedder.class, "row 1 value 2: " + io.stoke.embed.Embedder.value(rows, 3, 1, 2));
                    """, "row 1 value 2: 6.0"),
            new Library(
                    "io.stoke.parquet",
                    "io.stoke.parquet.HubParquetWriter",
                    """
                    var dataset = io.stoke.loader.source.ImageFolder.scan(java.nio.file.Path.of(args[0]));
                    var files = io.stoke.parquet.HubParquetWriter.write(dataset, java.nio.file.Path.of(args[0], "table"), 100, 100);
                    long bytes = 0;
                    for (var f : files) {
                        bytes += java.nio.file.Files.size(f);
                    }
                    int labels = 0;
                    try (var table = io.stoke.parquet.ParquetDatasets.open(
                            java.nio.file.Path.of(args[0], "table").toString(),
                            io.stoke.loader.source.TableColumns.DEFAULT, 64 << 20)) {
                        for (int i = 0; i < table.size(); i++) {
                            labels += table.label(i);
                        }
                        say(io.stoke.parquet.HubParquetWriter.class, "parquet files " + files.size()
                                + (bytes > 0 ? " with bytes" : " empty") + ", read back " + table.size()
                                + " samples, labels summing to " + labels);
                    }
                    """,
                    // TestImages.imageFolder(10, 2): classes 0 and 1, five images each.
                    "parquet files 1 with bytes, read back 10 samples, labels summing to 5"),
            new Library(
                    "io.stoke.lakehouse",
                    "io.stoke.lakehouse.LakehouseDatasets",
                    // The Python client's Delta Lake fixture (DeltaFixtures): its latest snapshot, version 2,
                    // is read from a Parquet checkpoint, through Delta Kernel as automatic modules; and its
                    // Iceberg fixture (IcebergFixtures), through Iceberg's library (stoke-iceberg-java), its
                    // Avro and Caffeine.
                    """
                    StringBuilder said = new StringBuilder();
                    for (String name : new String[] {"delta-images", "iceberg-images"}) {
                        String table = java.nio.file.Path.of(System.getProperty("user.dir"))
                                .resolveSibling("clients/python/tests/data/" + name).toString();
                        int labels = 0;
                        try (var d = io.stoke.lakehouse.LakehouseDatasets.open(
                                table, io.stoke.loader.source.TableColumns.DEFAULT, 64 << 20)) {
                            for (int i = 0; i < d.size(); i++) {
                                labels += d.label(i);
                            }
                            said.append(said.length() == 0 ? "" : "; ").append(name).append(" ")
                                    .append(d.snapshot().substring(table.length())).append(", ").append(d.size())
                                    .append(" samples, labels summing to ").append(labels);
                        }
                    }
                    say(io.stoke.lakehouse.LakehouseDatasets.class, said.toString());
                    """,
                    "delta-images @v2, 24 samples, labels summing to 42;"
                            + " iceberg-images @v7613922452491425802, 24 samples, labels summing to 42"),
            new Library(
                    "io.stoke.arrow",
                    "io.stoke.arrow.ArrowDatasets",
                    // pyarrow's fixture of ArrowDatasetsTest: 7 rows labelled 0, 1, 2, 0, 1, 2, 0.
                    """
                    try (var d = io.stoke.arrow.ArrowDatasets.open(
                            "%s", io.stoke.loader.source.TableColumns.DEFAULT)) {
                        int labels = 0;
                        for (int i = 0; i < d.size(); i++) {
                            labels += d.label(i);
                        }
                        say(io.stoke.arrow.ArrowDatasets.class, "arrow rows " + d.size() + ", labels summing to " + labels);
                    }
                    """.formatted(Path.of("../arrow/src/test/resources/hf/bytes.arrow")
                            .toAbsolutePath()
                            .normalize()),
                    "arrow rows 7, labels summing to 6"),
            new Library("io.stoke.tune", "io.stoke.tune.CostModel", """
                    var c = new io.stoke.tune.CostModel.DecodeCost(32, 4, 800.0, 0.004, 0.003, 0.2);
                    say(io.stoke.tune.CostModel.class, "seconds per image per worker " + c.wallSecondsPerImagePerWorker());
                    """, "seconds per image per worker 0.005"));

    /** Artifacts described but run by no application here: Spark's jars are not on this class path. */
    static final Map<String, String> AUTOMATIC_ONLY = Map.of("io.stoke.spark", "io.stoke.spark.SparkEmbed");

    @TempDir
    Path tmp;

    static Stream<Library> libraries() {
        return LIBRARIES.stream();
    }

    static Stream<String> artifacts() {
        return Stream.concat(
                LIBRARIES.stream().map(Library::module),
                AUTOMATIC_ONLY.keySet().stream().sorted());
    }

    private static String anchorOf(String module) {
        return LIBRARIES.stream()
                .filter(l -> l.module().equals(module))
                .map(Library::anchor)
                .findFirst()
                .orElseGet(() -> AUTOMATIC_ONLY.get(module));
    }

    /** Where {@code className} was loaded from: its jar or class folder. */
    private static Path codeSource(String className) throws Exception {
        Class<?> c = Class.forName(className, false, LibraryModulesTest.class.getClassLoader());
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** The artifact that holds {@code className}: its jar, or the jar built beside its class folder. */
    private static Path jarOf(String className) throws Exception {
        Path source = codeSource(className);
        if (!Files.isDirectory(source)) {
            return source;
        }
        Path target = source.getParent();
        try (Stream<Path> s = Files.list(target)) {
            List<Path> jars = s.filter(p -> {
                        String n = p.getFileName().toString();
                        return n.startsWith("stoke-") && n.endsWith(".jar") && !n.endsWith("-tests.jar");
                    })
                    .toList();
            assertEquals(
                    1,
                    jars.size(),
                    "one jar of " + className + " expected in " + target + " (build it: mvn -pl cli -am verify), found "
                            + jars);
            return jars.getFirst();
        }
    }

    /** What {@code jar --describe-module --file jar} prints. */
    private static String describe(Path jar) {
        ToolProvider tool = ToolProvider.findFirst("jar").orElseThrow();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        int rc = tool.run(ps, ps, "--describe-module", "--file", jar.toString());
        String said = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, said);
        return said;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("artifacts")
    void eachArtifactDescribesItsModule(String module) throws Exception {
        Path jar = jarOf(anchorOf(module));
        String said = describe(jar);
        List<String> lines =
                said.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        List<String> expected = PublicFaceTest.EXPORTS.get(module);
        if (expected == null) {
            assertTrue(said.contains("No module descriptor found. Derived automatic module."), jar + ": " + said);
            assertTrue(lines.stream().anyMatch(l -> l.startsWith(module + "@") && l.endsWith(" automatic")), said);
            assertTrue(lines.contains("contains " + module), said);
            return;
        }
        assertTrue(
                lines.getFirst().startsWith(module + "@") || lines.getFirst().startsWith(module + " "),
                jar + " describes " + lines.getFirst());
        List<String> exports = new ArrayList<>();
        for (String l : lines) {
            if (l.startsWith("exports ")) {
                exports.add(l.substring("exports ".length()));
            } else if (l.startsWith("qualified exports ")) {
                String[] parts = l.substring("qualified exports ".length()).split(" to ", 2);
                exports.add(parts[0] + " to " + String.join(", ", new TreeSet<>(List.of(parts[1].split(" ")))));
            }
        }
        assertEquals(
                expected.stream().sorted().toList(), exports.stream().sorted().toList(), said);
    }

    /**
     * parquet-java as the one named module stoke-parquet-java is: not automatic; it exports the packages
     * that parquet-java's own jars split among themselves, and all its API, but none of the libraries
     * it shades or its internal packages; and none of parquet-java's own jars is left on the class path.
     */
    @Test
    void parquetJavaIsOneNamedModule() throws Exception {
        Path jar = jarOf("org.apache.parquet.hadoop.ParquetFileReader");
        String said = describe(jar);
        assertTrue(said.startsWith("org.apache.parquet@"), jar + ": " + said);
        ModuleDescriptor d = ModuleFinder.of(jar).findAll().iterator().next().descriptor();
        assertFalse(d.isAutomatic(), said);
        Set<String> exported = d.exports().stream()
                .map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toCollection(TreeSet::new));
        // column, common and hadoop each had classes of the first; column and common of .io.
        assertTrue(
                exported.containsAll(
                        List.of("org.apache.parquet", "org.apache.parquet.io", "org.apache.parquet.hadoop")),
                said);
        Set<String> api = d.packages().stream()
                .filter(p -> !p.startsWith("shaded.") && !p.contains(".internal"))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(api, exported, said);
        assertTrue(d.requires().stream().anyMatch(r -> r.name().equals("hadoop.client.api")), said);
        // The split packages' classes now come from one place.
        assertEquals(
                codeSource("org.apache.parquet.hadoop.ParquetFileReader"),
                codeSource("org.apache.parquet.io.api.Binary"));
        List<String> ownJars = Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> Path.of(e).getFileName().toString().startsWith("parquet-"))
                .toList();
        assertEquals(List.of(), ownJars);
    }

    /** Module name -> where it is, over the jars and module class folders of this test's class path. */
    private static Map<String, Path> observableModules() {
        Map<String, Path> found = new HashMap<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            boolean jar = entry.endsWith(".jar") && Files.isRegularFile(p);
            boolean exploded = Files.isRegularFile(p.resolve("module-info.class"));
            if (!jar && !exploded) {
                continue;
            }
            try {
                for (ModuleReference ref : ModuleFinder.of(p).findAll()) {
                    found.putIfAbsent(ref.descriptor().name(), p);
                }
            } catch (FindException e) {
                // A jar that derives no module name is not one a library of Stoke's requires.
            }
        }
        return found;
    }

    /** The library and the modules it requires, transitively: what goes on the module path. */
    private static Set<Path> modulePath(Library library, Path artifact) throws IOException {
        Map<String, Path> observable = observableModules();
        Set<Path> path = new LinkedHashSet<>(List.of(artifact));
        Deque<ModuleDescriptor> todo = new ArrayDeque<>();
        todo.add(ModuleFinder.of(artifact).findAll().iterator().next().descriptor());
        Set<String> seen = new TreeSet<>();
        while (!todo.isEmpty()) {
            for (ModuleDescriptor.Requires r : todo.pop().requires()) {
                Path where = observable.get(r.name());
                if (where == null || !seen.add(r.name())) {
                    continue; // a module of the JDK, or one already taken
                }
                path.add(where);
                todo.add(ModuleFinder.of(where).find(r.name()).orElseThrow().descriptor());
            }
        }
        return path;
    }

    private String compile(Library library, String modulePath, Path out) throws IOException {
        Path src = Files.createDirectories(tmp.resolve("src").resolve("app"));
        Files.writeString(
                src.getParent().resolve("module-info.java"), "module app { requires " + library.module() + "; }\n");
        Files.writeString(src.resolve("Main.java"), """
                package app;

                public final class Main {
                    static void say(Class<?> api, String what) {
                        System.out.println(what + " in module " + api.getModule().getName()
                                + (api.getModule().getDescriptor().isAutomatic() ? " (automatic)" : ""));
                    }

                    public static void main(String[] args) throws Exception {
                %s
                    }
                }
                """.formatted(library.body().indent(8)));
        JavaCompiler javac = javax.tools.ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream messages = new ByteArrayOutputStream();
        List<String> args = new ArrayList<>(List.of("--module-path", modulePath, "-d", out.toString()));
        args.add(src.getParent().resolve("module-info.java").toString());
        args.add(src.resolve("Main.java").toString());
        int rc = javac.run(null, messages, messages, args.toArray(String[]::new));
        String said = messages.toString(StandardCharsets.UTF_8);
        return rc == 0 ? "" : said.isEmpty() ? "javac exited " + rc : said;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("libraries")
    void anApplicationModuleRequiresTheLibraryAndRunsOnTheModulePath(Library library) throws Exception {
        Set<Path> modules = modulePath(library, codeSource(library.anchor()));
        String modulePath = modules.stream().map(Path::toString).collect(Collectors.joining(File.pathSeparator));
        Path classes = tmp.resolve("app-classes");
        assertEquals("", compile(library, modulePath, classes));

        Path data = TestImages.imageFolder(tmp.resolve("data"), 10, 2, 3);
        // Native access by name, to Stoke's modules on the path; Agrona's Unsafe only where Agrona is.
        Set<String> stoke = new TreeSet<>();
        boolean agrona = false;
        for (Path m : modules) {
            String name =
                    ModuleFinder.of(m).findAll().iterator().next().descriptor().name();
            stoke.add(name);
            agrona |= name.equals("org.agrona");
        }
        // And to the page codecs' libraries, which load their own native code (snappy-java, zstd-jni),
        // as ./stoke grants them (cli/modules.options): a Delta Lake checkpoint's pages are SNAPPY.
        stoke.removeIf(
                n -> !n.startsWith("io.stoke.") && !n.equals("snappy.java") && !n.equals("com.github.luben.zstd_jni"));
        List<String> cmd =
                new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java")));
        if (agrona) {
            cmd.addAll(List.of("--add-exports", "java.base/jdk.internal.misc=org.agrona"));
        }
        cmd.addAll(List.of(
                "--enable-native-access=" + String.join(",", stoke),
                "--module-path",
                modulePath + File.pathSeparator + classes));
        cmd.addAll(List.of("-m", "app/app.Main", data.toString()));
        for (String property : List.of(io.stoke.ffm.StokePixels.PATH_PROPERTY, "stoke.jpeg.path")) {
            if (System.getProperty(property) != null) {
                cmd.add(1, "-D" + property + "=" + System.getProperty(property));
            }
        }
        Path log = tmp.resolve("app.log");
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the application did not end");
        String out = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + "\n" + out);
        String suffix = " in module " + library.module();
        assertTrue(out.lines().anyMatch(l -> l.startsWith(library.expected()) && l.endsWith(suffix)), out);
        List<String> warnings = out.lines()
                .filter(l -> l.contains("restricted method") || l.contains("sun.misc.Unsafe"))
                .toList();
        assertEquals(List.of(), warnings, out);
    }
}
