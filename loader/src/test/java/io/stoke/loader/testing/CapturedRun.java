package io.stoke.loader.testing;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.function.IntSupplier;

/** A command run in this JVM with its stdout and stderr captured: the CLI's and the harness's tests. */
public final class CapturedRun {
    private CapturedRun() {}

    /** Runs {@code command} (which returns an exit code) and gives {exit code, stdout, stderr}. */
    public static String[] of(IntSupplier command) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
            int code = command.getAsInt();
            return new String[] {
                Integer.toString(code), o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8)
            };
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }
}
