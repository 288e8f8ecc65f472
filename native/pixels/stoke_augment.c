/*
 * stoke_augment.c: see stoke_augment.h. Each loop is the one in PIL's libImaging (Blend.c,
 * Filter.c's ImagingFilter3x3, Convert.c's rgb2l, Histo.c, Point.c) over Stoke's packed RGB
 * instead of PIL's 4-byte pixels, with the same float arithmetic in the same order, so that the
 * bytes are PIL's. Built with -std=c11, so no floating-point contraction into FMA changes them.
 */
#include "stoke_augment.h"

#include <string.h>

/* The loop gcc vectorises (Sharpness's) runs in the CPU's widest vectors (the same float operations). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STOKE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define STOKE_CLONES
#endif

int32_t stoke_augment_abi_version(void)
{
  return STOKE_AUGMENT_ABI_VERSION;
}

/*
 * Blend.c: one channel value of d + alpha * (s - d). Blend.c clips it only where alpha is outside
 * [0, 1]; inside, the float value already lies between d and s (alpha * (s - d) rounds to no more
 * than s - d in magnitude, and the sum rounds monotonically), so clipping it always gives the same
 * bytes. It is clipped after truncation, as an int: a value in (-1, 0) truncates to 0 and one in
 * [255, 256) to 255, as Blend.c's float comparisons give them: a loop of this has no branch (gcc
 * vectorises Sharpness's; the blend's, a pixel at a time, runs 3.4x as fast without). The
 * truncation is defined where |alpha| <= BLEND_ALPHA_MAX (|value| < 2^31); past it (no
 * augmentation comes near: their factors are below 2) blend1_far clips in float.
 */
#define BLEND_ALPHA_MAX 1048576.0f

static inline int clip_int8(int v)
{
  v = v < 0 ? 0 : v;
  return v > 255 ? 255 : v;
}

static inline uint8_t blend1(int d, int s, float alpha)
{
  return (uint8_t)clip_int8((int)(float)(d + alpha * (s - d)));
}

static inline uint8_t blend1_far(int d, int s, float alpha)
{
  float v = (float)(d + alpha * (s - d));
  if (v <= 0.0f)
    return 0;
  if (v >= 255.0f)
    return 255;
  return (uint8_t)v;
}

static inline int alpha_near(float alpha)
{
  return alpha >= -BLEND_ALPHA_MAX && alpha <= BLEND_ALPHA_MAX; /* false for NaN */
}

/* Convert.c's L24: ITU-R 601-2 luma in 16-bit fixed point, rounded. */
static inline int luma(const uint8_t *p)
{
  return (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16;
}

void stoke_augment_blend(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t degenerate, int32_t value,
                         float alpha)
{
  int near = alpha_near(alpha);
  int64_t i;

  for (i = 0; i < pixels; i++) {
    const uint8_t *s = src + 3 * i;
    uint8_t *o = dst + 3 * i;
    int d = degenerate == STOKE_DEGENERATE_BLACK ? 0 : degenerate == STOKE_DEGENERATE_GRAY ? luma(s) : value;
    uint8_t r = near ? blend1(d, s[0], alpha) : blend1_far(d, s[0], alpha);
    uint8_t g = near ? blend1(d, s[1], alpha) : blend1_far(d, s[1], alpha);
    uint8_t b = near ? blend1(d, s[2], alpha) : blend1_far(d, s[2], alpha);
    o[0] = r;
    o[1] = g;
    o[2] = b;
  }
}

/*
 * Filter.c's clip8: the sum carries its +0.5 already, so this truncates. The 3x3 smoothing kernel's
 * sums lie in [0.5, 255.5], so truncating first and clipping the int gives its bytes, branch-free.
 */
static inline int clip8(float in)
{
  return clip_int8((int)in);
}

/* Filter.c's KERNEL1x3: three taps of one row, left to right. */
#define KERNEL1x3(row, x, k) \
  ((float)(row)[(x) - 3] * (k)[0] + (float)(row)[x] * (k)[1] + (float)(row)[(x) + 3] * (k)[2])

STOKE_CLONES void stoke_augment_sharpness(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height,
                                          float alpha)
{
  /* _imaging.c divides the kernel by its divisor in float. */
  const float one = 1.0f / 13.0f;
  const float five = 5.0f / 13.0f;
  const float kernel[9] = {one, one, one, one, five, one, one, one, one};
  int near = alpha_near(alpha);
  int64_t row = 3 * (int64_t)width;
  int32_t y;

  /* The filter keeps the border pixels, and a blend of a pixel with itself is that pixel. */
  memcpy(dst, src, (size_t)(row * height));
  if (width < 3 || height < 3)
    return;
  /*
   * Each channel value of a row's inner pixels on its own, one flat loop over [3, row - 3) that
   * gcc vectorises: the same float operations per value, in the same order.
   */
  for (y = 1; y < height - 1; y++) {
    const uint8_t *above = src + row * (y - 1);
    const uint8_t *in0 = src + row * y;
    const uint8_t *below = src + row * (y + 1);
    uint8_t *out = dst + row * y;
    for (int64_t at = 3; at < row - 3; at++) {
      /* Filter.c adds the rows below, level and above, in that order, onto offset 0.5. */
      float ss = 0.5f;
      ss += KERNEL1x3(below, at, &kernel[0]);
      ss += KERNEL1x3(in0, at, &kernel[3]);
      ss += KERNEL1x3(above, at, &kernel[6]);
      out[at] = near ? blend1(clip8(ss), in0[at], alpha) : blend1_far(clip8(ss), in0[at], alpha);
    }
  }
}

void stoke_augment_histogram(const uint8_t *src, int64_t pixels, int32_t *hist)
{
  int64_t i;

  memset(hist, 0, 768 * sizeof(int32_t));
  for (i = 0; i < pixels; i++) {
    hist[src[3 * i]]++;
    hist[256 + src[3 * i + 1]]++;
    hist[512 + src[3 * i + 2]]++;
  }
}

int64_t stoke_augment_gray_sum(const uint8_t *src, int64_t pixels)
{
  int64_t sum = 0;
  int64_t i;

  for (i = 0; i < pixels; i++)
    sum += luma(src + 3 * i);
  return sum;
}

void stoke_augment_lut(const uint8_t *src, uint8_t *dst, int64_t pixels, const uint8_t *lut)
{
  int64_t i;

  for (i = 0; i < pixels; i++) {
    dst[3 * i] = lut[src[3 * i]];
    dst[3 * i + 1] = lut[256 + src[3 * i + 1]];
    dst[3 * i + 2] = lut[512 + src[3 * i + 2]];
  }
}
