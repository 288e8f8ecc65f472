package io.stoke.loader.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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
            mode = sys.argv[7] if len(sys.argv) > 7 else 'bilinear'
            img = Image.frombytes('RGB', (w, h), open(sys.argv[5], 'rb').read())
            try:
                import torchvision.transforms as T
                out = T.CenterCrop(crop)(T.Resize(size, interpolation=T.InterpolationMode(mode))(img))
            except ImportError:
                if w <= h:
                    ow, oh = size, int(size * h / w)
                else:
                    ow, oh = int(size * w / h), size
                img = img.resize((ow, oh), getattr(Image, mode.upper()))
                top, left = int(round((oh - crop) / 2.0)), int(round((ow - crop) / 2.0))
                out = img.crop((left, top, left + crop, top + crop))
            open(sys.argv[6], 'wb').write(out.tobytes())
            """;

    private PythonReference() {}

    public static boolean hasPil() {
        return run("import PIL") == 0;
    }

    private static int run(String code) {
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", code)
                    .redirectErrorStream(true)
                    .start();
            p.getInputStream().readAllBytes();
            return p.waitFor(60, TimeUnit.SECONDS) ? p.exitValue() : -1;
        } catch (IOException | InterruptedException e) {
            return -1;
        }
    }

    /** torchvision {@code CenterCrop(crop)(Resize(size)(img))} of an RGB image, as bytes. */
    public static byte[] resizeCrop(byte[] rgb, int w, int h, int size, int crop) throws Exception {
        return resizeCrop(rgb, w, h, size, crop, "bilinear");
    }

    /**
     * torchvision {@code CenterCrop(crop)(Resize(size, interpolation=InterpolationMode(mode))(img))}
     * of an RGB image, as bytes ({@code mode}: bilinear, bicubic, nearest).
     */
    public static byte[] resizeCrop(byte[] rgb, int w, int h, int size, int crop, String mode) throws Exception {
        assumeTrue(hasPil(), "SKIPPED: " + PYTHON + " with PIL is not installed (apt-get install python3-pil)");
        Path in = Files.createTempFile("stoke-ref", ".rgb");
        Path out = Files.createTempFile("stoke-ref", ".out");
        try {
            Files.write(in, rgb);
            Process p = new ProcessBuilder(
                            PYTHON,
                            "-c",
                            SCRIPT,
                            "" + w,
                            "" + h,
                            "" + size,
                            "" + crop,
                            in.toString(),
                            out.toString(),
                            mode)
                    .redirectErrorStream(true)
                    .start();
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

    private static final String RESIZE = """
            import sys
            from PIL import Image
            w, h, ow, oh = map(int, sys.argv[1:5])
            mode = sys.argv[5]
            img = Image.frombytes('RGB', (w, h), open(sys.argv[6], 'rb').read())
            out = img.resize((ow, oh), getattr(Image, mode.upper()), reducing_gap=None)
            open(sys.argv[7], 'wb').write(out.tobytes())
            """;

    /** PIL's {@code img.resize((ow, oh), Image.BILINEAR, reducing_gap=None)} of an RGB image, as bytes. */
    public static byte[] resize(byte[] rgb, int w, int h, int ow, int oh) throws Exception {
        return resize(rgb, w, h, ow, oh, "bilinear");
    }

    /** PIL's {@code img.resize((ow, oh), Image.<MODE>, reducing_gap=None)} of an RGB image, as bytes. */
    public static byte[] resize(byte[] rgb, int w, int h, int ow, int oh, String mode) throws Exception {
        assumeTrue(hasPil(), "SKIPPED: " + PYTHON + " with PIL is not installed (apt-get install python3-pil)");
        Path in = Files.createTempFile("stoke-ref", ".rgb");
        Path out = Files.createTempFile("stoke-ref", ".out");
        try {
            Files.write(in, rgb);
            run(RESIZE, in, out, "" + w, "" + h, "" + ow, "" + oh, mode);
            return Files.readAllBytes(out);
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(out);
        }
    }

    private static final String RESIZED_CROP = """
            import sys
            from PIL import Image
            w, h, left, top, bw, bh, size, flip = map(int, sys.argv[1:9])
            mode = sys.argv[9]
            img = Image.frombytes('RGB', (w, h), open(sys.argv[10], 'rb').read())
            try:
                import torchvision.transforms.functional as F
                from torchvision.transforms import InterpolationMode
                out = F.resized_crop(img, top, left, bh, bw, [size, size], interpolation=InterpolationMode(mode))
                if flip:
                    out = F.hflip(out)
            except ImportError:
                out = img.crop((left, top, left + bw, top + bh)).resize((size, size), getattr(Image, mode.upper()))
                if flip:
                    out = out.transpose(Image.FLIP_LEFT_RIGHT)
            open(sys.argv[11], 'wb').write(out.tobytes())
            """;

    /**
     * torchvision {@code F.resized_crop(img, top, left, bh, bw, [size, size])}, then {@code hflip}
     * when asked, of an RGB image, as bytes (PIL's crop, resize and transpose without torchvision).
     */
    public static byte[] resizedCrop(
            byte[] rgb, int w, int h, int left, int top, int bw, int bh, int size, boolean flip) throws Exception {
        return resizedCrop(rgb, w, h, left, top, bw, bh, size, flip, "bilinear");
    }

    /** {@link #resizedCrop(byte[], int, int, int, int, int, int, int, boolean)} with {@code interpolation=InterpolationMode(mode)}. */
    public static byte[] resizedCrop(
            byte[] rgb, int w, int h, int left, int top, int bw, int bh, int size, boolean flip, String mode)
            throws Exception {
        assumeTrue(hasPil(), "SKIPPED: " + PYTHON + " with PIL is not installed (apt-get install python3-pil)");
        Path in = Files.createTempFile("stoke-ref", ".rgb");
        Path out = Files.createTempFile("stoke-ref", ".out");
        try {
            Files.write(in, rgb);
            run(
                    RESIZED_CROP,
                    in,
                    out,
                    "" + w,
                    "" + h,
                    "" + left,
                    "" + top,
                    "" + bw,
                    "" + bh,
                    "" + size,
                    flip ? "1" : "0",
                    mode);
            return Files.readAllBytes(out);
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(out);
        }
    }

    private static final String CROP_PARAMS = """
            import sys
            import torch
            import torchvision.transforms as T
            from PIL import Image
            w, h, n, seed = map(int, sys.argv[1:5])
            smin, smax, rmin, rmax = map(float, sys.argv[5:9])
            torch.manual_seed(seed)
            img = Image.new('RGB', (w, h))
            with open(sys.argv[9], 'w') as f:
                for _ in range(n):
                    i, j, bh, bw = T.RandomResizedCrop.get_params(img, [smin, smax], [rmin, rmax])
                    f.write(f"{j} {i} {bw} {bh}\\n")
            """;

    /** Whether {@code torch} and {@code torchvision} import. */
    public static boolean hasTorchvision() {
        return run("import torch, torchvision") == 0;
    }

    /**
     * {@code n} boxes drawn by torchvision's {@code RandomResizedCrop.get_params} for a
     * {@code w x h} image, as {left, top, width, height} rows.
     */
    public static int[][] cropParams(
            int w, int h, int n, long seed, double scaleMin, double scaleMax, double ratioMin, double ratioMax)
            throws Exception {
        boolean ok = hasTorchvision();
        if (!ok) {
            System.err.println(
                    "[stoke] SKIPPING crop distribution check: " + PYTHON + " cannot import torch and torchvision");
        }
        assumeTrue(ok, "SKIPPED: " + PYTHON + " without torch and torchvision");
        Path out = Files.createTempFile("stoke-ref", ".txt");
        try {
            run(
                    CROP_PARAMS,
                    null,
                    null,
                    "" + w,
                    "" + h,
                    "" + n,
                    "" + seed,
                    "" + scaleMin,
                    "" + scaleMax,
                    "" + ratioMin,
                    "" + ratioMax,
                    out.toString());
            return Files.readAllLines(out).stream()
                    .map(l -> Arrays.stream(l.trim().split(" "))
                            .mapToInt(Integer::parseInt)
                            .toArray())
                    .toArray(int[][]::new);
        } finally {
            Files.deleteIfExists(out);
        }
    }

    // get_params draws from torch's mt19937, one 32-bit word per value: two per try (area, then
    // log aspect, each uniform from its low 24 bits), two more (top, left: word % range) where the
    // box fits. numpy's MT19937 seeded as torch.manual_seed gives the same words, so the draws are
    // made from them in a plain loop, about 8 times faster than calling get_params; the first
    // CHECKED draws of each case are get_params' own, compared draw for draw, so the two cannot
    // drift apart unseen.
    private static final String ERASE_PARAMS = """
            import math, sys
            import numpy as np
            import torch
            import torchvision.transforms as T
            n, seed, checked = map(int, sys.argv[1:4])
            cases = [c.split(',') for c in sys.argv[4].split(';')]

            def words(seed):
                bits = np.random.MT19937()
                bits._legacy_seeding(seed)  # torch.manual_seed(seed)'s generator
                while True:
                    yield from bits.random_raw(1 << 16).tolist()

            def uniform(word, low, high):  # torch's uniform_ of a float32 tensor on the CPU
                return float(np.float32((word & 0xFFFFFF) * 2.0 ** -24 * (high - low) + low))

            def fast(side, smin, smax, rmin, rmax):
                raw = words(seed)
                lo, hi = (float(x) for x in torch.log(torch.tensor((rmin, rmax))))
                for _ in range(n):
                    box = None
                    for _ in range(10):
                        erase = side * side * uniform(next(raw), smin, smax)
                        aspect = float(np.float32(math.exp(uniform(next(raw), lo, hi))))
                        h = int(round(math.sqrt(erase * aspect)))
                        w = int(round(math.sqrt(erase / aspect)))
                        if h < side and w < side:
                            i = next(raw) % (side - h + 1)
                            box = (next(raw) % (side - w + 1), i, w, h)
                            break
                    yield box

            def torchvisions(side, smin, smax, rmin, rmax):
                torch.manual_seed(seed)
                img = torch.zeros(3, side, side)
                for _ in range(checked):
                    i, j, h, w, v = T.RandomErasing.get_params(img, scale=(smin, smax), ratio=(rmin, rmax), value=[0.0])
                    yield (j, i, w, h) if v is not img else None

            with open(sys.argv[5], 'w') as f:
                for c in cases:
                    side, args = int(c[0]), [float(x) for x in c[1:]]
                    boxes = list(fast(side, *args))
                    for k, box in enumerate(torchvisions(side, *args)):
                        if box != boxes[k]:
                            sys.exit(f"case {c}: draw {k} is {boxes[k]} here and {box} from get_params")
                    f.write(f"case {','.join(c)}\\n")
                    f.writelines("none\\n" if b is None else f"{b[0]} {b[1]} {b[2]} {b[3]}\\n" for b in boxes)
            """;

    /**
     * {@code n} draws of torchvision's {@code RandomErasing.get_params} on a {@code 3 x side x side}
     * tensor for each of {@code cases} ({side, scale min, scale max, ratio min, ratio max}), in one
     * Python run, each case from {@code torch.manual_seed(seed)}: {left, top, width, height} rows,
     * null where no try fitted (torchvision then returns the image itself). The first {@code
     * checked} of each case are compared with get_params' own calls (see ERASE_PARAMS).
     */
    public static int[][][] eraseParams(List<double[]> cases, int n, long seed, int checked) throws Exception {
        boolean ok = hasTorchvision();
        if (!ok) {
            System.err.println(
                    "[stoke] SKIPPING erase distribution check: " + PYTHON + " cannot import torch and torchvision");
        }
        assumeTrue(ok, "SKIPPED: " + PYTHON + " without torch and torchvision");
        StringBuilder spec = new StringBuilder();
        for (double[] c : cases) {
            spec.append(spec.isEmpty() ? "" : ";").append((int) c[0]);
            for (int k = 1; k < c.length; k++) {
                spec.append(',').append(c[k]);
            }
        }
        Path out = Files.createTempFile("stoke-ref", ".txt");
        try {
            run(ERASE_PARAMS, null, null, "" + n, "" + seed, "" + checked, spec.toString(), out.toString());
            List<String> lines = Files.readAllLines(out);
            int[][][] boxes = new int[cases.size()][][];
            for (int c = 0; c < cases.size(); c++) {
                boxes[c] = lines.subList(c * (n + 1) + 1, (c + 1) * (n + 1)).stream()
                        .map(l -> l.equals("none")
                                ? null
                                : Arrays.stream(l.split(" "))
                                        .mapToInt(Integer::parseInt)
                                        .toArray())
                        .toArray(int[][]::new);
            }
            return boxes;
        } finally {
            Files.deleteIfExists(out);
        }
    }

    private static final String ERASE = """
            import sys
            import numpy as np
            import torch
            import torchvision.transforms.functional as F
            side, i, j, h, w = map(int, sys.argv[1:6])
            value = [float(v) for v in sys.argv[6].split(',')]
            img = torch.from_numpy(np.fromfile(sys.argv[7], dtype=np.float32).reshape(3, side, side).copy())
            v = torch.tensor(value)[:, None, None]
            out = F.erase(img, i, j, h, w, v)
            out.numpy().astype(np.float32).tofile(sys.argv[8])
            """;

    /**
     * torchvision's {@code F.erase(img, top, left, h, w, torch.tensor(value)[:, None, None])} of a
     * float32 {@code 3 x side x side} tensor given as native-order bytes, as bytes.
     */
    public static byte[] erase(byte[] chw, int side, int left, int top, int w, int h, float[] value) throws Exception {
        boolean ok = hasTorchvision();
        assumeTrue(ok, "SKIPPED: " + PYTHON + " without torch and torchvision");
        Path in = Files.createTempFile("stoke-ref", ".f32");
        Path out = Files.createTempFile("stoke-ref", ".out");
        StringBuilder values = new StringBuilder();
        for (float v : value) {
            values.append(values.isEmpty() ? "" : ",").append(v);
        }
        try {
            Files.write(in, chw);
            run(ERASE, in, out, "" + side, "" + top, "" + left, "" + h, "" + w, values.toString());
            return Files.readAllBytes(out);
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(out);
        }
    }

    private static final String ERASE_UINT8 = """
            import sys
            import numpy as np
            import torch
            import torchvision.transforms.functional as F
            side, i, j, h, w = map(int, sys.argv[1:6])
            value = [float(v) for v in sys.argv[6].split(',')]
            hwc = np.fromfile(sys.argv[7], dtype=np.uint8).reshape(side, side, 3)
            img = torch.from_numpy(hwc.copy()).permute(2, 0, 1)  # PILToTensor's uint8 image
            out = F.erase(img, i, j, h, w, torch.tensor(value)[:, None, None])
            out.permute(1, 2, 0).contiguous().numpy().tofile(sys.argv[8])
            """;

    /**
     * torchvision's {@code F.erase(img, top, left, h, w, torch.tensor(value)[:, None, None])} of
     * the uint8 image {@code PILToTensor()} makes of the {@code side x side} RGB pixels {@code hwc},
     * as RGB pixels again.
     */
    public static byte[] eraseUint8(byte[] hwc, int side, int left, int top, int w, int h, float[] value)
            throws Exception {
        assumeTrue(hasTorchvision(), "SKIPPED: " + PYTHON + " without torch and torchvision");
        Path in = Files.createTempFile("stoke-ref", ".u8");
        Path out = Files.createTempFile("stoke-ref", ".out");
        StringBuilder values = new StringBuilder();
        for (float v : value) {
            values.append(values.isEmpty() ? "" : ",").append(v);
        }
        try {
            Files.write(in, hwc);
            run(ERASE_UINT8, in, out, "" + side, "" + top, "" + left, "" + h, "" + w, values.toString());
            return Files.readAllBytes(out);
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(out);
        }
    }

    /** Runs {@code script} with {@code args} (then {@code in} and {@code out} when given), failing on a non-zero exit. */
    private static void run(String script, Path in, Path out, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(PYTHON, "-c", script));
        cmd.addAll(List.of(args));
        if (in != null) {
            cmd.add(in.toString());
            cmd.add(out.toString());
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("reference script failed: " + log);
        }
    }
}
