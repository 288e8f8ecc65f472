/*
 * libFuzzer target for Stoke's region decoder (native/pixels/stoke_jpeg.c), built with clang,
 * AddressSanitizer and UndefinedBehaviorSanitizer by build.sh.
 *
 * Input: 8 bytes of parameters, then the JPEG. The parameters pick the DCT scale and the region,
 * small enough that most images hold it, so that the crop, skip and read paths all run; the
 * decoder itself must refuse whatever does not fit. The destination is sized from the region
 * alone, as Java sizes it: a write past it is a heap overflow that ASan reports.
 *
 * Files with restart markers take the seeking path (the seeds include them, and files whose
 * markers lie). Whatever it returns cleanly is checked against the sequential decode of the same
 * region: where that one is clean too, every byte must be the same, so trusting a lying marker
 * shows up as an abort, not as wrong pixels.
 *
 * Each input is also given restart markers losslessly (stoke_jpeg_add_restarts) into a buffer of
 * its own: the copy must stay inside it, and where the original's region decodes cleanly the
 * copy's must too, to the same bytes (a lossless copy that is not one aborts).
 *
 * And both at once (stoke_jpeg_add_restarts_decoding, a restart cache's miss): what it makes must
 * be what the two calls make apart, the copy's bytes and the region's pixels, or it aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stoke_jpeg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 8) return 0;
  int32_t scale_denom = 8;
  int32_t scale_num = 1 + (data[0] & 7);                /* 1/8 .. 8/8 */
  int32_t x = data[1] & 63;
  int32_t y = data[2] & 63;
  int32_t w = 1 + (((int32_t)data[3] << 8 | data[4]) & 511);
  int32_t h = 1 + (((int32_t)data[5] << 8 | data[6]) & 511);
  int32_t max_scans = 1 + (data[7] & 63) * 8;
  int32_t flags = (data[7] & 64) ? STOKE_REGION_NO_SEEK : 0;
  int64_t capacity = (int64_t)(w + 64) * 4 * h;
  uint8_t *dst = malloc((size_t)capacity);
  uint8_t *again = malloc((size_t)capacity);
  if (dst == NULL || again == NULL) {
    free(dst);
    free(again);
    return 0;
  }
  int32_t region[STOKE_REGION_FIELDS];
  char message[256];
  /* Stoke's Java passes its pixel budget (36 MP by default); a smaller one keeps each run fast. */
  int64_t max_pixels = (int64_t)16 * 1000 * 1000;
  int32_t rc = stoke_decode_region(data + 8, (int64_t)(size - 8), scale_num, scale_denom, x, y, w, h, max_pixels,
                                   max_scans, flags, dst, capacity, region, message, (int32_t)sizeof(message));
  if (rc != STOKE_JPEG_ERROR) {
    /* What it says it wrote must be what it was asked for, inside the destination. */
    if (region[STOKE_REGION_X] > x || region[STOKE_REGION_X] + region[STOKE_REGION_WIDTH] < x + w
        || region[STOKE_REGION_Y] != y || region[STOKE_REGION_HEIGHT] != h
        || (int64_t)region[STOKE_REGION_WIDTH] * 4 * h > capacity || region[STOKE_REGION_PATH] < 0
        || region[STOKE_REGION_PATH] > STOKE_PATH_FELL_BACK) {
      abort();
    }
    /* Touch every byte it claims: uninitialised or out-of-bounds memory shows up under the sanitizers. */
    volatile uint32_t sum = 0;
    for (int64_t i = 0; i < (int64_t)region[STOKE_REGION_WIDTH] * 4 * h; i++) sum += dst[i];
  }
  if (rc == STOKE_JPEG_OK && region[STOKE_REGION_PATH] == STOKE_PATH_SEEKED) {
    int32_t sequential[STOKE_REGION_FIELDS];
    int32_t rc2 = stoke_decode_region(data + 8, (int64_t)(size - 8), scale_num, scale_denom, x, y, w, h, max_pixels,
                                      max_scans, STOKE_REGION_NO_SEEK, again, capacity, sequential, message,
                                      (int32_t)sizeof(message));
    if (rc2 == STOKE_JPEG_OK
        && (sequential[STOKE_REGION_X] != region[STOKE_REGION_X]
            || sequential[STOKE_REGION_WIDTH] != region[STOKE_REGION_WIDTH]
            || memcmp(dst, again, (size_t)region[STOKE_REGION_WIDTH] * 4 * (size_t)h) != 0)) {
      abort();
    }
  }
  int64_t copy_capacity = (int64_t)(size - 8) * 2 + 65536;
  uint8_t *copy = malloc((size_t)copy_capacity);
  if (copy != NULL) {
    int64_t copy_size = -1;
    int32_t info[STOKE_RESTART_FIELDS];
    int32_t target = 1 + (data[1] >> 6) * 3; /* 1, 4, 7 or 10 MCUs */
    int32_t rc3 = stoke_jpeg_add_restarts(data + 8, (int64_t)(size - 8), target, max_pixels, max_scans, 0, copy,
                                          copy_capacity, &copy_size, info, message, (int32_t)sizeof(message));
    if (rc3 == STOKE_JPEG_OK) {
      if (copy_size < 4 || copy_size > copy_capacity || info[STOKE_RESTART_INTERVAL] < 1
          || info[STOKE_RESTART_MCUS_PER_ROW] % info[STOKE_RESTART_INTERVAL] != 0) {
        abort();
      }
      int32_t a[STOKE_REGION_FIELDS];
      int32_t b[STOKE_REGION_FIELDS];
      int32_t rc4 = stoke_decode_region(data + 8, (int64_t)(size - 8), scale_num, scale_denom, x, y, w, h, max_pixels,
                                        max_scans, STOKE_REGION_NO_SEEK, dst, capacity, a, message,
                                        (int32_t)sizeof(message));
      if (rc4 == STOKE_JPEG_OK) {
        int32_t rc5 = stoke_decode_region(copy, copy_size, scale_num, scale_denom, x, y, w, h, max_pixels, max_scans,
                                          0, again, capacity, b, message, (int32_t)sizeof(message));
        if (rc5 != STOKE_JPEG_OK || a[STOKE_REGION_X] != b[STOKE_REGION_X]
            || a[STOKE_REGION_WIDTH] != b[STOKE_REGION_WIDTH]
            || memcmp(dst, again, (size_t)a[STOKE_REGION_WIDTH] * 4 * (size_t)h) != 0) {
          abort();
        }
      }
    }
    uint8_t *both = malloc((size_t)copy_capacity);
    if (both != NULL) {
      int64_t both_size = -1;
      int32_t both_info[STOKE_RESTART_FIELDS];
      int32_t c[STOKE_REGION_FIELDS];
      int32_t rc6 = stoke_jpeg_add_restarts_decoding(data + 8, (int64_t)(size - 8), target, max_pixels, max_scans, both,
                                                     copy_capacity, &both_size, both_info, scale_num, scale_denom, x,
                                                     y, w, h, again, capacity, c, message, (int32_t)sizeof(message));
      if (rc6 == STOKE_JPEG_OK) {
        /* Both must be what the two calls apart made: neither may have refused or warned. */
        int32_t d[STOKE_REGION_FIELDS];
        int32_t rc7 = stoke_decode_region(data + 8, (int64_t)(size - 8), scale_num, scale_denom, x, y, w, h,
                                          max_pixels, max_scans, STOKE_REGION_NO_SEEK, dst, capacity, d, message,
                                          (int32_t)sizeof(message));
        if (rc3 != STOKE_JPEG_OK || both_size != copy_size || memcmp(both, copy, (size_t)copy_size) != 0
            || memcmp(both_info, info, sizeof(info)) != 0 || rc7 != STOKE_JPEG_OK
            || c[STOKE_REGION_X] != d[STOKE_REGION_X] || c[STOKE_REGION_Y] != d[STOKE_REGION_Y]
            || c[STOKE_REGION_WIDTH] != d[STOKE_REGION_WIDTH] || c[STOKE_REGION_HEIGHT] != d[STOKE_REGION_HEIGHT]
            || c[STOKE_REGION_PATH] != STOKE_PATH_SEQUENTIAL
            || memcmp(dst, again, (size_t)d[STOKE_REGION_WIDTH] * 4 * (size_t)h) != 0) {
          abort();
        }
      }
      free(both);
    }
    free(copy);
  }
  free(dst);
  free(again);
  return 0;
}
