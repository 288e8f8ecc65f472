package io.stoke.bench;

import java.nio.file.Files;
import java.nio.file.Path;

/** Where benchmarks find their data when none is named. */
final class BenchData {
    private BenchData() {
    }

    /** The demo's cached built-in sample; {@code ./stoke demo} creates it. */
    static Path defaultSample() {
        Path p = io.stoke.loader.dataset.DemoSample.directory();
        if (!Files.isDirectory(p)) {
            throw new IllegalStateException("no dataset: run ./stoke demo once (it creates " + p
                    + "), or pass -p dataset=DIR");
        }
        return p;
    }
}
