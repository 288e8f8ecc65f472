package io.stoke.loader.source;

import io.stoke.loader.fs.FolderAccess;
import java.nio.file.Path;
import java.util.Set;

/**
 * Opens datasets at URLs ({@code s3://}, {@code https://}, ...). The loader knows no object store:
 * a module that does (stoke-remote) registers one of these in {@code META-INF/services}, and
 * {@link Datasets#openLocalOrUrl(String, ShardCache)} finds it by the URL's scheme at run time.
 */
public interface UrlDatasetProvider {
    /** The schemes this provider opens, lower case, without {@code ://}. */
    Set<String> schemes();

    /**
     * The dataset at {@code url}; the caller closes it.
     *
     * @param shardCache how many bytes of shards to hold at once, and where (null: memory)
     */
    Dataset open(String url, ShardCache shardCache);

    /**
     * Bytes of remote shards held at once, the folder that holds them as files (null: memory), and
     * who may use that folder: the user alone ({@link FolderAccess#PRIVATE}), or a group's members.
     * Every process that names one folder shares it: a shard is fetched once for all of them.
     */
    record ShardCache(long bytes, Path folder, FolderAccess access) {
        public ShardCache {
            if (bytes <= 0) {
                throw new IllegalArgumentException("the shard cache must hold at least one byte, got " + bytes);
            }
            if (access == null) {
                throw new IllegalArgumentException(
                        "no FolderAccess for the shard cache: FolderAccess.PRIVATE is the user's alone");
            }
        }

        /** A cache whose folder, if any, is the user's alone. */
        public ShardCache(long bytes, Path folder) {
            this(bytes, folder, FolderAccess.PRIVATE);
        }
    }
}
