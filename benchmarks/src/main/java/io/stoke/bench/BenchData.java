package io.stoke.bench;

import io.stoke.ffm.JpegDecompressor;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.testdata.DemoSample;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

/** Where benchmarks find their data when none is named, and the JPEG files held in memory. */
public final class BenchData {
    private BenchData() {}

    /**
     * The demo's built-in sample, generated on first use (about half a minute, once) and cached,
     * so that a benchmark run never stops for want of data.
     */
    public static Path defaultSample() {
        DemoSample.ensure();
        return DemoSample.directory();
    }

    /**
     * Every JPEG of an ImageFolder tree read into memory, both as {@code byte[]} (for decoders
     * that take arrays) and as an off-heap segment (for FFM), so decode benchmarks time no I/O.
     *
     * @param folder a folder, or empty for {@link #defaultSample()}
     */
    public static Jpegs load(String folder) {
        Path root = folder == null || folder.isEmpty() ? defaultSample() : Path.of(folder);
        FileDataset dataset = ImageFolder.scan(root);
        int n = dataset.size();
        byte[][] bytes = new byte[n][];
        MemorySegment[] segments = new MemorySegment[n];
        Arena arena = Arena.ofShared();
        int maxPixels = 0;
        try (JpegDecompressor tj = new JpegDecompressor()) {
            for (int i = 0; i < n; i++) {
                bytes[i] = Files.readAllBytes(dataset.resolve(i));
                segments[i] = arena.allocate(bytes[i].length + 64L, 64);
                MemorySegment.copy(MemorySegment.ofArray(bytes[i]), 0, segments[i], 0, bytes[i].length);
                if (tj.readHeader(segments[i], bytes[i].length) != 0) {
                    throw new IllegalStateException(
                            "not a readable JPEG: " + dataset.resolve(i) + ": " + tj.errorMessage());
                }
                maxPixels = Math.max(maxPixels, tj.width() * tj.height());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + root, e);
        }
        return new Jpegs(bytes, segments, maxPixels);
    }

    /** JPEG files in memory; the arena lives as long as the benchmark's JVM. */
    public record Jpegs(byte[][] allBytes, MemorySegment[] segments, int maxPixels) {
        public int count() {
            return allBytes.length;
        }

        public byte[] bytes(int i) {
            return allBytes[i];
        }

        public MemorySegment segment(int i) {
            return segments[i];
        }

        public int length(int i) {
            return allBytes[i].length;
        }
    }
}
