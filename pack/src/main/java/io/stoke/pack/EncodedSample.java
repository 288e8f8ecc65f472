package io.stoke.pack;

import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.error.SampleStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One place in the queue between the pack's workers and its writer: a sample's member bytes (a
 * JPEG) or why it has none. Reused for sample after sample; its array grows to the largest
 * member seen, so nothing is allocated per image once it has.
 */
final class EncodedSample {
    /** The source index this place holds, or -1 while it is being filled. */
    volatile long sample = -1;

    byte[] data = new byte[64 * 1024];
    int length;
    SampleStatus status;
    String message;
    long sourceBytes;
    /** Whether {@link #data} is the source file unchanged (already no larger than the target). */
    boolean original;
    /** The member's extension, or null for the pack format's. */
    String extension;
    /** {@code --keep-pixels}, a JPEG: what its restart-marker copy did (null for another image). */
    RestartCopy.Outcome copy;
    /** {@code --keep-pixels}: why a JPEG was kept as it was. */
    String kept;

    /** Holds {@code src[0, length)}. */
    void set(MemorySegment src, long length, boolean original) {
        if (length > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException("a member of " + length + " bytes");
        }
        if (data.length < length) {
            data = new byte[(int) Math.max(length, Math.min(Integer.MAX_VALUE - 16, 2L * data.length))];
        }
        MemorySegment.copy(src, ValueLayout.JAVA_BYTE, 0, data, 0, (int) length);
        this.length = (int) length;
        this.original = original;
        this.status = SampleStatus.OK;
        this.message = null;
        this.extension = null;
        this.copy = null;
        this.kept = null;
    }

    void fail(SampleStatus status, String message) {
        this.length = 0;
        this.status = status;
        this.message = message;
        this.original = false;
        this.extension = null;
        this.copy = null;
        this.kept = null;
    }
}
