/** Finds the batch size and workers that feed a step fastest (stoke tune). */
module io.stoke.tune {
    requires transitive io.stoke.loader;
    requires static transitive io.stoke.embed; // ModelStep takes an Embedder; a caller with its own Step needs neither
    requires static com.microsoft.onnxruntime;
    requires com.fasterxml.jackson.databind;
    requires jdk.management;

    exports io.stoke.tune;
}
