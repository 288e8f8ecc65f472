/** The GPU stage: batches copied to the GPU on CUDA streams and normalized there; and the GPU check. */
module io.stoke.gpu {
    requires transitive io.stoke.loader;
    requires transitive io.stoke.ffm;
    requires io.stoke.ring;
    requires org.agrona;

    exports io.stoke.gpu;
}
