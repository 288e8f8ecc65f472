/*
 * resize_passes.c: the resize's two passes on one thread, as the training transform runs them on
 * a 0.2 MP photograph's crop: box rows of W pixels to 224 columns (the horizontal pass, the CPU's
 * own path), then 224 rows from those (the vertical pass, to RGB), PIL's bilinear coefficients.
 * It includes the pixel library's source, so that two versions of it can be timed side by side
 * (-I at each one's folder); it is a measurement, not part of Stoke. Prints the best of 3 runs of
 * 2,000 calls, and a hash of each output, which two versions must share.
 *
 *   gcc -std=c11 -O3 -I native/pixels -o /tmp/resize_passes benchmarks/native/resize_passes.c -lm
 *   /tmp/resize_passes
 */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stoke_pixels.c"
#include "pil_coefficients.h"

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int main(void)
{
  static const int32_t boxes[][2] = {{180, 180}, {250, 250}, {330, 250}, {420, 330}, {500, 375}, {600, 400}, {700, 450}, {900, 600}, {1100, 700}, {1400, 900}};
  const int32_t out = 224, reps = 2000;
  for (size_t b = 0; b < sizeof(boxes) / sizeof(boxes[0]); b++) {
    int32_t w = boxes[b][0], rows = boxes[b][1];
    uint8_t *src = malloc((size_t)4 * w * rows + 64);
    for (int64_t i = 0; i < 4 * (int64_t)w * rows; i++) src[i] = (uint8_t)rand();
    int32_t hb[2 * 224], vb[2 * 224], *hw, *vw;
    int32_t htaps = pil_coefficients(w, 0, w, out, 0, hb, &hw);
    int32_t vtaps = pil_coefficients(rows, 0, rows, out, 0, vb, &vw);
    uint8_t *tmp = malloc((size_t)4 * out * rows + 64), *dst = malloc((size_t)3 * out * out);
    int32_t *acc = malloc(sizeof(int32_t) * 4 * out);
    double best_h = 1e9, best_v = 1e9;
    for (int round = 0; round < 3; round++) {
      double t0 = now();
      for (int32_t r = 0; r < reps; r++) stoke_resample_horizontal(src, 4 * (int64_t)w, 0, rows, out, hb, hw, htaps, tmp);
      double t1 = now();
      for (int32_t r = 0; r < reps; r++) stoke_resample_vertical_rgb(tmp, out, 0, out, vb, vw, vtaps, acc, dst, 0);
      double t2 = now();
      if ((t1 - t0) / reps < best_h) best_h = (t1 - t0) / reps;
      if ((t2 - t1) / reps < best_v) best_v = (t2 - t1) / reps;
    }
    printf("%d x %d box to %d x %d: horizontal %.1f us (%d taps), vertical %.1f us (%d taps)  [%016llx %016llx]\n", w,
           rows, out, out, best_h * 1e6, htaps, best_v * 1e6, vtaps, (unsigned long long)fnv(tmp, (size_t)4 * out * rows),
           (unsigned long long)fnv(dst, (size_t)3 * out * out));
    free(src), free(tmp), free(dst), free(acc), free(hw), free(vw);
  }
  return 0;
}
