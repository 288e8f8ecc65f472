package io.stoke.pack;

import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import io.stoke.loader.source.TableColumns;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * How a pack's manifest identifies a Parquet source: its files as they are (absolute path, size,
 * modification time), each row group's row count and the columns named. A folder's identity is its
 * samples' paths and labels ({@link SampleKeys#fingerprint}); a Parquet dataset's keys and labels
 * lie in its row groups, and reading them all before packing would read the whole dataset twice,
 * so a rerun compares the files instead: one rewritten since the pack began is refused, named.
 */
final class SourceFiles {
    private SourceFiles() {}

    /** The files {@code dataset}'s shards lie in, in dataset order, each once, as they are now. */
    static List<PackManifest.SourceFile> of(ShardDataset dataset) {
        Shards shards = dataset.shards();
        List<PackManifest.SourceFile> out = new ArrayList<>();
        String previous = null;
        for (int s = 0; s < shards.shardCount(); s++) {
            String name = shards.fileOf(s);
            if (name.equals(previous)) {
                continue; // consecutive row groups of one file
            }
            previous = name;
            Path file = Path.of(name).toAbsolutePath().normalize();
            try {
                out.add(new PackManifest.SourceFile(
                        file.toString(),
                        Files.size(file),
                        Files.getLastModifiedTime(file).toString()));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the size and time of " + file + ": " + e.getMessage(), e);
            }
        }
        return out;
    }

    /** SHA-256 of {@code files}, the row count of each of {@code dataset}'s shards, and {@code columns}. */
    static String fingerprint(ShardDataset dataset, List<PackManifest.SourceFile> files, TableColumns columns) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
        // NUL separates fields: a path, a time or a column name never holds one.
        for (PackManifest.SourceFile f : files) {
            sha.update((f.path() + '\0' + f.size() + '\0' + f.modified() + '\0').getBytes(StandardCharsets.UTF_8));
        }
        Shards shards = dataset.shards();
        for (int s = 0; s < shards.shardCount(); s++) {
            sha.update((shards.samples(s) + "\0").getBytes(StandardCharsets.UTF_8));
        }
        sha.update(("columns\0" + columns.image() + '\0' + columns.label() + '\0' + columns.key())
                .getBytes(StandardCharsets.UTF_8));
        return HexFormat.of().formatHex(sha.digest());
    }
}
