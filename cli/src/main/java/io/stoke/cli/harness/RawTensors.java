package io.stoke.cli.harness;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.SampleIndex;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The "preprocessed on SSD" dataset: every JPEG of a set resized and cropped once to 224x224x3
 * uint8 (HWC) and written as a headerless {@code .raw} file of 150,528 bytes, in the same
 * ImageFolder layout ({@code <class>/<name>.raw}), so that both loaders only read bytes.
 */
public final class RawTensors {
    /** Side of the square crop. */
    public static final int SIDE = 224;
    /** Bytes per file: 224 * 224 * 3. */
    public static final long SAMPLE_BYTES = (long) SIDE * SIDE * 3;
    private static final String MARKER = "COMPLETE";

    private RawTensors() {
    }

    /**
     * Makes the raw files from {@code jpegRoot} into {@code rawRoot} unless a complete set made
     * from the same source is already there. The pixels are Stoke's with DCT scaling off, which a
     * test in the loader module checks to be byte-identical to torchvision's
     * {@code CenterCrop(224)(Resize(256)(img))} on PIL.
     *
     * @return the number of files
     */
    public static int ensure(Path jpegRoot, Path rawRoot, int workers) {
        SampleIndex index = ImageFolder.scan(jpegRoot);
        String want = index.size() + " " + jpegRoot.toAbsolutePath().normalize();
        Path marker = rawRoot.resolve(MARKER);
        try {
            if (Files.isRegularFile(marker) && Files.readString(marker).strip().equals(want)
                    && list(rawRoot).size() == index.size()) {
                return index.size();
            }
            Files.createDirectories(rawRoot);
            Files.deleteIfExists(marker);
            TransformSpec spec = TransformSpec.defaults().withDctScaling(TransformSpec.DctScaling.NONE);
            try (Loader loader = Loader.builder(index).batchSize(64).workers(workers).transform(spec).build()) {
                for (Batch b : loader) {
                    try (b) {
                        for (int i = 0; i < b.size(); i++) {
                            String rel = index.path((int) b.index(i));
                            Path out = rawRoot.resolve(rel.substring(0, rel.lastIndexOf('.')) + ".raw");
                            Files.createDirectories(out.getParent());
                            try (FileChannel ch = FileChannel.open(out, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                                    StandardOpenOption.TRUNCATE_EXISTING)) {
                                ByteBuffer buf = b.sample(i).asByteBuffer();
                                while (buf.hasRemaining()) {
                                    ch.write(buf);
                                }
                            }
                        }
                    }
                }
            }
            Files.writeString(marker, want + "\n");
            return index.size();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make the raw tensors in " + rawRoot, e);
        }
    }

    /** The raw files under {@code root} in ImageFolder order: sorted class folders, sorted names. */
    public static List<Path> list(Path root) throws IOException {
        List<Path> out = new ArrayList<>();
        List<Path> classes;
        try (Stream<Path> s = Files.list(root)) {
            classes = s.filter(Files::isDirectory).sorted().toList();
        }
        for (Path c : classes) {
            try (Stream<Path> s = Files.list(c)) {
                s.filter(p -> p.getFileName().toString().endsWith(".raw")).sorted().forEach(out::add);
            }
        }
        return out;
    }

    /** Class index of each file of {@link #list}: the position of its folder among the sorted folders. */
    public static int[] labels(List<Path> files) {
        int[] labels = new int[files.size()];
        List<Path> seen = new ArrayList<>();
        for (int i = 0; i < files.size(); i++) {
            Path parent = files.get(i).getParent();
            if (seen.isEmpty() || !seen.get(seen.size() - 1).equals(parent)) {
                seen.add(parent);
            }
            labels[i] = seen.size() - 1;
        }
        return labels;
    }
}
