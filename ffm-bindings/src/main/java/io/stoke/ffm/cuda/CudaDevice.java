package io.stoke.ffm.cuda;

/**
 * One CUDA device as the driver describes it.
 *
 * @param ordinal         the index passed to {@code cuDeviceGet}
 * @param handle          the {@code CUdevice}
 * @param name            e.g. {@code "NVIDIA H100 80GB HBM3"}
 * @param totalMemory     bytes of device memory
 * @param pciBusId        {@code domain:bus:device.function}
 * @param major           compute capability, major
 * @param minor           compute capability, minor
 * @param multiprocessors number of SMs
 * @param copyEngines     asynchronous copy engines (2 or more: copies both ways overlap compute)
 */
public record CudaDevice(
        int ordinal,
        int handle,
        String name,
        long totalMemory,
        String pciBusId,
        int major,
        int minor,
        int multiprocessors,
        int copyEngines) {
    /** One line: name, memory, compute capability, bus id. */
    public String describe() {
        return String.format(
                "#%d %s, %.1f GiB, compute %d.%d, %d SMs, %d copy engine(s), PCI %s",
                ordinal, name, totalMemory / (double) (1L << 30), major, minor, multiprocessors, copyEngines, pciBusId);
    }
}
