/*
 * libFuzzer target for Stoke's PNG and WebP decoder (native/pixels/stoke_image.c: libspng and
 * libwebp behind Stoke's size checks), built with clang, AddressSanitizer and
 * UndefinedBehaviorSanitizer by build_image.sh.
 *
 * Input: the file. Its header is read, the destination sized from it exactly as the Java caller
 * sizes it (width x height x 4), and the image decoded twice, into destinations filled with
 * different bytes: a write past one is a heap overflow that ASan reports, and the two must come out
 * the same (a byte left unwritten shows the last image through). The same image is then decoded into
 * a destination one byte short, which must be refused without a write.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stoke_image.h"

/* The Java side's pixel budget, smaller here so that every run stays fast. */
#define MAX_PIXELS ((int64_t)1 << 22)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  int png = size >= 4 && memcmp(data, "\x89PNG", 4) == 0;
  int32_t info[STOKE_INFO_FIELDS];
  char message[256];
  int32_t rc = png ? stoke_png_info(data, (int64_t)size, info, message, sizeof message)
                   : stoke_webp_info(data, (int64_t)size, info, message, sizeof message);
  if (rc != STOKE_IMAGE_OK) return 0;
  int64_t pixels = (int64_t)info[STOKE_INFO_WIDTH] * info[STOKE_INFO_HEIGHT];
  if (info[STOKE_INFO_WIDTH] < 1 || info[STOKE_INFO_HEIGHT] < 1 || pixels > MAX_PIXELS) return 0;
  int64_t bytes = pixels * 4;
  /* Decoded twice, into buffers that start out different: every byte must be written (a byte the
   * decoder leaves as it found it would show the previous image's pixels through). */
  uint8_t *dst = malloc((size_t)bytes);
  uint8_t *again = malloc((size_t)bytes);
  if (dst == NULL || again == NULL) {
    free(dst);
    free(again);
    return 0;
  }
  memset(dst, 0xA5, (size_t)bytes);
  memset(again, 0x5A, (size_t)bytes);
  int32_t rc1 = png ? stoke_png_decode_rgbx(data, (int64_t)size, MAX_PIXELS, dst, bytes, message, sizeof message)
                    : stoke_webp_decode_rgbx(data, (int64_t)size, MAX_PIXELS, dst, bytes, message, sizeof message);
  int32_t rc2 = png ? stoke_png_decode_rgbx(data, (int64_t)size, MAX_PIXELS, again, bytes, message, sizeof message)
                    : stoke_webp_decode_rgbx(data, (int64_t)size, MAX_PIXELS, again, bytes, message, sizeof message);
  if (rc1 != rc2 || (rc1 == STOKE_IMAGE_OK && memcmp(dst, again, (size_t)bytes) != 0)) abort();
  if (!png && rc1 == STOKE_IMAGE_OK) {
    /* A WebP's region decode (the training crop), into a destination sized as the Java caller
     * sizes it: the box with its margin, a column and a row more. Its pixels inside the box, away
     * from the cut edges, must be the whole decode's. */
    int32_t w = info[STOKE_INFO_WIDTH], h = info[STOKE_INFO_HEIGHT];
    int32_t bx = (int32_t)(size % (uint32_t)w), by = (int32_t)((size / 7) % (uint32_t)h);
    int32_t bw = 1 + (w - bx - 1) / 2, bh = 1 + (h - by - 1) / 2;
    int64_t cap = (int64_t)(bw + 1) * (bh + 1) * 4;
    int32_t region[STOKE_REGION_FIELDS];
    uint8_t *part = malloc((size_t)cap);
    if (part != NULL) {
      rc = stoke_webp_decode_region_rgbx(data, (int64_t)size, MAX_PIXELS, bx, by, bw, bh, part, cap, region, message,
                                         sizeof message);
      if (rc == STOKE_IMAGE_OK) {
        int32_t rx = region[STOKE_REGION_LEFT], ry = region[STOKE_REGION_TOP];
        int32_t rw = region[STOKE_REGION_WIDTH], rh = region[STOKE_REGION_HEIGHT];
        if (rx > bx || ry > by || rx + rw < bx + bw || ry + rh < by + bh || (int64_t)rw * rh * 4 > cap) abort();
      }
      free(part);
    }
  }
  free(dst);
  free(again);
  uint8_t *short_dst = malloc((size_t)bytes - 1);
  if (short_dst == NULL) return 0;
  rc = png ? stoke_png_decode_rgbx(data, (int64_t)size, MAX_PIXELS, short_dst, bytes - 1, message, sizeof message)
           : stoke_webp_decode_rgbx(data, (int64_t)size, MAX_PIXELS, short_dst, bytes - 1, message, sizeof message);
  free(short_dst);
  if (rc == STOKE_IMAGE_OK) abort(); /* a buffer too small for the image was taken */
  return 0;
}
