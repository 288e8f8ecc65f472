package io.stoke.testdata;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.TurboJpeg;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Makes, encodes and writes images, one at a time, for one thread: it owns a compressor and
 * native buffers sized for the largest image, so nothing is allocated per image.
 */
final class ImageWriter implements AutoCloseable {
    private static final int MAX_PIXELS = ImagePlan.MAX_LONG_SIDE * ImagePlan.MAX_LONG_SIDE;

    private final Path root;
    private final PhotoSource photos; // null: procedural content
    private final Arena arena = Arena.ofConfined();
    private final JpegCompressor compressor = new JpegCompressor();
    private final MemorySegment src = arena.allocate(3L * MAX_PIXELS, 64);
    private final MemorySegment dst = arena.allocate(
            JpegCompressor.maxSize(ImagePlan.MAX_LONG_SIDE, ImagePlan.MAX_LONG_SIDE, TurboJpeg.TJSAMP_420), 64);
    private final byte[] pixels = new byte[3 * MAX_PIXELS];
    private final Planes planes = new Planes();
    private final ProceduralScene scene = new ProceduralScene();

    ImageWriter(Path root, PhotoSource photos) {
        this.root = root;
        this.photos = photos;
    }

    ImageRecord write(ImagePlan plan, String className) throws IOException {
        int w = plan.width();
        int h = plan.height();
        Rng rng = new Rng(plan.paintSeed());
        planes.resize(w, h);
        if (photos == null) {
            scene.paint(planes, rng);
        } else {
            photos.paint(planes, rng);
        }
        // Cameras differ: a clean low-ISO shot to a noisy indoor one.
        float luma = (float) rng.range(1.6, 5.6);
        float chroma = (float) rng.range(0.2, 1.0);
        int channels = plan.grayscale() ? 1 : 3;
        if (plan.grayscale()) {
            Grain.toGray(planes, luma, rng, pixels);
        } else {
            Grain.toRgb(planes, luma, chroma, rng, pixels);
        }
        MemorySegment.copy(pixels, 0, src, ValueLayout.JAVA_BYTE, 0, channels * w * h);
        int format = plan.grayscale() ? TurboJpeg.TJPF_GRAY : TurboJpeg.TJPF_RGB;
        int subsamp = plan.grayscale() ? TurboJpeg.TJSAMP_GRAY : TurboJpeg.TJSAMP_420;
        // JpegCompressor renews its handle after a progressive image (a libjpeg-turbo 2.1 quirk).
        long size = compressor.compress(
                src,
                w,
                channels * w,
                h,
                format,
                subsamp,
                plan.quality(),
                plan.progressive() ? TurboJpeg.TJFLAG_PROGRESSIVE : 0,
                dst);
        String rel = className + "/" + fileName(className, plan.index());
        writeAtomically(root.resolve(rel), dst.asSlice(0, size).asByteBuffer());
        return new ImageRecord(rel, size, w, h, plan.quality(), plan.progressive(), plan.grayscale());
    }

    /** ImageNet's own pattern, {@code <wnid>_<number>}, with a lower-case extension. */
    static String fileName(String className, int index) {
        return className + "_" + String.format("%08d", index) + ".jpg";
    }

    /** Readers never see half a file: a crash leaves only a temp file that no loader lists. */
    private static void writeAtomically(Path target, ByteBuffer data) throws IOException {
        Path tmp = target.resolveSibling("." + target.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(
                tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            while (data.hasRemaining()) {
                ch.write(data);
            }
        }
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    @Override
    public void close() {
        compressor.close();
        arena.close();
    }
}
