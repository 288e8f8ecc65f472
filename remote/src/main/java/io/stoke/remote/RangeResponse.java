package io.stoke.remote;

import java.io.InputStream;

/**
 * A GET whose status and headers have arrived (200 or 206), as a store hands it to {@link PartReader}:
 * which bytes the server says its body holds, and the body.
 *
 * @param range   the {@code Content-Range} of a 206; for a 200 (the whole object, the server
 *                ignored the {@code Range} header) {@code 0-(length-1)/length}
 * @param partial whether the server answered the range (206) rather than the whole object (200)
 * @param etag    the object's version as the server names it, or null; all parts must agree
 * @param body    the body, to read to its end
 * @param abort   cuts the connection, also from another thread while the body is being read:
 *                for a stalled or abandoned attempt, where closing the stream could wait on it
 */
record RangeResponse(ContentRange range, boolean partial, String etag, InputStream body, Runnable abort) {}
