package io.stoke.loader.decode;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokeJpeg;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.testing.RestartJpegs;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.RandomResizedCrop;
import io.stoke.loader.transform.TransformSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Both transforms on images as {@code stoke pack --resize 256} writes them: with restart markers
 * they seek (the training transform's random boxes, the evaluation transform's centre crop) and
 * deliver the bytes they deliver for the same images without markers.
 */
class PackedSeekTest {
    @TempDir
    Path tmp;

    private Dataset dataset(String name, int restartMcus) throws Exception {
        Path root = tmp.resolve(name);
        Files.createDirectories(root.resolve("c"));
        int[][] sizes = {{341, 256}, {256, 384}, {256, 256}, {455, 256}};
        for (int i = 0; i < sizes.length; i++) {
            int w = sizes[i][0];
            int h = sizes[i][1];
            byte[] jpeg = RestartJpegs.encode(TestImages.rgb(w, h, 11L * i), w, h, StokeJpeg.SAMP_420, 90, restartMcus);
            Files.write(root.resolve("c/" + i + ".jpg"), jpeg);
        }
        return ImageFolder.scan(root);
    }

    @Test
    void bothTransformsSeekAndDeliverTheBytesOfTheSameImagesWithoutMarkers() throws Exception {
        Assumptions.assumeTrue(StokeJpeg.available(), StokeJpeg::unavailableReason);
        Dataset marked = dataset("marked", 4);
        Dataset plain = dataset("plain", 0);
        TransformSpec eval = TransformSpec.defaults();
        TransformSpec train = TransformSpec.defaults().withTrain(224, RandomResizedCrop.defaults());
        int seeked = 0;
        for (TransformSpec spec : new TransformSpec[] {eval, train}) {
            try (Arena arena = Arena.ofConfined();
                    SampleTransform a = new SampleTransform(marked, spec, 42);
                    SampleTransform b = new SampleTransform(plain, spec, 42)) {
                MemorySegment got = arena.allocate(spec.sampleBytes());
                MemorySegment expected = arena.allocate(spec.sampleBytes());
                for (int epoch = 0; epoch < (spec == train ? 8 : 1); epoch++) {
                    for (int i = 0; i < marked.size(); i++) {
                        assertEquals(SampleStatus.OK, a.apply(i, epoch, got, 0), a.message());
                        assertEquals(SampleStatus.OK, b.apply(i, epoch, expected, 0), b.message());
                        assertArrayEquals(
                                expected.toArray(JAVA_BYTE),
                                got.toArray(JAVA_BYTE),
                                "sample " + i + ", epoch " + epoch);
                        assertNotEquals(StokeJpeg.PATH_SEEKED, b.regionPath(), "seeked in a file without markers");
                        seeked += a.regionPath() == StokeJpeg.PATH_SEEKED ? 1 : 0;
                    }
                }
            }
        }
        // Every eval crop (224 of 256) leaves segments out; most training boxes do.
        assertTrue(seeked >= 4 + 20, "only " + seeked + " of 36 samples seeked");
    }
}
