package io.stoke.loader.augment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.stoke.loader.testing.PythonReference;
import io.stoke.loader.testing.TestPython;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The geometric ops against torchvision's own {@code _apply_op} on the same PIL image, run at test
 * time in {@link TestPython} (Debian's Pillow 9.4 and torchvision 0.14 by default; set
 * {@code STOKE_TEST_PYTHON} to run today's Pillow 12.3 and torchvision 0.29, whose v2 op is held
 * to v1's there too): every magnitude bin of TrivialAugmentWide (31), RandAugment (31),
 * AutoAugment (10) and AugMix (11), both signs, fill None and (128, 64, 32), nearest, bilinear and
 * bicubic, byte for byte, and each matrix bit for bit against the one torchvision or Pillow
 * handed to {@code Image.transform}.
 */
class AffineOpsTest {
    private static final int[] FILL = {128, 64, 32};
    private static final int[] INTERPOLATIONS = {AffineOps.NEAREST, AffineOps.BILINEAR, AffineOps.BICUBIC};

    private static final String OPS_SCRIPT = """
            import sys
            import torchvision.transforms as T
            from PIL import Image
            from torchvision.transforms import InterpolationMode
            from torchvision.transforms.autoaugment import _apply_op
            try:
                from torchvision.transforms import v2
            except ImportError:
                v2 = None
            w, h = int(sys.argv[1]), int(sys.argv[2])
            img = Image.frombytes('RGB', (w, h), open(sys.argv[3], 'rb').read())
            handed = []
            transform = Image.Image.transform
            def spy(self, size, method, data=None, *args, **kwargs):
                handed.append(tuple(data))
                return transform(self, size, method, data, *args, **kwargs)
            Image.Image.transform = spy
            ops = ('ShearX', 'ShearY', 'TranslateX', 'TranslateY', 'Rotate')
            spaces = [T.TrivialAugmentWide()._augmentation_space(31), T.RandAugment()._augmentation_space(31, (h, w)),
                      T.AutoAugment()._augmentation_space(10, (h, w)), T.AugMix()._augmentation_space(11, (h, w))]
            modes = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC}
            v2_differs = []
            with open(sys.argv[4], 'w') as cases, open(sys.argv[5], 'wb') as out:
                for op in ops:
                    seen = set()
                    for space in spaces:
                        values, signed = space[op]
                        for i in range(len(values)):
                            m = float(values[i].item())
                            for mag in (m, m * -1.0):
                                if repr(mag) in seen:
                                    continue
                                seen.add(repr(mag))
                                for code, mode in modes.items():
                                    for fill in (None, [128, 64, 32]):
                                        handed.clear()
                                        res = _apply_op(img, op, mag, mode, fill).tobytes()
                                        v1_handed = list(handed)
                                        if v2 is not None:
                                            aug = v2.TrivialAugmentWide(interpolation=mode, fill=fill)
                                            res2 = aug._apply_image_or_video_transform(img, op, mag, mode, aug._fill)
                                            if res2.tobytes() != res:
                                                v2_differs.append((op, mag, code, fill))
                                        matrix = ','.join(repr(float(v)) for v in v1_handed[0]) if v1_handed else '-'
                                        cases.write(f"{op}\\t{mag!r}\\t{code}\\t{0 if fill is None else 1}\\t{matrix}\\n")
                                        out.write(res)
            if v2_differs:
                sys.exit(f"torchvision's v2 op differs from v1's for {v2_differs[:5]}")
            """;

    private static final String MATRIX_SCRIPT = """
            import sys
            from PIL import Image
            w, h = int(sys.argv[1]), int(sys.argv[2])
            img = Image.frombytes('RGB', (w, h), open(sys.argv[3], 'rb').read())
            with open(sys.argv[4]) as cases, open(sys.argv[5], 'wb') as out:
                for line in cases:
                    f, fill, *m = line.split()
                    res = img.transform((w, h), Image.Transform.AFFINE, [float(v) for v in m], int(f),
                                        fillcolor=(128, 64, 32) if fill == '1' else None)
                    out.write(res.tobytes())
            """;

    @BeforeEach
    void needsTheNativeOps() {
        assumeTrue(AffineOps.available(), () -> {
            System.err.println("[stoke] SKIPPING geometric ops check: " + AffineOps.unavailableReason());
            return AffineOps.unavailableReason();
        });
    }

    /** One case of the reference: an op, its signed magnitude, interpolation, fill, and Python's matrix or null. */
    private record Case(String op, double magnitude, int interpolation, boolean fill, double[] matrix) {}

    @ParameterizedTest(name = "{0}x{1}")
    @CsvSource({"37, 29", "33, 33", "5, 8", "1, 1"})
    void eachOpIsTorchvisionsOnAPilImageForEveryBinSignFillAndInterpolation(int w, int h) throws Exception {
        assumeTrue(PythonReference.hasTorchvision(), () -> {
            System.err.println("[stoke] SKIPPING geometric ops check: " + TestPython.PATH + " has no torchvision");
            return TestPython.PATH + " without torch and torchvision";
        });
        byte[] rgb = noise(w, h, 31L * w + h);
        Path dir = Files.createTempDirectory("stoke-affine");
        try {
            Files.write(dir.resolve("in.rgb"), rgb);
            python(OPS_SCRIPT, dir, "" + w, "" + h, "in.rgb", "cases.txt", "out.bin");
            List<Case> cases = readCases(dir.resolve("cases.txt"));
            byte[] expected = Files.readAllBytes(dir.resolve("out.bin"));
            int imageBytes = 3 * w * h;
            assertEquals((long) cases.size() * imageBytes, expected.length);
            assertTrue(cases.size() >= 5 * 60 * 6, "too few cases: " + cases.size());
            long rowBytes = 3L * w + 5; // padded rows: the padding must stay as it was
            Map<String, Integer> fastPaths = new TreeMap<>();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment src = padded(arena, rgb, w, h, rowBytes);
                MemorySegment dst = arena.allocate(rowBytes * h);
                double[] m = new double[6];
                for (int i = 0; i < cases.size(); i++) {
                    Case c = cases.get(i);
                    dst.fill((byte) 0x5a);
                    run(c, src, dst, w, h, rowBytes);
                    byte[] want = Arrays.copyOfRange(expected, i * imageBytes, (i + 1) * imageBytes);
                    assertArrayEquals(
                            want,
                            unpadded(dst, w, h, rowBytes),
                            () -> "pixels of " + c.op() + "(" + c.magnitude() + ") interpolation " + c.interpolation()
                                    + " fill " + c.fill() + " on " + w + "x" + h);
                    for (int y = 0; y < h; y++) {
                        for (long p = 3L * w; p < rowBytes; p++) {
                            assertEquals((byte) 0x5a, dst.get(JAVA_BYTE, y * rowBytes + p), "padding written");
                        }
                    }
                    if (c.matrix() == null) {
                        fastPaths.merge(c.op() + "(" + c.magnitude() + ")", 1, Integer::sum);
                    } else {
                        matrix(c, w, h, m);
                        for (int k = 0; k < 6; k++) {
                            assertEquals(
                                    Double.doubleToLongBits(c.matrix()[k]),
                                    Double.doubleToLongBits(m[k]),
                                    "matrix[" + k + "] of " + c.op() + "(" + c.magnitude() + "): Python "
                                            + c.matrix()[k] + ", Stoke " + m[k]);
                        }
                    }
                }
            }
            // Only Rotate takes Pillow's fast paths (0 and -0 a copy; +-90 a transpose where square).
            fastPaths.keySet().forEach(k -> assertTrue(k.startsWith("Rotate("), k));
            assertTrue(fastPaths.containsKey("Rotate(0.0)"), fastPaths::toString);
            assertEquals(w == h, fastPaths.containsKey("Rotate(90.0)"), fastPaths::toString);
            System.err.println("[stoke] geometric ops: " + cases.size() + " cases byte-equal to torchvision on " + w
                    + "x" + h + " (" + TestPython.PATH + "); Pillow's fast paths: " + fastPaths.keySet());
        } finally {
            deleteTree(dir);
        }
    }

    /**
     * Arbitrary matrices through Pillow's {@code Image.transform}: the scale-only nearest path with
     * any scale and sign, the 16.16 fixed-point one, and (on a 33000-pixel-wide image, where a
     * corner is past 32768) the double one, with all three filters; and shifts by whole pixels,
     * which bilinear and bicubic copy row by row.
     */
    @ParameterizedTest(name = "{0}x{1}")
    @CsvSource({"23, 17", "33000, 2"})
    void arbitraryMatricesArePillowsTransform(int w, int h) throws Exception {
        assumeTrue(PythonReference.hasPil(), "SKIPPED: " + TestPython.PATH + " without PIL");
        SplittableRandom r = new SplittableRandom(w * 1000L + h);
        int n = w > 1000 ? 24 : 600;
        List<double[]> matrices = new ArrayList<>();
        List<int[]> params = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < n; i++) {
            double[] m = new double[6];
            switch (i % 5) {
                case 0 ->
                    m = new double[] {
                        r.nextDouble(-2, 2),
                        0.0,
                        r.nextDouble(-20, 20),
                        -0.0,
                        r.nextDouble(-2, 2),
                        r.nextDouble(-20, 20)
                    };
                case 1 -> {
                    double t = r.nextDouble(-3.2, 3.2);
                    m = new double[] {
                        Math.cos(t),
                        Math.sin(t),
                        r.nextDouble(-10, 30),
                        -Math.sin(t),
                        Math.cos(t),
                        r.nextDouble(-10, 30)
                    };
                }
                case 2 -> m = new double[] {1.0, r.nextDouble(-1, 1), 0.0, -0.0, 1.0, 0.0};
                case 3 ->
                    // A shift by whole pixels, which the library copies row by row: inside, partly
                    // out and wholly out of the image on each side, zeros of either sign.
                    m = new double[] {
                        1.0,
                        r.nextBoolean() ? 0.0 : -0.0,
                        r.nextInt(-w - 3, w + 4),
                        r.nextBoolean() ? 0.0 : -0.0,
                        1.0,
                        r.nextInt(-h - 3, h + 4)
                    };
                default -> {
                    for (int k = 0; k < 6; k++) {
                        m[k] = r.nextDouble(-2, 2) * (k == 2 || k == 5 ? 20 : 1);
                    }
                }
            }
            int f = INTERPOLATIONS[r.nextInt(3)];
            int fill = r.nextInt(2);
            matrices.add(m);
            params.add(new int[] {f, fill});
            text.append(f).append(' ').append(fill);
            for (double v : m) {
                text.append(' ').append(v);
            }
            text.append('\n');
        }
        byte[] rgb = noise(w, h, 7L * w + h);
        Path dir = Files.createTempDirectory("stoke-affine");
        try {
            Files.write(dir.resolve("in.rgb"), rgb);
            Files.writeString(dir.resolve("cases.txt"), text);
            python(MATRIX_SCRIPT, dir, "" + w, "" + h, "in.rgb", "cases.txt", "out.bin");
            byte[] expected = Files.readAllBytes(dir.resolve("out.bin"));
            int imageBytes = 3 * w * h;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment src = padded(arena, rgb, w, h, 3L * w);
                MemorySegment dst = arena.allocate(3L * w * h);
                for (int i = 0; i < n; i++) {
                    int[] p = params.get(i);
                    AffineOps.affine(src, dst, w, h, 3L * w, matrices.get(i), p[0], p[1] == 1 ? FILL : null);
                    byte[] want = Arrays.copyOfRange(expected, i * imageBytes, (i + 1) * imageBytes);
                    int k = i;
                    assertArrayEquals(
                            want,
                            dst.toArray(JAVA_BYTE),
                            () -> "matrix " + Arrays.toString(matrices.get(k)) + " filter " + p[0] + " on " + w + "x"
                                    + h);
                }
            }
        } finally {
            deleteTree(dir);
        }
    }

    /** {@code round15} against BigDecimal's exact half-even rounding, ties included. */
    @Test
    void round15IsPythonsDecimalRounding() {
        SplittableRandom r = new SplittableRandom(15);
        List<Double> values = new ArrayList<>(List.of(
                0.0,
                -0.0,
                1.0,
                -1.0,
                1.0 / 65536,
                -1.0 / 65536,
                6.123233995736766e-17,
                0.7071067811865476,
                0.49999999999999994e-15,
                0.5e-15,
                1.5e-15,
                2.5e-15));
        for (int k = 0; k < 64; k++) { // (2k + 1) / 2^16 times 10^15 is (2k + 1) 5^15 / 2: exact ties
            values.add(Math.scalb(2 * k + 1.0, -16));
            values.add(-Math.scalb(2 * k + 1.0, -16));
        }
        for (int i = 0; i < 200_000; i++) {
            double v = r.nextDouble(-1, 1);
            values.add(i % 3 == 0 ? v : i % 3 == 1 ? Math.scalb(v, -r.nextInt(60)) : Math.sin(v * 1000));
        }
        for (double v : values) {
            double want = new BigDecimal(v).setScale(15, RoundingMode.HALF_EVEN).doubleValue();
            want = Math.copySign(want, v); // Python keeps the sign of a zero
            assertEquals(
                    Double.doubleToLongBits(want),
                    Double.doubleToLongBits(AffineOps.round15(v)),
                    "round(" + v + ", 15)");
        }
    }

    @Test
    void aWrongSizeThrowsAndWritesNothing() {
        try (Arena arena = Arena.ofConfined()) {
            int w = 9;
            int h = 7;
            MemorySegment src = arena.allocate(3L * w * h);
            MemorySegment dst = arena.allocate(3L * w * h).fill((byte) 7);
            MemorySegment small = arena.allocate(3L * w * h - 1);
            assertThrows(IllegalArgumentException.class, () -> AffineOps.rotate(small, dst, w, h, 3L * w, 10, 0, null));
            assertThrows(
                    IllegalArgumentException.class, () -> AffineOps.shearX(src, small, w, h, 3L * w, 0.3, 0, null));
            assertThrows(
                    IllegalArgumentException.class, () -> AffineOps.shearY(src, dst, w, h, 3L * w - 1, 0.3, 0, null));
            assertThrows(
                    IllegalArgumentException.class, () -> AffineOps.translateX(src, dst, 0, h, 3L * w, 3, 0, null));
            assertThrows(
                    IllegalArgumentException.class, () -> AffineOps.translateY(src, dst, w, h, 3L * w, 3, 1, null));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> AffineOps.rotate(src, dst, w, h, 3L * w, 10, 0, new int[] {1, 2}));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> AffineOps.rotate(src, dst, w, h, 3L * w, 10, 0, new int[] {1, 2, 256}));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> AffineOps.rotate(src, dst, w, h, 3L * w, Double.NaN, 0, null));
            assertThrows(IllegalArgumentException.class, () -> AffineOps.rotate(src, src, w, h, 3L * w, 10, 0, null));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> AffineOps.rotate(src, src.asSlice(3), w, h - 1, 3L * w, 10, 0, null));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> AffineOps.rotate(src, dst.asReadOnly(), w, h, 3L * w, 10, 0, null));
            for (byte b : dst.toArray(JAVA_BYTE)) {
                assertEquals(7, b);
            }
        }
    }

    private static void run(Case c, MemorySegment src, MemorySegment dst, int w, int h, long rowBytes) {
        int[] fill = c.fill() ? FILL : null;
        switch (c.op()) {
            case "ShearX" -> AffineOps.shearX(src, dst, w, h, rowBytes, c.magnitude(), c.interpolation(), fill);
            case "ShearY" -> AffineOps.shearY(src, dst, w, h, rowBytes, c.magnitude(), c.interpolation(), fill);
            case "TranslateX" -> AffineOps.translateX(src, dst, w, h, rowBytes, c.magnitude(), c.interpolation(), fill);
            case "TranslateY" -> AffineOps.translateY(src, dst, w, h, rowBytes, c.magnitude(), c.interpolation(), fill);
            case "Rotate" -> AffineOps.rotate(src, dst, w, h, rowBytes, c.magnitude(), c.interpolation(), fill);
            default -> throw new IllegalStateException(c.op());
        }
    }

    private static void matrix(Case c, int w, int h, double[] m) {
        switch (c.op()) {
            case "ShearX" -> AffineOps.shearXMatrix(c.magnitude(), m);
            case "ShearY" -> AffineOps.shearYMatrix(c.magnitude(), m);
            case "TranslateX" -> AffineOps.translateMatrix(w, h, (int) c.magnitude(), 0, m);
            case "TranslateY" -> AffineOps.translateMatrix(w, h, 0, (int) c.magnitude(), m);
            case "Rotate" -> AffineOps.rotateMatrix(w, h, AffineOps.pythonMod360(c.magnitude()), m);
            default -> throw new IllegalStateException(c.op());
        }
    }

    private static List<Case> readCases(Path file) throws Exception {
        List<Case> cases = new ArrayList<>();
        for (String line : Files.readAllLines(file)) {
            String[] f = line.split("\t");
            double[] matrix = null;
            if (!f[4].equals("-")) {
                matrix = Arrays.stream(f[4].split(","))
                        .mapToDouble(Double::parseDouble)
                        .toArray();
            }
            cases.add(new Case(f[0], Double.parseDouble(f[1]), Integer.parseInt(f[2]), f[3].equals("1"), matrix));
        }
        return cases;
    }

    private static byte[] noise(int w, int h, long seed) {
        byte[] b = new byte[3 * w * h];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    private static MemorySegment padded(Arena arena, byte[] rgb, int w, int h, long rowBytes) {
        MemorySegment s = arena.allocate(rowBytes * h).fill((byte) 0x33);
        for (int y = 0; y < h; y++) {
            MemorySegment.copy(rgb, 3 * w * y, s, JAVA_BYTE, y * rowBytes, 3 * w);
        }
        return s;
    }

    private static byte[] unpadded(MemorySegment s, int w, int h, long rowBytes) {
        byte[] out = new byte[3 * w * h];
        for (int y = 0; y < h; y++) {
            MemorySegment.copy(s, JAVA_BYTE, y * rowBytes, out, 3 * w * y, 3 * w);
        }
        return out;
    }

    private static void python(String script, Path dir, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(TestPython.PATH, "-c", script));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .start();
        String log = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("reference script failed: " + log);
        }
    }

    private static void deleteTree(Path dir) throws Exception {
        try (var files = Files.walk(dir)) {
            for (Path p : files.sorted((a, b) -> b.compareTo(a)).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
