/**
 * {@code stoke serve} as a library: the {@link io.stoke.serve.RingServer} that decodes a dataset into
 * a shared-memory ring for a consumer in another process, its side files (the sample list and the
 * auto-workers log, each defined by one class), and the loader options table ({@code options.json})
 * that the command line and the Python package read.
 */
module io.stoke.serve {
    requires transitive io.stoke.loader;
    requires io.stoke.ffm; // TurboJpeg.ensureLoaded, memfd_create
    requires io.stoke.gpu; // --decode gpu|auto: the GPU decode stage's batches copied into the ring
    requires java.management; // the stall report's thread states and stacks
    requires com.fasterxml.jackson.core;
    requires com.fasterxml.jackson.databind;

    exports io.stoke.serve;

    opens io.stoke.serve to
            com.fasterxml.jackson.databind; // the auto-workers log's Change records, written and read by data binding
}
