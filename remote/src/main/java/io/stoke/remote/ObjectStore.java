package io.stoke.remote;

import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.SegmentInputStream;
import io.stoke.loader.internal.Urls;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * Whole-object and ranged reads from an object store or web server: the bytes of one WebDataset
 * shard, or of a Parquet file's footer and column chunks. The
 * store is not tied to one URL; it holds the connections, credentials and threads, so a loader
 * makes one and reads every shard through it. Thread-safe.
 *
 * <p>Every failure is a {@link ShardFetchException} whose message starts with the URL. Transient
 * failures (HTTP 5xx, 429, a refused or dropped connection, a short body, a stalled transfer) are
 * retried with exponential backoff, within {@link RemoteOptions#attempts()} tries and
 * {@link RemoteOptions#deadline()}; a missing object (404) or a refusal (403, other 4xx) fails at
 * once, since asking again cannot change the answer.
 */
public interface ObjectStore extends AutoCloseable {
    /** The object's size in bytes (a HEAD request). A missing object fails at once with "not found". */
    default long size(String url) {
        return stat(url).size();
    }

    /**
     * What one HEAD request tells of an object: its size, and its version where the store names one:
     * its ETag, and its Last-Modified time as the store wrote it (null where the store sent none).
     * What names a shard's copy in a shard cache that several processes share.
     */
    record Stat(long size, String etag, String lastModified) {}

    /** The object's size and version (a HEAD request), as {@link #size}. */
    Stat stat(String url);

    /**
     * Reads the whole object into {@code dst}, whose size must be the object's ({@link #size}), by
     * parallel ranged GETs of {@link RemoteOptions#partBytes()} each, each part retried on its own.
     * Each part's length and range are checked against what was asked for, and nothing is ever
     * written outside {@code dst}, nor into it once this method has returned or thrown (an attempt
     * still running then is cut off). {@code dst} must be writable from other threads (a global,
     * automatic or shared arena's): the parts are written by the store's threads.
     */
    void read(String url, MemorySegment dst);

    /**
     * {@link #read(String, MemorySegment)} of the version whose ETag is {@code etag} (null: any):
     * another version fails with {@link ShardFetchException#storeEtag()} set. Returns the ETag of
     * what was read, or null when the store names no versions.
     */
    String read(String url, MemorySegment dst, String etag);

    /**
     * Bytes {@code [offset, offset + dst.byteSize())} of the object at {@code url}, whose size is
     * {@code objectSize}, read as {@link #read(String, MemorySegment, String)} reads a whole object:
     * in checked, retried parallel parts, of the version {@code etag} (null: any), nothing written
     * outside {@code dst}. Returns the ETag of what was read, or null. What reads part of an object
     * (a Parquet file's footer and column chunks) uses this.
     */
    String readRange(String url, long offset, long objectSize, MemorySegment dst, String etag);

    /**
     * A small whole object (a catalog, a marker) as bytes on the heap: {@link #size} then
     * {@link #read(String, MemorySegment)}, of at most {@link ReadLimits#CATALOG_FILE}. Not for shards,
     * which are read into their cache.
     */
    default byte[] readBytes(String url) {
        return readBytes(url, ReadLimits.CATALOG_FILE);
    }

    /**
     * {@link #readBytes(String)} of an object of at most {@code limit} bytes: a larger one is refused
     * by its size, before anything is allocated or fetched; the read then takes exactly that size,
     * whatever the store sends.
     */
    default byte[] readBytes(String url, long limit) {
        long size = size(url);
        ReadLimits.checkSize(Urls.redact(url), size, Math.min(limit, Integer.MAX_VALUE - 8));
        try (Arena arena = Arena.ofShared()) { // the store's threads write the parts
            MemorySegment bytes = arena.allocate(Math.max(1, size)).asSlice(0, size);
            read(url, bytes);
            return bytes.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /**
     * Parses the whole object at {@code url}, of at most {@code limit} bytes, as a stream: it is
     * fetched off the heap (a larger one is refused by its size, before anything is fetched), so the
     * heap holds what {@code parse} makes of it, never the file itself. For a catalog.
     */
    default <T> T parseWhole(String url, long limit, Function<InputStream, T> parse) {
        long size = size(url);
        ReadLimits.checkSize(url, size, limit);
        try (Arena arena = Arena.ofShared()) { // the store's threads write the parts
            MemorySegment bytes = arena.allocate(Math.max(1, size)).asSlice(0, size);
            read(url, bytes);
            return parse.apply(new SegmentInputStream(bytes));
        }
    }

    /**
     * Writes {@code bytes} as the whole object at {@code url}, replacing what is there (one PUT,
     * retried like a read). Stoke writes small files only this way (a shard catalog); HTTP stores are
     * read-only here and throw {@link UnsupportedOperationException}.
     */
    void write(String url, byte[] bytes);

    /**
     * Writes {@code bytes} at {@code url} only if no object is there, in one conditional PUT
     * ({@code If-None-Match: *}): of several writers racing for one URL, exactly one gets true.
     * Returns false when an object was there (HTTP 412). A PUT is retried like a read; a retry that
     * meets an object equal to {@code bytes} takes it as its own earlier try (which landed, its
     * answer lost), so writers must each write bytes of their own. Throws {@link UnsupportedOperationException}
     * when the store refuses conditional writes (S3 has them since August 2024; older stores answer
     * 501); a store that ignores the header instead would replace the object and answer true, which
     * no client can tell from the answer.
     */
    boolean create(String url, byte[] bytes);

    /** Deletes the object at {@code url}; a missing object is no error. */
    void delete(String url);

    /**
     * The URLs of the objects under {@code prefixUrl} (directly or in sub-"folders") whose names
     * end in {@code suffix}, sorted by name. {@code s3://bucket/train/} lists that folder; the
     * prefix is an S3 key prefix, so {@code s3://bucket/train-} lists the keys starting with
     * {@code train-}. HTTP has no listing: there this throws {@link UnsupportedOperationException}.
     */
    List<String> list(String prefixUrl, String suffix);

    /** An object a listing found: its URL, size, and last-modified time in epoch milliseconds. */
    record Listed(String url, long size, long lastModifiedMillis) {}

    /**
     * The objects under {@code prefixUrl} whose keys sort after {@code startAfter} (a full URL under
     * the prefix; null: from the first), with their sizes and times, sorted by name: what a table
     * format's log replay lists (Delta Lake's {@code _delta_log}). One listing request per thousand
     * objects; HTTP has no listing: there this throws {@link UnsupportedOperationException}.
     */
    List<Listed> listFrom(String prefixUrl, String startAfter);

    /** Stops the store's threads and closes its connections; reads still running fail. */
    @Override
    void close();

    /**
     * The store for the URL's scheme: {@link S3ObjectStore} for {@code s3://}, {@link HttpObjectStore}
     * for {@code http://} and {@code https://}. The URL only picks the kind of store; the store
     * reads any URL of that kind.
     *
     * @throws IllegalArgumentException for another scheme
     * @throws IllegalStateException    for {@code s3://} when no AWS credentials are configured
     *                                  (the message says which variables to set)
     */
    static ObjectStore forUrl(String url, RemoteOptions options) {
        return switch (scheme(url)) {
            case "s3" -> new S3ObjectStore(options);
            case "http", "https" -> new HttpObjectStore(options);
            default ->
                throw new IllegalArgumentException("unsupported URL " + Urls.redact(url)
                        + ": remote shards are read from s3://bucket/key, http:// or https:// URLs");
        };
    }

    private static String scheme(String url) {
        int colon = url.indexOf("://");
        return colon <= 0 ? "" : url.substring(0, colon).toLowerCase(Locale.ROOT);
    }
}
