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
 * ({@code AutoAugment}), {@code augmix[:SEVERITY[:WIDTH[:DEPTH[:ALPHA]]]]} ({@code AugMix(severity,
 * mixture_width, chain_depth, alpha)}, with {@code ,all_ops=false} for {@code all_ops=False}), or
 * {@code jitter:B:C:S:H} ({@code ColorJitter}: the brightness, contrast, saturation and hue ranges as
 * torchvision holds them, each {@code LO/HI} or {@code -} for none, then only {@code ,p=P}, the
 * probability of {@code RandomApply} around it, and {@code ,gray=G}, that of {@code RandomGrayscale}
 * after it); the others then take any of
 * {@code ,interpolation=nearest|bilinear|bicubic}, {@code ,fill=V} or {@code ,fill=R:G:B}, and {@code ,v2}
 * (the {@code torchvision.transforms.v2} class: its Solarize threshold is {@code 255 * linspace(1, 0)}
 * rather than {@code linspace(255, 0)}). Defaults are torchvision's: 31 bins, {@code ra:2:9:31},
 * {@code aa:imagenet}, {@code augmix:3:3:-1:1.0}, nearest (AugMix: bilinear), fill 0 (AugMix: none,
 * which its tensor kernels treat differently from 0).
 *
 * @param kind          which policy
 * @param numOps        RandAugment's {@code num_ops}
 * @param magnitude     RandAugment's {@code magnitude} (a bin)
 * @param bins          {@code num_magnitude_bins} (AutoAugment: 10)
 * @param interpolation 0 nearest, 2 bilinear, 3 bicubic (PIL's numbers), for the geometric ops
 * @param fill          the RGB of the pixels the geometric ops uncover
 * @param v2            whether the policy is {@code torchvision.transforms.v2}'s
 * @param augMix        AugMix's settings, for {@link Kind#AUG_MIX} only (else null)
 * @param jitter        ColorJitter's ranges, for {@link Kind#COLOR_JITTER} only (else null)
 */
public record AugmentPolicy(
        Kind kind,
        int numOps,
        int magnitude,
        int bins,
        int interpolation,
        int[] fill,
        boolean v2,
        AugMixSettings augMix,
        ColorJitterSettings jitter)
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
        AUTO_AUGMENT_SVHN("aa:svhn", "AutoAugment(SVHN)"),
        AUG_MIX("augmix", "AugMix"),
        COLOR_JITTER("jitter", "ColorJitter");

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
            return this != TRIVIAL_AUGMENT_WIDE && this != RAND_AUGMENT && this != AUG_MIX && this != COLOR_JITTER;
        }
    }

    /**
     * {@code AugMix(severity, mixture_width, chain_depth, alpha, all_ops)}, as torchvision takes them.
     *
     * @param severity     the magnitude bins drawn from: 0 to {@code severity - 1} of 10
     * @param mixtureWidth how many chains are mixed
     * @param chainDepth   ops in each chain, or (0 or less) 1 to 3 drawn for each chain
     * @param alpha        the Dirichlet concentration of the mixing weights
     * @param allOps       whether Brightness, Color, Contrast and Sharpness are drawn too
     */
    public record AugMixSettings(int severity, int mixtureWidth, int chainDepth, double alpha, boolean allOps)
            implements Serializable {
        /** torchvision's defaults: {@code AugMix()}. */
        public static final AugMixSettings DEFAULTS = new AugMixSettings(3, 3, -1, 1.0, true);

        public AugMixSettings {
            if (severity < 1 || severity > 10) {
                throw new IllegalArgumentException("AugMix: severity must be 1 to 10, not " + severity);
            }
            if (mixtureWidth < 1 || mixtureWidth > 64) {
                throw new IllegalArgumentException("AugMix: mixture_width must be 1 to 64, not " + mixtureWidth);
            }
            if (chainDepth > 64) {
                throw new IllegalArgumentException(
                        "AugMix: chain_depth must be at most 64 (or 0 or less for 1 to 3 drawn), not " + chainDepth);
            }
            // Written as float32, as torch holds it: a value that float32 rounds to 0 or infinity is refused too.
            if (!(alpha > 0) || !Float.isFinite((float) alpha) || (float) alpha == 0f) {
                throw new IllegalArgumentException("AugMix: alpha must be a positive number, not " + alpha);
            }
        }

        /** The most ops one chain can have. */
        public int maxDepth() {
            return chainDepth > 0 ? chainDepth : 3;
        }
    }

    /**
     * {@code ColorJitter(brightness, contrast, saturation, hue)} as torchvision holds them after its
     * checks: each a range {@code [lo, hi]}, or null where that op is off (torchvision's None). A
     * range that only holds the identity (1 for the first three, 0 for hue) is off, as torchvision
     * makes it. The jitter runs with probability {@code probability} ({@code RandomApply([ColorJitter],
     * p)}, open_clip's {@code color_jitter(p)}; 1 for a bare ColorJitter), then the image becomes its grey,
     * three times over, with probability {@code grayscale} ({@code RandomGrayscale(p)}, open_clip's
     * {@code gray_scale(p)}, 1 for {@code Grayscale(3)}; 0 for none): SimCLR's colour steps.
     */
    public record ColorJitterSettings(
            double[] brightness,
            double[] contrast,
            double[] saturation,
            double[] hue,
            double probability,
            double grayscale)
            implements Serializable {
        private static final List<AugmentOp> OPS =
                List.of(AugmentOp.BRIGHTNESS, AugmentOp.CONTRAST, AugmentOp.COLOR, AugmentOp.HUE);

        public ColorJitterSettings {
            brightness = range("brightness", brightness, 0, Double.POSITIVE_INFINITY, 1);
            contrast = range("contrast", contrast, 0, Double.POSITIVE_INFINITY, 1);
            saturation = range("saturation", saturation, 0, Double.POSITIVE_INFINITY, 1);
            hue = range("hue", hue, -0.5, 0.5, 0);
            if (!(probability >= 0 && probability <= 1) || !(grayscale >= 0 && grayscale <= 1)) {
                throw new IllegalArgumentException("ColorJitter: the probabilities must be 0 to 1, not p=" + probability
                        + " and gray=" + grayscale);
            }
        }

        /** A bare {@code ColorJitter}: always run, no grey. */
        public ColorJitterSettings(double[] brightness, double[] contrast, double[] saturation, double[] hue) {
            this(brightness, contrast, saturation, hue, 1.0, 0.0);
        }

        private static double[] range(String name, double[] r, double least, double most, double identity) {
            if (r == null) {
                return null;
            }
            if (r.length != 2 || !(least <= r[0] && r[0] <= r[1] && r[1] <= most)) {
                throw new IllegalArgumentException("ColorJitter: " + name + " must be a range " + least
                        + " <= lo <= hi <= " + most + ", not " + Arrays.toString(r));
            }
            return r[0] == identity && r[1] == identity ? null : r.clone();
        }

        /**
         * The ops that can run, in the order of torchvision's {@code fn_id} (brightness, contrast,
         * saturation, hue; none where the jitter never runs), then the grey where it may.
         */
        public List<AugmentOp> ops() {
            List<AugmentOp> ops = new java.util.ArrayList<>(5);
            for (int fn = 0; fn < 4 && probability > 0; fn++) {
                if (on(fn)) {
                    ops.add(OPS.get(fn));
                }
            }
            if (grayscale > 0) {
                ops.add(AugmentOp.GRAYSCALE);
            }
            return List.copyOf(ops);
        }

        /** The range of torchvision's {@code fn_id} {@code fn} (0 brightness, 1 contrast, 2 saturation, 3 hue), or null. */
        public double[] range(int fn) {
            double[] r = field(fn);
            return r == null ? null : r.clone();
        }

        /** The op of torchvision's {@code fn_id} {@code fn}. */
        public static AugmentOp op(int fn) {
            return OPS.get(fn);
        }

        /** Whether {@code fn}'s op is on: {@link #range} without its copy, for the draws of every image. */
        boolean on(int fn) {
            return field(fn) != null;
        }

        /** The low end of {@code fn}'s range, which is on. */
        double low(int fn) {
            return field(fn)[0];
        }

        /** The high end of {@code fn}'s range, which is on. */
        double high(int fn) {
            return field(fn)[1];
        }

        private double[] field(int fn) {
            return switch (fn) {
                case 0 -> brightness;
                case 1 -> contrast;
                case 2 -> saturation;
                case 3 -> hue;
                default -> throw new IllegalArgumentException("ColorJitter has no op " + fn);
            };
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ColorJitterSettings j
                    && Arrays.equals(j.brightness, brightness)
                    && Arrays.equals(j.contrast, contrast)
                    && Arrays.equals(j.saturation, saturation)
                    && Arrays.equals(j.hue, hue)
                    && j.probability == probability
                    && j.grayscale == grayscale;
        }

        @Override
        public int hashCode() {
            return toString().hashCode();
        }

        /**
         * {@code :B:C:S:H}, each {@code LO/HI} or {@code -}, then {@code ,p=P} where it is not 1 and
         * {@code ,gray=G} where it is not 0: the spelling after {@code jitter}.
         */
        @Override
        public String toString() {
            StringBuilder s = new StringBuilder();
            for (int fn = 0; fn < 4; fn++) {
                double[] r = range(fn);
                s.append(':');
                if (r == null) {
                    s.append('-');
                } else {
                    s.append(r[0]).append('/').append(r[1]);
                }
            }
            if (probability != 1.0) {
                s.append(",p=").append(probability);
            }
            if (grayscale != 0.0) {
                s.append(",gray=").append(grayscale);
            }
            return s.toString();
        }
    }

    /** A policy other than AugMix and ColorJitter. */
    public AugmentPolicy(Kind kind, int numOps, int magnitude, int bins, int interpolation, int[] fill, boolean v2) {
        this(kind, numOps, magnitude, bins, interpolation, fill, v2, null, null);
    }

    /** {@code ColorJitter} with these ranges (its draws and ops have no bins, interpolation or fill). */
    public static AugmentPolicy colorJitter(ColorJitterSettings jitter) {
        return new AugmentPolicy(Kind.COLOR_JITTER, 0, 0, 2, NEAREST, null, false, null, jitter);
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
        if ((kind == Kind.AUG_MIX) != (augMix != null)) {
            throw new IllegalArgumentException(kind.torchvisionName + ": AugMix settings go with AugMix alone");
        }
        if ((kind == Kind.COLOR_JITTER) != (jitter != null)) {
            throw new IllegalArgumentException(
                    kind.torchvisionName + ": ColorJitter's ranges go with ColorJitter alone");
        }
        if (kind == Kind.AUG_MIX && interpolation == BICUBIC) {
            throw new IllegalArgumentException(
                    "AugMix: interpolation must be NEAREST or BILINEAR (torchvision's tensor ops, which AugMix runs,"
                            + " take no other)");
        }
        if (interpolation != NEAREST && interpolation != BILINEAR && interpolation != BICUBIC) {
            throw new IllegalArgumentException(kind.torchvisionName
                    + ": interpolation must be NEAREST, BILINEAR or BICUBIC (PIL's affine transform takes no other), not "
                    + interpolation);
        }
        // AugMix's tensor kernels blend no fill (None) differently from a fill of 0, so it keeps null.
        fill = fill == null ? (kind == Kind.AUG_MIX ? null : new int[3]) : fill.clone();
        if (fill != null && fill.length != 3) {
            throw new IllegalArgumentException(kind.torchvisionName + ": fill needs 1 or 3 values, not " + fill.length);
        }
        for (int v : fill == null ? new int[0] : fill) {
            if (v < 0 || v > 255) {
                throw new IllegalArgumentException(
                        kind.torchvisionName + ": fill values must be 0 to 255: " + Arrays.toString(fill));
            }
        }
    }

    /** The fill, or null (AugMix's {@code fill=None}). */
    @Override
    public int[] fill() {
        return fill == null ? null : fill.clone();
    }

    /** AugMix's augmentation space, in its order: the first nine, then four more with {@code all_ops}. */
    private static final List<AugmentOp> AUG_MIX_OPS = List.of(
            AugmentOp.SHEAR_X,
            AugmentOp.SHEAR_Y,
            AugmentOp.TRANSLATE_X,
            AugmentOp.TRANSLATE_Y,
            AugmentOp.ROTATE,
            AugmentOp.POSTERIZE,
            AugmentOp.SOLARIZE,
            AugmentOp.AUTO_CONTRAST,
            AugmentOp.EQUALIZE,
            AugmentOp.BRIGHTNESS,
            AugmentOp.COLOR,
            AugmentOp.CONTRAST,
            AugmentOp.SHARPNESS);

    /**
     * How many ops one image may get: RandAugment's {@code num_ops}, 1 (TrivialAugmentWide), AugMix's
     * chains times their depth, 5 (ColorJitter's four and the grey), else 2.
     */
    public int maxOps() {
        return switch (kind) {
            case TRIVIAL_AUGMENT_WIDE -> 1;
            case RAND_AUGMENT -> numOps;
            case AUG_MIX -> augMix.mixtureWidth() * augMix.maxDepth();
            case COLOR_JITTER -> 5;
            default -> 2;
        };
    }

    /** The ops the policy can draw, in torchvision's order (its {@code _augmentation_space}'s keys). */
    public List<AugmentOp> ops() {
        return switch (kind) {
            case AUG_MIX -> augMix.allOps() ? AUG_MIX_OPS : AUG_MIX_OPS.subList(0, 9);
            case COLOR_JITTER -> jitter.ops();
            case TRIVIAL_AUGMENT_WIDE, RAND_AUGMENT ->
                List.of(AugmentOp.values()).subList(0, AugmentOp.EQUALIZE.ordinal() + 1);
            default -> List.of(AugmentOp.values()).subList(1, AugmentOp.INVERT.ordinal() + 1);
        };
    }

    /**
     * Reads the compact spelling ({@code ta_wide:31}, {@code ra:2:9:31,interpolation=bilinear},
     * {@code aa:imagenet,fill=128,v2}); a mistake is one sentence naming what was wrong.
     */
    public static AugmentPolicy parse(String spelling) {
        String[] parts = spelling.trim().toLowerCase(Locale.ROOT).split(",");
        String[] head = parts[0].split(":");
        if (head[0].trim().equals("jitter")) {
            return parseJitter(spelling, parts, head);
        }
        boolean mix = head[0].trim().equals("augmix");
        int interpolation = mix ? BILINEAR : NEAREST;
        int[] fill = null;
        boolean v2 = false;
        boolean allOps = true;
        for (int i = 1; i < parts.length; i++) {
            String p = parts[i].trim();
            if (p.equals("v2")) {
                v2 = true;
            } else if (mix && (p.equals("all_ops=true") || p.equals("all_ops=false"))) {
                allOps = p.equals("all_ops=true");
            } else if (p.startsWith("interpolation=")) {
                interpolation = switch (p.substring(14)) {
                    case "nearest" -> NEAREST;
                    case "bilinear" -> BILINEAR;
                    case "bicubic" -> BICUBIC;
                    default ->
                        throw new IllegalArgumentException("--augment " + spelling
                                + ": interpolation must be nearest, bilinear or bicubic (PIL's affine transform takes no"
                                + " other)");
                };
                if (mix && interpolation == BICUBIC) {
                    throw new IllegalArgumentException("--augment " + spelling
                            + ": AugMix's interpolation must be nearest or bilinear (it runs torchvision's tensor ops,"
                            + " and Stoke's take no other)");
                }
            } else if (p.startsWith("fill=")) {
                fill = parseFill(spelling, p.substring(5));
            } else {
                throw new IllegalArgumentException("--augment " + spelling + ": unknown setting '" + p
                        + "' (interpolation=nearest|bilinear|bicubic, fill=V or R:G:B, v2"
                        + (mix ? ", all_ops=true|false)" : ")"));
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
                case "augmix" -> {
                    arity(spelling, head, 5);
                    AugMixSettings d = AugMixSettings.DEFAULTS;
                    AugMixSettings settings;
                    try {
                        settings = new AugMixSettings(
                                number(head, 1, d.severity()),
                                number(head, 2, d.mixtureWidth()),
                                number(head, 3, d.chainDepth()),
                                head.length > 4 ? Double.parseDouble(head[4].trim()) : d.alpha(),
                                allOps);
                    } catch (IllegalArgumentException e) {
                        if (e instanceof NumberFormatException) {
                            throw e;
                        }
                        throw new IllegalArgumentException("--augment " + spelling + ": " + e.getMessage(), e);
                    }
                    yield new AugmentPolicy(Kind.AUG_MIX, 0, 0, 10, interpolation, fill, v2, settings, null);
                }
                default ->
                    throw new IllegalArgumentException("--augment " + spelling
                            + ": the policy is ta_wide[:BINS], ra[:NUM_OPS[:MAGNITUDE[:BINS]]], aa[:imagenet|cifar10|svhn],"
                            + " augmix[:SEVERITY[:WIDTH[:DEPTH[:ALPHA]]]] or jitter:B:C:S:H");
            };
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--augment " + spelling + ": " + e.getMessage() + " is not a whole number");
        }
    }

    /** {@code jitter:B:C:S:H}, each {@code LO/HI} or {@code -}, then {@code ,p=P} and {@code ,gray=G}. */
    private static AugmentPolicy parseJitter(String spelling, String[] parts, String[] head) {
        double probability = 1.0;
        double grayscale = 0.0;
        for (int i = 1; i < parts.length; i++) {
            String p = parts[i].trim();
            try {
                if (p.startsWith("p=")) {
                    probability = Double.parseDouble(p.substring(2));
                } else if (p.startsWith("gray=")) {
                    grayscale = Double.parseDouble(p.substring(5));
                } else {
                    throw new IllegalArgumentException("--augment " + spelling + ": ColorJitter takes p=P (the"
                            + " probability it runs) and gray=G (of RandomGrayscale after it), not '" + p
                            + "' (it has no interpolation or fill)");
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--augment " + spelling + ": '" + p + "' is not a number");
            }
        }
        if (head.length != 5) {
            throw new IllegalArgumentException("--augment " + spelling
                    + ": ColorJitter is jitter:B:C:S:H, the brightness, contrast, saturation and hue ranges, each"
                    + " LO/HI or - for none");
        }
        double[][] ranges = new double[4][];
        for (int fn = 0; fn < 4; fn++) {
            String r = head[fn + 1].trim();
            if (r.equals("-")) {
                continue;
            }
            String[] ends = r.split("/");
            try {
                if (ends.length != 2) {
                    throw new NumberFormatException(r);
                }
                ranges[fn] = new double[] {Double.parseDouble(ends[0].trim()), Double.parseDouble(ends[1].trim())};
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--augment " + spelling + ": '" + r + "' is not a range LO/HI or -");
            }
        }
        try {
            return colorJitter(
                    new ColorJitterSettings(ranges[0], ranges[1], ranges[2], ranges[3], probability, grayscale));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--augment " + spelling + ": " + e.getMessage(), e);
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
        if (kind == Kind.COLOR_JITTER) {
            return s.append(jitter).toString();
        }
        if (kind == Kind.TRIVIAL_AUGMENT_WIDE) {
            s.append(':').append(bins);
        } else if (kind == Kind.AUG_MIX) {
            s.append(':')
                    .append(augMix.severity())
                    .append(':')
                    .append(augMix.mixtureWidth())
                    .append(':')
                    .append(augMix.chainDepth())
                    .append(':')
                    .append(augMix.alpha());
            if (!augMix.allOps()) {
                s.append(",all_ops=false");
            }
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
        if (fill != null) {
            s.append(",fill=")
                    .append(fill[0])
                    .append(':')
                    .append(fill[1])
                    .append(':')
                    .append(fill[2]);
        }
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
                && p.v2 == v2
                && java.util.Objects.equals(p.augMix, augMix)
                && java.util.Objects.equals(p.jitter, jitter);
    }

    @Override
    public int hashCode() {
        return toString().hashCode();
    }
}
