package io.stoke.loader.sample;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Where a run resumes from saved {@link LoaderState}s, on a world that may have other ranks and
 * another batch size: epoch {@code epoch} from its batch {@code startBatch}, that epoch being
 * what {@code cuts} left of it ({@link Sampler#resuming}).
 *
 * <p>Every sample the saved ranks took is known from their states alone, because the order is a
 * pure function of the settings: with one state, every rank of its world is taken to have
 * reached the same step (a synchronised checkpoint); with every rank's state, each rank's own
 * step counts, so ranks that stopped at different steps lose nothing and repeat nothing. What is
 * left of the epoch is split over the new world as a whole epoch would be: the same number of
 * batches on every rank, padded (marked) or dropped as the new settings say. The next epoch is an
 * ordinary epoch of the new world. Resumed on the same world and batch size from a common step,
 * the run goes on exactly as if it had not stopped.
 *
 * @param epoch      the epoch the run resumes in
 * @param startBatch its first batch to deliver
 * @param cuts       what earlier worlds took of {@code epoch} (empty: it is whole)
 * @param report     one sentence on what was taken, what is left and what repeats, for a log
 */
public record ResumePlan(long epoch, int startBatch, List<EpochCut> cuts, String report) {
    public ResumePlan {
        cuts = List.copyOf(cuts);
        Objects.requireNonNull(report, "report");
    }

    /** {@code target} (the new world's sampler) with this plan's resumed epoch. */
    public Sampler apply(Sampler target) {
        return target.resuming(epoch, cuts);
    }

    /**
     * The plan that resumes {@code states} on the world of {@code target}.
     *
     * @param states one rank's state (every rank at its step), or every rank's of one world
     * @param target the new world's sampler, its epochs whole
     * @throws IllegalArgumentException in one sentence naming what differs: the states fix another
     *     order (seed, shuffle, dataset size, shuffle window) than {@code target}'s, come from
     *     different runs, do not cover the world, or span more than an epoch's end
     */
    public static ResumePlan of(List<LoaderState> states, Sampler target) {
        return of(states, target, null);
    }

    /**
     * {@link #of(List, Sampler)}, refusing states taken over another dataset than the one whose
     * {@code Dataset.fingerprint()} is {@code dataset} (null: not checked), as a state that says.
     */
    public static ResumePlan of(List<LoaderState> states, Sampler target, String dataset) {
        if (states.isEmpty()) {
            throw new IllegalArgumentException("no loader state to resume from");
        }
        LoaderState first = states.get(0);
        sameDataset(first, dataset);
        for (LoaderState s : states) {
            if (s.given() != null) {
                throw new IllegalArgumentException("the state was saved where each epoch's order was given ("
                        + s.given().kind() + "), which the seed cannot draw again: resume with an order feed "
                        + "(Loader.Builder.orderFeed, stoke serve --order-feed) that gives epoch " + s.epoch()
                        + "'s saved order again (the state's given order)");
            }
        }
        sameOrder(first, target);
        for (LoaderState s : states) {
            sameRun(first, s);
        }
        int w = first.worldSize();
        int b = first.batchSize();
        if (states.size() > 1) {
            boolean[] seen = new boolean[w];
            for (LoaderState s : states) {
                if (seen[s.rank()]) {
                    throw new IllegalArgumentException("two states of rank " + s.rank() + ": give one state, or "
                            + "exactly one of each of the " + w + " ranks");
                }
                seen[s.rank()] = true;
            }
            if (states.size() != w) {
                throw new IllegalArgumentException("states of " + states.size() + " of the " + w + " ranks: give "
                        + "every rank's state, or one state (or the lowest step's) taken as every rank's");
            }
        }
        long e = states.stream().mapToLong(LoaderState::epoch).min().orElseThrow();
        List<EpochCut> before = null;
        for (LoaderState s : states) {
            if (s.epoch() > e + 1 || (s.epoch() == e + 1 && s.batchesTaken() > 0)) {
                throw new IllegalArgumentException("rank " + s.rank() + "'s state is in epoch " + s.epoch()
                        + " and another's in epoch " + e + ": resume from states of one epoch");
            }
            if (s.epoch() == e) {
                if (before != null && !before.equals(s.cuts())) {
                    throw new IllegalArgumentException("the states of epoch " + e + " say different things about "
                            + "the worlds before theirs (epoch_cuts): they are not from one run");
                }
                before = s.cuts();
            }
        }
        Sampler old = new Sampler(
                        first.datasetSize(),
                        b,
                        first.shuffle(),
                        first.seed(),
                        first.dropLast(),
                        0,
                        w,
                        first.partitionTail())
                .resuming(e, before);
        int perRank = old.samplesPerEpoch(e);
        int batches = old.batchesPerEpoch(e);
        int[] taken = new int[states.size()];
        int[] steps = new int[states.size()];
        for (int i = 0; i < states.size(); i++) {
            LoaderState s = states.get(i);
            int k = s.epoch() == e ? s.batchesTaken() : batches;
            if (k > batches) {
                throw new IllegalArgumentException("rank " + s.rank() + "'s state took " + k + " batches of epoch " + e
                        + ", which has " + batches);
            }
            steps[s.rank() % steps.length] = k;
            taken[s.rank() % taken.length] = (int) Math.min((long) k * b, perRank);
        }
        int n = first.datasetSize();
        int leftBefore = Sampler.remaining(n, before).length;
        if (Arrays.stream(taken).allMatch(t -> t == perRank)) {
            return new ResumePlan(
                    e + 1, 0, List.of(), "epoch " + e + " was finished by every rank: resuming at epoch " + (e + 1));
        }
        EpochCut cut = states.size() == 1 ? EpochCut.uniform(w, taken[0]) : new EpochCut(w, taken);
        List<EpochCut> all = new ArrayList<>(before);
        all.add(cut);
        int left = Sampler.remaining(n, all).length;
        String from = states.size() == 1
                ? "one state at step " + steps[0] + ", taken as every rank's"
                : "the states of all " + w + " ranks at steps " + joined(steps);
        StringBuilder r = new StringBuilder()
                .append("resuming epoch ")
                .append(e)
                .append(" from ")
                .append(from)
                .append(" (batches of ")
                .append(b)
                .append("): ")
                .append(leftBefore - left)
                .append(" of its ")
                .append(leftBefore)
                .append(" samples taken, ")
                .append(left)
                .append(" left");
        if (states.size() > 1 && !cut.isUniform()) {
            int lowest = Arrays.stream(taken).min().orElseThrow();
            List<EpochCut> fromLowest = new ArrayList<>(before);
            fromLowest.add(EpochCut.uniform(w, lowest));
            int again = Sampler.remaining(n, fromLowest).length - left;
            r.append("; none taken twice (from the lowest step, ").append(again).append(" would have been)");
        }
        boolean sameWorld = target.worldSize() == w
                && target.batchSize() == b
                && target.dropLast() == first.dropLast()
                && target.partitionTail() == first.partitionTail();
        if (sameWorld && cut.isUniform() && taken[0] % b == 0) {
            // The uninterrupted run's own batches: batch k of this epoch comes next.
            r.append("; the same world goes on at batch ").append(taken[0] / b);
            return new ResumePlan(e, taken[0] / b, before, r.toString());
        }
        Sampler resumed = target.resuming(e, all);
        int newBatches = resumed.batchesPerEpoch(e);
        int delivered = resumed.samplesPerEpoch(e) * target.worldSize();
        r.append("; split over ")
                .append(target.worldSize())
                .append(target.worldSize() == 1 ? " rank" : " ranks")
                .append(" as ")
                .append(newBatches)
                .append(newBatches == 1 ? " batch" : " batches")
                .append(" of up to ")
                .append(target.batchSize())
                .append(" each");
        if (delivered > left) {
            r.append(", ").append(delivered - left).append(" of them padding (repeats, marked)");
        } else if (delivered < left) {
            r.append(", ").append(left - delivered).append(" left out by the partition tail or drop_last");
        }
        if (newBatches == 0) {
            return new ResumePlan(
                    e + 1,
                    0,
                    List.of(),
                    r.append(": none, so at epoch ").append(e + 1).toString());
        }
        return new ResumePlan(e, 0, all, r.toString());
    }

    /**
     * The plan that resumes {@code states} where each epoch's order is given through an {@link
     * OrderFeed}: this rank's own state, at the batch it reached of the order it was given, which the
     * feed must give again ({@link OrderFeed#open(java.nio.file.Path, int, int, OrderFeed.GivenEpoch)}
     * checks it); a finished epoch resumes at the next one's start.
     *
     * @param dataset the loader's {@code Dataset.fingerprint()}, checked against the state's
     * @throws IllegalArgumentException the states are not one fed rank's, or were saved over another dataset
     */
    public static ResumePlan fed(List<LoaderState> states, String dataset) {
        if (states.size() != 1) {
            throw new IllegalArgumentException("with an order feed each rank resumes from its own state: give this "
                    + "rank's state alone (" + states.size() + " given; a given order is not split again over "
                    + "another world)");
        }
        LoaderState s = states.get(0);
        sameDataset(s, dataset);
        if (s.given() == null) {
            throw new IllegalArgumentException("the state was saved with the loader's own order (seed=" + s.seed()
                    + ", shuffle=" + s.shuffle() + "), and this loader's order is fed: resume it without an order "
                    + "feed, or start the feed at epoch " + s.epoch() + " batch " + s.batchesTaken()
                    + " (startEpoch, startBatch)");
        }
        OrderFeed.GivenEpoch order = s.given().order();
        int k = s.batchesTaken();
        if (order != null && k > order.batches()) {
            throw new IllegalArgumentException("the state took " + k + " batches of epoch " + s.epoch()
                    + ", whose given order has " + order.batches());
        }
        if (order != null && k == order.batches() && k > 0) {
            return new ResumePlan(
                    s.epoch() + 1,
                    0,
                    List.of(),
                    "epoch " + s.epoch() + " of the order fed was " + "finished: resuming at epoch " + (s.epoch() + 1)
                            + ", as the feed gives it");
        }
        String of = order == null ? "" : " of its " + order.batches();
        return new ResumePlan(
                s.epoch(),
                k,
                List.of(),
                "resuming epoch " + s.epoch() + " at batch " + k + of + ", in the order the feed gave"
                        + (k > 0 && order != null ? ", which it must give again" : ""));
    }

    private static void sameDataset(LoaderState s, String dataset) {
        if (dataset != null && s.dataset() != null && !dataset.equals(s.dataset())) {
            throw new IllegalArgumentException("the state was saved over another dataset (dataset=" + s.dataset()
                    + ", this loader's is " + dataset + ": other files or labels, in another order)");
        }
    }

    private static void sameOrder(LoaderState s, Sampler target) {
        differs("seed", s.seed(), target.seed());
        differs("shuffle", s.shuffle(), target.shuffled());
        differs("dataset_size", s.datasetSize(), target.datasetSize());
        if (s.shuffleWindow() >= 0) {
            differs("shuffle_window", s.shuffleWindow(), target.shardWindow());
        }
    }

    private static void differs(String key, Object saved, Object mine) {
        if (!saved.equals(mine)) {
            throw new IllegalArgumentException("the state was saved with " + key + "=" + saved + ", this loader has "
                    + mine + ": the epoch's order would not be the one it was taken in");
        }
    }

    private static void sameRun(LoaderState a, LoaderState s) {
        Object[][] pairs = {
            {"seed", a.seed(), s.seed()},
            {"shuffle", a.shuffle(), s.shuffle()},
            {"dataset_size", a.datasetSize(), s.datasetSize()},
            {"shuffle_window", a.shuffleWindow(), s.shuffleWindow()},
            {"batch_size", a.batchSize(), s.batchSize()},
            {"drop_last", a.dropLast(), s.dropLast()},
            {"world_size", a.worldSize(), s.worldSize()},
            {"shard_tail", a.partitionTail(), s.partitionTail()},
        };
        for (Object[] p : pairs) {
            if (!p[1].equals(p[2])) {
                throw new IllegalArgumentException("rank " + a.rank() + "'s state has " + p[0] + "=" + p[1]
                        + " and rank " + s.rank() + "'s " + p[2] + ": the states are not from one run");
            }
        }
    }

    private static String joined(int[] steps) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < steps.length; i++) {
            s.append(i == 0 ? "" : ", ").append(steps[i]);
        }
        return s.toString();
    }
}
