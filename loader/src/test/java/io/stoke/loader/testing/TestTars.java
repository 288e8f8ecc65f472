package io.stoke.loader.testing;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/** Writing tar shards in tests (the independent writers are Python's tarfile and stoke pack). */
public final class TestTars {
    private TestTars() {}

    /** Appends one regular-file member. */
    public static void member(TarArchiveOutputStream tar, String name, byte[] data) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(data.length);
        tar.putArchiveEntry(e);
        tar.write(data);
        tar.closeArchiveEntry();
    }

    /**
     * Writes shard {@code shard} of the remote tests' small labelled set: {@code perShard} samples
     * keyed {@code k/<shard>-<i>}, a JPEG of a size that differs by sample and shard, and a
     * {@code .cls} label {@code (shard * perShard + i) % 4}.
     *
     * @return the shard's size in bytes
     */
    public static long labelledShard(Path file, int shard, int perShard) throws IOException {
        try (OutputStream os = Files.newOutputStream(file);
                TarArchiveOutputStream tar = new TarArchiveOutputStream(os)) {
            for (int i = 0; i < perShard; i++) {
                String key = "k/" + shard + "-" + i;
                member(tar, key + ".jpg", TestImages.jpeg(48 + 3 * i, 40 + 5 * shard, 100L * shard + i));
                member(
                        tar,
                        key + ".cls",
                        Integer.toString((shard * perShard + i) % 4).getBytes(StandardCharsets.US_ASCII));
            }
        }
        return Files.size(file);
    }
}
