package io.stoke.loader.testing;

import java.io.IOException;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/** Writing tar shards in tests (the independent writers are Python's tarfile and stoke pack). */
public final class TestTars {
    private TestTars() {
    }

    /** Appends one regular-file member. */
    public static void member(TarArchiveOutputStream tar, String name, byte[] data) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(data.length);
        tar.putArchiveEntry(e);
        tar.write(data);
        tar.closeArchiveEntry();
    }
}
