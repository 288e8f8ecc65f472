/*
 * stoke_pixels.c: see stoke_pixels.h. Plain loops written so that gcc vectorises them; with
 * target_clones one binary runs on any x86-64 and picks AVX2 or AVX-512 code where the CPU has it.
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

STOKE_CLONES
void stoke_resample_horizontal(const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows,
                               int32_t out_width, const int32_t *bounds, const int32_t *weights, int32_t taps,
                               uint8_t *tmp)
{
  for (int32_t r = 0; r < rows; r++) {
    const uint8_t *in = src + (int64_t)(y_first + r) * src_row_bytes;
    uint8_t *o = tmp + (int64_t)r * 4 * out_width;
    for (int32_t x = 0; x < out_width; x++) {
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

STOKE_CLONES
void stoke_resample_vertical_rgb(const uint8_t *tmp, int32_t width, int32_t y_first, int32_t out_rows,
                                 const int32_t *bounds, const int32_t *weights, int32_t taps, int32_t *acc,
                                 uint8_t *dst, int64_t dst_offset)
{
  for (int32_t y = 0; y < out_rows; y++) {
    filter_row(acc, tmp, width, y_first, y, bounds, weights, taps);
    uint8_t *o = dst + dst_offset + (int64_t)y * 3 * width;
    for (int32_t x = 0; x < width; x++) {
      o[3 * x] = clip8(acc[4 * x]);
      o[3 * x + 1] = clip8(acc[4 * x + 1]);
      o[3 * x + 2] = clip8(acc[4 * x + 2]);
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
  for (int32_t y = 0; y < out_rows; y++) {
    filter_row(acc, tmp, width, y_first, y, bounds, weights, taps);
    float *row = out + (int64_t)y * width;
    for (int32_t x = 0; x < width; x++) {
      row[x] = table[clip8(acc[4 * x])];
      row[plane + x] = table[256 + clip8(acc[4 * x + 1])];
      row[2 * plane + x] = table[512 + clip8(acc[4 * x + 2])];
    }
  }
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
