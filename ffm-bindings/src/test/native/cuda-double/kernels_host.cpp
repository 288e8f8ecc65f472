// The device kernels' own source (native/cuda/normalize.cu, resize.cu and ycc.cu), compiled for the host,
// so that the CUDA test double runs what a GPU would run rather than stand-ins written beside it:
// a fault in a kernel's indexing, rounding or table walk shows in the double's tests before any
// device time is spent. What it cannot show is anything of a GPU (the PTX, the memory model,
// speed): this is still not a GPU verification.
//
// Exact, not an approximation: the kernels use no shared memory, barriers or warp operations, so
// running the launch grid's threads one after another gives each thread's result as the GPU does.
// Floating point: __fdiv_rn and __fsub_rn are IEEE round-to-nearest operations, which the host's
// SSE float division and subtraction are, with contraction off (build.sh: -ffp-contract=off).
#include <cstddef>

#define STOKE_KERNELS_ON_HOST 1
#define __global__
#define __device__
#define __forceinline__ inline

namespace {
struct dim3_host {
    unsigned x, y, z;
};

// Where the running thread is in the launch: what CUDA's built-in variables give a kernel.
thread_local dim3_host blockIdx, threadIdx, blockDim, gridDim;

struct uchar4 {
    unsigned char x, y, z, w;
};

inline uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z, unsigned char w) {
    return uchar4{x, y, z, w};
}

inline float __fdiv_rn(float a, float b) {
    return a / b;
}

inline float __fsub_rn(float a, float b) {
    return a - b;
}
}  // namespace

#include "normalize.cu"
#include "resize.cu"
#include "ycc.cu"

namespace {
// Runs kernel(args...) on every thread of the blocks [z_from, z_to) x gridDim.y x gridDim.x.
template <typename Kernel>
void launch(dim3_host grid, dim3_host block, unsigned z_from, unsigned z_to, Kernel kernel) {
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = z_from; bz < z_to; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++)
                for (unsigned tz = 0; tz < block.z; tz++)
                    for (unsigned ty = 0; ty < block.y; ty++)
                        for (unsigned tx = 0; tx < block.x; tx++) {
                            blockIdx = {bx, by, bz};
                            threadIdx = {tx, ty, tz};
                            kernel();
                        }
}
}  // namespace

extern "C" {

// stoke_normalize_u8_nhwc_to_f32_nchw over the whole launch.
void stoke_host_normalize(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          const unsigned char *src, float *dst, unsigned pixels, unsigned hw, const float mean[3],
                          const float std[3]) {
    launch({gx, gy, gz}, {bx, by, bz}, 0, gz, [&] {
        stoke_normalize_u8_nhwc_to_f32_nchw(src, dst, pixels, hw, mean[0], mean[1], mean[2], std[0], std[1], std[2]);
    });
}

// stoke_resample_h_batch (vertical 0) or stoke_resample_v_batch (1) over the launch's blocks of
// job z only (blockIdx.z == z): the double checks each job's ranges first, and runs only those a
// GPU would not fault on.
void stoke_host_resample(int vertical, unsigned z, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, const void *jobs, const int *tables) {
    const stoke_resize_job *j = static_cast<const stoke_resize_job *>(jobs);
    launch({gx, gy, gz}, {bx, by, bz}, z, z + 1, [&] {
        if (vertical) {
            stoke_resample_v_batch(j, tables);
        } else {
            stoke_resample_h_batch(j, tables);
        }
    });
}

// stoke_ycc_rgb_batch over the launch's blocks of job z only, as stoke_host_resample (the double
// checks each job's ranges first).
void stoke_host_ycc(unsigned z, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                    const void *jobs) {
    const stoke_ycc_job *j = static_cast<const stoke_ycc_job *>(jobs);
    launch({gx, gy, gz}, {bx, by, bz}, z, z + 1, [&] { stoke_ycc_rgb_batch(j); });
}
}
