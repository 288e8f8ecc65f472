package io.stoke.pack;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The shards of one run, in order: decides where each sample goes, cuts a new shard before a
 * sample that would take the current one past the size limit (a shard holds at least one
 * sample), and after each shard is renamed into place records it in the manifest, which is then
 * rewritten. Samples must come in source order; skipped ones are recorded in the shard whose
 * range they fall in. Used by one thread, the writer.
 */
final class ShardSequence implements AutoCloseable {
    private final Path dir;
    private final PackManifest manifest;
    private final long limit;
    private final String extension;
    private final Packer.Listener listener;
    private final List<PackManifest.Skipped> pendingSkipped = new ArrayList<>();
    private final byte[] label = new byte[11];
    private ShardWriter current;
    private int currentFirst;
    private int shardsWritten;
    private long bytesWritten;

    ShardSequence(Path dir, PackManifest manifest, Packer.Listener listener) {
        this.dir = dir;
        this.manifest = manifest;
        this.limit = manifest.options().shardSize();
        this.extension = "." + manifest.options().format().extension();
        this.listener = listener;
    }

    /**
     * Writes sample {@code sample}: {@code KEY.jpg} (or {@code .npy}) holding {@code data[0, length)},
     * then {@code KEY.cls} holding {@code classLabel} in ASCII decimal; a sample without a label
     * ({@code classLabel} -1: a Parquet row of an unlabelled table or split) has no {@code .cls}.
     */
    void add(int sample, String key, int classLabel, byte[] data, int length) {
        add(sample, key, classLabel, data, length, null);
    }

    /** {@link #add}, the image member named {@code KEY.<ext>} ({@code ext} null: the pack format's). */
    void add(int sample, String key, int classLabel, byte[] data, int length, String ext) {
        if (classLabel < -1) {
            throw new IllegalArgumentException(key + ": label " + classLabel + " (the lowest is -1: none)");
        }
        String dataName = key + (ext == null ? extension : "." + ext);
        boolean labelled = classLabel >= 0;
        String labelName = labelled ? key + ".cls" : null;
        int labelLength = labelled ? ascii(classLabel) : 0;
        long cost = ShardWriter.memberBytes(dataName, length)
                + (labelled ? ShardWriter.memberBytes(labelName, labelLength) : 0);
        if (current != null && current.samples() > 0 && current.bytes() + cost + ShardWriter.END_BYTES > limit) {
            commit(sample);
        }
        if (current == null) {
            current = ShardWriter.create(
                    dir.resolve(PackFiles.shardName(manifest.shards().size())));
            currentFirst = sample;
        }
        current.add(dataName, data, length);
        if (labelled) {
            current.add(labelName, label, labelLength);
            manifest.labelled(true);
        }
        current.sampleDone();
    }

    /** Records sample {@code path}, left out, in the shard whose range it falls in. */
    void skip(String path, String reason) {
        pendingSkipped.add(new PackManifest.Skipped(path, reason));
    }

    /** The label's decimal digits into {@link #label}, without allocating; returns how many. */
    private int ascii(int value) {
        if (value < 0) {
            throw new IllegalArgumentException("negative label " + value);
        }
        int n = 1;
        for (int v = value; v >= 10; v /= 10) {
            n++;
        }
        for (int i = n - 1, v = value; i >= 0; i--, v /= 10) {
            label[i] = (byte) ('0' + v % 10);
        }
        return n;
    }

    private void commit(int end) {
        long size = current.commit();
        String name = current.target().getFileName().toString();
        manifest.add(new PackManifest.Shard(name, current.samples(), size, currentFirst, end, pendingSkipped));
        pendingSkipped.clear();
        int samples = current.samples();
        current = null;
        manifest.write(dir);
        shardsWritten++;
        bytesWritten += size;
        listener.shardWritten(name, samples, size);
    }

    /**
     * Ends the pack at source sample {@code end}: the last shard is committed and the manifest is
     * marked complete.
     *
     * @throws PackException when no shard holds a sample (nothing decoded)
     */
    void finish(int end) {
        if (current != null) {
            commit(end);
        } else if (manifest.shards().isEmpty()) {
            throw new PackException("no sample decoded: " + pendingSkipped.size() + " files skipped, no shard written"
                    + (pendingSkipped.isEmpty()
                            ? ""
                            : " (first: " + pendingSkipped.getFirst().path() + ": "
                                    + pendingSkipped.getFirst().reason() + ")"));
        } else if (!pendingSkipped.isEmpty()) {
            // Only skipped samples after the last whole shard (a resumed run): they join its range.
            PackManifest.Shard last = manifest.shards().getLast();
            List<PackManifest.Skipped> skipped = new ArrayList<>(last.skipped());
            skipped.addAll(pendingSkipped);
            pendingSkipped.clear();
            manifest.replaceLast(new PackManifest.Shard(
                    last.url(), last.nsamples(), last.filesize(), last.firstSample(), end, skipped));
        }
        manifest.complete(true);
        manifest.write(dir);
    }

    int shardsWritten() {
        return shardsWritten;
    }

    long bytesWritten() {
        return bytesWritten;
    }

    /** Abandons a shard in progress (its {@code .tmp} file is removed); whole shards stay. */
    @Override
    public void close() {
        if (current != null) {
            current.close();
            current = null;
        }
    }
}
