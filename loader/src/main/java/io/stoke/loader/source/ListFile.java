package io.stoke.loader.source;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads a plain list file: one sample per line, {@code <path><whitespace><label>}. Relative paths
 * are resolved against the list file's folder. Blank lines and lines starting with {@code #} are
 * skipped. A malformed line is an error that names the file and the line number.
 */
public final class ListFile {
    private ListFile() {}

    public static FileDataset read(Path listFile) {
        Path root = listFile.toAbsolutePath().getParent();
        FileDataset.Builder builder = new FileDataset.Builder();
        try (BufferedReader in = Files.newBufferedReader(listFile, StandardCharsets.UTF_8)) {
            String line;
            int number = 0;
            while ((line = in.readLine()) != null) {
                number++;
                String trimmed = line.strip();
                if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                    continue;
                }
                int split = lastWhitespace(trimmed);
                if (split < 0) {
                    throw new IllegalArgumentException(
                            listFile + ":" + number + ": expected '<path> <label>', got '" + line + "'");
                }
                String path = trimmed.substring(0, split).strip();
                int label;
                try {
                    label = Integer.parseInt(trimmed.substring(split + 1));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(
                            listFile + ":" + number + ": label is not an integer in '" + line + "'");
                }
                if (label < 0) {
                    throw new IllegalArgumentException(listFile + ":" + number + ": negative label " + label);
                }
                builder.add(path.getBytes(StandardCharsets.UTF_8), label);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read list file " + listFile, e);
        }
        FileDataset dataset = builder.build(root, List.of());
        if (dataset.size() == 0) {
            throw new IllegalArgumentException("list file " + listFile + " names no samples");
        }
        return dataset;
    }

    private static int lastWhitespace(String s) {
        for (int i = s.length() - 1; i >= 0; i--) {
            if (Character.isWhitespace(s.charAt(i))) {
                return i;
            }
        }
        return -1;
    }
}
