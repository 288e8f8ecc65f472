package io.stoke.testdata;

/**
 * An image being made, as three float planes (0..255 scale, row-major, pitch = width). Floats
 * rather than bytes so that lighting, texture and blending compose without clipping at every
 * step; clipping and quantisation happen once, in {@link Grain}. Reused across images by one
 * worker: the arrays only grow.
 */
final class Planes {
    int width;
    int height;
    float[] r = new float[0];
    float[] g = new float[0];
    float[] b = new float[0];

    void resize(int w, int h) {
        width = w;
        height = h;
        int n = w * h;
        if (r.length < n) {
            r = new float[n];
            g = new float[n];
            b = new float[n];
        }
    }
}
