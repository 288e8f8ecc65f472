/*
 * stoke_tensor.c: see stoke_tensor.h. Each loop does torchvision's tensor arithmetic per element
 * in float32, in the order PyTorch's CPU kernels do it: a product by a Python float is a float32
 * product by the float32 scalar, add_(other, alpha) is a fused multiply-add (its vectorised
 * kernel's vec::fmadd), and a cast to uint8 truncates. Built with -std=c11, so the compiler fuses
 * nothing of its own; the fusions here are explicit fmaf calls.
 */
#include "stoke_tensor.h"

#include <math.h>

/* clamp_(0, 255) then .to(torch.uint8), which truncates. */
static inline uint8_t to_u8(float v)
{
  if (!(v > 0.0f))
    return 0;
  if (v >= 255.0f)
    return 255;
  return (uint8_t)v;
}

/* rgb_to_grayscale: v1 (0.2989 r + 0.587 g) + 0.114 b, truncated by .to(uint8); v2 the same as
 * r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114), floored. */
static inline float gray(const uint8_t *p, int v2)
{
  const float kr = (float)0.2989, kg = (float)0.587, kb = (float)0.114;
  if (v2)
    return floorf(fmaf((float)p[2], kb, fmaf((float)p[1], kg, (float)p[0] * kr)));
  return (float)(uint8_t)((kr * (float)p[0] + kg * (float)p[1]) + kb * (float)p[2]);
}

static inline uint8_t blend1(float x, float d, float ratio, float rest, int v2)
{
  return to_u8(v2 ? fmaf(d, rest, ratio * x) : ratio * x + rest * d);
}

void stoke_tensor_blend(const uint8_t *src, uint8_t *dst, int64_t pixels, int32_t degenerate, float value,
                        float ratio, float rest, int32_t v2)
{
  int64_t i;

  if (degenerate == STOKE_TENSOR_BLACK) {
    /* v1's ratio * x + rest * 0 is ratio * x, as v2's image.mul(ratio) is. */
    for (i = 0; i < 3 * pixels; i++)
      dst[i] = to_u8(ratio * (float)src[i]);
    return;
  }
  for (i = 0; i < pixels; i++) {
    const uint8_t *s = src + 3 * i;
    uint8_t *o = dst + 3 * i;
    float d = degenerate == STOKE_TENSOR_GRAY ? gray(s, v2) : value;
    uint8_t r = blend1(s[0], d, ratio, rest, v2);
    uint8_t g = blend1(s[1], d, ratio, rest, v2);
    uint8_t b = blend1(s[2], d, ratio, rest, v2);
    o[0] = r;
    o[1] = g;
    o[2] = b;
  }
}

int64_t stoke_tensor_gray_sum(const uint8_t *src, int64_t pixels, int32_t v2)
{
  int64_t sum = 0;
  int64_t i;

  for (i = 0; i < pixels; i++)
    sum += (int64_t)gray(src + 3 * i, v2);
  return sum;
}

void stoke_tensor_sharpness(const uint8_t *src, uint8_t *dst, int32_t width, int32_t height, float ratio, float rest,
                            int32_t v2)
{
  /* v1 divides a float32 kernel by its sum, 13; v2 writes 1/13 and 5/13 as Python floats. The
   * blur's exact value is an integer over 13, at least 1/26 from a half, so neither the kernel's
   * last bit nor the order of the nine products moves its rounding. */
  const float one = v2 ? (float)(1.0 / 13.0) : 1.0f / 13.0f;
  const float five = v2 ? (float)(5.0 / 13.0) : 5.0f / 13.0f;
  int64_t row = 3 * (int64_t)width;
  int32_t x, y;
  int c;

  for (y = 0; y < height; y++) {
    const uint8_t *in0 = src + row * y;
    uint8_t *out = dst + row * y;
    int inside_row = y > 0 && y < height - 1;
    for (x = 0; x < width; x++) {
      for (c = 0; c < 3; c++) {
        int64_t at = 3 * (int64_t)x + c;
        float v = in0[at];
        float blur;
        if (!inside_row || x == 0 || x == width - 1) {
          /* The blur keeps the border: v1 blends it with itself, v2 leaves it. */
          out[at] = v2 ? in0[at] : blend1(v, v, ratio, rest, 0);
          continue;
        }
        blur = one * ((float)in0[at - row - 3] + (float)in0[at - row] + (float)in0[at - row + 3]
                      + (float)in0[at - 3] + (float)in0[at + 3]
                      + (float)in0[at + row - 3] + (float)in0[at + row] + (float)in0[at + row + 3])
               + five * v;
        blur = nearbyintf(blur);
        out[at] = v2 ? to_u8(fmaf(blur - v, rest, v)) : blend1(v, blur, ratio, rest, 0);
      }
    }
  }
}
