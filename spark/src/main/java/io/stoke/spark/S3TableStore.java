package io.stoke.spark;

import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

/**
 * Output under an {@code s3://} prefix. An attempt writes its table to a local file; its commit
 * creates the marker by a conditional PUT ({@code If-None-Match: *}), which of several attempts
 * exactly one wins, and the winner then PUTs its table. A table is one object per shard, written
 * whole by one PUT, so a reader never sees part of one, nor two attempts' rows for one shard.
 *
 * <p>A store without conditional writes (older S3-compatible servers answer 501) is used with a
 * HEAD before the marker's plain PUT: two attempts that race past the HEAD both write the shard's
 * one table object, the last one standing, so rows are still never duplicated; the driver says so
 * once ({@link #atMostOnceCaveat}).
 */
final class S3TableStore implements TableStore {
    private final ObjectStore store;
    private final String prefix;
    /** The local folders this store made for its attempts: removed at {@link #close}, whatever the attempt's end. */
    private final List<Path> folders = new ArrayList<>();

    private S3TableStore(ObjectStore store, String prefix) {
        this.store = store;
        this.prefix = prefix;
    }

    static S3TableStore open(String out) {
        String prefix = out.endsWith("/") ? out : out + "/";
        return new S3TableStore(ObjectStore.forUrl(prefix, RemoteOptions.defaults()), prefix);
    }

    @Override
    public Path attemptFolder(long attemptId) {
        try {
            Path folder = Files.createTempDirectory("stoke-spark-" + attemptId + "-");
            folders.add(folder);
            return folder;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a local folder for a task's table", e);
        }
    }

    @Override
    public String attemptName(Path file) {
        return null;
    }

    @Override
    public boolean commit(String table, Path file, CommitMarker marker) {
        String markerUrl = prefix + COMMITTED + table + ".json";
        try {
            boolean won;
            try {
                won = store.create(markerUrl, marker.toJson());
            } catch (UnsupportedOperationException e) {
                won = !exists(markerUrl);
                if (won) {
                    store.write(markerUrl, marker.toJson());
                }
            }
            if (won) {
                store.write(prefix + table, Files.readAllBytes(file));
            }
            return won;
        } catch (IOException e) {
            throw new UncheckedIOException("committing " + table + " to " + prefix, e);
        } finally {
            deleteLocal(file);
        }
    }

    private static void deleteLocal(Path file) {
        try {
            Files.deleteIfExists(file);
            Files.deleteIfExists(file.getParent());
        } catch (IOException e) {
            // a temporary folder left behind; the commit's outcome stands
        }
    }

    private boolean exists(String url) {
        return !store.list(url, "").isEmpty();
    }

    @Override
    public boolean isCommitted(String table) {
        return exists(prefix + COMMITTED + table + ".json");
    }

    @Override
    public Set<String> committed() {
        Set<String> tables = new TreeSet<>();
        for (String url : store.list(prefix + COMMITTED, ".json")) {
            String name = url.substring(url.lastIndexOf('/') + 1);
            if (!name.startsWith(".")) {
                tables.add(name.substring(0, name.length() - 5));
            }
        }
        return tables;
    }

    @Override
    public Set<String> tables() {
        Set<String> tables = new TreeSet<>();
        for (String url : store.list(prefix, ".parquet")) {
            String rest = url.substring(prefix.length());
            if (rest.indexOf('/') < 0 && !rest.startsWith("_") && !rest.startsWith(".")) {
                tables.add(rest);
            }
        }
        return tables;
    }

    @Override
    public CommitMarker marker(String table) {
        String url = prefix + COMMITTED + table + ".json";
        return CommitMarker.fromJson(store.readBytes(url), url);
    }

    @Override
    public boolean repair(String table) {
        // The winner's table lived in its executor's temporary folder: nothing to put in place.
        store.delete(prefix + COMMITTED + table + ".json");
        return false;
    }

    @Override
    public void writeManifest(byte[] json) {
        store.write(prefix + MANIFEST, json);
    }

    @Override
    public String atMostOnceCaveat() {
        String probe = prefix + COMMITTED + ".probe-" + UUID.randomUUID();
        try {
            // Bytes of each writer's own: a retried create recognises its own object by them.
            boolean first = store.create(probe, new byte[] {1});
            boolean second = store.create(probe, new byte[] {2});
            if (first && !second) {
                return null;
            }
            return "WARNING: " + prefix + " accepted a conditional PUT (If-None-Match: *) over an existing object:"
                    + " it ignores the header, so two attempts of one shard may both commit; each writes the"
                    + " shard's one table object whole, so no row is duplicated, but the marker is the last"
                    + " attempt's";
        } catch (UnsupportedOperationException e) {
            return "WARNING: " + prefix + " does not support conditional writes (If-None-Match: *): a shard's"
                    + " marker is created after a HEAD finds none, so two attempts racing past it may both"
                    + " commit; each writes the shard's one table object whole, so no row is duplicated, the"
                    + " last write stands";
        } finally {
            store.delete(probe);
        }
    }

    @Override
    public long size(String table) {
        return store.size(prefix + table);
    }

    @Override
    public String location() {
        return prefix;
    }

    @Override
    public ObjectStore objectStore() {
        return store;
    }

    @Override
    public String where() {
        return prefix;
    }

    /**
     * Closes the object store and removes the attempt folders this store made that are still there:
     * a failed attempt's, with what it left in it (its table's partial file), which no one else
     * reads. A committed attempt's was removed at its commit.
     */
    @Override
    public void close() {
        try {
            for (Path folder : folders) {
                removeFolder(folder);
            }
        } finally {
            store.close();
        }
    }

    private static void removeFolder(Path folder) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(folder)) {
            for (Path file : files) {
                Files.deleteIfExists(file); // an attempt's files only: a link is removed, not followed
            }
            Files.deleteIfExists(folder);
        } catch (NoSuchFileException e) {
            // removed at the commit
        } catch (IOException e) {
            System.err.println("stoke spark-embed: WARNING: cannot remove the attempt folder " + folder + ": " + e);
        }
    }
}
