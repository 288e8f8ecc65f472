package io.stoke.serve;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One loader option, as the table declares it.
 *
 * @param name its name, which is also the Python settings attribute
 * @param type how its value is written and read
 * @param min the least value a number may take (null: none)
 * @param max the greatest value a number may take (null: none)
 * @param choices a {@link OptionType#CHOICE choice}'s words
 * @param count how many numbers {@link OptionType#FLOATS floats} take
 * @param defaultValue its default in the command line's syntax (null: none)
 * @param pythonDefault {@code stoke.DataLoader}'s default where it differs (the Java side only checks it parses)
 * @param cli its flag, {@code --batch-size}
 * @param label the value's name in help ({@code N}); null for a flag that takes none
 * @param python its {@code stoke.DataLoader} keyword (null: not one)
 * @param builder the {@code Loader.Builder} method that receives it (null: the server's own, or
 *     the dataset's)
 * @param deprecated the spellings it had, kept one release (null: none)
 * @param help its help, with picocli's {@code ${DEFAULT-VALUE}} and {@code ${COMPLETION-CANDIDATES}}
 */
public record LoaderOption(
        String name,
        OptionType type,
        Double min,
        Double max,
        List<String> choices,
        Integer count,
        String defaultValue,
        String pythonDefault,
        String cli,
        String label,
        String python,
        String builder,
        Deprecated deprecated,
        String help) {

    /** Old spellings of an option that still work, each saying once that it is deprecated. */
    public record Deprecated(String cli, String python) {}

    public LoaderOption {
        if (name == null || type == null || cli == null || help == null) {
            throw new IllegalArgumentException("an option lacks one of name, type, cli and help: " + name);
        }
        if (!cli.startsWith("--")) {
            throw new IllegalArgumentException("option " + name + "'s flag " + cli + " does not start with --");
        }
        if (type == OptionType.CHOICE && (choices == null || choices.isEmpty())) {
            throw new IllegalArgumentException("option " + name + " is a choice with no choices");
        }
        if (type == OptionType.FLOATS && (count == null || count < 1)) {
            throw new IllegalArgumentException("option " + name + " is floats with no count");
        }
        choices = choices == null ? List.of() : List.copyOf(choices);
        if (defaultValue == null && help.contains("${DEFAULT-VALUE}")) {
            throw new IllegalArgumentException("option " + name + "'s help shows a default it does not have");
        }
        if (defaultValue != null) {
            type.parse(flagless(name, type, min, max, choices, count, cli), defaultValue);
        }
        if (pythonDefault != null) {
            type.parse(flagless(name, type, min, max, choices, count, cli), pythonDefault);
        }
    }

    /** A copy that only {@link OptionType#parse} reads, to check the defaults while constructing. */
    private static LoaderOption flagless(
            String name, OptionType type, Double min, Double max, List<String> choices, Integer count, String cli) {
        return new LoaderOption(name, type, min, max, choices, count, null, null, cli, null, null, null, null, "");
    }

    /** Its flag, then its deprecated flag where it has one. */
    public List<String> flags() {
        List<String> flags = new ArrayList<>(List.of(cli));
        if (deprecated != null && deprecated.cli() != null) {
            flags.add(deprecated.cli());
        }
        return flags;
    }

    /** Its value in {@code text} (the command line's syntax); a bad one is one sentence naming the flag. */
    public Object parse(String text) {
        return type.parse(this, text);
    }

    /** Its default, parsed (null where it has none). */
    public Object parsedDefault() {
        return defaultValue == null ? null : parse(defaultValue);
    }

    @Override
    public String toString() {
        return cli + " (" + type.name().toLowerCase(Locale.ROOT) + ")";
    }
}
