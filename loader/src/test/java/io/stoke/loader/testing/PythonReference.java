package io.stoke.loader.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Runs torchvision (or, without it, PIL with torchvision's geometry) in Debian's Python as the
 * reference pipeline. Tests using it are skipped, with the reason, where neither is installed.
 */
public final class PythonReference {
    private static final String PYTHON = TestPython.PATH;

    private static final String SCRIPT = """
            import sys
            from PIL import Image
            w, h, size, crop = map(int, sys.argv[1:5])
            img = Image.frombytes('RGB', (w, h), open(sys.argv[5], 'rb').read())
            try:
                import torchvision.transforms as T
                out = T.CenterCrop(crop)(T.Resize(size)(img))
            except ImportError:
                if w <= h:
                    ow, oh = size, int(size * h / w)
                else:
                    ow, oh = int(size * w / h), size
                img = img.resize((ow, oh), Image.BILINEAR)
                top, left = int(round((oh - crop) / 2.0)), int(round((ow - crop) / 2.0))
                out = img.crop((left, top, left + crop, top + crop))
            open(sys.argv[6], 'wb').write(out.tobytes())
            """;

    private PythonReference() {
    }

    public static boolean hasPil() {
        return run("import PIL") == 0;
    }

    private static int run(String code) {
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", code).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(60, TimeUnit.SECONDS) ? p.exitValue() : -1;
        } catch (IOException | InterruptedException e) {
            return -1;
        }
    }

    /** torchvision {@code CenterCrop(crop)(Resize(size)(img))} of an RGB image, as bytes. */
    public static byte[] resizeCrop(byte[] rgb, int w, int h, int size, int crop) throws Exception {
        assumeTrue(hasPil(), "SKIPPED: " + PYTHON + " with PIL is not installed (apt-get install python3-pil)");
        Path in = Files.createTempFile("stoke-ref", ".rgb");
        Path out = Files.createTempFile("stoke-ref", ".out");
        try {
            Files.write(in, rgb);
            Process p = new ProcessBuilder(PYTHON, "-c", SCRIPT, "" + w, "" + h, "" + size, "" + crop,
                    in.toString(), out.toString()).redirectErrorStream(true).start();
            String log = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("reference script failed: " + log);
            }
            return Files.readAllBytes(out);
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(out);
        }
    }
}
