/*
 * stoke_jpeg.h: decode only a region of a JPEG, over libjpeg-turbo's libjpeg API
 * (jpeg_crop_scanline for the columns, jpeg_skip_scanlines for the rows above, stopping after the
 * last row needed). libjpeg's setjmp/longjmp error model stays inside this file: every call
 * returns a status and a message, never unwinds through its caller. No global state.
 */
#ifndef STOKE_JPEG_H
#define STOKE_JPEG_H

#include <stdint.h>

#define STOKE_JPEG_ABI_VERSION 2

/* What libjpeg may allocate for one image (coefficient buffers of a progressive image above all). */
#define STOKE_JPEG_MAX_MEMORY ((long)1 << 30)

#define STOKE_JPEG_OK 0       /* decoded, no warning */
#define STOKE_JPEG_WARNING 1  /* decoded, but libjpeg warned (message set): the caller decides */
#define STOKE_JPEG_ERROR (-1) /* nothing usable (message set) */

/* Indices into the `region` array that stoke_decode_region fills. */
#define STOKE_REGION_X 0      /* first decoded column, in scaled pixels (<= the x asked for) */
#define STOKE_REGION_Y 1      /* first decoded row (= the y asked for) */
#define STOKE_REGION_WIDTH 2  /* decoded columns (>= the width asked for: whole iMCU columns) */
#define STOKE_REGION_HEIGHT 3 /* decoded rows (= the height asked for) */
#define STOKE_REGION_FIELDS 4

int32_t stoke_jpeg_abi_version(void);

/*
 * Decodes rows [y, y + h) and at least columns [x, x + w) of the image scaled by
 * scale_num / scale_denom, as RGBX (4 bytes a pixel, rows packed), into dst. The region is checked
 * against the scaled image and the output against dst_bytes before a row is written. Images whose
 * header claims more than max_pixels pixels (decompression bombs) and progressive images with more
 * than max_scans scans are refused, and libjpeg may allocate at most STOKE_JPEG_MAX_MEMORY. CMYK
 * images are refused.
 */
int32_t stoke_decode_region(const uint8_t *jpeg, int64_t size, int32_t scale_num, int32_t scale_denom,
                            int32_t x, int32_t y, int32_t w, int32_t h, int64_t max_pixels, int32_t max_scans,
                            uint8_t *dst, int64_t dst_bytes, int32_t *region, char *message, int32_t message_bytes);

#endif
