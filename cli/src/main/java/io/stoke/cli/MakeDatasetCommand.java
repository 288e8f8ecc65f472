package io.stoke.cli;

import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.parquet.HubParquetWriter;
import io.stoke.testdata.SyntheticImageNet;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code stoke make-dataset OUT}: writes an ImageNet-like JPEG dataset with the generator that
 * {@code stoke demo} uses ({@link SyntheticImageNet}), so benchmarks on other sizes or seeds
 * decode the same kind of files as the demo.
 */
@Command(
        name = "make-dataset",
        mixinStandardHelpOptions = true,
        description = {
            "Writes N ImageNet-like JPEGs (sizes, qualities, progressive and grayscale shares as in "
                    + "ImageNet's training set) into OUT in torchvision's ImageFolder layout (OUT/<class>/<image>.jpg), "
                    + "then prints their statistics. The same options always give byte-identical files."
        })
public final class MakeDatasetCommand implements Callable<Integer> {
    @Parameters(
            index = "0",
            paramLabel = "OUT",
            description = "Output folder: created when absent, must be empty otherwise.")
    Path out;

    @Option(names = "--images", paramLabel = "N", required = true, description = "Number of JPEG files.")
    int images;

    @Option(
            names = "--seed",
            paramLabel = "S",
            required = true,
            description = "Seed; different seeds give different datasets.")
    long seed;

    @Option(
            names = "--classes",
            paramLabel = "K",
            description = "Class folders, images dealt out in turn (default: min(100, N)).")
    Integer classes;

    @Option(
            names = "--photos",
            paramLabel = "DIR",
            description = {
                "Cut the images from the photographs under DIR (searched recursively, e.g. "
                        + "/usr/share/backgrounds/mate) instead of drawing procedural scenes."
            })
    Path photos;

    @Option(
            names = "--format",
            paramLabel = "FORMAT",
            description = {
                "folder (default): OUT/<class>/<image>.jpg; parquet: the same images as Parquet in the Hugging Face "
                        + "Hub's layout (image struct and int64 label, in the folder's order), OUT/train-00000-of-0000N.parquet."
            })
    String format = "folder";

    @Option(
            names = "--rows-per-file",
            paramLabel = "N",
            description = "--format parquet: rows per file (default: ${DEFAULT-VALUE}).")
    int rowsPerFile = 10_000;

    @Option(
            names = "--rows-per-group",
            paramLabel = "N",
            description = "--format parquet: rows per row group (default: ${DEFAULT-VALUE}).")
    int rowsPerGroup = 1_000;

    @Override
    public Integer call() {
        if (!format.equals("folder") && !format.equals("parquet")) {
            System.err.println("stoke: --format must be folder or parquet, not " + format);
            return Main.EXIT_USAGE;
        }
        if (rowsPerFile < 1 || rowsPerGroup < 1) {
            System.err.println("stoke: --rows-per-file and --rows-per-group must be positive");
            return Main.EXIT_USAGE;
        }
        int k = classes != null ? classes : Math.min(100, Math.max(1, images));
        if (photos != null && !Files.isDirectory(photos)) {
            System.err.println("stoke: --photos " + photos + " is not a folder");
            return Main.EXIT_USAGE;
        }
        SyntheticImageNet.Options o;
        try {
            o = new SyntheticImageNet.Options(images, k, seed, photos);
        } catch (IllegalArgumentException e) {
            System.err.println("stoke: " + e.getMessage());
            return Main.EXIT_USAGE;
        }
        System.err.println("writing " + images + " images in " + k + " classes to " + out
                + (photos != null ? " (cut from the photographs in " + photos + ")" : " (procedural scenes)"));
        SyntheticImageNet.Summary s;
        try {
            int cores = Runtime.getRuntime().availableProcessors();
            if (SyntheticImageNet.writerThreads() < cores) {
                System.err.printf(
                        "writing on %d of %d cores: this JVM's heap (%d MiB) holds %d writers;"
                                + " STOKE_JAVA_OPTS=-Xmx%dm uses every core%n",
                        SyntheticImageNet.writerThreads(),
                        cores,
                        Runtime.getRuntime().maxMemory() >> 20,
                        SyntheticImageNet.writerThreads(),
                        (cores * SyntheticImageNet.WRITER_HEAP + SyntheticImageNet.BASE_HEAP) >> 20);
            }
            if (format.equals("parquet")) {
                s = asParquet(o);
            } else {
                s = SyntheticImageNet.generate(out, o);
            }
        } catch (IllegalArgumentException e) {
            // A non-empty OUT, or a photo folder without a readable photograph: the user's to fix.
            System.err.println("stoke: " + e.getMessage());
            return Main.EXIT_USAGE;
        }
        System.out.println(s.format());
        return 0;
    }

    /** The folder's images, written beside OUT first, then as Parquet into OUT; the folder is removed. */
    private SyntheticImageNet.Summary asParquet(SyntheticImageNet.Options o) {
        if (Files.isDirectory(out)) {
            try (var entries = Files.list(out)) {
                if (entries.findAny().isPresent()) {
                    throw new IllegalArgumentException(out + " is not empty");
                }
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        Path folder = out.toAbsolutePath().resolveSibling("." + out.getFileName() + ".images");
        try {
            SyntheticImageNet.Summary s = SyntheticImageNet.generate(folder, o);
            try (Dataset d = ImageFolder.scan(folder)) {
                List<Path> files = HubParquetWriter.write(d, out, rowsPerFile, rowsPerGroup);
                System.err.println(
                        "wrote " + files.size() + " Parquet file" + (files.size() == 1 ? "" : "s") + " to " + out);
            }
            return s;
        } finally {
            deleteTree(folder);
        }
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (java.io.IOException e) {
            System.err.println("stoke: could not remove " + root + ": " + e.getMessage());
        }
    }
}
