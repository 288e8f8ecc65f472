package io.stoke.parquet;

import com.github.luben.zstd.Zstd;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.Set;
import java.util.zip.GZIPInputStream;
import org.apache.parquet.bytes.ByteBufferAllocator;
import org.apache.parquet.bytes.ByteBufferInputStream;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.compression.CompressionCodecFactory;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.xerial.snappy.Snappy;

/**
 * Decompresses Parquet pages into the buffers of an allocator (a row group's {@link RowGroupMemory};
 * stoke-lakehouse's reader of Delta Lake checkpoints gives parquet-java's direct allocator), with the
 * libraries parquet-java itself uses (snappy-java, zstd-jni; GZIP is the JDK's), and no Hadoop codec,
 * whose factory would build a Hadoop configuration. Reads only.
 */
public final class PageDecompressors implements CompressionCodecFactory {
    /** The codecs read: what pyarrow, Spark and DuckDB write. */
    static final Set<CompressionCodecName> READ = EnumSet.of(
            CompressionCodecName.UNCOMPRESSED,
            CompressionCodecName.SNAPPY,
            CompressionCodecName.ZSTD,
            CompressionCodecName.GZIP);

    private final ByteBufferAllocator memory;

    /** Decompresses into buffers of {@code memory}, which must give direct buffers (snappy-java's and zstd-jni's calls take them). */
    public PageDecompressors(ByteBufferAllocator memory) {
        if (!memory.isDirect()) {
            throw new IllegalArgumentException("pages are decompressed into direct buffers");
        }
        this.memory = memory;
    }

    @Override
    public BytesInputDecompressor getDecompressor(CompressionCodecName codec) {
        if (!READ.contains(codec)) {
            throw new IllegalArgumentException("pages compressed with " + codec + " are not read (" + READ + " are)");
        }
        return new Decompressor(codec);
    }

    @Override
    public BytesInputCompressor getCompressor(CompressionCodecName codec) {
        throw new UnsupportedOperationException("a row group is only read");
    }

    @Override
    public void release() {}

    private final class Decompressor implements BytesInputDecompressor {
        private final CompressionCodecName codec;
        private byte[] chunk; // GZIP's copy-out buffer; a load is one thread

        Decompressor(CompressionCodecName codec) {
            this.codec = codec;
        }

        @Override
        public BytesInput decompress(BytesInput bytes, int uncompressedSize) throws IOException {
            if (codec == CompressionCodecName.UNCOMPRESSED) {
                return bytes;
            }
            ByteBuffer in = bytes.toByteBuffer(memory, b -> {});
            ByteBuffer out = memory.allocate(uncompressedSize);
            decompress(in, in.remaining(), out, uncompressedSize);
            return BytesInput.from(out);
        }

        @Override
        public void decompress(ByteBuffer input, int compressedSize, ByteBuffer output, int uncompressedSize)
                throws IOException {
            ByteBuffer in = input.duplicate();
            in.limit(in.position() + compressedSize);
            ByteBuffer out = output.duplicate();
            out.limit(out.position() + uncompressedSize);
            int n;
            switch (codec) {
                case UNCOMPRESSED -> {
                    n = in.remaining();
                    out.put(in);
                }
                case SNAPPY -> {
                    if (!in.isDirect()) {
                        in = copyToBlock(in);
                    }
                    n = Snappy.uncompressedLength(in) == uncompressedSize ? Snappy.uncompress(in, out) : -1;
                }
                case ZSTD -> {
                    if (!in.isDirect()) {
                        in = copyToBlock(in);
                    }
                    long got = Zstd.decompressDirectByteBuffer(
                            out, out.position(), uncompressedSize, in, in.position(), in.remaining());
                    if (Zstd.isError(got)) {
                        throw new IOException("ZSTD: " + Zstd.getErrorName(got));
                    }
                    n = (int) got;
                }
                case GZIP -> n = gunzip(in, out);
                default -> throw new IllegalStateException(codec.toString());
            }
            if (n != uncompressedSize) {
                throw new IOException(
                        codec + " page decompressed to " + n + " bytes, its header says " + uncompressedSize);
            }
        }

        private ByteBuffer copyToBlock(ByteBuffer heap) {
            ByteBuffer direct = memory.allocate(heap.remaining());
            direct.put(heap.duplicate()).flip();
            return direct;
        }

        private int gunzip(ByteBuffer in, ByteBuffer out) throws IOException {
            int start = out.position();
            if (chunk == null) {
                chunk = new byte[64 * 1024]; // once a load, not once a page
            }
            try (InputStream gz = new GZIPInputStream(ByteBufferInputStream.wrap(in), chunk.length)) {
                for (int k; (k = gz.read(chunk)) > 0; ) {
                    if (k > out.remaining()) {
                        throw new IOException("GZIP page decompresses past the size its header says");
                    }
                    out.put(chunk, 0, k);
                }
            }
            return out.position() - start;
        }

        @Override
        public void release() {}
    }
}
