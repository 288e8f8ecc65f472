package io.stoke.loader.augment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import io.stoke.loader.testing.TestImages;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Each op AugMix draws against torchvision's own {@code _apply_op} (v1) or
 * {@code _apply_image_or_video_transform} (v2) on the uint8 tensor AugMix makes of the image
 * ({@code pil_to_tensor}, batched as its forward batches it), at each magnitude bin of that
 * version's AugMix table ({@code _PARAMETER_MAX} bins, read from torchvision), both signs, nearest
 * and bilinear, fill None and a colour: byte for byte, on whichever torchvision the test's Python
 * has (Debian 12's 0.14, v1 only; {@code STOKE_TEST_PYTHON=/work/venvs/torch214/bin/python} for
 * 0.29's v1 and v2).
 */
class TensorOpsTest {
    private static final double[] FILL = {128, 64, 32};
    private static final int[] INTERPOLATIONS = {AffineOps.NEAREST, AffineOps.BILINEAR};

    private static final String SCRIPT = """
            import sys
            import torch
            import torchvision.transforms as T
            from PIL import Image
            from torchvision.transforms import InterpolationMode
            from torchvision.transforms import functional as F
            from torchvision.transforms.autoaugment import _apply_op
            v2, w, h = sys.argv[1] == '1', int(sys.argv[2]), int(sys.argv[3])
            img = F.pil_to_tensor(Image.frombytes('RGB', (w, h), open(sys.argv[4], 'rb').read())).unsqueeze(0)
            if v2:
                import torchvision.transforms.v2 as V
                aug = V.AugMix()
                tables = {op: (fn(aug._PARAMETER_MAX, h, w), signed) for op, (fn, signed) in aug._AUGMENTATION_SPACE.items()}
            else:
                aug = T.AugMix()
                tables = {op: (None if m.ndim == 0 else m, signed)
                          for op, (m, signed) in aug._augmentation_space(aug._PARAMETER_MAX, (h, w)).items()}
            with open(sys.argv[5], 'w') as f:
                for op, (m, signed) in tables.items():
                    f.write(op + ' ' + ('1' if signed else '0') + ' '
                            + ('-' if m is None else ' '.join(float(x).hex() for x in m)) + '\\n')
            modes = {'0': InterpolationMode.NEAREST, '2': InterpolationMode.BILINEAR}
            out = open(sys.argv[6], 'wb')
            for line in open(sys.argv[7]):
                op, b, neg, mode, fill = line.split()
                m = tables[op][0]
                magnitude = 0.0 if m is None else float(m[int(b)].item())
                if neg == '1':
                    magnitude *= -1.0
                fill = None if fill == '-' else [float(v) for v in fill.split(',')]
                if v2:
                    p = V.AugMix(interpolation=modes[mode], fill=fill)
                    res = p._apply_image_or_video_transform(img, op, magnitude, interpolation=modes[mode], fill=p._fill)
                else:
                    res = _apply_op(img, op, magnitude, interpolation=modes[mode], fill=fill)
                out.write(res[0].permute(1, 2, 0).contiguous().numpy().tobytes())
            out.close()
            """;

    @ParameterizedTest(name = "v2={0} on {1}x{2}")
    @CsvSource({
        "false, 31, 23",
        "true, 31, 23",
        "false, 64, 48",
        "true, 47, 61",
        "false, 17, 9",
        "true, 3, 5",
        "false, 160, 120",
        "true, 160, 120",
    })
    void everyOpAtEveryBinAndSignIsTorchvisionsByteForByte(boolean v2, int w, int h) throws Exception {
        String versions = TorchvisionAugment.requireTorchvision();
        if (v2 && !TorchvisionAugment.hasV2()) {
            System.err.println("[stoke] SKIPPING v2 check: torchvision " + versions + " has no transforms.v2");
            Assumptions.abort("SKIPPED: torchvision without transforms.v2 (" + versions + ")");
        }
        byte[] rgb = TestImages.rgb(w, h, 7 + w);
        Path in = Files.createTempFile("stoke-tensor", ".rgb");
        Path tablesFile = Files.createTempFile("stoke-tensor", ".txt");
        Path out = Files.createTempFile("stoke-tensor", ".out");
        Path req = Files.createTempFile("stoke-tensor", ".req");
        try {
            Map<String, double[]> tables = new HashMap<>();
            Map<String, Boolean> signed = new HashMap<>();
            // The tables first, in a run of their own, so that the requests cover every bin of each.
            Files.write(in, rgb);
            Files.write(req, List.of());
            TorchvisionAugment.run(
                    SCRIPT,
                    v2 ? "1" : "0",
                    "" + w,
                    "" + h,
                    in.toString(),
                    tablesFile.toString(),
                    out.toString(),
                    req.toString());
            for (String line : Files.readAllLines(tablesFile)) {
                String[] f = line.split(" ");
                signed.put(f[0], f[1].equals("1"));
                tables.put(
                        f[0],
                        f[2].equals("-")
                                ? null
                                : Arrays.stream(f, 2, f.length)
                                        .mapToDouble(Double::parseDouble)
                                        .toArray());
            }
            assertEquals(13, tables.size(), "AugMix's all_ops space: " + tables.keySet());
            List<String> requests = new ArrayList<>();
            for (String op : tables.keySet()) {
                boolean geometric = AugmentOp.ofTorchvisionName(op).geometric();
                if (geometric) {
                    continue; // the tensor affine ops come in the next commit
                }
                double[] m = tables.get(op);
                for (int b = 0; b < (m == null ? 1 : m.length); b++) {
                    for (int neg = 0; neg < (signed.get(op) ? 2 : 1); neg++) {
                        for (int mode : geometric ? INTERPOLATIONS : new int[] {AffineOps.NEAREST}) {
                            for (String fill : geometric ? List.of("-", "128,64,32") : List.of("-")) {
                                requests.add(op + " " + b + " " + neg + " " + mode + " " + fill);
                            }
                        }
                    }
                }
            }
            Files.write(in, rgb);
            Files.write(req, requests);
            TorchvisionAugment.run(
                    SCRIPT,
                    v2 ? "1" : "0",
                    "" + w,
                    "" + h,
                    in.toString(),
                    tablesFile.toString(),
                    out.toString(),
                    req.toString());
            byte[] expected = Files.readAllBytes(out);
            int bytes = 3 * w * h;
            assertEquals((long) requests.size() * bytes, expected.length);
            try (Arena arena = Arena.ofConfined();
                    TensorOps ops = new TensorOps(w, h)) {
                MemorySegment src = arena.allocate(bytes);
                MemorySegment dst = arena.allocate(bytes);
                MemorySegment.copy(rgb, 0, src, JAVA_BYTE, 0, bytes);
                for (int k = 0; k < requests.size(); k++) {
                    String[] r = requests.get(k).split(" ");
                    AugmentOp op = AugmentOp.ofTorchvisionName(r[0]);
                    double[] m = tables.get(r[0]);
                    double magnitude = m == null ? 0.0 : m[Integer.parseInt(r[1])];
                    if (r[2].equals("1")) {
                        magnitude *= -1.0;
                    }
                    double[] fill = r[4].equals("-") ? null : FILL;
                    ops.apply(op, magnitude, src, dst, Integer.parseInt(r[3]), fill, v2);
                    byte[] got = dst.toArray(JAVA_BYTE);
                    byte[] want = Arrays.copyOfRange(expected, k * bytes, (k + 1) * bytes);
                    if (!Arrays.equals(want, got)) {
                        int i = Arrays.mismatch(want, got);
                        int differ = 0;
                        for (int j = 0; j < bytes; j++) {
                            differ += want[j] != got[j] ? 1 : 0;
                        }
                        fail(requests.get(k) + " (magnitude " + magnitude + ", v2=" + v2
                                + ") differs from torchvision ("
                                + versions + ") in " + differ + " of " + bytes + " bytes, first at pixel ("
                                + (i / 3 % w) + ", " + (i / 3 / w) + ") channel " + (i % 3) + ": " + (got[i] & 0xFF)
                                + " instead of " + (want[i] & 0xFF));
                    }
                }
            }
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(tablesFile);
            Files.deleteIfExists(out);
            Files.deleteIfExists(req);
        }
    }

    @Test
    void refusesWhatTorchvisionsTensorPathCannotDoAndWritesNothingOutOfBounds() {
        TensorOps.requireLibrary();
        try (Arena arena = Arena.ofConfined();
                TensorOps ops = new TensorOps(8, 6)) {
            MemorySegment src = arena.allocate(3 * 8 * 6);
            MemorySegment dst = arena.allocate(3 * 8 * 6);
            IllegalArgumentException bicubic = assertThrows(
                    IllegalArgumentException.class,
                    () -> ops.apply(AugmentOp.ROTATE, 10, src, dst, AffineOps.BICUBIC, null, false));
            assertEquals(true, bicubic.getMessage().contains("NEAREST"), bicubic.getMessage());
            assertThrows(
                    IndexOutOfBoundsException.class,
                    () -> ops.apply(AugmentOp.EQUALIZE, 0, src, dst.asSlice(0, 3 * 8 * 6 - 1), 0, null, false));
            assertThrows(
                    IllegalArgumentException.class, () -> ops.apply(AugmentOp.SHARPNESS, 0, src, src, 0, null, false));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> ops.apply(AugmentOp.ROTATE, 10, src, dst, 0, new double[] {1, 2}, false));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> ops.apply(AugmentOp.BRIGHTNESS, -1.5, src, dst, 0, null, false));
        }
    }
}
