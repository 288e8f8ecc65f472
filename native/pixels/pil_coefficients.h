/*
 * pil_coefficients.h: PIL's resampling coefficients (precompute_coeffs, bilinear or bicubic, in
 * 22-bit fixed point), for the programs that check and time the pixel library's passes:
 * check_passes.c and benchmarks/native. Not part of Stoke (the loader's are Resampler.coefficients);
 * the weights past each column's count are garbage, as nothing reads them.
 */
#ifndef STOKE_PIL_COEFFICIENTS_H
#define STOKE_PIL_COEFFICIENTS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "stoke_pixels.h"

static double bilinear(double x)
{
  x = fabs(x);
  return x < 1 ? 1 - x : 0;
}

static double bicubic(double x)
{
  double a = -0.5;
  x = fabs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

/*
 * PIL's precompute_coeffs for the box [in0, in0 + length) of a row of in_size pixels to out_size,
 * in 22-bit fixed point; the weights past each column's count are garbage, as nothing reads them.
 * Returns taps (the stride of weights).
 */
static int32_t pil_coefficients(int32_t in_size, double in0, double length, int32_t out_size, int cubic,
                            int32_t *bounds, int32_t **weights)
{
  double scale = length / out_size, filter_scale = scale < 1 ? 1 : scale;
  double support = (cubic ? 2 : 1) * filter_scale;
  int32_t taps = (int32_t)ceil(support) * 2 + 1;
  *weights = malloc(sizeof(int32_t) * (size_t)out_size * (size_t)taps);
  double *k = malloc(sizeof(double) * (size_t)taps);
  for (int32_t x = 0; x < out_size; x++) {
    double center = in0 + (x + 0.5) * scale, sum = 0;
    int32_t min = (int32_t)(center - support + 0.5), max = (int32_t)(center + support + 0.5);
    if (min < 0) min = 0;
    if (max > in_size) max = in_size;
    int32_t n = max - min, t;
    for (t = 0; t < n; t++) {
      double d = (t + min - center + 0.5) / filter_scale;
      k[t] = cubic ? bicubic(d) : bilinear(d);
      sum += k[t];
    }
    for (t = 0; t < n; t++) {
      double w = (sum != 0 ? k[t] / sum : 0) * (1 << STOKE_PRECISION_BITS);
      (*weights)[(int64_t)x * taps + t] = (int32_t)(w < 0 ? w - 0.5 : w + 0.5);
    }
    for (; t < taps; t++)
      (*weights)[(int64_t)x * taps + t] = 0x55555555;
    bounds[2 * x] = min;
    bounds[2 * x + 1] = n;
  }
  free(k);
  return taps;
}

#endif
