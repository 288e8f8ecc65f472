package io.stoke.testdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ImageWriterTest {
    @TempDir
    Path tmp;

    /**
     * libjpeg-turbo 2.1's TurboJPEG handle carries state from a progressive compression into the
     * next one and corrupts a following baseline image; an image must not depend on its
     * predecessor on the same writer.
     */
    @Test
    void imageDoesNotDependOnThePreviousImage() throws IOException {
        ImagePlan progressive = null;
        ImagePlan baseline = null;
        for (int i = 0; progressive == null || baseline == null; i++) {
            ImagePlan p = ImagePlan.of(5, i, 1);
            if (p.progressive() && !p.grayscale() && progressive == null) {
                progressive = p;
            } else if (!p.progressive() && !p.grayscale() && progressive != null) {
                baseline = p;
            }
        }
        String cls = SyntheticImageNet.className(0);
        Files.createDirectories(tmp.resolve("after/" + cls));
        Files.createDirectories(tmp.resolve("alone/" + cls));
        try (ImageWriter w = new ImageWriter(tmp.resolve("after"), null)) {
            w.write(progressive, cls);
            w.write(baseline, cls);
        }
        try (ImageWriter w = new ImageWriter(tmp.resolve("alone"), null)) {
            w.write(baseline, cls);
        }
        String name = cls + "/" + ImageWriter.fileName(cls, baseline.index());
        assertEquals(-1L, Files.mismatch(tmp.resolve("after/" + name), tmp.resolve("alone/" + name)));
        assertTrue(Files.size(tmp.resolve("alone/" + name)) > 1000);
    }
}
