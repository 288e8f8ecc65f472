package io.stoke.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;

/**
 * How an option's value is written (the command line's syntax, which the table's defaults use too)
 * and what it reads as. Each refusal is one sentence naming the flag.
 */
public enum OptionType {
    /** An {@link Integer}, within the option's min and max. */
    INT {
        @Override
        Object read(LoaderOption o, String text) {
            return (int) bounded(o, text, integral(o, text, Integer.MIN_VALUE, Integer.MAX_VALUE));
        }
    },
    /** A {@link Long}, within the option's min and max. */
    LONG {
        @Override
        Object read(LoaderOption o, String text) {
            return bounded(o, text, integral(o, text, Long.MIN_VALUE, Long.MAX_VALUE));
        }
    },
    /** A finite {@link Double}, within the option's min and max. */
    FLOAT {
        @Override
        Object read(LoaderOption o, String text) {
            double v = decimal(o, text, text);
            if ((o.min() != null && v < o.min()) || (o.max() != null && v > o.max())) {
                throw refused(o, text, "a number" + range(o));
            }
            return v;
        }
    },
    /** A {@link Boolean}: true or false (a flag on the command line, {@code --[no-]shuffle}). */
    BOOL {
        @Override
        Object read(LoaderOption o, String text) {
            return switch (text.strip().toLowerCase(Locale.ROOT)) {
                case "true" -> true;
                case "false" -> false;
                default -> throw refused(o, text, "true or false");
            };
        }
    },
    /** A {@link String}, as written. */
    STRING {
        @Override
        Object read(LoaderOption o, String text) {
            return text;
        }
    },
    /** One of the option's choices, a {@link String}, in any case. */
    CHOICE {
        @Override
        Object read(LoaderOption o, String text) {
            for (String c : o.choices()) {
                if (c.equalsIgnoreCase(text.strip())) {
                    return c;
                }
            }
            throw refused(o, text, "one of " + String.join(", ", o.choices()));
        }
    },
    /** A {@link Path}. */
    PATH {
        @Override
        Object read(LoaderOption o, String text) {
            if (text.isEmpty()) {
                throw refused(o, text, "a path");
            }
            return Path.of(text);
        }
    },
    /** Bytes as a {@link Long}: {@code 1048576}, {@code 64M}, {@code 4G} ({@link ByteSize}). */
    SIZE {
        @Override
        Object read(LoaderOption o, String text) {
            try {
                return ByteSize.parse(text);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(o.cli() + ": " + e.getMessage());
            }
        }
    },
    /** The option's count of finite numbers, comma-separated, as a {@code double[]}. */
    FLOATS {
        @Override
        Object read(LoaderOption o, String text) {
            String[] parts = text.split(",", -1);
            if (parts.length != o.count()) {
                throw refused(o, text, o.count() + " numbers separated by commas");
            }
            return Arrays.stream(parts).mapToDouble(p -> decimal(o, p, text)).toArray();
        }
    },
    /** {@code auto} or a positive number of workers, as a {@link String}. */
    WORKERS {
        @Override
        Object read(LoaderOption o, String text) {
            String t = text.strip().toLowerCase(Locale.ROOT);
            if (!t.equals("auto")) {
                try {
                    if (Integer.parseInt(t) >= 1) {
                        return t;
                    }
                } catch (NumberFormatException e) {
                    // refused below
                }
                throw refused(o, text, "a positive number or auto");
            }
            return t;
        }
    },
    /** JSON text, checked to parse, as a {@link String}. */
    JSON {
        @Override
        Object read(LoaderOption o, String text) {
            try {
                JsonReader.MAPPER.readTree(text);
            } catch (JsonProcessingException e) {
                throw refused(o, text, "JSON (" + e.getOriginalMessage() + ")");
            }
            return text;
        }
    };

    /** Made at the first {@code json} value only: an ObjectMapper costs every command's start otherwise. */
    private static final class JsonReader {
        static final ObjectMapper MAPPER = new ObjectMapper();
    }

    /** The type the table spells {@code name}. */
    public static OptionType of(String name) {
        for (OptionType t : values()) {
            if (t.name().equalsIgnoreCase(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("no option type " + name + " (one of "
                + Arrays.toString(values()).toLowerCase(Locale.ROOT) + ")");
    }

    /** {@code text} read as option {@code o}'s value; a bad value is one sentence naming its flag. */
    public Object parse(LoaderOption o, String text) {
        if (text == null) {
            throw new IllegalArgumentException(o.cli() + " needs a value");
        }
        return read(o, text);
    }

    abstract Object read(LoaderOption o, String text);

    private static long integral(LoaderOption o, String text, long least, long most) {
        try {
            long v = Long.parseLong(text.strip());
            if (v < least || v > most) {
                throw new NumberFormatException();
            }
            return v;
        } catch (NumberFormatException e) {
            throw refused(o, text, "a whole number" + range(o));
        }
    }

    private static long bounded(LoaderOption o, String text, long v) {
        if ((o.min() != null && v < o.min()) || (o.max() != null && v > o.max())) {
            throw refused(o, text, "a whole number" + range(o));
        }
        return v;
    }

    private static double decimal(LoaderOption o, String part, String text) {
        try {
            double v = Double.parseDouble(part.strip());
            if (Double.isFinite(v)) {
                return v;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw refused(o, text, o.type() == FLOATS ? o.count() + " numbers separated by commas" : "a number");
    }

    private static String range(LoaderOption o) {
        String min = o.min() == null ? null : number(o.min());
        String max = o.max() == null ? null : number(o.max());
        if (min != null && max != null) {
            return " from " + min + " to " + max;
        }
        return min != null ? " of at least " + min : max != null ? " of at most " + max : "";
    }

    private static String number(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    private static IllegalArgumentException refused(LoaderOption o, String text, String what) {
        return new IllegalArgumentException(o.cli() + " takes " + what + ", not '" + text + "'");
    }
}
