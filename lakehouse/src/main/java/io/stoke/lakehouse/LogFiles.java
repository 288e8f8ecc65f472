package io.stoke.lakehouse;

import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Datasets;
import io.stoke.remote.ObjectStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Where a table's log is written, when Stoke appends files to a table ({@link OutputTable}): local
 * files through NIO, objects under {@code s3://} through stoke-remote's {@link ObjectStore}. A log's
 * next version is created at most once ({@link #createOnce}): of two writers racing to the same
 * version one wins and the other reads the table again, the contract both Delta Lake's and
 * Iceberg's logs rest on. Nothing is written over HTTP, which has no writes.
 */
final class LogFiles {
    private final ObjectStore store; // null: local files only

    /** @param store where URLs are written (null: local files only) */
    LogFiles(ObjectStore store) {
        this.store = store;
    }

    /**
     * Creates {@code path} holding {@code bytes} where nothing is; false, writing nothing, where
     * something is. Locally the bytes are written to a file of their own, then linked at the name
     * ({@code link(2)} fails where the name exists), so no reader sees a half-written version. On
     * S3, a conditional PUT ({@code If-None-Match: *}).
     */
    boolean createOnce(String path, byte[] bytes) {
        if (Datasets.isUrl(path)) {
            try {
                return remote(path).create(path, bytes);
            } catch (UnsupportedOperationException e) {
                throw new IllegalArgumentException(
                        Urls.redact(path) + ": the store does not support conditional"
                                + " writes (If-None-Match: *), by which a table's log creates each version once: not written",
                        e);
            }
        }
        Path target = PositionedFile.local(path);
        Path written = null;
        try {
            Files.createDirectories(target.getParent());
            written = Files.createTempFile(target.getParent(), "." + target.getFileName(), ".tmp");
            Files.write(written, bytes);
            Files.createLink(target, written);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + path + ": " + e.getMessage(), e);
        } finally {
            if (written != null) {
                try {
                    Files.deleteIfExists(written);
                } catch (IOException e) {
                    // a stray hidden file beside the log: readers of the log skip it
                }
            }
        }
    }

    /**
     * Writes {@code path} whole, replacing what is there: for what only points into the log (Iceberg's
     * {@code version-hint.text}) and for files of unique names (manifests). Locally by a rename of a
     * file of its own over the name, so a reader sees the old bytes or the new.
     */
    void replace(String path, byte[] bytes) {
        if (Datasets.isUrl(path)) {
            remote(path).write(path, bytes);
            return;
        }
        Path target = PositionedFile.local(path);
        try {
            Files.createDirectories(target.getParent());
            Path written = Files.createTempFile(target.getParent(), "." + target.getFileName(), ".tmp");
            try {
                Files.write(written, bytes, StandardOpenOption.TRUNCATE_EXISTING);
                Files.move(written, target, StandardCopyOption.ATOMIC_MOVE);
            } finally {
                Files.deleteIfExists(written);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + path + ": " + e.getMessage(), e);
        }
    }

    private ObjectStore remote(String url) {
        if (store == null || !url.startsWith("s3://")) {
            throw new IllegalArgumentException(
                    Urls.redact(url) + ": Stoke writes a table's log to local files and s3:// only");
        }
        return store;
    }
}
