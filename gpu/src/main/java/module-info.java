/**
 * The GPU stages: batches copied to the GPU on CUDA streams and normalized there, or JPEGs decoded
 * there by nvJPEG (experimental); and the GPU check.
 */
module io.stoke.gpu {
    requires transitive io.stoke.loader;
    requires transitive io.stoke.ffm;
    requires io.stoke.ring;
    requires org.agrona;
    requires java.management; // the GPU decode's host CPU time per batch

    exports io.stoke.gpu;
}
