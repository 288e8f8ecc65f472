/*
 * stoke_geometry.h: the geometric ops of torchvision's auto-augment policies (ShearX/Y,
 * TranslateX/Y, Rotate) as Pillow does them to an RGB image: Image.transform(size, AFFINE, ...)
 * and Image.rotate's transposes, byte for byte (libImaging/Geometry.c, the same in Pillow 9.4,
 * 11.1 and 12.3 for RGB).
 *
 * Images are RGB, 3 bytes a pixel, rows `row_bytes` apart; the output has the input's size. The
 * caller (Java) computes the matrix exactly as torchvision and Pillow do in Python and checks every
 * extent first: these functions trust their arguments, keep no state and allocate nothing. Source
 * and destination must not overlap.
 */
#ifndef STOKE_GEOMETRY_H
#define STOKE_GEOMETRY_H

#include <stdint.h>

#define STOKE_GEOMETRY_ABI_VERSION 1

/* Pillow's filter numbers (Image.Resampling). */
#define STOKE_GEOMETRY_NEAREST 0
#define STOKE_GEOMETRY_BILINEAR 2
#define STOKE_GEOMETRY_BICUBIC 3

/* The ABI version of these functions (Java refuses a library of another version). */
int32_t stoke_geometry_abi_version(void);

/*
 * Pillow's affine transform: output pixel (x, y) samples the input at
 * (a[0] (x + 0.5) + a[1] (y + 0.5) + a[2], a[3] (x + 0.5) + a[4] (y + 0.5) + a[5]) with `filter`
 * (NEAREST, BILINEAR or BICUBIC); what falls outside the input is `fill` (R, G, B). The matrix is
 * Pillow's data tuple, mapping output to input coordinates. Nearest takes Pillow's three paths
 * (scale only, 16.16 fixed point, and double), each with its own rounding. Bilinear and bicubic
 * run a row's pixels in vectors where the CPU has AVX2 or AVX-512, and copy rows for a shift by
 * whole pixels: Pillow's bytes either way (check_geometry.c).
 */
void stoke_affine_rgb(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                      int64_t dst_row_bytes, const double matrix[6], int32_t filter, const uint8_t fill[3]);

/*
 * Pillow's Image.transpose for Image.rotate's fast paths: `quarter_turns` counter-clockwise turns,
 * 0 (a copy), 1 (ROTATE_90), 2 (ROTATE_180) or 3 (ROTATE_270). A quarter turn (1 or 3) needs a
 * square image.
 */
void stoke_rotate_quarter_rgb(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                              int64_t dst_row_bytes, int32_t quarter_turns);

#endif
