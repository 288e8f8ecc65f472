package io.stoke.cli;

import java.io.PrintStream;

/**
 * An option's or command's old spelling, kept one release after issue 46 gave each name one
 * meaning: it still works, and says so once, naming the spelling to use. Every deprecated spelling
 * of the CLI says it in these words, the table's options ({@link LoaderOptions}) too.
 */
final class DeprecatedSpelling {
    private DeprecatedSpelling() {}

    /** Says on {@code err}, once for each use, that {@code command}'s {@code old} is now {@code now}. */
    static void say(PrintStream err, String command, String old, String now) {
        err.println(command + ": " + old + " is deprecated and goes in the next release: use " + now);
    }
}
