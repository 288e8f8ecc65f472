package io.stoke.loader.augment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.transform.CounterRandom;
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
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code ColorJitter} (and {@code RandomApply} around it, {@code RandomGrayscale} after it) against
 * torchvision's own: its four ops and the grey on the same PIL image byte for byte
 * (the hue of 360,000 RGB values at 49 factors, the three blends at float32 factors such as its draws give),
 * its draws (the order of the ops and each factor) against {@code get_params} over 100,000 images,
 * and its spelling.
 */
class ColorJitterTest {
    private static final int DRAWS = 100_000;

    /** Every 47th of the 2^24 RGB values, in order, then round again: 360,000 distinct values on 600 x 600. */
    private static byte[] manyColours(int w, int h) {
        byte[] rgb = new byte[3 * w * h];
        long v = 0;
        for (int i = 0; i < w * h; i++, v = (v + 47) % (1 << 24)) {
            rgb[3 * i] = (byte) (v >> 16);
            rgb[3 * i + 1] = (byte) (v >> 8);
            rgb[3 * i + 2] = (byte) v;
        }
        return rgb;
    }

    private static final String OPS = """
            import sys, numpy as np, torch
            from PIL import Image
            from torchvision.transforms import functional as F
            w, h = int(sys.argv[1]), int(sys.argv[2])
            img = Image.frombytes('RGB', (w, h), open(sys.argv[3], 'rb').read())
            fns = {'Brightness': F.adjust_brightness, 'Contrast': F.adjust_contrast, 'Color': F.adjust_saturation,
                   'Hue': F.adjust_hue, 'Grayscale': lambda im, n: F.rgb_to_grayscale(im, int(n))}
            with open(sys.argv[5], 'wb') as out:
                for line in open(sys.argv[4]):
                    op, factor = line.split()
                    out.write(fns[op](img, float(factor)).tobytes())
            """;

    private static byte[] torchvision(byte[] rgb, int w, int h, List<String> requests) throws Exception {
        return TorchvisionAugment.runOnImage(OPS, rgb, requests, "" + w, "" + h);
    }

    @Test
    void everyOpAtManyFactorsIsTorchvisionsByteForByte() throws Exception {
        TorchvisionAugment.requireAugmentLibrary();
        String versions = TorchvisionAugment.requireTorchvision();
        int w = 600;
        int h = 600;
        byte[] rgb = manyColours(w, h);
        List<String> requests = new ArrayList<>();
        for (int k = 0; k <= 40; k++) { // -0.5 to 0.5 by 0.025, and factors whose shift rounds either way
            requests.add("Hue " + (k - 20) / 40.0);
        }
        for (double f : new double[] {1e-4, -1e-4, 0.1, -0.1, 0.0039215686, -0.0039215686, 0.4999, -0.4999}) {
            requests.add("Hue " + f);
        }
        requests.add("Grayscale 3");
        for (float f : new float[] {0.6f, 0.6137429f, 0.97f, 1.0f, 1.2345678f, 1.3999999f, 0.0f, 1.9f}) {
            for (String op : List.of("Brightness", "Contrast", "Color")) {
                requests.add(op + " " + (double) f); // a float32, as torch's uniform_ draws it, as a double
            }
        }
        byte[] expected = torchvision(rgb, w, h, requests);
        int bytes = rgb.length;
        assertEquals((long) requests.size() * bytes, expected.length);
        ColourOps colour = new ColourOps();
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment image = arena.allocate(bytes);
            for (int k = 0; k < requests.size(); k++) {
                String[] r = requests.get(k).split(" ");
                double factor = Double.parseDouble(r[1]);
                MemorySegment.copy(rgb, 0, image, JAVA_BYTE, 0, bytes);
                switch (r[0]) {
                    case "Hue" -> colour.hue(image, image, w, h, factor);
                    case "Grayscale" -> colour.grayscale(image, image, w, h);
                    case "Brightness" -> colour.brightness(image, image, w, h, factor);
                    case "Contrast" -> colour.contrast(image, image, w, h, factor);
                    default -> colour.color(image, image, w, h, factor);
                }
                byte[] got = image.toArray(JAVA_BYTE);
                byte[] want = Arrays.copyOfRange(expected, k * bytes, (k + 1) * bytes);
                if (!Arrays.equals(want, got)) {
                    int i = Arrays.mismatch(want, got);
                    fail(requests.get(k) + " differs from torchvision (" + versions + ") at byte " + i + " (pixel "
                            + (i / 3) + " of RGB " + (rgb[i / 3 * 3] & 0xFF) + "," + (rgb[i / 3 * 3 + 1] & 0xFF) + ","
                            + (rgb[i / 3 * 3 + 2] & 0xFF) + "): " + (got[i] & 0xFF) + " instead of "
                            + (want[i] & 0xFF));
                }
            }
        }
    }

    @Test
    void theOpsRunInTheDrawnOrderWithTheDrawnFactors() {
        TorchvisionAugment.requireAugmentLibrary();
        AugmentPolicy policy = AugmentPolicy.parse("jitter:0.6/1.4:0.6/1.4:0.6/1.4:-0.1/0.1");
        int w = 40;
        int h = 30;
        byte[] rgb = manyColours(w, h);
        PolicyDraws draws = new PolicyDraws(policy, w, h);
        Drawn drawn = draws.newDrawn();
        CounterRandom random = new CounterRandom();
        ColourOps colour = new ColourOps();
        try (AugmentStage stage = new AugmentStage(policy, w, h);
                java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment by = arena.allocate(rgb.length);
            for (int k = 0; k < 50; k++) {
                random.reset(3, 1, k);
                draws.draw(random, drawn);
                assertEquals(4, drawn.count());
                MemorySegment.copy(rgb, 0, stage.input(), JAVA_BYTE, 0, rgb.length);
                byte[] got = stage.run(drawn).asSlice(0, rgb.length).toArray(JAVA_BYTE);
                // The same ops, one by one, as torchvision's forward runs them: brightness(img, f) ...
                MemorySegment.copy(rgb, 0, by, JAVA_BYTE, 0, rgb.length);
                for (int i = 0; i < drawn.count(); i++) {
                    AugmentOp op = drawn.op(i);
                    double m = drawn.magnitude(i);
                    switch (op) {
                        case BRIGHTNESS -> colour.brightness(by, by, w, h, 1.0 + m);
                        case CONTRAST -> colour.contrast(by, by, w, h, 1.0 + m);
                        case COLOR -> colour.color(by, by, w, h, 1.0 + m);
                        case HUE -> colour.hue(by, by, w, h, m);
                        default -> fail("ColorJitter drew " + op);
                    }
                    double factor = op == AugmentOp.HUE ? m : 1.0 + m;
                    assertEquals((double) (float) factor, factor, op + "'s factor is a float32, as torch's");
                    double[] range = op == AugmentOp.HUE ? new double[] {-0.1, 0.1} : new double[] {0.6, 1.4};
                    assertTrue(factor >= (float) range[0] && factor <= (float) range[1], op + " factor " + factor);
                }
                assertArrayEquals(by.toArray(JAVA_BYTE), got, "image " + k);
            }
        }
    }

    /** torchvision's draws: each image's order of the ops that are on, and each factor's tenth of its range. */
    private static final String GET_PARAMS = """
            import sys, torch
            from torchvision import transforms as T
            # 0 is torchvision's way to say an op is off (it holds None then)
            b, c, s, hue = (0 if a == '-' else tuple(float(v) for v in a.split('/')) for a in sys.argv[1:5])
            v2 = sys.argv[5] == '1'
            if v2:
                from torchvision.transforms import v2 as V
                t = V.ColorJitter(b, c, s, hue)
                ranges = (t.brightness, t.contrast, t.saturation, t.hue)
            else:
                t = T.ColorJitter(b, c, s, hue)
                ranges = (t.brightness, t.contrast, t.saturation, t.hue)
            torch.manual_seed(5)
            names = ('Brightness', 'Contrast', 'Color', 'Hue')
            with open(sys.argv[6], 'w') as f:
                for _ in range(int(sys.argv[7])):
                    if v2:
                        p = t.make_params([]) if hasattr(t, 'make_params') else t._get_params([])
                        order, factors = p['fn_idx'], (p['brightness_factor'], p['contrast_factor'],
                                                        p['saturation_factor'], p['hue_factor'])
                    else:
                        order, *factors = T.ColorJitter.get_params(*ranges)
                    words = []
                    for fn in order.tolist():
                        if factors[fn] is not None:
                            lo, hi = ranges[fn]
                            words.append(names[fn] + ':' + str(min(9, int((factors[fn] - lo) / (hi - lo) * 10))))
                    f.write(' '.join(words) + '\\n')
            """;

    @ParameterizedTest(name = "v2={0}")
    @ValueSource(booleans = {false, true})
    void drawsFollowTorchvisionsDistribution(boolean v2) throws Exception {
        String versions = TorchvisionAugment.requireTorchvision();
        if (v2 && !TorchvisionAugment.hasV2()) {
            System.err.println("[stoke] SKIPPING v2 draws: torchvision " + versions + " has no transforms.v2");
            Assumptions.abort("SKIPPED: torchvision without transforms.v2 (" + versions + ")");
        }
        String[] ranges = {"0.6/1.4", "-", "0.2/1.8", "-0.1/0.1"};
        Path out = Files.createTempFile("stoke-jitter-draws", ".txt");
        Map<String, Integer> theirs = new HashMap<>();
        try {
            TorchvisionAugment.run(
                    GET_PARAMS, ranges[0], ranges[1], ranges[2], ranges[3], v2 ? "1" : "0", out.toString(), "" + DRAWS);
            for (String l : Files.readAllLines(out)) {
                theirs.merge(l.trim(), 1, Integer::sum);
            }
        } finally {
            Files.deleteIfExists(out);
        }
        assertEquals(DRAWS, theirs.values().stream().mapToInt(Integer::intValue).sum());
        AugmentPolicy policy = AugmentPolicy.parse("jitter:" + String.join(":", ranges));
        PolicyDraws draws = new PolicyDraws(policy, 8, 8);
        Drawn drawn = draws.newDrawn();
        CounterRandom random = new CounterRandom();
        Map<String, Integer> orders = new HashMap<>();
        Map<String, Integer> theirOrders = new HashMap<>();
        Map<String, Integer> bins = new HashMap<>();
        Map<String, Integer> theirBins = new HashMap<>();
        for (int k = 0; k < DRAWS; k++) {
            random.reset(11, 0, k);
            draws.draw(random, drawn);
            StringBuilder order = new StringBuilder();
            for (int i = 0; i < drawn.count(); i++) {
                AugmentOp op = drawn.op(i);
                double factor = op == AugmentOp.HUE ? drawn.magnitude(i) : 1.0 + drawn.magnitude(i);
                double[] r = policy.jitter()
                        .range(List.of(AugmentOp.BRIGHTNESS, AugmentOp.CONTRAST, AugmentOp.COLOR, AugmentOp.HUE)
                                .indexOf(op));
                int tenth = Math.min(9, (int) ((factor - r[0]) / (r[1] - r[0]) * 10));
                order.append(i > 0 ? " " : "").append(op.torchvisionName());
                bins.merge(op.torchvisionName() + ":" + tenth, 1, Integer::sum);
            }
            orders.merge(order.toString(), 1, Integer::sum);
        }
        theirs.forEach((line, n) -> {
            StringBuilder order = new StringBuilder();
            for (String word : line.split(" ")) {
                String[] w = word.split(":");
                order.append(order.length() > 0 ? " " : "").append(w[0]);
                theirBins.merge(word, n, Integer::sum);
            }
            theirOrders.merge(order.toString(), n, Integer::sum);
        });
        assertEquals(6, theirOrders.size(), "three ops on: six orders, " + theirOrders);
        assertEquals(theirOrders.keySet(), orders.keySet());
        assertEquals(theirBins.keySet(), bins.keySet());
        String against = "ColorJitter against torchvision " + versions + (v2 ? " (v2)" : "");
        chiSquare("the order of the ops", orders, theirOrders, against);
        chiSquare("each factor's tenth of its range", bins, theirBins, against);
    }

    private static void chiSquare(String what, Map<String, Integer> ours, Map<String, Integer> theirs, String against) {
        ChiSquare.Result r = ChiSquare.twoSample(ours, theirs);
        assertTrue(
                r.p() > 0.001,
                what + ": chi-square " + r.statistic() + " on " + r.degrees() + " degrees of freedom, p = " + r.p()
                        + ", " + against);
    }

    /**
     * torchvision's own {@code RandomApply([ColorJitter], p)} then {@code RandomGrayscale(g)}, each
     * image's outcome recorded: the jitter's order of ops (its forward replaced by a recorder of
     * {@code get_params} / {@code make_params}) or nothing, then whether the grey ran.
     */
    private static final String APPLY_AND_GRAY = """
            import sys, torch
            from PIL import Image
            from torchvision import transforms as T
            v2 = sys.argv[1] == '1'
            p, g, n = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[5])
            M = T
            if v2:
                from torchvision.transforms import v2 as M
            names = ('Brightness', 'Contrast', 'Color', 'Hue')
            words = []
            def jitter(self, img):
                params = (self.make_params([]) if hasattr(self, 'make_params') else self._get_params([])) if v2 else None
                order = params['fn_idx'] if v2 else T.ColorJitter.get_params(self.brightness, self.contrast,
                                                                          self.saturation, self.hue)[0]
                on = (self.brightness, self.contrast, self.saturation, self.hue)
                words.extend(names[fn] for fn in order.tolist() if on[fn] is not None)
                return img
            def gray(*args, **kwargs):
                words.append('Grayscale')
                return args[1] if v2 else args[0]
            M.ColorJitter.forward = jitter
            if v2:
                # the kernel's caller: transform (torchvision 0.21 on) or _transform (before)
                name = 'transform' if 'transform' in vars(M.RandomGrayscale) else '_transform'
                setattr(M.RandomGrayscale, name, lambda self, inpt, params: gray(self, inpt))
            else:
                import torchvision.transforms.transforms as TT
                TT.F.rgb_to_grayscale = gray
            pipeline = M.Compose([M.RandomApply([M.ColorJitter(0.4, 0, 0.4, 0.1)], p=p), M.RandomGrayscale(p=g)])
            torch.manual_seed(9)
            img = Image.new('RGB', (4, 4))
            with open(sys.argv[4], 'w') as f:
                for _ in range(n):
                    words.clear()
                    pipeline(img)
                    f.write(' '.join(words) + '\\n')
            """;

    @ParameterizedTest(name = "v2={0}")
    @ValueSource(booleans = {false, true})
    void randomApplyAndRandomGrayscaleDrawAsTorchvisions(boolean v2) throws Exception {
        String versions = TorchvisionAugment.requireTorchvision();
        if (v2 && !TorchvisionAugment.hasV2()) {
            System.err.println("[stoke] SKIPPING v2 draws: torchvision " + versions + " has no transforms.v2");
            Assumptions.abort("SKIPPED: torchvision without transforms.v2 (" + versions + ")");
        }
        Path out = Files.createTempFile("stoke-jitter-gray", ".txt");
        Map<String, Integer> theirs = new HashMap<>();
        try {
            TorchvisionAugment.run(APPLY_AND_GRAY, v2 ? "1" : "0", "0.8", "0.2", out.toString(), "" + DRAWS);
            for (String l : Files.readAllLines(out)) {
                theirs.merge(l.trim(), 1, Integer::sum);
            }
        } finally {
            Files.deleteIfExists(out);
        }
        // torchvision's ranges for ColorJitter(0.4, 0, 0.4, 0.1): contrast off.
        AugmentPolicy policy = AugmentPolicy.parse("jitter:0.6/1.4:-:0.6/1.4:-0.1/0.1,p=0.8,gray=0.2");
        PolicyDraws draws = new PolicyDraws(policy, 8, 8);
        Drawn drawn = draws.newDrawn();
        CounterRandom random = new CounterRandom();
        Map<String, Integer> ours = new HashMap<>();
        StringBuilder s = new StringBuilder();
        for (int k = 0; k < DRAWS; k++) {
            random.reset(13, 2, k);
            draws.draw(random, drawn);
            s.setLength(0);
            for (int i = 0; i < drawn.count(); i++) {
                s.append(i > 0 ? " " : "").append(drawn.op(i).torchvisionName());
            }
            ours.merge(s.toString(), 1, Integer::sum);
        }
        assertEquals(14, theirs.size(), "6 orders or none, with the grey or without: " + theirs);
        assertEquals(theirs.keySet(), ours.keySet());
        chiSquare(
                "the jitter's order or none, then the grey or not",
                ours,
                theirs,
                "RandomApply(ColorJitter, 0.8) + RandomGrayscale(0.2) against torchvision " + versions
                        + (v2 ? " (v2)" : ""));
    }

    @Test
    void itIsSpelledAsTorchvisionHoldsItAndReadBackEqual() {
        AugmentPolicy p = AugmentPolicy.parse("jitter:0.6/1.4:-:0.6000000000000001/1.4:-0.1/0.1");
        assertEquals("jitter:0.6/1.4:-:0.6000000000000001/1.4:-0.1/0.1", p.toString());
        assertEquals(p, AugmentPolicy.parse(p.toString()));
        assertEquals(List.of(AugmentOp.BRIGHTNESS, AugmentOp.COLOR, AugmentOp.HUE), p.ops());
        assertEquals(5, p.maxOps());
        // torchvision makes a range that only holds the identity None: so does Stoke.
        assertEquals(
                "jitter:-:-:-:-", AugmentPolicy.parse("jitter:1/1:1/1:1/1:0/0").toString());
        assertTrue(AugmentPolicy.parse("jitter:1/1:-:-:0/0").ops().isEmpty());
        for (String bad : List.of(
                "jitter:0.6/1.4",
                "jitter:x:-:-:-",
                "jitter:1.4/0.6:-:-:-",
                "jitter:-1/1:-:-:-",
                "jitter:-:-:-:-0.6/0.1",
                "jitter:-:-:-:-,interpolation=bilinear")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AugmentPolicy.parse(bad));
            assertTrue(e.getMessage().startsWith("--augment " + bad), e.getMessage());
        }
        AugmentPolicy applied = AugmentPolicy.parse("jitter:0.6/1.4:-:-:-,p=0.8,gray=0.2");
        assertEquals("jitter:0.6/1.4:-:-:-,p=0.8,gray=0.2", applied.toString());
        assertEquals(applied, AugmentPolicy.parse(applied.toString()));
        assertEquals(List.of(AugmentOp.BRIGHTNESS, AugmentOp.GRAYSCALE), applied.ops());
        assertEquals(
                List.of(AugmentOp.GRAYSCALE),
                AugmentPolicy.parse("jitter:-:-:-:-,gray=1.0").ops());
        assertEquals(List.of(), AugmentPolicy.parse("jitter:0.6/1.4:-:-:-,p=0").ops());
        for (String bad : List.of("jitter:-:-:-:-,p=1.5", "jitter:-:-:-:-,gray=-0.1", "jitter:-:-:-:-,gray=x")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AugmentPolicy.parse(bad));
            assertTrue(e.getMessage().startsWith("--augment " + bad), e.getMessage());
        }
        // Hue and the grey are ColorJitter's and RandomGrayscale's alone: no auto-augment policy draws them.
        for (String s : List.of("ta_wide:31", "ra:2:9:31", "aa:imagenet", "augmix")) {
            assertFalse(AugmentPolicy.parse(s).ops().contains(AugmentOp.HUE), s);
            assertFalse(AugmentPolicy.parse(s).ops().contains(AugmentOp.GRAYSCALE), s);
        }
        List<AugmentOp> autoAugment = AugmentPolicy.parse("aa:svhn").ops();
        assertEquals(AugmentOp.INVERT, autoAugment.get(autoAugment.size() - 1));
    }
}
