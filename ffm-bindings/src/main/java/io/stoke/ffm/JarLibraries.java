package io.stoke.ffm;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;

/**
 * Native libraries another project's jar carries, copied once into this user's cache of libraries
 * ({@link LibraryCache}: {@code ~/.cache/stoke/native/<hash>/}, checked as Stoke's own are) for
 * that project's loader to open from there, rather than from a copy in {@code /tmp} at every start.
 * No policy: which jar, which files and what the folder is given to are the caller's.
 *
 * <p>Each file is known by the size and CRC-32 its jar records, so a later process names and checks
 * the folder without inflating the jar's copy (22 MB of ONNX Runtime: 0.1 s); where the class is
 * not in a jar, the resource is read through once for them.
 */
public final class JarLibraries {
    private JarLibraries() {}

    /**
     * The cached folder holding {@code names}, read from {@code owner}'s jar at {@code folder}.
     *
     * @param owner  a class of the jar, whose resources are read through it
     * @param folder the resources' folder, absolute and ending in {@code /}
     *     ({@code /ai/onnxruntime/native/linux-x64/})
     * @param names  the files to copy, each of which the jar must hold
     * @return the folder, holding exactly those files
     * @throws IOException a file is not in the jar, the cache cannot be made, or what is there is
     *     refused (the message names the path and why)
     */
    public static Path cache(Class<?> owner, String folder, List<String> names) throws IOException {
        if (!folder.startsWith("/") || !folder.endsWith("/")) {
            throw new IllegalArgumentException("not an absolute resource folder: " + folder);
        }
        Path jar = jarOf(owner);
        Map<String, LibraryCache.Contents> files = new TreeMap<>();
        try (JarFile recorded = jar != null ? new JarFile(jar.toFile()) : null) {
            for (String name : names) {
                String resource = folder + name;
                LibraryCache.Contents.Source bytes = () -> {
                    InputStream in = owner.getResourceAsStream(resource);
                    if (in == null) {
                        throw new IOException(resource + " is not in " + owner.getName() + "'s jar");
                    }
                    return in;
                };
                ZipEntry entry = recorded != null ? recorded.getEntry(resource.substring(1)) : null;
                files.put(
                        name,
                        entry != null && entry.getSize() >= 0 && entry.getCrc() >= 0
                                ? new LibraryCache.Contents(entry.getSize(), entry.getCrc(), bytes)
                                : LibraryCache.Contents.of(bytes));
            }
        }
        return LibraryCache.forUser().folder(files);
    }

    /** The jar {@code owner} was loaded from, or null (a folder of classes, a runtime image). */
    private static Path jarOf(Class<?> owner) {
        CodeSource source = owner.getProtectionDomain().getCodeSource();
        URL url = source != null ? source.getLocation() : null;
        if (url == null || !"file".equals(url.getProtocol())) {
            return null;
        }
        try {
            Path path = Path.of(url.toURI());
            return Files.isRegularFile(path) ? path : null;
        } catch (URISyntaxException | IllegalArgumentException e) {
            return null;
        }
    }
}
