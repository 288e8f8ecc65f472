package io.stoke.loader.sample;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.stoke.loader.sample.Sampler.PartitionTail;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Where one rank's loader is in its run, as Python's {@code DataLoader.state_dict()} saves it (the
 * same JSON, version {@value #VERSION}): after {@code batchesTaken} batches of {@code epoch}, with
 * the settings that fix the order. {@link ResumePlan} resumes from the states of one world on
 * another.
 *
 * <p>Versions: 1 (no {@code version} key) had {@code batch} for {@code _num_yielded} and no cuts;
 * 2 adds {@code version}, names the count as torchdata's {@code StatefulDataLoader} does
 * ({@code _num_yielded}: batches yielded of the epoch) and adds {@code epoch_cuts}, what earlier
 * worlds took of a resumed epoch. A later version reads every earlier one.
 *
 * @param epoch         the epoch being taken
 * @param batchesTaken  batches this rank took of it ({@code _num_yielded})
 * @param seed          the order's seed
 * @param shuffle       whether each epoch is a permutation
 * @param batchSize     samples per batch in that world
 * @param dropLast      whether each rank's last partial batch was dropped
 * @param rank          this rank
 * @param worldSize     the ranks of that world
 * @param datasetSize   samples in the dataset
 * @param shuffleWindow shards per shuffle window (0: global), or -1 where the state does not say
 * @param partitionTail how that world split an epoch that does not divide evenly ({@code shard_tail}
 *     in the JSON, the key Python's {@code state_dict()} has always written)
 * @param cuts          what worlds before that one took of {@code epoch}, oldest first (empty
 *     unless {@code epoch} was itself resumed on another world)
 * @param dataset       the dataset's {@code Dataset.fingerprint()}, or null where the state does
 *     not say
 * @param given         where the order was given from outside ({@link OrderFeed}, or a Python
 *     sampler's): the epoch's order as given ({@code given} in the JSON); null where it was this
 *     state's seed's
 */
public record LoaderState(
        long epoch,
        int batchesTaken,
        long seed,
        boolean shuffle,
        int batchSize,
        boolean dropLast,
        int rank,
        int worldSize,
        int datasetSize,
        int shuffleWindow,
        PartitionTail partitionTail,
        List<EpochCut> cuts,
        String dataset,
        Given given) {
    /** The version this class writes. */
    public static final int VERSION = 2;

    private static final JsonFactory JSON = new JsonFactory();

    /** {@link #given()}'s kind where a Java loader's order came through {@link OrderFeed}. */
    public static final String ORDER_FEED = "order_feed";

    /**
     * An order given from outside: the seed cannot draw it again, so a resumed run must be given the
     * same epoch again, and {@code order} is what it is checked against.
     *
     * @param kind  what gave it: {@link #ORDER_FEED}, or Python's {@code sampler} / {@code batch_sampler}
     * @param order the epoch's order as given, or null where it had not come when the state was taken
     */
    public record Given(String kind, OrderFeed.GivenEpoch order) {
        public Given {
            java.util.Objects.requireNonNull(kind, "kind");
        }
    }

    /** A state of the loader's own order (no {@link #given()}). */
    public LoaderState(
            long epoch,
            int batchesTaken,
            long seed,
            boolean shuffle,
            int batchSize,
            boolean dropLast,
            int rank,
            int worldSize,
            int datasetSize,
            int shuffleWindow,
            PartitionTail partitionTail,
            List<EpochCut> cuts,
            String dataset) {
        this(
                epoch,
                batchesTaken,
                seed,
                shuffle,
                batchSize,
                dropLast,
                rank,
                worldSize,
                datasetSize,
                shuffleWindow,
                partitionTail,
                cuts,
                dataset,
                null);
    }

    public LoaderState {
        if (epoch < 0 || batchesTaken < 0 || batchSize < 1 || worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("not a loader's state: epoch " + epoch + ", batches taken "
                    + batchesTaken + ", batch size " + batchSize + ", rank " + rank + " of " + worldSize);
        }
        if (datasetSize < 1 || partitionTail == null) {
            throw new IllegalArgumentException(
                    "not a loader's state: dataset size " + datasetSize + ", partition tail " + partitionTail);
        }
        cuts = List.copyOf(cuts);
    }

    /**
     * {@link #partitionTail()} under its old name.
     *
     * @deprecated "shard" means a tar shard only; use {@link #partitionTail()}.
     */
    @Deprecated(since = "0.2", forRemoval = true)
    @SuppressWarnings("removal")
    public Sampler.ShardTail shardTail() {
        return Sampler.ShardTail.valueOf(partitionTail.name());
    }

    /**
     * The state of a rank that has taken {@code batchesTaken} batches of {@code epoch} in {@code
     * sampler}'s order (whose shuffle window is {@code shuffleWindow}).
     */
    public static LoaderState of(Sampler sampler, int rank, int worldSize, long epoch, int batchesTaken) {
        return new LoaderState(
                epoch,
                batchesTaken,
                sampler.seed(),
                sampler.shuffled(),
                sampler.batchSize(),
                sampler.dropLast(),
                rank,
                worldSize,
                sampler.datasetSize(),
                sampler.shardWindow(),
                sampler.partitionTail(),
                epoch == sampler.resumedEpoch() ? sampler.cuts() : List.of(),
                null);
    }

    /** This state, saying which dataset it was taken over ({@code Dataset.fingerprint()}). */
    public LoaderState withDataset(String fingerprint) {
        return new LoaderState(
                epoch,
                batchesTaken,
                seed,
                shuffle,
                batchSize,
                dropLast,
                rank,
                worldSize,
                datasetSize,
                shuffleWindow,
                partitionTail,
                cuts,
                fingerprint,
                given);
    }

    /** This state, its epoch's order given from outside as {@code given} says. */
    public LoaderState withGiven(Given given) {
        return new LoaderState(
                epoch,
                batchesTaken,
                seed,
                shuffle,
                batchSize,
                dropLast,
                rank,
                worldSize,
                datasetSize,
                shuffleWindow,
                partitionTail,
                cuts,
                dataset,
                given);
    }

    /** This state as JSON, the keys of Python's {@code state_dict()}. */
    public String toJson() {
        StringWriter out = new StringWriter();
        try (JsonGenerator g = JSON.createGenerator(out)) {
            write(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    private void write(JsonGenerator g) throws IOException {
        g.writeStartObject();
        g.writeNumberField("version", VERSION);
        g.writeNumberField("epoch", epoch);
        g.writeNumberField("_num_yielded", batchesTaken);
        g.writeNumberField("seed", seed);
        g.writeBooleanField("shuffle", shuffle);
        g.writeNumberField("batch_size", batchSize);
        g.writeBooleanField("drop_last", dropLast);
        g.writeNumberField("rank", rank);
        g.writeNumberField("world_size", worldSize);
        g.writeNumberField("dataset_size", datasetSize);
        if (dataset != null) {
            g.writeStringField("dataset", dataset);
        }
        if (shuffleWindow >= 0) {
            g.writeNumberField("shuffle_window", shuffleWindow);
        } else {
            g.writeNullField("shuffle_window");
        }
        g.writeStringField("shard_tail", partitionTail.name().toLowerCase(Locale.ROOT));
        g.writeArrayFieldStart("epoch_cuts");
        for (EpochCut c : cuts) {
            g.writeStartObject();
            g.writeNumberField("world_size", c.worldSize());
            g.writeArrayFieldStart("taken");
            for (int r = 0; r < c.worldSize(); r++) {
                g.writeNumber(c.taken(r));
            }
            g.writeEndArray();
            g.writeEndObject();
        }
        g.writeEndArray();
        if (given != null) {
            g.writeObjectFieldStart("given");
            g.writeStringField("kind", given.kind());
            OrderFeed.GivenEpoch order = given.order();
            if (order == null) {
                g.writeNullField("order");
            } else {
                g.writeObjectFieldStart("order");
                g.writeArrayFieldStart("batch_sizes");
                for (int k = 0; k < order.batches(); k++) {
                    g.writeNumber(order.batchStarts()[k + 1] - order.batchStarts()[k]);
                }
                g.writeEndArray();
                g.writeArrayFieldStart("indices");
                for (int i : order.indices()) {
                    g.writeNumber(i);
                }
                g.writeEndArray();
                g.writeEndObject();
            }
            g.writeEndObject();
        }
        g.writeEndObject();
    }

    /**
     * The states in {@code json}: one state object, or an array of them (every rank's).
     *
     * @param name the file it came from, for errors
     * @throws IllegalArgumentException it is not that, or a state is of a later version
     */
    public static List<LoaderState> parse(String json, String name) {
        List<LoaderState> states = new ArrayList<>();
        try (JsonParser p = JSON.createParser(json)) {
            JsonToken t = p.nextToken();
            if (t == JsonToken.START_ARRAY) {
                while ((t = p.nextToken()) == JsonToken.START_OBJECT) {
                    states.add(read(p, name));
                }
                if (t != JsonToken.END_ARRAY) {
                    throw new IllegalArgumentException(name + ": a list of loader states holds " + t);
                }
            } else if (t == JsonToken.START_OBJECT) {
                states.add(read(p, name));
            } else {
                throw new IllegalArgumentException(name + ": not a loader state (a JSON object) or a list of them");
            }
        } catch (IOException e) {
            throw new IllegalArgumentException(name + ": not readable as a loader state: " + e.getMessage(), e);
        }
        if (states.isEmpty()) {
            throw new IllegalArgumentException(name + ": an empty list of loader states");
        }
        return states;
    }

    private static LoaderState read(JsonParser p, String name) throws IOException {
        long version = 1;
        Long epoch = null;
        Long taken = null;
        Long seed = null;
        Boolean shuffle = null;
        Long batchSize = null;
        boolean dropLast = false;
        long rank = 0;
        long worldSize = 1;
        Long datasetSize = null;
        long window = -1;
        PartitionTail tail = PartitionTail.PAD;
        List<EpochCut> cuts = new ArrayList<>();
        String dataset = null;
        Given given = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            switch (f) {
                case "version" -> version = integer(p, v, f, name);
                case "epoch" -> epoch = integer(p, v, f, name);
                case "_num_yielded", "batch" -> taken = integer(p, v, f, name);
                case "seed" -> seed = integer(p, v, f, name);
                case "shuffle" -> shuffle = bool(p, v, f, name);
                case "batch_size" -> batchSize = integer(p, v, f, name);
                case "drop_last" -> dropLast = bool(p, v, f, name);
                case "rank" -> rank = integer(p, v, f, name);
                case "world_size" -> worldSize = integer(p, v, f, name);
                case "dataset_size" -> datasetSize = integer(p, v, f, name);
                case "shuffle_window" -> window = v == JsonToken.VALUE_NULL ? -1 : integer(p, v, f, name);
                case "dataset" -> dataset = v == JsonToken.VALUE_STRING ? p.getText() : null;
                case "shard_tail", "partition_tail" ->
                    tail = PartitionTail.valueOf(p.getValueAsString("").toUpperCase(Locale.ROOT));
                case "epoch_cuts" -> {
                    if (v != JsonToken.START_ARRAY) {
                        throw new IllegalArgumentException(name + ": epoch_cuts is not a list");
                    }
                    while (p.nextToken() == JsonToken.START_OBJECT) {
                        cuts.add(cut(p, name));
                    }
                }
                case "given" -> given = v == JsonToken.START_OBJECT ? given(p, name) : null;
                default -> p.skipChildren();
            }
        }
        if (version > VERSION) {
            throw new IllegalArgumentException(name + ": a loader state of version " + version
                    + ", written by a later Stoke; this one reads versions 1 to " + VERSION);
        }
        if (epoch == null
                || taken == null
                || seed == null
                || shuffle == null
                || batchSize == null
                || datasetSize == null) {
            throw new IllegalArgumentException(name + ": a loader state needs epoch, _num_yielded (or batch), seed, "
                    + "shuffle, batch_size and dataset_size");
        }
        return new LoaderState(
                epoch,
                Math.toIntExact(taken),
                seed,
                shuffle,
                Math.toIntExact(batchSize),
                dropLast,
                Math.toIntExact(rank),
                Math.toIntExact(worldSize),
                Math.toIntExact(datasetSize),
                Math.toIntExact(window),
                tail,
                cuts,
                dataset,
                given == null || epoch == null || given.order() == null
                        ? given
                        : new Given(given.kind(), withEpoch(given.order(), epoch)));
    }

    /** A state's {@code given}: its kind and the epoch's order (Python's keys; the rest is Python's alone). */
    private static Given given(JsonParser p, String name) throws IOException {
        String kind = null;
        OrderFeed.GivenEpoch order = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            switch (f) {
                case "kind" -> kind = p.getValueAsString();
                case "order" -> {
                    if (v == JsonToken.START_OBJECT) {
                        order = order(p, name);
                    }
                }
                default -> p.skipChildren();
            }
        }
        if (kind == null) {
            throw new IllegalArgumentException(name + ": given has no kind");
        }
        return new Given(kind, order);
    }

    private static OrderFeed.GivenEpoch order(JsonParser p, String name) throws IOException {
        int[] sizes = null;
        int[] indices = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            switch (f) {
                case "batch_sizes" -> sizes = integers(p, v, f, name);
                case "indices" -> indices = integers(p, v, f, name);
                default -> p.skipChildren();
            }
        }
        if (sizes == null || indices == null) {
            throw new IllegalArgumentException(name + ": given's order needs batch_sizes and indices");
        }
        int[] starts = new int[sizes.length + 1];
        for (int k = 0; k < sizes.length; k++) {
            starts[k + 1] = starts[k] + sizes[k];
        }
        if (starts[sizes.length] != indices.length) {
            throw new IllegalArgumentException(name + ": given's order has batches of " + starts[sizes.length]
                    + " samples and " + indices.length + " indices");
        }
        return new OrderFeed.GivenEpoch(-1, indices, starts);
    }

    private static OrderFeed.GivenEpoch withEpoch(OrderFeed.GivenEpoch order, long epoch) {
        return new OrderFeed.GivenEpoch(epoch, order.indices(), order.batchStarts());
    }

    private static int[] integers(JsonParser p, JsonToken v, String field, String name) throws IOException {
        if (v != JsonToken.START_ARRAY) {
            throw new IllegalArgumentException(name + ": " + field + " is not a list");
        }
        List<Integer> out = new ArrayList<>();
        for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
            out.add(Math.toIntExact(integer(p, t, field, name)));
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * The cuts in {@code json}, a list as a state's {@code epoch_cuts} holds: {@code [{"world_size":
     * 4, "taken": [150, 150, 150, 150]}, ...]}.
     *
     * @param name where it came from, for errors
     */
    public static List<EpochCut> parseCuts(String json, String name) {
        List<EpochCut> cuts = new ArrayList<>();
        try (JsonParser p = JSON.createParser(json)) {
            if (p.nextToken() != JsonToken.START_ARRAY) {
                throw new IllegalArgumentException(name + ": not a list of epoch cuts");
            }
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.START_OBJECT) {
                cuts.add(cut(p, name));
            }
            if (t != JsonToken.END_ARRAY) {
                throw new IllegalArgumentException(name + ": a list of epoch cuts holds " + t);
            }
        } catch (IOException e) {
            throw new IllegalArgumentException(name + ": not readable as epoch cuts: " + e.getMessage(), e);
        }
        return cuts;
    }

    private static EpochCut cut(JsonParser p, String name) throws IOException {
        long world = -1;
        List<Integer> taken = new ArrayList<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            switch (f) {
                case "world_size" -> world = integer(p, v, f, name);
                case "taken" -> {
                    if (v != JsonToken.START_ARRAY) {
                        throw new IllegalArgumentException(name + ": an epoch cut's taken is not a list");
                    }
                    for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
                        taken.add(Math.toIntExact(integer(p, t, "taken", name)));
                    }
                }
                default -> p.skipChildren();
            }
        }
        return new EpochCut(
                Math.toIntExact(world),
                taken.stream().mapToInt(Integer::intValue).toArray());
    }

    private static long integer(JsonParser p, JsonToken v, String field, String name) throws IOException {
        if (v != JsonToken.VALUE_NUMBER_INT) {
            throw new IllegalArgumentException(name + ": " + field + " is not an integer");
        }
        return p.getLongValue();
    }

    private static boolean bool(JsonParser p, JsonToken v, String field, String name) {
        if (v != JsonToken.VALUE_TRUE && v != JsonToken.VALUE_FALSE) {
            throw new IllegalArgumentException(name + ": " + field + " is not true or false");
        }
        return v == JsonToken.VALUE_TRUE;
    }
}
