/*
 * affine_ops.c: the auto-augment policies' geometric ops per image, one thread, through each path
 * of stoke_geometry.c this CPU has: the plain per-pixel loops (Pillow's, what every path must
 * equal: check_geometry.c), affine_row4 (AVX2) and affine_row8 (AVX-512), for torchvision's
 * ShearX (0.3), Rotate (30 degrees) and TranslateX (14 pixels, copied by rows whatever the width)
 * on square images of the training crops' sizes, bilinear and bicubic. It includes the library's
 * source; it is a measurement, not part of Stoke.
 *
 *   gcc -O3 -o /tmp/affine_ops benchmarks/native/affine_ops.c -lm && /tmp/affine_ops
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../native/pixels/stoke_geometry.c"

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
  const int32_t sizes[2] = {176, 224};
  const int32_t filters[2] = {STOKE_GEOMETRY_BILINEAR, STOKE_GEOMETRY_BICUBIC};
  const char *names[3] = {"ShearX", "Rotate", "TranslateX"};
  const uint8_t fill[3] = {0, 0, 0};
  int32_t top = affine_lanes();
  printf("us an image, one thread; this CPU's widest vector rows: %d lanes\n", top);
  for (int si = 0; si < 2; si++) {
    int32_t n = sizes[si];
    uint8_t *src = malloc((size_t)3 * n * n), *dst = malloc((size_t)3 * n * n);
    for (int64_t i = 0; i < (int64_t)3 * n * n; i++) src[i] = (uint8_t)(i * 2654435761u >> 13);
    double c = n * 0.5, t = 30.0 * M_PI / 180.0;
    /* torchvision's inverse matrices about the centre, as AffineOps hands them over */
    double shear[6] = {1, 0.3, -0.3 * c, 0, 1, 0};
    double rotate[6] = {cos(t), sin(t), c - cos(t) * c - sin(t) * c, -sin(t), cos(t), c + sin(t) * c - cos(t) * c};
    double shift[6] = {1, 0, 14, 0, 1, 0};
    double *maps[3] = {shear, rotate, shift};
    for (int f = 0; f < 2; f++) {
      for (int m = 0; m < 3; m++) {
        printf("%d x %d %-8s %-10s", n, n, f ? "bicubic" : "bilinear", names[m]);
        for (int32_t lanes = 0; lanes <= top; lanes += 4) {
          int reps = 300;
          double a = now();
          for (int r = 0; r < reps; r++) {
            if (m == 2 && lanes == top)
              stoke_affine_rgb(src, n, n, 3 * (int64_t)n, dst, 3 * (int64_t)n, maps[m], filters[f], fill);
            else
              generic(src, n, n, 3 * (int64_t)n, dst, 3 * (int64_t)n, maps[m], filters[f], fill, lanes);
          }
          double us = (now() - a) / reps * 1e6;
          const char *path = lanes == 0 ? "plain" : lanes == 4 ? "4 lanes" : "8 lanes";
          if (m == 2 && lanes == top) path = "rows";
          printf(" | %s %7.1f", path, us);
        }
        printf("\n");
      }
    }
    free(src);
    free(dst);
  }
  return 0;
}
