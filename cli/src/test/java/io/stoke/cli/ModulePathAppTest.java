package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokePixels;
import io.stoke.loader.testing.TestImages;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An application of its own on the module path, as a user who writes a {@code module-info.java}
 * has it: it compiles against {@code io.stoke.loader} alone, reads an epoch with the flags
 * docs/java.md#modules names and no warning, and cannot compile against the worker pipeline.
 */
class ModulePathAppTest {
    /** One class of each module the loader reads, whose jar or class folder goes on the module path. */
    private static final List<String> MODULE_ANCHORS = List.of(
            "io.stoke.ffm.cuda.CudaStream",
            "io.stoke.ring.RingGeometry",
            "io.stoke.loader.Loader",
            "org.agrona.BitUtil",
            "com.fasterxml.jackson.core.JsonFactory",
            "org.apache.commons.compress.archivers.ArchiveEntry",
            "org.apache.commons.lang3.StringUtils",
            "org.apache.commons.codec.Charsets",
            "org.apache.commons.io.IOUtils");

    private static final String MODULE_INFO = "module app { requires io.stoke.loader; }\n";

    private static final String MAIN = """
            package app;

            import io.stoke.loader.Batch;
            import io.stoke.loader.Loader;
            import io.stoke.loader.transform.TransformSpec;
            import java.nio.file.Path;

            public final class Main {
                public static void main(String[] args) {
                    long samples = 0;
                    long sum = 0;
                    try (Loader loader = Loader.imageFolder(Path.of(args[0]))
                            .batchSize(4)
                            .workers(2)
                            .transform(TransformSpec.defaults().withResize(40, 32))
                            .build()) {
                        for (Batch b : loader) {
                            try (b) {
                                samples += b.size();
                                for (long i = 0; i < b.pixels().byteSize(); i++) {
                                    sum += Byte.toUnsignedInt(b.pixels().get(java.lang.foreign.ValueLayout.JAVA_BYTE, i));
                                }
                            }
                        }
                    }
                    System.out.println("samples " + samples + " pixel sum " + sum + " in module "
                            + Loader.class.getModule().getName() + ", work exported: "
                            + Loader.class.getModule().isExported("io.stoke.loader.work"));
                }
            }
            """;

    private static final String REACHES_IN = """
            package app;

            public final class Main {
                public static void main(String[] args) {
                    System.out.println(io.stoke.loader.work.Pipeline.class);
                }
            }
            """;

    @TempDir
    Path tmp;

    private static String modulePath() throws ClassNotFoundException, URISyntaxException {
        List<String> entries = new ArrayList<>();
        for (String anchor : MODULE_ANCHORS) {
            Class<?> c = Class.forName(anchor, false, ModulePathAppTest.class.getClassLoader());
            String entry = Path.of(c.getProtectionDomain()
                            .getCodeSource()
                            .getLocation()
                            .toURI())
                    .toString();
            if (!entries.contains(entry)) {
                entries.add(entry);
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    /** Compiles {@code main} in module {@code app} into {@code out}; javac's messages, or "" when it compiled. */
    private String compile(String main, Path out) throws Exception {
        Path src =
                Files.createDirectories(tmp.resolve("src-" + out.getFileName()).resolve("app"));
        Files.writeString(src.getParent().resolve("module-info.java"), MODULE_INFO);
        Files.writeString(src.resolve("Main.java"), main);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream messages = new ByteArrayOutputStream();
        int rc = javac.run(
                null,
                messages,
                messages,
                "--module-path",
                modulePath(),
                "-d",
                out.toString(),
                src.getParent().resolve("module-info.java").toString(),
                src.resolve("Main.java").toString());
        String said = messages.toString(StandardCharsets.UTF_8);
        return rc == 0 ? "" : said.isEmpty() ? "javac exited " + rc : said;
    }

    @Test
    void anApplicationOnTheModulePathReadsAnEpochWithTheDocumentedFlags() throws Exception {
        Path classes = tmp.resolve("app-classes");
        assertEquals("", compile(MAIN, classes));
        Path data = TestImages.imageFolder(tmp.resolve("data"), 10, 2, 3);
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                // The two flags docs/java.md#modules gives, named for the modules rather than ALL-UNNAMED.
                "--add-exports",
                "java.base/jdk.internal.misc=org.agrona",
                "--enable-native-access=io.stoke.ffm,io.stoke.loader",
                "--module-path",
                modulePath() + File.pathSeparator + classes,
                "-m",
                "app/app.Main",
                data.toString()));
        for (String property : List.of(StokePixels.PATH_PROPERTY, "stoke.jpeg.path")) {
            if (System.getProperty(property) != null) {
                cmd.add(1, "-D" + property + "=" + System.getProperty(property));
            }
        }
        Path log = tmp.resolve("app.log");
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the application did not end");
        String out = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("samples 10 pixel sum "), out);
        assertTrue(out.contains("in module io.stoke.loader, work exported: false"), out);
        // Native access is granted by name; a module the list missed would be warned about here.
        List<String> warnings = out.lines()
                .filter(l -> l.contains("restricted method") || l.contains("sun.misc.Unsafe"))
                .collect(Collectors.toList());
        assertEquals(List.of(), warnings, out);
    }

    @Test
    void theWorkerPipelineCannotBeNamedFromAnApplicationModule() throws Exception {
        String said = compile(REACHES_IN, tmp.resolve("reaches-in"));
        assertTrue(
                Stream.of("does not export", "not visible").anyMatch(said::contains),
                "javac compiled a reference to io.stoke.loader.work: " + said);
    }
}
