package io.stoke.parquet;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.stoke.loader.internal.ReadLimits;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.format.Util;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;

/**
 * {@value #FILE}: what opening a remote Parquet dataset needs of each file (its name relative to the
 * catalog, size, ETag, and footer), in one object, so that a corpus of many files opens from one GET
 * instead of a HEAD and a GET per file. {@code stoke catalog} writes it beside the files. The footer
 * is the file's own, as parquet-format's Thrift structure, base64-encoded; a file whose size or ETag
 * differs from the catalog's is named as a stale catalog, never read.
 *
 * <pre>{"format": "stoke-parquet-index", "version": 1,
 *  "files": [{"url": "train-00000.parquet", "filesize": 123, "etag": "\"…\"", "footer": "…"}]}</pre>
 */
final class ParquetCatalog {
    static final String FILE = io.stoke.remote.RemoteDatasets.PARQUET_CATALOG;
    static final String FORMAT = "stoke-parquet-index";
    // Bounded as the file is before it is read (ReadLimits): a stream's document, and so each footer in it
    // (no larger than a footer read from its file).
    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxDocumentLength(ReadLimits.CATALOG_FILE)
                    .maxStringLength((int) ReadLimits.CATALOG_FILE)
                    .maxNestingDepth(64)
                    .build())
            .build();
    static final int VERSION = 1;

    record Entry(String url, long filesize, String etag, ParquetMetadata footer) {}

    private final List<Entry> files;

    ParquetCatalog(List<Entry> files) {
        this.files = List.copyOf(files);
    }

    List<Entry> files() {
        return files;
    }

    void write(OutputStream out) throws IOException {
        ParquetMetadataConverter converter = new ParquetMetadataConverter();
        try (JsonGenerator g = new JsonFactory().createGenerator(out)) {
            g.writeStartObject();
            g.writeStringField("format", FORMAT);
            g.writeNumberField("version", VERSION);
            g.writeArrayFieldStart("files");
            for (Entry e : files) {
                ByteArrayOutputStream footer = new ByteArrayOutputStream();
                Util.writeFileMetaData(
                        converter.toParquetMetadata(ParquetFileWriter.CURRENT_VERSION, e.footer()), footer);
                g.writeStartObject();
                g.writeStringField("url", e.url());
                g.writeNumberField("filesize", e.filesize());
                if (e.etag() != null) {
                    g.writeStringField("etag", e.etag());
                }
                g.writeStringField("footer", Base64.getEncoder().encodeToString(footer.toByteArray()));
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        }
    }

    /** The catalog in {@code in}, named {@code name} in errors. */
    static ParquetCatalog read(InputStream in, String name) {
        // With read options, as parquet-java reads a footer from a file (they bound a footer's size).
        ParquetMetadataConverter converter = new ParquetMetadataConverter(
                ParquetReadOptions.builder(new PlainParquetConfiguration()).build());
        List<Entry> files = new ArrayList<>();
        String format = null;
        int version = -1;
        try (JsonParser p = JSON.createParser(in)) {
            expect(p.nextToken(), JsonToken.START_OBJECT, name);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                switch (field) {
                    case "format" -> format = p.getValueAsString();
                    case "version" -> version = p.getIntValue();
                    case "files" -> {
                        expect(value, JsonToken.START_ARRAY, name);
                        while (p.nextToken() == JsonToken.START_OBJECT) {
                            String url = null;
                            String etag = null;
                            String footer = null;
                            long size = -1;
                            while (p.nextToken() == JsonToken.FIELD_NAME) {
                                String f = p.currentName();
                                p.nextToken();
                                switch (f) {
                                    case "url" -> url = p.getValueAsString();
                                    case "filesize" -> size = p.getLongValue();
                                    case "etag" -> etag = p.getValueAsString();
                                    case "footer" -> footer = p.getValueAsString();
                                    default -> p.skipChildren();
                                }
                            }
                            String wrong = url == null || url.isEmpty()
                                    ? "has no url"
                                    : size < 0
                                            ? "has filesize " + (size == -1 ? "missing" : Long.toString(size))
                                                    + ", not a size in bytes"
                                            : footer == null ? "has no footer" : null;
                            if (wrong != null) {
                                throw new IllegalArgumentException(
                                        name + ": file entry " + (files.size() + 1) + " (url " + url + ") " + wrong);
                            }
                            ParquetMetadata md = converter.readParquetMetadata(
                                    new ByteArrayInputStream(Base64.getDecoder().decode(footer)),
                                    ParquetMetadataConverter.NO_FILTER);
                            files.add(new Entry(url, size, etag, md));
                        }
                    }
                    default -> p.skipChildren();
                }
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof IllegalArgumentException a
                    && a.getMessage() != null
                    && a.getMessage().startsWith(name)) {
                throw a;
            }
            throw new IllegalArgumentException(name + " is not a readable Parquet catalog: " + e.getMessage(), e);
        }
        if (!FORMAT.equals(format) || version != VERSION) {
            throw new IllegalArgumentException(name + " is not a Stoke Parquet catalog of version " + VERSION
                    + " (format " + format + ", version " + version + "): run `stoke catalog` on the files again");
        }
        return new ParquetCatalog(files);
    }

    private static void expect(JsonToken got, JsonToken want, String name) {
        if (got != want) {
            throw new IllegalArgumentException(name + ": expected " + want + ", found " + got);
        }
    }

    byte[] toBytes() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
