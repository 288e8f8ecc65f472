package io.stoke.testdata;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Generates an ImageNet-like JPEG dataset in torchvision's ImageFolder layout, for demos and
 * benchmarks where the real ImageNet is not at hand.
 *
 * <p>What matters for a loader benchmark is how much work each file is to decode, so the files
 * match ImageNet's training set where that work comes from: sizes (mostly 500 px on the long
 * side, a quarter portrait, a tenth larger), qualities 75 to 95, 4:2:0 chroma, about a tenth
 * progressive and a fiftieth grayscale, and photo-like content at 3.5 to 4.5 bits per pixel. A
 * flat synthetic image would decode several times faster than a photograph and make every
 * throughput figure a lie. Content is procedural, or cut from real photographs when
 * {@link Options#photoDir()} is given.
 *
 * <p>Output is a pure function of the options: the same options give byte-identical files, on
 * any number of threads (with the same libjpeg-turbo).
 */
public final class SyntheticImageNet {
    /**
     * Bumped whenever the bytes produced for given options change, so that {@link #ensure}
     * regenerates caches made by an older generator.
     */
    public static final int GENERATOR_VERSION = 1;

    private SyntheticImageNet() {}

    /**
     * What to generate.
     *
     * @param images   number of JPEG files, at least 1
     * @param classes  number of class folders, 1 to {@code images}; images are dealt out in turn,
     *                 so class sizes differ by at most one
     * @param seed     any value; different seeds give different datasets
     * @param photoDir null for procedural content, or a folder of photographs (searched
     *                 recursively) to cut the images from
     */
    public record Options(int images, int classes, long seed, Path photoDir) {
        public Options {
            if (images < 1) {
                throw new IllegalArgumentException("images must be at least 1, got " + images);
            }
            if (classes < 1 || classes > images) {
                throw new IllegalArgumentException(
                        "classes must be between 1 and images (" + images + "), got " + classes);
            }
            photoDir = photoDir == null ? null : photoDir.toAbsolutePath().normalize();
        }

        /** Procedural content. */
        public Options(int images, int classes, long seed) {
            this(images, classes, seed, null);
        }
    }

    /**
     * Statistics of a generated dataset, to compare with ImageNet's and to show the user.
     *
     * @param images              number of files
     * @param classes             number of class folders
     * @param totalBytes          sum of file sizes
     * @param meanBytes           mean file size
     * @param medianBytes         median file size
     * @param meanBitsPerPixel    mean over images of (file bits / pixels)
     * @param medianWidth         median width in pixels (lower median)
     * @param medianHeight        median height in pixels (lower median)
     * @param portraitFraction    share of images taller than wide
     * @param largeFraction       share with the long side above 500 px
     * @param progressiveFraction share encoded as progressive JPEG
     * @param grayscaleFraction   share encoded as single-channel grayscale
     * @param minQuality          lowest JPEG quality used
     * @param maxQuality          highest JPEG quality used
     * @param seconds             time the generation took (for a cached dataset: when it was made)
     * @param cached              true when {@link #ensure} found the dataset already there
     */
    public record Summary(
            int images,
            int classes,
            long totalBytes,
            double meanBytes,
            double medianBytes,
            double meanBitsPerPixel,
            int medianWidth,
            int medianHeight,
            double portraitFraction,
            double largeFraction,
            double progressiveFraction,
            double grayscaleFraction,
            int minQuality,
            int maxQuality,
            double seconds,
            boolean cached) {

        static Summary of(List<ImageRecord> records, int classes, double seconds, boolean cached) {
            int n = records.size();
            long total = 0;
            double bpp = 0;
            int portrait = 0;
            int large = 0;
            int progressive = 0;
            int gray = 0;
            int qMin = Integer.MAX_VALUE;
            int qMax = Integer.MIN_VALUE;
            long[] sizes = new long[n];
            int[] widths = new int[n];
            int[] heights = new int[n];
            for (int i = 0; i < n; i++) {
                ImageRecord r = records.get(i);
                total += r.bytes();
                bpp += r.bitsPerPixel();
                portrait += r.height() > r.width() ? 1 : 0;
                large += Math.max(r.width(), r.height()) > 500 ? 1 : 0;
                progressive += r.progressive() ? 1 : 0;
                gray += r.grayscale() ? 1 : 0;
                qMin = Math.min(qMin, r.quality());
                qMax = Math.max(qMax, r.quality());
                sizes[i] = r.bytes();
                widths[i] = r.width();
                heights[i] = r.height();
            }
            Arrays.sort(sizes);
            Arrays.sort(widths);
            Arrays.sort(heights);
            double medianBytes = n % 2 == 1 ? sizes[n / 2] : (sizes[n / 2 - 1] + sizes[n / 2]) / 2.0;
            return new Summary(
                    n,
                    classes,
                    total,
                    (double) total / n,
                    medianBytes,
                    bpp / n,
                    widths[(n - 1) / 2],
                    heights[(n - 1) / 2],
                    (double) portrait / n,
                    (double) large / n,
                    (double) progressive / n,
                    (double) gray / n,
                    qMin,
                    qMax,
                    seconds,
                    cached);
        }

        /** A few human-readable lines, without a trailing newline. */
        public String format() {
            return String.format(
                    Locale.ROOT,
                    "%d images in %d classes, %.1f MB (mean %.1f KB, median %.1f KB), %s%n"
                            + "median %dx%d, %.0f%% portrait, %.0f%% long side > 500 px, mean %.2f bits/pixel%n"
                            + "quality %d-%d, 4:2:0, %.0f%% progressive, %.0f%% grayscale",
                    images,
                    classes,
                    totalBytes / 1e6,
                    meanBytes / 1e3,
                    medianBytes / 1e3,
                    cached
                            ? String.format(Locale.ROOT, "cached (made in %.1f s)", seconds)
                            : String.format(Locale.ROOT, "generated in %.1f s", seconds),
                    medianWidth,
                    medianHeight,
                    100 * portraitFraction,
                    100 * largeFraction,
                    meanBitsPerPixel,
                    minQuality,
                    maxQuality,
                    100 * progressiveFraction,
                    100 * grayscaleFraction);
        }
    }

    /** Class folder name for a label: ImageNet-style WordNet-like ids, sorting in label order. */
    public static String className(int label) {
        return String.format(Locale.ROOT, "n%08d", label);
    }

    /**
     * Writes the dataset into {@code outDir} (created if absent; must be empty otherwise), using
     * every core. Each file is written to a temporary name and renamed into place.
     *
     * @throws IllegalArgumentException when {@code outDir} is not empty, or {@code photoDir} has
     *                                  no readable photograph
     * @throws UncheckedIOException     on a write failure
     */
    public static Summary generate(Path outDir, Options o) {
        try {
            Files.createDirectories(outDir);
            try (var s = Files.list(outDir)) {
                if (s.findAny().isPresent()) {
                    throw new IllegalArgumentException("output folder is not empty: " + outDir);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + outDir, e);
        }
        return generateInto(outDir, o, writerThreads()).summary();
    }

    /**
     * Heap one writer thread may come to hold: float planes, scene and noise buffers sized for the
     * largest image ({@link ImagePlan#MAX_LONG_SIDE} squared), grown while the old ones are still
     * live. One writer ran in -Xmx128m and failed in -Xmx100m, two failed in -Xmx192m.
     */
    public static final long WRITER_HEAP = 128L << 20;

    /** Heap the rest of the JVM keeps besides the writers. */
    public static final long BASE_HEAP = 32L << 20;

    /**
     * Writer threads: one per core, as many as this JVM's heap holds (Stoke's JVMs run with a small
     * heap; 16 writers in 384 MiB ran out of memory).
     */
    public static int writerThreads() {
        return writerThreads(
                Runtime.getRuntime().availableProcessors(), Runtime.getRuntime().maxMemory());
    }

    static int writerThreads(int cores, long maxHeap) {
        return (int) Math.max(1, Math.min(cores, (maxHeap - BASE_HEAP) / WRITER_HEAP));
    }

    /**
     * Generates into {@code cacheDir} once and reuses it afterwards: when the folder holds a
     * complete dataset from this generator version with these options (and, in photo mode, the
     * same photographs), returns its summary at once. Otherwise wipes the folder and regenerates.
     * A folder that is neither empty nor one of ours is never wiped.
     *
     * @throws IllegalStateException when {@code cacheDir} holds files this generator did not make
     */
    public static Summary ensure(Path cacheDir, Options o) {
        String fingerprint = o.photoDir() == null ? "" : PhotoSource.fingerprint(o.photoDir());
        DatasetMarker want = DatasetMarker.expected(o, fingerprint);
        // Checked before anything is created in the folder: a foreign folder is left untouched.
        DatasetMarker.refuseForeign(cacheDir);
        // Two processes (say, two `stoke demo` runs) must not wipe and fill the folder together.
        // A file lock excludes other processes only; the monitor covers threads of this one.
        synchronized (SyntheticImageNet.class) {
            return ensureLocked(cacheDir, o, want);
        }
    }

    private static Summary ensureLocked(Path cacheDir, Options o, DatasetMarker want) {
        try (FileChannel lockFile = DatasetMarker.openLock(cacheDir);
                FileLock _ = lockFile.lock()) {
            DatasetMarker found = DatasetMarker.read(cacheDir);
            if (found != null && found.complete() && found.sameDataset(want) && found.filesPresent(cacheDir)) {
                return Summary.of(found.records(), o.classes(), found.seconds(), true);
            }
            DatasetMarker.wipe(cacheDir);
            want.writeIncomplete(cacheDir);
            Generated g = generateInto(cacheDir, o, writerThreads());
            // Written last, so an interrupted run leaves a marker that says "incomplete, ours, wipe me".
            want.writeComplete(cacheDir, g.summary().seconds(), g.records());
            return g.summary();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot lock " + cacheDir, e);
        }
    }

    record Generated(Summary summary, List<ImageRecord> records) {}

    /** Package-private with a thread count so that tests can show the output does not depend on it. */
    static Generated generateInto(Path outDir, Options o, int threadCount) {
        long start = System.nanoTime();
        PhotoSource photos = o.photoDir() == null ? null : PhotoSource.load(o.photoDir());
        try {
            for (int c = 0; c < o.classes(); c++) {
                Files.createDirectories(outDir.resolve(className(c)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create class folders in " + outDir, e);
        }
        ImageRecord[] records = new ImageRecord[o.images()];
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        int threads = Math.max(1, Math.min(o.images(), threadCount));
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            workers.add(Thread.ofPlatform().name("stoke-dataset-" + t).start(() -> {
                try (ImageWriter writer = new ImageWriter(outDir, photos)) {
                    for (int i = next.getAndIncrement();
                            i < records.length && failure.get() == null;
                            i = next.getAndIncrement()) {
                        ImagePlan plan = ImagePlan.of(o.seed(), i, o.classes());
                        records[i] = writer.write(plan, className(plan.label()));
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread w : workers) {
            try {
                w.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failure.compareAndSet(null, e);
            }
        }
        Throwable f = failure.get();
        if (f instanceof IOException io) {
            throw new UncheckedIOException("writing the dataset to " + outDir + " failed", io);
        } else if (f instanceof RuntimeException re) {
            throw re;
        } else if (f instanceof Error err) {
            throw err;
        } else if (f != null) {
            throw new IllegalStateException("dataset generation interrupted", f);
        }
        List<ImageRecord> list = List.of(records);
        return new Generated(Summary.of(list, o.classes(), (System.nanoTime() - start) / 1e9, false), list);
    }
}
