package io.stoke.pack;

import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * A sample's WebDataset key: its path relative to the dataset's root without the extension,
 * folders kept ({@code n01440764/img_001}). WebDataset (and wids) split a member's name at the
 * first dot of its file name, so the key's file name must hold none: dots in the stem become
 * {@code _}. Two samples with one key would merge into one sample when read, so that is an error
 * naming both files.
 *
 * <p>A Parquet row's key is its file's name without {@code .parquet}, a slash, then the row's own
 * key made as above ({@code train-00000-of-00004/17}): its {@code --key-column} value, or its row
 * in its file, which alone would repeat from file to file.
 */
public final class SampleKeys {
    private SampleKeys() {}

    /**
     * The key of sample {@code sample}.
     *
     * @throws PackException when the path cannot make a key: absolute outside the root, or with an
     *     empty, {@code .} or {@code ..} component (a tar member must not climb out of its folder)
     */
    public static String key(Dataset dataset, int sample) {
        String given = dataset instanceof ShardDataset sharded
                ? folderOf(sharded.shards(), sharded.shards().shardOf(sample)) + "/" + dataset.path(sample)
                : dataset.path(sample);
        Path p = Path.of(given).normalize(); // "./a/b.jpg" and "a//b.jpg" are "a/b.jpg"
        if (p.isAbsolute()) {
            if (!p.startsWith(dataset.root())) {
                throw new PackException(given + ": an absolute path outside the dataset's folder " + dataset.root()
                        + " has no key relative to it");
            }
            p = dataset.root().relativize(p);
        }
        String path = p.toString();
        int slash = path.lastIndexOf('/');
        String folder = path.substring(0, slash + 1);
        String name = path.substring(slash + 1);
        int dot = name.lastIndexOf('.');
        String stem = dot > 0 ? name.substring(0, dot) : name;
        String key = folder + stem.replace('.', '_');
        for (String part : key.split("/", -1)) {
            if (part.isEmpty() || part.equals(".") || part.equals("..")) {
                throw new PackException(dataset.name(sample) + ": its path '" + path
                        + "' has an empty, '.' or '..' component, which a tar member name must not have");
            }
        }
        return key;
    }

    /** The folder of a shard's samples' keys: the name of the file it lies in, without its extension. */
    static String folderOf(Shards shards, int shard) {
        String file = Path.of(shards.fileOf(shard)).getFileName().toString();
        int dot = file.lastIndexOf('.');
        return dot > 0 ? file.substring(0, dot) : file;
    }

    /**
     * Checks the keys of a dataset of shards whose samples are keyed by their row in their file (a
     * Parquet dataset opened without a key column): those are unique within a file, so the keys are
     * unique when no two files give the same folder; no row group is read.
     *
     * @throws PackException naming the first two files whose keys would share a folder
     */
    public static void checkFilesUnique(ShardDataset dataset) {
        Shards shards = dataset.shards();
        Map<String, String> fileByFolder = new HashMap<>();
        for (int s = 0; s < shards.shardCount(); s++) {
            String file = shards.fileOf(s);
            String other = fileByFolder.putIfAbsent(folderOf(shards, s), file);
            if (other != null && !other.equals(file)) {
                throw new PackException("the samples of " + other + " and of " + file + " would have the same keys ("
                        + folderOf(shards, s) + "/ROW): the file names without their extension must differ");
            }
        }
    }

    /**
     * Checks that every key of {@code index} is valid and unique, with no object kept per sample:
     * a 64-bit hash of each key is sorted, and only the keys of equal hashes are compared.
     *
     * @throws PackException naming the first two files that share a key
     */
    public static void checkUnique(Dataset dataset) {
        int n = dataset.size();
        long[] hashes = new long[n];
        for (int i = 0; i < n; i++) {
            hashes[i] = hash(key(dataset, i));
        }
        long[] sorted = hashes.clone();
        Arrays.sort(sorted);
        for (int i = 1; i < n; i++) {
            if (sorted[i] == sorted[i - 1]) {
                findEqualKeys(dataset, hashes, sorted[i]);
            }
        }
    }

    /** Compares the keys of the samples whose hash is {@code h}; throws when two are equal. */
    private static void findEqualKeys(Dataset dataset, long[] hashes, long h) {
        int first = -1;
        for (int i = 0; i < hashes.length; i++) {
            if (hashes[i] != h) {
                continue;
            }
            if (first < 0) {
                first = i;
                continue;
            }
            for (int j = first; j < i; j++) {
                if (hashes[j] == h && key(dataset, j).equals(key(dataset, i))) {
                    throw new PackException("two samples have the key '" + key(dataset, i)
                            + "' (dots in a file name become" + " '_', and the extension is dropped): "
                            + dataset.name(j)
                            + " and " + dataset.name(i));
                }
            }
        }
    }

    private static long hash(String key) {
        // FNV-1a over the UTF-8 bytes, then a 64-bit finaliser (SplitMix64's) to spread it.
        long h = 0xcbf29ce484222325L;
        for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xFF;
            h *= 0x100000001b3L;
        }
        h = (h ^ (h >>> 30)) * 0xbf58476d1ce4e5b9L;
        h = (h ^ (h >>> 27)) * 0x94d049bb133111ebL;
        return h ^ (h >>> 31);
    }

    /**
     * SHA-256 of every sample's path and label, in order: what the manifest records so that a
     * resumed pack is known to continue the same list of samples (the files' bytes are not read).
     */
    public static String fingerprint(Dataset dataset) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
        byte[] label = new byte[5];
        for (int i = 0; i < dataset.size(); i++) {
            sha.update(dataset.path(i).getBytes(StandardCharsets.UTF_8));
            int l = dataset.label(i);
            label[0] = 0; // separator: a path never holds a NUL
            label[1] = (byte) (l >>> 24);
            label[2] = (byte) (l >>> 16);
            label[3] = (byte) (l >>> 8);
            label[4] = (byte) l;
            sha.update(label);
        }
        return HexFormat.of().formatHex(sha.digest());
    }
}
