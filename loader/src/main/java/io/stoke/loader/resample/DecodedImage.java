package io.stoke.loader.resample;

import java.lang.foreign.MemorySegment;

/**
 * What a decoder holds after a decode: {@link #width()} x {@link #height()} RGBX pixels (4 bytes
 * each, rows end to end) taken from {@code (x, y)} of the image decoded at
 * {@link #decodedWidth()} x {@link #decodedHeight()} (less than the original after DCT scaling), of
 * an original of {@link #originalWidth()} x {@link #originalHeight()}. A whole decode at full size
 * has {@code x = y = 0} and all three sizes equal.
 *
 * <p>A flyweight: its owner (a decoder, or a {@link Resampler} for its whole-image calls) re-points
 * it at every decode, so it allocates nothing per image. It is valid until its owner's next decode.
 */
public final class DecodedImage {
    private MemorySegment pixels;
    private int width;
    private int height;
    private int x;
    private int y;
    private int decodedWidth;
    private int decodedHeight;
    private int originalWidth;
    private int originalHeight;

    /** A view pointing at nothing until its owner {@link #set}s it. */
    public DecodedImage() {}

    /** Points this view at a decode's pixels and geometry; returns it. */
    public DecodedImage set(
            MemorySegment pixels,
            int width,
            int height,
            int x,
            int y,
            int decodedWidth,
            int decodedHeight,
            int originalWidth,
            int originalHeight) {
        this.pixels = pixels;
        this.width = width;
        this.height = height;
        this.x = x;
        this.y = y;
        this.decodedWidth = decodedWidth;
        this.decodedHeight = decodedHeight;
        this.originalWidth = originalWidth;
        this.originalHeight = originalHeight;
        return this;
    }

    /** Points this view at a whole image of {@code width x height}, decoded at the size of an original of {@code originalWidth x originalHeight}. */
    public DecodedImage whole(MemorySegment pixels, int width, int height, int originalWidth, int originalHeight) {
        return set(pixels, width, height, 0, 0, width, height, originalWidth, originalHeight);
    }

    /** The pixels held, RGBX, rows end to end. */
    public MemorySegment pixels() {
        return pixels;
    }

    /** Columns held. */
    public int width() {
        return width;
    }

    /** Rows held. */
    public int height() {
        return height;
    }

    /** The first column held, in the decoded image. */
    public int x() {
        return x;
    }

    /** The first row held, in the decoded image. */
    public int y() {
        return y;
    }

    /** The whole image's width at the scale it was decoded at. */
    public int decodedWidth() {
        return decodedWidth;
    }

    /** The whole image's height at the scale it was decoded at. */
    public int decodedHeight() {
        return decodedHeight;
    }

    /** The width the file's header gives. */
    public int originalWidth() {
        return originalWidth;
    }

    /** The height the file's header gives. */
    public int originalHeight() {
        return originalHeight;
    }
}
