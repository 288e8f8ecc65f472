/*
 * stoke_tensor.c: see stoke_tensor.h. Each loop does torchvision's tensor arithmetic per element
 * in float32, in the order PyTorch's CPU kernels do it: a product by a Python float is a float32
 * product by the float32 scalar, add_(other, alpha) is a fused multiply-add (its vectorised
 * kernel's vec::fmadd), and a cast to uint8 truncates. Built with -std=c11, so the compiler fuses
 * nothing of its own; the fusions here are explicit fmaf calls.
 */
#include "stoke_tensor.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* AugMix's mix, a loop gcc vectorises, runs in the CPU's widest vectors (the same float operations). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TENSOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#ifndef AFFINE_CLONES /* -DAFFINE_CLONES= builds the default form alone, to compare the two */
#define AFFINE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
#else
#define TENSOR_CLONES
#define AFFINE_CLONES
#endif

/* clamp_(0, 255) then .to(torch.uint8), which truncates. */
static inline uint8_t to_u8(float v)
{
  if (!(v > 0.0f))
    return 0;
  if (v >= 255.0f)
    return 255;
  return (uint8_t)v;
}

/* rgb_to_grayscale: v1 (0.2989 r + 0.587 g) + 0.114 b, truncated by .to(uint8); v2 the same as
 * r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114), floored. */
static inline float gray(const uint8_t *p, int v2)
{
  const float kr = (float)0.2989, kg = (float)0.587, kb = (float)0.114;
  if (v2)
    return floorf(fmaf((float)p[2], kb, fmaf((float)p[1], kg, (float)p[0] * kr)));
  return (float)(uint8_t)((kr * (float)p[0] + kg * (float)p[1]) + kb * (float)p[2]);
}

static inline uint8_t blend1(float x, float d, float ratio, float rest, int v2)
{
  return to_u8(v2 ? fmaf(d, rest, ratio * x) : ratio * x + rest * d);
}

void stoke_tensor_blend(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t degenerate, float value,
                        float ratio, float rest, int32_t v2)
{
  int64_t i;

  if (degenerate == STOKE_TENSOR_BLACK) {
    /* v1's ratio * x + rest * 0 is ratio * x, as v2's image.mul(ratio) is. */
    for (i = 0; i < 3 * pixels; i++)
      dst[i] = to_u8(ratio * (float)src[i]);
    return;
  }
  for (i = 0; i < pixels; i++) {
    const uint8_t *s = src + 3 * i;
    uint8_t *o = dst + 3 * i;
    float d = degenerate == STOKE_TENSOR_GRAY ? gray(s, v2) : value;
    uint8_t r = blend1(s[0], d, ratio, rest, v2);
    uint8_t g = blend1(s[1], d, ratio, rest, v2);
    uint8_t b = blend1(s[2], d, ratio, rest, v2);
    o[0] = r;
    o[1] = g;
    o[2] = b;
  }
}

int64_t stoke_tensor_gray_sum(const uint8_t *src, int64_t pixels, int32_t v2)
{
  int64_t sum = 0;
  int64_t i;

  for (i = 0; i < pixels; i++)
    sum += (int64_t)gray(src + 3 * i, v2);
  return sum;
}

void stoke_tensor_sharpness(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height, float ratio, float rest,
                            int32_t v2)
{
  /* v1 divides a float32 kernel by its sum, 13; v2 writes 1/13 and 5/13 as Python floats. The
   * blur's exact value is an integer over 13, at least 1/26 from a half, so neither the kernel's
   * last bit nor the order of the nine products moves its rounding. */
  const float one = v2 ? (float)(1.0 / 13.0) : 1.0f / 13.0f;
  const float five = v2 ? (float)(5.0 / 13.0) : 5.0f / 13.0f;
  int64_t row = 3 * (int64_t)width;
  int32_t x, y;
  int c;

  for (y = 0; y < height; y++) {
    const uint8_t *in0 = src + row * y;
    uint8_t *out = dst + row * y;
    int inside_row = y > 0 && y < height - 1;
    for (x = 0; x < width; x++) {
      for (c = 0; c < 3; c++) {
        int64_t at = 3 * (int64_t)x + c;
        float v = in0[at];
        float blur;
        if (!inside_row || x == 0 || x == width - 1) {
          /* The blur keeps the border: v1 blends it with itself, v2 leaves it. */
          out[at] = v2 ? in0[at] : blend1(v, v, ratio, rest, 0);
          continue;
        }
        blur = one * ((float)in0[at - row - 3] + (float)in0[at - row] + (float)in0[at - row + 3]
                      + (float)in0[at - 3] + (float)in0[at + 3]
                      + (float)in0[at + row - 3] + (float)in0[at + row] + (float)in0[at + row + 3])
               + five * v;
        blur = nearbyintf(blur);
        out[at] = v2 ? to_u8(fmaf(blur - v, rest, v)) : blend1(v, blur, ratio, rest, 0);
      }
    }
  }
}

/* GridSamplerKernel.cpp's unnormalize (align_corners=False), (g + 1) * (size / 2) - 0.5: one
 * fused multiply-add, as GCC contracts PyTorch's vector expression (-ffp-contract=fast with FMA). */
static inline float unnormalize(float g, float half)
{
  return fmaf(g + 1.0f, half, -0.5f);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ROW16_TARGET "avx512f,avx512bw"

/*
 * The bilinear grid sample of output pixels [0, end) of row yo (end a multiple of 16), sixteen at a
 * time: the scalar loop's float operations lane by lane (its fmaf as fused multiply-adds, floorf and
 * nearbyintf as roundings), so the same bytes. A corner is read only where its mask is set, as the
 * 32 bits that end at its pixel's last byte (that start at it, for the image's first pixel), so
 * nothing outside the image is read. Offsets fit 32 bits where affine_row16_end() lets it run.
 */
__attribute__((target(ROW16_TARGET))) static void affine_row16(const uint8_t *src, uint8_t *out, int32_t width,
                                                               int32_t height, int32_t yo, int32_t end,
                                                               const float *theta, const float *fill, int32_t v2)
{
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f), minus1 = _mm512_set1_ps(-1.0f);
  const __m512 fw = _mm512_set1_ps((float)width), fh = _mm512_set1_ps((float)height);
  const __m512 half_w = _mm512_set1_ps((float)width / 2), half_h = _mm512_set1_ps((float)height / 2);
  const __m512 minus_half = _mm512_set1_ps(-0.5f);
  const float by = (float)yo - (float)height * 0.5f + 0.5f;
  const __m512 by_t1 = _mm512_set1_ps(by * theta[1]), by_t4 = _mm512_set1_ps(by * theta[4]);
  const __m512 t0 = _mm512_set1_ps(theta[0]), t2 = _mm512_set1_ps(theta[2]);
  const __m512 t3 = _mm512_set1_ps(theta[3]), t5 = _mm512_set1_ps(theta[5]);
  const __m512i row = _mm512_set1_epi32(3 * width), three = _mm512_set1_epi32(3);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i pack = _mm512_setr_epi32(0x04020100, 0x09080605, 0x0E0D0C0A, -1, 0x04020100, 0x09080605,
                                         0x0E0D0C0A, -1, 0x04020100, 0x09080605, 0x0E0D0C0A, -1, 0x04020100,
                                         0x09080605, 0x0E0D0C0A, -1);
  int32_t xo;
  int c, k;

  for (xo = 0; xo < end; xo += 16) {
    const __m512 bx = _mm512_add_ps(
        _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_set1_epi32(xo), lane)),
                      _mm512_set1_ps((float)width * 0.5f)),
        _mm512_set1_ps(0.5f));
    const __m512 gx = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(bx, t0), by_t1), t2);
    const __m512 gy = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(bx, t3), by_t4), t5);
    const __m512 ix = _mm512_fmadd_ps(_mm512_add_ps(gx, one), half_w, minus_half);
    const __m512 iy = _mm512_fmadd_ps(_mm512_add_ps(gy, one), half_h, minus_half);
    const __m512 xw = _mm512_roundscale_ps(ix, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 yn = _mm512_roundscale_ps(iy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 w = _mm512_sub_ps(ix, xw), e = _mm512_sub_ps(one, w);
    const __m512 n = _mm512_sub_ps(iy, yn), s = _mm512_sub_ps(one, n);
    const __m512 nw = _mm512_mul_ps(s, e), ne = _mm512_mul_ps(s, w), sw = _mm512_mul_ps(n, e),
                 se = _mm512_mul_ps(n, w);
    const __m512 xe = _mm512_add_ps(xw, one), ys = _mm512_add_ps(yn, one);
    const __mmask16 in_w = _mm512_cmp_ps_mask(xw, minus1, _CMP_GT_OQ) & _mm512_cmp_ps_mask(xw, fw, _CMP_LT_OQ);
    const __mmask16 in_e = _mm512_cmp_ps_mask(xe, minus1, _CMP_GT_OQ) & _mm512_cmp_ps_mask(xe, fw, _CMP_LT_OQ);
    const __mmask16 in_n = _mm512_cmp_ps_mask(yn, minus1, _CMP_GT_OQ) & _mm512_cmp_ps_mask(yn, fh, _CMP_LT_OQ);
    const __mmask16 in_s = _mm512_cmp_ps_mask(ys, minus1, _CMP_GT_OQ) & _mm512_cmp_ps_mask(ys, fh, _CMP_LT_OQ);
    const __mmask16 m[4] = {in_n & in_w, in_n & in_e, in_s & in_w, in_s & in_e}; /* nw, ne, sw, se */
    const __m512 weight[4] = {nw, ne, sw, se};
    /* x0 + y0 of the scalar loop, as 32 bits (in range wherever a corner is read). */
    const __m512i base = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_cvttps_epi32(yn), row),
                                          _mm512_mullo_epi32(_mm512_cvttps_epi32(xw), three));
    const __m512i corner[4] = {base, _mm512_add_epi32(base, three), _mm512_add_epi32(base, row),
                               _mm512_add_epi32(_mm512_add_epi32(base, row), three)};
    __m512i px[4], channel[3], packed;
    __m512 mask, mf[4];

    for (k = 0; k < 4; k++) {
      const __mmask16 first = _mm512_cmpeq_epi32_mask(corner[k], _mm512_setzero_si512());
      const __m512i at = _mm512_mask_sub_epi32(corner[k], (__mmask16)~first, corner[k], _mm512_set1_epi32(1));
      px[k] = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m[k], at, src, 1);
      px[k] = _mm512_mask_srli_epi32(px[k], (__mmask16)~first, px[k], 8);
      mf[k] = _mm512_mask_blend_ps(m[k], zero, one);
    }
    mask = _mm512_mul_ps(mf[0], nw);
    for (k = 1; k < 4; k++)
      mask = _mm512_fmadd_ps(mf[k], weight[k], mask);
    for (c = 0; c < 3; c++) {
      __m512 v[4], sum, r;
      for (k = 0; k < 4; k++)
        v[k] = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(px[k], 8 * c), _mm512_set1_epi32(0xFF)));
      /* nw * v_nw, then + ne, sw and se in turn, each fused, as the scalar loop's fmaf chain. */
      sum = _mm512_mul_ps(v[0], weight[0]);
      for (k = 1; k < 4; k++)
        sum = _mm512_fmadd_ps(v[k], weight[k], sum);
      if (fill) {
        const __m512 f = _mm512_set1_ps(fill[c]);
        sum = v2 ? _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(sum, f), mask), f)
                 : _mm512_add_ps(_mm512_mul_ps(sum, mask), _mm512_mul_ps(_mm512_sub_ps(one, mask), f));
      }
      /* to_u8(nearbyintf(v)): a NaN and anything at or below 0 give 0 (max returns its second
         operand for a NaN), 255 and above 255. */
      r = _mm512_roundscale_ps(sum, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      r = _mm512_min_ps(_mm512_max_ps(r, zero), _mm512_set1_ps(255.0f));
      channel[c] = _mm512_cvttps_epi32(r);
    }
    packed = _mm512_or_si512(channel[0], _mm512_or_si512(_mm512_slli_epi32(channel[1], 8),
                                                         _mm512_slli_epi32(channel[2], 16)));
    packed = _mm512_shuffle_epi8(packed, pack);
    {
      uint8_t *o = out + 3 * (int64_t)xo;
      {
        const __m128i l0 = _mm512_castsi512_si128(packed), l1 = _mm512_extracti32x4_epi32(packed, 1),
                      l2 = _mm512_extracti32x4_epi32(packed, 2), l3 = _mm512_extracti32x4_epi32(packed, 3);
        const uint32_t a0 = (uint32_t)_mm_extract_epi32(l0, 2), a1 = (uint32_t)_mm_extract_epi32(l1, 2),
                       a2 = (uint32_t)_mm_extract_epi32(l2, 2), a3 = (uint32_t)_mm_extract_epi32(l3, 2);
        _mm_storel_epi64((__m128i *)o, l0);
        memcpy(o + 8, &a0, 4);
        _mm_storel_epi64((__m128i *)(o + 12), l1);
        memcpy(o + 20, &a1, 4);
        _mm_storel_epi64((__m128i *)(o + 24), l2);
        memcpy(o + 32, &a2, 4);
        _mm_storel_epi64((__m128i *)(o + 36), l3);
        memcpy(o + 44, &a3, 4);
      }
    }
  }
  _mm256_zeroupper();
}
#endif

/* How many of each row's first pixels affine_row16 takes: a multiple of 16 where the CPU has
   AVX-512 and every offset fits 32 bits, else 0. -DAFFINE_LANES=0 turns it off, to compare. */
static int32_t affine_row16_end(int32_t width, int32_t height, int32_t mode)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(AFFINE_LANES)
  if (mode == STOKE_TENSOR_BILINEAR && (int64_t)3 * width * ((int64_t)height + 2) < INT32_MAX &&
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    return width / 16 * 16;
#else
  (void)width, (void)height, (void)mode;
#endif
  return 0;
}

/*
 * Where the CPU has FMA and SSE4.1 (x86-64-v3), its clone does each fmaf, floorf and nearbyintf in
 * one instruction where the default clone calls libm for each (half of an AugMix worker's samples):
 * both fuse exactly and round the same, so both give the same bytes. With AVX-512, each bilinear
 * row's first multiple of 16 pixels goes through affine_row16. check_tensor_affine.c holds each
 * form to a build of the plain loop alone.
 */
AFFINE_CLONES void stoke_tensor_affine(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height,
                                       const float *theta, int32_t mode, const float *fill, int32_t v2)
{
  const float half_w = (float)width / 2, half_h = (float)height / 2;
  const int32_t vector_end = affine_row16_end(width, height, mode);
  int64_t row = 3 * (int64_t)width;
  int32_t xo, yo;
  int c;

  for (yo = 0; yo < height; yo++) {
    /* linspace(-oh * 0.5 + 0.5, oh * 0.5 - 0.5): half-integers, exact in float32. */
    const float by = (float)yo - (float)height * 0.5f + 0.5f;
    uint8_t *out = dst + row * yo;
#if defined(__x86_64__) && defined(__GNUC__)
    if (vector_end > 0)
      affine_row16(src, out, width, height, yo, vector_end, theta, fill, v2);
#endif
    for (xo = vector_end; xo < width; xo++) {
      const float bx = (float)xo - (float)width * 0.5f + 0.5f;
      const float gx = (bx * theta[0] + by * theta[1]) + theta[2];
      const float gy = (bx * theta[3] + by * theta[4]) + theta[5];
      const float ix = unnormalize(gx, half_w);
      const float iy = unnormalize(gy, half_h);
      uint8_t *o = out + 3 * (int64_t)xo;

      if (mode == STOKE_TENSOR_NEAREST) {
        const float rx = nearbyintf(ix), ry = nearbyintf(iy);
        const int inside = rx > -1.0f && rx < (float)width && ry > -1.0f && ry < (float)height;
        if (inside) {
          const uint8_t *s = src + row * (int64_t)ry + 3 * (int64_t)rx;
          o[0] = s[0];
          o[1] = s[1];
          o[2] = s[2];
        } else {
          for (c = 0; c < 3; c++)
            o[c] = fill ? to_u8(nearbyintf(fill[c])) : 0;
        }
        continue;
      }
      {
        const float xw = floorf(ix), yn = floorf(iy);
        const float w = ix - xw, e = 1.0f - w, n = iy - yn, s = 1.0f - n;
        const float nw = s * e, ne = s * w, sw = n * e, se = n * w;
        const int in_w = xw > -1.0f && xw < (float)width, in_e = xw + 1.0f > -1.0f && xw + 1.0f < (float)width;
        const int in_n = yn > -1.0f && yn < (float)height, in_s = yn + 1.0f > -1.0f && yn + 1.0f < (float)height;
        const int64_t x0 = 3 * (int64_t)xw, y0 = row * (int64_t)yn;
        const float m_nw = in_n && in_w ? 1.0f : 0.0f, m_ne = in_n && in_e ? 1.0f : 0.0f;
        const float m_sw = in_s && in_w ? 1.0f : 0.0f, m_se = in_s && in_e ? 1.0f : 0.0f;
        /* nw_val * nw + ne_val * ne + sw_val * sw + se_val * se, contracted to a chain of fused
         * multiply-adds as PyTorch's build contracts it (byte-equal only so, on torch 1.13 and 2.14). */
        const float mask = fmaf(m_se, se, fmaf(m_sw, sw, fmaf(m_ne, ne, m_nw * nw)));
        for (c = 0; c < 3; c++) {
          /* Out-of-range corners read as zero (mask_gather with a zero default). */
          const float v_nw = m_nw != 0.0f ? src[y0 + x0 + c] : 0.0f;
          const float v_ne = m_ne != 0.0f ? src[y0 + x0 + 3 + c] : 0.0f;
          const float v_sw = m_sw != 0.0f ? src[y0 + row + x0 + c] : 0.0f;
          const float v_se = m_se != 0.0f ? src[y0 + row + x0 + 3 + c] : 0.0f;
          float v = fmaf(v_se, se, fmaf(v_sw, sw, fmaf(v_ne, ne, v_nw * nw)));
          if (fill)
            v = v2 ? (v - fill[c]) * mask + fill[c] : v * mask + (1.0f - mask) * fill[c];
          o[c] = to_u8(nearbyintf(v));
        }
      }
    }
  }
}

void stoke_tensor_rot90(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height, int32_t k)
{
  int64_t row = 3 * (int64_t)width;
  int32_t x, y;

  /* out(x, y) = in(w - 1 - y, x) for one counter-clockwise turn of a square, in(w - 1 - x, h - 1 - y) for two. */
  for (y = 0; y < height; y++) {
    for (x = 0; x < width; x++) {
      int32_t sx = k == 1 ? width - 1 - y : k == 2 ? width - 1 - x : y;
      int32_t sy = k == 1 ? x : k == 2 ? height - 1 - y : height - 1 - x;
      const uint8_t *s = src + row * sy + 3 * (int64_t)sx;
      uint8_t *o = dst + row * y + 3 * (int64_t)x;
      o[0] = s[0];
      o[1] = s[1];
      o[2] = s[2];
    }
  }
}

TENSOR_CLONES void stoke_tensor_mix_start(const uint8_t *src, float *mix, int64_t values, float weight)
{
  int64_t i;

  for (i = 0; i < values; i++)
    mix[i] = weight * (float)src[i];
}

TENSOR_CLONES void stoke_tensor_mix_add(const uint8_t *src, float *mix, int64_t values, float weight)
{
  int64_t i;

  /* The product is its own float32 tensor before add_ (alpha 1: the fusion adds it unchanged). */
  for (i = 0; i < values; i++) {
    const float product = weight * (float)src[i];
    mix[i] = mix[i] + product;
  }
}

TENSOR_CLONES void stoke_tensor_mix_finish(const float *mix, uint8_t *dst, int64_t values)
{
  int64_t i;

  for (i = 0; i < values; i++)
    dst[i] = to_u8(mix[i]);
}
