/**
 * Stoke's loader: datasets and their sources, the sampler, transforms, and the workers that decode
 * into the ring's slots; {@link io.stoke.loader.Loader} and {@link io.stoke.loader.Batch} are where an
 * application starts. The worker pipeline ({@code io.stoke.loader.work}) is Stoke's own.
 */
module io.stoke.loader {
    requires io.stoke.ffm;
    requires transitive io.stoke.ring; // Loader.Builder.ring, Batch.geometry
    requires transitive org.agrona; // IdleStrategy in Loader.Builder and RingConsumer
    requires com.fasterxml.jackson.core;
    requires org.apache.commons.compress;
    requires java.management; // the workers' CPU clocks

    uses io.stoke.loader.source.UrlDatasetProvider; // s3:// and http(s):// datasets (stoke-remote)
    uses io.stoke.loader.source.TableDatasetProvider; // Parquet datasets (stoke-parquet)

    exports io.stoke.loader;
    exports io.stoke.loader.autoworkers;
    exports io.stoke.loader.cache;
    // The decoders, the restart-marker copier and the worker's per-sample transform: pack re-encodes
    // with them, the CLI and the tests of remote and parquet ask whether copies can be made, the GPU
    // decode leaves to the transform what nvJPEG does not take.
    exports io.stoke.loader.decode to
            io.stoke.gpu,
            io.stoke.remote,
            io.stoke.parquet,
            io.stoke.pack,
            io.stoke.cli,
            io.stoke.bench;
    exports io.stoke.loader.error;
    exports io.stoke.loader.format;
    exports io.stoke.loader.fs;
    // Helpers (file safety, URL redaction, brace patterns, read limits, parallel scans, a stream over
    // a segment) that Stoke's own modules share; no user's API. io.stoke.serve: the serving library
    // (issue 46).
    exports io.stoke.loader.internal to
            io.stoke.remote,
            io.stoke.parquet,
            io.stoke.lakehouse,
            io.stoke.pack,
            io.stoke.embed,
            io.stoke.gpu,
            io.stoke.tune,
            io.stoke.spark,
            io.stoke.serve,
            io.stoke.cli;
    // PIL's resampling filter and its kernels: pack resizes with it, the benchmarks measure it, the
    // GPU decode applies its coefficients on the device.
    exports io.stoke.loader.resample to
            io.stoke.pack,
            io.stoke.gpu,
            io.stoke.bench;
    exports io.stoke.loader.sample;
    // The bounded cache of whole shards that remote's downloads and parquet's row groups extend.
    exports io.stoke.loader.shardcache to
            io.stoke.remote,
            io.stoke.parquet;
    exports io.stoke.loader.source;
    exports io.stoke.loader.transform;
    exports io.stoke.loader.work to
            io.stoke.gpu,
            io.stoke.embed,
            io.stoke.tune,
            io.stoke.spark,
            io.stoke.cli,
            io.stoke.bench;
}
