package io.stoke.spark;

import io.stoke.loader.internal.SafeFiles;
import io.stoke.remote.ObjectStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Set;
import java.util.TreeSet;

/**
 * Output in a local folder, or a shared one (NFS, a cluster file system) that every executor
 * mounts at the same path. A marker is created by a hard link from the attempt's own finished
 * marker file: the link is made only where no file of that name is, atomically, so of two
 * attempts exactly one gets it, and a marker is never seen half written. The table is then put in
 * place by a rename within the folder, also atomic.
 */
final class LocalTableStore implements TableStore {
    private final Path out;

    LocalTableStore(Path out) {
        this.out = out.toAbsolutePath();
        try {
            Files.createDirectories(this.out.resolve(COMMITTED));
            Files.createDirectories(this.out.resolve(ATTEMPTS));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the output folder " + out, e);
        }
    }

    @Override
    public Path attemptFolder(long attemptId) {
        return out.resolve(ATTEMPTS);
    }

    @Override
    public boolean commit(String table, Path file, CommitMarker marker) {
        Path markerFile = markerFile(table);
        Path own = file.resolveSibling(file.getFileName() + ".marker");
        try {
            // Made anew with O_EXCL|O_NOFOLLOW: a link planted at the name is removed, never written through.
            Files.deleteIfExists(own);
            try (java.nio.channels.FileChannel ch = SafeFiles.createNew(own)) {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(marker.toJson());
                while (b.hasRemaining()) {
                    ch.write(b);
                }
            }
            boolean won;
            try {
                Files.createLink(markerFile, own);
                won = true;
            } catch (FileAlreadyExistsException e) {
                won = false;
            } finally {
                Files.deleteIfExists(own);
            }
            if (won) {
                Files.move(
                        file, out.resolve(table), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } else {
                Files.deleteIfExists(file);
            }
            return won;
        } catch (IOException e) {
            throw new UncheckedIOException("committing " + table + " in " + out, e);
        }
    }

    private Path markerFile(String table) {
        return out.resolve(COMMITTED).resolve(table + ".json");
    }

    @Override
    public boolean isCommitted(String table) {
        return Files.exists(markerFile(table));
    }

    @Override
    public Set<String> committed() {
        Set<String> tables = new TreeSet<>();
        for (String name : list(out.resolve(COMMITTED))) {
            if (name.endsWith(".json")) {
                tables.add(name.substring(0, name.length() - 5));
            }
        }
        return tables;
    }

    @Override
    public Set<String> tables() {
        Set<String> tables = new TreeSet<>();
        for (String name : list(out)) {
            if (name.endsWith(".parquet")) {
                tables.add(name);
            }
        }
        return tables;
    }

    private static Set<String> list(Path dir) {
        Set<String> names = new TreeSet<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path p : entries) {
                String name = p.getFileName().toString();
                if (!name.startsWith(".") && !name.startsWith("_") && Files.isRegularFile(p)) {
                    names.add(name);
                }
            }
        } catch (NoSuchFileException e) {
            return names;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
        return names;
    }

    @Override
    public CommitMarker marker(String table) {
        Path file = markerFile(table);
        try {
            return CommitMarker.fromJson(Files.readAllBytes(file), file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    @Override
    public boolean repair(String table) {
        CommitMarker m = marker(table);
        try {
            if (m.attemptFile() != null && Files.isRegularFile(out.resolve(m.attemptFile()))) {
                Files.move(
                        out.resolve(m.attemptFile()),
                        out.resolve(table),
                        StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
                return true;
            }
            Files.deleteIfExists(markerFile(table));
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException("repairing " + table + " in " + out, e);
        }
    }

    /** The attempt's file as a marker names it: relative to the output, so a moved folder still reads. */
    @Override
    public String attemptName(Path file) {
        return out.relativize(file.toAbsolutePath()).toString();
    }

    @Override
    public void writeManifest(byte[] json) {
        try {
            // An exclusive temporary file renamed into place: a link planted at a name is never written through.
            SafeFiles.writeAtomically(out.resolve(MANIFEST), null, ch -> {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(json);
                while (b.hasRemaining()) {
                    ch.write(b);
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + out.resolve(MANIFEST), e);
        }
    }

    @Override
    public String atMostOnceCaveat() {
        return null;
    }

    @Override
    public long size(String table) {
        try {
            return Files.size(out.resolve(table));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the size of " + out.resolve(table), e);
        }
    }

    @Override
    public String location() {
        return out.toAbsolutePath().toString();
    }

    @Override
    public ObjectStore objectStore() {
        return null;
    }

    @Override
    public String where() {
        return out.toString();
    }

    @Override
    public void close() {}
}
