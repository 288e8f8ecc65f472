/**
 * The {@code stoke} command line: an application, not a library, so it exports nothing. Its commands
 * are picocli's ({@code info.picocli}, stoke-picocli), which reads and sets their options' fields by
 * reflection: so the package is open to it.
 *
 * <p>{@code stoke spark-embed} names {@code io.stoke.spark}, which stays an automatic module on the
 * class path beside Spark's jars (docs/design.md#modules): this module reads the class path for it
 * ({@code --add-reads io.stoke.cli=ALL-UNNAMED}, cli/pom.xml), and checks that Spark is there before
 * it touches either.
 */
module io.stoke.cli {
    requires io.stoke.loader;
    requires io.stoke.serve;
    requires io.stoke.remote;
    requires io.stoke.parquet;
    requires io.stoke.pack;
    requires io.stoke.gpu;
    requires io.stoke.testdata;
    // Static: the wheel leaves stoke-embed and ONNX Runtime out, since the Python package never runs
    // `stoke embed` (clients/python/build_wheel.py); ./stoke's lib folder has them, and
    // --add-modules ALL-MODULE-PATH (cli/modules.options) resolves them.
    requires static io.stoke.embed;
    requires io.stoke.tune;
    requires io.stoke.lakehouse; // spark-embed's --output-table names its formats
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires java.desktop; // stoke tune's plot, written with java.awt and ImageIO

    opens io.stoke.cli to
            info.picocli, // the commands' options and parameters
            com.fasterxml.jackson.databind; // stoke bench's report, written by data binding
}
