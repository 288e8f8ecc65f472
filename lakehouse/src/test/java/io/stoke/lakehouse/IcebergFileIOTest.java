package io.stoke.lakehouse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.remote.ObjectStore;
import io.stoke.remote.RemoteOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where the paths an Iceberg table's metadata names are read: each place in one spelling, and those
 * under where the table was written taken under where it was opened.
 */
class IcebergFileIOTest {
    @Test
    void aTableWrittenThroughS3aIsReadAtS3AsItIs() {
        IcebergFileIO io = new IcebergFileIO(null, "s3a://lake/wh/images", "s3://lake/wh/images/");
        assertFalse(io.relocates());
        assertEquals("s3://lake/wh/images/data/a.parquet", io.relocated("s3a://lake/wh/images/data/a.parquet"));
        assertEquals("s3://other/b.parquet", io.relocated("s3n://other/b.parquet"));
    }

    @Test
    void aCopiedTablesPathsAreReadUnderWhereItWasOpened() {
        IcebergFileIO io = new IcebergFileIO(null, "s3://lake/wh/images", "/data/images/");
        assertTrue(io.relocates());
        assertEquals("file:/data/images/data/a.parquet", io.relocated("s3://lake/wh/images/data/a.parquet"));
        assertEquals(
                "file:/data/images/metadata/snap-1.avro", io.relocated("s3a://lake/wh/images/metadata/snap-1.avro"));
        // Outside the written location, and a sibling whose name only begins alike: as they say.
        assertEquals("s3://lake/elsewhere/x.parquet", io.relocated("s3://lake/elsewhere/x.parquet"));
        assertEquals("s3://lake/wh/images2/x.parquet", io.relocated("s3://lake/wh/images2/x.parquet"));
        IcebergFileIO local = new IcebergFileIO(null, "/tmp/written/t", "https://host/t/");
        for (String spelling : new String[] {
            "/tmp/written/t/data/a.parquet",
            "file:/tmp/written/t/data/a.parquet",
            "file:///tmp/written/t/data/a.parquet"
        }) {
            assertEquals("https://host/t/data/a.parquet", local.relocated(spelling), spelling);
        }
    }

    @Test
    void anotherStoresUrlIsRefusedNamingItUnlessTheTableWasCopiedFromIt() {
        IcebergFileIO io = new IcebergFileIO(null, "gs://bucket/t", "/data/t/");
        assertEquals("file:/data/t/data/a.parquet", io.relocated("gs://bucket/t/data/a.parquet"));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> io.relocated("gs://bucket/other/a.parquet"));
        assertTrue(e.getMessage().contains("a store Stoke does not read (gs://)"), e.getMessage());
    }

    @Test
    void aTableAtAUrlReadsNoLocalFileItsMetadataNames() {
        try (ObjectStore http = ObjectStore.forUrl("http://127.0.0.1:9/t/", RemoteOptions.defaults())) {
            IcebergFileIO io = new IcebergFileIO(http, "/tmp/written/t", "http://127.0.0.1:9/t/");
            assertEquals("http://127.0.0.1:9/t/data/a.parquet", io.relocated("file:/tmp/written/t/data/a.parquet"));
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> io.relocated("file:/etc/passwd"));
            assertTrue(e.getMessage().contains("named by the metadata of a table at a URL"), e.getMessage());
        }
    }

    @Test
    void aFileUriThatIsNoUriIsTakenAsWritten() {
        assertEquals(Path.of("/tmp/a b/c.parquet"), PositionedFile.local("file:/tmp/a b/c.parquet"));
        assertEquals(Path.of("/tmp/a b/c.parquet"), PositionedFile.local("file:///tmp/a%20b/c.parquet"));
    }

    /**
     * A version hint behind the table's versions (a writer creates its version before it points the
     * hint at it; two writers may point it in either order) is looked past, as Iceberg's
     * HadoopTableOperations does; a store that claims versions without end is refused.
     */
    @Test
    void theVersionHintIsLookedPastToTheLatestVersion(@TempDir Path tmp) throws Exception {
        Path fixture = Path.of(System.getProperty("user.dir"))
                .resolveSibling("clients/python/tests/data/iceberg-images/metadata");
        Path metadata = Files.createDirectories(tmp.resolve("t/metadata"));
        try (Stream<Path> files = Files.list(fixture)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.copy(f, metadata.resolve(f.getFileName()));
            }
        }
        Files.writeString(metadata.resolve("version-hint.text"), "2\n");
        String table = tmp.resolve("t").toString();
        assertTrue(IcebergSnapshots.metadataFile(table, null).endsWith("/metadata/v4.metadata.json"));
        for (int v = 5; v <= 4 + IcebergSnapshots.VERSIONS_PAST_HINT + 1; v++) {
            Files.writeString(metadata.resolve("v" + v + ".metadata.json"), "{}");
        }
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> IcebergSnapshots.metadataFile(table, null));
        assertTrue(
                e.getMessage().contains("more than 1000 metadata versions past its version-hint.text (2)"),
                e.getMessage());
    }
}
