package io.stoke.loader.cache;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.ffm.LibC;
import io.stoke.loader.decode.RestartCopy;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.internal.CacheFolder;
import io.stoke.loader.internal.SafeFiles;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.FileDataset;
import io.stoke.loader.source.SampleReader;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A folder of lossless restart-marker copies of a dataset's JPEGs ({@link RestartCopy}), kept
 * across runs, so that from the second epoch on the region decoder seeks in every original JPEG:
 * {@code stoke.DataLoader(restart_cache_dir=...)}, {@code --restart-cache-dir}, {@link
 * io.stoke.loader.Loader.Builder#restartCache}. The originals are a folder's or list's files, or the
 * members of its shards (tar, local or remote; Parquet row groups).
 *
 * <p>An entry is filed under a hash of its original's identity ({@link OriginalId}: a file's
 * absolute path as opened, size and modification time; a member's shard, place in it, length and
 * the shard's version, or its bytes' hash where the store gave no version) and names that identity
 * in its header ({@link CacheEntry}), so a changed original is never served its old copy; its
 * content is hashed, so a damaged entry is never served either (it is counted, and made again). A
 * JPEG that seeks already, or that cannot be copied (CMYK, arithmetic coding, damaged data), gets
 * an entry without content that says to read the original, and is not tried again; other formats
 * are not cached.
 *
 * <p>A worker that misses while the loader has slack (a worker waits for a free slot: the consumer
 * is the bottleneck) copies the original it has just read as it decodes its crop ({@link MissCopy},
 * {@link io.stoke.loader.decode.CopyOnDecode}): one pass over the file's entropy-coded data gives
 * the copy and the pixels. Otherwise (or where that decode does not make the copy) it
 * reads the original and asks the fillers, as many
 * threads as the loader has workers, each under Linux's {@code SCHED_IDLE} ({@link FillerPriority}:
 * below every nice value, a sliver of a core another thread wants), and each taking a request only while the loader has
 * slack ({@link #pace}: a worker waits for a free slot, or the workers have nothing to do). A
 * filler reads the original again (a shard's member only while
 * its shard is still loaded for the workers: it never fetches a shard twice), copies it (exact by
 * construction: the transcoder refuses what a copy could change), and writes the entry under a
 * temporary name it then renames: a reader sees a whole entry or none, in this process or any
 * other sharing the folder, and a process killed while filling leaves only a temporary file,
 * removed by the next process's filler before it writes anything. The fillers take only the CPU
 * the workers leave, so a loader-bound epoch is not slowed; where a model leaves the loader idle,
 * every idle core copies. The folder's bytes are bounded by its budget, one count over every process filling it
 * ({@link FolderUsage}): a full cache is said once, and the loader goes on from the originals.
 *
 * <p>The entries come from private data, and a worker serves what it finds there as the original,
 * so the folder is the user's alone ({@link CacheFolder}: made {@code 0700}, its entries {@code
 * 0600}; another user's folder, or one others can write, is refused) unless it is shared with a
 * group on purpose ({@link FolderAccess}). Nothing in it is followed or waited on: an entry is made
 * with {@code O_EXCL} under a random temporary name and renamed into place, and read through {@code
 * O_NOFOLLOW|O_NONBLOCK}; a link or a FIFO at an entry's name is a miss, said once, and replaced.
 */
public final class RestartCache implements AutoCloseable {
    /** Requests the filler holds; more are dropped and asked again at the next miss. */
    private static final int QUEUE = 4096;

    private static final String SUFFIX = ".stc";

    /** {@code st_mode}'s type of a folder. */
    private static final int S_IFDIR = 0040000;

    /** How long a filler with requests waits before it looks at the loader's slack again. */
    private static final long PAUSE_MILLIS = 5;

    /** A cache used without a loader ({@code stoke cache}, tests) always has slack. */
    private static final BooleanSupplier UNGATED = () -> true;

    private final Path dir;
    private final byte[] dirBytes;
    private final long budget;
    private final int restartMcus;
    private final FolderAccess access;
    private final Consumer<String> say;
    private final FolderUsage usage;
    /** Why the cache writes nothing more, set once: null while it writes; {@link Stop#BUDGET}; or a failure. */
    private final AtomicReference<Stop> stopped = new AtomicReference<>();

    private final AtomicBoolean plantedSaid = new AtomicBoolean();
    // The entry folders made or checked: 256 bits, set once each (a race makes one twice: harmless).
    private final AtomicLongArray madeSubfolders = new AtomicLongArray(4);
    private boolean counted; // under countLock: the folder walked once, by whoever writes first
    private final Object countLock = new Object();
    final LongAdder hits = new LongAdder();
    final LongAdder misses = new LongAdder();
    /** Copies a worker made itself on a miss as it decoded ({@link MissCopy}) and filed: part of {@link #copied}. */
    final LongAdder copiedByWorkers = new LongAdder();

    private final LongAdder copied = new LongAdder();
    private final LongAdder originals = new LongAdder();
    private final LongAdder damaged = new LongAdder();
    private final LongAdder filledBytes = new LongAdder();
    // The filler's queue: sample indices in a ring, under this lock.
    private final int[] queue = new int[QUEUE];
    private int head;
    private int count;
    private long filled;
    private long requested;
    private Dataset dataset;
    private ShardNames shardNames;
    private final List<Thread> fillers = new ArrayList<>();
    private int fillerCount = 1;
    // The sample each filler copies now (-1: none), so that two never copy the same one.
    private int[] inHand = {-1};
    // The dataset (and its shards' names) each filler's request in hand belongs to, set with it.
    private Dataset[] takenFrom = new Dataset[1];
    private ShardNames[] takenNames = new ShardNames[1];
    // Set under this lock by pace(), read by the workers without it.
    private volatile BooleanSupplier slack = UNGATED;
    private volatile BooleanSupplier workersCopy = () -> false;
    private volatile boolean closed;

    private RestartCache(Path dir, long budget, int restartMcus, FolderAccess access, Consumer<String> say) {
        this.dir = dir;
        this.dirBytes = (dir.toAbsolutePath().normalize() + "/").getBytes(StandardCharsets.UTF_8);
        this.budget = budget;
        this.restartMcus = restartMcus;
        this.access = access;
        this.say = say;
        this.usage = new FolderUsage(dir, access, say);
    }

    /** {@link #open(Path, long, FolderAccess, Consumer)} of a folder for this user alone. */
    public static RestartCache open(Path dir, long budget, Consumer<String> say) {
        return open(dir, budget, FolderAccess.PRIVATE, say);
    }

    /**
     * Opens (or creates) the cache in {@code dir}. Its entries' bytes are counted, and the temporary
     * files of processes that are gone removed, by the first writer (the filler, or {@link #fill})
     * before it writes: a walk of millions of entries never holds up the first batch.
     *
     * @param budget  the most bytes its entries may hold
     * @param access  who may read and write the folder: {@link FolderAccess#PRIVATE}, or a group's
     *     members ({@code --cache-shared-with GROUP})
     * @param say     where the cache's one-line notices go (the budget reached, the library missing)
     * @throws IllegalArgumentException the folder cannot be made or read, is refused ({@link
     *     CacheFolder}: another user's, or one others can write), or the path is too long
     */
    public static RestartCache open(Path dir, long budget, FolderAccess access, Consumer<String> say) {
        if (budget < 1) {
            throw new IllegalArgumentException("the cache's budget must be positive, not " + budget);
        }
        Path folder;
        try {
            folder = CacheFolder.open(dir, access, "the restart cache");
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    e.getMessage().startsWith("refusing ") || e.getMessage().startsWith("cannot ")
                            ? e.getMessage()
                            : "cannot use " + dir + " as the restart cache: " + e.getMessage(),
                    e);
        }
        RestartCache cache = new RestartCache(folder, budget, 4, access, say);
        if (cache.dirBytes.length + 2 + 1 + 16 + SUFFIX.length() + 1 > 4096) {
            throw new IllegalArgumentException("cache folder path too long: " + dir);
        }
        if (!RestartCopy.available()) {
            say.accept("WARNING: the restart cache makes no copies: " + RestartCopy.unavailableReason()
                    + "; every file is read as it is");
        }
        return cache;
    }

    /**
     * Why this build makes no copies (it has no region decoder: no C compiler when it was built),
     * or null when it makes them: a cache without copies still opens, says so once, and reads every
     * file as it is.
     */
    public static String whyNoCopies() {
        return RestartCopy.available() ? null : RestartCopy.unavailableReason();
    }

    /**
     * Walks the folder once per process, before the first entry is written: the entries' bytes
     * counted against the budget, dead processes' temporary files removed. A folder that cannot be
     * walked is said once (unless {@code quiet}: {@link #fill} throws instead) and stops the
     * writing, so nothing is written past a budget not known.
     */
    private void countOnce(boolean quiet) {
        synchronized (countLock) {
            if (counted) {
                return;
            }
            counted = true;
            try {
                usage.recount(this::walk);
            } catch (IOException | UncheckedIOException e) {
                if (stopped.compareAndSet(null, new Stop(e.getMessage())) && !quiet) {
                    say.accept("WARNING: the restart cache cannot use " + dir + " (" + e.getMessage()
                            + "); it writes nothing more, the rest is read from the originals");
                }
            }
        }
    }

    /**
     * Why a cache writes nothing more: its budget reached ({@link #BUDGET}), or its folder failed
     * ({@code failure}: the error's own words, e.g. {@code ...: Read-only file system}).
     */
    private record Stop(String failure) {
        static final Stop BUDGET = new Stop(null);
    }

    /** The bytes of the folder's entries; dead processes' temporary files removed on the way. */
    private long walk() throws IOException {
        long[] total = {0};
        Files.walkFileTree(
                dir, java.util.EnumSet.noneOf(java.nio.file.FileVisitOption.class), 2, new SimpleFileVisitor<>() {
                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                        if (attrs.isRegularFile()) {
                            total[0] += adopt(file, attrs.size());
                        }
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                        // Gone since it was listed: another process's filler removed its own
                        // temporary file, renamed it, or removed a damaged entry.
                        if (e instanceof NoSuchFileException) {
                            return FileVisitResult.CONTINUE;
                        }
                        throw e;
                    }
                });
        return total[0];
    }

    /** An entry's bytes to count; a dead process's temporary file removed (0). */
    private long adopt(Path file, long size) {
        String name = file.getFileName().toString();
        try {
            if (name.endsWith(SUFFIX)) {
                return size;
            }
            long pid = SafeFiles.temporaryOwner(file);
            if (pid > 0 && !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                Files.deleteIfExists(file);
            }
            // else not one of ours, or a live process's: written, or being written, before its
            // rename; that process files it or removes it itself
        } catch (IOException e) {
            // Gone since the walk: left alone.
        }
        return 0;
    }

    /** The folder. */
    public Path directory() {
        return dir;
    }

    /**
     * A worker's reader of {@code dataset}'s samples through this cache: a folder's or list's
     * files, or the members of its shards (tar, local or remote; Parquet row groups). The first
     * reader starts the fillers (one, or as many as {@link #pace} asked for). The fillers copy for
     * the dataset of the latest reader: a loader made after another over a new dataset (the same
     * folder scanned again, say) takes them over, and the requests queued for the other are dropped,
     * as they name its samples. Every entry is filed under the identity of the file it was copied
     * from, so a request of either loader never files a wrong entry. Without the copying library,
     * the dataset is read as it is (said once, when the cache was opened).
     */
    public SampleReader reader(Dataset dataset, long maxBytes) {
        if (!RestartCopy.available()) {
            return dataset.reader(maxBytes);
        }
        ShardNames names;
        synchronized (this) {
            if (this.dataset != dataset) {
                boolean first = this.dataset == null;
                this.dataset = dataset;
                this.shardNames = dataset instanceof ShardDataset sharded ? new ShardNames(sharded.shards()) : null;
                filled += count; // dropped, as handled: awaitFilled waits for no request of another dataset
                count = 0;
                if (first) {
                    startFillers();
                }
                notifyAll();
            }
            names = this.shardNames;
        }
        return switch (dataset) {
            case FileDataset files -> new CachedFileReader(this, files, maxBytes);
            case ShardDataset sharded -> new CachedShardReader(this, sharded.shards(), names, maxBytes);
            default ->
                throw new IllegalArgumentException(
                        "no restart cache for " + dataset.getClass().getName());
        };
    }

    /**
     * {@code dataset}'s reader through {@code cache} ({@link #reader}), or the dataset's own where
     * {@code cache} is null: what a loader's worker and the GPU decode stage's reader threads read with.
     */
    public static SampleReader readerThrough(RestartCache cache, Dataset dataset, long maxBytes) {
        return cache == null ? dataset.reader(maxBytes) : cache.reader(dataset, maxBytes);
    }

    /**
     * Paces the fillers by a loader: {@code threads} of them (its workers' count), each taking a
     * request only while {@code slack} says the loader has CPU to spare: a worker waits for a free
     * slot (the consumer is the bottleneck), or the workers have nothing to do. Set by the loader's
     * pipeline before its workers start; the latest pipeline's pace holds. Without it one filler
     * runs, ungated.
     */
    public synchronized void pace(BooleanSupplier slack, BooleanSupplier workersCopy, int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("fillers must be positive, not " + threads);
        }
        this.slack = slack;
        this.workersCopy = workersCopy;
        if (threads > fillerCount) {
            fillerCount = threads;
            if (dataset != null) {
                startFillers();
            }
        }
        notifyAll();
    }

    /** Starts fillers up to {@link #fillerCount}; under this lock. */
    private void startFillers() {
        if (closed) {
            return;
        }
        int first = fillers.size();
        if (inHand.length < fillerCount) {
            int old = inHand.length;
            inHand = Arrays.copyOf(inHand, fillerCount);
            Arrays.fill(inHand, old, fillerCount, -1);
            takenFrom = Arrays.copyOf(takenFrom, fillerCount);
            takenNames = Arrays.copyOf(takenNames, fillerCount);
        }
        for (int i = first; i < fillerCount; i++) {
            int me = i;
            // The name's prefix is what CacheCommandTest looks for: no filler outlives its cache.
            fillers.add(Thread.ofPlatform()
                    .name(i == 0 ? "stoke-cache-filler" : "stoke-cache-filler-" + i)
                    .daemon(true)
                    .start(() -> fill(me)));
        }
    }

    /** The filler's reader of the dataset's originals; {@code fetch}: whether it may load a shard itself. */
    private Originals originals(Dataset dataset, ShardNames names, long maxBytes, boolean fetch) {
        return dataset instanceof FileDataset files
                ? new Originals.OfFiles(files, maxBytes)
                : new Originals.OfShards(names, maxBytes, fetch);
    }

    /** Writes the folder's path into {@code path}; returns where an entry's name starts. */
    int writeDirectory(MemorySegment path) {
        MemorySegment.copy(dirBytes, 0, path, JAVA_BYTE, 0, dirBytes.length);
        return dirBytes.length;
    }

    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    /** Writes {@code xx/xxxxxxxxxxxxxxxx.stc\0}, the entry of {@code key}, at {@code path[at]}. */
    static void writeName(MemorySegment path, int at, long key) {
        path.set(JAVA_BYTE, at, HEX[(int) (key >>> 60) & 15]);
        path.set(JAVA_BYTE, at + 1, HEX[(int) (key >>> 56) & 15]);
        path.set(JAVA_BYTE, at + 2, (byte) '/');
        for (int i = 0; i < 16; i++) {
            path.set(JAVA_BYTE, at + 3 + i, HEX[(int) (key >>> (60 - 4 * i)) & 15]);
        }
        for (int i = 0; i < SUFFIX.length(); i++) {
            path.set(JAVA_BYTE, at + 19 + i, (byte) SUFFIX.charAt(i));
        }
        path.set(JAVA_BYTE, at + 19 + SUFFIX.length(), (byte) 0);
    }

    /**
     * Says, once, that something not made by Stoke has an entry's name (a link, a FIFO): a worker
     * found it, read the original instead, and the filler will make the entry over it.
     */
    void planted(MemorySegment entryPath, String what) {
        if (!plantedSaid.getAndSet(true)) {
            say.accept("WARNING: the restart cache found " + what + " at "
                    + entryPath.getString(0, StandardCharsets.UTF_8) + ", not an entry Stoke made: not followed,"
                    + " the original is read and the entry made again (said once)");
        }
    }

    /** Removes a damaged entry (rare: not on the hot path). */
    void discard(MemorySegment entryPath) {
        try {
            usage.remove(Path.of(entryPath.getString(0, StandardCharsets.UTF_8)));
        } catch (IOException e) {
            // The folder failed: the next read decides again, and the filler says what failed.
        }
    }

    /** Counts a damaged entry, found by a worker and removed. */
    void countDamaged() {
        damaged.increment();
    }

    /**
     * Whether a worker that has just missed should copy the original itself ({@link MissCopy}):
     * copies can be made, the folder is not full, and the loader that paces this cache has slack
     * now, so the worker's extra work is time it would have spent waiting. Without a loader's pace,
     * never: the fillers copy.
     */
    boolean copiesNow() {
        return stopped.get() == null && !closed && workersCopy.getAsBoolean();
    }

    /** Asks the filler for sample {@code sample}'s entry; dropped when the queue is full. */
    synchronized void request(int sample) {
        if (stopped.get() != null || closed || count == QUEUE) {
            return;
        }
        queue[(head + count++) % QUEUE] = sample;
        requested++;
        if (count == 1) {
            // Fillers wait unwoken only on an empty queue; otherwise they copy, or look at the
            // loader's slack every PAUSE_MILLIS: a wake-up per miss would cost a loader-bound
            // epoch two context switches a sample, for a filler that finds no slack.
            notifyAll();
        }
    }

    /**
     * Filler {@code me}'s next request, once the loader has slack; -1 once closed. A request another
     * filler holds now is dropped (that one files it).
     */
    private synchronized int take(int me) throws InterruptedException {
        while (!closed) {
            if (count == 0) {
                wait();
            } else if (!slack.getAsBoolean()) {
                // The workers are the bottleneck: a timed look, so that the hot path signals nothing.
                wait(PAUSE_MILLIS);
            } else {
                int sample = queue[head];
                head = (head + 1) % QUEUE;
                count--;
                if (held(sample)) {
                    filled++;
                    continue;
                }
                inHand[me] = sample;
                takenFrom[me] = dataset;
                takenNames[me] = shardNames;
                return sample;
            }
        }
        return -1;
    }

    // Under the lock: startFillers replaces the arrays, which a racy read could see half copied.
    private synchronized Dataset takenFrom(int me) {
        return takenFrom[me];
    }

    private synchronized ShardNames takenNames(int me) {
        return takenNames[me];
    }

    private boolean held(int sample) {
        for (int s : inHand) {
            if (s == sample) {
                return true;
            }
        }
        return false;
    }

    private synchronized void done(int me) {
        inHand[me] = -1;
        filled++;
        notifyAll();
    }

    /** Filler {@code me}'s loop, under SCHED_IDLE: each requested original copied and filed. */
    private void fill(int me) {
        FillerPriority.lowest(say);
        TransformSpec decoding = TransformSpec.defaults();
        Originals originals = null;
        Dataset readingFrom = null;
        try (RestartCopy copier = newCopier();
                EntryWriter writer = newWriter()) {
            countOnce(false);
            while (true) {
                int sample = take(me);
                if (sample < 0) {
                    return;
                }
                try {
                    Dataset from = takenFrom(me);
                    if (from != readingFrom) { // a new loader's dataset: its originals from now on
                        if (originals != null) {
                            originals.close();
                        }
                        readingFrom = from;
                        originals = originals(from, takenNames(me), decoding.maxFileBytes(), false);
                    }
                    fillOne(sample, originals, copier, writer);
                } catch (IOException | UncheckedIOException e) {
                    failed(e);
                } catch (RuntimeException e) {
                    // The original could not be read: its shard failed (the workers' read of the same
                    // sample names why), or the dataset was closed after its last loader. Not copied.
                } finally {
                    done(me);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (originals != null) {
                originals.close();
            }
        }
    }

    private void fillOne(int sample, Originals from, RestartCopy copier, EntryWriter writer) throws IOException {
        if (stopped.get() != null) {
            return; // requests queued before the budget was reached, or the folder failed: said once
        }
        if (!from.identify(sample) || from.id.nameLength > EntryLookup.PATH_MAX) {
            return;
        }
        writer.name(from.id.key());
        int there = writer.entryType();
        if (there == S_IFDIR || (there != 0 && filedAlready(entryOf(from.id.key())))) {
            // Filled since it was asked for (another worker, another process), or a folder at its name.
            return;
        }
        if (!from.read(sample)) {
            return; // unreadable, changed while read, or not a JPEG: nothing to cache
        }
        file(from.id, copier.copy(from.bytes(), from.length()), copier, writer);
    }

    /**
     * Whether an entry is at {@code entry} in this format. An earlier Stoke's ({@link
     * CacheEntry#FORMER_MAGIC}) is removed, to be made again, as a worker's read removes it.
     */
    private boolean filedAlready(Path entry) throws IOException {
        if (!Files.isRegularFile(entry, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        java.nio.ByteBuffer magic = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        try (FileChannel ch = SafeFiles.openRegular(entry)) {
            while (magic.hasRemaining() && ch.read(magic) > 0) {}
        } catch (NoSuchFileException gone) {
            return false; // removed since (a worker found it damaged)
        } catch (IOException planted) {
            return false; // a link or a FIFO put there since: filing replaces it, as ever
        }
        if (magic.position() == 8 && magic.getLong(0) == CacheEntry.FORMER_MAGIC) {
            usage.remove(entry);
            return false;
        }
        return true;
    }

    /**
     * Files the entry of {@code id}, which {@code copier} has just copied with {@code outcome}: the
     * copy, or an entry that says to read the original. It is written from {@code writer}'s header
     * scratch and the copier's buffer, with nothing copied on the heap ({@link EntryWriter}). Not
     * filed when another filed it first, or when the folder is full (said once).
     *
     * @return whether this call filed it
     */
    boolean file(OriginalId id, RestartCopy.Outcome outcome, RestartCopy copier, EntryWriter writer)
            throws IOException {
        countOnce(false);
        long key = id.key();
        boolean isCopy = outcome == RestartCopy.Outcome.COPIED;
        long contentLength = isCopy ? copier.length() : 0;
        long headerLength = CacheEntry.HEADER_BYTES + id.nameLength;
        long total = headerLength + contentLength;
        long contentHash = isCopy ? CacheEntry.contentHash(0, copier.bytes(), 0, contentLength) : 0;
        MemorySegment header = writer.header();
        id.writeHeader(header, isCopy ? CacheEntry.COPY : CacheEntry.ORIGINAL, contentLength, contentHash);
        MemorySegment content = isCopy ? copier.bytes() : MemorySegment.NULL;
        // Written under a temporary name outside the count's lock, which a filler (under SCHED_IDLE,
        // so any busy thread preempts it) would otherwise hold across a write a worker then waits
        // out; only the rename is filed under it, so every process sees the budget and the folder
        // agree. O_EXCL under a random name: a link planted at a name it might take is never followed.
        writer.name(key);
        subfolder(key);
        if (writer.write(header, headerLength, content, contentLength) != 0) {
            // Its entry folder removed since this process made it (entries cleared by hand): again.
            forgetSubfolder(key);
            subfolder(key);
            if (writer.write(header, headerLength, content, contentLength) != 0) {
                throw new NoSuchFileException(
                        writer.entryPath().getString(0, StandardCharsets.UTF_8), null, "its folder is gone");
            }
        }
        FolderUsage.Outcome filed;
        try {
            filed = usage.add(total, budget, () -> {
                int there = writer.entryType();
                if (there == LibC.S_IFREG) {
                    return false; // another process filed it while this one copied
                }
                if (there == S_IFDIR) {
                    return false; // a folder, never Stoke's: left as it is (its name is read as a miss, said once)
                }
                // A reader sees the whole entry or none: rename is atomic within the folder, and
                // replaces a link or a FIFO planted at the entry's name, never what a link points to.
                writer.publish();
                return true;
            });
        } finally {
            writer.discardUnpublished(); // not filed: full, there already, or failed
        }
        if (filed == FolderUsage.Outcome.FILED) {
            (isCopy ? copied : originals).increment();
            filledBytes.add(total);
            return true;
        }
        if (filed == FolderUsage.Outcome.FULL && stopped.compareAndSet(null, Stop.BUDGET)) {
            say.accept("the restart cache in " + dir + " is full (" + usage.last() + " of its " + budget
                    + " bytes, counted over every process filling it): the files not copied yet are read as they"
                    + " are");
        }
        return false;
    }

    /**
     * A copier as every filer's: exact by construction (stoke_jpeg_add_restarts refuses what a copy
     * could change), so no check decodes, which would triple the work per file.
     */
    RestartCopy newCopier() {
        return new RestartCopy(restartMcus, TransformSpec.defaults(), false);
    }

    /**
     * Makes the entry folder of {@code key} ({@code xx/}, one of 256) once per process: each is
     * checked, or made, at its first entry, not at every one.
     */
    private void subfolder(long key) throws IOException {
        int i = (int) (key >>> 56);
        long bit = 1L << (i & 63);
        if ((madeSubfolders.get(i >>> 6) & bit) == 0) {
            CacheFolder.subfolder(entryOf(key).getParent(), access);
            madeSubfolders.getAndUpdate(i >>> 6, bits -> bits | bit);
        }
    }

    private void forgetSubfolder(long key) {
        int i = (int) (key >>> 56);
        long bit = 1L << (i & 63);
        madeSubfolders.getAndUpdate(i >>> 6, bits -> bits & ~bit);
    }

    /** A filer's writer of entries into this folder, confined to the thread that makes it. */
    EntryWriter newWriter() {
        return new EntryWriter(this, access.fileMode());
    }

    /** A filer's scratch for an entry's header, as {@link #file} needs. */
    static MemorySegment headerScratch(Arena arena) {
        return arena.allocate(CacheEntry.HEADER_BYTES + EntryLookup.PATH_MAX, 8);
    }

    /** Stops filling after the folder failed, said once: the rest is read from the originals. */
    void failed(Exception e) {
        if (stopped.compareAndSet(null, new Stop(e.getMessage()))) {
            say.accept("WARNING: the restart cache could not write to " + dir + " (" + e.getMessage()
                    + "); the rest is read from the originals");
        }
    }

    private Path entryOf(long key) {
        String hex = String.format("%016x", key);
        return dir.resolve(hex.substring(0, 2)).resolve(hex + SUFFIX);
    }

    /**
     * Fills the cache with every sample of {@code dataset} at once, on {@code threads} threads at the
     * process's priority ({@code stoke cache}): for a job that wants every copy before its first
     * epoch. A folder's or list's files, or its shards' members (each shard loaded, or fetched, as
     * its samples come). Entries already there are kept; the budget holds as always.
     *
     * @param progress told the number of samples handled, now and then
     */
    public void fill(Dataset dataset, int threads, java.util.function.LongConsumer progress) {
        if (!RestartCopy.available()) {
            throw new IllegalStateException("no copies can be made: " + RestartCopy.unavailableReason());
        }
        countOnce(true);
        Stop stop = stopped.get();
        if (stop != null && stop.failure() != null) {
            throw new IllegalStateException("cannot fill the restart cache in " + dir + ": " + stop.failure());
        }
        ShardNames names = dataset instanceof ShardDataset sharded ? new ShardNames(sharded.shards()) : null;
        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicLong done = new java.util.concurrent.atomic.AtomicLong();
        TransformSpec decoding = TransformSpec.defaults();
        io.stoke.loader.internal.InParallel.map(threads, threads, "stoke-cache-fill", t -> {
            try (Originals originals = originals(dataset, names, decoding.maxFileBytes(), true);
                    RestartCopy copier = newCopier();
                    EntryWriter writer = newWriter()) {
                for (int s = next.getAndIncrement();
                        s < dataset.size() && stopped.get() == null;
                        s = next.getAndIncrement()) {
                    fillOne(s, originals, copier, writer);
                    long d = done.incrementAndGet();
                    if (d % 64 == 0 || d == dataset.size()) {
                        progress.accept(d);
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return null;
        });
    }

    /**
     * What the cache has done in this process; {@code usedBytes} is the folder's entries' bytes,
     * counted over every process filling it, as this one last saw them (or, before this process
     * wrote, as the folder's count says), of its {@code budgetBytes}; {@code filledBytes} the bytes of
     * the entries this process filed. {@code full}: the budget was reached, and nothing more is
     * written; {@code failure}: the folder could not be written (a read-only mount, a full disk, a
     * folder another user owns), in the error's own words, and nothing more is written; null while
     * it can be.
     */
    public record Stats(
            long hits,
            long misses,
            long copied,
            long copiedByWorkers,
            long originals,
            long damaged,
            long usedBytes,
            boolean full,
            long filledBytes,
            long budgetBytes,
            String failure) {}

    public Stats stats() {
        return new Stats(
                hits.sum(),
                misses.sum(),
                copied.sum(),
                copiedByWorkers.sum(),
                originals.sum(),
                damaged.sum(),
                usage.last(),
                stopped.get() == Stop.BUDGET,
                filledBytes.sum(),
                budget,
                failure());
    }

    /** Why the folder could not be written, or null. */
    private String failure() {
        Stop stop = stopped.get();
        return stop == null ? null : stop.failure();
    }

    /**
     * Waits until the filler has handled every request made so far, or the timeout passes; true when
     * it has. For tests and for a caller that wants the copies before the next epoch.
     */
    public synchronized boolean awaitFilled(long timeoutMillis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (filled < requested && !closed) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            wait(left);
        }
        return filled >= requested;
    }

    /** Stops the fillers after the entry in hand; requests not yet handled are dropped. */
    @Override
    public void close() {
        List<Thread> started;
        synchronized (this) {
            closed = true;
            notifyAll();
            started = List.copyOf(fillers);
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        for (Thread t : started) {
            try {
                t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        try {
            usage.close();
        } catch (IOException e) {
            // Only the count's descriptor: nothing is lost.
        }
    }
}
