package io.stoke.loader.augment;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * One of torchvision's auto-augment policies, as a {@code TransformSpec} carries it, written in a
 * compact spelling that {@link #parse} reads and {@link #toString} writes:
 * {@code ta_wide[:BINS]} ({@code TrivialAugmentWide(num_magnitude_bins)}),
 * {@code ra[:NUM_OPS[:MAGNITUDE[:BINS]]]} ({@code RandAugment}), {@code aa[:imagenet|cifar10|svhn]}
 * ({@code AutoAugment}), then any of {@code ,interpolation=nearest|bilinear|bicubic}, {@code ,fill=V} or
 * {@code ,fill=R:G:B}, and {@code ,v2} (the {@code torchvision.transforms.v2} class: its Solarize
 * threshold is {@code 255 * linspace(1, 0)} rather than {@code linspace(255, 0)}). Defaults are
 * torchvision's: 31 bins, {@code ra:2:9:31}, {@code aa:imagenet}, nearest, fill 0.
 *
 * @param kind          which policy
 * @param numOps        RandAugment's {@code num_ops}
 * @param magnitude     RandAugment's {@code magnitude} (a bin)
 * @param bins          {@code num_magnitude_bins} (AutoAugment: 10)
 * @param interpolation 0 nearest, 2 bilinear, 3 bicubic (PIL's numbers), for the geometric ops
 * @param fill          the RGB of the pixels the geometric ops uncover
 * @param v2            whether the policy is {@code torchvision.transforms.v2}'s
 */
public record AugmentPolicy(Kind kind, int numOps, int magnitude, int bins, int interpolation, int[] fill, boolean v2)
        implements Serializable {
    /** PIL's {@code Image.NEAREST}. */
    public static final int NEAREST = 0;
    /** PIL's {@code Image.BILINEAR}. */
    public static final int BILINEAR = 2;
    /** PIL's {@code Image.BICUBIC}. */
    public static final int BICUBIC = 3;

    /** The policies. */
    public enum Kind {
        TRIVIAL_AUGMENT_WIDE("ta_wide", "TrivialAugmentWide"),
        RAND_AUGMENT("ra", "RandAugment"),
        AUTO_AUGMENT_IMAGENET("aa:imagenet", "AutoAugment(IMAGENET)"),
        AUTO_AUGMENT_CIFAR10("aa:cifar10", "AutoAugment(CIFAR10)"),
        AUTO_AUGMENT_SVHN("aa:svhn", "AutoAugment(SVHN)");

        private final String spelling;
        private final String torchvisionName;

        Kind(String spelling, String torchvisionName) {
            this.spelling = spelling;
            this.torchvisionName = torchvisionName;
        }

        public String torchvisionName() {
            return torchvisionName;
        }

        public boolean autoAugment() {
            return this != TRIVIAL_AUGMENT_WIDE && this != RAND_AUGMENT;
        }
    }

    public AugmentPolicy {
        if (kind == null) {
            throw new IllegalArgumentException("an augmentation policy needs a kind");
        }
        if (bins < 2 || bins > 1000) {
            throw new IllegalArgumentException(
                    kind.torchvisionName + ": num_magnitude_bins must be 2 to 1000, not " + bins);
        }
        if (kind == Kind.RAND_AUGMENT && (numOps < 1 || numOps > 16)) {
            throw new IllegalArgumentException("RandAugment: num_ops must be 1 to 16, not " + numOps);
        }
        if (kind == Kind.RAND_AUGMENT && (magnitude < 0 || magnitude >= bins)) {
            throw new IllegalArgumentException("RandAugment: magnitude must be 0 to num_magnitude_bins - 1 ("
                    + (bins - 1) + "), not " + magnitude);
        }
        if (interpolation != NEAREST && interpolation != BILINEAR && interpolation != BICUBIC) {
            throw new IllegalArgumentException(kind.torchvisionName
                    + ": interpolation must be NEAREST, BILINEAR or BICUBIC (PIL's affine transform takes no other), not "
                    + interpolation);
        }
        fill = fill == null ? new int[3] : fill.clone();
        if (fill.length != 3) {
            throw new IllegalArgumentException(kind.torchvisionName + ": fill needs 1 or 3 values, not " + fill.length);
        }
        for (int v : fill) {
            if (v < 0 || v > 255) {
                throw new IllegalArgumentException(
                        kind.torchvisionName + ": fill values must be 0 to 255: " + Arrays.toString(fill));
            }
        }
    }

    @Override
    public int[] fill() {
        return fill.clone();
    }

    /** How many ops one image may get: RandAugment's {@code num_ops}, else 1 (TrivialAugmentWide) or 2. */
    public int maxOps() {
        return switch (kind) {
            case TRIVIAL_AUGMENT_WIDE -> 1;
            case RAND_AUGMENT -> numOps;
            default -> 2;
        };
    }

    /** The ops the policy can draw, in torchvision's order (its {@code _augmentation_space}'s keys). */
    public List<AugmentOp> ops() {
        return switch (kind) {
            case TRIVIAL_AUGMENT_WIDE, RAND_AUGMENT ->
                List.of(AugmentOp.values()).subList(0, AugmentOp.EQUALIZE.ordinal() + 1);
            default -> List.of(AugmentOp.values()).subList(1, AugmentOp.values().length);
        };
    }

    /**
     * Reads the compact spelling ({@code ta_wide:31}, {@code ra:2:9:31,interpolation=bilinear},
     * {@code aa:imagenet,fill=128,v2}); a mistake is one sentence naming what was wrong.
     */
    public static AugmentPolicy parse(String spelling) {
        String[] parts = spelling.trim().toLowerCase(Locale.ROOT).split(",");
        String[] head = parts[0].split(":");
        int interpolation = NEAREST;
        int[] fill = null;
        boolean v2 = false;
        for (int i = 1; i < parts.length; i++) {
            String p = parts[i].trim();
            if (p.equals("v2")) {
                v2 = true;
            } else if (p.startsWith("interpolation=")) {
                interpolation = switch (p.substring(14)) {
                    case "nearest" -> NEAREST;
                    case "bilinear" -> BILINEAR;
                    case "bicubic" -> BICUBIC;
                    default ->
                        throw new IllegalArgumentException(
                                "--augment " + spelling
                                        + ": interpolation must be nearest, bilinear or bicubic (PIL's affine transform takes no other)");
                };
            } else if (p.startsWith("fill=")) {
                fill = parseFill(spelling, p.substring(5));
            } else {
                throw new IllegalArgumentException("--augment " + spelling + ": unknown setting '" + p
                        + "' (interpolation=nearest|bilinear|bicubic, fill=V or R:G:B, v2)");
            }
        }
        try {
            return switch (head[0]) {
                case "ta_wide" -> {
                    arity(spelling, head, 2);
                    yield new AugmentPolicy(
                            Kind.TRIVIAL_AUGMENT_WIDE, 1, 0, number(head, 1, 31), interpolation, fill, v2);
                }
                case "ra" -> {
                    arity(spelling, head, 4);
                    yield new AugmentPolicy(
                            Kind.RAND_AUGMENT,
                            number(head, 1, 2),
                            number(head, 2, 9),
                            number(head, 3, 31),
                            interpolation,
                            fill,
                            v2);
                }
                case "aa" -> {
                    arity(spelling, head, 2);
                    Kind kind = switch (head.length > 1 ? head[1] : "imagenet") {
                        case "imagenet" -> Kind.AUTO_AUGMENT_IMAGENET;
                        case "cifar10" -> Kind.AUTO_AUGMENT_CIFAR10;
                        case "svhn" -> Kind.AUTO_AUGMENT_SVHN;
                        default ->
                            throw new IllegalArgumentException(
                                    "--augment " + spelling + ": AutoAugment's policy is imagenet, cifar10 or svhn");
                    };
                    yield new AugmentPolicy(kind, 2, 0, 10, interpolation, fill, v2);
                }
                case "augmix" ->
                    throw new IllegalArgumentException("--augment " + spelling
                            + ": Stoke cannot do AugMix yet; run it in torch's DataLoader, or pass batch_transform=");
                default ->
                    throw new IllegalArgumentException(
                            "--augment " + spelling
                                    + ": the policy is ta_wide[:BINS], ra[:NUM_OPS[:MAGNITUDE[:BINS]]] or aa[:imagenet|cifar10|svhn]");
            };
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--augment " + spelling + ": " + e.getMessage() + " is not a whole number");
        }
    }

    private static void arity(String spelling, String[] head, int most) {
        if (head.length > most) {
            throw new IllegalArgumentException(
                    "--augment " + spelling + ": " + head[0] + " takes at most " + (most - 1) + " numbers after it");
        }
    }

    private static int number(String[] head, int at, int otherwise) {
        return head.length > at ? Integer.parseInt(head[at].trim()) : otherwise;
    }

    private static int[] parseFill(String spelling, String text) {
        String[] v = text.split(":");
        if (v.length != 1 && v.length != 3) {
            throw new IllegalArgumentException("--augment " + spelling + ": fill is V or R:G:B");
        }
        int[] fill = new int[3];
        for (int c = 0; c < 3; c++) {
            fill[c] = Integer.parseInt(v[v.length == 1 ? 0 : c].trim());
        }
        return fill;
    }

    /** The compact spelling, which {@link #parse} reads back to an equal policy. */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder(kind.spelling);
        if (kind == Kind.TRIVIAL_AUGMENT_WIDE) {
            s.append(':').append(bins);
        } else if (kind == Kind.RAND_AUGMENT) {
            s.append(':')
                    .append(numOps)
                    .append(':')
                    .append(magnitude)
                    .append(':')
                    .append(bins);
        }
        s.append(",interpolation=")
                .append(interpolation == NEAREST ? "nearest" : interpolation == BILINEAR ? "bilinear" : "bicubic");
        s.append(",fill=")
                .append(fill[0])
                .append(':')
                .append(fill[1])
                .append(':')
                .append(fill[2]);
        if (v2) {
            s.append(",v2");
        }
        return s.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof AugmentPolicy p
                && p.kind == kind
                && p.numOps == numOps
                && p.magnitude == magnitude
                && p.bins == bins
                && p.interpolation == interpolation
                && Arrays.equals(p.fill, fill)
                && p.v2 == v2;
    }

    @Override
    public int hashCode() {
        return toString().hashCode();
    }
}
