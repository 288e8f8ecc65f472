package io.stoke.remote;

import io.stoke.loader.source.BracePattern;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.TarShardScanner;
import io.stoke.loader.source.UrlDatasetProvider;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Opens WebDataset shards at URLs: {@code s3://bucket/prefix/train-{000000..000127}.tar}, one
 * {@code .tar} URL, an {@code s3://bucket/prefix/} listing (every {@code .tar} under it, in name
 * order), or the same over {@code http(s)://} (no listing there). Each shard's size comes from a
 * HEAD; then each shard is fetched once to read its tar headers, which fixes the dataset's order
 * and size before the first batch, as a folder's scan does. What the cache can hold of them stays
 * for the first epoch.
 */
public final class RemoteDatasets implements UrlDatasetProvider {
    /** ServiceLoader's: the loader finds this class by the URL's scheme. */
    public RemoteDatasets() {}

    @Override
    public Set<String> schemes() {
        return Set.of("s3", "http", "https");
    }

    @Override
    public Dataset open(String url, ShardCache cache) {
        return open(url, RemoteOptions.defaults(), cache.bytes(), cache.folder());
    }

    /**
     * @param cacheBytes bytes of shards held at once ({@code --shard-cache})
     * @param folder     where to keep them as files, or null for memory
     */
    public static ShardDataset open(String spec, RemoteOptions options, long cacheBytes, Path folder) {
        ObjectStore store = ObjectStore.forUrl(spec, options);
        try {
            List<String> urls = urls(spec, store);
            long[] sizes = sizes(urls, store, options.parallelism());
            RemoteShards shards = new RemoteShards(store, urls, sizes, cacheBytes, folder);
            return TarShardScanner.index(
                    urls, shards, Path.of("").toAbsolutePath(), Math.max(2, options.parallelism()));
        } catch (RuntimeException | Error e) {
            store.close();
            throw e;
        }
    }

    static List<String> urls(String spec, ObjectStore store) {
        if (BracePattern.hasBraces(spec)) {
            return BracePattern.expand(spec);
        }
        if (spec.toLowerCase(Locale.ROOT).endsWith(".tar")) {
            return List.of(spec);
        }
        List<String> listed = store.list(spec, ".tar");
        if (listed.isEmpty()) {
            throw new IllegalArgumentException("no .tar objects under " + spec);
        }
        return listed;
    }

    private static long[] sizes(List<String> urls, ObjectStore store, int parallelism) {
        long[] sizes = new long[urls.size()];
        if (urls.size() == 1) {
            sizes[0] = store.size(urls.get(0));
            return sizes;
        }
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(parallelism, urls.size())), r -> {
            Thread t = new Thread(r, "stoke-shard-head");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<Long>> futures = new ArrayList<>();
            for (String url : urls) {
                futures.add(pool.submit(() -> store.size(url)));
            }
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = futures.get(i).get();
            }
            return sizes;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } finally {
            pool.shutdownNow();
        }
    }
}
