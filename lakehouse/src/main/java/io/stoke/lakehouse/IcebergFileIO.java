package io.stoke.lakehouse;

import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Datasets;
import io.stoke.remote.LakehouseMarkers;
import io.stoke.remote.ObjectStore;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * Iceberg's file access, read-only, over Stoke's own: local files and {@code file:} URIs through
 * NIO, objects at {@code s3://} and {@code http(s)://} through stoke-remote's {@link ObjectStore}
 * (ranged GETs, with its retries and credentials), so a table's metadata, manifest lists and
 * manifests are read with no Hadoop file system. A table whose files were copied elsewhere (its
 * metadata names the location it was written at) is read where it was opened: each path under the
 * written location is taken under the opened one ({@link #relocated}). A table at a URL reads no
 * local file its metadata names. Reading a table, anything that would write is refused; appending
 * to one ({@link OutputTable}), new files (manifests, manifest lists) are written whole through
 * {@link LogFiles} when their stream closes, and nothing is deleted.
 */
final class IcebergFileIO implements FileIO {
    private final ObjectStore store; // null: local files only
    private final String writtenAt; // with its trailing '/', or null: paths are read as they are
    private final String openedAt;
    private final LogFiles log; // null: reads only

    /**
     * @param store where URLs are read (null: local files only)
     * @param writtenAt the table's location as its metadata names it, or null
     * @param openedAt where the table was opened, for paths under {@code writtenAt}
     */
    IcebergFileIO(ObjectStore store, String writtenAt, String openedAt) {
        this(store, writtenAt, openedAt, null);
    }

    /** As {@link #IcebergFileIO(ObjectStore, String, String)}, writing new files through {@code log} (null: reads only). */
    IcebergFileIO(ObjectStore store, String writtenAt, String openedAt, LogFiles log) {
        this.log = log;
        this.store = store;
        this.writtenAt = writtenAt == null ? null : slashed(writtenAt);
        this.openedAt = openedAt == null ? null : slashed(openedAt);
    }

    /** Whether the table is read elsewhere than where it was written. */
    boolean relocates() {
        return writtenAt != null && openedAt != null && !writtenAt.equals(openedAt);
    }

    /**
     * Where {@code path}, as the table's metadata names it, is read: under where the table was
     * opened when it lies under where it was written, else where it says; in {@link #canonical} form.
     */
    String relocated(String path) {
        String p = canonical(path);
        String at = relocates() && p.startsWith(writtenAt) ? openedAt + p.substring(writtenAt.length()) : p;
        if (store != null && at.startsWith("file:")) {
            // A table at a URL reads no file of this machine's that its metadata names.
            throw new IllegalArgumentException(
                    path + " is a local file, named by the metadata of a table at a URL:" + " not read");
        }
        if (!at.startsWith("file:") && !Datasets.isUrl(at)) {
            throw new IllegalArgumentException(Urls.redact(path) + " is in a store Stoke does not read ("
                    + at.substring(0, at.indexOf("://") + 3) + "): Stoke reads local files, s3:// and http(s)://;"
                    + " a copy of the table opened elsewhere reads the paths under where it was written from there");
        }
        return at;
    }

    /**
     * {@code path} in one spelling per place: Hadoop's {@code s3a://} and {@code s3n://} as
     * {@code s3://} (Spark's Iceberg tables on S3 are often written through S3A), a URL as it is
     * (another store's too: {@code gs://}, {@code abfss://}), a local path or {@code file:} URI as
     * {@code file:/a/b}.
     */
    static String canonical(String path) {
        if (path.startsWith("s3a://") || path.startsWith("s3n://")) {
            return "s3://" + path.substring(6);
        }
        int scheme = path.indexOf("://");
        boolean url = Datasets.isUrl(path)
                || (scheme > 0
                        && !path.startsWith("file:")
                        && path.substring(0, scheme).chars().allMatch(Character::isLetterOrDigit));
        return url ? path : fileUri(path);
    }

    @Override
    public InputFile newInputFile(String path) {
        return newInputFile(path, -1);
    }

    @Override
    public InputFile newInputFile(String path, long length) {
        String at = relocated(path);
        return new InputFile() {
            private long size = length;

            @Override
            public long getLength() {
                if (size < 0) {
                    size = sizeOf(at);
                }
                return size;
            }

            @Override
            public SeekableInputStream newStream() {
                try {
                    return new Stream(PositionedFile.open(at, Datasets.isUrl(at) ? getLength() : -1, store));
                } catch (NoSuchFileException e) {
                    throw new NotFoundException(e, "%s does not exist", at);
                } catch (IOException e) {
                    throw new UncheckedIOException(at + ": " + e.getMessage(), e);
                }
            }

            @Override
            public String location() {
                return path;
            }

            @Override
            public boolean exists() {
                if (Datasets.isUrl(at)) {
                    return store != null && LakehouseMarkers.statIfThere(store, at) != null;
                }
                return Files.isRegularFile(PositionedFile.local(at));
            }
        };
    }

    private long sizeOf(String at) {
        if (Datasets.isUrl(at)) {
            if (store == null) {
                throw new IllegalStateException(at + " is a URL in a local table's metadata: not read");
            }
            ObjectStore.Stat stat = LakehouseMarkers.statIfThere(store, at);
            if (stat == null) {
                throw new NotFoundException("%s does not exist", at);
            }
            return stat.size();
        }
        try {
            return Files.size(PositionedFile.local(at));
        } catch (NoSuchFileException e) {
            throw new NotFoundException(e, "%s does not exist", at);
        } catch (IOException e) {
            throw new UncheckedIOException(at + ": " + e.getMessage(), e);
        }
    }

    @Override
    public OutputFile newOutputFile(String path) {
        if (log == null) {
            throw readOnly(path);
        }
        String at = relocated(path);
        return new OutputFile() {
            @Override
            public PositionOutputStream create() {
                if (newInputFile(at).exists()) {
                    throw new AlreadyExistsException("%s exists", at);
                }
                return createOrOverwrite();
            }

            @Override
            public PositionOutputStream createOrOverwrite() {
                // Manifests and manifest lists: kilobytes, of names no other writer uses.
                return new PositionOutputStream() {
                    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                    private boolean closed;

                    @Override
                    public long getPos() {
                        return bytes.size();
                    }

                    @Override
                    public void write(int b) {
                        bytes.write(b);
                    }

                    @Override
                    public void write(byte[] b, int off, int len) {
                        bytes.write(b, off, len);
                    }

                    @Override
                    public void close() {
                        if (!closed) {
                            closed = true;
                            log.replace(at, bytes.toByteArray());
                        }
                    }
                };
            }

            @Override
            public String location() {
                return path; // as the table names it (what Iceberg records), not as it is reached
            }

            @Override
            public InputFile toInputFile() {
                return newInputFile(path);
            }
        };
    }

    @Override
    public void deleteFile(String path) {
        throw readOnly(path);
    }

    private static UnsupportedOperationException readOnly(String path) {
        return new UnsupportedOperationException("Stoke reads tables and writes none: not writing " + path);
    }

    /** A location in {@link #canonical} form with one trailing '/'. */
    static String slashed(String location) {
        String s = canonical(location);
        return s.endsWith("/") ? s : s + "/";
    }

    /** A local path or {@code file:} URI ({@code file:/a}, {@code file:///a}) as one spelling, {@code file:/a}. */
    static String fileUri(String path) {
        return PositionedFile.local(path)
                .toAbsolutePath()
                .normalize()
                .toUri()
                .toString()
                .replaceFirst("^file:///", "file:/");
    }

    /** Iceberg's stream over a {@link PositionedFile}. */
    private static final class Stream extends SeekableInputStream {
        private final PositionedFile file;

        Stream(PositionedFile file) {
            this.file = file;
        }

        @Override
        public int read() throws IOException {
            return file.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            return file.read(b, off, len);
        }

        @Override
        public long getPos() {
            return file.pos;
        }

        @Override
        public void seek(long pos) {
            file.pos = pos;
        }

        @Override
        public void close() throws IOException {
            file.close();
        }
    }
}
