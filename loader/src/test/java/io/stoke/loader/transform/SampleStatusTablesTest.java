package io.stoke.loader.transform;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.testing.TestPython;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SampleStatus} defines the sample status codes; the C header and the Python client repeat
 * them. Each copy must hold exactly the enum's names with the enum's codes: a code added, renamed
 * or renumbered on one side only fails here.
 */
class SampleStatusTablesTest {
    private static final Pattern SAMPLE_MACRO = Pattern.compile("^#define\\s+STOKE_SAMPLE_([A-Z0-9_]+)\\s");

    @TempDir
    Path tmp;

    /** The enum as the copies must read: NAME -> code. */
    private static Map<String, Long> javaTable() {
        Map<String, Long> table = new TreeMap<>();
        for (SampleStatus s : SampleStatus.values()) {
            table.put(s.name(), (long) s.code());
        }
        return table;
    }

    private static Path repoRoot() {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("native/stoke_ring.h"))) {
                return d;
            }
        }
        throw new IllegalStateException(
                "native/stoke_ring.h not found above " + Path.of("").toAbsolutePath());
    }

    private static String run(List<String> command, Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), command + " hung");
        assertEquals(0, p.exitValue(), command + ":\n" + out);
        return out;
    }

    private static boolean works(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (Exception e) {
            return false;
        }
    }

    private static Map<String, Long> parse(String out) {
        Map<String, Long> table = new TreeMap<>();
        for (String line : out.strip().split("\n")) {
            String[] kv = line.strip().split(" ");
            table.put(kv[0], Long.parseLong(kv[1]));
        }
        return table;
    }

    @Test
    void codesAreLookedUpByCodeNotByPosition() {
        for (SampleStatus s : SampleStatus.values()) {
            assertEquals(s, SampleStatus.of(s.code()));
        }
        assertThrows(IllegalArgumentException.class, () -> SampleStatus.of(-1));
        assertThrows(IllegalArgumentException.class, () -> SampleStatus.of(SampleStatus.values().length + 100));
    }

    /** Every STOKE_SAMPLE_* status macro, compiled and printed by gcc, is the enum's, and no more or less. */
    @Test
    void theCHeaderRepeatsTheEnum() throws Exception {
        if (!works("gcc", "--version")) {
            System.err.println(
                    "\n*** SKIPPING the C header's status table check: gcc is not installed (./stoke test installs it) ***\n");
        }
        assumeTrue(works("gcc", "--version"), "gcc is not installed");
        Path header = repoRoot().resolve("native/stoke_ring.h");
        StringBuilder c = new StringBuilder("#include <stdio.h>\n#include \"stoke_ring.h\"\nint main(void) {\n");
        int macros = 0;
        for (String line : Files.readAllLines(header)) {
            Matcher m = SAMPLE_MACRO.matcher(line.strip());
            if (m.find() && !m.group(1).endsWith("_OFFSET")) {
                c.append("  printf(\"%s %lld\\n\", \"")
                        .append(m.group(1))
                        .append("\", (long long)STOKE_SAMPLE_")
                        .append(m.group(1))
                        .append(");\n");
                macros++;
            }
        }
        assertTrue(macros > 0, "no STOKE_SAMPLE_* status macros in " + header);
        c.append("  return 0;\n}\n");
        Path src = Files.writeString(tmp.resolve("codes.c"), c);
        Path exe = tmp.resolve("codes");
        run(List.of("gcc", "-I", header.getParent().toString(), "-o", exe.toString(), src.toString()), Map.of());
        assertEquals(javaTable(), parse(run(List.of(exe.toString()), Map.of())));
    }

    /** The Python client's SAMPLE_* constants are the enum's, and SAMPLE_STATUS describes exactly those codes. */
    @Test
    void thePythonClientRepeatsTheEnum() throws Exception {
        boolean numpy = works(TestPython.PATH, "-c", "import numpy");
        if (!numpy) {
            System.err.println("\n*** SKIPPING the Python client's status table check: no numpy for " + TestPython.PATH
                    + " (./stoke test installs it) ***\n");
        }
        assumeTrue(numpy, "numpy is not installed for " + TestPython.PATH);
        String script = """
                import stoke.ring as r
                names = {k[len('SAMPLE_'):]: getattr(r, k) for k in dir(r)
                         if k.startswith('SAMPLE_') and k != 'SAMPLE_STATUS' and not k.endswith('_OFFSET')}
                for k, v in sorted(names.items()):
                    print(k, v)
                assert sorted(r.SAMPLE_STATUS) == sorted(names.values()), (sorted(r.SAMPLE_STATUS), names)
                """;
        String out = run(
                List.of(TestPython.PATH, "-c", script),
                Map.of("PYTHONPATH", repoRoot().resolve("clients/python").toString()));
        assertEquals(javaTable(), parse(out));
    }
}
