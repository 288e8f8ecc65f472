package io.stoke.loader.augment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.*;

import io.stoke.loader.testing.TestImages;
import io.stoke.loader.transform.CounterRandom;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * AugMix's pixels against torchvision's own {@code AugMix.forward} on the same PIL image, driven
 * by Stoke's draws: its {@code _sample_dirichlet} returns Stoke's weights and {@code torch.randint}
 * (and v2's {@code torch.rand}, for the signs) Stoke's depths, ops, bins and signs, in the order
 * torchvision asks for them, so the chains, the float32 mix and the truncation are torchvision's
 * real code. Many samples per case, so that every op, depth and weight turns up; v1 and v2, on the
 * torchvision the test's Python has (run it with {@code STOKE_TEST_PYTHON} naming another).
 */
class AugMixStageTest {
    private static final int SAMPLES = 40;

    private static final String DRIVE = """
            import sys
            import torch
            import torchvision.transforms as T
            from PIL import Image
            severity, width, depth, alpha = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
            all_ops, v2, interpolation = sys.argv[5] == '1', sys.argv[6] == '1', sys.argv[7]
            fill = None if sys.argv[8] == '-' else [int(v) for v in sys.argv[8].split(':')]
            w, h = int(sys.argv[9]), int(sys.argv[10])
            img = Image.frombytes('RGB', (w, h), open(sys.argv[11], 'rb').read())
            mode = T.InterpolationMode.NEAREST if interpolation == 'nearest' else T.InterpolationMode.BILINEAR
            if v2:
                import torchvision.transforms.v2 as V
                p = V.AugMix(severity, width, depth, alpha, all_ops, interpolation=mode, fill=fill)
            else:
                p = T.AugMix(severity, width, depth, alpha, all_ops, interpolation=mode, fill=fill)
            queue, dirichlet = [], []
            def randint(*args, **kwargs):
                kind, value = queue.pop(0)
                assert kind == 'r', ('torchvision drew an integer where Stoke drew', kind)
                high = kwargs['high'] if 'high' in kwargs else args[1] if isinstance(args[1], int) else args[0]
                assert 0 <= value < high, (value, args, kwargs)
                size = kwargs.get('size', args[-1] if args and isinstance(args[-1], tuple) else ())
                return torch.full(size, value, dtype=kwargs.get('dtype', torch.long))
            def rand(*args, **kwargs):
                kind, value = queue.pop(0)
                assert kind == 'u', ('torchvision drew a uniform where Stoke drew', kind)
                return torch.tensor(value)
            torch.randint, torch.rand = randint, rand
            p._sample_dirichlet = lambda params: dirichlet.pop(0)
            out = open(sys.argv[13], 'wb')
            for line in open(sys.argv[12]):
                m, mixing, draws = line.split(' | ')
                dirichlet[:] = [torch.tensor([[float.fromhex(v) for v in m.split()]], dtype=torch.float32),
                                torch.tensor([[float.fromhex(v) for v in mixing.split()]], dtype=torch.float32)]
                queue[:] = [(t[0], float(t[2:]) if t[0] == 'u' else int(t[2:])) for t in draws.split()]
                out.write(p(img).tobytes())
                assert not queue and not dirichlet, ('draws left over', queue, dirichlet)
            out.close()
            """;

    /** Stoke's draws in the order torchvision's forward asks for them: {@code m | weights | r:N or u:X ...}. */
    private static String request(AugmentPolicy policy, AugMixDrawn d) {
        StringBuilder s = new StringBuilder();
        s.append(Float.toHexString(d.original()))
                .append(' ')
                .append(Float.toHexString(d.beta()))
                .append(" |");
        for (int c = 0; c < d.chains(); c++) {
            s.append(' ').append(Float.toHexString(d.mixing(c)));
        }
        s.append(" |");
        List<AugmentOp> ops = policy.ops();
        int at = 0;
        for (int c = 0; c < d.chains(); c++) {
            if (policy.augMix().chainDepth() <= 0) {
                s.append(" r:").append(d.depth(c)); // randint(low=1, high=4) returns the depth itself
            }
            for (int i = 0; i < d.depth(c); i++, at++) {
                s.append(" r:").append(ops.indexOf(d.op(at)));
                if (d.bin(at) >= 0) {
                    s.append(" r:").append(d.bin(at));
                    if (isSigned(d.op(at))) {
                        // v1: randint(2) != 0 negates; v2: rand() <= 0.5 negates.
                        s.append(
                                policy.v2()
                                        ? (d.negative(at) ? " u:0.25" : " u:0.75")
                                        : (d.negative(at) ? " r:1" : " r:0"));
                    }
                }
            }
        }
        return s.toString();
    }

    private static boolean isSigned(AugmentOp op) {
        return op != AugmentOp.POSTERIZE && op != AugmentOp.SOLARIZE;
    }

    @ParameterizedTest(name = "{0} on {1}x{2}")
    @CsvSource({
        "augmix, 32, 32",
        "'augmix,v2', 32, 32",
        "'augmix:10:2:2:0.5,all_ops=false,interpolation=nearest,fill=200:100:50', 37, 29",
        "'augmix:10:2:2:0.5,all_ops=false,interpolation=nearest,fill=200:100:50,v2', 37, 29",
        "'augmix:5:4:-1:2.0,fill=128', 23, 41",
        "'augmix:5:4:-1:2.0,fill=128,v2', 23, 41",
    })
    void theMixIsTorchvisionsAugMixForStokesDraws(String spelling, int w, int h) throws Exception {
        TorchvisionAugment.requireAugmentLibrary();
        String versions = TorchvisionAugment.requireTorchvision();
        AugmentPolicy policy = AugmentPolicy.parse(spelling);
        if (policy.v2() && !TorchvisionAugment.hasV2()) {
            System.err.println("[stoke] SKIPPING v2 AugMix: torchvision " + versions + " has no transforms.v2");
            Assumptions.abort("SKIPPED: torchvision without transforms.v2 (" + versions + ")");
        }
        byte[] rgb = TestImages.rgb(w, h, 3);
        List<String> requests = new ArrayList<>();
        byte[] ours = new byte[SAMPLES * rgb.length];
        CounterRandom random = new CounterRandom();
        try (AugmentStage stage = new AugmentStage(policy, w, h)) {
            for (int k = 0; k < SAMPLES; k++) {
                MemorySegment.copy(MemorySegment.ofArray(rgb), 0, stage.input(), 0, rgb.length);
                random.reset(5, 1, k);
                MemorySegment out = stage.apply(random);
                MemorySegment.copy(out, JAVA_BYTE, 0, ours, k * rgb.length, rgb.length);
                requests.add(request(policy, stage.augMixDrawn()));
            }
        }
        byte[] theirs = torchvision(policy, w, h, rgb, requests);
        assertEquals(ours.length, theirs.length);
        for (int k = 0; k < SAMPLES; k++) {
            byte[] a = Arrays.copyOfRange(ours, k * rgb.length, (k + 1) * rgb.length);
            byte[] b = Arrays.copyOfRange(theirs, k * rgb.length, (k + 1) * rgb.length);
            int differ = 0;
            int first = -1;
            for (int i = 0; i < a.length; i++) {
                if (a[i] != b[i]) {
                    differ++;
                    first = first < 0 ? i : first;
                }
            }
            assertEquals(
                    0,
                    differ,
                    spelling + " sample " + k + " (" + requests.get(k) + "): " + differ + " bytes differ, the first at "
                            + first + " (Stoke " + (first < 0 ? 0 : a[first] & 0xff) + ", torchvision "
                            + (first < 0 ? 0 : b[first] & 0xff) + "), against torchvision " + versions);
        }
    }

    private static byte[] torchvision(AugmentPolicy policy, int w, int h, byte[] rgb, List<String> requests)
            throws Exception {
        int[] fill = policy.fill();
        List<String> args = new java.util.ArrayList<>(TorchvisionAugment.augMixArguments(policy));
        args.addAll(List.of(
                policy.interpolation() == AugmentPolicy.NEAREST ? "nearest" : "bilinear",
                fill == null ? "-" : fill[0] + ":" + fill[1] + ":" + fill[2],
                "" + w,
                "" + h));
        return TorchvisionAugment.runOnImage(DRIVE, rgb, requests, args.toArray(String[]::new));
    }

    /** The same (seed, epoch, sample) gives the same image, whatever came before it in the worker. */
    @Test
    void theSameSampleGivesTheSameMixAfterOtherSamples() {
        TorchvisionAugment.requireAugmentLibrary();
        AugmentPolicy policy = AugmentPolicy.parse("augmix,v2");
        byte[] rgb = TestImages.rgb(24, 24, 8);
        CounterRandom random = new CounterRandom();
        try (AugmentStage a = new AugmentStage(policy, 24, 24);
                AugmentStage b = new AugmentStage(policy, 24, 24)) {
            byte[][] first = new byte[6][];
            for (int k = 0; k < 6; k++) {
                first[k] = run(a, rgb, random, k);
            }
            for (int k = 5; k >= 0; k--) {
                assertArrayEquals(first[k], run(b, rgb, random, k), "sample " + k + " run again, in another order");
            }
            assertFalse(Arrays.equals(first[0], first[1]), "two samples, two mixes");
            assertFalse(Arrays.equals(first[0], rgb), "the mix changes the image");
        }
    }

    /**
     * A worker's AugMix allocates nothing once warm: its draws, chains and mix use the stage's own
     * holders and images. Measured with the JVM's count of the bytes this thread allocated.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"augmix", "'augmix:3:3:-1:0.5,fill=1:2:3,v2,interpolation=nearest'"})
    void warmImagesAllocateNothing(String spelling) {
        TorchvisionAugment.requireAugmentLibrary();
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(threads.isThreadAllocatedMemorySupported(), "no per-thread allocation count here");
        threads.setThreadAllocatedMemoryEnabled(true);
        byte[] rgb = TestImages.rgb(32, 32, 4);
        MemorySegment source = MemorySegment.ofArray(rgb);
        CounterRandom random = new CounterRandom();
        try (AugmentStage stage = new AugmentStage(AugmentPolicy.parse(spelling), 32, 32)) {
            for (int k = 0; k < 3000; k++) { // every op drawn many times over, the loops compiled
                MemorySegment.copy(source, 0, stage.input(), 0, rgb.length);
                random.reset(1, 0, k);
                stage.apply(random);
            }
            // The JIT may still be compiling (a loaded machine slows it), and code not yet compiled
            // allocates (interpreted downcalls box): "warm" is the first of up to 10 windows of 300
            // images that allocates nothing. A holder made per image allocates in every window.
            List<Long> windows = new ArrayList<>();
            for (int w = 0; w < 10 && (windows.isEmpty() || windows.getLast() != 0); w++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int k = 0; k < 300; k++) {
                    MemorySegment.copy(source, 0, stage.input(), 0, rgb.length);
                    random.reset(1, 1 + w, k);
                    stage.apply(random);
                }
                windows.add(threads.getCurrentThreadAllocatedBytes() - before);
            }
            assertEquals(0, windows.getLast(), "bytes allocated by each window of 300 warm AugMix images: " + windows);
        }
    }

    private static byte[] run(AugmentStage stage, byte[] rgb, CounterRandom random, int k) {
        MemorySegment.copy(MemorySegment.ofArray(rgb), 0, stage.input(), 0, rgb.length);
        random.reset(3, 2, k);
        return stage.apply(random).toArray(JAVA_BYTE);
    }
}
