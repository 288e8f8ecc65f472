/*
 * libFuzzer target for Stoke's PNG and WebP decoder (native/pixels/stoke_image.c: libspng and
 * libwebp behind Stoke's size checks), built with clang, AddressSanitizer and
 * UndefinedBehaviorSanitizer by build_image.sh.
 *
 * Input: the file. Its header is read, the destination sized from it exactly as the Java caller
 * sizes it (width x height x 4), and the image decoded: a write past the destination is a heap
 * overflow that ASan reports. The same image is then decoded into a destination one byte short,
 * which must be refused without a write.
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
  uint8_t *dst = malloc((size_t)bytes);
  if (dst == NULL) return 0;
  rc = png ? stoke_png_decode_rgbx(data, (int64_t)size, MAX_PIXELS, dst, bytes, message, sizeof message)
           : stoke_webp_decode_rgbx(data, (int64_t)size, MAX_PIXELS, dst, bytes, message, sizeof message);
  free(dst);
  uint8_t *short_dst = malloc((size_t)bytes - 1);
  if (short_dst == NULL) return 0;
  rc = png ? stoke_png_decode_rgbx(data, (int64_t)size, MAX_PIXELS, short_dst, bytes - 1, message, sizeof message)
           : stoke_webp_decode_rgbx(data, (int64_t)size, MAX_PIXELS, short_dst, bytes - 1, message, sizeof message);
  free(short_dst);
  if (rc == STOKE_IMAGE_OK) abort(); /* a buffer too small for the image was taken */
  return 0;
}
