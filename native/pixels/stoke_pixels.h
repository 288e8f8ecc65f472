/*
 * stoke_pixels.h: Stoke's per-pixel loops in C, called from Java through java.lang.foreign.
 *
 * The resize is PIL's antialiased bilinear filter in fixed point (22-bit weights, a horizontal
 * pass rounded to 8 bits, then a vertical pass), the same bytes as Stoke's Java kernels, which are
 * its test oracle. The caller computes the coefficients and checks every extent before a call:
 * these functions trust their arguments, keep no state and allocate nothing.
 *
 * Images are RGBX, 4 bytes a pixel; X is written as 0 in the intermediate image and dropped on
 * output.
 */
#ifndef STOKE_PIXELS_H
#define STOKE_PIXELS_H

#include <stdint.h>

#define STOKE_PIXELS_ABI_VERSION 3
#define STOKE_PRECISION_BITS 22

/* The ABI version this library was built with (Java refuses a library of another version). */
int32_t stoke_pixels_abi_version(void);

/*
 * Horizontal pass: for each of `rows` source rows from `y_first`, output pixel x of `out_width` is
 * the sum over t < bounds[2x+1] of source pixel bounds[2x] + t times weights[x * taps + t],
 * rounded to 8 bits, written to tmp as RGBX rows of 4 * out_width bytes.
 */
void stoke_resample_horizontal(const uint8_t *src, int64_t src_row_bytes, int32_t y_first, int32_t rows,
                               int32_t out_width, const int32_t *bounds, const int32_t *weights, int32_t taps,
                               uint8_t *tmp);

/*
 * Vertical pass into RGB bytes: output row y of `out_rows` is the sum over t < bounds[2y+1] of tmp
 * row bounds[2y] - y_first + t times weights[y * taps + t]; each row of `width` pixels is written
 * at dst + dst_offset + 3 * width * y. `acc` is scratch of 4 * width int32.
 */
void stoke_resample_vertical_rgb(const uint8_t *tmp, int32_t width, int32_t y_first, int32_t out_rows,
                                 const int32_t *bounds, const int32_t *weights, int32_t taps, int32_t *acc,
                                 uint8_t *dst, int64_t dst_offset);

/*
 * The same vertical pass into normalised float32, channels first: each 8-bit result v of channel c
 * becomes table[256 * c + v] ((v / 255 - mean) / std, computed by the caller), written at
 * dst + dst_offset + 4 * (c * plane + width * y + x) bytes, plane = width * out_rows.
 */
void stoke_resample_vertical_f32(const uint8_t *tmp, int32_t width, int32_t y_first, int32_t out_rows,
                                 const int32_t *bounds, const int32_t *weights, int32_t taps, int32_t *acc,
                                 const float *table, uint8_t *dst, int64_t dst_offset);

/*
 * Stores an image without resizing it (one already at the output's size, or a crop of one): the
 * `width` x `rows` pixels at src + src_offset, rows src_row_bytes apart, pixel_bytes (3: RGB, or
 * 4: RGBX) a pixel, written at dst + dst_offset as RGB rows end to end, 3 * width * rows bytes.
 */
void stoke_store_rgb(const uint8_t *src, int64_t src_offset, int64_t src_row_bytes, int32_t pixel_bytes,
                     int32_t width, int32_t rows, uint8_t *dst, int64_t dst_offset);

/*
 * The same pixels into normalised float32, channels first: value v of channel c becomes
 * table[256 * c + v], written at dst + dst_offset + 4 * (c * plane + width * y + x) bytes,
 * plane = width * rows.
 */
void stoke_store_f32(const uint8_t *src, int64_t src_offset, int64_t src_row_bytes, int32_t pixel_bytes,
                     int32_t width, int32_t rows, const float *table, uint8_t *dst, int64_t dst_offset);

#endif
