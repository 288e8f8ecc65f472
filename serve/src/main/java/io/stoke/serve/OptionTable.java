package io.stoke.serve;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
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

    // Read with jackson-core's streaming parser, not data binding: every stoke command that drives a
    // loader reads the table at start, and binding records cost ~70 ms there even from the AOT cache
    // (measured with `stoke bench --help`, docs/benchmarks/results-house-46).
    private static final JsonFactory JSON = new JsonFactory();

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
        try (in;
                JsonParser p = JSON.createParser(in)) {
            expect(p, p.nextToken(), JsonToken.START_OBJECT, "the table");
            String about = null;
            int format = -1;
            List<LoaderOption> options = new ArrayList<>();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                switch (field) {
                    case "about" -> about = p.getValueAsString();
                    case "format" -> format = p.getValueAsInt(-1);
                    case "options" -> {
                        expect(p, value, JsonToken.START_ARRAY, "options");
                        while (p.nextToken() == JsonToken.START_OBJECT) {
                            options.add(option(p));
                        }
                    }
                    default -> throw unknown(p, field);
                }
            }
            return new OptionTable(about, format, options);
        } catch (IOException e) {
            throw new UncheckedIOException(source + " is not an options table: " + e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + e.getMessage(), e);
        }
    }

    /** One entry, the parser on its START_OBJECT; an unknown field is a typo, refused rather than ignored. */
    private static LoaderOption option(JsonParser p) throws IOException {
        String name = null, type = null, defaultValue = null, pythonDefault = null, cli = null, label = null;
        String python = null, builder = null, help = null;
        Double min = null, max = null;
        Integer count = null;
        List<String> choices = null;
        LoaderOption.Deprecated deprecated = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken value = p.nextToken();
            boolean none = value == JsonToken.VALUE_NULL;
            switch (field) {
                case "name" -> name = p.getValueAsString();
                case "type" -> type = p.getValueAsString();
                case "min" -> min = none ? null : p.getValueAsDouble();
                case "max" -> max = none ? null : p.getValueAsDouble();
                case "count" -> count = none ? null : p.getValueAsInt();
                case "default" -> defaultValue = p.getValueAsString();
                case "python_default" -> pythonDefault = p.getValueAsString();
                case "cli" -> cli = p.getValueAsString();
                case "label" -> label = p.getValueAsString();
                case "python" -> python = p.getValueAsString();
                case "builder" -> builder = p.getValueAsString();
                case "help" -> help = p.getValueAsString();
                case "choices" -> {
                    if (!none) {
                        expect(p, value, JsonToken.START_ARRAY, "choices");
                        choices = new ArrayList<>();
                        while (p.nextToken() != JsonToken.END_ARRAY) {
                            choices.add(p.getValueAsString());
                        }
                    }
                }
                case "deprecated" -> {
                    if (!none) {
                        expect(p, value, JsonToken.START_OBJECT, "deprecated");
                        String oldCli = null, oldPython = null;
                        while (p.nextToken() == JsonToken.FIELD_NAME) {
                            String f = p.currentName();
                            p.nextToken();
                            switch (f) {
                                case "cli" -> oldCli = p.getValueAsString();
                                case "python" -> oldPython = p.getValueAsString();
                                default -> throw unknown(p, "deprecated." + f);
                            }
                        }
                        deprecated = new LoaderOption.Deprecated(oldCli, oldPython);
                    }
                }
                default -> throw unknown(p, field);
            }
        }
        return new LoaderOption(
                name,
                type == null ? null : OptionType.of(type),
                min,
                max,
                choices,
                count,
                defaultValue,
                pythonDefault,
                cli,
                label,
                python,
                builder,
                deprecated,
                help);
    }

    private static void expect(JsonParser p, JsonToken found, JsonToken wanted, String what) {
        if (found != wanted) {
            throw new IllegalArgumentException(
                    what + " must be " + wanted.asString() + ", not " + found + " (at " + p.currentLocation() + ")");
        }
    }

    private static IllegalArgumentException unknown(JsonParser p, String field) {
        return new IllegalArgumentException(
                "unknown field \"" + field + "\" (at " + p.currentLocation().offsetDescription() + ")");
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
