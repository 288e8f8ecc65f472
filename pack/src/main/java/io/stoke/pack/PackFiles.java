package io.stoke.pack;

import io.stoke.loader.internal.SafeFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/** The names of a pack's files in its folder, and the file-system steps that make each one appear whole. */
public final class PackFiles {
    /** The manifest: a shard catalog in WebDataset's wids format, with Stoke's fields. */
    public static final String MANIFEST = "index.json";

    // A whole shard, one being written (SafeFiles' temporary name), or one an older Stoke left as .tmp.
    private static final Pattern SHARD =
            Pattern.compile("shard-\\d{6,}\\.tar(\\.tmp)?|\\.shard-\\d{6,}\\.tar\\.\\d+\\.[0-9a-f]+\\.tmp");

    private PackFiles() {}

    /** Shard {@code n}'s file name: {@code shard-000000.tar}. */
    public static String shardName(int n) {
        return String.format(Locale.ROOT, "shard-%06d.tar", n);
    }

    /** The shard files (whole or being written) in {@code dir}, sorted by name. */
    public static List<Path> shardFiles(Path dir) {
        List<Path> found = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return found;
        }
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            for (Path p : s) {
                if (SHARD.matcher(p.getFileName().toString()).matches()) {
                    found.add(p);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir + ": " + e.getMessage(), e);
        }
        found.sort(null);
        return found;
    }

    /**
     * Writes {@code bytes} to {@code target} through an exclusive temporary file ({@link
     * SafeFiles#writeAtomically}), forced to disk, then renamed over it: a link planted at the name,
     * or at any name the temporary file could take, is replaced or refused, never followed.
     */
    static void writeAtomically(Path target, byte[] bytes) {
        try {
            SafeFiles.writeAtomically(target, null, ch -> {
                ByteBuffer b = ByteBuffer.wrap(bytes);
                while (b.hasRemaining()) {
                    ch.write(b);
                }
            });
            forceFolder(target.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + target + ": " + e.getMessage(), e);
        }
    }

    /** Forces a folder's entries (a rename into it) to disk. */
    static void forceFolder(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }
}
