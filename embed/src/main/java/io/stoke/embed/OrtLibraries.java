package io.stoke.embed;

import ai.onnxruntime.OrtEnvironment;
import io.stoke.ffm.JarLibraries;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * Where ONNX Runtime's Java API opens its native libraries from: Stoke's cache of libraries, not a
 * new folder in {@code /tmp} per process.
 *
 * <p>Left to itself, the Java API (1.23) copies {@code libonnxruntime.so} and its binding (22 MB)
 * out of its jar into a new {@code /tmp/onnxruntime-java*} folder at every start. It asks for the
 * folder's deletion at exit before its files', so every process leaves the folder behind, empty,
 * and a process killed with {@code kill -9} (a preempted Spark executor, the OOM killer) leaves the
 * 22 MB too. Here they are copied once into {@code ~/.cache/stoke/native/<hash>/} (checked as Stoke's
 * own libraries are) and that folder is named in {@value #PROPERTY}, which the Java API opens them
 * from before anything of it is loaded.
 *
 * <p>Left as the Java API does it, and said nowhere else: a {@value #PROPERTY} set by the user; a
 * jar that carries execution providers beside the library ({@code onnxruntime_gpu}: it copies those
 * from its jar into its own folder whatever the property says, and the library opens them from
 * the folder it lies in, so the two must stay together); a platform other than Linux on x86-64 or
 * aarch64. Where the cache cannot be had, that is said once and the Java API copies them itself.
 */
final class OrtLibraries {
    /** The Java API's system property naming the folder its libraries are opened from. */
    static final String PROPERTY = "onnxruntime.native.path";

    private static final List<String> LIBRARIES = List.of("libonnxruntime.so", "libonnxruntime4j_jni.so");
    /** What the GPU package carries beside the library, and the CPU package does not. */
    private static final String PROVIDERS = "libonnxruntime_providers_shared.so";

    private static boolean prepared;
    /** Whether {@link #prepare} named the cache's folder, so the Java API wrote nothing to its own. */
    private static boolean cached;

    private static boolean tidied;

    private OrtLibraries() {}

    /**
     * Names the cached folder in {@value #PROPERTY}, once per process, before the Java API loads.
     *
     * @param say where the one sentence goes when the cache cannot be had
     */
    static synchronized void prepare(Consumer<String> say) {
        if (prepared) {
            return;
        }
        prepared = true;
        if (System.getProperty(PROPERTY) != null) {
            return;
        }
        String folder = platformFolder();
        if (folder == null
                || OrtEnvironment.class.getResource(folder + LIBRARIES.get(0)) == null
                || OrtEnvironment.class.getResource(folder + PROVIDERS) != null) {
            return;
        }
        try {
            System.setProperty(
                    PROPERTY,
                    JarLibraries.cache(OrtEnvironment.class, folder, LIBRARIES).toString());
            cached = true;
        } catch (IOException | RuntimeException e) {
            say.accept("stoke: WARNING: ONNX Runtime's libraries are not cached (" + e.getMessage()
                    + "): its Java API copies them into a folder of its own in "
                    + System.getProperty("java.io.tmpdir") + " at each start, and leaves that folder there");
        }
    }

    /**
     * Removes the Java API's own temporary folder, once, after it has loaded. It makes that folder at
     * its start whatever {@value #PROPERTY} says, and asks for its deletion only at exit; where the
     * libraries came from the cache the folder stays empty, and a process that ends without its exit
     * hooks (kill -9, a preempted executor, the OOM killer) would leave it in {@code java.io.tmpdir}.
     *
     * <p>The folder is in a private field of the Java API ({@code OnnxRuntime.tempDirectory}, 1.23),
     * read by reflection: its package is open, as an automatic module's or the class path's are.
     * Where a later version has no such field, or the folder holds something, it is left as the
     * Java API leaves it (removed at a normal exit); nothing else depends on this.
     */
    static synchronized void tidy() {
        if (!cached || tidied) {
            return;
        }
        tidied = true;
        try {
            Field field = Class.forName("ai.onnxruntime.OnnxRuntime").getDeclaredField("tempDirectory");
            field.setAccessible(true);
            if (field.get(null) instanceof Path own
                    && own.getFileName().toString().startsWith("onnxruntime-java")) {
                Files.deleteIfExists(own); // refused where not empty (DirectoryNotEmptyException)
            }
        } catch (ReflectiveOperationException | IOException | RuntimeException e) {
            // left to the Java API's deletion at exit
        }
    }

    /** The jar's folder of this platform's libraries, as the Java API names it; null where it is not Linux. */
    private static String platformFolder() {
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
            return null;
        }
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        return switch (arch) {
            case "amd64", "x86_64" -> "/ai/onnxruntime/native/linux-x64/";
            case "aarch64" -> "/ai/onnxruntime/native/linux-aarch64/";
            default -> null;
        };
    }
}
