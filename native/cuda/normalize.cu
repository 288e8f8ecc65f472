// Stoke's device kernels, loaded at run time from PTX (gpu/src/main/resources/io/stoke/gpu/stoke_kernels.ptx).
// Regenerate the PTX with native/cuda/gen-ptx.sh; a test fails when the committed PTX differs.
//
// extern "C": the driver looks kernels up by their unmangled names.

// uint8 NHWC (what the decoder writes) -> float32 NCHW, (x / 255 - mean[c]) / std[c].
//
// The math is written with explicit round-to-nearest intrinsics so that it stays exactly the CPU
// reference's (Java float arithmetic: each step rounded, no fused multiply-add), even if someone
// builds with --use_fast_math: __fdiv_rn is a correctly rounded division, __fsub_rn a rounded
// subtraction that the compiler may not contract into an FMA.
//
// One thread per pixel, grid-stride: reads 3 consecutive bytes, writes 3 coalesced planes.
extern "C" __global__ void stoke_normalize_u8_nhwc_to_f32_nchw(
        const unsigned char* __restrict__ src, float* __restrict__ dst,
        unsigned int pixels, unsigned int hw,
        float mean0, float mean1, float mean2, float std0, float std1, float std2) {
    for (unsigned int p = blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += gridDim.x * blockDim.x) {
        unsigned int sample = p / hw;
        unsigned int q = p - sample * hw;
        const unsigned char* in = src + (size_t) p * 3;
        float* out = dst + (size_t) sample * 3 * hw + q;
        out[0] = __fdiv_rn(__fsub_rn(__fdiv_rn((float) in[0], 255.0f), mean0), std0);
        out[hw] = __fdiv_rn(__fsub_rn(__fdiv_rn((float) in[1], 255.0f), mean1), std1);
        out[2 * (size_t) hw] = __fdiv_rn(__fsub_rn(__fdiv_rn((float) in[2], 255.0f), mean2), std2);
    }
}

// Simulated compute for `stoke gpu-check`: one thread busy-waits on the global timer for `nanos`
// nanoseconds, standing in for a training step that the copies should overlap with. PTX assembly:
// left out where the CUDA test double compiles these kernels for the host (it sleeps instead).
#ifndef STOKE_KERNELS_ON_HOST
extern "C" __global__ void stoke_spin(unsigned long long nanos) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < nanos);
}
#endif
