// The GPU decode's resize (io.stoke.gpu.DeviceResize): Stoke's two resample passes, PIL's
// antialiased filters in 22-bit fixed point, applied with the coefficients the CPU's Resampler
// computes (io.stoke.loader.resample.ResampleTables), so that from the same decoded pixels the
// device writes the CPU's bytes. Compiled into the same PTX as normalize.cu (stoke_kernels.cu).
//
// A batch is one launch per pass: blockIdx.z is the job (an image), x and y tile its output; a
// thread past its job's extent returns. Integer math only, the CPU's exactly: a sum starts at half
// an output step (1 << 21), adds pixel x weight, and is shifted down and clamped to 8 bits.

// One job, as DeviceResize lays it out (64 bytes; keep the two in step).
struct stoke_resize_job {
    unsigned long long src;  // first source pixel: interleaved RGB, 3 bytes a pixel (nvJPEG's RGBI)
    long long src_pitch;     // bytes from one source row to the next
    unsigned long long tmp;  // the intermediate: rows x cols RGBX pixels, 4 bytes each
    unsigned long long dst;  // the output: out_rows x cols RGB pixels, rows end to end
    int y_first;             // the first source row the horizontal pass reads
    int rows;                // source rows it reads (intermediate rows)
    int cols;                // output pixels a row
    int out_rows;            // output rows
    int h_taps, v_taps;      // weights per output pixel, per axis
    int tables;              // where this job's tables start in the table buffer, in ints:
                             // h bounds (2 cols), h weights (cols x h_taps), v bounds (2 out_rows),
                             // v weights (out_rows x v_taps)
    int unused;
};

__device__ __forceinline__ unsigned char stoke_clip8(int v) {
    int s = v >> 22;
    return (unsigned char) (s < 0 ? 0 : (s > 255 ? 255 : s));
}

// Horizontal pass: intermediate pixel (x, r) from source row y_first + r.
extern "C" __global__ void stoke_resample_h_batch(const stoke_resize_job* __restrict__ jobs,
                                                  const int* __restrict__ tables) {
    const stoke_resize_job j = jobs[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= j.cols || r >= j.rows) return;
    const int* t = tables + j.tables;
    int first = t[2 * x];
    int n = t[2 * x + 1];
    const int* w = t + 2 * j.cols + x * j.h_taps;
    const unsigned char* in = (const unsigned char*) j.src + (long long) (j.y_first + r) * j.src_pitch + 3 * first;
    int s0 = 1 << 21, s1 = 1 << 21, s2 = 1 << 21;
    for (int k = 0; k < n; k++) {
        int weight = w[k];
        s0 += in[3 * k] * weight;
        s1 += in[3 * k + 1] * weight;
        s2 += in[3 * k + 2] * weight;
    }
    uchar4 out = make_uchar4(stoke_clip8(s0), stoke_clip8(s1), stoke_clip8(s2), 0);
    ((uchar4*) j.tmp)[(size_t) r * j.cols + x] = out;
}

// Vertical pass: output pixel (x, y) from intermediate rows.
extern "C" __global__ void stoke_resample_v_batch(const stoke_resize_job* __restrict__ jobs,
                                                  const int* __restrict__ tables) {
    const stoke_resize_job j = jobs[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= j.cols || y >= j.out_rows) return;
    const int* t = tables + j.tables + 2 * j.cols + j.cols * j.h_taps;
    int first = t[2 * y] - j.y_first;
    int n = t[2 * y + 1];
    const int* w = t + 2 * j.out_rows + y * j.v_taps;
    const uchar4* tmp = (const uchar4*) j.tmp + (size_t) first * j.cols + x;
    int s0 = 1 << 21, s1 = 1 << 21, s2 = 1 << 21;
    for (int k = 0; k < n; k++) {
        uchar4 p = tmp[(size_t) k * j.cols];
        int weight = w[k];
        s0 += p.x * weight;
        s1 += p.y * weight;
        s2 += p.z * weight;
    }
    unsigned char* out = (unsigned char*) j.dst + 3 * ((size_t) y * j.cols + x);
    out[0] = stoke_clip8(s0);
    out[1] = stoke_clip8(s1);
    out[2] = stoke_clip8(s2);
}
