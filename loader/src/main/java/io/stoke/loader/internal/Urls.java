package io.stoke.loader.internal;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * URLs as Stoke prints and stores them. A presigned S3 URL or an Azure SAS URL carries its
 * credential in the query string ({@code X-Amz-Signature=...}, {@code sig=...}), and a URL may
 * carry a user and password before its host; neither may reach a message, a log, an index, a
 * cache entry or an output table, which other users and later jobs read. So every URL Stoke
 * prints goes through {@link #redact}, and every URL Stoke names an object or a sample by goes
 * through {@link #withoutQuery}; only the requests themselves use the URL as given. A local path
 * (no {@code scheme://}) is returned as it is: a {@code ?} in a file name is no query.
 */
public final class Urls {
    /** What stands for a query string in a printed URL. */
    public static final String REDACTED = "REDACTED";

    /** A URL inside text: a scheme, {@code ://}, and what follows up to white space or a quote. */
    private static final Pattern URL_IN_TEXT = Pattern.compile("\\b[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>]+");

    private Urls() {}

    /**
     * The URL as a message prints it: scheme, host, port and path; a user and password before the
     * host dropped, a query string or fragment replaced by {@code ?REDACTED}. So a reader still
     * sees which object failed, and that it was named with a query. Null stays null.
     */
    public static String redact(String url) {
        int end = pathEnd(url);
        if (end < 0) {
            return url;
        }
        String name = withoutUserInfo(url, end);
        return end < url.length() ? name + "?" + REDACTED : name;
    }

    /**
     * The URL as Stoke names the object by (a sample's {@code <shard>/<key>}, an index's shard, a
     * restart cache entry, an output table's {@code shard}): scheme, host, port and path, without a
     * user and password, query string or fragment. Two URLs that differ only in their query name
     * one object; what tells its versions apart is the object's ETag (or size and time), which
     * Stoke checks on every fetch. Null stays null.
     */
    public static String withoutQuery(String url) {
        int end = pathEnd(url);
        return end < 0 ? url : withoutUserInfo(url, end);
    }

    /**
     * {@code text} with every URL in it {@link #redact redacted}: for a message that quotes a URL
     * inside (the JDK's, or a cause's), printed where Stoke's own messages are. Punctuation that
     * ends a URL ({@code .,;:)}) is taken for the sentence's and kept.
     */
    public static String redactAll(String text) {
        if (text == null || text.indexOf("://") < 0) {
            return text;
        }
        Matcher m = URL_IN_TEXT.matcher(text);
        StringBuilder out = new StringBuilder(text.length());
        while (m.find()) {
            String url = m.group();
            int keep = url.length();
            while (keep > 0 && ".,;:)".indexOf(url.charAt(keep - 1)) >= 0) {
                keep--; // "https://host/a.tar?sig=x: not found" ends the URL at the colon
            }
            m.appendReplacement(out, Matcher.quoteReplacement(redact(url.substring(0, keep)) + url.substring(keep)));
        }
        m.appendTail(out);
        return out.toString();
    }

    /** Whether {@code url} carries a query string, a fragment, or a user and password. */
    public static boolean hasSecrets(String url) {
        int end = pathEnd(url);
        return end >= 0 && (end < url.length() || userInfoEnd(url) >= 0);
    }

    /** Where the path of {@code url} ends (its length when it has no query or fragment); -1: not a URL. */
    private static int pathEnd(String url) {
        int scheme = schemeEnd(url);
        if (scheme < 0) {
            return -1;
        }
        int query = url.indexOf('?', scheme);
        int fragment = url.indexOf('#', scheme);
        if (query < 0) {
            return fragment < 0 ? url.length() : fragment;
        }
        return fragment < 0 ? query : Math.min(query, fragment);
    }

    /** The index after {@code scheme://}, or -1 when {@code url} does not start with one. */
    private static int schemeEnd(String url) {
        if (url == null) {
            return -1;
        }
        int colon = url.indexOf("://");
        if (colon <= 0 || !Character.isLetter(url.charAt(0))) {
            return -1;
        }
        for (int i = 1; i < colon; i++) {
            char c = url.charAt(i);
            if (!(Character.isLetterOrDigit(c) || c == '+' || c == '.' || c == '-')) {
                return -1;
            }
        }
        return colon + 3;
    }

    /** Where {@code user:password@} ends in {@code url} (the index after the {@code @}), or -1. */
    private static int userInfoEnd(String url) {
        int start = schemeEnd(url);
        int end = start;
        while (end < url.length() && "/?#".indexOf(url.charAt(end)) < 0) {
            end++;
        }
        int at = url.lastIndexOf('@', end - 1);
        return at >= start ? at + 1 : -1;
    }

    private static String withoutUserInfo(String url, int pathEnd) {
        int user = userInfoEnd(url);
        return user < 0 ? url.substring(0, pathEnd) : url.substring(0, schemeEnd(url)) + url.substring(user, pathEnd);
    }
}
