package io.stoke.lakehouse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.delta.kernel.defaults.engine.fileio.FileIO;
import io.delta.kernel.defaults.engine.fileio.InputFile;
import io.delta.kernel.defaults.engine.fileio.OutputFile;
import io.delta.kernel.defaults.engine.fileio.PositionOutputStream;
import io.delta.kernel.defaults.engine.fileio.SeekableInputStream;
import io.delta.kernel.utils.CloseableIterator;
import io.delta.kernel.utils.FileStatus;
import io.stoke.loader.internal.Urls;
import io.stoke.loader.source.Datasets;
import io.stoke.remote.HttpObjectStore;
import io.stoke.remote.LakehouseMarkers;
import io.stoke.remote.ObjectStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Delta Kernel's file access over Stoke's own: local files through NIO, and objects at
 * {@code s3://} and {@code http(s)://} through stoke-remote's {@link ObjectStore} (its listings, or
 * over HTTP HEADs of the log's versions, and ranged GETs, with its retries and credentials). So a
 * table's log is replayed with no Hadoop file system. Kernel names
 * local files as {@code file:} URIs ({@link #resolvePath}). Reading a table, anything that would
 * write is refused; appending to one ({@link OutputTable}), the log's next version is written
 * through {@link LogFiles}, created at most once, and nothing else is written.
 */
final class KernelFileIO implements FileIO {
    /** {@code _last_checkpoint}: a line of JSON (its schema, at most, makes it a few kilobytes). */
    private static final long LAST_CHECKPOINT_BYTES = 1 << 20;

    private static final ObjectMapper JSON = new ObjectMapper();

    private final ObjectStore store; // null: local files only
    private final LogFiles log; // null: reads only

    /** Reads only. */
    KernelFileIO(ObjectStore store) {
        this(store, null);
    }

    /** Reads, and writes the log's versions through {@code log} (null: reads only). */
    KernelFileIO(ObjectStore store, LogFiles log) {
        this.store = store;
        this.log = log;
    }

    @Override
    public CloseableIterator<FileStatus> listFrom(String filePath) throws IOException {
        List<FileStatus> out = new ArrayList<>();
        if (Datasets.isUrl(filePath) && remote() instanceof HttpObjectStore) {
            out = headedLog(filePath);
        } else if (Datasets.isUrl(filePath)) {
            String folder = filePath.substring(0, filePath.lastIndexOf('/') + 1);
            for (ObjectStore.Listed o : remote().listFrom(folder, null)) {
                String name = o.url().substring(folder.length());
                if (name.indexOf('/') < 0 && o.url().compareTo(filePath) >= 0) {
                    out.add(FileStatus.of(o.url(), o.size(), o.lastModifiedMillis()));
                }
            }
        } else {
            Path file = local(filePath);
            Path dir = file.getParent();
            String from = file.getFileName().toString();
            if (!Files.isDirectory(dir)) {
                throw new FileNotFoundException(dir + " does not exist");
            }
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
                for (Path p : entries) {
                    if (Files.isRegularFile(p) && p.getFileName().toString().compareTo(from) >= 0) {
                        out.add(status(p));
                    }
                }
            }
        }
        out.sort((a, b) -> a.getPath().compareTo(b.getPath()));
        java.util.Iterator<FileStatus> it = out.iterator();
        return new CloseableIterator<>() {
            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public FileStatus next() {
                return it.next();
            }

            @Override
            public void close() {}
        };
    }

    /**
     * A Delta Lake log's files from a version on, over HTTP, which lists nothing: Kernel lists
     * {@code _delta_log/} from a version's prefix ({@code 00000000000000000012.}), and this finds
     * the same files by HEADs: the checkpoint {@code _last_checkpoint} names, when it is at or after
     * that version (a single file, or its numbered parts), then each commit from the version on until
     * one is missing (before the checkpoint, commits the log's cleanup removed are passed over). One
     * HEAD a commit since the listing's version: a log's replay lists from its last checkpoint.
     */
    private List<FileStatus> headedLog(String filePath) throws IOException {
        String folder = filePath.substring(0, filePath.lastIndexOf('/') + 1);
        String from = filePath.substring(folder.length());
        if (!folder.endsWith("/_delta_log/")
                || from.length() < 20
                || !from.substring(0, 20).chars().allMatch(Character::isDigit)) {
            throw new IOException(Urls.redact(filePath) + " cannot be listed: an HTTP server lists nothing, and"
                    + " this is not a Delta Lake log's versions, which are found by HEADs");
        }
        long start = Long.parseLong(from.substring(0, 20));
        List<FileStatus> out = new ArrayList<>();
        long checkpoint = -1;
        if (LakehouseMarkers.statIfThere(store, folder + "_last_checkpoint") != null) {
            JsonNode last = JSON.readTree(store.readBytes(folder + "_last_checkpoint", LAST_CHECKPOINT_BYTES));
            long version = last.path("version").asLong(-1);
            long parts = last.path("parts").asLong(0);
            if (version >= start) {
                List<FileStatus> files = new ArrayList<>();
                for (long p = 1; p <= Math.max(1, parts); p++) {
                    String name = parts > 0
                            ? String.format(Locale.ROOT, "%020d.checkpoint.%010d.%010d.parquet", version, p, parts)
                            : String.format(Locale.ROOT, "%020d.checkpoint.parquet", version);
                    FileStatus f = headed(folder + name);
                    if (f == null) {
                        files = null; // not the classic layout (a V2 checkpoint): the commits alone
                        break;
                    }
                    files.add(f);
                }
                if (files != null) {
                    out.addAll(files);
                    checkpoint = version;
                }
            }
        }
        for (long v = start; ; v++) {
            FileStatus commit = headed(folder + String.format(Locale.ROOT, "%020d.json", v));
            if (commit != null) {
                out.add(commit);
            } else if (v < checkpoint) {
                v = checkpoint - 1; // the checkpoint holds what the missing commits did
            } else {
                return out;
            }
        }
    }

    /** {@code url}'s size and time by a HEAD; null where there is none. */
    private FileStatus headed(String url) {
        ObjectStore.Stat stat = LakehouseMarkers.statIfThere(store, url);
        if (stat == null) {
            return null;
        }
        long millis = 0;
        if (stat.lastModified() != null) {
            try {
                millis = ZonedDateTime.parse(stat.lastModified(), DateTimeFormatter.RFC_1123_DATE_TIME)
                        .toInstant()
                        .toEpochMilli();
            } catch (DateTimeParseException e) {
                // no time: Kernel then has none for this commit
            }
        }
        return FileStatus.of(url, stat.size(), millis);
    }

    @Override
    public FileStatus getFileStatus(String path) throws IOException {
        if (Datasets.isUrl(path)) {
            ObjectStore.Stat stat = remote().stat(path);
            return FileStatus.of(path, stat.size(), 0);
        }
        try {
            return status(local(path));
        } catch (NoSuchFileException e) {
            throw new FileNotFoundException(path + " does not exist");
        }
    }

    @Override
    public String resolvePath(String path) {
        if (Datasets.isUrl(path)) {
            return path;
        }
        return local(path).toAbsolutePath().normalize().toUri().toString().replaceFirst("^file:///", "file:/");
    }

    @Override
    public InputFile newInputFile(String path, long size) {
        return new InputFile() {
            @Override
            public long length() throws IOException {
                return size >= 0 ? size : getFileStatus(path).getSize();
            }

            @Override
            public String path() {
                return path;
            }

            @Override
            public SeekableInputStream newStream() throws IOException {
                try {
                    return new Stream(PositionedFile.open(path, Datasets.isUrl(path) ? length() : -1, store));
                } catch (NoSuchFileException e) {
                    // What Kernel takes as a file not there (a table with no _last_checkpoint yet).
                    throw new FileNotFoundException(path + " does not exist");
                }
            }
        };
    }

    @Override
    public Optional<String> getConf(String key) {
        return Optional.empty();
    }

    @Override
    public boolean mkdirs(String path) throws IOException {
        if (log == null) {
            throw readOnly(path);
        }
        if (!Datasets.isUrl(path)) {
            Files.createDirectories(local(path)); // an object store has no folders to make
        }
        return true;
    }

    @Override
    public OutputFile newOutputFile(String path) {
        if (log == null) {
            throw readOnly(path);
        }
        return new OutputFile() {
            @Override
            public String path() {
                return path;
            }

            @Override
            public PositionOutputStream create(boolean overwrite) {
                // Kernel's checkpoints and checksums, written by post-commit hooks, which are not run.
                throw new UnsupportedOperationException(
                        "Stoke writes a Delta table's commits only: not writing " + path);
            }

            @Override
            public void writeAtomically(CloseableIterator<String> lines, boolean overwrite) throws IOException {
                StringBuilder text = new StringBuilder();
                try (lines) {
                    while (lines.hasNext()) {
                        text.append(lines.next()).append('\n');
                    }
                }
                byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
                if (overwrite) {
                    log.replace(path, bytes);
                } else if (!log.createOnce(path, bytes)) {
                    // What Kernel's commit takes as another writer's version: it reads the log again.
                    throw new FileAlreadyExistsException(path);
                }
            }
        };
    }

    @Override
    public boolean delete(String path) {
        throw readOnly(path);
    }

    @Override
    public void copyFileAtomically(String from, String to, boolean overwrite) {
        throw readOnly(to);
    }

    private static UnsupportedOperationException readOnly(String path) {
        return new UnsupportedOperationException("Stoke reads tables and writes none: not writing " + path);
    }

    private ObjectStore remote() {
        if (store == null) {
            throw new IllegalStateException("a URL in a local table's log");
        }
        return store;
    }

    private static FileStatus status(Path p) throws IOException {
        return FileStatus.of(
                p.toUri().toString().replaceFirst("^file:///", "file:/"),
                Files.size(p),
                Files.getLastModifiedTime(p).toMillis());
    }

    /** A local path from a path or a {@code file:} URI, as Kernel names them. */
    static Path local(String path) {
        return PositionedFile.local(path);
    }

    /** Kernel's stream over a {@link PositionedFile}. */
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
        public void readFully(byte[] b, int off, int len) throws IOException {
            file.readFully(b, off, len);
        }

        @Override
        public void close() throws IOException {
            file.close();
        }
    }
}
