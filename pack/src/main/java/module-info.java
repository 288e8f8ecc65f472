/** {@code stoke pack}: a dataset re-encoded into WebDataset tar shards with a manifest. */
module io.stoke.pack {
    requires transitive io.stoke.loader;
    requires io.stoke.ffm;
    requires com.fasterxml.jackson.core;
    requires com.fasterxml.jackson.databind;
    requires org.apache.commons.compress;

    exports io.stoke.pack;
}
