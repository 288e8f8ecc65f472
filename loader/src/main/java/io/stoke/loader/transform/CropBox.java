package io.stoke.loader.transform;

/**
 * Which part of an image a sample keeps, in the original image's pixels, and whether it is
 * mirrored: what {@link RandomResizedCrop} draws and {@link io.stoke.loader.resample.Resampler#resizedCrop} computes. A
 * flyweight, one per worker, filled again for every sample.
 */
public final class CropBox {
    /** An empty box, to be {@code set}; one per worker, reused for every sample. */
    public CropBox() {}

    /** Left column of the box. */
    public int left;
    /** Top row of the box. */
    public int top;

    public int width;
    public int height;
    /** Mirror left to right after the resize (torchvision's {@code hflip}). */
    public boolean flip;

    /** Sets every field; returns this. */
    public CropBox set(int left, int top, int width, int height, boolean flip) {
        this.left = left;
        this.top = top;
        this.width = width;
        this.height = height;
        this.flip = flip;
        return this;
    }

    /** Checks that the box lies inside an image of {@code w x h} and is not empty. */
    public void checkInside(int w, int h) {
        if (width < 1 || height < 1 || left < 0 || top < 0 || left + width > w || top + height > h) {
            throw new IllegalArgumentException("crop box " + this + " is not inside a " + w + "x" + h + " image");
        }
    }

    @Override
    public String toString() {
        return width + "x" + height + "+" + left + "+" + top + (flip ? " flipped" : "");
    }
}
