package io.stoke.parquet;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import org.apache.parquet.bytes.ByteBufferAllocator;

/**
 * The one block of native memory a row group is loaded into, handed to parquet-java as its buffer
 * allocator: the column chunks it reads and the pages it decompresses are all slices of the block,
 * so an image value parquet-java decodes is a view of the block, and the decoder reads it there. A
 * bump allocator: nothing is released before the whole block is (its arena owns it). One load, one
 * thread.
 */
final class RowGroupMemory implements ByteBufferAllocator {
    private final MemorySegment block;
    private long used;

    RowGroupMemory(MemorySegment block) {
        this.block = block;
    }

    @Override
    public ByteBuffer allocate(int size) {
        long at = (used + 15) & ~15L;
        if (size < 0 || at + size > block.byteSize()) {
            throw new IllegalStateException("the row group needs more than the " + block.byteSize()
                    + " bytes its metadata gives its column chunks and pages");
        }
        used = at + size;
        return block.asSlice(at, size).asByteBuffer();
    }

    @Override
    public void release(ByteBuffer b) {
        // Freed with the block.
    }

    @Override
    public boolean isDirect() {
        return true;
    }

    MemorySegment block() {
        return block;
    }

    /** Where {@code value} lies in the block, or -1 when it is not a view of the block. */
    long offsetOf(ByteBuffer value) {
        if (!value.isDirect()) {
            return -1;
        }
        long at = MemorySegment.ofBuffer(value).address() - block.address();
        return at >= 0 && at + value.remaining() <= block.byteSize() ? at : -1;
    }
}
