package io.stoke.testdata;

/** What was written for one image; the summary and the cache marker are built from these. */
record ImageRecord(
        String path, long bytes, int width, int height, int quality, boolean progressive, boolean grayscale) {

    double bitsPerPixel() {
        return bytes * 8.0 / ((long) width * height);
    }
}
