/*
 * decode_then_resize.c: the training transform's two steps as a worker takes them, one thread:
 * each file's RandomResizedCrop box decoded by the region decoder (seeking where the file has
 * restart markers), then the box's rows resized to 224 columns by the horizontal pass, straight
 * after, while the decoder's rows are wherever its stores left them. The decoded rows start at
 * SKEW bytes past a 64-byte boundary (argument 2, default 0): libjpeg-turbo's AVX2 colour
 * conversion writes a 32-byte-aligned row with non-temporal stores, which bypass the caches, so
 * the resize reads it back from memory; ScratchImage.forDecodedRows starts at 8. It includes the
 * pixel library's source, so that two versions can be timed side by side (-I at each one's
 * folder); it is a measurement, not part of Stoke. Boxes: torchvision's algorithm, fixed random
 * numbers. Progressive files are left out.
 *
 *   gcc -std=gnu11 -O3 -I native/pixels -o /tmp/decode_then_resize benchmarks/native/decode_then_resize.c \
 *       native/pixels/stoke_jpeg.c -ljpeg -lm
 *   find DIR -name '*.jpg' | sort > /tmp/files; /tmp/decode_then_resize /tmp/files 0; /tmp/decode_then_resize /tmp/files 8
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stoke_jpeg.h"
#include "stoke_pixels.c"
#include "pil_coefficients.h"
#include "crop_boxes.h"
#include "read_whole.h"

/* The frame's size from a baseline or extended-sequential SOF; 0 for a progressive file. */
static void frame_size(const uint8_t *b, long size, int *w, int *h)
{
  *w = *h = 0;
  for (long p = 2; p + 9 < size;) {
    if (b[p] != 0xFF) {
      p++;
      continue;
    }
    int code = b[p + 1], length = b[p + 2] << 8 | b[p + 3];
    if (code == 0xC0 || code == 0xC1) {
      *h = b[p + 5] << 8 | b[p + 6];
      *w = b[p + 7] << 8 | b[p + 8];
      return;
    }
    if (code == 0xC2 || code == 0xDA) return;
    p += 2 + length;
  }
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: decode_then_resize FILE_LIST [SKEW]\n");
    return 2;
  }
  long skew = argc > 2 ? atol(argv[2]) : 0;
  FILE *list = fopen(argv[1], "r");
  if (list == NULL) return 2;
  const int64_t capacity = 64 << 20;
  uint8_t *base = aligned_alloc(64, (size_t)capacity + 64), *rows = base + skew;
  uint8_t *tmp = malloc(16 << 20);
  char path[4096], message[256];
  int32_t region[8];
  double decode = 0, horizontal = 0;
  int n = 0;
  while (next_path(list, path, sizeof path)) {
    long size;
    uint8_t *jpeg = read_whole(path, &size);
    if (jpeg == NULL) continue;
    int width, height, box[4];
    frame_size(jpeg, size, &width, &height);
    if (width == 0) {
      free(jpeg);
      continue;
    }
    crop_box(width, height, box);
    double t0 = now();
    int32_t rc = stoke_decode_region(jpeg, size, 8, 8, box[0], box[1], box[2], box[3], (int64_t)1 << 30, 100, 0, rows,
                                     capacity, region, message, sizeof message);
    double t1 = now();
    if (rc == STOKE_JPEG_OK) {
      int32_t bounds[2 * 224], *weights;
      int32_t rw = region[STOKE_REGION_WIDTH];
      int32_t taps = pil_coefficients(rw, box[0] - region[STOKE_REGION_X], box[2], 224, 0, bounds, &weights);
      double t2 = now();
      stoke_resample_horizontal(rows + (int64_t)(box[1] - region[STOKE_REGION_Y]) * 4 * rw, 4 * (int64_t)rw, 0, box[3],
                                224, bounds, weights, taps, tmp);
      horizontal += now() - t2;
      decode += t1 - t0;
      n++;
      free(weights);
    }
    free(jpeg);
  }
  printf("%d images, rows %ld bytes past a 64-byte boundary: decode %.1f us, then the horizontal pass %.1f us\n", n,
         skew, decode / n * 1e6, horizontal / n * 1e6);
  free(base);
  free(tmp);
  return 0;
}
