package io.stoke.pack;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.source.TableColumns;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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

    private static PackManifest parquet(List<PackManifest.SourceFile> files, TableColumns columns) {
        return new PackManifest(
                "parts",
                "/data/parts",
                10,
                "cd".repeat(32),
                files,
                columns,
                PackOptions.jpegShorterSide(256, 90, 1 << 20));
    }

    @Test
    void aParquetSourcesFilesAndColumnsRoundTripAndAChangedFileIsNamed() {
        PackManifest.SourceFile a = new PackManifest.SourceFile("/data/parts/a.parquet", 100, "2026-01-01T00:00:00Z");
        PackManifest.SourceFile b = new PackManifest.SourceFile("/data/parts/b.parquet", 200, "2026-01-02T00:00:00Z");
        TableColumns keyed = new TableColumns(null, null, "key");
        parquet(List.of(a, b), keyed).write(tmp);
        PackManifest read = PackManifest.read(tmp).orElseThrow();
        assertTrue(read.sameJob(parquet(List.of(a, b), keyed)));
        assertFalse(read.sameJob(parquet(List.of(a, b), TableColumns.DEFAULT)), "other columns");
        assertTrue(read.describe().contains("in 2 files, columns key key"), read.describe());
        assertNull(read.changedFile(parquet(List.of(a, b), keyed)));

        PackManifest.SourceFile grown = new PackManifest.SourceFile(b.path(), 250, b.modified());
        assertFalse(read.sameJob(parquet(List.of(a, grown), keyed)));
        String changed = read.changedFile(parquet(List.of(a, grown), keyed));
        assertTrue(changed.startsWith(b.path() + " has changed") && changed.contains("now 250 bytes"), changed);
        assertEquals(b.path() + " is no longer part of the source", read.changedFile(parquet(List.of(a), keyed)));
        PackManifest.SourceFile c = new PackManifest.SourceFile("/data/parts/c.parquet", 1, "2026-01-03T00:00:00Z");
        assertEquals(
                c.path() + " was not part of the source when the pack began",
                read.changedFile(parquet(List.of(a, b, c), keyed)));
    }

    @Test
    void aFoldersManifestHasNoSourceFilesOrColumns() throws Exception {
        manifest(PackOptions.jpegShorterSide(256, 90, 1 << 20)).write(tmp);
        String json = Files.readString(tmp.resolve(PackFiles.MANIFEST), StandardCharsets.UTF_8);
        assertFalse(json.contains("source_files") || json.contains("columns"), json);
        assertTrue(
                PackManifest.read(tmp).orElseThrow().sameJob(manifest(PackOptions.jpegShorterSide(256, 90, 1 << 20))));
    }
}
