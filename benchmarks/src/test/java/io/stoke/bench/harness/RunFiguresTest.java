package io.stoke.bench.harness;

import static org.junit.jupiter.api.Assertions.*;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JSON between the harness and its runs' processes, and torch_loader.py's versions. */
class RunFiguresTest {
    @TempDir
    Path tmp;

    @Test
    void readsWhatTorchLoaderPyWrites() throws Exception {
        // json.dump's layout, with a field the harness does not know.
        Path f = tmp.resolve("run.json");
        Files.writeString(
                f,
                "{\"loader\": \"pytorch\", \"dataset\": \"jpeg\", \"batch_size\": 4, \"workers\": 2, "
                        + "\"model_ms\": 4.0, \"warmup_images\": 2048, \"images\": 12, \"batches\": 3, \"elapsed_s\": 1.5e-05, "
                        + "\"wait_ns\": [900000000, 1,\n 25], \"torch_threads\": {\"intra\": 1}}\n");
        RunFigures r = RunFigures.read(f);
        assertEquals("pytorch", r.loader());
        assertEquals(4, r.batchSize());
        assertEquals(4.0, r.modelMs());
        assertEquals(2048, r.warmupImages());
        assertEquals(12, r.images());
        assertEquals(1.5e-5, r.elapsedS());
        assertArrayEquals(new long[] {900_000_000, 1, 25}, r.waitNs());
    }

    @Test
    void whatStokeWritesReadsBackExactly() {
        Path f = tmp.resolve("run.json");
        RunFigures w = new RunFigures(
                "stoke", "raw", 256, 4, 1024.0, 0, 1000, 4, 0.123456789, new long[] {5, 0, Long.MAX_VALUE, 7});
        w.write(f);
        RunFigures r = RunFigures.read(f);
        assertEquals(w.elapsedS(), r.elapsedS());
        assertArrayEquals(w.waitNs(), r.waitNs());
        assertEquals(w.workers(), r.workers());
    }

    @Test
    void aMissingFieldIsAnErrorNamingTheFile() throws Exception {
        Path f = tmp.resolve("broken.json");
        Files.writeString(
                f,
                "{\"loader\": \"stoke\", \"dataset\": \"jpeg\", \"batch_size\": 4, \"workers\": 1, "
                        + "\"model_ms\": 0, \"warmup_images\": 0, \"batches\": 0, \"elapsed_s\": 1.0, \"wait_ns\": []}");
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> RunFigures.read(f));
        assertTrue(e.getMessage().contains("broken.json") && e.getMessage().contains("images"), e.getMessage());
    }

    @Test
    void versionsAreListedInTheScriptsOrderWhateverTheValuesHold() {
        assertEquals(
                "python 3.11.2, torch 2.3.0+cu121, odd a {b}: \"c\"",
                TorchScript.describe(
                        "{\"python\": \"3.11.2\", \"torch\": \"2.3.0+cu121\", \"odd\": \"a {b}: \\\"c\\\"\"}"));
        assertThrows(IllegalArgumentException.class, () -> TorchScript.describe("Traceback (most recent call last):"));
    }

    @Test
    void warningsOnStderrDoNotSpoilTheVersions() throws Exception {
        TorchScript.Check c = checkWith("echo 'UserWarning: Failed to load image Python extension' >&2\n"
                + "echo '{\"python\": \"3.11.2\", \"torch\": \"1.13.0\"}'\n");
        assertTrue(c.runs(), c.whyNot());
        assertEquals("python 3.11.2, torch 1.13.0", c.versions());
    }

    @Test
    void aFailingScriptSaysWhyOverAllItsLines() throws Exception {
        TorchScript.Check c =
                checkWith("echo 'cannot import torch' >&2\necho '  apt-get install python3-torch' >&2\nexit 3\n");
        assertFalse(c.runs());
        assertEquals("cannot import torch\n  apt-get install python3-torch", c.whyNot());
    }

    /** Asks TorchScript for the versions through a stand-in interpreter running {@code shell}. */
    private TorchScript.Check checkWith(String shell) throws Exception {
        Path python = tmp.resolve("python");
        Files.writeString(python, "#!/bin/sh\n" + shell);
        Files.setPosixFilePermissions(python, PosixFilePermissions.fromString("rwxr-xr-x"));
        return TorchScript.check(python, Files.writeString(tmp.resolve("torch_loader.py"), ""));
    }
}
