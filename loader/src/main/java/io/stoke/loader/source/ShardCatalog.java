package io.stoke.loader.source;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.internal.Urls;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * A dataset's shard catalog, {@code index.json} beside the shards (the file keeps the name
 * WebDataset gives it): WebDataset's wids shard list
 * ({@code __kind__: wids-shard-index-v1}, a {@code shardlist} of {@code url}, {@code nsamples},
 * {@code filesize}), which {@code stoke pack} already writes and {@code stoke catalog} writes for
 * shards made elsewhere, plus, under {@code stoke}, whether the samples carry labels.
 *
 * <p>It holds what opening needs, one line of numbers a shard: with it, opening reads the listing
 * and this file, nothing else, whatever the number of shards; each shard's own tar headers are
 * read when the shard is first read, from the bytes fetched for that read. Per-sample rows are
 * left out on purpose: they would make the catalog grow with the samples (a billion samples, tens
 * of gigabytes), where the headers of a shard already in memory cost microseconds a sample to
 * read. The file is parsed as a stream, so a million shards cost their entries, not a tree.
 *
 * <p>Shard URLs are as {@code stoke pack} writes them, relative to the catalog's folder (or
 * absolute). {@code filesize} is checked when a shard is fetched: a shard of another size is named
 * as a stale catalog, never read.
 */
public record ShardCatalog(List<Entry> shards, boolean labelled) {
    /** The file name opening looks for beside the shards. */
    public static final String FILE = "index.json";

    static final String KIND = "wids-shard-index-v1";

    /** An entry's nsamples or filesize that is not there, or not a whole number. */
    private static final long ABSENT = Long.MIN_VALUE;

    // Bounded as a file is before it is read (ReadLimits): a stream's document and each string in it.
    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxDocumentLength(ReadLimits.CATALOG_FILE)
                    .maxStringLength(ReadLimits.CATALOG_STRING)
                    .maxNestingDepth(64)
                    .build())
            .build();

    /**
     * One shard: its URL (relative to the catalog, or absolute), samples, size in bytes, and for a
     * remote shard its ETag when the store gave one (null otherwise).
     */
    public record Entry(String url, int nsamples, long filesize, String etag) {
        public Entry {
            if (url == null || url.isEmpty() || nsamples < 0 || filesize < 0) {
                throw new IllegalArgumentException("a shard entry needs a url, nsamples >= 0 and filesize >= 0");
            }
        }

        public Entry(String url, int nsamples, long filesize) {
            this(url, nsamples, filesize, null);
        }
    }

    public ShardCatalog {
        shards = List.copyOf(shards);
    }

    /**
     * The catalog in {@code in}, or null when it is not one Stoke can open from: another JSON file, or
     * a wids shard list without Stoke's {@code labelled} (another tool's, or a pack written before
     * it was recorded). The caller then reads the shards' headers.
     *
     * @param name the catalog's file or URL, for errors
     */
    public static ShardCatalog read(InputStream in, String name) {
        List<RawEntry> raw = new ArrayList<>(); // checked once the file is known to be Stoke's
        Boolean labelled = null;
        String kind = null;
        try (JsonParser p = JSON.createParser(in)) {
            expect(p.nextToken(), JsonToken.START_OBJECT, name);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                switch (field) {
                    case "__kind__" -> kind = p.getValueAsString();
                    case "shardlist" -> {
                        expect(value, JsonToken.START_ARRAY, name);
                        while (p.nextToken() == JsonToken.START_OBJECT) {
                            raw.add(entry(p));
                        }
                    }
                    case "stoke" -> {
                        expect(value, JsonToken.START_OBJECT, name);
                        while (p.nextToken() == JsonToken.FIELD_NAME) {
                            String f = p.currentName();
                            JsonToken v = p.nextToken();
                            if (f.equals("labelled") && (v == JsonToken.VALUE_TRUE || v == JsonToken.VALUE_FALSE)) {
                                labelled = v == JsonToken.VALUE_TRUE;
                            } else {
                                p.skipChildren();
                            }
                        }
                    }
                    default -> p.skipChildren();
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException(name + ": not a readable shard catalog (" + e.getMessage() + ")", e);
        }
        if (!KIND.equals(kind) || labelled == null) {
            return null;
        }
        List<Entry> shards = new ArrayList<>(raw.size());
        for (RawEntry r : raw) {
            String wrong = r.url() == null || r.url().isEmpty()
                    ? "has no url"
                    : r.nsamples() < 0 || r.nsamples() > Integer.MAX_VALUE
                            ? "has nsamples " + shown(r.nsamples()) + ", not a count of samples (0 to "
                                    + Integer.MAX_VALUE + ")"
                            : r.filesize() < 0 ? "has filesize " + shown(r.filesize()) + ", not a size in bytes" : null;
            if (wrong != null) {
                throw new IllegalArgumentException(
                        name + ": shard entry " + (shards.size() + 1) + " (url " + r.url() + ") " + wrong);
            }
            shards.add(new Entry(r.url(), (int) r.nsamples(), r.filesize(), r.etag()));
        }
        return new ShardCatalog(shards, labelled);
    }

    /** An entry as written, before it is known to be Stoke's and checked. */
    private record RawEntry(String url, long nsamples, long filesize, String etag) {}

    /** An entry's number as written, or what it lacks. */
    private static String shown(long number) {
        return number == ABSENT ? "missing (or not a whole number)" : Long.toString(number);
    }

    private static RawEntry entry(JsonParser p) throws IOException {
        String url = null;
        long nsamples = ABSENT;
        long filesize = ABSENT;
        String etag = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            switch (f) {
                case "url" -> url = p.getValueAsString();
                case "nsamples" -> nsamples = v == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : ABSENT;
                case "filesize" -> filesize = v == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : ABSENT;
                case "etag" -> etag = p.getValueAsString();
                default -> p.skipChildren();
            }
        }
        return new RawEntry(url, nsamples, filesize, etag);
    }

    private static void expect(JsonToken got, JsonToken want, String name) {
        if (got != want) {
            throw new IllegalArgumentException(
                    name + ": not a shard catalog (expected " + want + ", found " + got + ")");
        }
    }

    /** Writes the catalog as JSON, one shard entry a line. */
    public void write(OutputStream out, String name) throws IOException {
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.writeStartObject();
            g.writeStringField("__kind__", KIND);
            g.writeNumberField("wids_version", 1);
            g.writeStringField("name", name);
            g.writeArrayFieldStart("shardlist");
            for (Entry e : shards) {
                g.writeRaw("\n  ");
                g.writeStartObject();
                g.writeStringField("url", e.url());
                g.writeNumberField("nsamples", e.nsamples());
                g.writeNumberField("filesize", e.filesize());
                if (e.etag() != null) {
                    g.writeStringField("etag", e.etag());
                }
                g.writeEndObject();
            }
            g.writeRaw("\n");
            g.writeEndArray();
            g.writeObjectFieldStart("stoke");
            g.writeStringField("written_by", "stoke index");
            g.writeBooleanField("labelled", labelled);
            g.writeEndObject();
            g.writeEndObject();
            g.writeRaw("\n");
        }
    }

    /**
     * The dataset this catalog describes, over {@code bytes} (the shards by number, in the catalog's
     * order, named {@code names}): nothing is read yet; each shard's samples are read from its own
     * bytes when the shard is first read. The dataset owns {@code bytes}.
     *
     * @param name the catalog's file or URL, for errors
     */
    public ShardDataset dataset(List<String> names, ShardBytes bytes, Path root, String name) {
        if (names.size() != shards.size()) {
            bytes.close();
            throw new IllegalArgumentException(name + ": " + shards.size() + " shards, " + names.size() + " named");
        }
        int[] first = new int[shards.size() + 1];
        for (int s = 0; s < shards.size(); s++) {
            first[s + 1] = Math.addExact(first[s], shards.get(s).nsamples());
        }
        return new ShardDataset(
                root, new Shards(names.toArray(String[]::new), first, bytes, List.of(), labelled, name));
    }

    /**
     * The catalog of {@code dataset}, opened from its shards' headers: each shard's URL as
     * {@code url} gives it (relative to where the catalog goes, or as named), its samples, size and,
     * for a remote shard, the ETag its scan read.
     *
     * @throws IllegalArgumentException when a shard is damaged: a catalog must count what a reader
     *     finds, so damaged shards are named and no catalog is made
     */
    public static ShardCatalog of(ShardDataset dataset, UnaryOperator<String> url) {
        Shards tar = dataset.shards();
        if (!tar.problems().isEmpty()) {
            throw new IllegalArgumentException("damaged shard(s), not catalogued (a catalog must count what a reader"
                    + " finds):\n  " + String.join("\n  ", tar.problems()));
        }
        List<Entry> entries = new ArrayList<>(tar.shardCount());
        for (int s = 0; s < tar.shardCount(); s++) {
            entries.add(new Entry(
                    url.apply(Urls.withoutQuery(tar.shardName(s))), // never a presigned URL's signature
                    tar.samples(s),
                    tar.bytes().size(s),
                    tar.bytes().etag(s)));
        }
        return new ShardCatalog(entries, tar.labelled());
    }

    /** Samples in all shards. */
    public long samples() {
        long n = 0;
        for (Entry e : shards) {
            n += e.nsamples();
        }
        return n;
    }
}
