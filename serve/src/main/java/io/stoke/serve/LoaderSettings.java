package io.stoke.serve;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * A value for every option of an {@link OptionTable}: its default until {@link #set set}, each read
 * by its type. What a command line or a caller parses into, and what {@link LoaderSetup} builds a
 * loader from. Not thread-safe: filled once, then read.
 */
public final class LoaderSettings {
    private final OptionTable table;
    private final Map<String, LoaderOption> options;
    private final Map<String, Object> values = new HashMap<>();
    private final Set<String> given = new HashSet<>();

    private LoaderSettings(OptionTable table) {
        this.table = table;
        this.options = table.byName();
        for (LoaderOption o : table.options()) {
            values.put(o.name(), o.parsedDefault());
        }
    }

    /** Every option of the shipped table at its default. */
    public static LoaderSettings defaults() {
        return defaults(OptionTable.shipped());
    }

    /** Every option of {@code table} at its default. */
    public static LoaderSettings defaults(OptionTable table) {
        return new LoaderSettings(table);
    }

    /** The table these settings hold a value of each option of. */
    public OptionTable table() {
        return table;
    }

    /**
     * Sets option {@code name} to {@code text}, read by its type (the command line's syntax); a bad
     * value is one sentence naming the flag.
     */
    public LoaderSettings set(String name, String text) {
        LoaderOption o = option(name);
        values.put(name, o.parse(text));
        given.add(name);
        return this;
    }

    /** Whether option {@code name} was {@link #set}, rather than left at its default. */
    public boolean given(String name) {
        option(name);
        return given.contains(name);
    }

    /** Option {@code name}'s value: its type's Java value, or null where it has none. */
    public Object value(String name) {
        option(name);
        return values.get(name);
    }

    /** An int option's value. */
    public int integer(String name) {
        return (Integer) typed(name, OptionType.INT);
    }

    /** An int option's value, null where it has none (no default). */
    public Integer optionalInteger(String name) {
        return (Integer) typedOrNull(name, OptionType.INT);
    }

    /** A long option's value, null where it has none (no default). */
    public Long optionalLong(String name) {
        return (Long) typedOrNull(name, OptionType.LONG);
    }

    /** A long option's value. */
    public long longValue(String name) {
        return (Long) typed(name, OptionType.LONG);
    }

    /** A float option's value. */
    public double decimal(String name) {
        return (Double) typed(name, OptionType.FLOAT);
    }

    /** A bool option's value. */
    public boolean flag(String name) {
        return (Boolean) typed(name, OptionType.BOOL);
    }

    /** A string, choice, workers or json option's value (null where it has none). */
    public String text(String name) {
        LoaderOption o = option(name);
        if (o.type() != OptionType.STRING
                && o.type() != OptionType.CHOICE
                && o.type() != OptionType.WORKERS
                && o.type() != OptionType.JSON) {
            throw new IllegalStateException(o + " is not text");
        }
        return (String) values.get(name);
    }

    /** A path option's value (null where it has none). */
    public Path path(String name) {
        return (Path) typedOrNull(name, OptionType.PATH);
    }

    /** A size option's value, in bytes. */
    public long bytes(String name) {
        return (Long) typed(name, OptionType.SIZE);
    }

    /** A floats option's values (a copy). */
    public double[] numbers(String name) {
        return ((double[]) typed(name, OptionType.FLOATS)).clone();
    }

    private Object typed(String name, OptionType type) {
        Object v = typedOrNull(name, type);
        if (v == null) {
            throw new IllegalStateException(option(name) + " has no value");
        }
        return v;
    }

    private Object typedOrNull(String name, OptionType type) {
        LoaderOption o = option(name);
        if (o.type() != type) {
            throw new IllegalStateException(o + " is read as " + type);
        }
        return values.get(name);
    }

    private LoaderOption option(String name) {
        LoaderOption o = options.get(name);
        if (o == null) {
            throw new IllegalArgumentException("the options table has no option " + name);
        }
        return o;
    }
}
