package io.stoke.loader.augment;

import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.transform.CounterRandom;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Each policy's draws against torchvision's own: 100,000 images' ops (which ops, in order, each
 * with its magnitude and sign) from Stoke's counter-based stream and from torchvision's
 * {@code forward} on torch's generator (its op function replaced by a recorder), compared by a
 * chi-square test on the joint outcome per image; p must stay above 0.001. Both sides draw fixed
 * sequences, so the verdict never changes between runs.
 */
class PolicyDistributionTest {
    private static final int DRAWS = 100_000;
    private static final int SIDE = 24;

    private static final String RECORD = TorchvisionAugment.POLICIES + """
            from PIL import Image
            spelling, v2, n, seed = sys.argv[1], sys.argv[2] == '1', int(sys.argv[3]), int(sys.argv[4])
            side = int(sys.argv[5])
            p = policy(spelling, v2)
            tables = space(p, v2, side, side)
            # The tables do not draw: computed once, so that 100,000 forwards take seconds.
            if v2:
                bins = p.num_magnitude_bins if hasattr(p, 'num_magnitude_bins') else 10
                cached = {k: (fn(bins, side, side), s) for k, (fn, s) in p._AUGMENTATION_SPACE.items()}
                p._AUGMENTATION_SPACE = {k: ((lambda b, h, w, m=m: m), s) for k, (m, s) in cached.items()}
            else:
                s = p._augmentation_space(p.num_magnitude_bins if hasattr(p, 'num_magnitude_bins') else 10, (side, side)) \\
                    if not isinstance(p, T.TrivialAugmentWide) else p._augmentation_space(p.num_magnitude_bins)
                p._augmentation_space = lambda *a, s=s: s
            drawn = []
            def record(img, op, magnitude, *rest, **kw):
                m = tables[op][0]
                b = -1 if m is None else m.index(abs(magnitude))
                drawn.append(op + ':' + str(b) + ':' + ('-' if math.copysign(1.0, magnitude) < 0 else '+'))
                return img
            if v2:
                p._apply_image_or_video_transform = lambda img, op, magnitude, interpolation, fill: record(img, op, magnitude)
            else:
                import torchvision.transforms.autoaugment as A
                A._apply_op = record
            torch.manual_seed(seed)
            img = Image.new('RGB', (side, side))
            with open(sys.argv[6], 'w') as f:
                for _ in range(n):
                    drawn.clear()
                    p(img)
                    f.write(' '.join(drawn) + '\\n')
            """;

    private static Map<String, Integer> torchvision(String spelling, boolean v2) throws Exception {
        Path out = Files.createTempFile("stoke-draws", ".txt");
        try {
            TorchvisionAugment.run(RECORD, spelling, v2 ? "1" : "0", "" + DRAWS, "7", "" + SIDE, out.toString());
            return count(Files.readAllLines(out));
        } finally {
            Files.deleteIfExists(out);
        }
    }

    private static Map<String, Integer> count(List<String> lines) {
        Map<String, Integer> counts = new HashMap<>();
        for (String l : lines) {
            counts.merge(l.trim(), 1, Integer::sum);
        }
        return counts;
    }

    /** Stoke's outcomes, in the recorder's words: {@code Op:firstBinWithThatValue:sign} per op, space-separated. */
    static Map<String, Integer> stoke(AugmentPolicy policy, int n) {
        PolicyDraws draws = new PolicyDraws(policy, SIDE, SIDE);
        Drawn drawn = draws.newDrawn();
        CounterRandom random = new CounterRandom();
        Map<String, Integer> counts = new HashMap<>();
        StringBuilder s = new StringBuilder();
        for (int k = 0; k < n; k++) {
            random.reset(11, 0, k);
            draws.draw(random, drawn);
            s.setLength(0);
            for (int i = 0; i < drawn.count(); i++) {
                AugmentOp op = drawn.op(i);
                int bin = -1;
                if (drawn.bin(i) >= 0) {
                    float[] table = draws.table(op);
                    float v = table[drawn.bin(i)];
                    bin = 0;
                    while (table[bin] != v) {
                        bin++;
                    }
                }
                s.append(i > 0 ? " " : "")
                        .append(op.torchvisionName())
                        .append(':')
                        .append(bin)
                        .append(':')
                        .append(drawn.negative(i) ? '-' : '+');
            }
            counts.merge(s.toString(), 1, Integer::sum);
        }
        return counts;
    }

    @ParameterizedTest(name = "{0} v2={1}")
    @CsvSource({
        "ta_wide:31, false",
        "ta_wide:31, true",
        "ra:2:9:31, false",
        "ra:2:9:31, true",
        "aa:imagenet, false",
        "aa:imagenet, true",
        "aa:cifar10, false",
        "aa:svhn, false",
    })
    void drawsFollowTorchvisionsDistribution(String spelling, boolean v2) throws Exception {
        String versions = TorchvisionAugment.requireTorchvision();
        if (v2 && !TorchvisionAugment.hasV2()) {
            System.err.println("[stoke] SKIPPING v2 draws: torchvision " + versions + " has no transforms.v2");
            Assumptions.abort("SKIPPED: torchvision without transforms.v2 (" + versions + ")");
        }
        Map<String, Integer> theirs = torchvision(spelling, v2);
        Map<String, Integer> ours = stoke(AugmentPolicy.parse(spelling + (v2 ? ",v2" : "")), DRAWS);
        assertEquals(DRAWS, theirs.values().stream().mapToInt(Integer::intValue).sum());
        List<String> missing = theirs.entrySet().stream()
                .filter(e -> e.getValue() > 50 && !ours.containsKey(e.getKey()))
                .map(Map.Entry::getKey)
                .sorted()
                .toList();
        assertEquals(List.of(), missing, "outcomes torchvision draws often that Stoke never does");
        ChiSquare.Result r = ChiSquare.twoSample(ours, theirs);
        assertTrue(
                r.p() > 0.001,
                spelling + (v2 ? " (v2)" : "") + ": chi-square " + r.statistic() + " on " + r.degrees()
                        + " degrees of freedom, p = " + r.p() + " against torchvision " + versions);
    }

    /** The test's own arithmetic: the p-values of known chi-square quantiles. */
    @Test
    void chiSquarePValuesAreRight() {
        assertEquals(0.05, ChiSquare.upperGamma(10 / 2.0, 18.307 / 2.0), 1e-4);
        assertEquals(0.001, ChiSquare.upperGamma(1 / 2.0, 10.828 / 2.0), 1e-5);
        assertEquals(0.5, ChiSquare.upperGamma(100 / 2.0, 99.334 / 2.0), 1e-3);
    }
}
