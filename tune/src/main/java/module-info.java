/**
 * The offline search for the batch size and workers that feed a training or inference step fastest:
 * a cost model over measured decode and step rates, checked by running its best predictions.
 */
module io.stoke.tune {
    requires transitive io.stoke.loader;
    // ModelStep times an ONNX model; a caller with its own Step needs neither embed nor ONNX Runtime.
    requires static transitive io.stoke.embed; // ModelStep takes an Embedder
    requires com.fasterxml.jackson.databind;
    requires java.management;
    requires jdk.management; // the machine's load while it measures

    exports io.stoke.tune;

    opens io.stoke.tune to
            com.fasterxml.jackson.databind; // tune.json's records, written and read by data binding
}
