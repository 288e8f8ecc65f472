package io.stoke.loader.source;

import java.nio.file.Path;
import java.util.List;

/** A dataset of one file per sample: an ImageFolder tree ({@link ImageFolder}) or a list file ({@link ListFile}). */
public final class FileDataset extends Dataset {
    FileDataset(Path root, byte[] pathBytes, int[] pathStart, int[] labels, List<String> classNames) {
        super(root, pathBytes, pathStart, labels, classNames);
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
