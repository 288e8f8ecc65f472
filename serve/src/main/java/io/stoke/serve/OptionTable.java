package io.stoke.serve;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Every loader option, declared once: {@code options.json} beside this class, which the command
 * line's options, {@link LoaderSettings}, {@link LoaderSetup} and the Python package's
 * {@code stoke.DataLoader} are built from or checked against (docs/options.md).
 *
 * @param about what the table is, for its reader
 * @param format the table's format, 1
 * @param options the options, in the order help lists them
 */
public record OptionTable(String about, int format, List<LoaderOption> options) {
    /** The table's resource, beside this class. */
    public static final String RESOURCE = "options.json";

    // An unknown field is a typo in the table, refused rather than ignored.
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .build();

    private static final class Shipped {
        static final OptionTable TABLE = read(OptionTable.class.getResourceAsStream(RESOURCE), RESOURCE);
    }

    public OptionTable {
        options = List.copyOf(options);
        if (format != 1) {
            throw new IllegalArgumentException("an options table of format " + format + ", where 1 is read");
        }
        Set<String> names = new HashSet<>();
        Set<String> flags = new HashSet<>();
        for (LoaderOption o : options) {
            if (!names.add(o.name())) {
                throw new IllegalArgumentException("the options table names " + o.name() + " twice");
            }
            for (String flag : o.flags()) {
                if (!flags.add(flag)) {
                    throw new IllegalArgumentException("the options table spells " + flag + " twice");
                }
            }
        }
    }

    /** The table Stoke ships, read once. */
    public static OptionTable shipped() {
        return Shipped.TABLE;
    }

    /**
     * The table in {@code in}; a table that does not read, or breaks a rule of the table's, is one
     * sentence naming {@code source}.
     */
    public static OptionTable read(InputStream in, String source) {
        if (in == null) {
            throw new IllegalStateException(source + " is missing from this build");
        }
        try (in) {
            return JSON.readValue(in, OptionTable.class);
        } catch (IOException e) {
            throw new UncheckedIOException(source + " is not an options table: " + e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + e.getMessage(), e);
        }
    }

    /** The option called {@code name} (its Python settings attribute). */
    public LoaderOption option(String name) {
        for (LoaderOption o : options) {
            if (o.name().equals(name)) {
                return o;
            }
        }
        throw new IllegalArgumentException("the options table has no option " + name);
    }

    /** The options by name, in the table's order. */
    public Map<String, LoaderOption> byName() {
        Map<String, LoaderOption> m = new LinkedHashMap<>();
        options.forEach(o -> m.put(o.name(), o));
        return m;
    }

    /** This table with {@code more} options after its own (a test's made-up option). */
    public OptionTable with(LoaderOption... more) {
        List<LoaderOption> all = new ArrayList<>(options);
        all.addAll(List.of(more));
        return new OptionTable(about, format, all);
    }
}
