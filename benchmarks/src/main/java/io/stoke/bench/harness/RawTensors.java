package io.stoke.bench.harness;

import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.format.NpyHeader;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.Datasets;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import io.stoke.pack.PackConflictException;
import io.stoke.pack.PackOptions;
import io.stoke.pack.Packer;
import io.stoke.pack.SampleKeys;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The "preprocessed on SSD" dataset, made once from a JPEG ImageFolder tree in two forms holding
 * the same bytes per sample:
 * <ul>
 *   <li>raw WebDataset shards, {@code stoke pack --format raw --resize 256 --crop 224}
 *       ({@link Packer}): per sample a {@code KEY.npy} of uint8 224x224x3 (HWC), the evaluation
 *       transform's output as the real loader delivers it. Stoke's side reads these through its
 *       real {@code Loader}, which copies such a sample from the mapped shard into the batch
 *       without decoding or resizing;</li>
 *   <li>headerless {@code .raw} files of 150,528 bytes in the JPEG tree's ImageFolder layout
 *       ({@code <class>/<name>.raw}), cut from those {@code .npy} members (the header dropped), for
 *       PyTorch's side, which reads them with {@code numpy.fromfile}.</li>
 * </ul>
 * Both are reused: the pack by the Packer's own manifest (a complete pack of the same source and
 * options is left as it is), the files by a marker naming the pack they were cut from.
 */
public final class RawTensors {
    /** Side of the square crop. */
    public static final int SIDE = 224;
    /** torchvision's {@code Resize} before the crop. */
    public static final int RESIZE = 256;
    /** Bytes per sample: 224 * 224 * 3. */
    public static final long SAMPLE_BYTES = (long) SIDE * SIDE * 3;
    /** Written last into the {@code .raw} folder: what the files were cut from. */
    static final String MARKER = "COMPLETE";
    /** Bumped when the way the files are made changes, so that older sets are remade. */
    private static final String MARKER_VERSION = "raw-from-shards-v1";

    private RawTensors() {}

    /**
     * What {@link #ensure} left in place.
     *
     * @param shards      the pack's folder (shards and index.json): Stoke's raw dataset
     * @param files       the {@code .raw} files' folder: PyTorch's raw dataset
     * @param samples     samples in each
     * @param packed      whether the pack was (re)made now rather than reused
     * @param filesMade   whether the files were (re)written now rather than reused
     */
    public record Prepared(Path shards, Path files, int samples, boolean packed, boolean filesMade) {}

    /**
     * Packs {@code jpegRoot} into raw shards in {@code shardsDir} unless a complete pack of it is
     * there already, then cuts the {@code .raw} files in {@code rawRoot} from the shards unless a
     * set cut from this very pack is there already.
     *
     * @param workers the Packer's threads
     */
    public static Prepared ensure(Path jpegRoot, Path shardsDir, Path rawRoot, int workers) {
        FileDataset jpeg = ImageFolder.scan(jpegRoot);
        boolean packed = pack(jpeg, jpegRoot, shardsDir, workers);
        boolean made = cutFiles(jpeg, shardsDir, rawRoot);
        return new Prepared(shardsDir, rawRoot, jpeg.size(), packed, made);
    }

    /** {@code stoke pack JPEG --out DIR --format raw --resize 256 --crop 224}; false when DIR held it complete. */
    private static boolean pack(FileDataset jpeg, Path jpegRoot, Path shardsDir, int workers) {
        PackOptions options = PackOptions.raw(RESIZE, SIDE, 256L << 20);
        Packer.Result r;
        try {
            r = new Packer(jpeg, jpegRoot, shardsDir, options)
                    .workers(workers)
                    .onError(ErrorPolicy.FAIL)
                    .run();
        } catch (PackConflictException e) {
            // The harness's own folder held a pack of another tree of the same name (another
            // --dataset): it is the harness's cache, so it is replaced.
            r = new Packer(jpeg, jpegRoot, shardsDir, options)
                    .workers(workers)
                    .onError(ErrorPolicy.FAIL)
                    .overwrite(true)
                    .run();
        }
        return !r.alreadyComplete();
    }

    /**
     * Writes {@code rawRoot/<class>/<name>.raw} for each sample from its {@code .npy} member in
     * the shards, unless the marker says that this set was cut from this pack (and the files are
     * all there); false when reused.
     */
    private static boolean cutFiles(Dataset jpeg, Path shardsDir, Path rawRoot) {
        List<Path> want = new ArrayList<>(jpeg.size());
        for (int i = 0; i < jpeg.size(); i++) {
            want.add(rawFile(rawRoot, jpeg.path(i)));
        }
        Path marker = rawRoot.resolve(MARKER);
        try {
            String stamp = MARKER_VERSION + " " + jpeg.size() + " " + sha256(shardsDir.resolve("index.json"));
            if (Files.isRegularFile(marker)
                    && Files.readString(marker).strip().equals(stamp)
                    && list(rawRoot).equals(want)) {
                return false;
            }
            Files.createDirectories(rawRoot);
            Files.deleteIfExists(marker);
            byte[] header = NpyHeader.uint8(SIDE, SIDE, 3);
            try (ShardDataset shards = (ShardDataset) Datasets.openLocal(shardsDir.toString())) {
                Shards tar = shards.shards();
                if (shards.size() != jpeg.size() || !tar.problems().isEmpty()) {
                    throw new IllegalStateException("the pack in " + shardsDir + " holds " + shards.size()
                            + " samples of " + jpeg.size() + tar.problems());
                }
                for (int s = 0; s < tar.shardCount(); s++) {
                    MemorySegment bytes = tar.bytes().acquire(s);
                    try {
                        for (int i = tar.firstSample(s); i < tar.firstSample(s + 1); i++) {
                            cut(jpeg, shards, i, bytes, header, want.get(i));
                        }
                    } finally {
                        tar.bytes().release(s);
                    }
                }
            }
            removeStrays(rawRoot, want);
            List<Path> have = list(rawRoot);
            if (!have.equals(want)) {
                // PyTorch's side lists the files sorted: it must meet the samples in the shards' order.
                throw new IllegalStateException(
                        "the .raw files in " + rawRoot + " do not sort in the JPEG tree's order, so "
                                + "PyTorch would read the samples in another order than Stoke");
            }
            Files.writeString(marker, stamp + "\n");
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make the raw tensors in " + rawRoot, e);
        }
    }

    private static void cut(Dataset jpeg, ShardDataset shards, int i, MemorySegment bytes, byte[] header, Path out)
            throws IOException {
        Shards tar = shards.shards();
        String key = SampleKeys.key(jpeg, i);
        if (!shards.path(i).equals(key)
                || tar.format(i) != Shards.NPY
                || tar.length(i) != header.length + SAMPLE_BYTES) {
            throw new IllegalStateException(shards.name(i) + " is not the 224x224x3 uint8 .npy of " + key);
        }
        MemorySegment member = bytes.asSlice(tar.offset(i), tar.length(i));
        if (MemorySegment.mismatch(member, 0, header.length, MemorySegment.ofArray(header), 0, header.length) != -1) {
            throw new IllegalStateException(shards.name(i) + ": its .npy header is not uint8 (224, 224, 3)");
        }
        Files.createDirectories(out.getParent());
        try (FileChannel ch = FileChannel.open(
                out, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buf = member.asSlice(header.length, SAMPLE_BYTES).asByteBuffer();
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
        }
    }

    /** {@code rawRoot/<class>/<name>.raw} for the JPEG tree's relative path {@code rel}. */
    private static Path rawFile(Path rawRoot, String rel) {
        int slash = rel.lastIndexOf('/');
        int dot = rel.lastIndexOf('.');
        return rawRoot.resolve((dot > slash + 1 ? rel.substring(0, dot) : rel) + ".raw");
    }

    /** Removes {@code .raw} files that are not part of this set (left by another tree of the same name). */
    private static void removeStrays(Path rawRoot, List<Path> want) throws IOException {
        Set<Path> keep = new HashSet<>(want);
        for (Path p : list(rawRoot)) {
            if (!keep.contains(p)) {
                Files.delete(p);
            }
        }
    }

    private static String sha256(Path file) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /**
     * The {@code .raw} files under {@code root} in the order PyTorch's side reads them
     * (torch_loader.py's {@code RawTensors}): sorted class folders, sorted names.
     */
    public static List<Path> list(Path root) throws IOException {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(root)) {
            return out;
        }
        List<Path> classes;
        try (Stream<Path> s = Files.list(root)) {
            classes = s.filter(Files::isDirectory).sorted().toList();
        }
        for (Path c : classes) {
            try (Stream<Path> s = Files.list(c)) {
                s.filter(p -> p.getFileName().toString().endsWith(".raw"))
                        .sorted()
                        .forEach(out::add);
            }
        }
        return out;
    }
}
