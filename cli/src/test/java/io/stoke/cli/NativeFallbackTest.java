package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.ffm.StokePixels;
import io.stoke.loader.testing.TestImages;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Without the native pixel library Stoke says so once, loudly, and gives the same pixels in Java. */
class NativeFallbackTest {
    @TempDir
    Path tmp;

    private String bench(Path data, String pixelsPath, Path json) throws Exception {
        List<String> cmd = new ArrayList<>(ShmTestSupport.javaCommand(
                Main.class.getName(),
                "bench",
                data.toString(),
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--resize",
                "40",
                "--crop",
                "32",
                "--no-warmup",
                "--json",
                json.toString()));
        cmd.add(1, "-D" + StokePixels.PATH_PROPERTY + "=" + pixelsPath);
        Path log = tmp.resolve("log-" + json.getFileName());
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "bench did not end");
        String out = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    void turnedOffItSaysSoOnceAndStillDecodes() throws Exception {
        Path data = TestImages.imageFolder(tmp.resolve("data"), 20, 2, 9);
        String off = bench(data, "none", tmp.resolve("off.json"));
        assertEquals(
                1,
                off.lines()
                        .filter(l -> l.contains("native pixel library is not available"))
                        .count(),
                off);
        assertTrue(off.contains("turned off with -Dstoke.pixels.path=none") && off.contains("resizing in Java"), off);
        assertTrue(off.contains("20 in 5 batches (0 skipped"), off);
        String missing = bench(data, tmp.resolve("no-such-lib.so").toString(), tmp.resolve("missing.json"));
        assertTrue(missing.contains("native pixel library is not available: cannot load"), missing);
    }
}
