package io.stoke.loader.source;

import java.nio.file.Path;
import java.util.Set;

/**
 * Opens datasets at URLs ({@code s3://}, {@code https://}, ...). The loader knows no object store:
 * a module that does (stoke-remote) registers one of these in {@code META-INF/services}, and
 * {@link Datasets#open(String, ShardCache)} finds it by the URL's scheme at run time.
 */
public interface UrlDatasetProvider {
    /** The schemes this provider opens, lower case, without {@code ://}. */
    Set<String> schemes();

    /**
     * The dataset at {@code url}; the caller closes it.
     *
     * @param cache how many bytes of shards to hold at once, and where (null: memory)
     */
    Dataset open(String url, ShardCache cache);

    /** Bytes of remote shards held at once, and the folder that holds them as files (null: memory). */
    record ShardCache(long bytes, Path folder) {
        public ShardCache {
            if (bytes <= 0) {
                throw new IllegalArgumentException("the shard cache must hold at least one byte, got " + bytes);
            }
        }
    }
}
