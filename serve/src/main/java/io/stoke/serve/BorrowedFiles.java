package io.stoke.serve;

import io.stoke.ffm.LibC;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Another process's open files, opened here through {@code /proc/PID/fd/N}: what a producer started
 * before its loader (the Python package's, at {@code import stoke}) does with the files the loader
 * made for it afterwards, which it did not inherit. Opening {@code /proc/PID/fd/N} opens the file
 * itself (an anonymous file, a pipe), as {@code /dev/fd/N} does for an inherited descriptor, where
 * the kernel lets this process see that one's descriptors (same user, a {@code /proc} that shows
 * them).
 */
public final class BorrowedFiles {
    private static final Pattern FD_PATH = Pattern.compile("/dev/fd/(\\d+)");

    private BorrowedFiles() {}

    /**
     * {@code args} with each {@code /dev/fd/N} in them replaced by {@code /dev/fd/M}, M this
     * process's descriptor of process {@code pid}'s descriptor N: a pipe opened for reading (the
     * order feed: no writer is added, so the producer still sees its end), any other file for
     * reading and writing, as an inherited descriptor would be.
     *
     * @throws IOException naming the descriptor that cannot be opened and why; the descriptors it
     *     opened before are closed
     */
    public static String[] reopened(long pid, List<String> args) throws IOException {
        Map<String, Integer> opened = new HashMap<>();
        String[] out = new String[args.size()];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = LibC.allocateCallState(arena);
            MemorySegment stat = arena.allocate(LibC.STAT_BYTES, 8);
            for (int i = 0; i < out.length; i++) {
                Matcher m = FD_PATH.matcher(args.get(i));
                StringBuilder rewritten = new StringBuilder();
                while (m.find()) {
                    String theirs = "/proc/" + pid + "/fd/" + m.group(1);
                    Integer mine = opened.get(theirs);
                    if (mine == null) {
                        mine = open(arena, state, stat, theirs);
                        opened.put(theirs, mine);
                    }
                    m.appendReplacement(rewritten, "/dev/fd/" + mine);
                }
                m.appendTail(rewritten);
                out[i] = rewritten.toString();
            }
        } catch (IOException | RuntimeException e) {
            opened.values().forEach(LibC::close); // none handed out: what was opened before the failure goes
            throw e;
        }
        return out;
    }

    private static int open(Arena arena, MemorySegment state, MemorySegment stat, String path) throws IOException {
        MemorySegment name = arena.allocateFrom(path);
        if (LibC.stat(state, name, stat) != 0) {
            throw new IOException("cannot see " + path + ": " + LibC.strerror(LibC.errno(state)));
        }
        int mode = stat.get(ValueLayout.JAVA_INT, LibC.ST_MODE) & LibC.S_IFMT;
        int flags = (mode == LibC.S_IFIFO ? LibC.O_RDONLY : LibC.O_RDWR) | LibC.O_CLOEXEC;
        int fd = LibC.open(state, name, flags);
        if (fd < 0) {
            throw new IOException("cannot open " + path + ": " + LibC.strerror(LibC.errno(state)));
        }
        return fd;
    }
}
