package io.stoke.loader.readme;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's Java example, compiled and run here, and compared line by line with README.md. */
class ReadmeExampleTest {
    @TempDir
    Path tmp;

    long images;

    void example(Path train) {
        // spotless:off (the README shows this block as it is here)
        // README-BEGIN
        try (Loader loader = Loader.imageFolder(train)        // train/<class>/<image>.jpg
                .batchSize(256).workers(2)
                .shuffle(true).seed(42).epochs(1)
                .transform(TransformSpec.defaults())          // Resize(256) + CenterCrop(224), uint8 HWC
                .onError(ErrorPolicy.SKIP)                    // zero and report bad files, go on
                .build()) {
            for (Batch batch : loader) {
                try (batch) {                                 // closing returns the slot to the workers
                    MemorySegment pixels = batch.pixels();    // [n, 224, 224, 3] bytes, read in place
                    int firstLabel = batch.label(0);
                    batch.skipped().forEach(System.err::println);
                    consume(pixels, firstLabel);
                }
            }
            System.out.printf("%.0f images/s%n", loader.stats().imagesPerSecond());
        }
        // README-END
        // spotless:on
    }

    void consume(MemorySegment pixels, int label) {
        assertEquals(0, pixels.byteSize() % (224 * 224 * 3));
        images += pixels.byteSize() / (224 * 224 * 3);
    }

    @Test
    void theExampleRuns() {
        Path train = TestImages.imageFolder(tmp.resolve("train"), 300, 3, 8);
        example(train);
        assertEquals(300, images);
    }

    @Test
    void theReadmeShowsThisExample() throws Exception {
        Path source = Path.of("src/test/java/io/stoke/loader/readme/ReadmeExampleTest.java");
        List<String> lines = Files.readAllLines(source);
        List<String> example =
                lines
                        .subList(lines.indexOf("        // README-BEGIN") + 1, lines.indexOf("        // README-END"))
                        .stream()
                        .map(l -> l.substring(Math.min(8, l.length())))
                        .toList();
        String readme = Files.readString(Path.of("../README.md"));
        String block = example.stream().collect(Collectors.joining("\n"));
        assertTrue(readme.contains(block), "README.md's Java example differs from ReadmeExampleTest; paste:\n" + block);
    }
}
