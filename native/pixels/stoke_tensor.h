/*
 * stoke_tensor.h: torchvision's tensor kernels of the auto-augment ops (v1's
 * transforms/_functional_tensor.py, v2's transforms/v2/functional/_color.py and _geometry.py) on
 * a uint8 RGB image, as AugMix runs them: the image is a uint8 tensor, each op computes in
 * float32 and casts back, truncating (the blends) or rounding half to even (convolution, grid
 * sampling). They differ from PIL's (stoke_augment.h) in that rounding and in their resampling.
 * Part of libstoke_augment.so.
 *
 * Images are RGB, 3 bytes a pixel, rows end to end. The caller computes what torchvision computes
 * once per image in Python or in a reduction (the lookup tables of Posterize, Solarize,
 * AutoContrast and Equalize, the mean grey of Contrast, the affine matrix) and checks every extent
 * before a call: these functions trust their arguments, keep no state and allocate nothing.
 */
#ifndef STOKE_TENSOR_H
#define STOKE_TENSOR_H

#include <stdint.h>

/* What each pixel is blended with (the second image of torchvision's _blend). */
#define STOKE_TENSOR_BLACK 0 /* Brightness: zeros */
#define STOKE_TENSOR_GRAY 1  /* Color: rgb_to_grayscale of the pixel */
#define STOKE_TENSOR_FLAT 2  /* Contrast: `value`, the mean grey */

/* Interpolation, as grid_sample names it. */
#define STOKE_TENSOR_NEAREST 0
#define STOKE_TENSOR_BILINEAR 1

/*
 * _blend(img, degenerate, ratio) over `pixels` pixels of src into dst (which may be src):
 * v1 ratio * x + rest * d, v2 fma(d, rest, ratio * x), both in float32, clamped to 0..255 and
 * truncated; rest is (float)(1.0 - ratio) as the caller computed it in double. v1's grey is
 * (0.2989 r + 0.587 g) + 0.114 b truncated, v2's the same as fused multiply-adds, floored.
 */
void stoke_tensor_blend(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t degenerate, float value,
                        float ratio, float rest, int32_t v2);

/* The sum over pixels of the grey that stoke_tensor_blend's STOKE_TENSOR_GRAY uses (v1 or v2). */
int64_t stoke_tensor_gray_sum(const uint8_t *src, int64_t pixels, int32_t v2);

/*
 * adjust_sharpness: the 3x3 blur (1 1 1 / 1 5 1 / 1 1 1 over 13 in float32) rounded half to even,
 * blended as stoke_tensor_blend blends (v1 over the whole image, the border with itself; v2 as
 * x + rest * (blur - x) inside, the border kept). Width and height above 2; dst must not be src.
 */
void stoke_tensor_sharpness(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height, float ratio, float rest,
                            int32_t v2);

/*
 * affine / rotate without expand: _gen_affine_grid's grid, (x, y, 1) by the rescaled theta
 * (theta[0..2] give grid x, theta[3..5] grid y; each the float32 matrix entry over 0.5 * width or
 * 0.5 * height), computed ((x t0 + y t1) + t2) in float32, then grid_sample with zeros padding and
 * align_corners=False, STOKE_TENSOR_NEAREST (half to even) or STOKE_TENSOR_BILINEAR. With fill
 * (3 floats, or NULL for none) the sampled ones-mask blends it in: nearest where the mask is
 * below 0.5, bilinear v1 as img * m + (1 - m) * fill, v2 as (img - fill) * m + fill. The result is
 * rounded half to even. dst must not be src.
 */
void stoke_tensor_affine(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height, const float *theta,
                         int32_t mode, const float *fill, int32_t v2);

/* torch.rot90(img, k, dims=(-2, -1)): k counter-clockwise quarter turns (1 and 3 of a square image only). */
void stoke_tensor_rot90(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height, int32_t k);

/*
 * AugMix's mix over `values` bytes (3 a pixel) of float32: mix = weight * src (mix_start), then for
 * each chain mix = mix + weight * chain, the product rounded to float32 before the sum (mix_add),
 * then .to(torch.uint8), which truncates (mix_finish; the weights sum to 1, so no value passes 255
 * by a whole step, and none is below 0).
 */
void stoke_tensor_mix_start(const uint8_t *src, float *mix, int64_t values, float weight);
void stoke_tensor_mix_add(const uint8_t *src, float *mix, int64_t values, float weight);
void stoke_tensor_mix_finish(const float *mix, uint8_t *dst, int64_t values);

#endif
