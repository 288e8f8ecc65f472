package io.stoke.loader.testing;

/**
 * The Python interpreter every test runs: {@code /usr/bin/python3} (Debian's, which sees Debian's
 * numpy, PIL and torch; the {@code python3} on PATH may be a shim that does not), or the one named
 * by {@code STOKE_TEST_PYTHON}. Tests that depend on an optional package behave differently with
 * and without it; this is how the suite is run both ways on one machine, e.g. with
 * {@code STOKE_TEST_PYTHON} pointing at a wrapper that runs {@code /usr/bin/python3 -S} (no
 * site-packages: no numpy, PIL or torch) or one that hides only torch.
 */
public final class TestPython {
    /** The interpreter's path. */
    public static final String PATH = choose();

    private TestPython() {}

    private static String choose() {
        String p = System.getenv("STOKE_TEST_PYTHON");
        return p == null || p.isBlank() ? "/usr/bin/python3" : p;
    }
}
