/*
 * stoke_augment.c: see stoke_augment.h. Each loop is the one in PIL's libImaging (Blend.c,
 * Filter.c's ImagingFilter3x3, Convert.c's rgb2l, rgb2hsv and hsv2rgb, Histo.c, Point.c) over Stoke's packed RGB
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

/*
 * The blend of n channel values, each with its own degenerate value (deg) or all with one (d):
 * flat loops of the same float operations per value, which gcc vectorises (8 or 16 values at a time,
 * the same bytes as one at a time). Inlined into each of stoke_augment_blend's clones.
 */
static inline void blend_values(const uint8_t *src, uint8_t *dst, int64_t n, int d, float alpha)
{
  for (int64_t k = 0; k < n; k++)
    dst[k] = (uint8_t)clip_int8((int)(float)(d + alpha * (src[k] - d)));
}

static inline void blend_values_each(const uint8_t *src, const uint8_t *deg, uint8_t *dst, int64_t n, float alpha)
{
  for (int64_t k = 0; k < n; k++) {
    int d = deg[k];
    dst[k] = (uint8_t)clip_int8((int)(float)(d + alpha * (src[k] - d)));
  }
}

/* Color's grey, a chunk of pixels at a time: each pixel's luma, once per channel value. */
#define BLEND_CHUNK 512

STOKE_CLONES void stoke_augment_blend(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t degenerate,
                                      int32_t value, float alpha)
{
  int64_t i;

  if (!alpha_near(alpha)) { /* no augmentation's factor comes here: one value at a time, clipped in float */
    for (i = 0; i < pixels; i++) {
      const uint8_t *s = src + 3 * i;
      uint8_t *o = dst + 3 * i;
      int d = degenerate == STOKE_DEGENERATE_BLACK ? 0 : degenerate == STOKE_DEGENERATE_GRAY ? luma(s) : value;
      uint8_t r = blend1_far(d, s[0], alpha);
      uint8_t g = blend1_far(d, s[1], alpha);
      uint8_t b = blend1_far(d, s[2], alpha);
      o[0] = r;
      o[1] = g;
      o[2] = b;
    }
    return;
  }
  if (degenerate != STOKE_DEGENERATE_GRAY) {
    blend_values(src, dst, 3 * pixels, degenerate == STOKE_DEGENERATE_BLACK ? 0 : value, alpha);
    return;
  }
  /* The chunk's greys are read before any of its pixels is written: dst may be src. */
  for (i = 0; i < pixels; i += BLEND_CHUNK) {
    uint8_t deg[3 * BLEND_CHUNK];
    int64_t n = pixels - i < BLEND_CHUNK ? pixels - i : BLEND_CHUNK;
    for (int64_t j = 0; j < n; j++) {
      uint8_t l = (uint8_t)luma(src + 3 * (i + j));
      deg[3 * j] = l;
      deg[3 * j + 1] = l;
      deg[3 * j + 2] = l;
    }
    blend_values_each(src + 3 * i, deg, dst + 3 * i, 3 * n, alpha);
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

/* ImagingUtils.h's CLIP8, on the ints Convert.c hands it. */
#define PIL_CLIP8(v) ((v) <= 0 ? 0 : (v) < 256 ? (v) : 255)

/*
 * Convert.c's rgb2hsv_row, expression for expression: its floats stay float and its double
 * constants (2.0, 6.0, 255.0) make double operations, as there. -std=c11 keeps gcc from
 * contracting any of them into an FMA, which PIL's build does not do either.
 */
static inline void pil_rgb2hsv(const uint8_t *in, uint8_t *out)
{
  float h, s, rc, gc, bc, cr;
  uint8_t maxc, minc, r = in[0], g = in[1], b = in[2];

  maxc = r > (g > b ? g : b) ? r : (g > b ? g : b);
  minc = r < (g < b ? g : b) ? r : (g < b ? g : b);
  out[2] = maxc;
  if (minc == maxc) {
    out[0] = 0;
    out[1] = 0;
    return;
  }
  cr = (float)(maxc - minc);
  s = cr / (float)maxc;
  rc = ((float)(maxc - r)) / cr;
  gc = ((float)(maxc - g)) / cr;
  bc = ((float)(maxc - b)) / cr;
  if (r == maxc)
    h = bc - gc;
  else if (g == maxc)
    h = 2.0 + rc - bc;
  else
    h = 4.0 + gc - rc;
  /* fmod(x, 1.0) of x = h / 6.0 + 1.0, which lies in [5/6, 11/6] (h in [-1, 5]): x - 1.0 from 1.0
     on, exact as fmod is (Sterbenz), without the library call. */
  {
    double x = h / 6.0 + 1.0;
    h = x >= 1.0 ? x - 1.0 : x;
  }
  out[0] = (uint8_t)PIL_CLIP8((int)(h * 255.0));
  out[1] = (uint8_t)PIL_CLIP8((int)(s * 255.0));
}

/* C's round(y) for y >= 0: y - (int)y is exact there, so the comparison with 0.5 is too. */
static inline int round_nonnegative(double y)
{
  int t = (int)y;
  return y - t >= 0.5 ? t + 1 : t;
}

/*
 * What Convert.c's hsv2rgb computes from h alone (i, f) and from s alone (fs), for every value,
 * expression for expression, so that a pixel takes no division. floor of a value that is never
 * negative is its truncation.
 */
struct hsv_tables {
  int i[256];
  float f[256];
  float fs[256];
};

static void hsv_tables_fill(struct hsv_tables *t)
{
  int v;

  for (v = 0; v < 256; v++) {
    t->i[v] = (int)((float)v * 6.0 / 255.0);
    t->f[v] = (float)v * 6.0 / 255.0 - (float)t->i[v];
    t->fs[v] = ((float)v) / 255.0;
  }
}

/* Convert.c's hsv2rgb for one pixel, expression for expression (see pil_rgb2hsv). */
static inline void pil_hsv2rgb(const struct hsv_tables *tab, uint8_t h, uint8_t s, uint8_t v, uint8_t *out)
{
  int p, q, t;
  uint8_t up, uq, ut;
  float f, fs;

  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  f = tab->f[h];
  fs = tab->fs[s];
  p = round_nonnegative((float)v * (1.0 - fs));
  q = round_nonnegative((float)v * (1.0 - fs * f));
  t = round_nonnegative((float)v * (1.0 - fs * (1.0 - f)));
  up = (uint8_t)PIL_CLIP8(p);
  uq = (uint8_t)PIL_CLIP8(q);
  ut = (uint8_t)PIL_CLIP8(t);
  switch (tab->i[h] % 6) {
  case 0:
    out[0] = v, out[1] = ut, out[2] = up;
    break;
  case 1:
    out[0] = uq, out[1] = v, out[2] = up;
    break;
  case 2:
    out[0] = up, out[1] = v, out[2] = ut;
    break;
  case 3:
    out[0] = up, out[1] = uq, out[2] = v;
    break;
  case 4:
    out[0] = ut, out[1] = up, out[2] = v;
    break;
  default: /* 5 (i is 0 to 6: 6 where h is 255, which is case 0) */
    out[0] = v, out[1] = up, out[2] = uq;
    break;
  }
}

void stoke_augment_hue(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t shift)
{
  int64_t i;
  uint8_t hsv[3];
  struct hsv_tables tab;

  hsv_tables_fill(&tab);
  for (i = 0; i < pixels; i++) {
    pil_rgb2hsv(src + 3 * i, hsv);
    pil_hsv2rgb(&tab, (uint8_t)(hsv[0] + shift), hsv[1], hsv[2], dst + 3 * i);
  }
}
