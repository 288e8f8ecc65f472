package io.stoke.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The few libc calls Stoke needs where Java's own I/O would allocate per call: reading a file
 * whose NUL-terminated path already sits in native memory, into native memory, and writing one
 * from it.
 *
 * <p>Calls that can fail take a {@code callState} segment (from {@link #allocateCallState}) into
 * which the linker captures {@code errno} right after the call; read it with {@link #errno}.
 */
public final class LibC {
    public static final int O_RDONLY = 0;
    public static final int O_RDWR = 2;
    public static final int O_CLOEXEC = 0x80000;
    /** {@code open} fails with {@link #ELOOP} where the path's last component is a symbolic link. */
    public static final int O_NOFOLLOW = "aarch64".equals(System.getProperty("os.arch")) ? 0x8000 : 0x20000;
    /** Opening a FIFO or a device returns at once, where a FIFO with no writer would block forever. */
    public static final int O_NONBLOCK = 0x800;

    public static final int ELOOP = 40;
    public static final int SEEK_END = 2;
    public static final int EINTR = 4;
    /** {@code errno} for a folder where a file was wanted (Linux, every architecture). */
    public static final int EISDIR = 21;

    public static final int EACCES = 13;
    public static final int ENOSPC = 28;
    /** {@code setpriority}'s {@code which} for one process, or on Linux one thread by its tid. */
    public static final int PRIO_PROCESS = 0;
    /** {@code sched_setscheduler}'s policies: the default time-sharing one, and the one that runs only on idle CPU. */
    public static final int SCHED_OTHER = 0;

    public static final int SCHED_IDLE = 5;
    /** {@code struct sched_param}: one {@code int}, {@code sched_priority} (0 for both policies above). */
    public static final int SCHED_PARAM_BYTES = 4;

    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle PREAD;
    private static final MethodHandle LSEEK;

    /**
     * {@code struct stat} on 64-bit Linux (x86-64 and AArch64 agree on these): its size, and the
     * offsets of {@code st_size} and {@code st_mtim}'s two fields.
     */
    public static final int STAT_BYTES = 144;

    public static final long ST_SIZE = 48;
    public static final long ST_MTIME_SEC = 88;
    public static final long ST_MTIME_NSEC = 96;
    /** {@code st_mode}, {@code st_uid} and {@code st_gid}: where x86-64 and AArch64 differ. */
    public static final long ST_MODE = "aarch64".equals(System.getProperty("os.arch")) ? 16 : 24;

    public static final long ST_UID = ST_MODE + 4 + ("aarch64".equals(System.getProperty("os.arch")) ? 4 : 0);
    public static final long ST_GID = ST_UID + 4;
    /** {@code st_mode}'s file type bits, and the types of a regular file, a folder and a pipe (FIFO). */
    public static final int S_IFMT = 0170000;

    public static final int S_IFREG = 0100000;
    public static final int S_IFDIR = 0040000;
    public static final int S_IFIFO = 0010000;

    static {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        Linker.Option errno = Linker.Option.captureCallState("errno");
        OPEN = linker.downcallHandle(
                libc.findOrThrow("open"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), errno);
        CLOSE = linker.downcallHandle(libc.findOrThrow("close"), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        PREAD = linker.downcallHandle(
                libc.findOrThrow("pread"),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG),
                errno);
        LSEEK = linker.downcallHandle(
                libc.findOrThrow("lseek"), FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT), errno);
    }

    private LibC() {}

    /**
     * {@code stat}, bound on first use: only the restart cache needs it, so a C library without it
     * fails the cache alone, never the loader's reads. glibc exports {@code stat} from 2.33; before
     * (Debian 11, Ubuntu 20.04, RHEL 8) only {@code __xstat(version, path, buf)}, which is taken then.
     * {@code fstat} and {@code geteuid} have holders of their own: each distinct signature costs a
     * fresh JVM several milliseconds to link (docs/benchmarks/cold-start.md), and every process
     * asks for its user (the native library cache's check) where few stat a file.
     */
    static final class Stat {
        static final MethodHandle STAT = StatBinding.bind(Linker.nativeLinker().defaultLookup(), "stat");

        private Stat() {}
    }

    /** How {@code stat} and {@code fstat} are found: by these names, else glibc's older {@code __xstat} family. */
    static final class StatBinding {
        private StatBinding() {}

        /**
         * {@code stat(callState, path, buf)} through {@code symbol}: {@code "stat"} where found, else
         * {@code "__xstat"}; or {@code lstat}'s through {@code "lstat"}, else {@code "__lxstat"}.
         */
        static MethodHandle bind(SymbolLookup libc, String symbol) {
            Linker linker = Linker.nativeLinker();
            Linker.Option errno = Linker.Option.captureCallState("errno");
            boolean plain = symbol.equals("stat") || symbol.equals("lstat");
            var stat = plain ? libc.find(symbol) : java.util.Optional.<MemorySegment>empty();
            if (stat.isPresent()) {
                return linker.downcallHandle(stat.get(), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), errno);
            }
            String older = symbol.equals("lstat") || symbol.equals("__lxstat") ? "__lxstat" : "__xstat";
            MethodHandle xstat = linker.downcallHandle(
                    libc.findOrThrow(older), FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), errno);
            // glibc's _STAT_VER for the kernel's struct stat: 1 on x86-64, 0 on AArch64.
            int version = "aarch64".equals(System.getProperty("os.arch")) ? 0 : 1;
            return java.lang.invoke.MethodHandles.insertArguments(xstat, 1, version);
        }

        /** {@code fstat(callState, fd, buf)} through {@code "fstat"} where found, else {@code "__fxstat"}, as {@link #bind}. */
        static MethodHandle bindF(SymbolLookup libc, String symbol) {
            Linker linker = Linker.nativeLinker();
            Linker.Option errno = Linker.Option.captureCallState("errno");
            var fstat = symbol.equals("fstat") ? libc.find("fstat") : java.util.Optional.<MemorySegment>empty();
            if (fstat.isPresent()) {
                return linker.downcallHandle(fstat.get(), FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), errno);
            }
            MethodHandle fxstat = linker.downcallHandle(
                    libc.findOrThrow("__fxstat"), FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS), errno);
            int version = "aarch64".equals(System.getProperty("os.arch")) ? 0 : 1;
            return java.lang.invoke.MethodHandles.insertArguments(fxstat, 1, version);
        }
    }

    /** {@code fstat}, bound on first use, as {@link StatBinding#bindF} finds it. */
    private static final class Fstat {
        static final MethodHandle FSTAT =
                StatBinding.bindF(Linker.nativeLinker().defaultLookup(), "fstat");
    }

    /** {@code geteuid}, bound on first use. */
    private static final class Geteuid {
        static final MethodHandle GETEUID = Linker.nativeLinker()
                .downcallHandle(
                        Linker.nativeLinker().defaultLookup().findOrThrow("geteuid"), FunctionDescriptor.of(JAVA_INT));
    }

    /** {@code gettid} and {@code setpriority}, bound on first use: only a loader asked to lower its workers' priority needs them. */
    private static final class Priority {
        static final MethodHandle GETTID;
        static final MethodHandle SETPRIORITY;

        static {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            GETTID = linker.downcallHandle(libc.findOrThrow("gettid"), FunctionDescriptor.of(JAVA_INT));
            SETPRIORITY = linker.downcallHandle(
                    libc.findOrThrow("setpriority"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
                    Linker.Option.captureCallState("errno"));
        }

        private Priority() {}
    }

    /**
     * {@code sched_setscheduler} and {@code sched_getscheduler}, bound on first use: only the
     * restart cache's fillers need them. On Linux {@code pid} may be a thread's tid, and a thread
     * may move itself to {@link #SCHED_IDLE} without privilege.
     */
    private static final class Scheduling {
        static final MethodHandle SETSCHEDULER;
        static final MethodHandle GETSCHEDULER;

        static {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            Linker.Option errno = Linker.Option.captureCallState("errno");
            SETSCHEDULER = linker.downcallHandle(
                    libc.findOrThrow("sched_setscheduler"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS),
                    errno);
            GETSCHEDULER = linker.downcallHandle(
                    libc.findOrThrow("sched_getscheduler"), FunctionDescriptor.of(JAVA_INT, JAVA_INT), errno);
        }

        private Scheduling() {}
    }

    /**
     * {@code sched_setscheduler(pid, policy, param)}: 0, or -1 with {@code errno} in {@code callState}.
     *
     * @throws IndexOutOfBoundsException when {@code param} is shorter than {@link #SCHED_PARAM_BYTES}
     */
    public static int schedSetscheduler(MemorySegment callState, int pid, int policy, MemorySegment param) {
        if (param.byteSize() < SCHED_PARAM_BYTES) {
            throw new IndexOutOfBoundsException("sched_param of " + param.byteSize() + " bytes");
        }
        try {
            return (int) Scheduling.SETSCHEDULER.invokeExact(callState, pid, policy, param);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code sched_getscheduler(pid)}: the policy, or -1 with {@code errno} in {@code callState}. */
    public static int schedGetscheduler(MemorySegment callState, int pid) {
        try {
            return (int) Scheduling.GETSCHEDULER.invokeExact(callState, pid);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code memfd_create}'s flag: the descriptor is closed across {@code exec}. */
    public static final int MFD_CLOEXEC = 1;

    /**
     * {@code posix_fallocate} and {@code memfd_create}, bound on first use: only a producer that
     * creates a named ring, and the JVM's training run, need them.
     */
    private static final class Allocation {
        static final MethodHandle POSIX_FALLOCATE;
        static final MethodHandle MEMFD_CREATE;

        static {
            Linker linker = Linker.nativeLinker();
            POSIX_FALLOCATE = linker.downcallHandle(
                    linker.defaultLookup().findOrThrow("posix_fallocate"),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
            MEMFD_CREATE = linker.downcallHandle(
                    linker.defaultLookup().findOrThrow("memfd_create"),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT),
                    Linker.Option.captureCallState("errno"));
        }

        private Allocation() {}
    }

    /** {@code memfd_create(name, flags)}: an anonymous file's descriptor, or -1 with {@code errno} in {@code callState}. */
    public static int memfdCreate(MemorySegment callState, MemorySegment name, int flags) {
        try {
            return (int) Allocation.MEMFD_CREATE.invokeExact(callState, name, flags);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code posix_fallocate(fd, offset, len)}: reserves the file's blocks (on tmpfs, its pages) so
     * that no later write or page fault in that range can find the file system full. Returns 0 or
     * an errno value ({@link #ENOSPC}, ...); it does not set {@code errno}.
     */
    public static int posixFallocate(int fd, long offset, long len) {
        try {
            return (int) Allocation.POSIX_FALLOCATE.invokeExact(fd, offset, len);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code gettid()}: the calling thread's id (glibc 2.30 or later). */
    public static int gettid() {
        try {
            return (int) Priority.GETTID.invokeExact();
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code setpriority(which, who, prio)}: 0, or -1 with {@code errno} in {@code callState}. */
    public static int setpriority(MemorySegment callState, int which, int who, int prio) {
        try {
            return (int) Priority.SETPRIORITY.invokeExact(callState, which, who, prio);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** A segment for the linker to capture {@code errno} into; one per thread, reused. */
    public static MemorySegment allocateCallState(Arena arena) {
        return arena.allocate(CALL_STATE);
    }

    public static int errno(MemorySegment callState) {
        return (int) ERRNO.get(callState, 0L);
    }

    /** {@code open(path, flags)}; {@code path} must be NUL-terminated. */
    public static int open(MemorySegment callState, MemorySegment path, int flags) {
        try {
            return (int) OPEN.invokeExact(callState, path, flags);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    public static int close(int fd) {
        try {
            return (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code pread(fd, buf, count, offset)}.
     *
     * @throws IndexOutOfBoundsException when {@code buf} is shorter than {@code count}
     */
    public static long pread(MemorySegment callState, int fd, MemorySegment buf, long count, long offset) {
        if (count < 0 || count > buf.byteSize()) {
            throw new IndexOutOfBoundsException("pread of " + count + " bytes into " + buf.byteSize());
        }
        try {
            return (long) PREAD.invokeExact(callState, fd, buf, count, offset);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code stat(path, buf)}; {@code path} must be NUL-terminated. Read {@link #ST_SIZE} and
     * {@link #ST_MTIME_SEC} from {@code buf}.
     *
     * @throws IndexOutOfBoundsException when {@code buf} is shorter than {@link #STAT_BYTES}
     */
    public static int stat(MemorySegment callState, MemorySegment path, MemorySegment buf) {
        if (buf.byteSize() < STAT_BYTES) {
            throw new IndexOutOfBoundsException("stat into " + buf.byteSize() + " bytes");
        }
        try {
            return (int) Stat.STAT.invokeExact(callState, path, buf);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code fstat(fd, buf)}: the open file's own {@code struct stat}, whatever its path names now.
     *
     * @throws IndexOutOfBoundsException when {@code buf} is shorter than {@link #STAT_BYTES}
     */
    public static int fstat(MemorySegment callState, int fd, MemorySegment buf) {
        if (buf.byteSize() < STAT_BYTES) {
            throw new IndexOutOfBoundsException("fstat into " + buf.byteSize() + " bytes");
        }
        try {
            return (int) Fstat.FSTAT.invokeExact(callState, fd, buf);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code geteuid()}: the user whose files this process may write. */
    public static int geteuid() {
        try {
            return (int) Geteuid.GETEUID.invokeExact();
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    public static long lseek(MemorySegment callState, int fd, long offset, int whence) {
        try {
            return (long) LSEEK.invokeExact(callState, fd, offset, whence);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code flock}'s operations. A flock lock belongs to the open file description, not to the
     * process: two opens of one file in one process exclude each other as two processes do, and
     * closing another descriptor of the file leaves it held (unlike {@code fcntl} locks, and so
     * {@link java.nio.channels.FileChannel#lock}, which one close in the process drops).
     */
    public static final int LOCK_SH = 1;

    public static final int LOCK_EX = 2;
    public static final int LOCK_NB = 4;
    public static final int LOCK_UN = 8;
    /** {@code flock(LOCK_NB)} of a file that another description holds. */
    public static final int EWOULDBLOCK = 11;
    /** {@code st_dev} and {@code st_ino} in {@code struct stat}: the same on x86-64 and AArch64. */
    public static final long ST_DEV = 0;

    public static final long ST_INO = 8;

    /** {@code flock}, bound on first use: only a shard cache in a folder takes file locks. */
    private static final class Flock {
        static final MethodHandle FLOCK = Linker.nativeLinker()
                .downcallHandle(
                        Linker.nativeLinker().defaultLookup().findOrThrow("flock"),
                        FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT),
                        Linker.Option.captureCallState("errno"));

        private Flock() {}
    }

    /**
     * {@code flock(fd, operation)}: 0, or -1 with {@code errno} in {@code callState} ({@link
     * #EWOULDBLOCK} under {@link #LOCK_NB}, {@link #EINTR} when a signal cut a wait short).
     */
    public static int flock(MemorySegment callState, int fd, int operation) {
        try {
            return (int) Flock.FLOCK.invokeExact(callState, fd, operation);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code mallopt}'s parameters (glibc's {@code malloc.h}). */
    public static final int M_TRIM_THRESHOLD = -1;

    public static final int M_MMAP_THRESHOLD = -3;

    /**
     * {@code mallopt}, bound on first use, or null where the C library has none (glibc has it; musl
     * does not): only a process that sets its allocator's thresholds calls it.
     */
    private static final class Mallopt {
        static final MethodHandle MALLOPT = Linker.nativeLinker()
                .defaultLookup()
                .find("mallopt")
                .map(symbol -> Linker.nativeLinker()
                        .downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT)))
                .orElse(null);
    }

    /** Whether this C library has {@code mallopt}. */
    public static boolean hasMallopt() {
        return Mallopt.MALLOPT != null;
    }

    /**
     * {@code mallopt(param, value)}: 1 where the allocator took the value, 0 where it refused it.
     *
     * @throws UnsupportedOperationException where the C library has no {@code mallopt} ({@link #hasMallopt})
     */
    public static int mallopt(int param, int value) {
        if (Mallopt.MALLOPT == null) {
            throw new UnsupportedOperationException("this C library has no mallopt");
        }
        try {
            return (int) Mallopt.MALLOPT.invokeExact(param, value);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code strerror}, bound at its first call: only a failure needs it, and each distinct
     * signature costs a fresh JVM several milliseconds to link.
     */
    private static final class Errors {
        static final MethodHandle STRERROR = Linker.nativeLinker()
                .downcallHandle(
                        Linker.nativeLinker().defaultLookup().findOrThrow("strerror"),
                        FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    /** {@code open}'s flags for a new file: write only, made here or not at all. */
    public static final int O_WRONLY = 1;

    public static final int O_CREAT = 0100;
    public static final int O_EXCL = 0200;
    public static final int ENOENT = 2;
    /** {@code st_mode}'s type of a symbolic link. */
    public static final int S_IFLNK = 0120000;

    /**
     * {@code open} with a mode (a variadic call), {@code write}, {@code rename}, {@code unlink} and
     * {@code lstat}, bound on first use: only the restart cache's filers write files through them.
     * {@code lstat} as {@link StatBinding} finds {@code stat}: glibc before 2.33 exports only {@code __lxstat}.
     */
    private static final class Filing {
        static final MethodHandle OPEN_MODE;
        static final MethodHandle WRITE;
        static final MethodHandle RENAME;
        static final MethodHandle UNLINK;
        static final MethodHandle LSTAT = StatBinding.bind(Linker.nativeLinker().defaultLookup(), "lstat");

        static {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            Linker.Option errno = Linker.Option.captureCallState("errno");
            OPEN_MODE = linker.downcallHandle(
                    libc.findOrThrow("open"),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                    Linker.Option.firstVariadicArg(2),
                    errno);
            WRITE = linker.downcallHandle(
                    libc.findOrThrow("write"), FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), errno);
            RENAME = linker.downcallHandle(
                    libc.findOrThrow("rename"), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), errno);
            UNLINK = linker.downcallHandle(libc.findOrThrow("unlink"), FunctionDescriptor.of(JAVA_INT, ADDRESS), errno);
        }

        private Filing() {}
    }

    /**
     * {@code open(path, flags, mode)}: a file made with {@link #O_CREAT}, with {@code mode} less the
     * process's umask; {@code path} must be NUL-terminated.
     */
    public static int open(MemorySegment callState, MemorySegment path, int flags, int mode) {
        try {
            return (int) Filing.OPEN_MODE.invokeExact(callState, path, flags, mode);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code write(fd, buf, count)}: the bytes written (perhaps fewer), or -1 with {@code errno}.
     *
     * @throws IndexOutOfBoundsException when {@code buf} is shorter than {@code count}
     */
    public static long write(MemorySegment callState, int fd, MemorySegment buf, long count) {
        if (count < 0 || count > buf.byteSize()) {
            throw new IndexOutOfBoundsException("write of " + count + " bytes from " + buf.byteSize());
        }
        try {
            return (long) Filing.WRITE.invokeExact(callState, fd, buf, count);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code rename(from, to)}: replaces what {@code to} names (never what a link there points to). */
    public static int rename(MemorySegment callState, MemorySegment from, MemorySegment to) {
        try {
            return (int) Filing.RENAME.invokeExact(callState, from, to);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** {@code unlink(path)}: removes the name (a link itself, not what it points to). */
    public static int unlink(MemorySegment callState, MemorySegment path) {
        try {
            return (int) Filing.UNLINK.invokeExact(callState, path);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /**
     * {@code lstat(path, buf)}: what {@code path} names itself, a link not followed.
     *
     * @throws IndexOutOfBoundsException when {@code buf} is shorter than {@link #STAT_BYTES}
     */
    public static int lstat(MemorySegment callState, MemorySegment path, MemorySegment buf) {
        if (buf.byteSize() < STAT_BYTES) {
            throw new IndexOutOfBoundsException("lstat into " + buf.byteSize() + " bytes");
        }
        try {
            return (int) Filing.LSTAT.invokeExact(callState, path, buf);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }

    /** The C library's text for an errno value (not on the hot path: it allocates a String). */
    public static String strerror(int errno) {
        try {
            MemorySegment s = (MemorySegment) Errors.STRERROR.invokeExact(errno);
            return s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            throw TurboJpeg.rethrow(t);
        }
    }
}
