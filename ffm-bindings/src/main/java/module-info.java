/**
 * Stoke's 1:1 Java faces of C libraries (libjpeg-turbo, Stoke's pixel and image libraries, the CUDA
 * driver, libc) through {@code java.lang.foreign}. Raw bindings with no policy: an application uses
 * the loader, the GPU stage or embed instead. Exported whole because the GPU stage's API hands out
 * its CUDA handles ({@code CudaStream}, {@code CudaEvent}, {@code DeviceBuffer}) for a consumer to
 * order its own work after a batch's copy.
 */
module io.stoke.ffm {
    exports io.stoke.ffm;
}
