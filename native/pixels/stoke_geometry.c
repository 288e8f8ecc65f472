/*
 * stoke_geometry.c: see stoke_geometry.h. Each loop follows its counterpart in Pillow's
 * libImaging/Geometry.c expression for expression, the order of every double operation kept,
 * since that order is what makes the bytes: a pixel on the edge of the input, or a bilinear
 * weight, differs in the last bit otherwise. Pillow stores RGB in 4 bytes a pixel; here it is 3,
 * which changes addresses only.
 */
#include "stoke_geometry.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* A fused multiply-add rounds once where Pillow's code rounds twice: keep them apart. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/*
 * Pillow's rounding of a coordinate to a pixel, and its floor. Where a coordinate is past INT_MAX,
 * C leaves (int) undefined and x86-64 gives INT_MIN, a column outside the image; so does this,
 * defined.
 */
#define COORD(v) ((v) < 0.0 || (v) >= 2147483648.0 ? -1 : ((int)(v)))
#define FLOOR(v) ((v) < 0.0 ? ((int)floor(v)) : ((int)(v)))

/* Clamp a column or row index to the image, as Pillow's XCLIP and YCLIP. */
#define XCLIP(x) (((x) < 0) ? 0 : ((x) < width) ? (x) : width - 1)
#define YCLIP(y) (((y) < 0) ? 0 : ((y) < height) ? (y) : height - 1)

int32_t stoke_geometry_abi_version(void)
{
  return STOKE_GEOMETRY_ABI_VERSION;
}

static void fill_row(uint8_t *out, int32_t width, const uint8_t fill[3])
{
  for (int32_t x = 0; x < width; x++) {
    out[3 * x] = fill[0];
    out[3 * x + 1] = fill[1];
    out[3 * x + 2] = fill[2];
  }
}

static inline void copy_pixel(uint8_t *out, const uint8_t *in)
{
  out[0] = in[0];
  out[1] = in[1];
  out[2] = in[2];
}

/* bilinear_filter32RGB: 0 where (xin, yin) is outside the image. */
static int bilinear(uint8_t *out, const uint8_t *src, int32_t width, int32_t height, int64_t row_bytes, double xin,
                    double yin)
{
  if (xin < 0.0 || xin >= width || yin < 0.0 || yin >= height)
    return 0;
  xin -= 0.5;
  yin -= 0.5;
  int x = FLOOR(xin);
  int y = FLOOR(yin);
  double dx = xin - x;
  double dy = yin - y;
  int x0 = XCLIP(x + 0) * 3;
  int x1 = XCLIP(x + 1) * 3;
  const uint8_t *row0 = src + (int64_t)YCLIP(y) * row_bytes;
  const uint8_t *row1 = (y + 1 >= 0 && y + 1 < height) ? src + (int64_t)(y + 1) * row_bytes : NULL;
  for (int b = 0; b < 3; b++) {
    double v1 = row0[x0 + b] + (row0[x1 + b] - row0[x0 + b]) * dx;
    double v2 = row1 ? row1[x0 + b] + (row1[x1 + b] - row1[x0 + b]) * dx : v1;
    v1 = v1 + (v2 - v1) * dy;
    out[b] = (uint8_t)v1;
  }
  return 1;
}

/* Pillow's BICUBIC macro: its integer terms stay integers when the values are. */
#define BICUBIC(v, v1, v2, v3, v4, d)                \
  {                                                  \
    double p1 = v2;                                  \
    double p2 = -v1 + v3;                            \
    double p3 = 2 * (v1 - v2) + v3 - v4;             \
    double p4 = -v1 + v2 - v3 + v4;                  \
    v = p1 + (d) * (p2 + (d) * (p3 + (d) * p4));     \
  }

/* bicubic_filter32RGB: 0 where (xin, yin) is outside the image. */
static int bicubic(uint8_t *out, const uint8_t *src, int32_t width, int32_t height, int64_t row_bytes, double xin,
                   double yin)
{
  if (xin < 0.0 || xin >= width || yin < 0.0 || yin >= height)
    return 0;
  xin -= 0.5;
  yin -= 0.5;
  int x = FLOOR(xin);
  int y = FLOOR(yin);
  double dx = xin - x;
  double dy = yin - y;
  x--;
  y--;
  int x0 = XCLIP(x + 0) * 3;
  int x1 = XCLIP(x + 1) * 3;
  int x2 = XCLIP(x + 2) * 3;
  int x3 = XCLIP(x + 3) * 3;
  const uint8_t *rows[4];
  rows[0] = src + (int64_t)YCLIP(y) * row_bytes;
  for (int k = 1; k < 4; k++)
    rows[k] = (y + k >= 0 && y + k < height) ? src + (int64_t)(y + k) * row_bytes : NULL;
  for (int b = 0; b < 3; b++) {
    double v[4];
    const uint8_t *in = rows[0];
    int i0 = in[x0 + b], i1 = in[x1 + b], i2 = in[x2 + b], i3 = in[x3 + b];
    BICUBIC(v[0], i0, i1, i2, i3, dx);
    for (int k = 1; k < 4; k++) {
      in = rows[k];
      if (in != NULL) {
        i0 = in[x0 + b], i1 = in[x1 + b], i2 = in[x2 + b], i3 = in[x3 + b];
        BICUBIC(v[k], i0, i1, i2, i3, dx);
      } else {
        v[k] = v[k - 1];
      }
    }
    double r;
    BICUBIC(r, v[0], v[1], v[2], v[3], dy);
    out[b] = r <= 0.0 ? 0 : r >= 255.0 ? 255 : (uint8_t)r;
  }
  return 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * bilinear() and bicubic() for output pixels [0, end) of row y, four at a time (AVX2, four doubles
 * a vector; end a multiple of four): the same double operations in the same order, lane by lane,
 * so the same bytes. Every lane's pixels are read, those of a lane outside the input too, from
 * columns and rows clipped into the image as XCLIP and YCLIP clip them, each as the 32 bits that
 * end at its last byte (that start at it, for the source's first pixel), so nothing outside the
 * image's rows is read. A lane outside the input takes the fill. Byte offsets fit 32 bits:
 * generic() comes here only where the whole source does. Where bilinear() has no row1, or
 * bicubic() no row y + k (past the last row, or above the first), the row clipped is the one
 * before it, whose values they copy, so the clipped rows give theirs. bicubic's integer terms are
 * computed as ints.
 */
__attribute__((target("avx2"), always_inline)) static inline __m128i gather4(const uint8_t *src, __m128i offset)
{
  const __m128i first = _mm_cmpeq_epi32(offset, _mm_setzero_si128());
  const __m128i at = _mm_sub_epi32(offset, _mm_andnot_si128(first, _mm_set1_epi32(1)));
  return _mm_srlv_epi32(_mm_i32gather_epi32((const int *)src, at, 1), _mm_andnot_si128(first, _mm_set1_epi32(8)));
}

__attribute__((target("avx2"), always_inline)) static inline __m128i channel4(__m128i px, int b)
{
  return _mm_and_si128(_mm_srli_epi32(px, 8 * b), _mm_set1_epi32(0xFF));
}

__attribute__((target("avx2"), always_inline)) static inline __m256d bicubic4(__m256d p1, __m256d p2, __m256d p3,
                                                                             __m256d p4, __m256d d)
{
  const __m256d inner = _mm256_add_pd(p3, _mm256_mul_pd(d, p4));
  return _mm256_add_pd(p1, _mm256_mul_pd(d, _mm256_add_pd(p2, _mm256_mul_pd(d, inner))));
}

__attribute__((target("avx2"))) static void affine_row4(const uint8_t *src, int32_t width, int32_t height,
                                                        int64_t row_bytes, uint8_t *out, int32_t end, int32_t y,
                                                        const double a[6], int32_t filter, const uint8_t fill[3])
{
  const double yin = y + 0.5;
  const __m256d a0 = _mm256_set1_pd(a[0]), a3 = _mm256_set1_pd(a[3]);
  const __m256d a1y = _mm256_set1_pd(a[1] * yin), a4y = _mm256_set1_pd(a[4] * yin);
  const __m256d a2 = _mm256_set1_pd(a[2]), a5 = _mm256_set1_pd(a[5]);
  const __m256d zero = _mm256_setzero_pd(), half = _mm256_set1_pd(0.5), four = _mm256_set1_pd(4.0);
  const __m256d w = _mm256_set1_pd((double)width), h = _mm256_set1_pd((double)height);
  const __m128i lo = _mm_setzero_si128(), byte = _mm_set1_epi32(0xFF), lo255 = _mm_set1_epi32(255);
  const __m128i wmax = _mm_set1_epi32(width - 1), hmax = _mm_set1_epi32(height - 1);
  const __m128i rb = _mm_set1_epi32((int32_t)row_bytes);
  const __m128i fill32 = _mm_set1_epi32(fill[0] | fill[1] << 8 | fill[2] << 16);
  /* The low three bytes of each lane's 32 bits, packed: twelve bytes of RGB. */
  const __m128i pack = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i lanes = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const int cubic = filter == STOKE_GEOMETRY_BICUBIC;
  const int taps = cubic ? 4 : 2;
  __m256d xin = _mm256_set_pd(3.5, 2.5, 1.5, 0.5);
  for (int32_t x = 0; x < end; x += 4, out += 12, xin = _mm256_add_pd(xin, four)) {
    const __m256d xx = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(a0, xin), a1y), a2);
    const __m256d yy = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(a3, xin), a4y), a5);
    /* bilinear()'s test, false for NaN as there: a lane is outside where any comparison holds. */
    const __m256d outside = _mm256_or_pd(
        _mm256_or_pd(_mm256_cmp_pd(xx, zero, _CMP_LT_OQ), _mm256_cmp_pd(xx, w, _CMP_GE_OQ)),
        _mm256_or_pd(_mm256_cmp_pd(yy, zero, _CMP_LT_OQ), _mm256_cmp_pd(yy, h, _CMP_GE_OQ)));
    __m128i rgb = fill32;
    if (_mm256_movemask_pd(outside) != 0xF) {
      const __m256d xs = _mm256_sub_pd(xx, half), ys = _mm256_sub_pd(yy, half);
      const __m256d fx = _mm256_floor_pd(xs), fy = _mm256_floor_pd(ys); /* FLOOR's value */
      const __m256d dx = _mm256_sub_pd(xs, fx), dy = _mm256_sub_pd(ys, fy);
      /* The first column and row read: x and y, or under bicubic x - 1 and y - 1. */
      const __m128i back = _mm_set1_epi32(cubic);
      const __m128i ix = _mm_sub_epi32(_mm256_cvttpd_epi32(fx), back);
      const __m128i iy = _mm_sub_epi32(_mm256_cvttpd_epi32(fy), back);
      __m128i columns[4], rows[4];
      for (int k = 0; k < taps; k++) {
        const __m128i step = _mm_set1_epi32(k);
        const __m128i c = _mm_min_epi32(_mm_max_epi32(_mm_add_epi32(ix, step), lo), wmax); /* XCLIP */
        columns[k] = _mm_add_epi32(_mm_add_epi32(c, c), c);
        rows[k] = _mm_mullo_epi32(_mm_min_epi32(_mm_max_epi32(_mm_add_epi32(iy, step), lo), hmax), rb); /* YCLIP */
      }
      __m128i got = lo;
      if (!cubic) {
        const __m128i p0[2] = {gather4(src, _mm_add_epi32(rows[0], columns[0])),
                               gather4(src, _mm_add_epi32(rows[0], columns[1]))};
        const __m128i p1[2] = {gather4(src, _mm_add_epi32(rows[1], columns[0])),
                               gather4(src, _mm_add_epi32(rows[1], columns[1]))};
        for (int b = 0; b < 3; b++) {
          __m128i p00 = channel4(p0[0], b), p01 = channel4(p0[1], b);
          __m128i p10 = channel4(p1[0], b), p11 = channel4(p1[1], b);
          __m256d v1 =
              _mm256_add_pd(_mm256_cvtepi32_pd(p00), _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_sub_epi32(p01, p00)), dx));
          __m256d v2 =
              _mm256_add_pd(_mm256_cvtepi32_pd(p10), _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_sub_epi32(p11, p10)), dx));
          v1 = _mm256_add_pd(v1, _mm256_mul_pd(_mm256_sub_pd(v2, v1), dy));
          /* (uint8_t) of a value in [0, 255]: truncation, the low byte */
          got = _mm_or_si128(got, _mm_slli_epi32(_mm_and_si128(_mm256_cvttpd_epi32(v1), byte), 8 * b));
        }
      } else {
        __m256d v[3][4];
        for (int k = 0; k < 4; k++) {
          __m128i px[4];
          for (int j = 0; j < 4; j++) px[j] = gather4(src, _mm_add_epi32(rows[k], columns[j]));
          for (int b = 0; b < 3; b++) {
            __m128i i0 = channel4(px[0], b), i1 = channel4(px[1], b), i2 = channel4(px[2], b), i3 = channel4(px[3], b);
            __m128i p2 = _mm_sub_epi32(i2, i0);                                                     /* -v1 + v3 */
            __m128i p3 = _mm_sub_epi32(_mm_add_epi32(_mm_slli_epi32(_mm_sub_epi32(i0, i1), 1), i2), i3);
            __m128i p4 = _mm_add_epi32(_mm_sub_epi32(_mm_sub_epi32(i1, i0), i2), i3); /* -v1 + v2 - v3 + v4 */
            v[b][k] = bicubic4(_mm256_cvtepi32_pd(i1), _mm256_cvtepi32_pd(p2), _mm256_cvtepi32_pd(p3),
                               _mm256_cvtepi32_pd(p4), dx);
          }
        }
        const __m256d two = _mm256_set1_pd(2.0);
        for (int b = 0; b < 3; b++) {
          __m256d *u = v[b];
          __m256d p2 = _mm256_sub_pd(u[2], u[0]); /* -v1 + v3, the same double */
          __m256d p3 = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(two, _mm256_sub_pd(u[0], u[1])), u[2]), u[3]);
          __m256d p4 = _mm256_add_pd(_mm256_sub_pd(_mm256_sub_pd(u[1], u[0]), u[2]), u[3]);
          __m256d r = bicubic4(u[1], p2, p3, p4, dy);
          /* r <= 0 gives 0, r >= 255 255, else its truncation: the same as clipping the truncated int */
          __m128i t = _mm_min_epi32(_mm_max_epi32(_mm256_cvttpd_epi32(r), lo), lo255);
          got = _mm_or_si128(got, _mm_slli_epi32(t, 8 * b));
        }
      }
      /* each 64-bit lane's mask, as 32 bits */
      const __m256i halves = _mm256_permutevar8x32_epi32(_mm256_castpd_si256(outside), lanes);
      rgb = _mm_blendv_epi8(got, fill32, _mm256_castsi256_si128(halves));
    }
    rgb = _mm_shuffle_epi8(rgb, pack);
    _mm_storel_epi64((__m128i *)out, rgb);
    uint32_t tail = (uint32_t)_mm_extract_epi32(rgb, 2);
    memcpy(out + 8, &tail, 4);
  }
}

#define ROW8_TARGET "avx512f,avx512vl,avx2"

/*
 * Eight lanes' pixels, each as the 32 bits that end at its last byte (that start at it, for the
 * source's first byte), shifted so that the pixel's R is the low byte.
 */
__attribute__((target(ROW8_TARGET), always_inline)) static inline __m256i gather8(const uint8_t *src, __m256i offset)
{
  const __m256i first = _mm256_cmpeq_epi32(offset, _mm256_setzero_si256());
  const __m256i at = _mm256_sub_epi32(offset, _mm256_andnot_si256(first, _mm256_set1_epi32(1)));
  return _mm256_srlv_epi32(_mm256_i32gather_epi32((const int *)src, at, 1),
                           _mm256_andnot_si256(first, _mm256_set1_epi32(8)));
}

/* Channel b of eight gathered pixels. */
__attribute__((target(ROW8_TARGET), always_inline)) static inline __m256i channel8(__m256i px, int b)
{
  return _mm256_and_si256(_mm256_srli_epi32(px, 8 * b), _mm256_set1_epi32(0xFF));
}

/* BICUBIC(v, v1, v2, v3, v4, d) lane by lane, its terms as the macro orders them. */
__attribute__((target(ROW8_TARGET), always_inline)) static inline __m512d bicubic8(__m512d p1, __m512d p2, __m512d p3,
                                                                                  __m512d p4, __m512d d)
{
  const __m512d inner = _mm512_add_pd(p3, _mm512_mul_pd(d, p4));
  return _mm512_add_pd(p1, _mm512_mul_pd(d, _mm512_add_pd(p2, _mm512_mul_pd(d, inner))));
}

/*
 * affine_row4's eight-lane form (AVX-512 doubles, AVX2 integers); end is a multiple of eight.
 */
__attribute__((target(ROW8_TARGET))) static void affine_row8(const uint8_t *src, int32_t width, int32_t height,
                                                            int64_t row_bytes, uint8_t *out, int32_t end, int32_t y,
                                                            const double a[6], int32_t filter, const uint8_t fill[3])
{
  const double yin = y + 0.5;
  const __m512d a0 = _mm512_set1_pd(a[0]), a3 = _mm512_set1_pd(a[3]);
  const __m512d a1y = _mm512_set1_pd(a[1] * yin), a4y = _mm512_set1_pd(a[4] * yin);
  const __m512d a2 = _mm512_set1_pd(a[2]), a5 = _mm512_set1_pd(a[5]);
  const __m512d zero = _mm512_setzero_pd(), half = _mm512_set1_pd(0.5), eight_d = _mm512_set1_pd(8.0);
  const __m512d w = _mm512_set1_pd((double)width), h = _mm512_set1_pd((double)height);
  const __m256i lo = _mm256_setzero_si256(), byte = _mm256_set1_epi32(0xFF), lo255 = _mm256_set1_epi32(255);
  const __m256i wmax = _mm256_set1_epi32(width - 1), hmax = _mm256_set1_epi32(height - 1);
  const __m256i rb = _mm256_set1_epi32((int32_t)row_bytes);
  const __m256i fill32 = _mm256_set1_epi32(fill[0] | fill[1] << 8 | fill[2] << 16);
  const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4, 5, 6, 8,
                                        9, 10, 12, 13, 14, -1, -1, -1, -1);
  const int cubic = filter == STOKE_GEOMETRY_BICUBIC;
  const int taps = cubic ? 4 : 2;
  __m512d xin = _mm512_set_pd(7.5, 6.5, 5.5, 4.5, 3.5, 2.5, 1.5, 0.5);
  for (int32_t x = 0; x < end; x += 8, out += 24, xin = _mm512_add_pd(xin, eight_d)) {
    const __m512d xx = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(a0, xin), a1y), a2);
    const __m512d yy = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(a3, xin), a4y), a5);
    const __mmask8 outside = _mm512_cmp_pd_mask(xx, zero, _CMP_LT_OQ) | _mm512_cmp_pd_mask(xx, w, _CMP_GE_OQ)
                             | _mm512_cmp_pd_mask(yy, zero, _CMP_LT_OQ) | _mm512_cmp_pd_mask(yy, h, _CMP_GE_OQ);
    __m256i rgb = fill32;
    if (outside != 0xFF) {
      const __m512d xs = _mm512_sub_pd(xx, half), ys = _mm512_sub_pd(yy, half);
      const __m512d fx = _mm512_roundscale_pd(xs, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); /* FLOOR's value */
      const __m512d fy = _mm512_roundscale_pd(ys, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
      const __m512d dx = _mm512_sub_pd(xs, fx), dy = _mm512_sub_pd(ys, fy);
      /* The first column and row read: x and y, or under bicubic x - 1 and y - 1. */
      const __m256i back = _mm256_set1_epi32(cubic);
      const __m256i ix = _mm256_sub_epi32(_mm512_cvttpd_epi32(fx), back);
      const __m256i iy = _mm256_sub_epi32(_mm512_cvttpd_epi32(fy), back);
      __m256i columns[4], rows[4];
      for (int k = 0; k < taps; k++) {
        const __m256i step = _mm256_set1_epi32(k);
        const __m256i c = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(ix, step), lo), wmax); /* XCLIP */
        columns[k] = _mm256_add_epi32(_mm256_add_epi32(c, c), c);
        rows[k] = _mm256_mullo_epi32(_mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(iy, step), lo), hmax), rb);
      }
      __m256i got = lo;
      if (!cubic) {
        /* bilinear(): where it has no row1 (y + 1 past the last row), the clipped row is y's: v2 is v1. */
        const __m256i p0[2] = {gather8(src, _mm256_add_epi32(rows[0], columns[0])),
                               gather8(src, _mm256_add_epi32(rows[0], columns[1]))};
        const __m256i p1[2] = {gather8(src, _mm256_add_epi32(rows[1], columns[0])),
                               gather8(src, _mm256_add_epi32(rows[1], columns[1]))};
        for (int b = 0; b < 3; b++) {
          __m256i p00 = channel8(p0[0], b), p01 = channel8(p0[1], b);
          __m256i p10 = channel8(p1[0], b), p11 = channel8(p1[1], b);
          __m512d v1 = _mm512_add_pd(_mm512_cvtepi32_pd(p00),
                                     _mm512_mul_pd(_mm512_cvtepi32_pd(_mm256_sub_epi32(p01, p00)), dx));
          __m512d v2 = _mm512_add_pd(_mm512_cvtepi32_pd(p10),
                                     _mm512_mul_pd(_mm512_cvtepi32_pd(_mm256_sub_epi32(p11, p10)), dx));
          v1 = _mm512_add_pd(v1, _mm512_mul_pd(_mm512_sub_pd(v2, v1), dy));
          /* (uint8_t) of a value in [0, 255]: truncation, the low byte */
          got = _mm256_or_si256(got, _mm256_slli_epi32(_mm256_and_si256(_mm512_cvttpd_epi32(v1), byte), 8 * b));
        }
      } else {
        __m512d v[3][4];
        for (int k = 0; k < 4; k++) {
          __m256i px[4];
          for (int j = 0; j < 4; j++) px[j] = gather8(src, _mm256_add_epi32(rows[k], columns[j]));
          for (int b = 0; b < 3; b++) {
            __m256i i0 = channel8(px[0], b), i1 = channel8(px[1], b), i2 = channel8(px[2], b), i3 = channel8(px[3], b);
            __m256i p2 = _mm256_sub_epi32(i2, i0);                                                    /* -v1 + v3 */
            __m256i p3 = _mm256_sub_epi32(_mm256_add_epi32(_mm256_slli_epi32(_mm256_sub_epi32(i0, i1), 1), i2), i3);
            __m256i p4 = _mm256_add_epi32(_mm256_sub_epi32(_mm256_sub_epi32(i1, i0), i2), i3); /* -v1 + v2 - v3 + v4 */
            v[b][k] = bicubic8(_mm512_cvtepi32_pd(i1), _mm512_cvtepi32_pd(p2), _mm512_cvtepi32_pd(p3),
                               _mm512_cvtepi32_pd(p4), dx);
          }
        }
        const __m512d two = _mm512_set1_pd(2.0);
        for (int b = 0; b < 3; b++) {
          __m512d *u = v[b];
          __m512d p2 = _mm512_sub_pd(u[2], u[0]); /* -v1 + v3, the same double */
          __m512d p3 = _mm512_sub_pd(_mm512_add_pd(_mm512_mul_pd(two, _mm512_sub_pd(u[0], u[1])), u[2]), u[3]);
          __m512d p4 = _mm512_add_pd(_mm512_sub_pd(_mm512_sub_pd(u[1], u[0]), u[2]), u[3]);
          __m512d r = bicubic8(u[1], p2, p3, p4, dy);
          /* r <= 0 gives 0, r >= 255 255, else its truncation: the same as clipping the truncated int */
          __m256i t = _mm256_min_epi32(_mm256_max_epi32(_mm512_cvttpd_epi32(r), lo), lo255);
          got = _mm256_or_si256(got, _mm256_slli_epi32(t, 8 * b));
        }
      }
      rgb = _mm256_mask_blend_epi32(outside, got, fill32);
    }
    rgb = _mm256_shuffle_epi8(rgb, pack);
    __m128i lo4 = _mm256_castsi256_si128(rgb), hi4 = _mm256_extracti128_si256(rgb, 1);
    _mm_storel_epi64((__m128i *)out, lo4);
    uint32_t t0 = (uint32_t)_mm_extract_epi32(lo4, 2);
    memcpy(out + 8, &t0, 4);
    _mm_storel_epi64((__m128i *)(out + 12), hi4);
    uint32_t t1 = (uint32_t)_mm_extract_epi32(hi4, 2);
    memcpy(out + 20, &t1, 4);
  }
}
#endif

/* The widest vector row this CPU runs: 8 lanes (AVX-512), 4 (AVX2), or 0 (bilinear() alone). */
static int32_t affine_lanes(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2"))
    return 8;
  if (__builtin_cpu_supports("avx2"))
    return 4;
#endif
  return 0;
}

/*
 * ImagingGenericTransform with affine_transform: bilinear and bicubic. Each row's first multiple
 * of `lanes` pixels (0, 4 or 8, as affine_lanes allows) go through the vector rows;
 * check_geometry.c runs each width.
 */
static void generic(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                    int64_t dst_row_bytes, const double a[6], int32_t filter, const uint8_t fill[3], int32_t lanes)
{
  int32_t lanes_end = 0;
  if ((int64_t)height * src_row_bytes > INT32_MAX)
    lanes = 0;
  if (lanes > 0)
    lanes_end = width - width % lanes;
  for (int32_t y = 0; y < height; y++) {
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    int32_t x = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (lanes_end > 0) {
      if (lanes == 8)
        affine_row8(src, width, height, src_row_bytes, out, lanes_end, y, a, filter, fill);
      else
        affine_row4(src, width, height, src_row_bytes, out, lanes_end, y, a, filter, fill);
      x = lanes_end;
      out += 3 * (int64_t)lanes_end;
    }
#else
    (void)lanes_end; /* no vector rows here: affine_lanes() is 0 */
#endif
    for (; x < width; x++, out += 3) {
      double xin = x + 0.5;
      double yin = y + 0.5;
      double xx = a[0] * xin + a[1] * yin + a[2];
      double yy = a[3] * xin + a[4] * yin + a[5];
      int ok = filter == STOKE_GEOMETRY_BICUBIC ? bicubic(out, src, width, height, src_row_bytes, xx, yy)
                                                : bilinear(out, src, width, height, src_row_bytes, xx, yy);
      if (!ok)
        copy_pixel(out, fill);
    }
  }
}

/*
 * ImagingScaleAffine (nearest, a[1] == a[3] == 0): columns from a running sum of a[0], tabulated
 * by Pillow and recomputed here per row so that nothing is allocated. Between the first and the
 * last column that lands inside, a column that does not reads column 0, as Pillow's zeroed table.
 */
static void scale_nearest(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                          int64_t dst_row_bytes, const double a[6], const uint8_t fill[3])
{
  double xo = a[2] + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5;
  int32_t xmin = width, xmax = 0;
  double xs = xo;
  for (int32_t x = 0; x < width; x++) {
    int xin = COORD(xs);
    if (xin >= 0 && xin < width) {
      xmax = x + 1;
      if (x < xmin)
        xmin = x;
    }
    xs += a[0];
  }
  for (int32_t y = 0; y < height; y++) {
    int yi = COORD(yo);
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    fill_row(out, width, fill);
    if (yi >= 0 && yi < height) {
      const uint8_t *in = src + (int64_t)yi * src_row_bytes;
      xs = xo;
      for (int32_t x = 0; x < xmax; x++) {
        if (x >= xmin) {
          int xin = COORD(xs);
          copy_pixel(out + 3 * x, in + 3 * (int64_t)(xin >= 0 && xin < width ? xin : 0));
        }
        xs += a[0];
      }
    }
    yo += a[4];
  }
}

static inline int check_fixed(const double a[6], int x, int y)
{
  return fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

/* affine_fixed: nearest in 16.16 fixed point, where every corner fits. */
static void fixed_nearest(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                          int64_t dst_row_bytes, const double a[6], const uint8_t fill[3])
{
#define FIX(v) FLOOR((v) * 65536.0 + 0.5)
  int a0 = FIX(a[0]);
  int a1 = FIX(a[1]);
  int a3 = FIX(a[3]);
  int a4 = FIX(a[4]);
  int a2 = FIX(a[2] + a[0] * 0.5 + a[1] * 0.5);
  int a5 = FIX(a[5] + a[3] * 0.5 + a[4] * 0.5);
#undef FIX
  for (int32_t y = 0; y < height; y++) {
    int xx = a2;
    int yy = a5;
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    fill_row(out, width, fill);
    for (int32_t x = 0; x < width; x++, out += 3) {
      int xin = xx >> 16;
      if (xin >= 0 && xin < width) {
        int yin = yy >> 16;
        if (yin >= 0 && yin < height)
          copy_pixel(out, src + (int64_t)yin * src_row_bytes + 3 * (int64_t)xin);
      }
      xx += a0;
      yy += a3;
    }
    a2 += a1;
    a5 += a4;
  }
}

/* ImagingTransformAffine's last path: nearest in double, running sums, where a corner is too far for 16.16. */
static void float_nearest(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                          int64_t dst_row_bytes, const double a[6], const uint8_t fill[3])
{
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int32_t y = 0; y < height; y++) {
    double xx = xo;
    double yy = yo;
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    fill_row(out, width, fill);
    for (int32_t x = 0; x < width; x++, out += 3) {
      int xin = COORD(xx);
      if (xin >= 0 && xin < width) {
        int yin = COORD(yy);
        if (yin >= 0 && yin < height)
          copy_pixel(out, src + (int64_t)yin * src_row_bytes + 3 * (int64_t)xin);
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

/*
 * A map that moves by whole pixels, [1 0 tx; 0 1 ty] with integer tx and ty: the auto-augment
 * policies' TranslateX and TranslateY, which torchvision hands Pillow as int(magnitude). Output
 * pixel (x, y) then samples (x + tx + 0.5, y + ty + 0.5), an input pixel's centre, every double
 * operation of bilinear() and bicubic() is exact, and their weights are 0 and 1: the pixel is input
 * (x + tx, y + ty) where that is inside the image, else the fill. So the rows are copied, the same
 * bytes as generic() (AffineOpsTest compares both with Pillow). |t| is bounded so that x + t + 0.5
 * stays exact in a double, as generic() computes it.
 */
static int whole_pixel_shift(const double a[6], int64_t *tx, int64_t *ty)
{
  if (a[0] != 1.0 || a[1] != 0.0 || a[3] != 0.0 || a[4] != 1.0)
    return 0;
  if (!(fabs(a[2]) <= 1073741824.0 && fabs(a[5]) <= 1073741824.0) || a[2] != floor(a[2]) || a[5] != floor(a[5]))
    return 0; /* NaN fails the first test */
  *tx = (int64_t)a[2];
  *ty = (int64_t)a[5];
  return 1;
}

static void shift_rows(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                       int64_t dst_row_bytes, int64_t tx, int64_t ty, const uint8_t fill[3])
{
  /* The output columns [x0, x1) read input columns [x0 + tx, x1 + tx), all inside the image. */
  int64_t x0 = tx < 0 ? -tx : 0;
  int64_t x1 = width - tx;
  if (x0 > width)
    x0 = width;
  if (x1 > width)
    x1 = width;
  if (x1 < x0)
    x1 = x0;
  for (int32_t y = 0; y < height; y++) {
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    int64_t sy = y + ty;
    if (sy < 0 || sy >= height || x0 == x1) {
      fill_row(out, width, fill);
      continue;
    }
    fill_row(out, (int32_t)x0, fill);
    memcpy(out + 3 * x0, src + sy * src_row_bytes + 3 * (x0 + tx), 3 * (size_t)(x1 - x0));
    fill_row(out + 3 * x1, (int32_t)(width - x1), fill);
  }
}

void stoke_affine_rgb(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                      int64_t dst_row_bytes, const double matrix[6], int32_t filter, const uint8_t fill[3])
{
  int64_t tx, ty;
  if (filter != STOKE_GEOMETRY_NEAREST && whole_pixel_shift(matrix, &tx, &ty))
    shift_rows(src, width, height, src_row_bytes, dst, dst_row_bytes, tx, ty, fill);
  else if (filter != STOKE_GEOMETRY_NEAREST)
    generic(src, width, height, src_row_bytes, dst, dst_row_bytes, matrix, filter, fill, affine_lanes());
  else if (matrix[1] == 0 && matrix[3] == 0)
    scale_nearest(src, width, height, src_row_bytes, dst, dst_row_bytes, matrix, fill);
  else if (check_fixed(matrix, 0, 0) && check_fixed(matrix, width, height) && check_fixed(matrix, 0, height) &&
           check_fixed(matrix, width, 0))
    fixed_nearest(src, width, height, src_row_bytes, dst, dst_row_bytes, matrix, fill);
  else
    float_nearest(src, width, height, src_row_bytes, dst, dst_row_bytes, matrix, fill);
}

void stoke_rotate_quarter_rgb(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                              int64_t dst_row_bytes, int32_t quarter_turns)
{
  for (int32_t y = 0; y < height; y++) {
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    if (quarter_turns == 0) {
      memcpy(out, src + (int64_t)y * src_row_bytes, 3 * (size_t)width);
      continue;
    }
    for (int32_t x = 0; x < width; x++, out += 3) {
      int64_t sx, sy;
      if (quarter_turns == 1) { /* ROTATE_90: out[r][c] = in[c][w - 1 - r] */
        sx = width - 1 - y;
        sy = x;
      } else if (quarter_turns == 2) {
        sx = width - 1 - x;
        sy = height - 1 - y;
      } else { /* ROTATE_270: out[r][c] = in[h - 1 - c][r] */
        sx = y;
        sy = height - 1 - x;
      }
      copy_pixel(out, src + sy * src_row_bytes + 3 * sx);
    }
  }
}
