// The GPU decode's colour step (io.stoke.gpu.PlanesToRgb): nvJPEG's planar YCbCr (NVJPEG_OUTPUT_YUV,
// each component at its own subsampled size) to interleaved RGB, upsampled and converted exactly as
// libjpeg-turbo does by default, which is what Stoke's CPU path, PIL and torchvision decode with:
// jdsample.c's "fancy" (triangle) upsampling of 2:1 components, jdcolor.c's fixed-point YCbCr->RGB.
// nvJPEG's own RGB replicates each chroma sample instead, which differs from the CPU's pixels by up
// to 62 levels at colour edges (docs/benchmarks/results-gpu-decode, run-2's upsampling-diff).
//
// libjpeg-turbo, per component whose samples are h_in x v_in of the image's h_max x v_max:
//   2:1 across, 1:1 down  (4:2:2): h2v1_fancy_upsample where the component is over 2 samples wide,
//                                  else h2v1_upsample (replication);
//   1:1 across, 2:1 down  (4:4:0): h1v2_fancy_upsample (rounding up from the row below, down from
//                                  the row above, as h2v1 does across);
//   2:1 across, 2:1 down  (4:2:0): h2v2_fancy_upsample where over 2 samples wide, else replication;
//   other integral ratios (4:1:1, 4:1:0): int_upsample, replication;
// with the row above the first and below the last being that row itself (jdmainct.c's context
// rows) and the columns' ends special-cased (written here as a clamp, which gives the same values).
// Each output pixel depends only on its neighbours' samples, so one thread per pixel computes it.
//
// A batch is one launch: blockIdx.z is the job (an image), x and y tile its output; a thread past
// its job's extent returns. Integer math only.

// One job, as PlanesToRgb lays it out (64 bytes; keep the two in step).
struct stoke_ycc_job {
    unsigned long long y;   // luma plane
    unsigned long long cb;  // chroma planes (unread where h_factor is 0: a grayscale image)
    unsigned long long cr;
    unsigned long long dst; // interleaved RGB, width x 3 bytes a row, rows end to end
    int y_pitch;            // bytes from one luma row to the next
    int c_pitch;            // the same for each chroma plane
    int width, height;      // the image, and the output
    int c_width, c_height;  // the chroma planes' samples (libjpeg's downsampled_width and _height)
    int h_factor;           // luma samples per chroma sample across (1, 2, 4), 0 for grayscale
    int v_factor;           // and down (1, 2)
};

__device__ __forceinline__ int stoke_clamp_index(int v, int last) {
    return v < 0 ? 0 : (v > last ? last : v);
}

// Component sample (x, y) of the image, upsampled from its plane as libjpeg-turbo does.
__device__ __forceinline__ int stoke_upsample(const unsigned char* __restrict__ p, int pitch, int cw, int ch,
                                              int hf, int vf, int x, int y) {
    if (hf == 1 && vf == 1) {
        return p[(long long) y * pitch + x];
    }
    if (hf == 2 && vf == 1) {
        int c = x >> 1;
        const unsigned char* row = p + (long long) y * pitch;
        if (cw <= 2) {
            return row[c];
        }
        int near3 = row[c] * 3;
        return (x & 1) ? (near3 + row[stoke_clamp_index(c + 1, cw - 1)] + 2) >> 2
                       : (near3 + row[stoke_clamp_index(c - 1, cw - 1)] + 1) >> 2;
    }
    if (hf == 1 && vf == 2) {
        int r = y >> 1;
        int far = stoke_clamp_index((y & 1) ? r + 1 : r - 1, ch - 1);
        return (p[(long long) r * pitch + x] * 3 + p[(long long) far * pitch + x] + ((y & 1) ? 2 : 1)) >> 2;
    }
    if (hf == 2 && vf == 2) {
        int r = y >> 1;
        int c = x >> 1;
        if (cw <= 2) {
            return p[(long long) r * pitch + c];
        }
        const unsigned char* nearRow = p + (long long) r * pitch;
        const unsigned char* farRow = p + (long long) stoke_clamp_index((y & 1) ? r + 1 : r - 1, ch - 1) * pitch;
        int other = stoke_clamp_index((x & 1) ? c + 1 : c - 1, cw - 1);
        int this_sum = nearRow[c] * 3 + farRow[c];
        int other_sum = nearRow[other] * 3 + farRow[other];
        return (x & 1) ? (this_sum * 3 + other_sum + 7) >> 4 : (this_sum * 3 + other_sum + 8) >> 4;
    }
    return p[(long long) (y / vf) * pitch + x / hf];
}

__device__ __forceinline__ unsigned char stoke_range_limit(int v) {
    return (unsigned char) (v < 0 ? 0 : (v > 255 ? 255 : v));
}

extern "C" __global__ void stoke_ycc_rgb_batch(const stoke_ycc_job* __restrict__ jobs) {
    const stoke_ycc_job j = jobs[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= j.width || y >= j.height) return;
    int luma = ((const unsigned char*) j.y)[(long long) y * j.y_pitch + x];
    unsigned char* out = (unsigned char*) j.dst + 3 * ((long long) y * j.width + x);
    if (j.h_factor == 0) {
        out[0] = out[1] = out[2] = (unsigned char) luma;
        return;
    }
    // jdcolor.c's tables, computed: SCALEBITS 16, FIX(1.40200) 91881, FIX(1.77200) 116130,
    // FIX(0.71414) 46802, FIX(0.34414) 22554, ONE_HALF 32768; >> is arithmetic, as RIGHT_SHIFT.
    int cb = stoke_upsample((const unsigned char*) j.cb, j.c_pitch, j.c_width, j.c_height, j.h_factor, j.v_factor,
                            x, y) - 128;
    int cr = stoke_upsample((const unsigned char*) j.cr, j.c_pitch, j.c_width, j.c_height, j.h_factor, j.v_factor,
                            x, y) - 128;
    out[0] = stoke_range_limit(luma + ((91881 * cr + 32768) >> 16));
    out[1] = stoke_range_limit(luma + ((-22554 * cb + 32768 - 46802 * cr) >> 16));
    out[2] = stoke_range_limit(luma + ((116130 * cb + 32768) >> 16));
}
