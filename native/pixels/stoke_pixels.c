/*
 * stoke_pixels.c: see stoke_pixels.h. Plain loops written so that gcc vectorises them; with
 * target_clones one binary runs on any x86-64 and picks AVX2 or AVX-512 code where the CPU has it.
 * The horizontal pass is the exception: its taps start at a different pixel for every column,
 * which no compiler vectorises across columns, so it has an AVX2 form, eight columns at once with
 * permutes of a row's nearby pixels or with gathers, and AVX-512 ones: sixteen columns at once with
 * permutes, and, with VNNI, a column's taps sixteen pixels at a time in four rows at once, or (with
 * VBMI) four taps of sixteen columns' channels a lane by byte permutes, chosen at run time like
 * the clones.
 */
#include "stoke_pixels.h"

#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STOKE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define STOKE_CLONES
#endif

#define HALF (1 << (STOKE_PRECISION_BITS - 1))

static inline uint8_t clip8(int32_t v)
{
  int32_t s = v >> STOKE_PRECISION_BITS;
  if (s < 0) return 0;
  if (s > 255) return 255;
  return (uint8_t)s;
}

int32_t stoke_pixels_abi_version(void)
{
  return STOKE_PIXELS_ABI_VERSION;
}

/* Output columns [x_from, out_width) of every row, one pixel at a time: any CPU, any number of taps. */
STOKE_CLONES
static void horizontal_columns(const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows,
                               int32_t out_width, int32_t x_from, const int32_t *bounds, const int32_t *weights,
                               int32_t taps, uint8_t *tmp)
{
  for (int32_t r = 0; r < rows; r++) {
    const uint8_t *in = src + (int64_t)(y_first + r) * src_row_bytes;
    uint8_t *o = tmp + ((int64_t)r * out_width + x_from) * 4;
    for (int32_t x = x_from; x < out_width; x++) {
      const uint8_t *p = in + 4 * (int64_t)bounds[2 * x];
      const int32_t *k = weights + (int64_t)x * taps;
      int32_t n = bounds[2 * x + 1];
      /* All four bytes of a pixel at once (X too, then discarded): one vector lane each. */
      int32_t s[4] = {HALF, HALF, HALF, HALF};
      for (int32_t t = 0; t < n; t++)
        for (int c = 0; c < 4; c++)
          s[c] += p[4 * t + c] * k[t];
      o[0] = clip8(s[0]);
      o[1] = clip8(s[1]);
      o[2] = clip8(s[2]);
      o[3] = 0;
      o += 4;
    }
  }
}

/* vnni_supported's levels, the horizontal pass's `vnni` argument (0: no VNNI; any CPU has these names). */
#define VNNI_WORDS 1
#define VNNI_BYTES 2

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GATHER_LANES 8
/*
 * Up to this many taps, eight output columns are computed at once (AVX2): each lane's source
 * pixel for tap t is gathered, so the weights are loaded once per column block, not per row.
 * Past it (a downscale by more than about 8 with no DCT scaling) the gathers touch too many
 * cache lines and one pixel at a time is faster (where the two cross: docs/benchmarks/pixels.md,
 * "The resize kernels in C"). With AVX-512 VNNI, horizontal_vnni takes the place of both.
 */
#define GATHER_MAX_TAPS 16

__attribute__((target("avx2"))) static inline __m256i gather_channel(__m256i sum, __m256i pixels, int shift,
                                                                     __m256i k)
{
  __m256i c = _mm256_and_si256(_mm256_srli_epi32(pixels, shift), _mm256_set1_epi32(0xFF));
  return _mm256_add_epi32(sum, _mm256_mullo_epi32(c, k));
}

/* clip8 of eight sums, placed at byte `shift` of each lane. */
__attribute__((target("avx2"))) static inline __m256i gather_clip8(__m256i sum, int shift)
{
  __m256i v = _mm256_srai_epi32(sum, STOKE_PRECISION_BITS);
  v = _mm256_min_epi32(_mm256_max_epi32(v, _mm256_setzero_si256()), _mm256_set1_epi32(255));
  return _mm256_slli_epi32(v, shift);
}

/*
 * The rows of a block whose eight columns' taps all lie within `windows` runs of eight source
 * pixels from `lo`: each row's pixels are loaded once (up to three 32-byte loads) and handed to the
 * lanes by permutes and blends, where a gather per tap costs several times as much. Inlined with `windows` a
 * constant, so each form has no branch in its loops.
 */
__attribute__((target("avx2"), always_inline)) static inline void
horizontal_block_rows(const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows, int32_t out_width,
                      int32_t x0, int32_t lo, int windows, const __m256i *idx, const __m256i *k, int32_t n,
                      uint8_t *tmp)
{
  __m256i second[GATHER_MAX_TAPS], third[GATHER_MAX_TAPS];
  for (int32_t t = 0; t < n; t++) {
    second[t] = _mm256_cmpgt_epi32(idx[t], _mm256_set1_epi32(7));
    third[t] = _mm256_cmpgt_epi32(idx[t], _mm256_set1_epi32(15));
  }
  for (int32_t r = 0; r < rows; r++) {
    const uint8_t *in = src + (int64_t)(y_first + r) * src_row_bytes + 4 * (int64_t)lo;
    __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)in);
    __m256i w1 = windows >= 2 ? _mm256_loadu_si256((const __m256i *)(const void *)(in + 32)) : w0;
    __m256i w2 = windows >= 3 ? _mm256_loadu_si256((const __m256i *)(const void *)(in + 64)) : w0;
    __m256i red = _mm256_set1_epi32(HALF), green = red, blue = red;
    for (int32_t t = 0; t < n; t++) {
      __m256i pixels = _mm256_permutevar8x32_epi32(w0, idx[t]);
      /* The permute reads an index's low three bits: the blends pick the window it falls in. */
      if (windows >= 2)
        pixels = _mm256_blendv_epi8(pixels, _mm256_permutevar8x32_epi32(w1, idx[t]), second[t]);
      if (windows >= 3)
        pixels = _mm256_blendv_epi8(pixels, _mm256_permutevar8x32_epi32(w2, idx[t]), third[t]);
      red = gather_channel(red, pixels, 0, k[t]);
      green = gather_channel(green, pixels, 8, k[t]);
      blue = gather_channel(blue, pixels, 16, k[t]);
    }
    __m256i out = _mm256_or_si256(_mm256_or_si256(gather_clip8(red, 0), gather_clip8(green, 8)), gather_clip8(blue, 16));
    _mm256_storeu_si256((__m256i *)(void *)(tmp + ((int64_t)r * out_width + x0) * 4), out);
  }
}

/*
 * Output columns [x0, x0 + 8) of every row. Lane j is column x0 + j: its taps are source pixels
 * bounds[2(x0+j)] + t for t < bounds[2(x0+j)+1]; lanes with fewer taps than the block's most are
 * masked off those taps, so no gather reads a pixel the one-at-a-time loop would not. The same
 * integer sums as horizontal_columns, so the same bytes. Every count is at most taps, which is at
 * most GATHER_MAX_TAPS here (NativeKernels.checkTaps checks the counts in Java before the call).
 * No read reaches past `limit`, the furthest pixel any column's taps reach (within the source's
 * width, which Resampler.checkInside checks in Java). Without `gathers`, a block too wide for the
 * permutes is left undone (for horizontal_vnni): returns whether the block was done.
 */
__attribute__((target("avx2"))) static int horizontal_block(const uint8_t *src, int64_t src_row_bytes,
                                                            int32_t y_first, int32_t rows, int32_t out_width,
                                                            int32_t x0, const int32_t *bounds,
                                                            const int32_t *weights, int32_t taps, int32_t limit,
                                                            int gathers, uint8_t *tmp)
{
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i zero = _mm256_setzero_si256();
  __m256i pair = _mm256_add_epi32(_mm256_slli_epi32(lane, 1), _mm256_set1_epi32(2 * x0));
  __m256i first = _mm256_i32gather_epi32((const int *)bounds, pair, 4);
  __m256i count = _mm256_i32gather_epi32((const int *)bounds + 1, pair, 4);
  __m256i row_of_k = _mm256_mullo_epi32(_mm256_add_epi32(lane, _mm256_set1_epi32(x0)), _mm256_set1_epi32(taps));
  int32_t counts[GATHER_LANES], firsts[GATHER_LANES];
  _mm256_storeu_si256((__m256i *)(void *)counts, count);
  _mm256_storeu_si256((__m256i *)(void *)firsts, first);
  int32_t n = 0, lo = firsts[0], hi = 0;
  for (int i = 0; i < GATHER_LANES; i++) {
    if (counts[i] > n) n = counts[i];
    if (firsts[i] < lo) lo = firsts[i];
    if (firsts[i] + counts[i] > hi) hi = firsts[i] + counts[i];
  }
  /* Past three windows (a downscale by more than about 2.5) the permutes cost as much as gathers. */
  int windows = hi - lo <= 8 ? 1 : hi - lo <= 16 ? 2 : hi - lo <= 24 ? 3 : 0;
  if (windows == 0 && !gathers) return 0;
  /* The windows of a block at the row's end would reach past it: gathers, few of them. */
  if (windows > 0 && lo + 8 * windows > limit) windows = 0;
  __m256i k[GATHER_MAX_TAPS], at[GATHER_MAX_TAPS], live[GATHER_MAX_TAPS];
  for (int32_t t = 0; t < n; t++) {
    __m256i step = _mm256_set1_epi32(t);
    live[t] = _mm256_cmpgt_epi32(count, step);
    /* A lane past its own taps has weight 0: whatever pixel it is handed adds nothing. */
    k[t] = _mm256_mask_i32gather_epi32(zero, (const int *)weights, _mm256_add_epi32(row_of_k, step), live[t], 4);
    at[t] = _mm256_add_epi32(first, step);
  }
  if (windows > 0) {
    /* Each lane's tap t is pixel first + t - lo of the window; a lane past its taps is clamped into it. */
    __m256i idx[GATHER_MAX_TAPS];
    __m256i last = _mm256_set1_epi32(8 * windows - 1);
    for (int32_t t = 0; t < n; t++)
      idx[t] = _mm256_min_epi32(_mm256_sub_epi32(at[t], _mm256_set1_epi32(lo)), last);
    if (windows == 1)
      horizontal_block_rows(src, src_row_bytes, y_first, rows, out_width, x0, lo, 1, idx, k, n, tmp);
    else if (windows == 2)
      horizontal_block_rows(src, src_row_bytes, y_first, rows, out_width, x0, lo, 2, idx, k, n, tmp);
    else
      horizontal_block_rows(src, src_row_bytes, y_first, rows, out_width, x0, lo, 3, idx, k, n, tmp);
    return 1;
  }
  for (int32_t r = 0; r < rows; r++) {
    const int *in = (const int *)(const void *)(src + (int64_t)(y_first + r) * src_row_bytes);
    __m256i red = _mm256_set1_epi32(HALF), green = red, blue = red;
    for (int32_t t = 0; t < n; t++) {
      __m256i pixels = _mm256_mask_i32gather_epi32(zero, in, at[t], live[t], 4);
      red = gather_channel(red, pixels, 0, k[t]);
      green = gather_channel(green, pixels, 8, k[t]);
      blue = gather_channel(blue, pixels, 16, k[t]);
    }
    __m256i out = _mm256_or_si256(_mm256_or_si256(gather_clip8(red, 0), gather_clip8(green, 8)), gather_clip8(blue, 16));
    _mm256_storeu_si256((__m256i *)(void *)(tmp + ((int64_t)r * out_width + x0) * 4), out);
  }
  return 1;
}

#define VNNI_TARGET "avx512f,avx512vl,avx512bw,avx512vnni"

/*
 * A column's weights k[16s .. 16s + 16) (0 past n, none of them read) as three signed digits,
 * k = d0 + 256 d1 + 65536 d2, each a byte of the four taps' weights of a lane group, over the
 * group's four lanes: what vpdpbusd multiplies four pixels' bytes of one channel by. Returns the
 * lanes whose weight is not three digits (PIL's are within about 1.5 * 2^22, three digits within
 * 2^23): none, or this form cannot do the column.
 */
__attribute__((target(VNNI_TARGET))) static inline __mmask16 vnni_digits(const int32_t *k, int32_t s, int32_t n,
                                                                          __m512i d[3])
{
  const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  int32_t left = n - 16 * s;
  __mmask16 live = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1);
  __m512i w = _mm512_maskz_loadu_epi32(live, k + 16 * s);
  __m512i digit = w;
  for (int j = 0; j < 3; j++) {
    d[j] = _mm512_permutexvar_epi32(spread, _mm512_castsi128_si512(_mm512_cvtepi32_epi8(w)));
    digit = _mm512_srai_epi32(_mm512_slli_epi32(w, 24), 24);
    if (j < 2) w = _mm512_srai_epi32(_mm512_sub_epi32(w, digit), 8);
  }
  return _mm512_cmpneq_epi32_mask(w, digit);
}

/* The digits of up to this many sixteen-tap steps, over all the columns of a chunk, kept on the stack (24 KiB). */
#define VNNI_STEPS 128

/*
 * Output columns [x_from, x_to) of every row with AVX-512 VNNI, for any number of taps: a column's
 * taps sixteen pixels at a time, their bytes regrouped so that each 32-bit lane holds one channel
 * of four pixels, and vpdpbusd adds the four products of each lane with each of the weights' three
 * digits, into three sums added as s0 + 256 s1 + 65536 s2: the same integers modulo 2^32, so the
 * same sums and the same bytes. Three vpdpbusd do the work of four vpmulld and four additions
 * (a form with vpmulld, four pixels at a time, took 1.4 times as long on 36 taps). The digits of a
 * chunk of columns are computed once for all its rows; each column is done in four rows at once.
 * A column's last step loads its pixels under a mask: no read reaches past its own taps, which lie
 * within the row (Resampler.checkInside and NativeKernels.checkTaps check them in Java).
 * Returns the first column not done, x_to unless a column's weights are not three digits or its
 * taps more than VNNI_STEPS steps (neither where PIL computes them).
 */
__attribute__((target(VNNI_TARGET))) static int32_t horizontal_vnni(const uint8_t *src, int64_t src_row_bytes,
                                                                     int32_t y_first, int32_t rows,
                                                                     int32_t out_width, int32_t x_from, int32_t x_to,
                                                                     const int32_t *bounds, const int32_t *weights,
                                                                     int32_t taps, uint8_t *tmp)
{
  const __m512i half = _mm512_set1_epi32(HALF);
  const __m512i top = _mm512_set1_epi32(255);
  const __m128i rgb = _mm_set1_epi32(0x00FFFFFF);
  /* Within each 16 bytes, four pixels' RGBX to RRRR GGGG BBBB XXXX. */
  const __m512i channels = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  __m512i digits[VNNI_STEPS][3];
  for (int32_t c0 = x_from; c0 < x_to;) {
    int32_t steps = 0, c1 = c0;
    __mmask16 bad = 0;
    for (; c1 < x_to && steps + (bounds[2 * c1 + 1] + 15) / 16 <= VNNI_STEPS; c1++)
      for (int32_t s = 0; 16 * s < bounds[2 * c1 + 1]; s++)
        bad |= vnni_digits(weights + (int64_t)c1 * taps, s, bounds[2 * c1 + 1], digits[steps++]);
    if (bad || c1 == c0) return c0;
    for (int32_t r0 = 0; r0 < rows; r0 += 4) {
      /* Past the last row the block repeats it: the same pixel stored again. */
      int32_t live_rows = rows - r0 < 4 ? rows - r0 : 4;
      const uint8_t *in[4];
      uint8_t *o[4];
      for (int i = 0; i < 4; i++) {
        int32_t r = r0 + (i < live_rows ? i : live_rows - 1);
        in[i] = src + (int64_t)(y_first + r) * src_row_bytes;
        o[i] = tmp + (int64_t)r * out_width * 4;
      }
      const __m512i(*d)[3] = (const __m512i(*)[3])digits;
      for (int32_t x = c0; x < c1; x++) {
        int32_t n = bounds[2 * x + 1];
        int64_t at = 4 * (int64_t)bounds[2 * x];
        __m512i sum[4][3];
        for (int i = 0; i < 4; i++)
          for (int j = 0; j < 3; j++)
            sum[i][j] = _mm512_setzero_si512();
        for (int32_t left = n; left > 0; left -= 16, at += 64, d++) {
          __mmask16 live = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1);
          for (int i = 0; i < 4; i++) {
            __m512i px = _mm512_shuffle_epi8(_mm512_maskz_loadu_epi32(live, in[i] + at), channels);
            for (int j = 0; j < 3; j++)
              sum[i][j] = _mm512_dpbusd_epi32(sum[i][j], px, (*d)[j]);
          }
        }
        __m512i v[4];
        for (int i = 0; i < 4; i++)
          v[i] = _mm512_add_epi32(_mm512_add_epi32(sum[i][0], _mm512_slli_epi32(sum[i][1], 8)),
                                  _mm512_slli_epi32(sum[i][2], 16));
        /* Each row's four lane groups added: rows 0 to 3's RGBX sums, in that order. */
        __m512i s01 = _mm512_add_epi32(_mm512_shuffle_i32x4(v[0], v[1], 0x44), _mm512_shuffle_i32x4(v[0], v[1], 0xEE));
        __m512i s23 = _mm512_add_epi32(_mm512_shuffle_i32x4(v[2], v[3], 0x44), _mm512_shuffle_i32x4(v[2], v[3], 0xEE));
        __m512i all = _mm512_add_epi32(_mm512_shuffle_i32x4(s01, s23, 0x88), _mm512_shuffle_i32x4(s01, s23, 0xDD));
        all = _mm512_srai_epi32(_mm512_add_epi32(all, half), STOKE_PRECISION_BITS);
        all = _mm512_min_epi32(_mm512_max_epi32(all, _mm512_setzero_si512()), top);
        __m128i px = _mm_and_si128(_mm512_cvtepi32_epi8(all), rgb);
        _mm_storeu_si32(o[3] + 4 * (int64_t)x, _mm_srli_si128(px, 12));
        _mm_storeu_si32(o[2] + 4 * (int64_t)x, _mm_srli_si128(px, 8));
        _mm_storeu_si32(o[1] + 4 * (int64_t)x, _mm_srli_si128(px, 4));
        _mm_storeu_si32(o[0] + 4 * (int64_t)x, px);
      }
    }
    c0 = c1;
  }
  return x_to;
}

/* One channel of sixteen RGBX pixels, times k, added to sum. */
__attribute__((target(VNNI_TARGET))) static inline __m512i zmm_channel(__m512i sum, __m512i pixels, int shift,
                                                                        __m512i k)
{
  __m512i c = _mm512_and_si512(_mm512_srli_epi32(pixels, shift), _mm512_set1_epi32(0xFF));
  return _mm512_add_epi32(sum, _mm512_mullo_epi32(c, k));
}

/* clip8 of sixteen sums, placed at byte `shift` of each lane. */
__attribute__((target(VNNI_TARGET))) static inline __m512i zmm_clip8(__m512i sum, int shift)
{
  __m512i v = _mm512_srai_epi32(sum, STOKE_PRECISION_BITS);
  v = _mm512_min_epi32(_mm512_max_epi32(v, _mm512_setzero_si512()), _mm512_set1_epi32(255));
  return _mm512_slli_epi32(v, shift);
}

#define ZMM_LANES 16

/*
 * horizontal_block's permutes sixteen columns at once (AVX-512): output columns [x0, x0 + 16) of
 * every row, where their taps all lie within three runs of sixteen source pixels from the block's
 * first (a downscale by about 2.5 or less). Each row's pixels are loaded once, under a mask that
 * stops at `limit`, the furthest pixel any column reads, and each lane takes its tap t's pixel by
 * one or two permutes. The same integer sums as horizontal_columns, so the same bytes; a lane past
 * its own taps has weight 0. Returns whether the block was done (not when its taps spread further,
 * or are more than GATHER_MAX_TAPS).
 */
__attribute__((target(VNNI_TARGET))) static int horizontal_block16(const uint8_t *src, int64_t src_row_bytes,
                                                                   int32_t y_first, int32_t rows, int32_t out_width,
                                                                   int32_t x0, const int32_t *bounds,
                                                                   const int32_t *weights, int32_t taps, int32_t limit,
                                                                   uint8_t *tmp)
{
  int32_t n = 0, lo = bounds[2 * x0], hi = 0;
  for (int j = 0; j < ZMM_LANES; j++) {
    int32_t first = bounds[2 * (x0 + j)], count = bounds[2 * (x0 + j) + 1];
    if (count > n) n = count;
    if (first < lo) lo = first;
    if (first + count > hi) hi = first + count;
  }
  if (n > GATHER_MAX_TAPS || hi - lo > 3 * ZMM_LANES) return 0;
  int windows = hi - lo <= ZMM_LANES ? 1 : hi - lo <= 2 * ZMM_LANES ? 2 : 3;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i pair = _mm512_add_epi32(_mm512_slli_epi32(lane, 1), _mm512_set1_epi32(2 * x0));
  __m512i first = _mm512_i32gather_epi32(pair, bounds, 4);
  __m512i count = _mm512_i32gather_epi32(pair, bounds + 1, 4);
  __m512i row_of_k = _mm512_mullo_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(x0)), _mm512_set1_epi32(taps));
  __m512i last = _mm512_set1_epi32(ZMM_LANES * windows - 1);
  __m512i k[GATHER_MAX_TAPS], idx[GATHER_MAX_TAPS];
  __mmask16 third[GATHER_MAX_TAPS];
  for (int32_t t = 0; t < n; t++) {
    __m512i step = _mm512_set1_epi32(t);
    __mmask16 live = _mm512_cmpgt_epi32_mask(count, step);
    /* A lane past its own taps has weight 0: whatever pixel it is handed adds nothing. */
    k[t] = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, _mm512_add_epi32(row_of_k, step), weights, 4);
    idx[t] = _mm512_min_epi32(_mm512_sub_epi32(_mm512_add_epi32(first, step), _mm512_set1_epi32(lo)), last);
    third[t] = _mm512_cmpge_epi32_mask(idx[t], _mm512_set1_epi32(2 * ZMM_LANES));
  }
  /* The windows' pixels that lie within the row's reach: no read past `limit`. */
  __mmask16 reach[3];
  for (int w = 0; w < 3; w++) {
    int32_t left = limit - lo - ZMM_LANES * w;
    reach[w] = left >= ZMM_LANES ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
  }
  for (int32_t r = 0; r < rows; r++) {
    const uint8_t *in = src + (int64_t)(y_first + r) * src_row_bytes + 4 * (int64_t)lo;
    __m512i w0 = _mm512_maskz_loadu_epi32(reach[0], in);
    __m512i w1 = windows >= 2 ? _mm512_maskz_loadu_epi32(reach[1], in + 64) : w0;
    __m512i w2 = windows >= 3 ? _mm512_maskz_loadu_epi32(reach[2], in + 128) : w0;
    __m512i red = _mm512_set1_epi32(HALF), green = red, blue = red;
    for (int32_t t = 0; t < n; t++) {
      __m512i pixels = _mm512_permutex2var_epi32(w0, idx[t], w1);
      if (windows >= 3) pixels = _mm512_mask_permutexvar_epi32(pixels, third[t], idx[t], w2);
      red = zmm_channel(red, pixels, 0, k[t]);
      green = zmm_channel(green, pixels, 8, k[t]);
      blue = zmm_channel(blue, pixels, 16, k[t]);
    }
    __m512i out = _mm512_or_si512(_mm512_or_si512(zmm_clip8(red, 0), zmm_clip8(green, 8)), zmm_clip8(blue, 16));
    _mm512_storeu_si512((void *)(tmp + ((int64_t)r * out_width + x0) * 4), out);
  }
  return 1;
}

#define VBMI_TARGET VNNI_TARGET ",avx512vbmi"
#define BYTE_GROUPS (GATHER_MAX_TAPS / 4)

/*
 * The rows of horizontal_block16_bytes: for each, the 64 pixels from `lo` (columns 8-15's from
 * `lo2` too where `split`), loaded under the masks `reach`, then each channel's taps picked and
 * summed, clipped, and the block's sixteen RGBX pixels stored.
 */
__attribute__((target(VBMI_TARGET), always_inline)) static inline void bytes_rows(
    const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows, int32_t out_width, int32_t x0,
    int32_t lo, int32_t lo2, const __mmask16 *reach, int groups, const __m512i (*idx)[3],
    const __mmask64 (*upper)[3], const __m512i (*dig)[3], uint8_t *tmp, int split)
{
  const __m512i half = _mm512_set1_epi32(HALF), zero = _mm512_setzero_si512(), top = _mm512_set1_epi32(255);
  const __mmask64 second = (__mmask64)0xFFFFFFFF00000000ull; /* columns 8-15's bytes */
  for (int32_t r = 0; r < rows; r++) {
    const uint8_t *row = src + (int64_t)(y_first + r) * src_row_bytes, *in = row + 4 * (int64_t)lo;
    __m512i w0 = _mm512_maskz_loadu_epi32(reach[0], in), w1 = _mm512_maskz_loadu_epi32(reach[1], in + 64);
    __m512i w2 = _mm512_maskz_loadu_epi32(reach[2], in + 128), w3 = _mm512_maskz_loadu_epi32(reach[3], in + 192);
    __m512i v0 = zero, v1 = zero, v2 = zero, v3 = zero;
    if (split) {
      const uint8_t *in2 = row + 4 * (int64_t)lo2;
      v0 = _mm512_maskz_loadu_epi32(reach[4], in2), v1 = _mm512_maskz_loadu_epi32(reach[5], in2 + 64);
      v2 = _mm512_maskz_loadu_epi32(reach[6], in2 + 128), v3 = _mm512_maskz_loadu_epi32(reach[7], in2 + 192);
    }
    __m512i out = zero;
    for (int c = 0; c < 3; c++) {
      __m512i s0 = half, s1 = zero, s2 = zero;
      for (int g = 0; g < groups; g++) {
        __m512i px = _mm512_mask_blend_epi8(upper[g][c], _mm512_permutex2var_epi8(w0, idx[g][c], w1),
                                            _mm512_permutex2var_epi8(w2, idx[g][c], w3));
        if (split) {
          __m512i px2 = _mm512_mask_blend_epi8(upper[g][c], _mm512_permutex2var_epi8(v0, idx[g][c], v1),
                                               _mm512_permutex2var_epi8(v2, idx[g][c], v3));
          px = _mm512_mask_blend_epi8(second, px, px2);
        }
        s0 = _mm512_dpbusd_epi32(s0, px, dig[g][0]);
        s1 = _mm512_dpbusd_epi32(s1, px, dig[g][1]);
        s2 = _mm512_dpbusd_epi32(s2, px, dig[g][2]);
      }
      __m512i v = _mm512_add_epi32(_mm512_add_epi32(s0, _mm512_slli_epi32(s1, 8)), _mm512_slli_epi32(s2, 16));
      v = _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(v, STOKE_PRECISION_BITS), zero), top);
      out = _mm512_or_si512(out, _mm512_slli_epi32(v, 8 * c));
    }
    _mm512_storeu_si512((void *)(tmp + ((int64_t)r * out_width + x0) * 4), out);
  }
}

/*
 * horizontal_block16 by bytes (AVX-512 VBMI and VNNI): output columns [x0, x0 + 16) of every row,
 * where their taps spread over more than two runs of sixteen source pixels from the block's first
 * and at most four (a downscale by about 1.6 to 3.5), or, split in two blocks of eight columns, at
 * most four from each half's first (to about 7). Each 32-bit lane holds one channel of one
 * column's four taps (vpermi2b picks its bytes from its half's 64 pixels, loaded once a row under
 * masks that stop at `limit`), and vpdpbusd adds their four products with each of the weights'
 * three signed digits, into three sums added as s0 + 256 s1 + 65536 s2, as horizontal_vnni does:
 * the same integers modulo 2^32, so the same sums and the same bytes as horizontal_columns. A tap
 * past a column's own has weights 0 and takes its first pixel. Where horizontal_block16 needs its
 * third window it takes about as long (a 420 x 330 box to 224) or 0.85x (500 x 375: 39.5 against
 * 47.2 us), and past 48 pixels, where horizontal_vnni did a column at a time, 0.4x (700 x 450: 56.3
 * against 148.3), split 0.5-0.7x (900 x 600: 108 against 218; 1,400 x 900, 15 taps: 257 against
 * 354; benchmarks/native/resize_passes.c, docs/benchmarks/pixels.md). Within 32 pixels it was as
 * fast as horizontal_block16 on 5 taps and 1.3x as slow on 3, so it leaves those. Returns whether
 * the block was done (not when its taps spread so, are more than GATHER_MAX_TAPS, or a weight is
 * not three digits).
 */
__attribute__((target(VBMI_TARGET))) static int horizontal_block16_bytes(const uint8_t *src, int64_t src_row_bytes,
                                                                        int32_t y_first, int32_t rows,
                                                                        int32_t out_width, int32_t x0,
                                                                        const int32_t *bounds, const int32_t *weights,
                                                                        int32_t taps, int32_t limit, uint8_t *tmp)
{
  /* The reach of the block, and of its halves: columns 0-7 from lo to hi1, 8-15 from lo2 to hi. */
  int32_t n = 0, lo = bounds[2 * x0], hi = 0, lo2 = bounds[2 * (x0 + 8)], hi1 = 0;
  for (int j = 0; j < ZMM_LANES; j++) {
    int32_t first = bounds[2 * (x0 + j)], count = bounds[2 * (x0 + j) + 1];
    if (count > n) n = count;
    if (first < lo) lo = first;
    if (first + count > hi) hi = first + count;
    if (j < ZMM_LANES / 2 && first + count > hi1) hi1 = first + count;
    if (j >= ZMM_LANES / 2 && first < lo2) lo2 = first;
  }
  /* Within 32 pixels horizontal_block16's permutes are as fast, and faster on few taps. */
  if (n > GATHER_MAX_TAPS || hi - lo <= 2 * ZMM_LANES) return 0;
  int split = hi - lo > 4 * ZMM_LANES;
  if (split && (hi1 - lo > 4 * ZMM_LANES || hi - lo2 > 4 * ZMM_LANES)) return 0;
  if (!split) lo2 = lo;
  int groups = (n + 3) / 4;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i bytes = _mm512_set1_epi32(0x01010101), low = _mm512_set1_epi32(0xFF);
  __m512i pair = _mm512_add_epi32(_mm512_slli_epi32(lane, 1), _mm512_set1_epi32(2 * x0));
  __m512i first = _mm512_i32gather_epi32(pair, bounds, 4);
  __m512i count = _mm512_i32gather_epi32(pair, bounds + 1, 4);
  __m512i row_of_k = _mm512_mullo_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(x0)), _mm512_set1_epi32(taps));
  /* Each lane's first pixel's byte within its half's 64 pixels, and its tap count, in each of its four bytes. */
  __m512i from = _mm512_mask_blend_epi32((__mmask16)0xFF00, _mm512_set1_epi32(lo), _mm512_set1_epi32(lo2));
  __m512i base = _mm512_mullo_epi32(_mm512_slli_epi32(_mm512_sub_epi32(first, from), 2), bytes);
  __m512i counts = _mm512_mullo_epi32(count, bytes);
  __m512i idx[BYTE_GROUPS][3], dig[BYTE_GROUPS][3];
  __mmask64 upper[BYTE_GROUPS][3];
  __mmask16 bad = 0;
  for (int g = 0; g < groups; g++) {
    /* Byte b of a lane: tap 4g + b's pixel, 4 (first - from + t) + channel; a tap past the lane's own, its first. */
    __m512i tap = _mm512_set1_epi32(0x03020100 + 0x04040404 * g);
    __mmask64 live = _mm512_cmplt_epu8_mask(tap, counts);
    __m512i at = _mm512_mask_add_epi8(base, live, base, _mm512_slli_epi32(tap, 2));
    for (int c = 0; c < 3; c++) {
      idx[g][c] = _mm512_add_epi8(at, _mm512_set1_epi8((char)c));
      upper[g][c] = _mm512_movepi8_mask(idx[g][c]);
    }
    /* The weights' signed digits, w = d0 + 256 d1 + 65536 d2, tap 4g + b's in byte b of each lane. */
    __m512i d[3] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int b = 0; b < 4; b++) {
      __m512i t = _mm512_set1_epi32(4 * g + b);
      __mmask16 mine = _mm512_cmpgt_epi32_mask(count, t);
      __m512i w = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mine, _mm512_add_epi32(row_of_k, t), weights, 4);
      __m512i d0 = _mm512_srai_epi32(_mm512_slli_epi32(w, 24), 24);
      __m512i r = _mm512_srai_epi32(_mm512_sub_epi32(w, d0), 8);
      __m512i d1 = _mm512_srai_epi32(_mm512_slli_epi32(r, 24), 24);
      __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(r, d1), 8);
      bad |= _mm512_cmpgt_epi32_mask(d2, _mm512_set1_epi32(127)) | _mm512_cmplt_epi32_mask(d2, _mm512_set1_epi32(-128));
      d[0] = _mm512_or_si512(d[0], _mm512_slli_epi32(_mm512_and_si512(d0, low), 8 * b));
      d[1] = _mm512_or_si512(d[1], _mm512_slli_epi32(_mm512_and_si512(d1, low), 8 * b));
      d[2] = _mm512_or_si512(d[2], _mm512_slli_epi32(_mm512_and_si512(d2, low), 8 * b));
    }
    for (int k = 0; k < 3; k++) dig[g][k] = d[k];
  }
  if (bad) return 0;
  /* Each half's windows' pixels that lie within the row's reach: no read past `limit`. */
  __mmask16 reach[8];
  for (int w = 0; w < 8; w++) {
    int32_t left = limit - (w < 4 ? lo : lo2) - ZMM_LANES * (w % 4);
    reach[w] = left >= ZMM_LANES ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
  }
  if (split)
    bytes_rows(src, src_row_bytes, y_first, rows, out_width, x0, lo, lo2, reach, groups,
               (const __m512i(*)[3])idx, (const __mmask64(*)[3])upper, (const __m512i(*)[3])dig, tmp, 1);
  else
    bytes_rows(src, src_row_bytes, y_first, rows, out_width, x0, lo, lo2, reach, groups,
               (const __m512i(*)[3])idx, (const __mmask64(*)[3])upper, (const __m512i(*)[3])dig, tmp, 0);
  return 1;
}

/*
 * Does what AVX-512 and AVX2 can; returns the first column left to horizontal_columns. With
 * AVX-512 VNNI that is none: with VBMI too, blocks of sixteen columns whose taps spread over 33 to
 * 64 source pixels, or further but within 64 a half of eight columns, take horizontal_block16_bytes;
 * blocks within 48 take horizontal_block16's permutes, blocks of eight within 24 the AVX2 ones
 * (about a downscale by 2.5 or less: the permutes are the faster there), and every other column,
 * however many its taps, is done by horizontal_vnni. Sixteen columns at once took half the time of eight on a 0.2 MP crop's
 * rows to 224, from the cache (15.4 against 34.5 us for a 330 x 250 box, 5 taps; 50.6 against 91.1
 * for 500 x 375, 7 taps; benchmarks/native/resize_passes.c, docs/benchmarks/pixels.md). Without it,
 * AVX2 does blocks up to GATHER_MAX_TAPS taps, with permutes or gathers, and one pixel at a time
 * past. (Where they cross: docs/benchmarks/pixels.md, "The resize kernels in C".)
 */
static int32_t horizontal_blocks(const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows,
                                 int32_t out_width, const int32_t *bounds, const int32_t *weights, int32_t taps,
                                 int vnni, uint8_t *tmp)
{
  if (vnni && taps > GATHER_MAX_TAPS)
    return horizontal_vnni(src, src_row_bytes, y_first, rows, out_width, 0, out_width, bounds, weights, taps, tmp);
  if (taps > GATHER_MAX_TAPS || !__builtin_cpu_supports("avx2")) return 0;
  int32_t limit = 0;
  for (int32_t x = 0; x < out_width; x++)
    if (bounds[2 * x] + bounds[2 * x + 1] > limit) limit = bounds[2 * x] + bounds[2 * x + 1];
  int32_t x0 = 0;
  for (; x0 + GATHER_LANES <= out_width; x0 += GATHER_LANES) {
    if (vnni >= VNNI_BYTES && x0 + ZMM_LANES <= out_width
        && horizontal_block16_bytes(src, src_row_bytes, y_first, rows, out_width, x0, bounds, weights, taps, limit,
                                    tmp)) {
      x0 += ZMM_LANES - GATHER_LANES;
      continue;
    }
    if (vnni && x0 + ZMM_LANES <= out_width
        && horizontal_block16(src, src_row_bytes, y_first, rows, out_width, x0, bounds, weights, taps, limit, tmp)) {
      x0 += ZMM_LANES - GATHER_LANES;
      continue;
    }
    if (horizontal_block(src, src_row_bytes, y_first, rows, out_width, x0, bounds, weights, taps, limit, !vnni, tmp))
      continue;
    int32_t x1 = x0 + GATHER_LANES;
    if (horizontal_vnni(src, src_row_bytes, y_first, rows, out_width, x0, x1, bounds, weights, taps, tmp) < x1)
      horizontal_block(src, src_row_bytes, y_first, rows, out_width, x0, bounds, weights, taps, limit, 1, tmp);
  }
  if (vnni && x0 < out_width)
    return horizontal_vnni(src, src_row_bytes, y_first, rows, out_width, x0, out_width, bounds, weights, taps, tmp);
  return x0;
}

/*
 * What of AVX-512 VNNI runs here: 0, none; VNNI_WORDS, horizontal_vnni and horizontal_block16;
 * VNNI_BYTES, horizontal_block16_bytes too, where VBMI's byte permutes are there.
 */
static int vnni_supported(void)
{
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl"))
    return 0;
  return __builtin_cpu_supports("avx512vbmi") ? VNNI_BYTES : VNNI_WORDS;
}

/* Whether vertical_clip_zmm can run here. */
static int zmm_rows_supported(void)
{
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

/*
 * One output row's vertical filter, clipped to bytes, for channel values [from, from + count) of
 * its 4 * width: sixty-four at a time, their sums kept in four registers over all the row's taps
 * (`first`, its first source row, rows `stride` bytes apart), where the gcc-vectorised loop added
 * each tap's row into an accumulator array in memory. The same integer sums and clip as
 * filter_row and clip_row, so the same bytes, in 0.54x the time (19.1 against 35.3 us for a 224 x
 * 224 crop from 250 rows, 5 taps; benchmarks/native/resize_passes.c). The last loads and the store
 * are masked: nothing past `count` is read or written.
 */
__attribute__((target("avx512f,avx512bw"))) static void vertical_clip_zmm(const uint8_t *first, int64_t stride,
                                                                        int32_t n, const int32_t *k, int64_t from,
                                                                        int64_t count, uint8_t *out)
{
  const __m512i half = _mm512_set1_epi32(HALF), top = _mm512_set1_epi32(255), zero = _mm512_setzero_si512();
  for (int64_t i = 0; i < count; i += 64) {
    int64_t left = count - i;
    __mmask64 live = left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
    __m512i s[4] = {half, half, half, half};
    for (int32_t t = 0; t < n; t++) {
      __m512i kt = _mm512_set1_epi32(k[t]);
      __m512i b = _mm512_maskz_loadu_epi8(live, first + t * stride + from + i);
      s[0] = _mm512_add_epi32(s[0], _mm512_mullo_epi32(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(b)), kt));
      s[1] = _mm512_add_epi32(s[1], _mm512_mullo_epi32(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(b, 1)), kt));
      s[2] = _mm512_add_epi32(s[2], _mm512_mullo_epi32(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(b, 2)), kt));
      s[3] = _mm512_add_epi32(s[3], _mm512_mullo_epi32(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(b, 3)), kt));
    }
    __m128i q[4];
    for (int j = 0; j < 4; j++) {
      __m512i v = _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(s[j], STOKE_PRECISION_BITS), zero), top);
      q[j] = _mm512_cvtepi32_epi8(v);
    }
    __m512i packed = _mm512_inserti32x4(_mm512_castsi128_si512(q[0]), q[1], 1);
    packed = _mm512_inserti32x4(_mm512_inserti32x4(packed, q[2], 2), q[3], 3);
    _mm512_mask_storeu_epi8(out + i, live, packed);
  }
}
#else
static int32_t horizontal_blocks(const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows,
                                 int32_t out_width, const int32_t *bounds, const int32_t *weights, int32_t taps,
                                 int vnni, uint8_t *tmp)
{
  (void)src, (void)src_row_bytes, (void)y_first, (void)rows, (void)out_width, (void)bounds, (void)weights;
  (void)taps, (void)vnni, (void)tmp;
  return 0;
}

static int vnni_supported(void)
{
  return 0;
}

static int zmm_rows_supported(void)
{
  return 0;
}

static void vertical_clip_zmm(const uint8_t *first, int64_t stride, int32_t n, const int32_t *k, int64_t from,
                              int64_t count, uint8_t *out)
{
  (void)first, (void)stride, (void)n, (void)k, (void)from, (void)count, (void)out;
}
#endif

/*
 * The horizontal pass with horizontal_vnni or without it (the path of a CPU without AVX-512 VNNI,
 * which check_horizontal.c runs on one with it too).
 */
static void horizontal_pass(const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows,
                            int32_t out_width, const int32_t *bounds, const int32_t *weights, int32_t taps, int vnni,
                            uint8_t *tmp)
{
  int32_t done = horizontal_blocks(src, src_row_bytes, y_first, rows, out_width, bounds, weights, taps, vnni, tmp);
  if (done < out_width)
    horizontal_columns(src, src_row_bytes, y_first, rows, out_width, done, bounds, weights, taps, tmp);
}

void stoke_resample_horizontal(const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows,
                               int32_t out_width, const int32_t *bounds, const int32_t *weights, int32_t taps,
                               uint8_t *tmp)
{
  horizontal_pass(src, src_row_bytes, y_first, rows, out_width, bounds, weights, taps, vnni_supported(), tmp);
}

/* acc[i] += row[i] * k over one row of 4 * width bytes: the loop gcc vectorises. */
static inline void accumulate_row(int32_t *restrict acc, const uint8_t *restrict row, int32_t n, int32_t k)
{
  for (int32_t i = 0; i < n; i++)
    acc[i] += row[i] * k;
}

/* Output row y's vertical filter, from HALF, into acc (4 * width int32). */
static inline void filter_row(int32_t *acc, const uint8_t *tmp, int32_t width, int32_t y_first, int32_t y,
                              const int32_t *bounds, const int32_t *weights, int32_t taps)
{
  int32_t n = 4 * width;
  for (int32_t i = 0; i < n; i++)
    acc[i] = HALF;
  const uint8_t *first = tmp + (int64_t)(bounds[2 * y] - y_first) * n;
  for (int32_t t = 0; t < bounds[2 * y + 1]; t++)
    accumulate_row(acc, first + (int64_t)t * n, n, weights[(int64_t)y * taps + t]);
}

/* One row of RGBX to RGB: the X byte dropped. */
static inline void rgbx_row_to_rgb(const uint8_t *restrict in, int32_t width, uint8_t *restrict o)
{
  for (int32_t x = 0; x < width; x++) {
    o[3 * x] = in[4 * x];
    o[3 * x + 1] = in[4 * x + 1];
    o[3 * x + 2] = in[4 * x + 2];
  }
}

/* Pixels clipped at a time into a stack buffer: 4 KiB of RGBX. */
#define CLIP_CHUNK 1024

/*
 * clip8 of n sums into bytes: the same values, in a loop gcc vectorises (shift, two clamps,
 * pack), where clip8 called per channel while placing RGB did not; a 224-pixel row's vertical
 * pass took about 30% less time.
 */
static inline void clip_row(const int32_t *restrict acc, int32_t n, uint8_t *restrict out)
{
  for (int32_t i = 0; i < n; i++) {
    int32_t s = acc[i] >> STOKE_PRECISION_BITS;
    s = s < 0 ? 0 : s;
    s = s > 255 ? 255 : s;
    out[i] = (uint8_t)s;
  }
}

/*
 * Pixels [x0, x0 + m) of output row y, clipped to RGBX bytes in rgbx: from the row's sums in acc
 * (filter_row's, the loop gcc vectorises), or with AVX-512 computed here (vertical_clip_zmm).
 */
static inline void clip_chunk(int zmm, const int32_t *acc, const uint8_t *tmp, int32_t width, int32_t y_first,
                              int32_t y, const int32_t *bounds, const int32_t *weights, int32_t taps, int32_t x0,
                              int32_t m, uint8_t *rgbx)
{
  if (zmm) {
    int64_t n = 4 * (int64_t)width;
    vertical_clip_zmm(tmp + (int64_t)(bounds[2 * y] - y_first) * n, n, bounds[2 * y + 1],
                      weights + (int64_t)y * taps, 4 * (int64_t)x0, 4 * (int64_t)m, rgbx);
  } else {
    clip_row(acc + 4 * (int64_t)x0, 4 * m, rgbx);
  }
}

STOKE_CLONES
void stoke_resample_vertical_rgb(const uint8_t *tmp, int32_t width, int32_t y_first, int32_t out_rows,
                                 const int32_t *bounds, const int32_t *weights, int32_t taps, int32_t *acc,
                                 uint8_t *dst, int64_t dst_offset)
{
  uint8_t rgbx[4 * CLIP_CHUNK];
  int zmm = zmm_rows_supported();
  for (int32_t y = 0; y < out_rows; y++) {
    if (!zmm) filter_row(acc, tmp, width, y_first, y, bounds, weights, taps);
    uint8_t *o = dst + dst_offset + (int64_t)y * 3 * width;
    for (int32_t x0 = 0; x0 < width; x0 += CLIP_CHUNK) {
      int32_t m = width - x0 < CLIP_CHUNK ? width - x0 : CLIP_CHUNK;
      clip_chunk(zmm, acc, tmp, width, y_first, y, bounds, weights, taps, x0, m, rgbx);
      rgbx_row_to_rgb(rgbx, m, o + 3 * (int64_t)x0);
    }
  }
}

STOKE_CLONES
void stoke_resample_vertical_f32(const uint8_t *tmp, int32_t width, int32_t y_first, int32_t out_rows,
                                 const int32_t *bounds, const int32_t *weights, int32_t taps, int32_t *acc,
                                 const float *table, uint8_t *dst, int64_t dst_offset)
{
  int64_t plane = (int64_t)width * out_rows;
  float *out = (float *)(void *)(dst + dst_offset);
  uint8_t rgbx[4 * CLIP_CHUNK];
  int zmm = zmm_rows_supported();
  for (int32_t y = 0; y < out_rows; y++) {
    if (!zmm) filter_row(acc, tmp, width, y_first, y, bounds, weights, taps);
    float *row = out + (int64_t)y * width;
    for (int32_t x0 = 0; x0 < width; x0 += CLIP_CHUNK) {
      int32_t m = width - x0 < CLIP_CHUNK ? width - x0 : CLIP_CHUNK;
      clip_chunk(zmm, acc, tmp, width, y_first, y, bounds, weights, taps, x0, m, rgbx);
      for (int32_t x = 0; x < m; x++) {
        row[x0 + x] = table[rgbx[4 * x]];
        row[plane + x0 + x] = table[256 + rgbx[4 * x + 1]];
        row[2 * plane + x0 + x] = table[512 + rgbx[4 * x + 2]];
      }
    }
  }
}

STOKE_CLONES
void stoke_store_rgb(const uint8_t *src, int64_t src_offset, int64_t src_row_bytes, int32_t pixel_bytes,
                     int32_t width, int32_t rows, uint8_t *dst, int64_t dst_offset)
{
  const uint8_t *in = src + src_offset;
  uint8_t *o = dst + dst_offset;
  int64_t out_row = 3 * (int64_t)width;
  if (pixel_bytes == 3 && src_row_bytes == out_row) {
    memcpy(o, in, out_row * rows);
    return;
  }
  for (int32_t y = 0; y < rows; y++, in += src_row_bytes, o += out_row) {
    if (pixel_bytes == 3)
      memcpy(o, in, out_row);
    else
      rgbx_row_to_rgb(in, width, o);
  }
}

STOKE_CLONES
void stoke_store_f32(const uint8_t *src, int64_t src_offset, int64_t src_row_bytes, int32_t pixel_bytes,
                     int32_t width, int32_t rows, const float *table, uint8_t *dst, int64_t dst_offset)
{
  int64_t plane = (int64_t)width * rows;
  float *out = (float *)(void *)(dst + dst_offset);
  const uint8_t *in = src + src_offset;
  for (int32_t y = 0; y < rows; y++, in += src_row_bytes) {
    float *row = out + (int64_t)y * width;
    for (int32_t x = 0; x < width; x++) {
      const uint8_t *p = in + (int64_t)pixel_bytes * x;
      row[x] = table[p[0]];
      row[plane + x] = table[256 + p[1]];
      row[2 * plane + x] = table[512 + p[2]];
    }
  }
}
