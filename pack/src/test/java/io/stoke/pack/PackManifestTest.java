package io.stoke.pack;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The manifest keeps the options a resumed pack must match, the restart interval among them. */
class PackManifestTest {
    @TempDir
    Path tmp;

    private static PackManifest manifest(PackOptions options) {
        return new PackManifest("pack", "/data/src", 10, "ab".repeat(32), options);
    }

    @Test
    void theRestartIntervalRoundTripsAndAPackWithoutItsMarkersIsAnotherJob() {
        PackOptions marked = PackOptions.jpegShorterSide(256, 90, 1 << 20);
        PackOptions plain = marked.withRestartInterval(0);
        manifest(marked).write(tmp);
        PackManifest read = PackManifest.read(tmp).orElseThrow();
        assertTrue(read.sameJob(manifest(marked)));
        assertFalse(read.sameJob(manifest(plain)), "a pack with markers resumed without them");
        assertTrue(read.describe().contains("--restart-interval 4"), read.describe());
    }

    @Test
    void aManifestFromBeforeRestartMarkersReadsAsNone() throws Exception {
        manifest(PackOptions.jpegShorterSide(256, 90, 1 << 20)).write(tmp);
        Path file = tmp.resolve(PackFiles.MANIFEST);
        String json = Files.readString(file, StandardCharsets.UTF_8);
        assertTrue(json.contains("\"restart_interval_mcus\""), json);
        Files.writeString(file, json.replaceAll("\"restart_interval_mcus\"\\s*:\\s*4\\s*,?", ""));
        PackManifest old = PackManifest.read(tmp).orElseThrow();
        assertTrue(old.sameJob(
                manifest(PackOptions.jpegShorterSide(256, 90, 1 << 20).withRestartInterval(0))));
        assertTrue(old.describe().contains("--no-restart-markers"), old.describe());
    }
}
