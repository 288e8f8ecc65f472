package io.stoke.ring.jcstress;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SortedSet;
import org.openjdk.jcstress.JCStress;
import org.openjdk.jcstress.Options;

/**
 * Runs jcstress as its own {@code Main} does, and turns its verdict into an exit status the build
 * can act on. jcstress 0.16 reports a FORBIDDEN outcome, a test error, a timeout or a crashed fork
 * by throwing an AssertionError ("TEST FAILURES: ...") after its report; it returns normally,
 * exit status 0, when no test matched or no JVM configuration could run. Here each of those fails:
 * exit status 1, and 1 too when some selected test left no report behind.
 */
public final class RunJcstress {
    private RunJcstress() {}

    public static void main(String[] args) throws Exception {
        Options opts = new Options(args);
        if (!opts.parse()) {
            System.exit(2);
        }
        JCStress jcstress = new JCStress(opts);
        SortedSet<String> tests = jcstress.getTests();
        if (tests.isEmpty()) {
            fail("no jcstress test matches \"" + opts.getTestFilter() + "\" (was the annotation processor run?)");
        }
        long start = System.nanoTime();
        try {
            jcstress.run();
        } catch (AssertionError e) {
            fail("jcstress: " + e.getMessage());
        }
        Path results = Path.of(opts.getResultDest());
        for (String test : tests) {
            if (!Files.isRegularFile(results.resolve(test + ".html"))) {
                fail("jcstress left no result for " + test + " (see the log above)");
            }
        }
        System.out.printf(
                "[stoke] jcstress: %d tests passed in %.0f s; report in %s%n",
                tests.size(), (System.nanoTime() - start) / 1e9, results.resolve("index.html"));
        System.exit(0);
    }

    private static void fail(String why) {
        System.err.println("[stoke] FAILED " + why);
        System.exit(1);
    }
}
