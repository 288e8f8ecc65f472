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

/* The plain loop: one pixel at a time, with `tab` filled (hue_with(..., 0) runs it alone). */
static void hue_plain_with(const struct hsv_tables *tab, const uint8_t *src, uint8_t *dst, int64_t pixels,
                           int32_t shift)
{
  int64_t i;
  uint8_t hsv[3];

  for (i = 0; i < pixels; i++) {
    pil_rgb2hsv(src + 3 * i, hsv);
    pil_hsv2rgb(tab, (uint8_t)(hsv[0] + shift), hsv[1], hsv[2], dst + 3 * i);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * pil_rgb2hsv and pil_hsv2rgb for eight pixels at a time (AVX2): the same float and double
 * operations in the same order, lane by lane, with the branches made masks, so the same bytes.
 * Their floats run eight to a vector, their doubles four, in two halves. The scalar loop spent
 * most of its time on branches that a photograph's pixels take at random (which channel is the
 * largest, the hue's sextant).
 */
#define HUE_TARGET "avx2"

/* The four doubles of floats x's low (half 0) or high (half 1) lanes. */
__attribute__((target(HUE_TARGET), always_inline)) static inline __m256d hue_widen(__m256 x, int half)
{
  return _mm256_cvtps_pd(half ? _mm256_extractf128_ps(x, 1) : _mm256_castps256_ps128(x));
}

/* Two halves of four doubles rounded to eight floats, as an assignment to a float rounds them. */
__attribute__((target(HUE_TARGET), always_inline)) static inline __m256 hue_narrow(__m256d lo, __m256d hi)
{
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
}

/* (int) of two halves of four doubles, truncating, as eight ints. */
__attribute__((target(HUE_TARGET), always_inline)) static inline __m256i hue_trunc(__m256d lo, __m256d hi)
{
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm256_cvttpd_epi32(lo)), _mm256_cvttpd_epi32(hi), 1);
}

/* The ints of eight lanes (each 0 to 255) widened to doubles, half 0 or 1. */
__attribute__((target(HUE_TARGET), always_inline)) static inline __m256d hue_double(__m256i x, int half)
{
  return _mm256_cvtepi32_pd(half ? _mm256_extracti128_si256(x, 1) : _mm256_castsi256_si128(x));
}

/* PIL_CLIP8 of eight ints. */
__attribute__((target(HUE_TARGET), always_inline)) static inline __m256i hue_clip8(__m256i x)
{
  return _mm256_min_epi32(_mm256_max_epi32(x, _mm256_setzero_si256()), _mm256_set1_epi32(255));
}

/* rgb2hsv's hue and saturation bytes, for half of the lanes: from h (a float) and s. */
__attribute__((target(HUE_TARGET), always_inline)) static inline void hue_hs_half(__m256 h, __m256 s, int half,
                                                                                 __m256d *h255, __m256d *s255)
{
  const __m256d one = _mm256_set1_pd(1.0);
  /* x = h / 6.0 + 1.0; h = fmod(x, 1.0), which is x - 1.0 from 1.0 on (pil_rgb2hsv). */
  __m256d x = _mm256_add_pd(_mm256_div_pd(hue_widen(h, half), _mm256_set1_pd(6.0)), one);
  __m256d wrapped = _mm256_blendv_pd(x, _mm256_sub_pd(x, one), _mm256_cmp_pd(x, one, _CMP_GE_OQ));
  /* Assigned to the float h, then h * 255.0 in double. */
  *h255 = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_cvtpd_ps(wrapped)), _mm256_set1_pd(255.0));
  *s255 = _mm256_mul_pd(hue_widen(s, half), _mm256_set1_pd(255.0));
}

/* round_nonnegative of four doubles, as doubles: the truncation, plus 1 where the rest is 0.5 or more. */
__attribute__((target(HUE_TARGET), always_inline)) static inline __m256d hue_round(__m256d y)
{
  const __m256d t = _mm256_round_pd(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256d up = _mm256_cmp_pd(_mm256_sub_pd(y, t), _mm256_set1_pd(0.5), _CMP_GE_OQ);
  return _mm256_add_pd(t, _mm256_and_pd(up, _mm256_set1_pd(1.0)));
}

/* pil_hsv2rgb's p, q and t for half of the lanes, from v and the tables' f and fs of the lanes' h and s. */
__attribute__((target(HUE_TARGET), always_inline)) static inline void hue_pqt_half(__m256 f8, __m256 fs8, __m256i v,
                                                                                  int half, __m256d *p, __m256d *q,
                                                                                  __m256d *t)
{
  const __m256d one = _mm256_set1_pd(1.0);
  const __m128 f = half ? _mm256_extractf128_ps(f8, 1) : _mm256_castps256_ps128(f8);
  const __m128 fs = half ? _mm256_extractf128_ps(fs8, 1) : _mm256_castps256_ps128(fs8);
  const __m256d vd = hue_double(v, half), fd = _mm256_cvtps_pd(f), fsd = _mm256_cvtps_pd(fs);

  *p = hue_round(_mm256_mul_pd(vd, _mm256_sub_pd(one, fsd)));
  /* fs * f is a float product. */
  *q = hue_round(_mm256_mul_pd(vd, _mm256_sub_pd(one, _mm256_cvtps_pd(_mm_mul_ps(fs, f)))));
  *t = hue_round(_mm256_mul_pd(vd, _mm256_sub_pd(one, _mm256_mul_pd(fsd, _mm256_sub_pd(one, fd)))));
}

/* Byte b (0: R, 1: G, 2: B) of pixels 0-3 (the low lane) and 4-7 (the high lane) of hue8's vector,
   each into the low byte of a 32-bit lane. */
#define HUE_PICK(b)                                                                                                 \
  _mm256_setr_epi8(0 + (b), -1, -1, -1, 3 + (b), -1, -1, -1, 6 + (b), -1, -1, -1, 9 + (b), -1, -1, -1, 4 + (b), -1, \
                   -1, -1, 7 + (b), -1, -1, -1, 10 + (b), -1, -1, -1, 13 + (b), -1, -1, -1)

/* Eight pixels: src and dst hold 24 bytes each (dst may be src: all 24 are read before any is written). */
__attribute__((target(HUE_TARGET), always_inline)) static inline void hue8(const struct hsv_tables *tab,
                                                                          const uint8_t *src, uint8_t *dst,
                                                                          __m256i shift)
{
  /* Pixels 0-3 are bytes 0-11 of the low lane (read from src), 4-7 bytes 4-15 of the high lane
     (read from src + 8), so that neither load leaves the 24 bytes. */
  const __m256i px = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)src)),
                                             _mm_loadu_si128((const __m128i *)(src + 8)), 1);
  const __m256i r = _mm256_shuffle_epi8(px, HUE_PICK(0)), g = _mm256_shuffle_epi8(px, HUE_PICK(1)),
                b = _mm256_shuffle_epi8(px, HUE_PICK(2));
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  const __m256d two = _mm256_set1_pd(2.0), four = _mm256_set1_pd(4.0);
  __m256i maxc, minc, flat, hb, sb, h2b, i, p, q, t, red, green, blue, c[6], packed;
  __m256 cr, s, rc, gc, bc, h, h_g, h_b;
  __m256d h255[2], s255[2], pd[2], qd[2], td[2];
  __m256 f, fs;
  int half, k;

  /* pil_rgb2hsv. A lane whose channels are equal ("flat") divides by 1, not 0, and takes h = s = 0. */
  maxc = _mm256_max_epi32(r, _mm256_max_epi32(g, b));
  minc = _mm256_min_epi32(r, _mm256_min_epi32(g, b));
  flat = _mm256_cmpeq_epi32(maxc, minc);
  cr = _mm256_cvtepi32_ps(_mm256_or_si256(_mm256_sub_epi32(maxc, minc), _mm256_and_si256(flat, one)));
  s = _mm256_div_ps(cr, _mm256_cvtepi32_ps(_mm256_max_epi32(maxc, one)));
  rc = _mm256_div_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(maxc, r)), cr);
  gc = _mm256_div_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(maxc, g)), cr);
  bc = _mm256_div_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(maxc, b)), cr);
  /* The three branches' h, then the one its branch takes: R the largest, else G, else B. */
  h_g = hue_narrow(_mm256_sub_pd(_mm256_add_pd(two, hue_widen(rc, 0)), hue_widen(bc, 0)),
                   _mm256_sub_pd(_mm256_add_pd(two, hue_widen(rc, 1)), hue_widen(bc, 1)));
  h_b = hue_narrow(_mm256_sub_pd(_mm256_add_pd(four, hue_widen(gc, 0)), hue_widen(rc, 0)),
                   _mm256_sub_pd(_mm256_add_pd(four, hue_widen(gc, 1)), hue_widen(rc, 1)));
  h = _mm256_blendv_ps(h_b, h_g, _mm256_castsi256_ps(_mm256_cmpeq_epi32(g, maxc)));
  h = _mm256_blendv_ps(h, _mm256_sub_ps(bc, gc), _mm256_castsi256_ps(_mm256_cmpeq_epi32(r, maxc)));
  for (half = 0; half < 2; half++)
    hue_hs_half(h, s, half, &h255[half], &s255[half]);
  hb = _mm256_andnot_si256(flat, hue_clip8(hue_trunc(h255[0], h255[1])));
  sb = _mm256_andnot_si256(flat, hue_clip8(hue_trunc(s255[0], s255[1])));

  /* The hue plus the shift, modulo 256; then pil_hsv2rgb, v being maxc. */
  h2b = _mm256_and_si256(_mm256_add_epi32(hb, shift), _mm256_set1_epi32(255));
  i = _mm256_i32gather_epi32(tab->i, h2b, 4);
  f = _mm256_i32gather_ps(tab->f, h2b, 4);
  fs = _mm256_i32gather_ps(tab->fs, sb, 4);
  for (half = 0; half < 2; half++)
    hue_pqt_half(f, fs, maxc, half, &pd[half], &qd[half], &td[half]);
  p = hue_clip8(hue_trunc(pd[0], pd[1]));
  q = hue_clip8(hue_trunc(qd[0], qd[1]));
  t = hue_clip8(hue_trunc(td[0], td[1]));
  /* i % 6, i being 0 to 6, is i but where i is 6. */
  i = _mm256_andnot_si256(_mm256_cmpeq_epi32(i, _mm256_set1_epi32(6)), i);
  for (k = 0; k < 6; k++)
    c[k] = _mm256_cmpeq_epi32(i, _mm256_set1_epi32(k));
  /* pil_hsv2rgb's switch, channel by channel: case 0 (v, t, p), 1 (q, v, p), 2 (p, v, t), 3 (p, q, v),
     4 (t, p, v), 5 (v, p, q). */
  red = _mm256_blendv_epi8(maxc, q, c[1]);
  red = _mm256_blendv_epi8(red, p, _mm256_or_si256(c[2], c[3]));
  red = _mm256_blendv_epi8(red, t, c[4]);
  green = _mm256_blendv_epi8(p, t, c[0]);
  green = _mm256_blendv_epi8(green, maxc, _mm256_or_si256(c[1], c[2]));
  green = _mm256_blendv_epi8(green, q, c[3]);
  blue = _mm256_blendv_epi8(maxc, p, _mm256_or_si256(c[0], c[1]));
  blue = _mm256_blendv_epi8(blue, t, c[2]);
  blue = _mm256_blendv_epi8(blue, q, c[5]);
  /* s == 0: grey, v in each channel. */
  {
    const __m256i grey = _mm256_cmpeq_epi32(sb, zero);
    red = _mm256_blendv_epi8(red, maxc, grey);
    green = _mm256_blendv_epi8(green, maxc, grey);
    blue = _mm256_blendv_epi8(blue, maxc, grey);
  }

  /* Back to packed RGB: each lane's R, G and B as its low three bytes, then the four lanes of each
     half as 12 bytes, written as 8 and 4 so that nothing past the 24 bytes is touched. */
  packed = _mm256_or_si256(red, _mm256_or_si256(_mm256_slli_epi32(green, 8), _mm256_slli_epi32(blue, 16)));
  packed = _mm256_shuffle_epi8(packed, _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1,
                                                        2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  {
    const __m128i lo = _mm256_castsi256_si128(packed), hi = _mm256_extracti128_si256(packed, 1);
    const uint32_t lo_tail = (uint32_t)_mm_extract_epi32(lo, 2), hi_tail = (uint32_t)_mm_extract_epi32(hi, 2);
    _mm_storel_epi64((__m128i *)dst, lo);
    memcpy(dst + 8, &lo_tail, 4);
    _mm_storel_epi64((__m128i *)(dst + 12), hi);
    memcpy(dst + 20, &hi_tail, 4);
  }
}

/* Every whole group of eight pixels through hue8; the number of pixels done. */
__attribute__((target(HUE_TARGET))) static int64_t hue_vector8(const struct hsv_tables *tab, const uint8_t *src,
                                                               uint8_t *dst, int64_t pixels, int32_t shift)
{
  const __m256i s = _mm256_set1_epi32(shift & 255);
  int64_t i;

  for (i = 0; i + 8 <= pixels; i += 8)
    hue8(tab, src + 3 * i, dst + 3 * i, s);
  /* Leave the vector registers' upper halves clear: the SSE code that runs next (the plain loop,
     libjpeg's) otherwise runs about 2.7x as slow on this VM's CPU until something clears them. */
  _mm256_zeroupper();
  return i;
}

/*
 * hue8 for sixteen pixels at a time (AVX-512: floats sixteen to a vector, doubles eight), the
 * same operations lane by lane, the branches made masks.
 */
#define HUE16_TARGET "avx512f,avx512bw"

/* The eight floats of x's low (half 0) or high (half 1) lanes. */
__attribute__((target(HUE16_TARGET), always_inline)) static inline __m256 hue16_half(__m512 x, int half)
{
  return half ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)) : _mm512_castps512_ps256(x);
}

__attribute__((target(HUE16_TARGET), always_inline)) static inline __m512d hue16_widen(__m512 x, int half)
{
  return _mm512_cvtps_pd(hue16_half(x, half));
}

__attribute__((target(HUE16_TARGET), always_inline)) static inline __m512 hue16_narrow(__m512d lo, __m512d hi)
{
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo))),
                                             _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
}

__attribute__((target(HUE16_TARGET), always_inline)) static inline __m512i hue16_trunc(__m512d lo, __m512d hi)
{
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvttpd_epi32(lo)), _mm512_cvttpd_epi32(hi), 1);
}

__attribute__((target(HUE16_TARGET), always_inline)) static inline __m512d hue16_double(__m512i x, int half)
{
  return _mm512_cvtepi32_pd(half ? _mm512_extracti64x4_epi64(x, 1) : _mm512_castsi512_si256(x));
}

__attribute__((target(HUE16_TARGET), always_inline)) static inline __m512i hue16_clip8(__m512i x)
{
  return _mm512_min_epi32(_mm512_max_epi32(x, _mm512_setzero_si512()), _mm512_set1_epi32(255));
}

__attribute__((target(HUE16_TARGET), always_inline)) static inline __m512d hue16_round(__m512d y)
{
  const __m512d t = _mm512_roundscale_pd(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask8 up = _mm512_cmp_pd_mask(_mm512_sub_pd(y, t), _mm512_set1_pd(0.5), _CMP_GE_OQ);
  return _mm512_mask_add_pd(t, up, t, _mm512_set1_pd(1.0));
}

/* Byte b of pixels 0-3, 4-7 and 8-11 (bytes 0-11 of lanes 0-2) and 12-15 (bytes 4-15 of lane 3) into the
   low byte of each 32-bit lane (0x80: a zero byte). */
#define HUE16_PICK(b)                                                                                             \
  _mm512_setr_epi32(0x80808000 + (b), 0x80808003 + (b), 0x80808006 + (b), 0x80808009 + (b), 0x80808000 + (b),   \
                    0x80808003 + (b), 0x80808006 + (b), 0x80808009 + (b), 0x80808000 + (b), 0x80808003 + (b),   \
                    0x80808006 + (b), 0x80808009 + (b), 0x80808004 + (b), 0x80808007 + (b), 0x8080800A + (b),   \
                    0x8080800D + (b))

/* Sixteen pixels: src and dst hold 48 bytes each (dst may be src: all 48 are read before any is written). */
__attribute__((target(HUE16_TARGET), always_inline)) static inline void hue16(const struct hsv_tables *tab,
                                                                            const uint8_t *src, uint8_t *dst,
                                                                            __m512i shift)
{
  /* Lanes 0-2 read at bytes 0, 12 and 24, lane 3 at 32, so that no load leaves the 48 bytes. */
  __m512i px = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)src));
  px = _mm512_inserti32x4(px, _mm_loadu_si128((const __m128i *)(src + 12)), 1);
  px = _mm512_inserti32x4(px, _mm_loadu_si128((const __m128i *)(src + 24)), 2);
  px = _mm512_inserti32x4(px, _mm_loadu_si128((const __m128i *)(src + 32)), 3);
  const __m512i r = _mm512_shuffle_epi8(px, HUE16_PICK(0)), g = _mm512_shuffle_epi8(px, HUE16_PICK(1)),
                b = _mm512_shuffle_epi8(px, HUE16_PICK(2));
  const __m512i one = _mm512_set1_epi32(1), c255 = _mm512_set1_epi32(255);
  const __m512d two = _mm512_set1_pd(2.0), four = _mm512_set1_pd(4.0), oned = _mm512_set1_pd(1.0);
  __m512i maxc, minc, hb, sb, h2b, i, p, q, t, red, green, blue, packed;
  __m512 cr, s, rc, gc, bc, h, h_g, h_b, f, fs;
  __m512d h255[2], s255[2], pd[2], qd[2], td[2];
  __mmask16 flat, c[6], grey;
  int half, k;

  maxc = _mm512_max_epi32(r, _mm512_max_epi32(g, b));
  minc = _mm512_min_epi32(r, _mm512_min_epi32(g, b));
  flat = _mm512_cmpeq_epi32_mask(maxc, minc);
  cr = _mm512_cvtepi32_ps(_mm512_mask_blend_epi32(flat, _mm512_sub_epi32(maxc, minc), one));
  s = _mm512_div_ps(cr, _mm512_cvtepi32_ps(_mm512_max_epi32(maxc, one)));
  rc = _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(maxc, r)), cr);
  gc = _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(maxc, g)), cr);
  bc = _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(maxc, b)), cr);
  h_g = hue16_narrow(_mm512_sub_pd(_mm512_add_pd(two, hue16_widen(rc, 0)), hue16_widen(bc, 0)),
                     _mm512_sub_pd(_mm512_add_pd(two, hue16_widen(rc, 1)), hue16_widen(bc, 1)));
  h_b = hue16_narrow(_mm512_sub_pd(_mm512_add_pd(four, hue16_widen(gc, 0)), hue16_widen(rc, 0)),
                     _mm512_sub_pd(_mm512_add_pd(four, hue16_widen(gc, 1)), hue16_widen(rc, 1)));
  h = _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(g, maxc), h_b, h_g);
  h = _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(r, maxc), h, _mm512_sub_ps(bc, gc));
  for (half = 0; half < 2; half++) {
    const __m512d x = _mm512_add_pd(_mm512_div_pd(hue16_widen(h, half), _mm512_set1_pd(6.0)), oned);
    const __m512d wrapped = _mm512_mask_sub_pd(x, _mm512_cmp_pd_mask(x, oned, _CMP_GE_OQ), x, oned);
    h255[half] = _mm512_mul_pd(_mm512_cvtps_pd(_mm512_cvtpd_ps(wrapped)), _mm512_set1_pd(255.0));
    s255[half] = _mm512_mul_pd(hue16_widen(s, half), _mm512_set1_pd(255.0));
  }
  hb = _mm512_maskz_mov_epi32((__mmask16)~flat, hue16_clip8(hue16_trunc(h255[0], h255[1])));
  sb = _mm512_maskz_mov_epi32((__mmask16)~flat, hue16_clip8(hue16_trunc(s255[0], s255[1])));

  h2b = _mm512_and_si512(_mm512_add_epi32(hb, shift), c255);
  i = _mm512_i32gather_epi32(h2b, tab->i, 4);
  f = _mm512_i32gather_ps(h2b, tab->f, 4);
  fs = _mm512_i32gather_ps(sb, tab->fs, 4);
  for (half = 0; half < 2; half++) {
    const __m256 fh = hue16_half(f, half), fsh = hue16_half(fs, half);
    const __m512d vd = hue16_double(maxc, half), fd = _mm512_cvtps_pd(fh), fsd = _mm512_cvtps_pd(fsh);

    pd[half] = hue16_round(_mm512_mul_pd(vd, _mm512_sub_pd(oned, fsd)));
    qd[half] = hue16_round(_mm512_mul_pd(vd, _mm512_sub_pd(oned, _mm512_cvtps_pd(_mm256_mul_ps(fsh, fh)))));
    td[half] = hue16_round(_mm512_mul_pd(vd, _mm512_sub_pd(oned, _mm512_mul_pd(fsd, _mm512_sub_pd(oned, fd)))));
  }
  p = hue16_clip8(hue16_trunc(pd[0], pd[1]));
  q = hue16_clip8(hue16_trunc(qd[0], qd[1]));
  t = hue16_clip8(hue16_trunc(td[0], td[1]));
  i = _mm512_maskz_mov_epi32((__mmask16)~_mm512_cmpeq_epi32_mask(i, _mm512_set1_epi32(6)), i);
  for (k = 0; k < 6; k++)
    c[k] = _mm512_cmpeq_epi32_mask(i, _mm512_set1_epi32(k));
  red = _mm512_mask_blend_epi32(c[1], maxc, q);
  red = _mm512_mask_blend_epi32(c[2] | c[3], red, p);
  red = _mm512_mask_blend_epi32(c[4], red, t);
  green = _mm512_mask_blend_epi32(c[0], p, t);
  green = _mm512_mask_blend_epi32(c[1] | c[2], green, maxc);
  green = _mm512_mask_blend_epi32(c[3], green, q);
  blue = _mm512_mask_blend_epi32(c[0] | c[1], maxc, p);
  blue = _mm512_mask_blend_epi32(c[2], blue, t);
  blue = _mm512_mask_blend_epi32(c[5], blue, q);
  grey = _mm512_cmpeq_epi32_mask(sb, _mm512_setzero_si512());
  red = _mm512_mask_blend_epi32(grey, red, maxc);
  green = _mm512_mask_blend_epi32(grey, green, maxc);
  blue = _mm512_mask_blend_epi32(grey, blue, maxc);

  packed = _mm512_or_si512(red, _mm512_or_si512(_mm512_slli_epi32(green, 8), _mm512_slli_epi32(blue, 16)));
  packed = _mm512_shuffle_epi8(packed, _mm512_setr_epi32(0x04020100, 0x09080605, 0x0E0D0C0A, -1, 0x04020100,
                                                         0x09080605, 0x0E0D0C0A, -1, 0x04020100, 0x09080605,
                                                         0x0E0D0C0A, -1, 0x04020100, 0x09080605, 0x0E0D0C0A, -1));
  {
    const __m128i l0 = _mm512_castsi512_si128(packed), l1 = _mm512_extracti32x4_epi32(packed, 1),
                  l2 = _mm512_extracti32x4_epi32(packed, 2), l3 = _mm512_extracti32x4_epi32(packed, 3);
    const uint32_t t0 = (uint32_t)_mm_extract_epi32(l0, 2), t1 = (uint32_t)_mm_extract_epi32(l1, 2),
                   t2 = (uint32_t)_mm_extract_epi32(l2, 2), t3 = (uint32_t)_mm_extract_epi32(l3, 2);
    _mm_storel_epi64((__m128i *)dst, l0);
    memcpy(dst + 8, &t0, 4);
    _mm_storel_epi64((__m128i *)(dst + 12), l1);
    memcpy(dst + 20, &t1, 4);
    _mm_storel_epi64((__m128i *)(dst + 24), l2);
    memcpy(dst + 32, &t2, 4);
    _mm_storel_epi64((__m128i *)(dst + 36), l3);
    memcpy(dst + 44, &t3, 4);
  }
}

/* Every whole group of sixteen pixels through hue16; the number of pixels done. */
__attribute__((target(HUE16_TARGET))) static int64_t hue_vector16(const struct hsv_tables *tab, const uint8_t *src,
                                                                  uint8_t *dst, int64_t pixels, int32_t shift)
{
  const __m512i s = _mm512_set1_epi32(shift & 255);
  int64_t i;

  for (i = 0; i + 16 <= pixels; i += 16)
    hue16(tab, src + 3 * i, dst + 3 * i, s);
  _mm256_zeroupper(); /* as hue_vector8 */
  return i;
}
#endif

/* The widest vector form this CPU runs: 16 pixels at a time (AVX-512), 8 (AVX2), or 0 (the plain loop alone). */
static int hue_lanes(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    return 16;
  if (__builtin_cpu_supports("avx2"))
    return 8;
#endif
  return 0;
}

/* The hue with the vector form of `lanes` pixels (16 or 8; 0: none) and the plain loop for the rest.
   check_hue.c runs each width the CPU has against lanes 0. */
static void hue_with(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t shift, int lanes)
{
  int64_t done = 0;
  struct hsv_tables tab;

  hsv_tables_fill(&tab);
#if defined(__x86_64__) && defined(__GNUC__)
  if (lanes == 16)
    done = hue_vector16(&tab, src, dst, pixels, shift);
  else if (lanes == 8)
    done = hue_vector8(&tab, src, dst, pixels, shift);
#else
  (void)lanes;
#endif
  hue_plain_with(&tab, src + 3 * done, dst + 3 * done, pixels - done, shift);
}

void stoke_augment_hue(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t shift)
{
  hue_with(src, dst, pixels, shift, hue_lanes());
}
