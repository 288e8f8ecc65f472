package io.stoke.loader.source;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

/** A dataset of one file per sample: an ImageFolder tree ({@link ImageFolder}) or a list file ({@link ListFile}). */
public final class FileDataset extends Dataset {
    private final byte[] pathBytes;
    private final int[] pathStart; // length size()+1; path i is pathBytes[pathStart[i], pathStart[i+1])
    private final int[] labels;

    FileDataset(Path root, byte[] pathBytes, int[] pathStart, int[] labels, List<String> classNames) {
        super(root, classNames);
        this.pathBytes = pathBytes;
        this.pathStart = pathStart;
        this.labels = labels;
    }

    @Override
    public int size() {
        return labels.length;
    }

    @Override
    public int label(int sample) {
        return labels[sample];
    }

    @Override
    public String path(int sample) {
        return new String(pathBytes, pathStart[sample], pathLength(sample), StandardCharsets.UTF_8);
    }

    @Override
    public int pathLength(int sample) {
        return pathStart[sample + 1] - pathStart[sample];
    }

    @Override
    public boolean isAbsolute(int sample) {
        return pathLength(sample) > 0 && pathBytes[pathStart[sample]] == '/';
    }

    @Override
    public int copyPath(int sample, MemorySegment dst, long offset) {
        int length = pathLength(sample);
        MemorySegment.copy(pathBytes, pathStart[sample], dst, ValueLayout.JAVA_BYTE, offset, length);
        return length;
    }

    /** The sample's file; allocates, so for messages, not the hot path. */
    public Path resolve(int sample) {
        return root().resolve(path(sample));
    }

    @Override
    public String name(int sample) {
        return resolve(sample).toString();
    }

    @Override
    public SampleReader reader(long maxBytes) {
        return new FileReader(this, maxBytes);
    }
}
