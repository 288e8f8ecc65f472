package io.stoke.loader.augment;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.loader.testing.TestPython;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * torchvision's own auto-augment code, run in the test's Python ({@link TestPython}) as the
 * reference: its functional ops on a PIL image, its magnitude tables, and its policies' draws.
 * Tests using it are skipped, saying why, where torch and torchvision do not import.
 */
final class TorchvisionAugment {
    private TorchvisionAugment() {}

    static final String PYTHON = TestPython.PATH;

    /** The versions, or null where torch, torchvision or PIL does not import. */
    static String versions() {
        try {
            Process p = new ProcessBuilder(
                            PYTHON,
                            "-c",
                            "import torch, torchvision, PIL; print(torch.__version__, torchvision.__version__,"
                                    + " PIL.__version__)")
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes()).trim();
            return p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0 ? out : null;
        } catch (IOException | InterruptedException e) {
            return null;
        }
    }

    static String requireTorchvision() {
        String v = versions();
        if (v == null) {
            System.err.println(
                    "[stoke] SKIPPING augmentation checks: " + PYTHON + " cannot import torch and torchvision");
        }
        assumeTrue(v != null, "SKIPPED: " + PYTHON + " without torch, torchvision and PIL");
        return v;
    }

    /**
     * Skips, saying why, where the build made no augmentation library (no C compiler): there the
     * ops must refuse, naming the library, which this asserts first.
     */
    static void requireAugmentLibrary() {
        if (!io.stoke.ffm.StokeAugment.available()) {
            IllegalStateException refused = org.junit.jupiter.api.Assertions.assertThrows(
                    IllegalStateException.class, ColourOps::requireLibrary);
            org.junit.jupiter.api.Assertions.assertTrue(
                    refused.getMessage().contains("libstoke_augment.so"), refused.getMessage());
            System.err.println(
                    "[stoke] SKIPPING augmentation checks: " + io.stoke.ffm.StokeAugment.unavailableReason());
            org.junit.jupiter.api.Assumptions.abort("SKIPPED: " + io.stoke.ffm.StokeAugment.unavailableReason());
        }
    }

    /** Whether torchvision has {@code transforms.v2} (0.15 and later). */
    static boolean hasV2() {
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", "import torchvision.transforms.v2")
                    .redirectErrorStream(true)
                    .start();
            p.getInputStream().readAllBytes();
            return p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /** The shared part of the scripts: a policy's torchvision object and magnitude tables. */
    static final String POLICIES = """
            import sys, math
            import torch
            import torchvision.transforms as T
            from torchvision.transforms import InterpolationMode
            def policy(spelling, v2):
                head = spelling.split(',')[0].split(':')
                if v2:
                    import torchvision.transforms.v2 as V
                    mod = V
                else:
                    mod = T
                if head[0] == 'ta_wide':
                    return mod.TrivialAugmentWide(num_magnitude_bins=int(head[1]))
                if head[0] == 'ra':
                    return mod.RandAugment(num_ops=int(head[1]), magnitude=int(head[2]), num_magnitude_bins=int(head[3]))
                name = {'imagenet': 'IMAGENET', 'cifar10': 'CIFAR10', 'svhn': 'SVHN'}[head[1]]
                return mod.AutoAugment(getattr(T.AutoAugmentPolicy, name))
            def space(p, v2, h, w):
                '''{op: (magnitudes as a list of floats, or None, signed)}, as the policy's forward sees them.'''
                out = {}
                if v2:
                    for op, (fn, signed) in p._AUGMENTATION_SPACE.items():
                        m = fn(p.num_magnitude_bins if hasattr(p, 'num_magnitude_bins') else 10, h, w)
                        out[op] = (None if m is None else [float(x) for x in m], signed)
                    return out
                if isinstance(p, T.TrivialAugmentWide):
                    s = p._augmentation_space(p.num_magnitude_bins)
                elif isinstance(p, T.RandAugment):
                    s = p._augmentation_space(p.num_magnitude_bins, (h, w))
                else:
                    s = p._augmentation_space(10, (h, w))
                for op, (m, signed) in s.items():
                    out[op] = (None if m.ndim == 0 else [float(x) for x in m], signed)
                return out
            """;

    private static final String OPS = POLICIES + """
            from PIL import Image
            spelling, v2, w, h = sys.argv[1], sys.argv[2] == '1', int(sys.argv[3]), int(sys.argv[4])
            img = Image.frombytes('RGB', (w, h), open(sys.argv[5], 'rb').read())
            p = policy(spelling, v2)
            tables = space(p, v2, h, w)
            with open(sys.argv[6], 'w') as f:
                for op, (m, signed) in tables.items():
                    f.write(op + ' ' + ('-' if m is None else ' '.join(float(x).hex() for x in m)) + '\\n')
            out = open(sys.argv[7], 'wb')
            for line in open(sys.argv[8]):
                op, b, neg = line.split()
                m = tables[op][0]
                magnitude = 0.0 if m is None else m[int(b)]
                if neg == '1':
                    magnitude *= -1.0
                if v2:
                    res = p._apply_image_or_video_transform(img, op, magnitude, InterpolationMode.NEAREST, p._fill)
                else:
                    from torchvision.transforms.autoaugment import _apply_op
                    res = _apply_op(img, op, magnitude, InterpolationMode.NEAREST, None)
                out.write(res.tobytes())
            out.close()
            """;

    /**
     * torchvision's functional op for each of {@code requests} ({@code "Op bin negative"} lines, the
     * magnitude looked up in torchvision's own table) on the {@code w x h} RGB image, concatenated;
     * {@code tablesOut} receives torchvision's tables ({@code "Op hex hex ..."} or {@code "Op -"}).
     */
    static byte[] apply(
            String spelling, boolean v2, byte[] rgb, int w, int h, List<String> requests, List<String> tablesOut)
            throws Exception {
        Path in = Files.createTempFile("stoke-aug", ".rgb");
        Path tables = Files.createTempFile("stoke-aug", ".txt");
        Path out = Files.createTempFile("stoke-aug", ".out");
        Path req = Files.createTempFile("stoke-aug", ".req");
        try {
            Files.write(in, rgb);
            Files.write(req, requests);
            run(
                    OPS,
                    spelling,
                    v2 ? "1" : "0",
                    "" + w,
                    "" + h,
                    in.toString(),
                    tables.toString(),
                    out.toString(),
                    req.toString());
            tablesOut.addAll(Files.readAllLines(tables));
            return Files.readAllBytes(out);
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(tables);
            Files.deleteIfExists(out);
            Files.deleteIfExists(req);
        }
    }

    /**
     * Runs {@code script} with {@code args} and then three paths: a file holding {@code rgb}, one
     * holding {@code requests} (a line each), and the output it writes, which is returned.
     */
    static byte[] runOnImage(String script, byte[] rgb, List<String> requests, String... args) throws Exception {
        Path in = Files.createTempFile("stoke-aug", ".rgb");
        Path req = Files.createTempFile("stoke-aug", ".req");
        Path out = Files.createTempFile("stoke-aug", ".out");
        try {
            Files.write(in, rgb);
            Files.write(req, requests);
            List<String> all = new ArrayList<>(List.of(args));
            all.addAll(List.of(in.toString(), req.toString(), out.toString()));
            run(script, all.toArray(String[]::new));
            return Files.readAllBytes(out);
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(req);
            Files.deleteIfExists(out);
        }
    }

    /** AugMix's settings as the reference scripts take them: severity, width, depth, alpha, all_ops and v2 (1 or 0). */
    static List<String> augMixArguments(AugmentPolicy policy) {
        AugmentPolicy.AugMixSettings s = policy.augMix();
        return List.of(
                "" + s.severity(),
                "" + s.mixtureWidth(),
                "" + s.chainDepth(),
                "" + s.alpha(),
                s.allOps() ? "1" : "0",
                policy.v2() ? "1" : "0");
    }

    static void run(String script, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(PYTHON, "-c", script));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("reference script failed: " + log);
        }
    }
}
