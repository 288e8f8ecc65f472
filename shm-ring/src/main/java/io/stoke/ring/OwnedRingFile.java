package io.stoke.ring;

import io.stoke.ffm.LibC;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.util.Map;

/**
 * A named ring's file opened as only its owner could have made it: never through a symbolic link
 * ({@code O_NOFOLLOW}), never waiting on a FIFO ({@code O_NONBLOCK}), and checked on the open
 * descriptor, so that nothing can swap the file between the check and its use: a regular file of
 * this process's effective user that neither its group nor others can write, as {@link
 * ShmRing#create} makes it (0600). A ring in {@code /dev/shm}, which every user can write to, may
 * otherwise be a file another user planted to read the pixels or to forge them. The Python
 * consumer makes the same check ({@code stoke.ring._open_owned}), with the same words.
 */
final class OwnedRingFile {
    private static final int GROUP_OR_OTHERS_WRITE = 0022;

    private OwnedRingFile() {}

    /**
     * Opens the ring at {@code path} with {@code options} (read, or read and write) once it is
     * checked.
     *
     * @throws NoSuchFileException when nothing is at {@code path}
     * @throws RingOwnerException in one sentence naming the path, its owner and its mode
     */
    static FileChannel open(Path path, OpenOption... options) throws IOException {
        try (Arena call = Arena.ofConfined()) {
            MemorySegment state = LibC.allocateCallState(call);
            int fd = LibC.open(
                    state,
                    call.allocateFrom(path.toString()),
                    LibC.O_RDONLY | LibC.O_CLOEXEC | LibC.O_NOFOLLOW | LibC.O_NONBLOCK);
            if (fd < 0) {
                int errno = LibC.errno(state);
                if (errno == 2 /* ENOENT */) {
                    throw new NoSuchFileException(path.toString());
                }
                if (errno == LibC.ELOOP) {
                    throw new RingOwnerException("refusing the ring " + path + ": it is a symbolic link (to "
                            + Files.readSymbolicLink(path) + "), and a ring is never opened through one");
                }
                throw new IOException("cannot open " + path + ": " + LibC.strerror(errno));
            }
            try {
                // The open descriptor's own file: /proc/self/fd/N leads to its inode, whatever the
                // path names by now, so this is fstat's answer, and the channel opened through it
                // is the file that was checked.
                Path opened = Path.of("/proc/self/fd/" + fd);
                Map<String, Object> st = Files.readAttributes(opened, "unix:uid,mode");
                int uid = (Integer) st.get("uid");
                int mode = (Integer) st.get("mode");
                int euid = LibC.geteuid();
                if ((mode & LibC.S_IFMT) != LibC.S_IFREG) {
                    throw new RingOwnerException("refusing the ring " + path + ": it is not a regular file (mode "
                            + Integer.toOctalString(mode) + "), owned by uid " + uid);
                }
                if (uid != euid || (mode & GROUP_OR_OTHERS_WRITE) != 0) {
                    throw new RingOwnerException("refusing the ring " + path + ": it is owned by uid " + uid
                            + " with mode " + String.format("%04o", mode & 07777)
                            + ", and a ring must be owned by this process's user (uid " + euid
                            + ") and writable by no one else");
                }
                return FileChannel.open(opened, options);
            } finally {
                LibC.close(fd);
            }
        }
    }
}
