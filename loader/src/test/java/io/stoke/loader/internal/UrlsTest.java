package io.stoke.loader.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Urls against the JDK's own URL parser (java.net.URI): what is kept is the URI's scheme, host, port and path. */
class UrlsTest {
    private static final String SECRET = "deadbeefsecret";

    private static final List<String> URLS = List.of(
            "https://bucket.s3.amazonaws.com/train/shard-000001.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                    + "&X-Amz-Credential=AKIAEXAMPLE%2F20250101%2Fus-east-1%2Fs3%2Faws4_request"
                    + "&X-Amz-Signature=" + SECRET,
            "https://account.blob.core.windows.net/data/train-000002.tar?sv=2022-11-02&sp=r&sig=" + SECRET + "%3D",
            "http://user:" + SECRET + "@127.0.0.1:8080/a/b.tar?token=" + SECRET + "#frag",
            "http://127.0.0.1:8080/a/b.tar#" + SECRET,
            "s3://bucket/prefix/shard-000003.tar",
            "https://host/index.json");

    @Test
    void everyUrlKeepsTheUrisSchemeHostPortAndPathAndLosesItsSecrets() throws Exception {
        for (String url : URLS) {
            URI uri = new URI(url);
            String expected = uri.getScheme() + "://" + uri.getHost() + (uri.getPort() >= 0 ? ":" + uri.getPort() : "")
                    + uri.getRawPath();
            boolean secret = uri.getRawQuery() != null || uri.getRawFragment() != null || uri.getRawUserInfo() != null;
            assertEquals(expected, Urls.withoutQuery(url), url);
            String marked = uri.getRawQuery() != null || uri.getRawFragment() != null ? "?REDACTED" : "";
            assertEquals(expected + marked, Urls.redact(url), url);
            assertEquals(secret, Urls.hasSecrets(url), url);
            assertFalse(Urls.redact(url).contains(SECRET), url);
            assertFalse(Urls.withoutQuery(url).contains(SECRET), url);
        }
    }

    @Test
    void aBracePatternKeepsItsBracesAndLosesItsQuery() {
        String spec = "https://host/train-{000000..000003}.tar?X-Amz-Signature=" + SECRET;
        assertEquals("https://host/train-{000000..000003}.tar?REDACTED", Urls.redact(spec));
        for (String url : BracePattern.expand(spec)) {
            assertEquals(Urls.withoutQuery(url), url.substring(0, url.indexOf('?')));
        }
    }

    @Test
    void localPathsAndNullAreLeftAsTheyAre() {
        for (String path : new String[] {"/data/what?.tar", "relative/a#1.tar", "C:\\x?y", "3://x?y", ""}) {
            assertEquals(path, Urls.redact(path));
            assertEquals(path, Urls.withoutQuery(path));
            assertFalse(Urls.hasSecrets(path));
        }
        assertNull(Urls.redact(null));
        assertNull(Urls.withoutQuery(null));
        assertNull(Urls.redactAll(null));
    }

    @Test
    void everyUrlInATextIsRedactedAndTheTextAroundKept() {
        String a = URLS.get(0);
        String b = URLS.get(2);
        String text = "Illegal character in query at index 40: " + a + ": not found (" + b + "), see '" + a + "'.";
        String redacted = Urls.redactAll(text);
        assertFalse(redacted.contains(SECRET), redacted);
        assertEquals(
                "Illegal character in query at index 40: " + Urls.redact(a) + ": not found (" + Urls.redact(b)
                        + "), see '" + Urls.redact(a) + "'.",
                redacted);
        assertEquals("no URL here", Urls.redactAll("no URL here"));
        assertTrue(Urls.redactAll("s3://bucket/key.tar.").endsWith("key.tar."));
    }
}
