package io.stoke.pack;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.ffm.StokeJpeg;
import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.NoSampleDecodedException;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.format.NpyHeader;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Writes a dataset as WebDataset shards ({@code stoke pack}): per sample, in source order,
 * {@code KEY.jpg} (a resized JPEG, or the original when it is small enough) or {@code KEY.npy}
 * (the evaluation transform's uint8 pixels), then {@code KEY.cls} (the label; none for a sample
 * without one), in tar shards cut at a size limit, with a wids manifest rewritten after each shard.
 * The source is a folder or list file ({@link FileDataset}) or a Parquet dataset (a
 * {@link ShardDataset} of row groups): either way each sample's bytes come from the dataset's reader.
 *
 * <p>The same source and options give byte-identical shards whatever the number of workers. A run
 * over a folder that holds an unfinished pack of the same source and options keeps its whole
 * shards (listed in the manifest, present, of the recorded size) and goes on from the next
 * sample; one with another source or other options is refused unless {@code overwrite}.
 *
 * <p>JPEG: {@code workers} threads decode, resize and encode; a bounded in-order queue hands the
 * results to the calling thread, which writes them. RAW: a {@link Loader} in dataset order
 * produces the pixels, exactly those {@code stoke bench} delivers, and the calling thread writes them.
 */
public final class Packer {
    /** Raw packs read the loader's batches of this many samples (a resumed run re-decodes fewer than this). */
    static final int RAW_BATCH = 32;

    /** What a run reports as it goes; called on the writing thread. */
    public interface Listener {
        /** The run starts on its {@code total} samples (after the checks, and any resume, are settled). */
        default void started(long total) {}

        /** {@code done} samples of this run's {@code total} are handled (written or skipped). */
        default void progress(long done, long total) {}

        /** A sample that does not decode was left out (policy skip). */
        default void skipped(String path, String reason) {}

        /** A shard was renamed into place. */
        default void shardWritten(String name, int samples, long bytes) {}

        /** A file of an earlier pack that this one does not list was removed. */
        default void removed(Path file) {}
    }

    /**
     * What a run did.
     *
     * @param alreadyComplete the folder held this pack complete: nothing was done
     * @param resumedAt       the source sample this run started at (0 for a fresh pack)
     * @param handled         samples this run handled (packed or skipped)
     * @param packed          samples this run wrote
     * @param keptOriginal    of those, JPEGs stored as they were (already no larger than the target)
     * @param skipped         "path: reason" of each sample this run left out
     * @param shardsWritten   shards this run wrote
     * @param shards          shards in the pack
     * @param packSamples     samples in the pack
     * @param bytesIn         source bytes read
     * @param bytesOut        shard bytes written
     * @param nanos           time taken by this run's samples
     * @param keptPixels      with {@code --keep-pixels}, what became of each image; else null
     */
    public record Result(
            boolean alreadyComplete,
            int resumedAt,
            long handled,
            long packed,
            long keptOriginal,
            List<String> skipped,
            int shardsWritten,
            int shards,
            long packSamples,
            long bytesIn,
            long bytesOut,
            long nanos,
            KeptPixels keptPixels) {
        public double imagesPerSecond() {
            return nanos > 0 ? handled * 1e9 / nanos : 0;
        }
    }

    /**
     * What {@code --keep-pixels} did with a run's images.
     *
     * @param copied       JPEGs rewritten losslessly with restart markers
     * @param seekable     JPEGs stored as they were: sequential, with restart markers already
     * @param kept         JPEGs stored as they were, by reason (arithmetic coding, CMYK, damaged
     *     data, a copy that would not decode the same)
     * @param others       images of other formats, stored as they were
     * @param jpegBytesIn  the JPEGs' bytes read
     * @param jpegBytesOut the JPEGs' bytes stored
     */
    public record KeptPixels(
            long copied, long seekable, Map<String, Long> kept, long others, long jpegBytesIn, long jpegBytesOut) {
        public KeptPixels {
            kept = Map.copyOf(kept);
        }

        /** JPEGs kept as they were for a reason (not counting the seekable ones). */
        public long keptCount() {
            return kept.values().stream().mapToLong(Long::longValue).sum();
        }
    }

    private final Dataset dataset;
    private final Path source;
    private final Path out;
    private final PackOptions options;
    private int workers = Runtime.getRuntime().availableProcessors();
    private ErrorPolicy policy = ErrorPolicy.FAIL;
    private boolean overwrite;
    private Listener listener = new Listener() {};
    private TableColumns columns = TableColumns.DEFAULT;

    /**
     * @param dataset   the samples, in the order they are packed: a folder's or list file's, or a
     *     Parquet dataset's (encoded images; tar shards are not packed again)
     * @param source  where they came from (recorded in the manifest; a resumed run must name the same)
     * @param out     the pack's folder, created when missing
     * @param options what the shards hold
     */
    public Packer(Dataset dataset, Path source, Path out, PackOptions options) {
        this.dataset = dataset;
        this.source = source.toAbsolutePath().normalize();
        this.out = out;
        this.options = withoutUnwritableMarkers(options);
    }

    /**
     * Restart markers are written by Stoke's own encoder ({@code libstoke_jpeg.so}); where it was not
     * built, the pack says so once and writes none, and its manifest says none.
     */
    private static PackOptions withoutUnwritableMarkers(PackOptions options) {
        if (options.restartMcus() == 0 || StokeJpeg.available()) {
            return options;
        }
        if (options.format() == PackOptions.Format.ORIGINAL) {
            throw new PackException("--keep-pixels rewrites JPEGs with Stoke's region decoder library, which is"
                    + " not loaded: " + StokeJpeg.unavailableReason());
        }
        System.err.println("stoke pack: WARNING: " + StokeJpeg.unavailableReason()
                + "; packing without restart markers (the region decoder cannot seek in these shards;"
                + " --no-restart-markers says this is meant)");
        return options.withRestartInterval(0);
    }

    /** What the shards hold: the options given, less restart markers where they cannot be written. */
    public PackOptions options() {
        return options;
    }

    /** Threads that decode, resize and encode (default: the number of cores). */
    public Packer workers(int workers) {
        if (workers < 1) {
            throw new IllegalArgumentException("--workers must be positive, not " + workers);
        }
        this.workers = workers;
        return this;
    }

    /** FAIL: a sample that does not decode stops the pack, naming it; SKIP: it is left out, and listed. */
    public Packer onError(ErrorPolicy policy) {
        this.policy = policy;
        return this;
    }

    /** Replace a pack of another source or options in the folder instead of refusing. */
    public Packer overwrite(boolean overwrite) {
        this.overwrite = overwrite;
        return this;
    }

    public Packer listener(Listener listener) {
        this.listener = listener;
        return this;
    }

    /**
     * The columns a Parquet dataset was opened with: recorded in the manifest (a rerun with others is
     * another pack), and telling whether its keys are rows (no key column: unique by construction)
     * or a column's values (each checked against the others, which reads every row group once first).
     */
    public Packer columns(TableColumns columns) {
        this.columns = columns;
        return this;
    }

    /**
     * Packs (or finishes packing) the dataset.
     *
     * @throws PackException when a sample does not decode under FAIL (the whole shards before it
     *     stay, and a later run resumes there), two samples share a key, or nothing decodes
     * @throws PackConflictException when the folder holds a pack this run would not continue
     */
    public Result run() {
        PackManifest fresh = fresh();
        try {
            Files.createDirectories(out);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + out + ": " + e.getMessage(), e);
        }
        PackManifest manifest = continued(fresh);
        int start = manifest.resumeAt();
        if (manifest.complete()) {
            return new Result(
                    true, start, 0, 0, 0, List.of(), 0, manifest.shards().size(), manifest.samples(), 0, 0, 0, null);
        }
        manifest.write(out);
        listener.started(dataset.size() - start);
        long begin = System.nanoTime();
        Tally tally = new Tally();
        try (ShardSequence shards = new ShardSequence(out, manifest, listener)) {
            if (options.format() != PackOptions.Format.RAW) {
                packJpeg(start, shards, tally);
            } else {
                packRaw(start, shards, tally);
            }
            shards.finish(dataset.size());
            removeUnlisted(manifest);
            return new Result(
                    false,
                    start,
                    dataset.size() - start,
                    tally.packed,
                    tally.kept,
                    List.copyOf(tally.skipped),
                    shards.shardsWritten(),
                    manifest.shards().size(),
                    manifest.samples(),
                    tally.bytesIn,
                    shards.bytesWritten(),
                    System.nanoTime() - begin,
                    options.format() == PackOptions.Format.ORIGINAL
                            ? new KeptPixels(
                                    tally.copied,
                                    tally.seekable,
                                    tally.keptJpegs,
                                    tally.others,
                                    tally.jpegBytesIn,
                                    tally.jpegBytesOut)
                            : null);
        }
    }

    /** The manifest of a pack of this source with these options, its keys checked first. */
    private PackManifest fresh() {
        String name = source.getFileName() == null
                ? source.toString()
                : source.getFileName().toString();
        if (dataset instanceof ShardDataset table) {
            if (columns.key() == null) {
                SampleKeys.checkFilesUnique(table);
            } else {
                SampleKeys.checkUnique(table);
            }
            List<PackManifest.SourceFile> files = SourceFiles.of(table);
            return new PackManifest(
                    name,
                    source.toString(),
                    dataset.size(),
                    SourceFiles.fingerprint(table, files, columns),
                    files,
                    columns,
                    options);
        }
        if (!columns.isDefault()) {
            throw new IllegalArgumentException(
                    "columns are named (" + columns + ") but " + source + " is not a Parquet dataset");
        }
        SampleKeys.checkUnique(dataset);
        return new PackManifest(name, source.toString(), dataset.size(), SampleKeys.fingerprint(dataset), options);
    }

    /** What one run counts. */
    private static final class Tally {
        long packed;
        long kept;
        long bytesIn;
        final List<String> skipped = new ArrayList<>();
        // --keep-pixels
        long copied;
        long seekable;
        final Map<String, Long> keptJpegs = new TreeMap<>();
        long others;
        long jpegBytesIn;
        long jpegBytesOut;

        void count(EncodedSample s) {
            if (s.copy == null) {
                others++;
                return;
            }
            jpegBytesIn += s.sourceBytes;
            jpegBytesOut += s.length;
            switch (s.copy) {
                case COPIED -> copied++;
                case SEEKABLE -> seekable++;
                case KEPT -> keptJpegs.merge(s.kept, 1L, Long::sum);
            }
        }
    }

    /**
     * The manifest this run continues: {@code fresh} for an empty folder (or with overwrite), else
     * the folder's own, cut after its last shard that is still whole.
     */
    private PackManifest continued(PackManifest fresh) {
        if (overwrite) {
            removePack();
            return fresh;
        }
        var existing = PackManifest.read(out);
        if (existing.isEmpty()) {
            List<Path> strays = PackFiles.shardFiles(out);
            if (!strays.isEmpty()) {
                throw new PackConflictException(
                        out + " holds shard files (" + strays.getFirst().getFileName()
                                + (strays.size() > 1 ? " and " + (strays.size() - 1) + " more" : "") + ") but no "
                                + PackFiles.MANIFEST + ", so they cannot be resumed; --overwrite replaces them");
            }
            return fresh;
        }
        PackManifest m = existing.get();
        if (!m.sameJob(fresh)) {
            String changed = m.source().equals(fresh.source()) ? m.changedFile(fresh) : null;
            throw new PackConflictException(out + " holds a pack of " + m.describe()
                    + (changed != null ? ", and " + changed : "; this run asks for " + fresh.describe())
                    + ". --overwrite replaces it, or choose another --out");
        }
        int whole = 0;
        for (PackManifest.Shard s : m.shards()) {
            Path f = out.resolve(s.url());
            try {
                // A link planted at a shard's name is no shard of this pack: written again over it.
                if (!Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS) || Files.size(f) != s.filesize()) {
                    break;
                }
            } catch (IOException e) {
                break;
            }
            whole++;
        }
        if (whole < m.shards().size()) {
            m.truncate(whole);
            m.complete(false);
        }
        return m;
    }

    /** Removes the folder's pack files (manifest and shards, whole or not); nothing else. */
    private void removePack() {
        try {
            for (Path p : PackFiles.shardFiles(out)) {
                Files.delete(p);
                listener.removed(p);
            }
            Files.deleteIfExists(out.resolve(PackFiles.MANIFEST + ".tmp")); // an older Stoke's
            if (Files.deleteIfExists(out.resolve(PackFiles.MANIFEST))) {
                listener.removed(out.resolve(PackFiles.MANIFEST));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot clear the pack in " + out + ": " + e.getMessage(), e);
        }
    }

    /** After a complete pack: shard files it does not list (left by an interrupted run) are removed. */
    private void removeUnlisted(PackManifest manifest) {
        Set<String> listed = new HashSet<>();
        for (PackManifest.Shard s : manifest.shards()) {
            listed.add(s.url());
        }
        try {
            for (Path p : PackFiles.shardFiles(out)) {
                if (!listed.contains(p.getFileName().toString())) {
                    Files.delete(p);
                    listener.removed(p);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove a stray shard in " + out + ": " + e.getMessage(), e);
        }
    }

    private void packJpeg(int start, ShardSequence shards, Tally tally) {
        int n = dataset.size();
        InOrderQueue queue = new InOrderQueue(4 * workers, start);
        AtomicLong next = new AtomicLong(start);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            threads.add(Thread.ofPlatform().name("stoke-pack-" + w).daemon(true).start(() -> {
                try (SampleEncoder recoder = options.format() == PackOptions.Format.ORIGINAL
                        ? new PixelKeeper(dataset, options, JpegRecoder.decoding())
                        : new JpegRecoder(dataset, options, JpegRecoder.decoding())) {
                    for (long t = next.getAndIncrement(); t < n; t = next.getAndIncrement()) {
                        EncodedSample place = queue.claim(t);
                        recoder.encode((int) t, place);
                        queue.publish(place, t);
                    }
                } catch (InterruptedException e) {
                    queue.fail(e);
                } catch (Throwable e) {
                    queue.fail(e);
                }
            }));
        }
        boolean ok = false;
        try {
            for (int t = start; t < n; t++) {
                EncodedSample s = queue.take(t);
                tally.bytesIn += s.sourceBytes;
                if (s.status == SampleStatus.OK) {
                    shards.add(t, SampleKeys.key(dataset, t), dataset.label(t), s.data, s.length, s.extension);
                    tally.packed++;
                    if (s.original) {
                        tally.kept++;
                    }
                    if (options.format() == PackOptions.Format.ORIGINAL) {
                        tally.count(s);
                    }
                } else {
                    bad(t, s.status, s.message, shards, tally);
                }
                queue.release(s, t);
                listener.progress(t - start + 1, n - start);
            }
            ok = true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while packing", e);
        } finally {
            if (!ok) {
                queue.fail(new IllegalStateException("the writer stopped"));
            }
            for (Thread t : threads) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    private void packRaw(int start, ShardSequence shards, Tally tally) {
        int n = dataset.size();
        TransformSpec spec = TransformSpec.defaults().withEval(options.resize(), options.crop());
        byte[] header = NpyHeader.uint8(options.crop(), options.crop(), 3);
        int sampleBytes = Math.toIntExact(spec.sampleBytes());
        byte[] npy = new byte[header.length + sampleBytes];
        System.arraycopy(header, 0, npy, 0, header.length);
        // SKIP in the loader: whether a bad sample stops the pack is decided here, in source order.
        try (Loader loader = Loader.builder(dataset)
                .workers(workers)
                .batchSize(RAW_BATCH)
                .shuffle(false)
                .epochs(1)
                .startBatch(start / RAW_BATCH)
                .transform(spec)
                .onError(ErrorPolicy.SKIP)
                .build()) {
            while (true) {
                Batch batch;
                try {
                    batch = loader.next();
                } catch (NoSampleDecodedException e) {
                    break; // every sample was delivered, and handled, as skipped
                }
                if (batch == null) {
                    break;
                }
                try (batch) {
                    tally.bytesIn += batch.stats().sourceBytes();
                    MemorySegment pixels = batch.pixels();
                    for (int i = 0; i < batch.size(); i++) {
                        int t = (int) batch.index(i);
                        if (t < start) {
                            continue;
                        }
                        SampleStatus status = batch.status(i);
                        if (status == SampleStatus.OK) {
                            MemorySegment.copy(
                                    pixels, JAVA_BYTE, (long) i * sampleBytes, npy, header.length, sampleBytes);
                            shards.add(t, SampleKeys.key(dataset, t), dataset.label(t), npy, npy.length);
                            tally.packed++;
                        } else {
                            bad(t, status, detail(batch.skipped(), i), shards, tally);
                        }
                        listener.progress(t - start + 1, n - start);
                    }
                }
            }
        }
    }

    private static String detail(List<SampleError> errors, int position) {
        for (SampleError e : errors) {
            if (e.position() == position) {
                return e.detail();
            }
        }
        return null;
    }

    /** A sample that did not decode: the end of the pack under FAIL, a recorded gap under SKIP. */
    private void bad(int sample, SampleStatus status, String detail, ShardSequence shards, Tally tally) {
        String path = dataset.name(sample).toString();
        String reason = status.name() + ": " + status.description()
                + (detail != null && !detail.equals(status.description()) ? " (" + detail + ")" : "");
        if (policy == ErrorPolicy.FAIL) {
            throw new PackException(path + ": " + reason + ". The shards before it are whole and a rerun resumes"
                    + " there; --on-error skip leaves such files out");
        }
        shards.skip(path, reason);
        tally.skipped.add(path + ": " + reason);
        listener.skipped(path, reason);
    }
}
