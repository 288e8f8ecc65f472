/**
 * Stoke's 1:1 Java faces of C libraries (libjpeg-turbo, Stoke's pixel and image libraries, the CUDA
 * driver, nvJPEG, ONNX Runtime's C API, libc) through {@code java.lang.foreign}. Raw bindings with no policy: an application uses
 * the loader, the GPU stage or embed instead. The CUDA driver's faces ({@code io.stoke.ffm.cuda}) are
 * exported to everyone because the GPU stage's API hands out their handles ({@code CudaStream},
 * {@code CudaEvent}, {@code DeviceBuffer}) for a consumer to order its own work after a batch's
 * copy; the image and pixel libraries' faces only to Stoke's own modules.
 */
module io.stoke.ffm {
    exports io.stoke.ffm.cuda;
    exports io.stoke.ffm to
            io.stoke.ring,
            io.stoke.loader,
            io.stoke.remote,
            io.stoke.pack,
            io.stoke.gpu,
            io.stoke.testdata,
            io.stoke.embed,
            io.stoke.tune,
            io.stoke.spark,
            io.stoke.serve,
            io.stoke.cli,
            io.stoke.bench;
}
