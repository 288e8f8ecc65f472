package io.stoke.remote;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.source.ShardDataset;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;

/**
 * One job (or one rank of one) of {@link SharedShardCacheTest}, run as a process of its own: it says
 * {@code ready}, waits for the go file (so that the jobs a test starts open their datasets at the
 * same moment, not a JVM start apart), reads its epochs through the shard cache and prints every
 * batch as {@code idx:label:crc ...}, then {@code fetches N bytes B found F} from its cache. It
 * closes its dataset (and so removes the files that it alone maps) once all {@code PEERS} jobs
 * have read their epochs, as the ranks of one job end together.
 *
 * <p>Arguments: {@code SPEC FOLDER|- CAPACITY RANK WORLD EPOCHS GO_FILE PEERS}.
 */
public final class SharedCacheJob {
    private SharedCacheJob() {}

    public static void main(String[] args) throws Exception {
        String spec = args[0];
        Path folder = args[1].equals("-") ? null : Path.of(args[1]);
        long capacity = Long.parseLong(args[2]);
        int rank = Integer.parseInt(args[3]);
        int world = Integer.parseInt(args[4]);
        int epochs = Integer.parseInt(args[5]);
        Path go = Path.of(args[6]);
        int peers = Integer.parseInt(args[7]);
        System.out.println("ready");
        System.out.flush();
        long until = System.nanoTime() + 120_000_000_000L;
        while (!Files.exists(go)) {
            if (System.nanoTime() > until) {
                throw new IllegalStateException("no go file " + go + " within 120 s");
            }
            Thread.sleep(2);
        }
        long[] counts = new long[3];
        Runnable together = () -> {
            try {
                Files.createFile(
                        go.resolveSibling("end-" + ProcessHandle.current().pid()));
                while (true) {
                    try (var ended = Files.list(go.getParent())) {
                        if (ended.filter(p -> p.getFileName().toString().startsWith("end-"))
                                        .count()
                                >= peers) {
                            return;
                        }
                    }
                    if (System.nanoTime() > until) {
                        throw new IllegalStateException("the other jobs did not end within 120 s");
                    }
                    Thread.sleep(2);
                }
            } catch (java.io.IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        };
        for (String line : run(spec, folder, capacity, rank, world, epochs, counts, together)) {
            System.out.println(line);
        }
        System.out.println("fetches " + counts[0] + " bytes " + counts[1] + " found " + counts[2]);
        System.out.flush();
    }

    /**
     * The batches of {@code epochs} epochs of rank {@code rank} of {@code world}, shuffled within a
     * window of 2 shards: one line a batch. {@code counts} receives the cache's fetches, fetched
     * bytes and shards found in the folder; {@code beforeClose} runs before the dataset closes.
     */
    static List<String> run(
            String spec,
            Path folder,
            long capacity,
            int rank,
            int world,
            int epochs,
            long[] counts,
            Runnable beforeClose) {
        List<String> lines = new ArrayList<>();
        try (ShardDataset d =
                RemoteDatasets.open(spec, RemoteShardsTest.fast(), capacity, folder, FolderAccess.PRIVATE)) {
            try (Loader loader = Loader.builder(d)
                    .transform(RemoteShardsTest.SMALL)
                    .batchSize(4)
                    .workers(2)
                    .slots(3)
                    .shuffle(true)
                    .seed(9)
                    .shuffleWindow(2)
                    .partition(rank, world)
                    .epochs(epochs)
                    .build()) {
                for (Batch b : loader) {
                    try (b) {
                        lines.add(line(b));
                    }
                }
            }
            RemoteShards shards = (RemoteShards) d.shards().bytes();
            counts[0] = shards.fetches();
            counts[1] = shards.fetchedBytes();
            counts[2] = shards.found();
            beforeClose.run();
        }
        return lines;
    }

    /** A batch as {@code idx:label:crc} of each sample, the CRC of its pixels. */
    static String line(Batch b) {
        StringBuilder s = new StringBuilder();
        long bytes = b.pixels().byteSize() / b.size();
        for (int i = 0; i < b.size(); i++) {
            CRC32 crc = new CRC32();
            crc.update(b.pixels().asSlice(i * bytes, bytes).asByteBuffer());
            s.append(i == 0 ? "" : " ")
                    .append(b.indices().getAtIndex(ValueLayout.JAVA_LONG, i))
                    .append(':')
                    .append(b.labels().getAtIndex(ValueLayout.JAVA_INT, i))
                    .append(':')
                    .append(Long.toHexString(crc.getValue()));
        }
        return s.toString();
    }
}
