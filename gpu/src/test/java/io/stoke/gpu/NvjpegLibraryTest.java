package io.stoke.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the GPU decode looks for libnvjpeg, on folder trees laid out as the toolkit and the wheels lay them out. */
class NvjpegLibraryTest {
    @TempDir
    Path dir;

    Path touch(String relative) throws IOException {
        Path p = dir.resolve(relative);
        Files.createDirectories(p.getParent());
        return Files.writeString(p, "");
    }

    @Test
    void stokeNvjpegIsTheOnlyPlaceLookedAtWhenSet() throws IOException {
        Path lib = touch("any/libnvjpeg.so.13");
        touch("cuda/lib64/libnvjpeg.so.13");
        Map<String, String> env = Map.of(
                "STOKE_NVJPEG", lib.toString(), "CUDA_HOME", dir.resolve("cuda").toString());
        NvjpegLibrary.Found f = NvjpegLibrary.find(env, List.of());
        assertEquals(Optional.of(lib), f.path());
        assertEquals("STOKE_NVJPEG", f.where());
        NvjpegLibrary.Found wrong = NvjpegLibrary.find(
                Map.of(
                        "STOKE_NVJPEG",
                        dir.resolve("nothing.so").toString(),
                        "CUDA_HOME",
                        dir.resolve("cuda").toString()),
                List.of());
        assertEquals(Optional.empty(), wrong.path(), "a wrong STOKE_NVJPEG is an error, not a search elsewhere");
        assertEquals("STOKE_NVJPEG=" + dir.resolve("nothing.so") + " is not a file", wrong.missing());
    }

    @Test
    void theToolkitsNewestSonameIsTakenAndStaticArchivesAreNot() throws IOException {
        touch("cuda/lib64/libnvjpeg.so.12");
        Path v13 = touch("cuda/lib64/libnvjpeg.so.13.0.1.20");
        touch("cuda/lib64/libnvjpeg_static.a");
        touch("venv/lib/python3.11/site-packages/torchvision.libs/libnvjpeg.36e11081.so.13");
        NvjpegLibrary.Found f = NvjpegLibrary.find(
                Map.of(
                        "CUDA_HOME",
                        dir.resolve("cuda").toString(),
                        "VIRTUAL_ENV",
                        dir.resolve("venv").toString()),
                List.of());
        assertEquals(Optional.of(v13), f.path());
        assertEquals("the CUDA toolkit at " + dir.resolve("cuda"), f.where());
    }

    @Test
    void torchvisionsBundledCopyInTheActiveVenvIsFoundByItsHashedName() throws IOException {
        touch("venv/lib/python3.11/site-packages/torchvision.libs/libpng16.1d0d8f4e.so.16");
        Path bundled = touch("venv/lib/python3.11/site-packages/torchvision.libs/libnvjpeg.36e11081.so.13");
        NvjpegLibrary.Found f = NvjpegLibrary.find(
                Map.of(
                        "VIRTUAL_ENV",
                        dir.resolve("venv").toString(),
                        "CUDA_HOME",
                        dir.resolve("no-cuda").toString()),
                List.of());
        assertEquals(Optional.of(bundled), f.path());
        assertEquals("torchvision's bundled copy in " + dir.resolve("venv/lib/python3.11/site-packages"), f.where());
    }

    @Test
    void theNvidiaWheelComesBeforeTorchvisionsCopyInTheSameEnvironment() throws IOException {
        Path wheel = touch("conda/lib/python3.12/site-packages/nvidia/cu13/lib/libnvjpeg.so.13");
        touch("conda/lib/python3.12/site-packages/torchvision.libs/libnvjpeg.36e11081.so.13");
        NvjpegLibrary.Found f =
                NvjpegLibrary.find(Map.of("CONDA_PREFIX", dir.resolve("conda").toString()), List.of());
        assertEquals(Optional.of(wheel), f.path());
    }

    @Test
    void theSitePackagesOfThePythonThatStartedStokeAreLookedInAfterTheActiveEnvironments() throws IOException {
        Path system = touch("usr/lib/python3/dist-packages/torchvision.libs/libnvjpeg.1a2b3c4d.so.13");
        Map<String, String> env = Map.of(
                "STOKE_PYTHON_SITE_PACKAGES",
                dir.resolve("nowhere") + ":" + dir.resolve("usr/lib/python3/dist-packages"));
        NvjpegLibrary.Found f = NvjpegLibrary.find(env, List.of());
        assertEquals(Optional.of(system), f.path());
        assertEquals("torchvision's bundled copy in " + dir.resolve("usr/lib/python3/dist-packages"), f.where());
        Path venv = touch("venv/lib/python3.11/site-packages/nvidia/nvjpeg/lib/libnvjpeg.so.12");
        Map<String, String> both = Map.of(
                "STOKE_PYTHON_SITE_PACKAGES",
                dir.resolve("usr/lib/python3/dist-packages").toString(),
                "VIRTUAL_ENV",
                dir.resolve("venv").toString());
        assertEquals(Optional.of(venv), NvjpegLibrary.find(both, List.of()).path(), "the active venv first");
    }

    @Test
    void noneFoundSaysWhereItLookedAndHowToProvideOne() throws IOException {
        Files.createDirectories(dir.resolve("venv/lib/python3.11/site-packages"));
        NvjpegLibrary.Found f =
                NvjpegLibrary.find(Map.of("VIRTUAL_ENV", dir.resolve("venv").toString()), List.of(dir.resolve("cuda")));
        assertEquals(Optional.empty(), f.path());
        String m = f.missing();
        assertTrue(m.startsWith("no libnvjpeg found (looked in " + dir.resolve("cuda/lib64") + ", "), m);
        assertTrue(
                m.contains(dir.resolve("venv/lib/python3.11/site-packages/torchvision.libs")
                        .toString()),
                m);
        assertTrue(m.endsWith("or point STOKE_NVJPEG at libnvjpeg.so"), m);
        NvjpegLibrary.Loaded l =
                NvjpegLibrary.load(Map.of("STOKE_NVJPEG", dir.resolve("x.so").toString()));
        assertEquals(Optional.empty(), l.nvjpeg());
        assertEquals("STOKE_NVJPEG=" + dir.resolve("x.so") + " is not a file", l.description());
    }

    @Test
    void aFileThatIsNoLibraryIsSaidToBeUnusableNotThrown() throws IOException {
        Path fake = touch("fake/libnvjpeg.so.13");
        NvjpegLibrary.Loaded l = NvjpegLibrary.load(Map.of("STOKE_NVJPEG", fake.toString()));
        assertEquals(Optional.empty(), l.nvjpeg());
        assertTrue(
                l.description()
                        .startsWith(fake + " (STOKE_NVJPEG) cannot be used as nvJPEG: " + fake + " cannot be loaded: "),
                l.description());
    }
}
