package io.stoke.arrow;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.flatbuf.BodyCompression;
import org.apache.arrow.flatbuf.CompressionType;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.MessageMetadataResult;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The layout of one Arrow IPC stream file (what {@code datasets} writes; the IPC file format's stream
 * after its magic is read too): its schema and, for each record batch, where its body lies in the file
 * and where each of its buffers lies in that body. The messages are read with Arrow Java's {@link
 * MessageSerializer}; no buffer is read here, and every buffer is checked to lie inside its body and
 * the body inside the file.
 */
final class ArrowStreamFile {
    /** The IPC file format's leading magic; the stream follows it, 8-byte aligned. */
    private static final byte[] FILE_MAGIC = {'A', 'R', 'R', 'O', 'W', '1'};

    /**
     * One record batch: {@code rows} rows, its body at file offset {@code body}; field node {@code n}
     * has {@code nodeLength[n]} values of which {@code nodeNulls[n]} are null, and buffer {@code b}
     * lies at {@code body + bufferOffset[b]} for {@code bufferLength[b]} bytes.
     */
    record Batch(long rows, long body, long[] nodeLength, long[] nodeNulls, long[] bufferOffset, long[] bufferLength) {}

    final Path path;
    final long size;
    final Schema schema;
    final List<Batch> batches;
    final long rows;

    private ArrowStreamFile(Path path, long size, Schema schema, List<Batch> batches) {
        this.path = path;
        this.size = size;
        this.schema = schema;
        this.batches = List.copyOf(batches);
        long n = 0;
        for (Batch b : batches) {
            n = Math.addExact(n, b.rows());
        }
        this.rows = n;
    }

    /**
     * Reads the file's messages.
     *
     * @throws IllegalArgumentException naming the file: not an Arrow IPC stream, truncated, no schema,
     *     or compressed record batches (whose images could not be read where they lie)
     */
    static ArrowStreamFile read(Path path) {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            channel.position(startOfStream(channel));
            ReadChannel in = new ReadChannel(channel);
            Schema schema = null;
            List<Batch> batches = new ArrayList<>();
            while (true) {
                checkMetadataLength(path, channel, size);
                MessageMetadataResult message;
                try {
                    message = MessageSerializer.readMessage(in);
                } catch (IOException | RuntimeException e) {
                    throw notArrow(path, e.getMessage());
                }
                if (message == null) {
                    break; // the end-of-stream marker, or the end of the file
                }
                long body = channel.position();
                long bodyLength = message.getMessageBodyLength();
                if (bodyLength < 0 || bodyLength > size - body) {
                    throw new IllegalArgumentException(path + ": a message's body of " + bodyLength
                            + " bytes runs past the end of the file (" + size + " bytes): the file is truncated");
                }
                byte kind = message.headerType();
                if (kind == MessageHeader.Schema) {
                    if (schema != null) {
                        throw notArrow(path, "a second schema message");
                    }
                    schema = MessageSerializer.deserializeSchema(message);
                } else if (kind == MessageHeader.RecordBatch) {
                    if (schema == null) {
                        throw notArrow(path, "a record batch before the schema");
                    }
                    RecordBatch header = (RecordBatch) message.getMessage().header(new RecordBatch());
                    batches.add(batch(path, header, body, bodyLength));
                } else if (kind != MessageHeader.DictionaryBatch) {
                    // A dictionary-encoded column is refused where it is one Stoke reads (ArrowColumns).
                    throw notArrow(path, "a message of kind " + MessageHeader.name(kind));
                }
                channel.position(body + bodyLength);
            }
            if (schema == null) {
                throw notArrow(path, "no schema message");
            }
            return new ArrowStreamFile(path, size, schema, batches);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path + ": " + e.getMessage(), e);
        }
    }

    /** 8 past the IPC file format's magic (where its stream starts), else 0: a stream file. */
    private static long startOfStream(FileChannel channel) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(FILE_MAGIC.length);
        channel.read(head, 0);
        return head.position() == FILE_MAGIC.length && java.util.Arrays.equals(head.array(), FILE_MAGIC) ? 8 : 0;
    }

    /**
     * Refuses a metadata length longer than what is left of the file before MessageSerializer allocates
     * a buffer of that length: a file that is not Arrow would otherwise ask for up to 2 GiB of heap.
     */
    private static void checkMetadataLength(Path path, FileChannel channel, long size) throws IOException {
        long at = channel.position();
        ByteBuffer prefix = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        channel.read(prefix, at);
        if (prefix.position() < 4) {
            return; // the end of the file: readMessage returns null
        }
        int length = prefix.getInt(0);
        long after = at + 4;
        if (length == -1 && prefix.position() == 8) { // the continuation marker, then the length
            length = prefix.getInt(4);
            after += 4;
        }
        if (length < 0 || length > size - after) {
            throw notArrow(
                    path,
                    "a message's metadata of " + length + " bytes at offset " + at + " runs past the "
                            + "end of the file (" + size + " bytes)");
        }
    }

    private static Batch batch(Path path, RecordBatch header, long body, long bodyLength) {
        BodyCompression compression = header.compression();
        if (compression != null) {
            throw new IllegalArgumentException(path + ": its record batches are compressed ("
                    + CompressionType.name(compression.codec()) + "), and Stoke reads each image where it lies in "
                    + "the file: write the dataset uncompressed, as datasets itself does (pyarrow: "
                    + "pa.ipc.new_stream(sink, schema) with no compression), or save it again with save_to_disk");
        }
        if (header.variadicBufferCountsLength() > 0) {
            throw new IllegalArgumentException(path + ": it holds binary or string view columns (variadic buffers),"
                    + " which Stoke does not read: cast them to binary and string");
        }
        int nodes = header.nodesLength();
        long[] nodeLength = new long[nodes];
        long[] nodeNulls = new long[nodes];
        for (int n = 0; n < nodes; n++) {
            nodeLength[n] = header.nodes(n).length();
            nodeNulls[n] = header.nodes(n).nullCount();
        }
        int buffers = header.buffersLength();
        long[] offset = new long[buffers];
        long[] length = new long[buffers];
        for (int b = 0; b < buffers; b++) {
            offset[b] = header.buffers(b).offset();
            length[b] = header.buffers(b).length();
            if (offset[b] < 0 || length[b] < 0 || offset[b] > bodyLength - length[b]) {
                throw new IllegalArgumentException(path + ": buffer " + b + " of a record batch (" + length[b]
                        + " bytes at " + offset[b] + ") lies outside its body of " + bodyLength + " bytes");
            }
        }
        if (header.length() < 0) {
            throw notArrow(path, "a record batch of " + header.length() + " rows");
        }
        return new Batch(header.length(), body, nodeLength, nodeNulls, offset, length);
    }

    private static IllegalArgumentException notArrow(Path path, String why) {
        return new IllegalArgumentException(path + " is not an Arrow IPC stream file (" + why + ")");
    }
}
