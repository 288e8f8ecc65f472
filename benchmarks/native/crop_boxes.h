/*
 * crop_boxes.h: torchvision's RandomResizedCrop boxes (get_params: scale 0.08-1, ratio 3/4-4/3)
 * from a fixed xorshift stream, for the measurement programs here, so that each draws the same
 * boxes run after run. Not part of Stoke, whose draws are CounterRandom's.
 */
#ifndef STOKE_BENCH_CROP_BOXES_H
#define STOKE_BENCH_CROP_BOXES_H

#include <math.h>
#include <stdint.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double uniform(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* The box {x, y, w, h} of a width x height image; the whole image when ten draws do not fit. */
static void crop_box(int width, int height, int *box)
{
  double area = (double)width * height;
  for (int attempt = 0; attempt < 10; attempt++) {
    double target = area * (0.08 + uniform() * 0.92);
    double ratio = exp(log(3.0 / 4) + uniform() * (log(4.0 / 3) - log(3.0 / 4)));
    int w = (int)lround(sqrt(target * ratio));
    int h = (int)lround(sqrt(target / ratio));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      box[0] = (int)(uniform() * (width - w + 1));
      box[1] = (int)(uniform() * (height - h + 1));
      box[2] = w;
      box[3] = h;
      return;
    }
  }
  box[0] = 0;
  box[1] = 0;
  box[2] = width;
  box[3] = height;
}

#endif
