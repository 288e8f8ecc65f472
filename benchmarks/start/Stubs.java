/*
 * What a distinct downcall signature costs a fresh JVM (docs/benchmarks/cold-start.md): links 13
 * stubs of libc symbols, either with 13 distinct signatures ("distinct") or all with one, int f(void *)
 * ("shared": what a parameter block would give), and prints the linking's wall time. Nothing is
 * called. Run it outside the build, as a fresh process, C1 only as Stoke runs:
 *
 *   javac -d /tmp/stubs benchmarks/start/Stubs.java      (JDK 22 or later)
 *   /usr/bin/time -f '%U+%S s CPU' java -XX:TieredStopAtLevel=1 --enable-native-access=ALL-UNNAMED \
 *       -cp /tmp/stubs Stubs distinct      (then: ... Stubs shared)
 */
import java.lang.foreign.*;
import java.lang.invoke.MethodHandle;
import static java.lang.foreign.ValueLayout.*;

/** Links 13 downcall stubs in a fresh JVM: 13 distinct signatures, or 13 symbols of one (a parameter block). */
public class Stubs {
    public static void main(String[] a) throws Throwable {
        Linker l = Linker.nativeLinker();
        SymbolLookup c = l.defaultLookup();
        String[] syms = {
            "abs", "labs", "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "rand", "sync", "sleep",
            "alarm", "umask"
        };
        MemoryLayout[] pool = {
            ADDRESS, JAVA_INT, JAVA_LONG, JAVA_FLOAT, ADDRESS, JAVA_INT,
            JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT
        };
        long t = System.nanoTime();
        MethodHandle[] h = new MethodHandle[13];
        for (int i = 0; i < 13; i++) {
            FunctionDescriptor d;
            if (a[0].equals("distinct")) {
                MemoryLayout[] args = new MemoryLayout[3 + i % 8];
                for (int k = 0; k < args.length; k++) args[k] = pool[(k + i) % pool.length];
                d = FunctionDescriptor.of(JAVA_INT, args);
            } else {
                d = FunctionDescriptor.of(JAVA_INT, ADDRESS); // int f(const struct args *)
            }
            h[i] = l.downcallHandle(c.findOrThrow(syms[i]), d);
        }
        long wall = System.nanoTime() - t;
        System.out.printf("%s: 13 stubs linked in %.1f ms%n", a[0], wall / 1e6);
    }
}
