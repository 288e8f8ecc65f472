/*
 * stoke_augment.h: the colour operations of torchvision's auto-augment policies, as PIL computes
 * them on an RGB image (ImageEnhance's blends, ImageFilter.SMOOTH, ImageOps' tables), called from
 * Java through java.lang.foreign.
 *
 * Images are RGB, 3 bytes a pixel, rows end to end. The caller computes what PIL computes in
 * Python (the tables of Posterize, Solarize, Invert, AutoContrast and Equalize, the mean grey of
 * Contrast) and checks every extent before a call: these functions trust their arguments, keep no
 * state and allocate nothing.
 */
#ifndef STOKE_AUGMENT_H
#define STOKE_AUGMENT_H

#include <stdint.h>

#define STOKE_AUGMENT_ABI_VERSION 4

/* What each pixel is blended from (ImageEnhance's "degenerate" image). */
#define STOKE_DEGENERATE_BLACK 0 /* Brightness: a black image */
#define STOKE_DEGENERATE_GRAY 1  /* Color: the image converted to L and back to RGB */
#define STOKE_DEGENERATE_FLAT 2  /* Contrast: a flat grey, `value` */

/* The ABI version this library was built with (Java refuses a library of another version). */
int32_t stoke_augment_abi_version(void);

/*
 * PIL's Image.blend(degenerate, image, alpha) over `pixels` pixels of src into dst (which may be
 * src): d + alpha * (s - d) in float, truncated, clipped to 0..255 when alpha is outside [0, 1].
 */
void stoke_augment_blend(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t degenerate, int32_t value,
                         float alpha);

/*
 * ImageEnhance.Sharpness: the blend with the image filtered by ImageFilter.SMOOTH (3x3,
 * 1 1 1 / 1 5 1 / 1 1 1, over 13, in float, the border pixels kept). dst must not be src.
 */
void stoke_augment_sharpness(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height, float alpha);

/* Image.histogram() of an RGB image: hist[256 * c + v] counts channel c's value v (768 entries, set here). */
void stoke_augment_histogram(const uint8_t *src, int64_t pixels, int32_t *hist);

/* The sum over pixels of convert("L")'s value, (19595 R + 38470 G + 7471 B + 0x8000) >> 16. */
int64_t stoke_augment_gray_sum(const uint8_t *src, int64_t pixels);

/* Image.point(lut): channel c's value v becomes lut[256 * c + v]; dst may be src. */
void stoke_augment_lut(const uint8_t *src, uint8_t *dst, int64_t pixels, const uint8_t *lut);

/*
 * torchvision's adjust_hue on a PIL image: convert("HSV") (Convert.c's rgb2hsv), the hue channel
 * plus `shift` modulo 256 (int(hue_factor * 255) as a uint8), then convert("RGB") (hsv2rgb), over
 * `pixels` pixels of src into dst (which may be src). The round trip alone changes pixels, so a
 * shift of 0 still converts. Sixteen pixels at a time where the CPU has AVX-512, eight where it has
 * AVX2, the same operations lane by lane (check_hue.c holds each form to the plain loop).
 */
void stoke_augment_hue(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t shift);

#endif
