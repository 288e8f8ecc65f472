package io.stoke.serve;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.loader.fs.FolderAccess;
import io.stoke.loader.internal.SafeFiles;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ShardDataset;
import io.stoke.ring.InheritedDescriptor;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The sample list ({@code stoke serve --sample-list-out}): the dataset's samples as the server
 * serves them, so that a consumer in another process can name the sample at each index of a batch.
 * This class is the one definition of the file (docs/shared-memory.md, "The sample list"):
 *
 * <ul>
 *   <li>a header line {@code {"samples": N, "listed": true|false, "dataset": "<fingerprint>",
 *       "shuffle_window": W}} (W the window in effect, 0 global), with {@code "table": "<spec>"} when
 *       the dataset is a lakehouse table's snapshot (the spec that opens it alone, {@code TABLE@v12});
 *   <li>then, when listed, one JSON array {@code ["<name>", <label>]} per line and sample, in dataset
 *       order (a batch's indices are line numbers from 0), the name being the file's path or
 *       {@code <shard>/<key>} (JSON so that any file name survives).
 * </ul>
 *
 * <p>Remote shards opened from their shard catalog are not listed: their names and labels are read
 * from each shard when it is fetched, and listing them here would fetch every shard before the first
 * batch (local ones are: their headers are read where they are mapped). The server writes it before
 * the ring is ready, so a reader that has attached reads it whole; a named file is written to an
 * exclusive temporary file that is renamed into place ({@code 0600}, a link planted at the name is
 * replaced or refused, never followed) and removed with the ring; {@code /dev/fd/N} (an inherited
 * descriptor, {@code stoke.DataLoader}'s) is written in place and left to its owner.
 *
 * @param samples the dataset's samples
 * @param listed whether each sample has its line
 * @param dataset the dataset's fingerprint
 * @param shuffleWindow the shuffle window in effect (0: global)
 * @param entries the samples' names and labels, in dataset order (empty where not listed)
 */
public record SampleList(int samples, boolean listed, String dataset, int shuffleWindow, List<Entry> entries) {
    /** One sample's line. */
    public record Entry(String name, int label) {}

    /**
     * The reader's mapper, made at the first read: the server only writes (a streaming generator),
     * and a fresh producer spent about 10 ms of its start making a mapper it never used.
     */
    private static final class Reader {
        static final ObjectMapper JSON = new ObjectMapper();
    }

    public SampleList {
        entries = List.copyOf(entries);
    }

    /** Writes {@code dataset}'s sample list to {@code file}, as the server does before the ring is ready. */
    public static void write(Dataset dataset, int shuffleWindow, Path file) throws IOException {
        if (InheritedDescriptor.names(file)) {
            try (OutputStream out = Files.newOutputStream(file)) {
                write(dataset, shuffleWindow, out);
            }
        } else {
            SafeFiles.writeStreamAtomically(file, FolderAccess.PRIVATE, out -> write(dataset, shuffleWindow, out));
        }
    }

    /** Removes a named sample list; an inherited descriptor is its owner's. Best effort: a shutdown hook calls it. */
    public static void remove(Path file) {
        if (file != null && !InheritedDescriptor.names(file)) {
            file.toFile().delete();
        }
    }

    private static void write(Dataset dataset, int shuffleWindow, OutputStream out) throws IOException {
        try (JsonGenerator g = new JsonFactory().createGenerator(out, JsonEncoding.UTF8)) {
            g.setRootValueSeparator(new SerializedString("\n"));
            boolean listed = !(dataset instanceof ShardDataset sharded
                    && sharded.shards().catalogued()
                    && sharded.shards().cached());
            g.writeStartObject();
            g.writeNumberField("samples", dataset.size());
            g.writeBooleanField("listed", listed);
            g.writeStringField("dataset", dataset.fingerprint());
            g.writeNumberField("shuffle_window", shuffleWindow);
            if (dataset instanceof ShardDataset table && table.snapshot() != null) {
                g.writeStringField("table", table.snapshot());
            }
            g.writeEndObject();
            for (int i = 0; listed && i < dataset.size(); i++) {
                g.writeStartArray();
                g.writeString(dataset.name(i));
                g.writeNumber(dataset.label(i));
                g.writeEndArray();
            }
            g.writeRaw('\n');
        }
    }

    /** The sample list in {@code file}; one that breaks the format is one sentence naming the file. */
    public static SampleList read(Path file) throws IOException {
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String first = in.readLine();
            if (first == null) {
                throw new IOException(file + " is not a sample list: it is empty");
            }
            JsonNode header = Reader.JSON.readTree(first);
            if (!header.path("samples").canConvertToInt()
                    || !header.path("listed").isBoolean()) {
                throw new IOException(file + " is not a sample list: its first line has no samples and listed");
            }
            List<Entry> entries = new ArrayList<>();
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                JsonNode e = Reader.JSON.readTree(line);
                if (!e.isArray()
                        || e.size() != 2
                        || !e.get(0).isTextual()
                        || !e.get(1).canConvertToInt()) {
                    throw new IOException(file + " line " + (entries.size() + 2) + " is not [name, label]: " + line);
                }
                entries.add(new Entry(e.get(0).asText(), e.get(1).asInt()));
            }
            int samples = header.get("samples").asInt();
            boolean listed = header.get("listed").asBoolean();
            if (listed && entries.size() != samples) {
                throw new IOException(file + " lists " + entries.size() + " samples where its header says " + samples);
            }
            return new SampleList(
                    samples,
                    listed,
                    header.path("dataset").asText(null),
                    header.path("shuffle_window").asInt(0),
                    entries);
        }
    }
}
