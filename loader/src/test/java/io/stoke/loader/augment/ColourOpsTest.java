package io.stoke.loader.augment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.TestImages;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Each colour op of each policy, at each magnitude bin and sign, against torchvision's own
 * {@code _apply_op} (v1) or {@code _apply_image_or_video_transform} (v2) on the same PIL image,
 * the magnitude read from torchvision's own table: byte for byte, on whichever Pillow the test's
 * Python has (run it with {@code STOKE_TEST_PYTHON} naming another). Stoke's magnitude tables are
 * checked against torch's too.
 */
class ColourOpsTest {
    /** Noise, a narrow-range gradient (AutoContrast and Equalize then move every value), a flat image, tiny ones. */
    private static byte[] image(String kind, int w, int h) {
        byte[] rgb = new byte[3 * w * h];
        switch (kind) {
            case "noise" -> {
                return TestImages.rgb(w, h, 5);
            }
            case "gradient" -> {
                SplittableRandom r = new SplittableRandom(9);
                for (int y = 0; y < h; y++) {
                    for (int x = 0; x < w; x++) {
                        int i = 3 * (y * w + x);
                        rgb[i] = (byte) (60 + 100 * x / w + r.nextInt(4));
                        rgb[i + 1] = (byte) (90 + 70 * y / h);
                        rgb[i + 2] = (byte) (120 + 20 * (x + y) / (w + h) + r.nextInt(3));
                    }
                }
            }
            default -> Arrays.fill(rgb, (byte) 77);
        }
        return rgb;
    }

    @ParameterizedTest(name = "{0} v2={1} on {2} {3}x{4}")
    @CsvSource({
        "ta_wide:31, false, noise, 23, 17",
        "ta_wide:31, false, gradient, 31, 20",
        "ta_wide:31, true, gradient, 31, 20",
        "ta_wide:31, false, noise, 2, 3",
        "ra:2:9:31, false, gradient, 29, 19",
        "ra:2:9:31, true, noise, 24, 24",
        "aa:imagenet, false, noise, 24, 24",
        "aa:imagenet, true, gradient, 18, 26",
        "ta_wide:7, false, flat, 8, 5",
    })
    void everyColourOpAtEveryBinAndSignIsTorchvisionsByteForByte(String spelling, boolean v2, String kind, int w, int h)
            throws Exception {
        TorchvisionAugment.requireAugmentLibrary();
        String versions = TorchvisionAugment.requireTorchvision();
        if (v2 && !TorchvisionAugment.hasV2()) {
            System.err.println("[stoke] SKIPPING v2 check: torchvision " + versions + " has no transforms.v2");
            Assumptions.abort("SKIPPED: torchvision without transforms.v2 (" + versions + ")");
        }
        AugmentPolicy policy = AugmentPolicy.parse(spelling + (v2 ? ",v2" : ""));
        PolicyDraws draws = new PolicyDraws(policy, w, h);
        byte[] rgb = image(kind, w, h);
        List<String> requests = new ArrayList<>();
        for (AugmentOp op : policy.ops()) {
            if (op.geometric()) {
                continue;
            }
            float[] table = draws.table(op);
            for (int b = 0; b < (table == null ? 1 : table.length); b++) {
                for (int neg = 0; neg < (draws.signed(op) ? 2 : 1); neg++) {
                    requests.add(op.torchvisionName() + " " + (table == null ? -1 : b) + " " + neg);
                }
            }
        }
        List<String> tables = new ArrayList<>();
        byte[] expected = TorchvisionAugment.apply(spelling, v2, rgb, w, h, requests, tables);
        checkTables(draws, tables, versions);
        int bytes = 3 * w * h;
        assertEquals((long) requests.size() * bytes, expected.length);
        try (AugmentStage stage = new AugmentStage(policy, w, h)) {
            for (int k = 0; k < requests.size(); k++) {
                String[] r = requests.get(k).split(" ");
                AugmentOp op = AugmentOp.ofTorchvisionName(r[0]);
                int bin = Integer.parseInt(r[1]);
                double magnitude = bin < 0 ? 0.0 : draws.table(op)[bin];
                if (r[2].equals("1")) {
                    magnitude = -magnitude;
                }
                MemorySegment.copy(rgb, 0, stage.input(), JAVA_BYTE, 0, bytes);
                byte[] got = runOne(stage, op, magnitude).asSlice(0, bytes).toArray(JAVA_BYTE);
                byte[] want = Arrays.copyOfRange(expected, k * bytes, (k + 1) * bytes);
                if (!Arrays.equals(want, got)) {
                    int i = Arrays.mismatch(want, got);
                    fail(requests.get(k) + " (magnitude " + magnitude + ") differs from torchvision (" + versions
                            + ") at byte " + i + ": " + (got[i] & 0xFF) + " instead of " + (want[i] & 0xFF));
                }
            }
        }
    }

    /**
     * Stoke's tables against torch's: equal float32 values on torch 2 (its linspace is a fused
     * multiply-add per value on x86-64); torch 1.13's vectorised linspace rounds some values a unit
     * in the last place apart, which is allowed there and said.
     */
    private static void checkTables(PolicyDraws draws, List<String> tables, String versions) {
        boolean torch1 = versions.startsWith("1.");
        int ulpApart = 0;
        for (String line : tables) {
            String[] f = line.split(" ");
            AugmentOp op = AugmentOp.ofTorchvisionName(f[0]);
            float[] ours = draws.table(op);
            if (f[1].equals("-")) {
                assertNull(ours, op + " has no magnitudes in torchvision");
                continue;
            }
            assertNotNull(ours, op + " has magnitudes in torchvision");
            assertEquals(f.length - 1, ours.length, op + ": bins");
            for (int i = 0; i < ours.length; i++) {
                float theirs = (float) Double.parseDouble(f[i + 1]);
                if (theirs != ours[i]) {
                    assertTrue(
                            torch1 && Math.abs(Math.ulp(theirs)) >= Math.abs(theirs - ours[i]),
                            op + " bin " + i + ": " + ours[i] + " where torch (" + versions + ") has " + theirs);
                    ulpApart++;
                }
            }
        }
        if (ulpApart > 0) {
            System.err.println("[stoke] torch " + versions + ": " + ulpApart
                    + " magnitude table values one unit in the last place from torch 2's (its vectorised linspace)");
        }
    }

    /** Runs one op with torchvision's {@code magnitude} on the stage's input, as a policy's draw would. */
    private static MemorySegment runOne(AugmentStage stage, AugmentOp op, double magnitude) {
        Drawn one = new Drawn(1);
        one.add(op, -1, false, magnitude);
        return stage.run(one);
    }
}
