/**
 * Models fed from the ring: ONNX Runtime sessions whose input tensor is a batch's slot, and the
 * embeddings they give written as Parquet tables (through stoke-parquet's write support).
 */
module io.stoke.embed {
    requires transitive io.stoke.loader;
    requires transitive com.microsoft.onnxruntime;
    requires io.stoke.ffm; // ONNX Runtime's C API, for IO binding of device memory (BoundRun)
    requires transitive io.stoke.parquet; // EmbeddingTable.SCHEMA is a parquet-java MessageType
    requires java.management;
    requires jdk.management; // the process's CPU time, for the job's figures

    exports io.stoke.embed;
}
