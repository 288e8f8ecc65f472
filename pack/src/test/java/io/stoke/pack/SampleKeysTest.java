package io.stoke.pack;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.format.NpyHeader;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ListFile;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SampleKeysTest {
    @TempDir
    Path tmp;

    private Dataset list(String... lines) throws Exception {
        Path f = tmp.resolve("list.txt");
        Files.writeString(f, String.join("\n", lines) + "\n");
        return ListFile.read(f);
    }

    @Test
    void theKeyIsThePathWithoutItsExtensionWithTheFileNamesDotsReplaced() throws Exception {
        Dataset dataset = list(
                "n01440764/img_001.JPEG 0",
                "a.b/c.d/x.y.z.jpg 1",
                "./flat.jpg 2",
                "deep//er/.hidden.jpg 3",
                "noext 4",
                tmp.resolve("abs/in/root.jpg") + " 5");
        assertEquals("n01440764/img_001", SampleKeys.key(dataset, 0));
        // Folders keep their dots: WebDataset splits at the first dot of the file name only.
        assertEquals("a.b/c.d/x_y_z", SampleKeys.key(dataset, 1));
        assertEquals("flat", SampleKeys.key(dataset, 2));
        assertEquals("deep/er/_hidden", SampleKeys.key(dataset, 3));
        assertEquals("noext", SampleKeys.key(dataset, 4));
        assertEquals("abs/in/root", SampleKeys.key(dataset, 5));
        SampleKeys.checkUnique(dataset);
    }

    @Test
    void twoSamplesWithOneKeyAreAnErrorNamingBoth() throws Exception {
        Path root = tmp.resolve("data");
        Files.createDirectories(root.resolve("c0"));
        Files.write(root.resolve("c0/a.b.jpg"), new byte[] {1});
        Files.write(root.resolve("c0/a_b.jpg"), new byte[] {1});
        Files.write(root.resolve("c0/other.jpg"), new byte[] {1});
        Dataset dataset = ImageFolder.scan(root);
        PackException e = assertThrows(PackException.class, () -> SampleKeys.checkUnique(dataset));
        assertTrue(
                e.getMessage().contains("c0/a_b'")
                        && e.getMessage().contains(root.resolve("c0/a.b.jpg").toString())
                        && e.getMessage().contains(root.resolve("c0/a_b.jpg").toString()),
                e.getMessage());
        // The same name with another extension is the same key too.
        Dataset twoExtensions = list("x/p.jpg 0", "x/p.jpeg 0");
        assertThrows(PackException.class, () -> SampleKeys.checkUnique(twoExtensions));
    }

    @Test
    void aPathThatClimbsOutOfItsFolderMakesNoKey() throws Exception {
        Dataset dataset = list("../outside.jpg 0", "/elsewhere/x.jpg 1");
        assertTrue(assertThrows(PackException.class, () -> SampleKeys.key(dataset, 0))
                .getMessage()
                .contains("'..'"));
        assertTrue(assertThrows(PackException.class, () -> SampleKeys.key(dataset, 1))
                .getMessage()
                .contains("outside"));
    }

    @Test
    void theFingerprintFollowsPathsAndLabels() throws Exception {
        String a = SampleKeys.fingerprint(list("x/p.jpg 0", "x/q.jpg 1"));
        assertEquals(a, SampleKeys.fingerprint(list("x/p.jpg 0", "x/q.jpg 1")));
        assertNotEquals(a, SampleKeys.fingerprint(list("x/p.jpg 0", "x/q.jpg 2")));
        assertNotEquals(a, SampleKeys.fingerprint(list("x/q.jpg 1", "x/p.jpg 0")));
    }

    @Test
    void theNpyHeaderIsVersionOneAlignedTo64() {
        byte[] h = NpyHeader.uint8(224, 224, 3);
        assertEquals(0, h.length % 64);
        assertEquals((byte) 0x93, h[0]);
        assertEquals("NUMPY", new String(h, 1, 5));
        assertEquals(1, h[6]);
        assertEquals(0, h[7]);
        assertEquals(h.length - 10, (h[8] & 0xFF) | (h[9] & 0xFF) << 8);
        assertEquals('\n', h[h.length - 1]);
        String dict = new String(h, 10, h.length - 10).strip();
        assertEquals("{'descr': '|u1', 'fortran_order': False, 'shape': (224, 224, 3), }", dict);
        assertTrue(new String(NpyHeader.uint8(5)).contains("'shape': (5,)"));
    }
}
