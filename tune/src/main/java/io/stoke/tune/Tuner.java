package io.stoke.tune;

import io.stoke.loader.Batch;
import io.stoke.loader.Loader;
import io.stoke.tune.CostModel.DecodeCost;
import io.stoke.tune.CostModel.Prediction;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Finds the batch size and workers that feed a step fastest: measures decoding (at one worker and
 * at the cores) and the step (at each batch size), predicts every point with a {@link CostModel},
 * runs the best few predictions for real and recommends the best measured, preferring fewer workers
 * among points within {@value #PREFER_FEWER_WITHIN} of it. Or, exhaustive, runs every point.
 */
public final class Tuner {
    /** Measured points this close to the best count as equal, and the one with fewest workers wins. */
    public static final double PREFER_FEWER_WITHIN = 0.03;
    /** A check this far below its prediction means the model was off here: check the next one too. */
    static final double OFF_BY = 0.10;
    /** Other processes keeping this many cores busy during a point make its figure doubtful. */
    static final double DISTURBED_CORES = 0.25;
    /** Another batch size predicted this close to the best is checked too when nothing else was. */
    static final double ANOTHER_BATCH_WITHIN = 0.10;
    /** A fewer-workers point predicted this close to the best is checked too: it would be preferred. */
    static final double FEWER_WORKERS_WITHIN = 0.05;

    /**
     * What to search and how long to measure.
     *
     * @param batchSizes       the batch sizes, ascending
     * @param maxWorkers       workers from 1 to this
     * @param cores            the machine's cores
     * @param secondsPerPoint  each measured point's timed window (a warm-up of a sixth of it runs first);
     *     the decode probes time a third of it
     * @param candidates       at most this many points measured for real (not exhaustive)
     * @param exhaustive       measure every point
     */
    public record Settings(
            List<Integer> batchSizes,
            int maxWorkers,
            int cores,
            double secondsPerPoint,
            int candidates,
            boolean exhaustive) {
        public Settings {
            batchSizes = List.copyOf(batchSizes);
            if (batchSizes.isEmpty()) {
                throw new IllegalArgumentException("no batch size to try");
            }
        }

        double warmupSeconds() {
            return secondsPerPoint / 6;
        }

        double probeSeconds() {
            return secondsPerPoint / 3;
        }

        /** Decoding is probed at the middle batch size (the upper one of two). */
        int probeBatchSize() {
            return batchSizes.get(batchSizes.size() / 2);
        }

        int probeWorkers() {
            return Math.max(1, Math.min(cores, maxWorkers));
        }
    }

    /** A measured point beside what the model predicted for it. */
    public record Point(Trial.Measurement measured, Prediction predicted) {}

    /**
     * What tune found.
     *
     * @param decode            the decode probes
     * @param steps             the step's cost per batch size
     * @param predicted         every point's prediction
     * @param measured          the points run for real, in the order they ran
     * @param recommended       the point recommended
     * @param why               one sentence on why
     * @param probeSeconds      time spent on the probes
     * @param measuringSeconds  time spent running points
     */
    public record Result(
            List<DecodeCost> decode,
            List<Step.StepCost> steps,
            List<Prediction> predicted,
            List<Point> measured,
            Point recommended,
            String why,
            double probeSeconds,
            double measuringSeconds) {}

    private final LoaderFactory factory;
    private final Step step;
    private final Settings settings;
    private final PrintStream log;

    public Tuner(LoaderFactory factory, Step step, Settings settings, PrintStream log) {
        this.factory = factory;
        this.step = step;
        this.settings = settings;
        this.log = log;
    }

    public Result run() throws Exception {
        long start = System.nanoTime();
        CostModel model = probe();
        List<Prediction> predicted = new ArrayList<>();
        for (int b : settings.batchSizes()) {
            for (int w = 1; w <= settings.maxWorkers(); w++) {
                predicted.add(model.predict(b, w));
            }
        }
        long probed = System.nanoTime();
        List<Point> measured = new ArrayList<>();
        if (settings.exhaustive()) {
            for (Prediction p : predicted) {
                measured.add(measure(p));
            }
        } else {
            check(predicted, measured);
        }
        Point best = recommend(measured);
        return new Result(
                List.of(model.one(), model.all()).stream().distinct().toList(),
                settings.batchSizes().stream().map(model::step).toList(),
                predicted,
                measured,
                best,
                why(best, measured, model),
                (probed - start) / 1e9,
                (System.nanoTime() - probed) / 1e9);
    }

    /** The decode probes and the step's costs: the cost model. */
    private CostModel probe() throws Exception {
        int b = settings.probeBatchSize();
        Step none = new SleepStep(0, 0);
        DecodeCost one = decode(b, 1, none);
        int n = settings.probeWorkers();
        DecodeCost all = n == 1 ? one : decode(b, n, none);
        List<Step.StepCost> steps = new ArrayList<>();
        for (int size : settings.batchSizes()) {
            Step.StepCost c = step.cost(size, this::withOneBatch, settings.probeSeconds() / 2);
            if (c.measured()) {
                log.printf(
                        Locale.ROOT,
                        "stoke tune: step at batch %d: %.1f ms, %.2f cores busy%n",
                        size,
                        c.seconds() * 1e3,
                        c.modelCores());
            }
            steps.add(c);
        }
        return new CostModel(settings.cores(), one, all, steps);
    }

    private DecodeCost decode(int batchSize, int workers, Step none) throws Exception {
        Trial.Measurement m =
                Trial.run(factory, batchSize, workers, none, settings.warmupSeconds(), settings.probeSeconds());
        log.printf(
                Locale.ROOT,
                "stoke tune: decoding alone, batch %d, %d worker%s: %.0f images/s%s%n",
                batchSize,
                workers,
                workers == 1 ? "" : "s",
                m.imagesPerSecond(),
                m.processCpuSeconds() > 0
                        ? String.format(
                                Locale.ROOT,
                                ", %.2f ms CPU per image (%.1f of %d cores busy)",
                                m.processCpuSeconds() / m.images() * 1e3,
                                m.processCpuSeconds() / m.seconds(),
                                settings.cores())
                        : ": WARNING: the process's CPU time is not measurable here, so decoding is taken to be"
                                + " CPU-bound (no more workers than cores will be predicted to help)");
        disturbed(m);
        return new DecodeCost(
                batchSize,
                workers,
                m.imagesPerSecond(),
                m.processCpuSeconds() > 0 ? m.processCpuSeconds() / m.images() : -1,
                m.producerCpuSecondsPerImage(),
                m.otherCores());
    }

    /** One batch from a ring of one slot: while the step holds it, no worker decodes. */
    private Step.StepCost withOneBatch(int batchSize, Step.BatchUse use) throws Exception {
        try (Loader loader = factory.builder(batchSize, settings.probeWorkers())
                        .slots(1)
                        .build();
                Batch batch = loader.next()) {
            return use.apply(batch);
        }
    }

    private Point measure(Prediction p) throws Exception {
        Trial.Measurement m = Trial.run(
                factory, p.batchSize(), p.workers(), step, settings.warmupSeconds(), settings.secondsPerPoint());
        log.printf(
                Locale.ROOT,
                "stoke tune: batch %d, %d worker%s: %.0f images/s (predicted %.0f), consumer waited %.0f%%%n",
                p.batchSize(),
                p.workers(),
                p.workers() == 1 ? "" : "s",
                m.imagesPerSecond(),
                p.imagesPerSecond(),
                m.stallFraction() * 100);
        disturbed(m);
        return new Point(m, p);
    }

    private void disturbed(Trial.Measurement m) {
        if (m.otherCores() > DISTURBED_CORES) {
            log.printf(
                    Locale.ROOT,
                    "stoke tune: WARNING: other processes kept %.1f of the %d cores busy during that point: its figure"
                            + " is not what this machine gives a job alone%n",
                    m.otherCores(),
                    settings.cores());
        }
    }

    /**
     * Runs the best prediction; then the best with fewer workers when it is predicted within
     * {@value #FEWER_WORKERS_WITHIN} of it (it would be preferred); then, when only one point ran, the
     * best at another batch size predicted within {@value #ANOTHER_BATCH_WITHIN} (decoding was probed
     * at one batch size, so what a batch size costs beside it is the model's weakest guess); then,
     * while the best measured falls more than {@value #OFF_BY} short of its prediction (the model is
     * off here), the next best prediction; up to {@code candidates} points in all.
     */
    private void check(List<Prediction> predicted, List<Point> measured) throws Exception {
        int probeB = settings.probeBatchSize();
        double top = predicted.stream()
                .mapToDouble(Prediction::imagesPerSecond)
                .max()
                .orElseThrow();
        // Points predicted within PREFER_FEWER_WITHIN are one point as far as the model can tell:
        // take the one with fewest workers, at the batch size nearest the decode probe's (where the
        // model is surest).
        Comparator<Prediction> surest = Comparator.comparingInt(Prediction::workers)
                .thenComparingDouble(p -> Math.abs(Math.log((double) p.batchSize() / probeB)))
                .thenComparing(Comparator.comparingInt(Prediction::batchSize).reversed());
        Prediction first = predicted.stream()
                .filter(p -> p.imagesPerSecond() >= (1 - PREFER_FEWER_WITHIN) * top)
                .min(surest)
                .orElseThrow();
        measured.add(measure(first));
        Optional<Prediction> fewer = predicted.stream()
                .filter(p -> p.workers() < first.workers()
                        && p.imagesPerSecond() >= (1 - FEWER_WORKERS_WITHIN) * first.imagesPerSecond())
                .max(Comparator.comparingDouble(Prediction::imagesPerSecond).thenComparing(surest.reversed()));
        if (fewer.isPresent() && measured.size() < settings.candidates()) {
            measured.add(measure(fewer.get()));
        }
        // Above (1 - PREFER_FEWER_WITHIN) of the best, predictions count as equal and the surest wins.
        Optional<Prediction> another = predicted.stream()
                .filter(p ->
                        p.batchSize() != first.batchSize() && p.imagesPerSecond() >= (1 - ANOTHER_BATCH_WITHIN) * top)
                .max(Comparator.comparingDouble(
                                (Prediction p) -> Math.min(p.imagesPerSecond(), (1 - PREFER_FEWER_WITHIN) * top))
                        .thenComparing(surest.reversed()));
        if (another.isPresent() && measured.size() == 1 && measured.size() < settings.candidates()) {
            measured.add(measure(another.get()));
        }
        while (measured.size() < settings.candidates()) {
            Point best = best(measured);
            if (best.measured().imagesPerSecond()
                    >= (1 - OFF_BY) * best.predicted().imagesPerSecond()) {
                break;
            }
            Optional<Prediction> next = predicted.stream()
                    .filter(p -> measured.stream().noneMatch(m -> m.predicted().equals(p)))
                    .max(Comparator.comparingDouble(Prediction::imagesPerSecond).thenComparing(surest.reversed()));
            if (next.isEmpty()) {
                break;
            }
            log.printf(
                    Locale.ROOT,
                    "stoke tune: the best so far measured %.0f%% below its prediction: checking the next%n",
                    100
                            * (1
                                    - best.measured().imagesPerSecond()
                                            / best.predicted().imagesPerSecond()));
            measured.add(measure(next.get()));
        }
    }

    private static Point best(List<Point> points) {
        return points.stream()
                .max(Comparator.comparingDouble(p -> p.measured().imagesPerSecond()))
                .orElseThrow();
    }

    /**
     * The best measured point, or the one with fewest workers among those within
     * {@value #PREFER_FEWER_WITHIN} of it (less CPU for the same rate), the faster of those on a tie.
     */
    static Point recommend(List<Point> measured) {
        double best = best(measured).measured().imagesPerSecond();
        return measured.stream()
                .filter(p -> p.measured().imagesPerSecond() >= (1 - PREFER_FEWER_WITHIN) * best)
                .min(Comparator.comparingInt((Point p) -> p.measured().workers())
                        .thenComparing(Comparator.comparingDouble(
                                        (Point p) -> p.measured().imagesPerSecond())
                                .reversed()))
                .orElseThrow();
    }

    private static String workers(int n) {
        return n == 1 ? "1 worker decodes" : n + " workers decode";
    }

    private String why(Point r, List<Point> measured, CostModel model) {
        Trial.Measurement m = r.measured();
        StringBuilder s = new StringBuilder(String.format(
                Locale.ROOT,
                "batch %d with %d worker%s measured %.0f images/s (predicted %.0f): ",
                m.batchSize(),
                m.workers(),
                m.workers() == 1 ? "" : "s",
                m.imagesPerSecond(),
                r.predicted().imagesPerSecond()));
        Step.StepCost c = model.step(m.batchSize());
        s.append(
                switch (r.predicted().bound()) {
                    case step ->
                        String.format(
                                Locale.ROOT,
                                "the step bounds it (%.1f ms per batch; %s %.0f images/s alone)",
                                c.seconds() * 1e3,
                                workers(m.workers()),
                                model.decodeImagesPerSecond(m.workers()));
                    case decode ->
                        String.format(
                                Locale.ROOT,
                                "decoding bounds it (%s %.0f images/s; the step takes %.1f ms per batch)",
                                workers(m.workers()),
                                model.decodeImagesPerSecond(m.workers()),
                                c.seconds() * 1e3);
                    case cores ->
                        String.format(
                                Locale.ROOT,
                                "the %d cores bound it (the step keeps %.1f of them busy for %.1f ms per batch, decoding takes the rest)",
                                model.cores(),
                                c.modelCores(),
                                c.seconds() * 1e3);
                });
        Point fastest = best(measured);
        if (fastest != r) {
            s.append(String.format(
                    Locale.ROOT,
                    "; batch %d with %d workers measured %.0f, within %.0f%%, so the fewer workers",
                    fastest.measured().batchSize(),
                    fastest.measured().workers(),
                    fastest.measured().imagesPerSecond(),
                    PREFER_FEWER_WITHIN * 100));
        }
        return s.toString();
    }
}
