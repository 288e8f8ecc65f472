package io.stoke.remote;

import io.stoke.loader.internal.Urls;

/**
 * A remote object could not be read: not found, refused, or still failing after the retries and
 * the deadline of {@link RemoteOptions}. The message starts with the URL and says why (for
 * retried failures: how many attempts were made and the last cause), so it can go to the user
 * as it is: the URL, and any URL in the reason, {@link Urls#redact redacted} (a presigned URL's
 * signature is a credential). {@link #url()} gives the URL as the caller gave it, to code that
 * matches it; code that reports it redacts it too.
 */
public final class ShardFetchException extends RuntimeException {
    private final String url;
    private final long storeSize;
    private final String storeEtag;

    public ShardFetchException(String url, String reason, Throwable cause) {
        this(url, reason, cause, -1, null);
    }

    private ShardFetchException(String url, String reason, Throwable cause, long storeSize, String storeEtag) {
        super(Urls.redact(url) + ": " + Urls.redactAll(reason), cause);
        this.url = url;
        this.storeSize = storeSize;
        this.storeEtag = storeEtag;
    }

    /** The object is not the size it was read as: it changed since, or the size came from a stale shard catalog. */
    static ShardFetchException sizeChanged(String url, String reason, long storeSize) {
        return new ShardFetchException(url, reason, null, storeSize, null);
    }

    /** The object is not the version (ETag) asked for: it changed since, or the ETag came from a stale shard catalog. */
    static ShardFetchException etagChanged(String url, String reason, String storeEtag) {
        return new ShardFetchException(url, reason, null, -1, storeEtag);
    }

    /** The object's size in the store, when the failure is that it differs from the size expected; else -1. */
    public long storeSize() {
        return storeSize;
    }

    /** The object's ETag in the store, when the failure is that it differs from the ETag expected; else null. */
    public String storeEtag() {
        return storeEtag;
    }

    /** Whether the object in the store is not the one expected (another size or another ETag). */
    public boolean changed() {
        return storeSize >= 0 || storeEtag != null;
    }

    /**
     * Whether the store has no object at the URL (HTTP 404 or 410): the stores' reason then starts
     * {@code not found (}; a missing bucket is not this, it is named as one.
     */
    public boolean notFound() {
        return getMessage().contains(": not found (");
    }

    /**
     * {@code notFound}'s object is listed by {@code catalog} ({@code catalogName}: "the shard catalog
     * URL", "the catalog URL"), which is therefore stale; {@code what} is what to catalogue again
     * ("shards", "files").
     */
    public static ShardFetchException goneSinceCatalogued(
            String url, String catalogName, String what, ShardFetchException notFound) {
        return new ShardFetchException(
                url,
                catalogName + " lists it, but the store has no such object: the catalog is stale (removed or renamed"
                        + " since it was written); run `stoke catalog` on the " + what + " again ("
                        + notFound.getMessage() + ")",
                notFound);
    }

    public ShardFetchException(String url, String reason) {
        this(url, reason, null);
    }

    /** The URL of the object that could not be read, as the caller gave it: query string included. */
    public String url() {
        return url;
    }
}
