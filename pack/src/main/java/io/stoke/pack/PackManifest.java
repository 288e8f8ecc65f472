package io.stoke.pack;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.stoke.loader.internal.SafeFiles;
import io.stoke.loader.source.TableColumns;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * {@code DIR/index.json}: the pack's manifest, a shard catalog in WebDataset's wids format
 * ({@code __kind__: wids-shard-index-v1}, a {@code shardlist} of {@code url}, {@code nsamples},
 * {@code filesize}) so that {@code wids.ShardListDataset("DIR/index.json")} reads the shards as
 * they are, plus what Stoke needs to resume: per shard the source samples it covers
 * ({@code first_sample}, {@code end_sample}) and those it left out ({@code skipped}); for the
 * pack, under {@code stoke}, the source, its fingerprint, the options and whether the pack is
 * {@code complete}; for a Parquet source also its files as they were ({@code source_files}: path,
 * size, modification time) and the columns named, so that a changed file is named when a rerun is
 * refused. It lists only shards already renamed into place, and is rewritten atomically
 * after each one, so after a crash it describes exactly the shards that are whole.
 */
public final class PackManifest {
    static final String KIND = "wids-shard-index-v1";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** A sample left out of the shards, and why. */
    public record Skipped(String path, String reason) {}

    /** A file the source's samples are read from, as it was: its size and modification time (ISO-8601). */
    public record SourceFile(String path, long size, String modified) {}

    /**
     * One whole shard.
     *
     * @param url         its file name, relative to the manifest
     * @param nsamples    samples in it
     * @param filesize    its size in bytes
     * @param firstSample the source index of its first sample
     * @param endSample   where the next shard's samples start in the source (exclusive end of this one's)
     * @param skipped     source samples in {@code [previous shard's end, endSample)} left out of it
     */
    public record Shard(
            String url, int nsamples, long filesize, int firstSample, int endSample, List<Skipped> skipped) {
        public Shard {
            skipped = List.copyOf(skipped);
        }
    }

    private final String name;
    private final String source;
    private final int sourceSamples;
    private final String sourceSha256;
    private final List<SourceFile> sourceFiles;
    private final TableColumns columns;
    private final PackOptions options;
    private final List<Shard> shards = new ArrayList<>();
    private boolean complete;
    private boolean labelled;

    /** A pack of a folder or list file: identified by its samples' paths and labels alone. */
    public PackManifest(String name, String source, int sourceSamples, String sourceSha256, PackOptions options) {
        this(name, source, sourceSamples, sourceSha256, List.of(), TableColumns.DEFAULT, options);
    }

    /**
     * @param sourceFiles the files the samples are read from, as they are now (empty for a folder
     *     or list file, whose files are not listed)
     * @param columns     the table columns the source was opened with
     */
    public PackManifest(
            String name,
            String source,
            int sourceSamples,
            String sourceSha256,
            List<SourceFile> sourceFiles,
            TableColumns columns,
            PackOptions options) {
        this.name = name;
        this.source = source;
        this.sourceSamples = sourceSamples;
        this.sourceSha256 = sourceSha256;
        this.sourceFiles = List.copyOf(sourceFiles);
        this.columns = columns;
        this.options = options;
    }

    /** The manifest in {@code dir}, or empty when there is none. */
    public static Optional<PackManifest> read(Path dir) {
        Path file = dir.resolve(PackFiles.MANIFEST);
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        // Not followed, nor waited on: a link or a FIFO planted at the name is named, and refused.
        try (java.io.InputStream in = java.nio.channels.Channels.newInputStream(SafeFiles.openRegular(file))) {
            JsonNode root = JSON.readTree(in);
            if (!KIND.equals(root.path("__kind__").asText())
                    || !root.path("stoke").isObject()) {
                throw new PackConflictException(file + " is not a manifest written by stoke pack (no __kind__ " + KIND
                        + " with a 'stoke' section); --overwrite replaces it");
            }
            JsonNode stoke = root.get("stoke");
            JsonNode o = stoke.path("options");
            PackOptions options = new PackOptions(
                    PackOptions.Format.valueOf(o.path("format").asText().toUpperCase(Locale.ROOT)),
                    o.path("resize").asInt(),
                    o.path("max_side").asInt(),
                    o.path("quality").asInt(),
                    // Packs from before restart markers have none.
                    o.path("restart_interval_mcus").asInt(0),
                    o.path("crop").asInt(),
                    o.path("shard_size").asLong());
            List<SourceFile> files = new ArrayList<>();
            for (JsonNode f : stoke.path("source_files")) {
                files.add(new SourceFile(
                        f.path("path").asText(),
                        f.path("size").asLong(),
                        f.path("modified").asText()));
            }
            JsonNode c = stoke.path("columns");
            PackManifest m = new PackManifest(
                    root.path("name").asText(),
                    stoke.path("source").asText(),
                    stoke.path("source_samples").asInt(),
                    stoke.path("source_sha256").asText(),
                    files,
                    new TableColumns(text(c, "image"), text(c, "label"), text(c, "key")),
                    options);
            for (JsonNode s : root.path("shardlist")) {
                List<Skipped> skipped = new ArrayList<>();
                for (JsonNode k : s.path("skipped")) {
                    skipped.add(new Skipped(
                            k.path("path").asText(), k.path("reason").asText()));
                }
                m.shards.add(new Shard(
                        s.path("url").asText(),
                        s.path("nsamples").asInt(),
                        s.path("filesize").asLong(),
                        s.path("first_sample").asInt(),
                        s.path("end_sample").asInt(),
                        skipped));
            }
            m.complete = stoke.path("complete").asBoolean();
            // Packs from before unlabelled samples had a .cls for every sample they held.
            m.labelled = stoke.path("labelled").asBoolean(m.samples() > 0);
            return Optional.of(m);
        } catch (IOException | IllegalArgumentException e) {
            throw new PackConflictException(file + " cannot be read as stoke pack's manifest (" + e.getMessage()
                    + "); --overwrite replaces it");
        }
    }

    private static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    /** Writes the manifest to {@code dir/index.json} atomically (temporary file, forced, renamed). */
    public void write(Path dir) {
        PackFiles.writeAtomically(dir.resolve(PackFiles.MANIFEST), toJson());
    }

    byte[] toJson() {
        ObjectNode root = JSON.createObjectNode();
        root.put("__kind__", KIND);
        root.put("wids_version", 1);
        root.put("name", name);
        ArrayNode list = root.putArray("shardlist");
        for (Shard s : shards) {
            ObjectNode n = list.addObject();
            n.put("url", s.url());
            n.put("nsamples", s.nsamples());
            n.put("filesize", s.filesize());
            n.put("first_sample", s.firstSample());
            n.put("end_sample", s.endSample());
            ArrayNode skipped = n.putArray("skipped");
            for (Skipped k : s.skipped()) {
                skipped.addObject().put("path", k.path()).put("reason", k.reason());
            }
        }
        ObjectNode stoke = root.putObject("stoke");
        stoke.put("source", source);
        stoke.put("source_samples", sourceSamples);
        stoke.put("source_sha256", sourceSha256);
        if (!sourceFiles.isEmpty()) {
            ArrayNode files = stoke.putArray("source_files");
            for (SourceFile f : sourceFiles) {
                files.addObject().put("path", f.path()).put("size", f.size()).put("modified", f.modified());
            }
        }
        if (!columns.isDefault()) {
            ObjectNode c = stoke.putObject("columns");
            c.put("image", columns.image());
            c.put("label", columns.label());
            c.put("key", columns.key());
        }
        ObjectNode o = stoke.putObject("options");
        o.put("format", options.format().label());
        if (options.format() == PackOptions.Format.PNG) {
            if (options.maxSide() > 0) {
                o.put("max_side", options.maxSide());
            } else {
                o.put("resize", options.resize());
            }
        } else if (options.format() == PackOptions.Format.ORIGINAL) {
            // Rewritten JPEGs' markers: each image's DRI holds the divisor of its MCUs per row nearest it.
            o.put("restart_interval_mcus", options.restartMcus());
        } else if (options.format() == PackOptions.Format.JPEG) {
            if (options.maxSide() > 0) {
                o.put("max_side", options.maxSide());
            } else {
                o.put("resize", options.resize());
            }
            o.put("quality", options.quality());
            o.put("chroma_subsampling", "4:2:0");
            // The interval aimed at; each image's DRI holds the divisor of its MCUs per row nearest it.
            o.put("restart_interval_mcus", options.restartMcus());
        } else {
            o.put("resize", options.resize());
            o.put("crop", options.crop());
            o.put("dtype", "uint8");
            o.put("layout", "HWC");
            o.put("dct_scaling", "pow2");
        }
        o.put("shard_size", options.shardSize());
        stoke.put("complete", complete);
        // Whether samples carry a .cls (a source without labels gives none): what opening from this
        // catalog needs to know (ShardCatalog).
        stoke.put("labelled", labelled);
        stoke.put("samples", samples());
        stoke.put("skipped", skippedCount());
        try {
            return JSON.writeValueAsBytes(root);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write the manifest as JSON", e);
        }
    }

    /** Whether a run over {@code other}'s source with its options continues this pack. */
    public boolean sameJob(PackManifest other) {
        return source.equals(other.source)
                && sourceSamples == other.sourceSamples
                && sourceSha256.equals(other.sourceSha256)
                && sourceFiles.equals(other.sourceFiles)
                && columns.equals(other.columns)
                && options.equals(other.options);
    }

    /**
     * The first of this pack's source files that {@code other} (the same source, as it is now) has
     * changed, removed or added, in words; null when the files are the same.
     */
    public String changedFile(PackManifest other) {
        for (SourceFile f : sourceFiles) {
            SourceFile now = other.sourceFiles.stream()
                    .filter(o -> o.path().equals(f.path()))
                    .findFirst()
                    .orElse(null);
            if (now == null) {
                return f.path() + " is no longer part of the source";
            }
            if (!now.equals(f)) {
                return f.path() + " has changed since the pack began (" + f.size() + " bytes, modified " + f.modified()
                        + "; now " + now.size() + " bytes, modified " + now.modified() + ")";
            }
        }
        for (SourceFile f : other.sourceFiles) {
            if (sourceFiles.stream().noneMatch(o -> o.path().equals(f.path()))) {
                return f.path() + " was not part of the source when the pack began";
            }
        }
        return null;
    }

    /** The pack in words, for the message that refuses to mix two. */
    public String describe() {
        return source + " (" + sourceSamples + " samples"
                + (sourceFiles.isEmpty()
                        ? ""
                        : " in " + sourceFiles.size() + " file" + (sourceFiles.size() == 1 ? "" : "s"))
                + (columns.isDefault() ? "" : ", columns " + describe(columns))
                + ", index sha256 " + sourceSha256.substring(0, 12) + "...) with " + options.describe();
    }

    private static String describe(TableColumns c) {
        List<String> named = new ArrayList<>();
        if (c.image() != null) {
            named.add("image " + c.image());
        }
        if (c.label() != null) {
            named.add("label " + c.label());
        }
        if (c.key() != null) {
            named.add("key " + c.key());
        }
        return String.join(", ", named);
    }

    public List<Shard> shards() {
        return List.copyOf(shards);
    }

    /** Adds a shard just renamed into place. */
    public void add(Shard shard) {
        shards.add(shard);
    }

    /** Keeps the first {@code n} shards only. */
    public void truncate(int n) {
        shards.subList(n, shards.size()).clear();
    }

    /** Replaces the last shard's record (its file unchanged: only its range or skipped list grew). */
    public void replaceLast(Shard shard) {
        shards.set(shards.size() - 1, shard);
    }

    /** Where the next shard's samples start in the source: the last shard's end, or 0. */
    public int resumeAt() {
        return shards.isEmpty() ? 0 : shards.getLast().endSample();
    }

    public boolean complete() {
        return complete;
    }

    public void complete(boolean complete) {
        this.complete = complete;
    }

    /** A sample with a label (a {@code .cls}) was written. */
    void labelled(boolean labelled) {
        this.labelled |= labelled;
    }

    public long samples() {
        long n = 0;
        for (Shard s : shards) {
            n += s.nsamples();
        }
        return n;
    }

    public long skippedCount() {
        long n = 0;
        for (Shard s : shards) {
            n += s.skipped().size();
        }
        return n;
    }

    public PackOptions options() {
        return options;
    }

    public String source() {
        return source;
    }
}
