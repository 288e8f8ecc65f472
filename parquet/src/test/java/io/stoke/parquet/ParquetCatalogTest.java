package io.stoke.parquet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** What a hand-edited or damaged {@code parquet-index.json} is told: the entry and its fault. */
class ParquetCatalogTest {
    @Test
    void aBadEntryIsNamedByItsPlaceAndItsFault() {
        String[][] faults = {
            {"{\"filesize\": 10, \"footer\": \"AA==\"}", "file entry 1 (url null) has no url"},
            {
                "{\"url\": \"a.parquet\", \"filesize\": -5, \"footer\": \"AA==\"}",
                "file entry 1 (url a.parquet) has filesize -5, not a size in bytes"
            },
            {
                "{\"url\": \"a.parquet\", \"footer\": \"AA==\"}",
                "file entry 1 (url a.parquet) has filesize missing, not a size in bytes"
            },
            {"{\"url\": \"a.parquet\", \"filesize\": 10}", "file entry 1 (url a.parquet) has no footer"},
        };
        for (String[] fault : faults) {
            String json = "{\"format\": \"stoke-parquet-index\", \"version\": 1, \"files\": [" + fault[0] + "]}";
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> ParquetCatalog.read(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)), "c"));
            assertEquals("c: " + fault[1], e.getMessage());
        }
    }
}
