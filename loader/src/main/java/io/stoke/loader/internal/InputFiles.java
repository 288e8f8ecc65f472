package io.stoke.loader.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What a path named as input is when it is not a file to read: a pipe, a folder, a link to nothing
 * (a volume not mounted). A listing that meets one names it rather than leave it out: a dataset a
 * file short, without a word, would train on less.
 */
public final class InputFiles {
    private InputFiles() {}

    /**
     * Why {@code path} is not a regular file to read, following links, as the rest of a sentence
     * naming it ("is a pipe (FIFO), not a file", "is a link to T, which does not exist", "does not
     * exist"); null when it is one.
     */
    public static String notAFile(Path path) {
        if (Files.isRegularFile(path)) {
            return null;
        }
        if (Files.isSymbolicLink(path) && !Files.exists(path)) {
            String target;
            try {
                target = Files.readSymbolicLink(path).toString();
            } catch (IOException e) {
                target = "a target it cannot name";
            }
            return "is a link to " + target + ", which does not exist";
        }
        if (!Files.exists(path)) {
            return "does not exist";
        }
        if (Files.isDirectory(path)) {
            return "is a folder, not a file";
        }
        int type;
        try {
            type = ((Integer) Files.getAttribute(path, "unix:mode")) & 0170000; // S_IFMT
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return "is not a regular file";
        }
        return switch (type) {
            case 0010000 -> "is a pipe (FIFO), not a file";
            case 0140000 -> "is a socket, not a file";
            case 0020000, 0060000 -> "is a device, not a file";
            default -> "is not a regular file";
        };
    }
}
