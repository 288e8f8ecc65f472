package io.stoke.bench.harness;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.ImageFolder;
import io.stoke.loader.source.ShardDataset;
import io.stoke.loader.source.Shards;
import io.stoke.loader.testing.TestImages;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The harness's raw case through the real pipeline: the raw shards that {@link RawTensors} packs
 * and the {@code .raw} files it cuts from them hold the same bytes per sample, Stoke's raw run
 * reads the shards through the real {@link Loader} and gets those bytes (which are also what its
 * JPEG run delivers), and PyTorch's side reads the same samples in the same order.
 */
class RawTensorsTest {
    private static final Path SYSTEM_PYTHON = Path.of("/usr/bin/python3");

    @TempDir
    Path tmp;

    /** Eleven JPEGs in three classes; one large enough (1100x800) that the JPEG path decodes it at a DCT scale. */
    private Path jpegs() throws Exception {
        Path root = TestImages.imageFolder(tmp.resolve("jpeg"), 10, 3, 11);
        Files.write(root.resolve("class01/img_large.jpg"), TestImages.jpeg(1100, 800, 99));
        return root;
    }

    private RawTensors.Prepared prepare(Path jpeg) {
        return RawTensors.ensure(jpeg, tmp.resolve("shards"), tmp.resolve("raw"), 2);
    }

    @Test
    void stokesRawRunReadsTheShardsThroughTheLoaderAndGetsTheRawFilesBytes() throws Exception {
        Path jpeg = jpegs();
        RawTensors.Prepared p = prepare(jpeg);
        assertEquals(11, p.samples());
        assertTrue(p.packed() && p.filesMade(), p.toString());
        assertTrue(Files.isRegularFile(p.shards().resolve("index.json")));
        assertTrue(Files.isRegularFile(p.shards().resolve("shard-000000.tar")));
        List<Path> files = RawTensors.list(p.files());
        assertEquals(11, files.size());
        for (Path f : files) {
            assertEquals(RawTensors.SAMPLE_BYTES, Files.size(f), f.toString());
        }
        List<byte[]> raw = new ArrayList<>();
        for (Path f : files) {
            raw.add(Files.readAllBytes(f));
        }

        // harness-run's raw dataset and transform (train asked for: the raw case is eval whatever
        // --transform says), batch 4, 2 workers, 2 slots: 3 batches, the last partial.
        List<byte[]> stoke = new ArrayList<>();
        try (Dataset dataset = StokeRunCommand.open("raw", p.shards())) {
            assertEquals(11, dataset.size());
            for (int i = 0; i < dataset.size(); i++) {
                assertEquals(
                        Shards.NPY,
                        ((ShardDataset) dataset).shards().format(i),
                        "sample " + i + " is a .npy: only copied");
            }
            List<Integer> sizes = new ArrayList<>();
            try (Loader loader = Loader.builder(dataset)
                    .batchSize(4)
                    .workers(2)
                    .slots(2)
                    .transform(StokeRunCommand.spec("raw", "train", "POWERS_OF_TWO"))
                    .build()) {
                for (Batch b : loader) {
                    try (b) {
                        sizes.add(b.size());
                        assertArrayEquals(new long[] {b.size(), 224, 224, 3}, b.shape());
                        for (int i = 0; i < b.size(); i++) {
                            int sample = (int) b.index(i);
                            assertEquals(stoke.size(), sample, "dataset order");
                            byte[] got = b.sample(i).toArray(JAVA_BYTE);
                            assertArrayEquals(raw.get(sample), got, "sample " + sample + " vs " + files.get(sample));
                            stoke.add(got);
                        }
                    }
                }
            }
            assertEquals(List.of(4, 4, 3), sizes);
        }
        assertEquals(11, stoke.size());

        // The same pixels as the JPEG run's (Resize 256 + CenterCrop 224 at its DCT scaling), the
        // large image included.
        try (Loader loader = Loader.builder(ImageFolder.scan(jpeg))
                .batchSize(4)
                .workers(2)
                .transform(StokeRunCommand.spec("jpeg", "eval", "POWERS_OF_TWO"))
                .build()) {
            for (Batch b : loader) {
                try (b) {
                    for (int i = 0; i < b.size(); i++) {
                        int sample = (int) b.index(i);
                        assertArrayEquals(
                                raw.get(sample), b.sample(i).toArray(JAVA_BYTE), "JPEG run's sample " + sample);
                    }
                }
            }
        }
    }

    @Test
    void thePreparedDataIsReusedAndRemadeWhenIncomplete() throws Exception {
        Path jpeg = jpegs();
        RawTensors.Prepared first = prepare(jpeg);
        Path one = RawTensors.list(first.files()).get(3);
        FileTime old = FileTime.fromMillis(1_000_000_000_000L);
        Files.setLastModifiedTime(one, old);
        Files.setLastModifiedTime(first.shards().resolve("shard-000000.tar"), old);

        RawTensors.Prepared again = prepare(jpeg);
        assertFalse(again.packed() || again.filesMade(), again.toString());
        assertEquals(old, Files.getLastModifiedTime(one), "nothing rewritten");
        assertEquals(old, Files.getLastModifiedTime(first.shards().resolve("shard-000000.tar")));

        // A .raw file gone: the files are cut again from the same pack, which stays.
        Files.delete(one);
        RawTensors.Prepared cut = prepare(jpeg);
        assertTrue(cut.filesMade() && !cut.packed(), cut.toString());
        assertEquals(RawTensors.SAMPLE_BYTES, Files.size(one));

        // A set made by an older harness (its marker named the JPEG tree, not the pack), with a stray file.
        Files.writeString(first.files().resolve(RawTensors.MARKER), "11 " + jpeg.toAbsolutePath() + "\n");
        Path stray = first.files().resolve("class00/zzz.raw");
        Files.write(stray, new byte[(int) RawTensors.SAMPLE_BYTES]);
        RawTensors.Prepared remade = prepare(jpeg);
        assertTrue(remade.filesMade() && !remade.packed(), remade.toString());
        assertFalse(Files.exists(stray), "PyTorch must read the pack's samples and no others");
        assertEquals(11, RawTensors.list(first.files()).size());

        // Another tree of the same name in the same folders: both remade for it.
        Path other = TestImages.imageFolder(tmp.resolve("other").resolve("jpeg"), 5, 2, 12);
        RawTensors.Prepared replaced = RawTensors.ensure(other, tmp.resolve("shards"), tmp.resolve("raw"), 1);
        assertTrue(replaced.packed() && replaced.filesMade(), replaced.toString());
        assertEquals(5, RawTensors.list(first.files()).size());
        try (Dataset dataset = StokeRunCommand.open("raw", replaced.shards())) {
            assertEquals(5, dataset.size());
        }
    }

    @Test
    void harnessRunTimesTheRawShardsAndRefusesAnythingElse() throws Exception {
        Path jpeg = jpegs();
        RawTensors.Prepared p = prepare(jpeg);
        Path json = tmp.resolve("run.json");
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
            code = new CommandLine(new StokeRunCommand())
                    .execute(
                            p.shards().toString(),
                            "--dataset",
                            "raw",
                            "--batch-size",
                            "4",
                            "--workers",
                            "2",
                            "--slots",
                            "2",
                            "--warmup-images",
                            "16",
                            "--json",
                            json.toString());
        } finally {
            System.setOut(out);
        }
        assertEquals(0, code, printed.toString(StandardCharsets.UTF_8));
        RunFigures f = RunFigures.read(json);
        assertEquals(11, f.images());
        assertEquals(16, f.warmupImages());
        assertEquals(3, f.waitNs().length);
        String lines = printed.toString(StandardCharsets.UTF_8);
        assertTrue(
                lines.indexOf(StokeRunCommand.FIRST) < lines.indexOf(StokeRunCommand.BEGIN)
                        && lines.indexOf(StokeRunCommand.BEGIN) < lines.indexOf(StokeRunCommand.END),
                lines);

        // The JPEG tree, or JPEG shards, given as the raw dataset: refused, not timed as raw.
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> StokeRunCommand.open("raw", jpeg));
        assertTrue(e.getMessage().contains("raw shards"), e.getMessage());
    }

    @Test
    void pytorchsSideReadsTheSameSamplesInTheSameOrder() throws Exception {
        Assumptions.assumeTrue(
                imports(SYSTEM_PYTHON, "numpy, torch, torchvision, PIL"),
                SYSTEM_PYTHON
                        + " cannot import numpy, torch, torchvision and PIL: PyTorch's reading of the raw dataset "
                        + "is not compared with Stoke's here (apt-get install python3-torch python3-torchvision)");
        Path jpeg = jpegs();
        RawTensors.Prepared p = prepare(jpeg);
        Path script = findScript();
        // torch_loader.py's own Dataset over the .raw files: one sha256 a sample, in its order.
        String code = "import hashlib, sys\n"
                + "sys.path.insert(0, sys.argv[1])\n"
                + "import torch_loader\n"
                + "ds = torch_loader.RawTensors(sys.argv[2])\n"
                + "for i in range(len(ds)):\n"
                + "    x, y = ds[i]\n"
                + "    assert tuple(x.shape) == (224, 224, 3) and str(x.dtype) == 'torch.uint8', x.shape\n"
                + "    print(hashlib.sha256(x.numpy().tobytes()).hexdigest())\n";
        Process proc = new ProcessBuilder(
                        SYSTEM_PYTHON.toString(),
                        "-c",
                        code,
                        script.getParent().toString(),
                        p.files().toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        String printed = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(proc.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, proc.exitValue(), printed);
        List<String> torch = printed.lines().toList();

        List<String> stoke = new ArrayList<>();
        try (Dataset dataset = StokeRunCommand.open("raw", p.shards());
                Loader loader = Loader.builder(dataset)
                        .batchSize(4)
                        .workers(2)
                        .transform(StokeRunCommand.spec("raw", "eval", "POWERS_OF_TWO"))
                        .build()) {
            for (Batch b : loader) {
                try (b) {
                    for (int i = 0; i < b.size(); i++) {
                        stoke.add(HexFormat.of()
                                .formatHex(MessageDigest.getInstance("SHA-256")
                                        .digest(b.sample(i).toArray(JAVA_BYTE))));
                    }
                }
            }
        }
        assertEquals(11, stoke.size());
        assertEquals(stoke, torch);
    }

    private static Path findScript() {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            Path f = d.resolve("benchmarks/python/torch_loader.py");
            if (Files.isRegularFile(f)) {
                return f;
            }
        }
        throw new IllegalStateException("benchmarks/python/torch_loader.py not found above "
                + Path.of("").toAbsolutePath());
    }

    private static boolean imports(Path python, String modules) throws Exception {
        if (!Files.isExecutable(python)) {
            return false;
        }
        Process p = new ProcessBuilder(python.toString(), "-c", "import " + modules)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        return p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0;
    }
}
