package io.stoke.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.serve.BorrowedFiles;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine;

/**
 * {@code stoke prestart IDLE_SECONDS} (hidden, not a picocli command): a producer started before its
 * command is known, so that the JVM's own start is paid while the Python process that will use it
 * is still importing and building its model, not after {@code stoke.DataLoader()} is called
 * ({@code clients/python/stoke/_prestart.py} starts it at {@code import stoke}).
 *
 * <p>It builds {@code serve}'s command line (picocli's model, the options table) and Jackson's
 * reader, then waits on stdin for one line, {@code {"pid": P, "args": ["serve", ...]}}: the command
 * the Python loader would have started. The files the loader made for it (its ring, sample list,
 * order feed: anonymous files and a pipe, named {@code /dev/fd/N} in the arguments) were made after
 * this process started, so it holds none of them: it opens each as {@code /proc/P/fd/N}, the
 * loader's own descriptor, and names its own descriptor in the arguments instead. Then it answers
 * {@code ok} on stdout and runs the command, as the process {@code serve} would have been. Where a
 * file cannot be opened so (a {@code /proc} that hides the parent's descriptors), it answers
 * {@code no: WHY} and exits, and the loader starts a producer as it would have without one.
 *
 * <p>Unused for {@code IDLE_SECONDS}, or with stdin closed, it exits with 0.
 */
final class Prestart {
    /** The JVM's argument that asks for this mode. */
    static final String COMMAND = "prestart";
    /** The one command a prestarted producer runs. */
    private static final String SERVE = "serve";

    private static final int WAITING = 0;
    private static final int TAKEN = 1;
    private static final int EXPIRED = 2;

    private Prestart() {}

    /** Whether {@code args} ask for this mode. */
    static boolean asked(String[] args) {
        return args.length == 2 && COMMAND.equals(args[0]);
    }

    /** Runs the mode for {@code args} ({@link #asked}); returns the process's exit code. */
    static int run(String[] args) {
        long idleSeconds;
        try {
            idleSeconds = Long.parseLong(args[1]);
        } catch (NumberFormatException e) {
            System.err.println("stoke: prestart IDLE_SECONDS, not " + args[1]);
            return Main.EXIT_USAGE;
        }
        CommandLine serve = Main.commandLine(SERVE);
        ObjectMapper json = new ObjectMapper();
        try {
            json.readTree("{\"pid\": 1, \"args\": [\"serve\"]}"); // its parser's classes, loaded now
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        AtomicInteger state = new AtomicInteger(WAITING);
        Thread.ofPlatform().name("stoke-prestart-idle").daemon().start(() -> {
            try {
                Thread.sleep(idleSeconds * 1000);
            } catch (InterruptedException e) {
                return;
            }
            if (state.compareAndSet(WAITING, EXPIRED)) {
                System.exit(0); // nobody came: this JVM is not kept for the rest of the Python process
            }
        });
        String line;
        try {
            line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        } catch (IOException e) {
            line = null;
        }
        if (line == null || !state.compareAndSet(WAITING, TAKEN)) {
            return 0; // the Python process closed its end (it exits, or starts its producers itself)
        }
        PrintStream answer = System.out;
        String[] command;
        try {
            JsonNode request = json.readTree(line);
            long pid = request.path("pid").asLong(-1);
            List<String> given = new ArrayList<>();
            for (JsonNode a : request.path("args")) {
                given.add(a.asText());
            }
            if (pid <= 0 || given.isEmpty() || !SERVE.equals(given.get(0))) {
                answer.println("no: the request names no process or no serve command");
                answer.flush();
                return Main.EXIT_USAGE;
            }
            command = BorrowedFiles.reopened(pid, given);
        } catch (IOException | RuntimeException e) {
            answer.println("no: "
                    + (e.getMessage() != null ? e.getMessage() : e.getClass().getName()));
            answer.flush();
            return Main.EXIT_FAILED;
        }
        answer.println("ok");
        answer.flush();
        // serve writes nothing to stdout; the Python process stops reading it after the answer.
        System.setOut(new PrintStream(OutputStream.nullOutputStream()));
        return Main.execute(serve, command);
    }
}
