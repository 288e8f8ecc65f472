package io.stoke.ffm;

import java.lang.foreign.MemorySegment;

/**
 * The process's whole address space as one segment, made here, in the module that has native
 * access, for modules that read native memory they were handed by address: the GPU stage hands
 * nvJPEG files as addresses and lengths, with no segment per file (an object per image). Reading
 * through it is bounded by nothing but the address space: a caller reads only inside the ranges it
 * was given.
 */
public final class NativeMemory {
    private static final MemorySegment EVERYTHING = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private NativeMemory() {}

    /** A segment whose offsets are addresses. */
    public static MemorySegment everything() {
        return EVERYTHING;
    }
}
