/**
 * The Arrow IPC stream files that a Hugging Face {@code datasets.Dataset} keeps (its cache files,
 * {@code save_to_disk}'s shards) read in place as datasets: each file is mapped once, its record
 * batches' metadata read with Apache Arrow Java, and each row's image is a place in the mapping that a
 * worker decodes from, with no copy.
 */
module io.stoke.arrow {
    requires transitive io.stoke.loader;
    requires org.apache.arrow.vector; // MessageSerializer: the IPC framing; the schema's types and layouts
    requires org.apache.arrow.format; // the flatbuffer Message, RecordBatch, Buffer and FieldNode
    requires flatbuffers.java;
    requires com.fasterxml.jackson.core; // the arrow: spec and save_to_disk's state.json

    provides io.stoke.loader.source.TableDatasetProvider with
            io.stoke.arrow.ArrowDatasets;

    exports io.stoke.arrow;
}
