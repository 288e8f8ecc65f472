package io.stoke.loader.augment;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.transform.CounterRandom;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * AugMix's draws against torchvision's own: 100,000 images from Stoke's counter-based stream and
 * from torchvision's {@code AugMix.forward} on torch's generator (its op function replaced by a
 * recorder, its {@code _sample_dirichlet} wrapped to record the weights). The chains' depths (per
 * image, jointly), the ops with their bins and signs (per step, and per position in the chain) are
 * compared by chi-square; the weights' marginals ({@code m[0]}, the first chain's Dirichlet weight
 * and its weight in the mix) by a two-sample Kolmogorov-Smirnov test; every p must stay above
 * 0.001. Both sides draw fixed sequences, so the verdict never changes between runs.
 */
class AugMixDistributionTest {
    private static final int DRAWS = 100_000;
    private static final int SIDE = 24;

    /** One line per image: {@code m0 m1 | w0 w1 ... | d0 d1 ... | Op:bin:sign ...}. */
    private static final String RECORD = """
            import sys, math
            import torch
            import torchvision.transforms as T
            severity, width, depth, alpha = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
            all_ops, v2, n, side = sys.argv[5] == '1', sys.argv[6] == '1', int(sys.argv[7]), int(sys.argv[8])
            if v2:
                import torchvision.transforms.v2 as V
                p = V.AugMix(severity, width, depth, alpha, all_ops)
                space = p._AUGMENTATION_SPACE if all_ops else p._PARTIAL_AUGMENTATION_SPACE
                tables = {k: (fn(10, side, side), s) for k, (fn, s) in space.items()}
                cached = {k: ((lambda b, h, w, m=m: m), s) for k, (m, s) in tables.items()}
                if all_ops:
                    p._AUGMENTATION_SPACE = cached
                else:
                    p._PARTIAL_AUGMENTATION_SPACE = cached
                tables = {k: (None if m is None else [float(x) for x in m]) for k, (m, s) in tables.items()}
            else:
                p = T.AugMix(severity, width, depth, alpha, all_ops)
                s = p._augmentation_space(10, (side, side))
                p._augmentation_space = lambda *a, s=s: s
                tables = {k: (None if m.ndim == 0 else [float(x) for x in m]) for k, (m, sg) in s.items()}
            drawn, dirichlet, state = [], [], {}
            def record(img, op, magnitude, *rest, **kw):
                if not drawn:
                    state['batch'] = img
                if img is state['batch']:
                    drawn.append([])
                m = tables[op]
                b = -1 if m is None else m.index(abs(magnitude))
                drawn[-1].append(op + ':' + str(b) + ':' + ('-' if math.copysign(1.0, magnitude) < 0 else '+'))
                return img.clone()
            if v2:
                p._apply_image_or_video_transform = lambda img, op, magnitude, interpolation, fill: record(img, op, magnitude)
            else:
                import torchvision.transforms.autoaugment as A
                A._apply_op = record
            sample = p._sample_dirichlet
            def recorded(params):
                r = sample(params)
                dirichlet.append(' '.join(repr(float(x)) for x in r[0]))
                return r
            p._sample_dirichlet = recorded
            torch.manual_seed(int(sys.argv[9]))
            img = torch.zeros(3, side, side, dtype=torch.uint8)  # draws as a PIL image's do, without the conversions
            with open(sys.argv[10], 'w') as f:
                for _ in range(n):
                    drawn.clear()
                    dirichlet.clear()
                    p(img)
                    f.write(dirichlet[0] + ' | ' + dirichlet[1] + ' | ' + ' '.join(str(len(c)) for c in drawn) + ' | '
                            + ' '.join(' '.join(c) for c in drawn) + '\\n')
            """;

    /** Both sides' outcomes, by the same names. */
    private static final class Sample {
        final Map<String, Integer> depths = new HashMap<>();
        final Map<String, Integer> steps = new HashMap<>();
        final Map<String, Integer> positions = new HashMap<>();
        final double[] original = new double[DRAWS];
        final double[] firstMixing = new double[DRAWS];
        final double[] firstWeight = new double[DRAWS];
    }

    private static Sample torchvision(AugmentPolicy policy) throws Exception {
        Path out = Files.createTempFile("stoke-augmix", ".txt");
        try {
            List<String> args = new java.util.ArrayList<>(TorchvisionAugment.augMixArguments(policy));
            args.addAll(List.of("" + DRAWS, "" + SIDE, "7", out.toString()));
            TorchvisionAugment.run(RECORD, args.toArray(String[]::new));
            List<String> lines = Files.readAllLines(out);
            assertEquals(DRAWS, lines.size());
            Sample sample = new Sample();
            for (int k = 0; k < DRAWS; k++) {
                String[] part = lines.get(k).split(" \\| ", -1);
                String[] m = part[0].trim().split(" ");
                String[] w = part[1].trim().split(" ");
                sample.original[k] = Float.parseFloat(m[0]);
                sample.firstMixing[k] = Float.parseFloat(w[0]);
                sample.firstWeight[k] = Float.parseFloat(w[0]) * Float.parseFloat(m[1]);
                sample.depths.merge(part[2].trim(), 1, Integer::sum);
                String[] depths = part[2].trim().split(" ");
                String[] ops = part[3].trim().split(" ");
                int at = 0;
                for (String d : depths) {
                    for (int i = 0; i < Integer.parseInt(d); i++) {
                        sample.steps.merge(ops[at], 1, Integer::sum);
                        sample.positions.merge(i + ":" + ops[at].substring(0, ops[at].indexOf(':')), 1, Integer::sum);
                        at++;
                    }
                }
                assertEquals(ops.length, at, "ops recorded against the chains' depths: " + lines.get(k));
            }
            return sample;
        } finally {
            Files.deleteIfExists(out);
        }
    }

    static Sample stoke(AugmentPolicy policy) {
        AugMixDraws draws = new AugMixDraws(policy, SIDE, SIDE);
        AugMixDrawn drawn = draws.newDrawn();
        CounterRandom random = new CounterRandom();
        Sample sample = new Sample();
        StringBuilder depths = new StringBuilder();
        for (int k = 0; k < DRAWS; k++) {
            random.reset(11, 0, k);
            draws.draw(random, drawn);
            sample.original[k] = drawn.original();
            sample.firstMixing[k] = drawn.mixing(0);
            sample.firstWeight[k] = drawn.weight(0);
            depths.setLength(0);
            int at = 0;
            for (int c = 0; c < drawn.chains(); c++) {
                depths.append(c > 0 ? " " : "").append(drawn.depth(c));
                for (int i = 0; i < drawn.depth(c); i++, at++) {
                    AugmentOp op = drawn.op(at);
                    int bin = -1;
                    if (drawn.bin(at) >= 0) {
                        float[] table = draws.table(op);
                        float v = table[drawn.bin(at)];
                        bin = 0;
                        while (table[bin] != v) {
                            bin++;
                        }
                    }
                    String name = op.torchvisionName();
                    sample.steps.merge(name + ':' + bin + ':' + (drawn.negative(at) ? '-' : '+'), 1, Integer::sum);
                    sample.positions.merge(i + ":" + name, 1, Integer::sum);
                }
            }
            assertEquals(drawn.count(), at);
            sample.depths.merge(depths.toString(), 1, Integer::sum);
        }
        return sample;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {"augmix", "augmix,v2", "augmix:10:2:2:0.5,all_ops=false", "augmix:1:4:-1:3.0,v2,all_ops=false"})
    void drawsFollowTorchvisionsDistribution(String spelling) throws Exception {
        String versions = TorchvisionAugment.requireTorchvision();
        AugmentPolicy policy = AugmentPolicy.parse(spelling);
        if (policy.v2() && !TorchvisionAugment.hasV2()) {
            System.err.println("[stoke] SKIPPING v2 draws: torchvision " + versions + " has no transforms.v2");
            Assumptions.abort("SKIPPED: torchvision without transforms.v2 (" + versions + ")");
        }
        Sample theirs = torchvision(policy);
        Sample ours = stoke(policy);
        String against = spelling + " against torchvision " + versions;
        chiSquare("depths", ours.depths, theirs.depths, against);
        chiSquare("op:bin:sign per step", ours.steps, theirs.steps, against);
        chiSquare("op per position in the chain", ours.positions, theirs.positions, against);
        ks("m[0]", ours.original, theirs.original, against);
        ks("the first chain's Dirichlet weight", ours.firstMixing, theirs.firstMixing, against);
        ks("the first chain's weight in the mix", ours.firstWeight, theirs.firstWeight, against);
    }

    private static void chiSquare(String what, Map<String, Integer> ours, Map<String, Integer> theirs, String against) {
        List<String> missing = theirs.entrySet().stream()
                .filter(e -> e.getValue() > 50 && !ours.containsKey(e.getKey()))
                .map(Map.Entry::getKey)
                .sorted()
                .toList();
        assertEquals(List.of(), missing, what + ": outcomes torchvision draws often that Stoke never does");
        ChiSquare.Result r = ChiSquare.twoSample(ours, theirs);
        assertTrue(
                r.p() > 0.001,
                what + ": chi-square " + r.statistic() + " on " + r.degrees() + " degrees of freedom, p = " + r.p()
                        + ", " + against);
    }

    private static void ks(String what, double[] ours, double[] theirs, String against) {
        double p = kolmogorovSmirnovP(ours, theirs);
        assertTrue(p > 0.001, what + ": two-sample Kolmogorov-Smirnov p = " + p + ", " + against);
    }

    /** The two-sample Kolmogorov-Smirnov test's p-value, from the asymptotic Kolmogorov distribution. */
    static double kolmogorovSmirnovP(double[] a, double[] b) {
        double[] x = a.clone();
        double[] y = b.clone();
        Arrays.sort(x);
        Arrays.sort(y);
        int i = 0;
        int j = 0;
        double d = 0;
        while (i < x.length && j < y.length) {
            double v = Math.min(x[i], y[j]);
            while (i < x.length && x[i] == v) {
                i++;
            }
            while (j < y.length && y[j] == v) {
                j++;
            }
            d = Math.max(d, Math.abs((double) i / x.length - (double) j / y.length));
        }
        double n = (double) x.length * y.length / (x.length + y.length);
        double lambda = (Math.sqrt(n) + 0.12 + 0.11 / Math.sqrt(n)) * d;
        return kolmogorov(lambda);
    }

    /** Q(lambda) = 2 * sum (-1)^(k-1) exp(-2 k^2 lambda^2). */
    static double kolmogorov(double lambda) {
        if (lambda < 0.2) {
            return 1.0;
        }
        double sum = 0;
        for (int k = 1; k <= 100; k++) {
            sum += (k % 2 == 1 ? 2 : -2) * Math.exp(-2.0 * k * k * lambda * lambda);
        }
        return Math.max(0, Math.min(1, sum));
    }

    /** The test's own arithmetic: known quantiles of the Kolmogorov distribution. */
    @Test
    void kolmogorovPValuesAreRight() {
        assertEquals(0.05, kolmogorov(1.3581), 1e-4);
        assertEquals(0.001, kolmogorov(1.9495), 1e-5);
        assertEquals(0.2, kolmogorov(1.0727), 1e-4);
    }
}
