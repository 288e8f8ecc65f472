package io.stoke.bench.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * What the summary says about a sweep besides its runs, kept as {@code OUT/report.json} beside the
 * CSV files so that {@code --report-only} redraws the summary as the sweep wrote it. JSON, not a
 * line per item: a note may run over several lines.
 *
 * @param machine    a line on the machine (cores, CPU model, memory, OS, JDK)
 * @param cores      the cores the harness saw; the per-batch plot picks the worker count nearest it
 * @param warmupImages the images a warm run's process took untimed before its timed epoch
 * @param conditions how the runs were made, one bullet each
 * @param notes      what the reader must know (a loader that could not run), each one note
 * @param pixelDifferences each loader's first batch against torchvision's PIL path's (none in the
 *                   report of a sweep made before they were measured)
 */
public record ReportInfo(
        String machine,
        int cores,
        int warmupImages,
        List<String> conditions,
        List<String> notes,
        List<PixelDifference> pixelDifferences) {
    /** The file's name in the output folder. */
    public static final String FILE = "report.json";

    public ReportInfo {
        conditions = List.copyOf(conditions);
        notes = List.copyOf(notes);
        pixelDifferences = pixelDifferences == null ? List.of() : List.copyOf(pixelDifferences);
    }

    /** Writes {@code dir/report.json}, replacing it. */
    public void write(Path dir) {
        Path f = dir.resolve(FILE);
        try {
            HarnessJson.PRETTY.writeValue(f.toFile(), this);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + f, e);
        }
    }

    /** Reads what {@link #write} wrote. */
    public static ReportInfo read(Path dir) {
        Path f = dir.resolve(FILE);
        if (!Files.isRegularFile(f)) {
            throw new IllegalArgumentException(
                    "no " + FILE + " in " + dir + ": not the output folder of a sweep " + "of this version");
        }
        try {
            return HarnessJson.MAPPER.readValue(f.toFile(), ReportInfo.class);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + f, e);
        }
    }
}
