package io.stoke.embed;

import io.stoke.loader.format.NpyHeader;
import io.stoke.loader.internal.SafeFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The files of one {@code stoke embed} run in {@code DIR}, written so that a crash never leaves a
 * complete-looking output:
 * <pre>
 *   DIR/embeddings.npy   float32 [rows, dimension], NumPy's .npy format (version 1.0, C order)
 *   DIR/paths.txt        row i's file, one per line
 *   DIR/skipped.txt      "&lt;file&gt;\t&lt;reason&gt;" per sample that did not decode (its row is zeros)
 * </pre>
 * Each is written as {@code DIR/.NAME.partial} and renamed into place by {@link #commit()},
 * {@code embeddings.npy} last: its presence means the run finished. {@link #close()} without a
 * commit deletes the partial files. Rows are written at their place in the file, in any order;
 * a row never written reads as zeros.
 */
public final class EmbeddingOutput implements EmbeddingSink, AutoCloseable {
    public static final String EMBEDDINGS = "embeddings.npy";
    public static final String PATHS = "paths.txt";
    public static final String SKIPPED = "skipped.txt";

    private final Path dir;
    private final long rows;
    private final long dimension;
    private final long headerBytes;
    private final FileChannel channel;
    private final List<String> skipped = new ArrayList<>();
    private boolean committed;
    private boolean closed;

    private EmbeddingOutput(Path dir, long rows, long dimension, List<String> paths) throws IOException {
        this.dir = dir;
        this.rows = rows;
        this.dimension = dimension;
        byte[] header = npyHeader(rows, dimension);
        this.headerBytes = header.length;
        writeNew(partial(PATHS), pathLines(paths));
        this.channel = createNew(partial(EMBEDDINGS));
        channel.write(ByteBuffer.wrap(header), 0);
        // The whole file's length at once: rows not written (skipped samples) read as zeros.
        if (rows * dimension > 0) {
            channel.write(ByteBuffer.allocate(1), headerBytes + 4 * rows * dimension - 1);
        }
    }

    /**
     * Starts an output of {@code paths.size()} rows of {@code dimension} values in {@code dir}
     * (created when missing). Refuses a folder that holds a complete output unless
     * {@code overwrite}.
     */
    public static EmbeddingOutput create(Path dir, long dimension, List<String> paths, boolean overwrite)
            throws IOException {
        Files.createDirectories(dir);
        if (!overwrite && Files.exists(dir.resolve(EMBEDDINGS))) {
            throw new IllegalStateException(
                    dir.resolve(EMBEDDINGS) + " exists (a finished run); --overwrite replaces it");
        }
        return new EmbeddingOutput(dir, paths.size(), dimension, paths);
    }

    private Path partial(String name) {
        return dir.resolve("." + name + ".partial");
    }

    /**
     * {@code file}, a partial file, made anew with {@code O_EXCL|O_NOFOLLOW}: what an earlier run
     * left there is removed first (a link is removed, never followed), and a link planted again in
     * between fails the run rather than being written through.
     */
    static FileChannel createNew(Path file) throws IOException {
        Files.deleteIfExists(file);
        return SafeFiles.createNew(file);
    }

    private static void writeNew(Path file, byte[] bytes) throws IOException {
        try (FileChannel ch = createNew(file)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
        }
    }

    private static byte[] pathLines(List<String> paths) {
        StringBuilder b = new StringBuilder();
        for (String p : paths) {
            if (p.indexOf('\n') >= 0 || p.indexOf('\r') >= 0) {
                throw new IllegalArgumentException("a file name holds a line break, so paths.txt could not name it: "
                        + p.replace("\n", "\\n").replace("\r", "\\r"));
            }
            b.append(p).append('\n');
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** NumPy's format 1.0 header for float32 [rows, dimension], padded so the data starts at a multiple of 64. */
    static byte[] npyHeader(long rows, long dimension) {
        return NpyHeader.float32(rows, dimension);
    }

    /** Writes {@code dimension} float32 values from {@code values} (native order) as row {@code row}. */
    public void writeRow(long row, MemorySegment values) {
        writeRows(row, 1, values);
    }

    /**
     * Writes rows {@code [first, first + count)} from {@code values} ({@code count * dimension}
     * float32 values, native order) in one positioned write.
     */
    @Override
    public void writeRows(long first, int count, MemorySegment values) {
        if (first < 0 || count < 1 || first + count > rows || values.byteSize() != 4L * count * dimension) {
            throw new IndexOutOfBoundsException("rows " + first + "+" + count + " of " + rows + ", " + values.byteSize()
                    + " bytes for " + dimension + " values each");
        }
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            throw new UnsupportedOperationException("embeddings.npy is little-endian; this machine is not");
        }
        ByteBuffer b = values.asByteBuffer();
        long position = headerBytes + 4 * first * dimension;
        try {
            while (b.hasRemaining()) {
                position += channel.write(b, position);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + partial(EMBEDDINGS), e);
        }
    }

    /** Records that row {@code row}'s file ({@code path}) did not decode, and why; the row stays zeros. */
    @Override
    public void skip(long row, String path, String reason) {
        skipped.add(path + "\t" + reason.replace('\n', ' ').replace('\t', ' '));
    }

    public List<String> skipped() {
        return skipped;
    }

    /** Makes the output complete: flushes, then renames each file into place, embeddings.npy last. */
    public void commit() throws IOException {
        channel.force(true);
        channel.close();
        // A finished run's embeddings go first: between the renames below, the folder holds no
        // embeddings.npy, so a crash there leaves it incomplete-looking, never mismatched.
        Files.deleteIfExists(dir.resolve(EMBEDDINGS));
        Files.move(
                partial(PATHS),
                dir.resolve(PATHS),
                StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
        Files.deleteIfExists(dir.resolve(SKIPPED));
        if (!skipped.isEmpty()) {
            writeNew(partial(SKIPPED), pathLines(skipped));
            Files.move(
                    partial(SKIPPED),
                    dir.resolve(SKIPPED),
                    StandardCopyOption.REPLACE_EXISTING,
                    StandardCopyOption.ATOMIC_MOVE);
        }
        Files.move(
                partial(EMBEDDINGS),
                dir.resolve(EMBEDDINGS),
                StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
        committed = true;
    }

    /** Without a {@link #commit()}, deletes the partial files: nothing of an unfinished run remains. */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        if (!committed) {
            channel.close();
            Files.deleteIfExists(partial(EMBEDDINGS));
            Files.deleteIfExists(partial(PATHS));
            Files.deleteIfExists(partial(SKIPPED));
        }
    }
}
