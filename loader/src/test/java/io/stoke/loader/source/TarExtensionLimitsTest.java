package io.stoke.loader.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.internal.ReadLimits;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestTars;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tar extension headers against {@link ReadLimits}: shards written by hand (TestTars.header, not a
 * tar library) whose long names, long links and PAX headers declare more than the limits, or come
 * in forms the limit check does not follow, are each named with the byte of the header and the
 * limit, and their samples before it are read; extension headers within the limits read as before.
 * {@link TarShardFuzzTest} runs the same bombs in a 48 MiB heap.
 */
class TarExtensionLimitsTest {
    static final long BOMB = 512L << 20;

    @TempDir
    Path tmp;

    /** Two labelled samples, a/s0 and a/s1, as plain ustar members. */
    static byte[] twoSamples() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < 2; i++) {
            TestTars.rawMember(out, "a/s" + i + ".jpg", '0', TestImages.jpeg(40 + 8 * i, 32, 7 + i));
            TestTars.rawMember(out, "a/s" + i + ".cls", '0', Integer.toString(i).getBytes(StandardCharsets.US_ASCII));
        }
        return out.toByteArray();
    }

    /** {@link #twoSamples()}, {@code middle}, one more sample (b/s2) and the end-of-archive blocks. */
    static byte[] around(byte[] middle) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(twoSamples());
        out.writeBytes(middle);
        TestTars.rawMember(out, "b/s2.jpg", '0', TestImages.jpeg(48, 40, 9));
        out.writeBytes(new byte[1024]);
        return out.toByteArray();
    }

    @Test
    void aLongNameLongLinkOrPaxHeaderOverTheLimitIsNamedAndTheSamplesBeforeItAreRead() throws Exception {
        byte[] before = twoSamples();
        String[][] cases = {
            {"L", "a GNU long name of 512 MiB, more than the 64 KiB limit"},
            {"K", "a GNU long link name of 512 MiB, more than the 64 KiB limit"},
            {"x", "a PAX header of 512 MiB, more than the 1 MiB limit"},
            {"g", "a global PAX header of 512 MiB, more than the 1 MiB limit"},
        };
        for (String[] c : cases) {
            Path shard = tmp.resolve("bomb-" + c[0] + ".tar");
            TestTars.bomb(shard, before, c[0].charAt(0), BOMB);
            assertNamed(
                    shard,
                    "the member header at byte " + before.length + " declares " + c[1]
                            + "; the samples before it are read",
                    List.of("a/s0", "a/s1"));
        }
    }

    @Test
    void justOverAndAtTheLimitsDifferByOneByte() throws Exception {
        byte[] before = twoSamples();
        Path over = tmp.resolve("over.tar");
        TestTars.bomb(over, before, 'L', ReadLimits.TAR_LONG_NAME + 1);
        assertNamed(
                over,
                "the member header at byte " + before.length
                        + " declares a GNU long name of 65537 bytes, more than the 64 KiB limit; the samples before it are read",
                List.of("a/s0", "a/s1"));

        // A long name of exactly the limit is read (its zeros then name no sample).
        ByteArrayOutputStream at = new ByteArrayOutputStream();
        byte[] name = new byte[(int) ReadLimits.TAR_LONG_NAME];
        byte[] real = "c/long.jpg".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(real, 0, name, 0, real.length);
        TestTars.rawMember(at, "././@LongLink", 'L', name);
        TestTars.rawMember(at, "c/short.jpg", '0', TestImages.jpeg(40, 40, 3));
        Path ok = tmp.resolve("at.tar");
        Files.write(ok, around(at.toByteArray()));
        assertNamed(ok, null, List.of("a/s0", "a/s1", "c/long", "b/s2"));
    }

    @Test
    void extensionHeadersWithinTheLimitsReadAsBefore() throws Exception {
        ByteArrayOutputStream mid = new ByteArrayOutputStream();
        String longName = "c/" + "n".repeat(5000) + "/s3";
        TestTars.rawMember(mid, "././@LongLink", 'L', (longName + ".jpg\0").getBytes(StandardCharsets.US_ASCII));
        TestTars.rawMember(mid, "c/truncated.jpg", '0', TestImages.jpeg(40, 40, 4));
        TestTars.rawMember(mid, "././@LongLink", 'K', ("t/" + "k".repeat(3000)).getBytes(StandardCharsets.US_ASCII));
        TestTars.rawMember(mid, "c/link", '2', new byte[0]);
        TestTars.rawMember(mid, "PaxGlobal", 'g', TestTars.pax("comment=made by hand", "mtime=1"));
        String paxName = "d/" + "p".repeat(3000) + "/s4";
        TestTars.rawMember(mid, "PaxHeader", 'x', TestTars.pax("path=" + paxName + ".jpg", "mtime=1.5"));
        TestTars.rawMember(mid, "d/truncated.jpg", '0', TestImages.jpeg(40, 48, 5));
        TestTars.rawMember(mid, "e/", '5', new byte[0]);
        Path shard = tmp.resolve("within.tar");
        Files.write(shard, around(mid.toByteArray()));
        assertNamed(shard, null, List.of("a/s0", "a/s1", longName, paxName, "b/s2"));
    }

    @Test
    void aPaxSizeMovesTheNextHeaderAsCommonsCompressReadsIt() throws Exception {
        // The member's ustar size says 0; its PAX size, the data's. The walk must step as Commons Compress does.
        byte[] jpeg = TestImages.jpeg(40, 40, 6);
        ByteArrayOutputStream mid = new ByteArrayOutputStream();
        TestTars.rawMember(mid, "PaxHeader", 'x', TestTars.pax("size=" + jpeg.length));
        mid.writeBytes(TestTars.header("f/s5.jpg", 0, '0'));
        mid.writeBytes(jpeg);
        mid.writeBytes(new byte[(512 - jpeg.length % 512) % 512]);
        Path shard = tmp.resolve("paxsize.tar");
        Files.write(shard, around(mid.toByteArray()));
        assertNamed(shard, null, List.of("a/s0", "a/s1", "f/s5", "b/s2"));
    }

    @Test
    void formsTheWalkDoesNotFollowAreNamedWhereTheyStart() throws Exception {
        int at = twoSamples().length;
        List<Object[]> cases = new ArrayList<>();
        ByteArrayOutputStream chain = new ByteArrayOutputStream();
        for (int i = 0; i < ReadLimits.TAR_EXTENSIONS_PER_MEMBER + 1; i++) {
            TestTars.rawMember(chain, "././@LongLink", 'L', "g/s.jpg\0".getBytes(StandardCharsets.US_ASCII));
        }
        TestTars.rawMember(chain, "g/s.jpg", '0', TestImages.jpeg(40, 40, 8));
        cases.add(new Object[] {
            "chain",
            chain.toByteArray(),
            at + ReadLimits.TAR_EXTENSIONS_PER_MEMBER * 1024,
            "is extension header 17 for one member, more than the 16 limit"
        });

        String[] many = new String[ReadLimits.TAR_GLOBAL_PAX_RECORDS + 1];
        for (int i = 0; i < many.length; i++) {
            many[i] = "k" + i + "=v";
        }
        cases.add(new Object[] {
            "globals",
            member("PaxGlobal", 'g', TestTars.pax(many)),
            at,
            "is a global PAX header that brings the shard's global PAX records to 65, more than the 64 limit"
                    + " (each is copied into every member after it)"
        });
        // Global headers add up: 40 records, a member, 40 more.
        String[] forty = new String[40];
        for (int i = 0; i < forty.length; i++) {
            forty[i] = "k" + i + "=v";
        }
        ByteArrayOutputStream twoGlobals = new ByteArrayOutputStream();
        twoGlobals.writeBytes(member("PaxGlobal", 'g', TestTars.pax(forty)));
        twoGlobals.writeBytes(member("g/s.jpg", '0', TestImages.jpeg(40, 40, 10)));
        int second = at + twoGlobals.size();
        twoGlobals.writeBytes(member("PaxGlobal", 'g', TestTars.pax(forty)));
        cases.add(new Object[] {
            "globalsaddup",
            twoGlobals.toByteArray(),
            second,
            "is a global PAX header that brings the shard's global PAX records to 80, more than the 64 limit"
                    + " (each is copied into every member after it)"
        });
        cases.add(new Object[] {
            "globalsize",
            member("PaxGlobal", 'g', TestTars.pax("size=100")),
            at,
            "is a global PAX header that sets every member's size, which Stoke does not read"
        });
        ByteArrayOutputStream twoPax = new ByteArrayOutputStream();
        TestTars.rawMember(twoPax, "PaxHeader", 'x', TestTars.pax("mtime=1"));
        TestTars.rawMember(twoPax, "PaxHeader", 'x', TestTars.pax("size=2"));
        TestTars.rawMember(twoPax, "h/s.jpg", '0', new byte[0]);
        cases.add(new Object[] {
            "twopax",
            twoPax.toByteArray(),
            at + 1024,
            "is a second PAX header for one member, which Stoke does not read"
        });
        cases.add(new Object[] {
            "sparse", member("h/s.jpg", 'S', new byte[600]), at, "is a GNU sparse member, which Stoke does not read"
        });
        cases.add(new Object[] {
            "paxsparse",
            member("PaxHeader", 'x', TestTars.pax("GNU.sparse.major=1")),
            at,
            "is a PAX header that describes a sparse member, which Stoke does not read"
        });
        cases.add(new Object[] {
            "paxgarbage",
            member("PaxHeader", 'x', "12 path".getBytes(StandardCharsets.US_ASCII)),
            at,
            "is a PAX header that has a record that is not LENGTH KEY=VALUE"
        });
        cases.add(new Object[] {
            "dirdata",
            member("h/dir/", '5', new byte[100]),
            at,
            "is a directory that holds data, which Stoke does not read"
        });
        for (Object[] c : cases) {
            Path shard = tmp.resolve(c[0] + ".tar");
            Files.write(shard, around((byte[]) c[1]));
            assertNamed(
                    shard,
                    "the member header at byte " + c[2] + " " + c[3] + "; the samples before it are read",
                    c[0].equals("globalsaddup") ? List.of("a/s0", "a/s1", "g/s") : List.of("a/s0", "a/s1"));
        }
    }

    @Test
    void aLimitBrokenByAMembersSecondExtensionHeaderCutsBeforeItsFirst() throws Exception {
        // A PAX header within the limits, then a long name over them, for one member: both are left
        // out, so Commons Compress sees a whole tar (not a PAX header with nothing after it).
        ByteArrayOutputStream mid = new ByteArrayOutputStream();
        TestTars.rawMember(mid, "PaxHeader", 'x', TestTars.pax("mtime=1"));
        byte[] before = twoSamples();
        Path shard = tmp.resolve("second.tar");
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        head.writeBytes(before);
        head.writeBytes(mid.toByteArray());
        TestTars.bomb(shard, head.toByteArray(), 'L', BOMB);
        assertNamed(
                shard,
                "the member header at byte " + head.size() + " declares a GNU long name of 512 MiB, more"
                        + " than the 64 KiB limit; the samples before it are read",
                List.of("a/s0", "a/s1"));
    }

    @Test
    void damageBeforeABombIsNamedAsItWasWithoutTheBomb() throws Exception {
        // A header Commons Compress refuses (a mode that is not octal) that the limit check steps over,
        // then a bomb: the shard is named for the damage, which comes first, as it was before.
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        head.writeBytes(twoSamples());
        ByteArrayOutputStream bad = new ByteArrayOutputStream();
        TestTars.rawMember(bad, "c/s2.jpg", '0', TestImages.jpeg(40, 40, 11));
        byte[] b = bad.toByteArray();
        System.arraycopy("zzzzzzz".getBytes(StandardCharsets.US_ASCII), 0, b, 100, 7);
        head.writeBytes(b);
        Path bombed = tmp.resolve("damage-then-bomb.tar");
        TestTars.bomb(bombed, head.toByteArray(), 'L', BOMB);
        Path plain = tmp.resolve("damage.tar");
        Files.write(plain, head.toByteArray());
        List<String> plainWarnings = new ArrayList<>();
        try (Dataset d = Datasets.openLocalChecked(plain.toString(), ErrorPolicy.SKIP, plainWarnings::add)) {
            assertEquals(2, d.size());
        }
        assertEquals(1, plainWarnings.size(), plainWarnings.toString());
        String damage = plainWarnings
                .get(0)
                .substring(plainWarnings.get(0).indexOf(plain.toString())
                        + plain.toString().length());
        assertTrue(damage.contains("tar damaged after member a/s1.cls"), damage);
        assertNamed(bombed, damage.substring(2), List.of("a/s0", "a/s1"));
    }

    @Test
    void aBombAtTheStartLeavesAShardThatIsNotReadAndOthersOpen() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("ds"));
        Files.write(dir.resolve("0.tar"), around(new byte[0]));
        TestTars.bomb(dir.resolve("1.tar"), new byte[0], 'L', BOMB);
        Files.write(dir.resolve("2.tar"), around(new byte[0]));
        List<String> warnings = new ArrayList<>();
        try (Dataset d = Datasets.openLocalChecked(dir.toString(), ErrorPolicy.SKIP, warnings::add)) {
            assertEquals(
                    List.of("WARNING: skipping what is past the damage: " + dir.resolve("1.tar")
                            + ": not a tar file Stoke reads (the member header at byte 0 declares a GNU long name of 512 MiB,"
                            + " more than the 64 KiB limit)"),
                    warnings);
            assertEquals(6, d.size());
        }
    }

    private static byte[] member(String name, char type, byte[] data) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        TestTars.rawMember(out, name, type, data);
        return out.toByteArray();
    }

    /** Opens {@code shard} under skip: its one warning is {@code problem} (null: none), its samples {@code keys}. */
    private static void assertNamed(Path shard, String problem, List<String> keys) {
        List<String> warnings = new ArrayList<>();
        try (Dataset d = Datasets.openLocalChecked(shard.toString(), ErrorPolicy.SKIP, warnings::add)) {
            assertEquals(
                    problem == null
                            ? List.of()
                            : List.of("WARNING: skipping what is past the damage: " + shard + ": " + problem),
                    warnings,
                    shard.toString());
            List<String> names = new ArrayList<>();
            for (int i = 0; i < d.size(); i++) {
                String name = d.name(i);
                assertTrue(name.startsWith(shard + "/"), name);
                names.add(name.substring(shard.toString().length() + 1));
            }
            assertEquals(keys, names, shard.toString());
        }
    }
}
