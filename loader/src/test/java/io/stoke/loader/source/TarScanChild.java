package io.stoke.loader.source;

import java.nio.file.Path;

/**
 * Run by {@link TarShardFuzzTest} in a JVM of a small heap, where an unbounded read fails: opens
 * each shard named on the command line and reads every sample under skip, printing for each
 * {@code SHARD\twarning\tTEXT} per warning and then {@code SHARD\tsamples\tN\tbad\tB} or
 * {@code SHARD\tnone}. An {@link OutOfMemoryError} ends it with a stack trace and a failed status.
 */
final class TarScanChild {
    private TarScanChild() {}

    public static void main(String[] args) {
        for (String arg : args) {
            Path shard = Path.of(arg);
            int[] counts = TarShardFuzzTest.readAll(shard, w -> System.out.println(shard + "\twarning\t" + w));
            System.out.println(
                    counts == null ? shard + "\tnone" : shard + "\tsamples\t" + counts[0] + "\tbad\t" + counts[1]);
        }
        System.out.flush();
    }
}
