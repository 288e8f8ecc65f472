package io.stoke.pack;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.TarHeaders;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The tar a shard is: its sizes known in advance, its headers fixed, its long names in PAX headers. */
class ShardWriterTest {
    @TempDir
    Path tmp;

    private static String nameOf(int bytes, char c) {
        return "d/" + String.valueOf(c).repeat(bytes - 6) + ".jpg";
    }

    @Test
    void membersTakeWhatMemberBytesSaysAndTheFileIsTheSumPlusTheEnd() throws Exception {
        List<String> names = new ArrayList<>(List.of(
                "a.cls",
                nameOf(99, 'x'),
                nameOf(100, 'y'),
                nameOf(101, 'z'),
                nameOf(700, 'w'),
                "n01440764/img_001.jpg"));
        // Multi-byte UTF-8: 50 characters, 100 bytes; and a long one that needs more than one PAX record.
        names.add("é".repeat(48) + ".jpg");
        names.add("ü".repeat(300) + "/" + "ß".repeat(200) + ".npy");
        int[] sizes = {1, 0, 511, 512, 513, 150656, 7, 1024};
        Path target = tmp.resolve("shard-000000.tar");
        long expected = 0;
        try (ShardWriter w = ShardWriter.create(target)) {
            for (int i = 0; i < names.size(); i++) {
                byte[] data = new byte[sizes[i] + 3];
                Arrays.fill(data, (byte) i);
                long before = w.bytes();
                w.add(names.get(i), data, sizes[i]);
                assertEquals(ShardWriter.memberBytes(names.get(i), sizes[i]), w.bytes() - before, names.get(i));
                expected += ShardWriter.memberBytes(names.get(i), sizes[i]);
            }
            assertEquals(1, PackFiles.shardFiles(tmp).size(), "the shard is written as a temporary file");
            assertFalse(Files.exists(target));
            assertEquals(expected + ShardWriter.END_BYTES, w.commit());
        }
        assertEquals(List.of(target), PackFiles.shardFiles(tmp), "renamed into place");
        byte[] tar = Files.readAllBytes(target);
        assertEquals(expected + ShardWriter.END_BYTES, tar.length);
        // Long names went in PAX headers ('x'), and a library reads every name and byte back.
        assertTrue(TarHeaders.of(tar).stream().anyMatch(h -> TarHeaders.type(h) == 'x'));
        TarHeaders.assertDeterministic(tar);
        try (InputStream in = Files.newInputStream(target);
                TarArchiveInputStream t = new TarArchiveInputStream(in)) {
            for (int i = 0; i < names.size(); i++) {
                TarArchiveEntry e = t.getNextEntry();
                assertEquals(names.get(i), e.getName());
                byte[] data = t.readAllBytes();
                assertEquals(sizes[i], data.length);
                for (byte b : data) {
                    assertEquals((byte) i, b);
                }
            }
            assertNull(t.getNextEntry());
        }
    }

    @Test
    void theSameMembersGiveTheSameBytesAtAnotherTime() throws Exception {
        byte[][] runs = new byte[2][];
        for (int r = 0; r < 2; r++) {
            Path target = tmp.resolve("run" + r + ".tar");
            try (ShardWriter w = ShardWriter.create(target)) {
                w.add(nameOf(150, 'q'), new byte[] {1, 2, 3}, 3);
                w.add("k/short.cls", new byte[] {'7'}, 1);
                w.commit();
            }
            runs[r] = Files.readAllBytes(target);
            Thread.sleep(1100); // a header holding the clock would differ by now
        }
        assertArrayEquals(runs[0], runs[1]);
    }

    @Test
    void anAbandonedShardLeavesNoFile() {
        Path target = tmp.resolve("shard-000001.tar");
        try (ShardWriter w = ShardWriter.create(target)) {
            w.add("a.jpg", new byte[10], 10);
        }
        assertFalse(Files.exists(target));
        assertEquals(List.of(), PackFiles.shardFiles(tmp));
    }

    /**
     * Links planted at a shard's name, at the manifest's, and at the fixed {@code .tmp} names an
     * older Stoke wrote through, in an output folder others can write: each is replaced or
     * refused, never written through, and a FIFO at the manifest's name is refused at once.
     */
    @Test
    void plantedLinksAreNeverWrittenThroughAndAFifoIsNotWaitedOn() throws Exception {
        Path out = Files.createDirectories(tmp.resolve("out"));
        Path victims = Files.createDirectories(tmp.resolve("victims"));
        List<String> names = List.of("shard-000000.tar", "shard-000000.tar.tmp", "index.json", "index.json.tmp");
        for (String name : names) {
            Files.writeString(victims.resolve(name), "precious " + name);
            Files.createSymbolicLink(out.resolve(name), victims.resolve(name));
        }
        try (ShardWriter w = ShardWriter.create(out.resolve("shard-000000.tar"))) {
            w.add("a.cls", new byte[] {'1'}, 1);
            w.commit();
        }
        PackFiles.writeAtomically(out.resolve(PackFiles.MANIFEST), new byte[] {'{', '}'});
        for (String name : names) {
            assertEquals("precious " + name, Files.readString(victims.resolve(name)), name + "'s target");
        }
        assertTrue(Files.isRegularFile(out.resolve("shard-000000.tar"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
        assertEquals("{}", Files.readString(out.resolve(PackFiles.MANIFEST)));

        // The manifest is read through O_NOFOLLOW|O_NONBLOCK: a link or a FIFO there is named at once.
        Path manifest = out.resolve(PackFiles.MANIFEST);
        Files.delete(manifest);
        Files.createSymbolicLink(manifest, victims.resolve("index.json.tmp"));
        PackConflictException link = assertThrows(PackConflictException.class, () -> PackManifest.read(out));
        assertTrue(link.getMessage().contains(manifest + " is a symbolic link"), link.getMessage());
        Files.delete(manifest);
        assertEquals(
                0, new ProcessBuilder("mkfifo", manifest.toString()).start().waitFor());
        PackConflictException fifo = assertTimeoutPreemptively(
                java.time.Duration.ofSeconds(20),
                () -> assertThrows(PackConflictException.class, () -> PackManifest.read(out)));
        assertTrue(fifo.getMessage().contains(manifest + " is a FIFO"), fifo.getMessage());
        assertEquals("precious index.json.tmp", Files.readString(victims.resolve("index.json.tmp")));
    }
}
