package io.stoke.parquet;

import io.stoke.loader.internal.BracePattern;
import io.stoke.loader.internal.InputFiles;
import io.stoke.loader.source.Datasets;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The files a Parquet dataset's spec names, in dataset order: a file; a brace pattern
 * ({@code train-{00000..00063}.parquet}); a glob in the last path element ({@code train-*.parquet},
 * matched in name order); or a folder, whose {@code .parquet} files are taken in name order, and
 * whose other files (Spark's {@code _SUCCESS}, hidden {@code .crc} files, anything without the
 * suffix) are skipped.
 */
final class ParquetFiles {
    private ParquetFiles() {}

    /**
     * {@link #expand(String)}, refusing a folder or glob whose files lie in a Delta Lake or Iceberg
     * table: its folder keeps files its later versions removed, so only its log says which are the
     * table. A file named alone, or in a brace pattern, is read as named: spark-embed's tasks name a
     * table snapshot's files so.
     */
    static List<Path> expandOutsideTables(String spec) {
        List<Path> files = expand(spec);
        if (BracePattern.hasBraces(spec)
                || (files.size() == 1 && files.get(0).toString().equals(spec))) {
            return files;
        }
        java.util.Set<Path> seen = new java.util.HashSet<>();
        for (Path f : files) {
            Path dir = f.toAbsolutePath().getParent();
            if (dir != null && seen.add(dir)) {
                Path table = Datasets.lakehouseAbove(dir);
                if (table != null) {
                    throw new IllegalArgumentException(f + " is a data file of " + Datasets.lakehouseFolder(table)
                            + " table, " + table + ": open the table itself, whose log says which files are"
                            + " its snapshot; its folder keeps the files later versions removed");
                }
            }
        }
        return files;
    }

    static List<Path> expand(String spec) {
        if (BracePattern.hasBraces(spec)) {
            List<Path> out = new ArrayList<>();
            for (String name : BracePattern.expand(spec)) {
                Path p = Path.of(name);
                String not = InputFiles.notAFile(p);
                if (not != null) {
                    throw new IllegalArgumentException("Parquet file " + name + " (from " + spec + ") " + not);
                }
                out.add(p);
            }
            return out;
        }
        Path path = Path.of(spec);
        String last = path.getFileName() == null ? "" : path.getFileName().toString();
        if (last.indexOf('*') >= 0 || last.indexOf('?') >= 0 || last.indexOf('[') >= 0) {
            Path dir = path.getParent() != null ? path.getParent() : Path.of(".");
            PathMatcher glob = FileSystems.getDefault().getPathMatcher("glob:" + last);
            List<Path> out = list(dir, p -> glob.matches(p.getFileName()));
            if (out.isEmpty()) {
                throw new IllegalArgumentException("no file matches " + spec);
            }
            return out;
        }
        if (Files.isDirectory(path)) {
            List<Path> out = list(path, p -> isParquetName(p.getFileName().toString()));
            if (out.isEmpty()) {
                throw new IllegalArgumentException(spec + " holds no .parquet files");
            }
            return out;
        }
        String not = InputFiles.notAFile(path);
        if (not != null) {
            throw new IllegalArgumentException("Parquet file " + spec + " " + not);
        }
        return List.of(path);
    }

    /** A data file of a table: the suffix, and not one of Spark's or Hadoop's side files. */
    static boolean isParquetName(String name) {
        return !name.startsWith(".")
                && !name.startsWith("_")
                && name.toLowerCase(Locale.ROOT).endsWith(".parquet");
    }

    private static List<Path> list(Path dir, java.util.function.Predicate<Path> take) {
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path p : entries) {
                String name = p.getFileName().toString();
                if (!name.startsWith(".") && !name.startsWith("_") && take.test(p)) {
                    // One stat for a file; a Parquet name that cannot be read is named, never left out
                    // (the table a file short). A folder of that name is not read.
                    String not = InputFiles.notAFile(p);
                    if (not == null) {
                        out.add(p);
                    } else if (!Files.isDirectory(p)) {
                        throw new IllegalArgumentException("Parquet file " + p + " " + not);
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir, e);
        }
        out.sort(null);
        return out;
    }
}
