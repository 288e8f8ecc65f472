package io.stoke.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.ring.RingSpaceException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The one sentence {@code stoke serve} says for a named ring that does not fit (a container's 64 MB
 * {@code /dev/shm}); the Python suite checks it end to end in a 64 MB tmpfs.
 */
class RingSpaceMessageTest {
    @Test
    void theSentenceGivesTheBytesNeededAndFreeAndEveryWayOut() {
        String s = RingServer.doesNotFit(new RingSpaceException(Path.of("/dev/shm/train"), 154_181_632L, 67_108_864L));
        assertEquals(
                "the ring /dev/shm/train does not fit: it needs 154,181,632 bytes (148 MiB) and its file system has"
                        + " 67,108,864 bytes free; make the ring smaller (a smaller --batch-size, fewer --slots, a"
                        + " smaller --crop, or --output uint8 instead of float32), give the container more shared"
                        + " memory (Docker: --shm-size=256m; Kubernetes: an emptyDir volume with medium: Memory"
                        + " mounted at /dev/shm), or put the ring in a directory with room (--ring DIR/NAME)",
                s);
        assertTrue(RingServer.doesNotFit(new RingSpaceException(Path.of("/dev/shm/x"), 2_400L << 20, 0))
                .contains("--shm-size=4g"));
    }
}
