package io.stoke.loader.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.error.SampleError;
import io.stoke.loader.error.SampleException;
import io.stoke.loader.error.SampleStatus;
import io.stoke.loader.internal.BracePattern;
import io.stoke.loader.testing.TestImages;
import io.stoke.loader.testing.TestPython;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * WebDataset shards written by Python's {@code tarfile} (the reference writer: PAX and GNU long
 * names, keys in folders and longer than 100 bytes), read back by Stoke against the folder they
 * were made from; and hostile shards, each of whose faults must be named under both policies.
 */
class ShardsTest {
    static final TransformSpec SMALL = TransformSpec.defaults().withResize(48, 40);
    static final Duration NO_HANG = Duration.ofSeconds(60);

    @TempDir
    static Path tmp;

    static Path folder;
    static Dataset folderIndex;

    @BeforeAll
    static void makeFolder() {
        folder = TestImages.imageFolder(tmp.resolve("folder"), 41, 3, 5);
        folderIndex = ImageFolder.scan(folder);
    }

    static void python(String script, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(TestPython.PATH, "-c", script));
        cmd.addAll(List.of(args));
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        } catch (IOException e) {
            assumeTrue(false, "SKIPPING: no Python at " + TestPython.PATH + " to write reference tar shards");
            return;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "python hung");
        assertEquals(0, p.exitValue(), out);
    }

    /** Python's tarfile writes the folder as shards: 12 samples a shard, keys under a deep folder. */
    private static final String WRITE_SHARDS = """
            import io, os, sys, tarfile
            root, out, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
            classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
            samples = [(c + '/' + f, i) for i, c in enumerate(classes) for f in sorted(os.listdir(os.path.join(root, c)))]
            for s in range(0, len(samples), 12):
                fmt = tarfile.GNU_FORMAT if (s // 12) % 2 else tarfile.PAX_FORMAT
                with tarfile.open(os.path.join(out, 'train-%06d.tar' % (s // 12)), 'w', format=fmt) as t:
                    for rel, label in samples[s:s + 12]:
                        key = prefix + rel.rsplit('.', 1)[0]
                        t.add(os.path.join(root, rel), arcname=key + '.jpg')
                        info = tarfile.TarInfo(key + '.cls'); data = str(label).encode()
                        info.size = len(data); t.addfile(info, io.BytesIO(data))
                        info = tarfile.TarInfo(key + '.json'); data = b'{"other": "field"}'
                        info.size = len(data); t.addfile(info, io.BytesIO(data))
            """;

    /** Per sample, in dataset order: label and a checksum of its pixels. */
    static List<String> samples(Dataset dataset, boolean shuffle) {
        Map<Long, String> byIndex = new TreeMap<>();
        List<String> inOrder = new ArrayList<>();
        try (Loader loader = Loader.builder(dataset)
                .transform(SMALL)
                .batchSize(8)
                .workers(2)
                .slots(3)
                .shuffle(shuffle)
                .seed(3)
                .build()) {
            for (Batch b : loader) {
                try (b) {
                    long sampleBytes = b.pixels().byteSize() / b.size();
                    for (int i = 0; i < b.size(); i++) {
                        CRC32 crc = new CRC32();
                        crc.update(
                                b.pixels().asSlice(i * sampleBytes, sampleBytes).asByteBuffer());
                        long idx = b.indices().getAtIndex(ValueLayout.JAVA_LONG, i);
                        String s = b.labels().getAtIndex(ValueLayout.JAVA_INT, i) + ":" + crc.getValue();
                        byIndex.put(idx, s);
                        inOrder.add(idx + "=" + s);
                    }
                }
            }
        }
        return shuffle ? inOrder : new ArrayList<>(byIndex.values());
    }

    @Test
    void shardsWrittenByPythonReadBackAsTheFolder() throws Exception {
        Path out = Files.createDirectories(tmp.resolve("py-shards"));
        String prefix = "deep/" + "k".repeat(95) + "/";
        python(WRITE_SHARDS, folder.toString(), out.toString(), prefix);
        String pattern = out + "/train-{000000..000003}.tar";
        try (ShardDataset shards = (ShardDataset) Datasets.openLocal(pattern)) {
            assertEquals(folderIndex.size(), shards.size());
            assertEquals(4, shards.shards().shardCount());
            assertTrue(
                    shards.shards().problems().isEmpty(),
                    shards.shards().problems().toString());
            for (int i = 0; i < shards.size(); i++) {
                String key = folderIndex.path(i);
                String expected = out + "/train-" + String.format("%06d", i / 12) + ".tar/" + prefix
                        + key.substring(0, key.lastIndexOf('.'));
                assertEquals(expected, shards.name(i), "name of sample " + i);
                assertEquals(folderIndex.label(i), shards.label(i), "label of sample " + i);
            }
            assertTrue(shards.name(0).length() > 100 + out.toString().length(), "keys longer than 100 bytes");
            List<String> fromFolder = samples(folderIndex, false);
            assertEquals(fromFolder, samples(shards, false), "same pixels and labels in the same order");
            // A global shuffle over every shard's samples: each sample once, the folder's shuffle order.
            assertEquals(samples(folderIndex, true), samples(shards, true));
        }
        // The folder of those shards (with a manifest beside them) is the same dataset, in name order.
        Files.writeString(out.resolve("index.json"), "{}");
        try (Dataset same = Datasets.openLocal(out.toString())) {
            assertEquals(folderIndex.size(), same.size());
            assertEquals(samples(folderIndex, false), samples(same, false));
        }
        // One shard by itself.
        try (Dataset one = Datasets.openLocal(out.resolve("train-000001.tar").toString())) {
            assertEquals(12, one.size());
            assertEquals(folderIndex.label(12), one.label(0));
        }
    }

    /**
     * Shard 0 holds each sample-level fault between good samples; shard 1 is cut in the middle of a
     * member; shard 2 claims a member far larger than the file; shard 3 is garbage.
     */
    private static final String WRITE_HOSTILE = """
            import io, os, sys, tarfile
            src, out = sys.argv[1], sys.argv[2]
            good = lambda n: open(os.path.join(src, n), 'rb').read()
            def member(t, name, data):
                info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
            with tarfile.open(os.path.join(out, 'h-000000.tar'), 'w', format=tarfile.PAX_FORMAT) as t:
                member(t, 'a/good1.jpg', good('g0.jpg')); member(t, 'a/good1.cls', b'1')
                member(t, 'a/nolabel.jpg', good('g1.jpg'))
                member(t, 'a/empty.jpg', b''); member(t, 'a/empty.cls', b'2')
                member(t, 'a/png.jpg', b'\\x89PNG\\r\\n\\x1a\\n' + b'\\0' * 40); member(t, 'a/png.cls', b'3')
                member(t, 'a/lone.cls', b'4')
                member(t, 'a/badlabel.jpg', good('g2.jpg')); member(t, 'a/badlabel.cls', b'cat')
                member(t, 'a/good2.jpg', good('g3.jpg')); member(t, 'a/good2.cls', b'5')
            with tarfile.open(os.path.join(out, 'h-000001.tar'), 'w', format=tarfile.PAX_FORMAT) as t:
                member(t, 'b/good3.jpg', good('g4.jpg')); member(t, 'b/good3.cls', b'6')
                member(t, 'b/cut.jpg', good('g5.jpg')); member(t, 'b/cut.cls', b'7')
            data = open(os.path.join(out, 'h-000001.tar'), 'rb').read()
            t = tarfile.open(os.path.join(out, 'h-000001.tar'))
            cut = [m for m in t.getmembers() if m.name == 'b/cut.jpg'][0]
            t.close()
            open(os.path.join(out, 'h-000001.tar'), 'wb').write(data[:cut.offset_data + cut.size // 2])
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode='w', format=tarfile.USTAR_FORMAT) as t:
                member(t, 'c/good4.jpg', good('g6.jpg')); member(t, 'c/good4.cls', b'8')
            last = tarfile.open(fileobj=io.BytesIO(buf.getvalue())).getmembers()[-1]
            end = last.offset_data + (last.size + 511) // 512 * 512
            info = tarfile.TarInfo('c/liar.jpg'); info.size = 1 << 30
            liar = buf.getvalue()[:end] + info.tobuf(tarfile.USTAR_FORMAT) + b'\\xff\\xd8' + b'x' * 998
            open(os.path.join(out, 'h-000002.tar'), 'wb').write(liar)
            open(os.path.join(out, 'h-000003.tar'), 'wb').write(os.urandom(7000))
            """;

    private static Path hostile() throws Exception {
        Path src = Files.createDirectories(tmp.resolve("hostile-src"));
        for (int i = 0; i < 7; i++) {
            Files.write(src.resolve("g" + i + ".jpg"), TestImages.jpeg(60 + 7 * i, 50 + 5 * i, 900 + i));
        }
        Path out = Files.createDirectories(tmp.resolve("hostile"));
        if (!Files.exists(out.resolve("h-000003.tar"))) {
            python(WRITE_HOSTILE, src.toString(), out.toString());
        }
        return out;
    }

    @Test
    void hostileShardsAreNamedUnderSkipAndTheGoodSamplesStillDelivered() throws Exception {
        Path dir = hostile();
        List<String> warnings = new ArrayList<>();
        assertTimeoutPreemptively(NO_HANG, () -> {
            try (Dataset dataset = Datasets.openLocalChecked(dir.toString(), ErrorPolicy.SKIP, warnings::add)) {
                String all = String.join("\n", warnings);
                assertTrue(all.contains("h-000001.tar"), all);
                assertTrue(all.contains("h-000002.tar"), all);
                assertTrue(all.contains("h-000003.tar") && all.contains("not a readable tar file"), all);
                assertEquals(3, warnings.size(), all);
                Map<String, String> named = new HashMap<>();
                Map<String, Integer> delivered = new HashMap<>();
                try (Loader loader = Loader.builder(dataset)
                        .transform(SMALL)
                        .batchSize(4)
                        .workers(2)
                        .slots(3)
                        .onError(ErrorPolicy.SKIP)
                        .build()) {
                    for (Batch b : loader) {
                        try (b) {
                            for (SampleError e : b.skipped()) {
                                named.put(e.path(), e.status().name());
                            }
                            for (int i = 0; i < b.size(); i++) {
                                int sample = (int) b.indices().getAtIndex(ValueLayout.JAVA_LONG, i);
                                if (b.status(i) == SampleStatus.OK) {
                                    delivered.put(
                                            dataset.path(sample), b.labels().getAtIndex(ValueLayout.JAVA_INT, i));
                                }
                            }
                        }
                    }
                }
                assertEquals(Map.of("a/good1", 1, "a/good2", 5, "b/good3", 6, "c/good4", 8), delivered);
                String s0 = dir.resolve("h-000000.tar") + "/";
                String s1 = dir.resolve("h-000001.tar") + "/";
                String s2 = dir.resolve("h-000002.tar") + "/";
                assertEquals(
                        Map.of(
                                s0 + "a/nolabel", "NO_LABEL",
                                s0 + "a/empty", "EMPTY_FILE",
                                s0 + "a/png", io.stoke.ffm.StokeImage.available() ? "CORRUPT" : "FORMAT_NOT_DECODED",
                                s0 + "a/lone", "NO_IMAGE",
                                s0 + "a/badlabel", "BAD_LABEL",
                                s1 + "b/cut", "MEMBER_TRUNCATED",
                                s2 + "c/liar", "MEMBER_TRUNCATED"),
                        named);
            }
        });
    }

    @Test
    void hostileShardsFailUnderFailNamingEachOne() throws Exception {
        Path dir = hostile();
        assertTimeoutPreemptively(NO_HANG, () -> {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> Datasets.openLocalChecked(dir.toString(), ErrorPolicy.FAIL, w -> {}));
            assertTrue(
                    e.getMessage().contains("h-000001.tar")
                            && e.getMessage().contains("h-000002.tar")
                            && e.getMessage().contains("h-000003.tar"),
                    e.getMessage());
            // The shard whose faults are per sample opens; its first bad sample fails its batch, named.
            try (Dataset dataset = Datasets.openLocalChecked(
                            dir.resolve("h-000000.tar").toString(), ErrorPolicy.FAIL, w -> {});
                    Loader loader = Loader.builder(dataset)
                            .transform(SMALL)
                            .batchSize(2)
                            .workers(2)
                            .slots(2)
                            .build()) {
                SampleException failed = assertThrows(SampleException.class, () -> {
                    for (Batch b : loader) {
                        b.close();
                    }
                });
                assertTrue(failed.getMessage().contains("h-000000.tar/a/nolabel"), failed.getMessage());
                assertTrue(failed.getMessage().contains("no .cls label"), failed.getMessage());
            }
        });
    }

    @Test
    void shardsWithoutAnyLabelAreLabelledMinusOneAndSaySo() throws Exception {
        Path out = Files.createDirectories(tmp.resolve("unlabelled"));
        python(
                """
                import io, sys, tarfile
                with tarfile.open(sys.argv[2], 'w') as t:
                    for i in range(3):
                        t.add(sys.argv[1], arcname='s%d.jpeg' % i)
                """,
                folder.resolve(folderIndex.path(0)).toString(),
                out.resolve("u.tar").toString());
        List<String> warnings = new ArrayList<>();
        try (Dataset dataset =
                Datasets.openLocalChecked(out.resolve("u.tar").toString(), ErrorPolicy.FAIL, warnings::add)) {
            assertEquals(3, dataset.size());
            assertEquals(-1, dataset.label(2));
            assertTrue(warnings.size() == 1 && warnings.get(0).contains("every label is -1"), warnings.toString());
            List<String> got = samples(dataset, false);
            assertEquals(3, got.size());
            assertTrue(got.stream().allMatch(s -> s.startsWith("-1:")), got.toString());
        }
    }

    @Test
    void braceExpansion() {
        assertEquals(List.of("a-000.tar", "a-001.tar", "a-002.tar"), BracePattern.expand("a-{000..002}.tar"));
        assertEquals(List.of("s8.tar", "s9.tar", "s10.tar"), BracePattern.expand("s{8..10}.tar"));
        assertEquals(
                List.of("x/a-1.tar", "x/a-2.tar", "x/b-1.tar", "x/b-2.tar"), BracePattern.expand("x/{a,b}-{1..2}.tar"));
        assertEquals(List.of("plain.tar"), BracePattern.expand("plain.tar"));
        assertThrows(IllegalArgumentException.class, () -> BracePattern.expand("a-{1..x}.tar"));
        assertThrows(IllegalArgumentException.class, () -> BracePattern.expand("a-{3..1}.tar"));
        assertThrows(IllegalArgumentException.class, () -> BracePattern.expand("a-{1..2.tar"));
        IllegalArgumentException missing = assertThrows(
                IllegalArgumentException.class,
                () -> Datasets.openLocal(tmp.resolve("nothing-{0..1}.tar").toString()));
        assertTrue(missing.getMessage().contains("nothing-0.tar"), missing.getMessage());
    }
}
