package io.stoke.loader.decode;

/**
 * A reader that wants the JPEG it has just read copied with restart markers as it is decoded: the
 * restart cache's reader, on a miss while the loader has slack. The decode then reads the file's
 * entropy-coded data once for the copy and for the pixels ({@link JpegDecoder#decodeBox} with a
 * copier), where a copy made before the decode would read it twice.
 */
public interface CopyOnDecode {
    /** The copier for the sample last read, or null: it is decoded alone. */
    RestartCopy wantedCopy();

    /** The decode of the sample last read made its copy in {@link #wantedCopy()}, or did not. */
    void decoded(boolean copied);
}
