package io.stoke.cli;

import io.stoke.gpu.GpuDecodeOpening;
import io.stoke.loader.Loader;
import io.stoke.loader.Workers;
import io.stoke.loader.error.ErrorPolicy;
import io.stoke.loader.source.Dataset;
import io.stoke.loader.source.TableColumns;
import io.stoke.loader.transform.TransformSpec;
import io.stoke.serve.LoaderOption;
import io.stoke.serve.LoaderSettings;
import io.stoke.serve.LoaderSetup;
import io.stoke.serve.OptionTable;
import io.stoke.serve.OptionType;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The loader options of every command that drives a loader ({@code demo}, {@code bench},
 * {@code serve}, {@code tune}, {@code embed}, {@code spark-embed}), made from the options table
 * ({@link OptionTable}, docs/options.md): a command mixes this in ({@code @Mixin LoaderOptions}) and
 * {@link #install} gives it one picocli option per table entry, with the entry's flag, label, help,
 * default and checks, and the entry's deprecated spelling as a hidden option that still works and
 * says once that it is deprecated. The values land in a {@link LoaderSettings}; adding an option is an
 * entry in the table and its behaviour in {@link LoaderSetup}, and every command has it.
 */
@Command // what picocli asks of a mixin; its options are added by install
public final class LoaderOptions {
    /** What the DATA parameter of every command that reads a dataset with these options takes. */
    static final String DATA =
            "The dataset: an ImageFolder directory, a list file, WebDataset .tar shards (one, a brace"
                    + " pattern such as train-{000000..000127}.tar, or a folder of them), Parquet files (a .parquet file, a"
                    + " pattern or a folder of them), a Hugging Face datasets folder or .arrow file, or a Delta Lake or"
                    + " Apache Iceberg table's folder. Shards, Parquet files and tables may also be s3:// or http(s):// URLs.";

    /** The deprecated spellings said once in this process. */
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

    private final LoaderSettings settings;
    /** The names of the options this adds; null: all of them. */
    private final Set<String> only;

    private LoaderSetup setup;

    /** The shipped table's options (picocli makes the mixin this way). */
    public LoaderOptions() {
        this(OptionTable.shipped());
    }

    /** {@code table}'s options. */
    LoaderOptions(OptionTable table) {
        this(table, null);
    }

    /** {@code table}'s options called {@code only}, the rest left at their defaults (null: all). */
    LoaderOptions(OptionTable table, Set<String> only) {
        this.settings = LoaderSettings.defaults(table);
        this.only = only;
    }

    /** Adds the table's options to {@code command} where it mixes this class in; returns whether it did. */
    static boolean install(CommandSpec command) {
        for (CommandSpec mixin : command.mixins().values()) {
            if (mixin.userObject() instanceof LoaderOptions options) {
                options.addTo(command);
                return true;
            }
            if (mixin.userObject() instanceof ColumnOptions columns) {
                columns.options.addTo(command);
                return true;
            }
        }
        return false;
    }

    /** Closes what the setup of any mixin of {@code command} opened (the restart cache's filler). */
    static void closeSetups(CommandSpec command) {
        for (CommandSpec mixin : command.mixins().values()) {
            LoaderOptions options = mixin.userObject() instanceof LoaderOptions o
                    ? o
                    : mixin.userObject() instanceof ColumnOptions c ? c.options : null;
            if (options != null && options.setup != null) {
                options.setup.close();
            }
        }
    }

    /** Adds one option per table entry to {@code command}, and a hidden one per deprecated spelling. */
    void addTo(CommandSpec command) {
        for (LoaderOption o : settings.table().options()) {
            if (only != null && !only.contains(o.name())) {
                continue;
            }
            command.addOption(spec(o, o.cli(), false));
            if (o.deprecated() != null && o.deprecated().cli() != null) {
                command.addOption(spec(o, o.deprecated().cli(), true));
            }
        }
    }

    private OptionSpec spec(LoaderOption o, String flag, boolean deprecated) {
        boolean bool = o.type() == OptionType.BOOL;
        OptionSpec.Builder b = OptionSpec.builder(flag)
                .description(deprecated ? "Deprecated: use " + o.cli() + "." : help(o))
                .hidden(deprecated)
                .hasInitialValue(false)
                .getter(new CommandLine.Model.IGetter() {
                    @Override
                    @SuppressWarnings("unchecked")
                    public <T> T get() {
                        return (T) (bool ? settings.value(o.name()) : null);
                    }
                })
                .setter(new CommandLine.Model.ISetter() {
                    @Override
                    public <T> T set(T value) {
                        if (value != null) {
                            if (deprecated) {
                                deprecated(flag, o.cli());
                            }
                            settings.set(o.name(), value.toString());
                            setup = null;
                        }
                        return null;
                    }
                });
        if (bool) {
            b.type(boolean.class).arity("0").negatable(true);
        } else {
            b.type(String.class)
                    .paramLabel(o.label() == null ? "VALUE" : o.label())
                    .converters(text -> {
                        try {
                            o.parse(text);
                            return text;
                        } catch (IllegalArgumentException e) {
                            throw new CommandLine.TypeConversionException(e.getMessage());
                        }
                    });
            if (o.type() == OptionType.CHOICE) {
                b.completionCandidates(o.choices());
            }
        }
        return b.build();
    }

    /** Says on stderr, once in this process, that flag {@code old} is deprecated for {@code now}. */
    static void deprecated(String old, String now) {
        if (WARNED.add(old)) {
            DeprecatedSpelling.say(System.err, "stoke", old, now);
        }
    }

    /** The entry's help with picocli's variables filled in from the table. */
    private static String help(LoaderOption o) {
        return o.help()
                .replace("${DEFAULT-VALUE}", String.valueOf(o.defaultValue()))
                .replace("${COMPLETION-CANDIDATES}", String.join(", ", o.choices()));
    }

    /** The loader option {@code --decode}: where the JPEGs are decoded. */
    GpuDecodeOpening.Decode decode() {
        return GpuDecodeOpening.Decode.of(settings().text("decode"));
    }

    /** The loader option {@code --decode-cpu-batches}: the GPU decode stage's buffers for the CPU's batches. */
    int decodeCpuBatches() {
        return settings().integer("decode_cpu_batches");
    }

    /** The loader option {@code --decode-gpu-threads}: the threads each batch's nvJPEG call is split over. */
    int decodeGpuThreads() {
        return settings().integer("decode_gpu_threads");
    }

    /** The values parsed. */
    LoaderSettings settings() {
        return settings;
    }

    /** The mapping of the values onto the loader, holding the restart cache once opened. */
    LoaderSetup setup() {
        if (setup == null) {
            setup = new LoaderSetup(settings);
        }
        return setup;
    }

    /** The dataset {@code data} names, under these options (see {@link LoaderSetup#open}). */
    Dataset open(String data) {
        return setup().open(data);
    }

    /** A builder with every option applied; the caller may still set the ring. */
    Loader.Builder builder(Dataset dataset) {
        return setup().builder(dataset);
    }

    TransformSpec transform() {
        return setup().transform();
    }

    Workers workers() {
        return setup().workers();
    }

    ErrorPolicy policy() {
        return setup().policy();
    }

    TableColumns columns() {
        return setup().columns();
    }

    String dataSpec(String data) {
        return setup().dataSpec(data);
    }
}
