package io.stoke.embed;

import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One input file of a dataset and its embedding table: a tar shard, or a Parquet file (the
 * consecutive row groups {@link Shards#fileOf} gives one file), or, for a folder or list of images,
 * the whole list. Its table holds samples {@code [firstSample, firstSample + samples)} of the
 * dataset, every one once and in order.
 *
 * @param path        the file as the user named it (a path or URL), where a task opens it; "" for
 *                    a folder or list of images
 * @param shard       the table's {@code shard} column: the file's name ("" for images)
 * @param table       the table's file name
 * @param firstSample the dataset's first sample in the file
 * @param samples     how many samples the file holds
 */
public record InputFile(String path, String shard, String table, int firstSample, int samples) {
    /** The table of a folder or list of images, which has no input files of its own. */
    public static final String FILES_TABLE = "embeddings.parquet";

    /**
     * The input files of {@code dataset}, in dataset order: a tar shard each, a Parquet file each
     * (however many row groups it has), or the one list of a folder or list of images.
     *
     * @throws IllegalArgumentException when two files have one file name (in two folders), so their
     *     tables would be one file
     */
    public static List<InputFile> of(Dataset dataset) {
        if (!(dataset instanceof ShardDataset s)) {
            return List.of(new InputFile("", "", FILES_TABLE, 0, dataset.size()));
        }
        Shards shards = s.shards();
        List<InputFile> files = new ArrayList<>();
        Map<String, String> seen = new HashMap<>();
        int shard = 0;
        while (shard < shards.shardCount()) {
            String path = shards.fileOf(shard);
            int end = shard + 1;
            // A shard that is its file (a tar shard) stands alone: one listed twice is two tables of
            // one name, refused below, not one table of both.
            boolean part = !shards.shardName(shard).equals(path);
            while (part && end < shards.shardCount() && shards.fileOf(end).equals(path)) {
                end++;
            }
            String name = fileName(path);
            InputFile file = new InputFile(
                    path,
                    name,
                    tableName(name),
                    shards.firstSample(shard),
                    shards.firstSample(end) - shards.firstSample(shard));
            String other = seen.put(file.table(), path);
            if (other != null) {
                throw new IllegalArgumentException("input files " + other + " and " + path
                        + " have one file name, so their tables would be one file (" + file.table() + ")");
            }
            files.add(file);
            shard = end;
        }
        return files;
    }

    /** A file's name: the last part of its path or URL, which names it within its folder or prefix. */
    static String fileName(String path) {
        int slash = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
        return path.substring(slash + 1);
    }

    /**
     * The table of the input file named {@code fileName}: {@code .tar} replaced by {@code .parquet};
     * a Parquet file's table has the input's own name.
     */
    static String tableName(String fileName) {
        String lower = fileName.toLowerCase(Locale.ROOT);
        if (lower.endsWith(".parquet")) {
            return fileName;
        }
        String base = lower.endsWith(".tar") ? fileName.substring(0, fileName.length() - 4) : fileName;
        return base + ".parquet";
    }

    /** Whether {@code sample} of the dataset lies in this file. */
    boolean holds(int sample) {
        return sample >= firstSample && sample - firstSample < samples;
    }
}
