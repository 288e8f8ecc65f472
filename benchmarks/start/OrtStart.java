/*
 * What opening ONNX Runtime costs a fresh JVM (docs/benchmarks/cold-start.md): "jar", the Java API
 * copying its libraries out of its jar into a new java.io.tmpdir folder, as it does by itself; or
 * "cache", Stoke's library cache (JarLibraries: the jar's recorded sizes and CRC-32s, the cached
 * copies checked against them) named in onnxruntime.native.path first. Prints both parts' wall time.
 * Run it outside the build, each as a fresh process, after one "cache" run has made the copy:
 *
 *   ORT=~/.m2/repository/com/microsoft/onnxruntime/onnxruntime/1.23.2/onnxruntime-1.23.2.jar
 *   javac -cp ffm-bindings/target/classes:$ORT -d /tmp/ort-start benchmarks/start/OrtStart.java
 *   java --enable-native-access=ALL-UNNAMED -cp /tmp/ort-start:ffm-bindings/target/classes:$ORT OrtStart jar
 *   (then: ... OrtStart cache)
 */
import io.stoke.ffm.JarLibraries;
import java.util.List;

/** Opens ONNX Runtime's environment in a fresh JVM, from its jar's copy in /tmp or from Stoke's cache. */
public class OrtStart {
    public static void main(String[] a) throws Exception {
        long t0 = System.nanoTime();
        if (a[0].equals("cache")) {
            System.setProperty(
                    "onnxruntime.native.path",
                    JarLibraries.cache(
                                    ai.onnxruntime.OrtEnvironment.class,
                                    "/ai/onnxruntime/native/linux-x64/",
                                    List.of("libonnxruntime.so", "libonnxruntime4j_jni.so"))
                            .toString());
        }
        long t1 = System.nanoTime();
        ai.onnxruntime.OrtEnvironment.getEnvironment();
        long t2 = System.nanoTime();
        System.out.printf(
                "%s: cache %.0f ms, ONNX Runtime's start %.0f ms, together %.0f ms%n",
                a[0], (t1 - t0) / 1e6, (t2 - t1) / 1e6, (t2 - t0) / 1e6);
    }
}
