package io.stoke.loader;

import io.stoke.ffm.LibC;
import java.io.PrintStream;

/**
 * The C allocator's thresholds of a Stoke process, set once at its start: blocks of up to {@link
 * #MMAP_THRESHOLD} come from the allocator's arenas, and a free block at an arena's top is given
 * back to the system only past {@link #TRIM_THRESHOLD}.
 *
 * <p>Why: libjpeg allocates scratch per image and frees it when the image is done. A restart copy
 * holds the whole image's DCT coefficients, about 13 MB at 4-5 MP; a decode holds less. glibc's
 * thresholds start at 128 KB and move up with the blocks it sees freed, and on large photographs
 * it still gave most of those blocks back to the system after each image and faulted them in
 * again for the next: {@code stoke cache} over 204 photographs of 4-5 MP made 262,000-280,000 page
 * faults, and 37,000 with these thresholds, under which the copy's blocks are reused. They are
 * glibc's own ceiling for its moving thresholds (32 MiB for mmap, twice that for the trim), taken
 * from the start. What an arena keeps is what its thread's largest images needed at once; a block
 * of more than 32 MiB is still mapped and unmapped on its own. Stoke's own processes set them at
 * their start (the CLI's {@code main}, so every {@code stoke} command and {@code stoke.DataLoader}'s
 * producer); a JVM that embeds the loader keeps its allocator as its owner set it, and may call
 * {@link #set} itself.
 */
public final class AllocatorThresholds {
    public static final int MMAP_THRESHOLD = 32 << 20;
    public static final int TRIM_THRESHOLD = 64 << 20;

    private AllocatorThresholds() {}

    /**
     * Sets both thresholds; where the C library has no {@code mallopt} (musl) or refuses a value,
     * says so once on {@code err} and leaves the allocator as it is. Returns whether both were set.
     */
    public static boolean set(PrintStream err) {
        if (!LibC.hasMallopt()) {
            err.println("stoke: this C library has no mallopt (it is not glibc): large decode buffers go back to the"
                    + " system after each image, which costs page faults on large photographs");
            return false;
        }
        if (LibC.mallopt(LibC.M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1
                || LibC.mallopt(LibC.M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1) {
            err.println("stoke: the C library refused mallopt's mmap or trim threshold: large decode buffers may go"
                    + " back to the system after each image, which costs page faults on large photographs");
            return false;
        }
        return true;
    }
}
