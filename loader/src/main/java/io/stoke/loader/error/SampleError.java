package io.stoke.loader.error;

/**
 * One sample that produced no pixels.
 *
 * @param position position within its batch
 * @param sample   index in the dataset
 * @param path     the sample's name: its file, or {@code <shard>/<key>} in a tar shard
 * @param status   the reason, as a code
 * @param detail   the reason in words (the library's or the OS's message)
 */
public record SampleError(int position, int sample, String path, SampleStatus status, String detail) {
    @Override
    public String toString() {
        return path + ": " + status.description()
                + (detail != null && !detail.equals(status.description()) ? " (" + detail + ")" : "");
    }
}
