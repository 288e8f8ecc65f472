import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;

/**
 * Writes an ImageFolder tree as Parquet in the Hugging Face Hub's layout with DuckDB (its own
 * writer, not parquet-java): an image struct (the file's bytes as they are, its path) and an int64
 * label, rows in ImageFolder's order (class folders, then files, by name).
 *
 *   java -cp duckdb_jdbc.jar FolderToParquet.java FOLDER OUT.parquet CODEC ROWS_PER_GROUP [FIRST COUNT]
 *
 * CODEC: uncompressed, snappy, zstd or gzip. FIRST and COUNT take a slice of the rows (for files of
 * a part each).
 */
public class FolderToParquet {
    public static void main(String[] args) throws Exception {
        String folder = args[0];
        String out = args[1];
        String codec = args[2];
        int perGroup = Integer.parseInt(args[3]);
        String slice = args.length > 5 ? " LIMIT " + args[5] + " OFFSET " + args[4] : "";
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("SET preserve_insertion_order = true");
            s.execute("CREATE TABLE files AS SELECT filename, content FROM read_blob('" + folder + "/*/*') ORDER BY filename");
            s.execute("CREATE TABLE classes AS SELECT DISTINCT split_part(substr(filename, " + (folder.length() + 2)
                    + "), '/', 1) AS class FROM files ORDER BY class");
            s.execute("COPY (SELECT {'bytes': content, 'path': substr(filename, " + (folder.length() + 2) + ")} AS image, "
                    + "(SELECT count(*) FROM classes k WHERE k.class < split_part(substr(filename, " + (folder.length() + 2)
                    + "), '/', 1))::BIGINT AS label FROM files ORDER BY filename" + slice + ") TO '" + out
                    + "' (FORMAT parquet, COMPRESSION " + codec + ", ROW_GROUP_SIZE " + perGroup + ")");
        }
    }
}
