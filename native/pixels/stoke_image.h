/*
 * stoke_image.h: PNG (libspng) and WebP (libwebp) decoded into RGBX, as PIL's
 * Image.open(f).convert("RGB") gives the pixels: alpha is dropped, never composited; a palette is
 * expanded without its transparency; gray is repeated into R, G and B. Every call checks the image's
 * claimed size against max_pixels and the output against dst_bytes before a pixel is written,
 * returns a status and a message, and keeps no global state.
 */
#ifndef STOKE_IMAGE_H
#define STOKE_IMAGE_H

#include <stdint.h>

#define STOKE_IMAGE_ABI_VERSION 3

#define STOKE_IMAGE_OK 0
#define STOKE_IMAGE_ERROR (-1)       /* not decodable (message set) */
#define STOKE_IMAGE_TRUNCATED (-2)   /* the data ends before the image does (message set) */
#define STOKE_IMAGE_TOO_LARGE (-3)   /* width x height over max_pixels (message set) */
#define STOKE_IMAGE_UNSUPPORTED (-4) /* a variant not decoded (an animated WebP; message set) */

/* Indices into the `info` array the *_info functions fill. */
#define STOKE_INFO_WIDTH 0
#define STOKE_INFO_HEIGHT 1
#define STOKE_INFO_DEPTH 2 /* PNG: bits per sample; WebP: 8 */
#define STOKE_INFO_KIND 3  /* PNG: colour type (0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA); WebP: 1 lossy, 2 lossless, 0 mixed */
#define STOKE_INFO_ALPHA 4 /* an alpha channel or tRNS chunk (1) or not (0) */
#define STOKE_INFO_FIELDS 5

int32_t stoke_image_abi_version(void);

/* Reads the PNG's header into info[STOKE_INFO_FIELDS]; decodes nothing. */
int32_t stoke_png_info(const uint8_t *png, int64_t size, int32_t *info, char *message, int32_t message_bytes);

/*
 * Decodes the whole PNG into dst as RGBX (4 bytes a pixel, rows packed, X unspecified). 8-bit and
 * smaller samples are scaled to 8 bits; 16-bit colour keeps each sample's high byte and 16-bit gray
 * is clipped to 255, as PIL's conversions to RGB do.
 */
int32_t stoke_png_decode_rgbx(const uint8_t *png, int64_t size, int64_t max_pixels, uint8_t *dst,
                              int64_t dst_bytes, char *message, int32_t message_bytes);

/*
 * Encodes width x height RGB pixels (3 bytes a pixel, rows packed) as an 8-bit RGB PNG, lossless,
 * into dst; its length in *png_bytes. Refused when it would not fit in dst_bytes.
 */
int32_t stoke_png_encode_rgb(const uint8_t *rgb, int32_t width, int32_t height, uint8_t *dst, int64_t dst_bytes,
                             int64_t *png_bytes, char *message, int32_t message_bytes);

/* Reads the WebP's header into info[STOKE_INFO_FIELDS]; decodes nothing. */
int32_t stoke_webp_info(const uint8_t *webp, int64_t size, int32_t *info, char *message, int32_t message_bytes);

/* Decodes the whole (still) WebP into dst as RGBX (4 bytes a pixel, rows packed, X its alpha). */
int32_t stoke_webp_decode_rgbx(const uint8_t *webp, int64_t size, int64_t max_pixels, uint8_t *dst,
                               int64_t dst_bytes, char *message, int32_t message_bytes);

/* Indices into the `region` array stoke_webp_decode_region_rgbx fills. */
#define STOKE_REGION_LEFT 0
#define STOKE_REGION_TOP 1
#define STOKE_REGION_WIDTH 2
#define STOKE_REGION_HEIGHT 3
#define STOKE_REGION_FIELDS 4

/*
 * Decodes at least the box [x, x + w) x [y, y + h) of the WebP, with libwebp's own cropping: rows
 * below the box are not decoded and only the box is converted to RGB. libwebp starts a crop on an
 * even column and row, so the region decoded (region[]) may start one pixel before the box; its
 * pixels are the whole decode's. dst receives region width x height RGBX pixels, rows packed.
 */
int32_t stoke_webp_decode_region_rgbx(const uint8_t *webp, int64_t size, int64_t max_pixels, int32_t x, int32_t y,
                                      int32_t w, int32_t h, uint8_t *dst, int64_t dst_bytes, int32_t *region,
                                      char *message, int32_t message_bytes);

#endif
