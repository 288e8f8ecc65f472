package io.stoke.cli;

import picocli.CommandLine.Command;

/**
 * {@code stoke index}, {@link CatalogCommand}'s old name, kept one release and left out of the
 * help: "index" means only a sample's position now. It does what {@code stoke catalog} does and
 * says once that it is deprecated.
 */
@Command(
        name = "index",
        hidden = true,
        mixinStandardHelpOptions = true,
        description = "Deprecated, gone in the next release: stoke catalog's old name.")
final class IndexCommand extends CatalogCommand {
    @Override
    public Integer call() {
        DeprecatedSpelling.say(
                System.err, "stoke index", "stoke index", "stoke catalog (index.json is the shard catalog)");
        return super.call();
    }
}
