package io.stoke.ffm;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.zip.CRC32;

/**
 * Where the libraries a jar carries are put to be opened: one folder per user and per library's
 * bytes, {@code $XDG_CACHE_HOME/stoke/native/<SHA-256 of the bytes>/<file>} (else
 * {@code ~/.cache/stoke/native/...}), made once and reused by every later process. Nothing is
 * written to {@code /tmp}, so a process killed with {@code kill -9} leaves nothing behind there
 * (a temporary file deleted at exit was left by every such kill).
 *
 * <p>A folder is made whole or not at all: written as a temporary folder beside it and renamed into
 * place, so a process killed while extracting leaves no half-written library under the final name,
 * and two processes extracting at once both end with the one that was renamed first (the temporary
 * folder such a process leaves, {@code .<hash>.tmp-*}, is removed by the next extraction of that
 * library once it is a minute old). Folders are
 * {@code 0700} and the library {@code 0500}. What is found there is trusted only when it cannot
 * have been put there by another user: every folder from {@code stoke/} down is the caller's, no
 * symbolic link, and not writable by its group or others; the folder above is not writable by
 * others unless it is sticky; the library is the caller's regular file and holds exactly the jar's
 * bytes. Anything else is refused with an {@link IOException} naming the path and the reason.
 *
 * <p>Libraries that open each other by name (ONNX Runtime's library and its binding) share one
 * folder ({@link #folder}), named by their names, sizes and CRC-32s, and checked by those.
 */
final class LibraryCache {
    private static final Set<PosixFilePermission> FOLDER = PosixFilePermissions.fromString("rwx------");
    private static final Set<PosixFilePermission> WRITING = PosixFilePermissions.fromString("rw-------");
    private static final Set<PosixFilePermission> LIBRARY = PosixFilePermissions.fromString("r-x------");
    private static final int GROUP_OR_OTHERS_WRITE = 0022;
    private static final int OTHERS_WRITE = 0002;
    private static final int STICKY = 01000;
    private static final int TYPE_MASK = 0170000;
    private static final int TYPE_DIRECTORY = 0040000;
    private static final int TYPE_REGULAR = 0100000;
    private static final int TYPE_LINK = 0120000;
    /** How old a temporary folder of an extraction must be to be taken for abandoned. */
    static final long ABANDONED_MILLIS = 60_000;

    /** The folder the cache's {@code stoke/} lives in: {@code $XDG_CACHE_HOME} or {@code ~/.cache}. */
    private final Path base;

    LibraryCache(Path base) {
        this.base = base;
    }

    /**
     * This user's cache: in {@code $XDG_CACHE_HOME} when it is set to an absolute path (the XDG
     * base directory specification ignores a relative one), else in {@code ~/.cache}.
     */
    static LibraryCache forUser() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isEmpty() && Path.of(xdg).isAbsolute()
                ? Path.of(xdg)
                : Path.of(System.getProperty("user.home"), ".cache");
        return new LibraryCache(base);
    }

    /** {@code stoke/native} in the base folder: the content-addressed folders' parent. */
    Path root() {
        return base.resolve("stoke").resolve("native");
    }

    /**
     * The cached copy of a library, made now when there is none.
     *
     * @param name  its file name ({@code libstoke_pixels.so})
     * @param bytes its contents
     * @return the file to open
     * @throws IOException the cache cannot be made, or what is there is refused (the message names
     *     the path and why)
     */
    Path file(String name, byte[] bytes) throws IOException {
        checkBase();
        Path stoke = base.resolve("stoke");
        Path root = stoke.resolve("native");
        ownFolder(stoke);
        ownFolder(root);
        Path folder = root.resolve(sha256(bytes));
        if (!Files.exists(folder, LinkOption.NOFOLLOW_LINKS)) {
            extract(root, folder, name, bytes);
        }
        checkFolder(folder);
        Path file = folder.resolve(name);
        checkLibrary(file, bytes);
        return file;
    }

    /**
     * The cached copy of a folder of libraries that open each other by name (ONNX Runtime's library
     * and its Java binding's), made now when there is none: one folder named by the files' names,
     * sizes and CRC-32s, each file checked as {@link #file} checks its one, its bytes by their size
     * and CRC-32 (what a jar records of each entry, so a file's bytes need not be inflated to name
     * the folder). The bytes are streamed, never held whole: a library of hundreds of megabytes
     * costs no heap.
     *
     * @param files each file's name, size, CRC-32 and where its bytes are read from (only when the
     *     folder is made)
     * @return the folder
     * @throws IOException the cache cannot be made, a file cannot be read or does not hold what its
     *     size and CRC-32 say, or what is there is refused (the message names the path and why)
     */
    Path folder(Map<String, Contents> files) throws IOException {
        if (files.isEmpty()) {
            throw new IllegalArgumentException("a folder of no library");
        }
        MessageDigest key = sha256();
        for (Map.Entry<String, Contents> e : new TreeMap<>(files).entrySet()) {
            key.update((e.getKey() + "\0" + e.getValue().size() + "\0"
                            + e.getValue().crc32() + "\n")
                    .getBytes(StandardCharsets.UTF_8));
        }
        checkBase();
        Path stoke = base.resolve("stoke");
        Path root = stoke.resolve("native");
        ownFolder(stoke);
        ownFolder(root);
        Path folder = root.resolve(HexFormat.of().formatHex(key.digest()));
        if (!Files.exists(folder, LinkOption.NOFOLLOW_LINKS)) {
            Map<String, Contents.Source> sources = new TreeMap<>();
            files.forEach((name, contents) -> sources.put(name, contents.bytes()));
            extract(root, folder, sources);
        }
        checkFolder(folder);
        for (Map.Entry<String, Contents> e : files.entrySet()) {
            Path file = folder.resolve(e.getKey());
            checkFile(file);
            Contents found = Contents.of(() -> Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS));
            if (found.size() != e.getValue().size()
                    || found.crc32() != e.getValue().crc32()) {
                throw refused(file, "does not hold the library this jar carries (damaged?); remove " + folder);
            }
        }
        return folder;
    }

    /**
     * A file of a folder of libraries: its size and CRC-32, and where its bytes are read from.
     *
     * @param size  its bytes
     * @param crc32 their CRC-32
     * @param bytes where they are read from
     */
    record Contents(long size, long crc32, Source bytes) {
        /** Where a file's bytes are read from, as often as they are needed. */
        @FunctionalInterface
        interface Source {
            InputStream open() throws IOException;
        }

        /** The size and CRC-32 of what {@code bytes} reads, read through once. */
        static Contents of(Source bytes) throws IOException {
            CRC32 crc = new CRC32();
            long size = 0;
            byte[] buffer = new byte[1 << 16];
            try (InputStream in = bytes.open()) {
                for (int n; (n = in.read(buffer)) > 0; ) {
                    crc.update(buffer, 0, n);
                    size += n;
                }
            }
            return new Contents(size, crc.getValue(), bytes);
        }
    }

    /** Writes the library into a temporary folder beside {@code folder} and renames it into place. */
    private static void extract(Path root, Path folder, String name, byte[] bytes) throws IOException {
        extract(root, folder, Map.of(name, () -> new ByteArrayInputStream(bytes)));
    }

    /**
     * Writes the libraries (each file's name and where its bytes are read from) into a temporary
     * folder beside {@code folder} and renames it into place.
     */
    private static void extract(Path root, Path folder, Map<String, Contents.Source> files) throws IOException {
        String prefix = "." + folder.getFileName() + ".tmp-";
        removeAbandoned(root, prefix);
        Path tmp = Files.createTempDirectory(root, prefix, attributes(FOLDER));
        try {
            for (Map.Entry<String, Contents.Source> e : files.entrySet()) {
                Path file = tmp.resolve(e.getKey());
                Files.createFile(file, attributes(WRITING));
                try (InputStream in = e.getValue().open();
                        OutputStream out =
                                Files.newOutputStream(file, StandardOpenOption.WRITE, StandardOpenOption.SYNC)) {
                    in.transferTo(out);
                }
                Files.setPosixFilePermissions(file, LIBRARY);
            }
            try {
                Files.move(tmp, folder, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                if (!Files.exists(folder, LinkOption.NOFOLLOW_LINKS)) {
                    throw e;
                }
                // Another process renamed its copy first: that one is checked and used.
            }
        } finally {
            deleteTree(tmp);
        }
    }

    /**
     * Removes the temporary folders of this library that a process killed while extracting it left
     * (its final folder is then missing, so the next process comes here): those older than
     * {@link #ABANDONED_MILLIS}, which no live extraction (milliseconds) can still be writing.
     */
    private static void removeAbandoned(Path root, String prefix) throws IOException {
        long before = System.currentTimeMillis() - ABANDONED_MILLIS;
        try (var entries =
                Files.newDirectoryStream(root, e -> e.getFileName().toString().startsWith(prefix))) {
            for (Path tmp : entries) {
                long modified;
                try {
                    modified = Files.getLastModifiedTime(tmp, LinkOption.NOFOLLOW_LINKS)
                            .toMillis();
                } catch (java.nio.file.NoSuchFileException renamedOrRemoved) {
                    // A racing extraction renamed its folder into place (or removed it) between the
                    // listing and this look: nothing of it is left to remove.
                    continue;
                }
                if (modified < before) {
                    deleteTree(tmp);
                }
            }
        }
    }

    /**
     * A folder of the cache's own: made {@code 0700} when missing, else checked as what another user
     * cannot have made or changed.
     */
    private static void ownFolder(Path folder) throws IOException {
        try {
            Files.createDirectory(folder, attributes(FOLDER));
        } catch (FileAlreadyExistsException e) {
            // checked below, as every folder found
        }
        checkFolder(folder);
    }

    private static void checkFolder(Path folder) throws IOException {
        Map<String, Object> a = unix(folder);
        int mode = (Integer) a.get("mode");
        if ((mode & TYPE_MASK) == TYPE_LINK) {
            throw refused(folder, "is a symbolic link");
        }
        if ((mode & TYPE_MASK) != TYPE_DIRECTORY) {
            throw refused(folder, "is not a folder");
        }
        checkOwnerAndMode(folder, a);
    }

    private static void checkLibrary(Path file, byte[] bytes) throws IOException {
        Map<String, Object> a = checkFile(file);
        // The jar's bytes and no others: a copy damaged on disk (a crash before its blocks were
        // written) is not opened. The folder is named by these bytes' hash, so a newer jar never
        // finds an older library here.
        if ((Long) a.get("size") != bytes.length || !Arrays.equals(Files.readAllBytes(file), bytes)) {
            throw refused(file, "does not hold the library this jar carries (damaged?); remove " + file.getParent());
        }
    }

    /** A library found in the cache: the caller's regular file that no one else can write. */
    private static Map<String, Object> checkFile(Path file) throws IOException {
        Map<String, Object> a = unix(file);
        int mode = (Integer) a.get("mode");
        if ((mode & TYPE_MASK) != TYPE_REGULAR) {
            throw refused(file, (mode & TYPE_MASK) == TYPE_LINK ? "is a symbolic link" : "is not a regular file");
        }
        checkOwnerAndMode(file, a);
        return a;
    }

    private static void checkOwnerAndMode(Path path, Map<String, Object> a) throws IOException {
        int owner = (Integer) a.get("uid");
        int mode = (Integer) a.get("mode");
        if (owner != uid()) {
            throw refused(path, "belongs to user " + owner + ", not to this user (" + uid() + ")");
        }
        if ((mode & GROUP_OR_OTHERS_WRITE) != 0) {
            throw refused(path, "can be written by other users (mode " + Integer.toOctalString(mode & 07777) + ")");
        }
    }

    /** The folder above {@code stoke/}: whoever can write it can swap {@code stoke/} for their own. */
    private void checkBase() throws IOException {
        Files.createDirectories(base, attributes(FOLDER));
        int mode = (Integer) unix(base).get("mode");
        if ((mode & OTHERS_WRITE) != 0 && (mode & STICKY) == 0) {
            throw refused(base, "can be written by other users (mode " + Integer.toOctalString(mode & 07777) + ")");
        }
    }

    private static Map<String, Object> unix(Path path) throws IOException {
        return Files.readAttributes(path, "unix:mode,uid,size", LinkOption.NOFOLLOW_LINKS);
    }

    private static IOException refused(Path path, String why) {
        return new IOException(path + " " + why);
    }

    private static FileAttribute<Set<PosixFilePermission>> attributes(Set<PosixFilePermission> permissions) {
        return PosixFilePermissions.asFileAttribute(permissions);
    }

    static String sha256(byte[] bytes) {
        return HexFormat.of().formatHex(sha256().digest(bytes));
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every JDK has SHA-256", e);
        }
    }

    /** Removes a folder of files (no subfolders), as far as it exists. */
    static void deleteTree(Path folder) {
        try (var files = Files.list(folder)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.deleteIfExists(f);
            }
            Files.deleteIfExists(folder);
        } catch (NoSuchFileException e) {
            // renamed into place, or never made
        } catch (IOException e) {
            // best effort: what is left is in the cache's own folder, named .<hash>.tmp-*
        }
    }

    private static int uid() {
        return LibC.geteuid();
    }
}
