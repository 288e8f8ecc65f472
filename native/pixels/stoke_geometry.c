/*
 * stoke_geometry.c: see stoke_geometry.h. Each loop follows its counterpart in Pillow's
 * libImaging/Geometry.c expression for expression, the order of every double operation kept,
 * since that order is what makes the bytes: a pixel on the edge of the input, or a bilinear
 * weight, differs in the last bit otherwise. Pillow stores RGB in 4 bytes a pixel; here it is 3,
 * which changes addresses only.
 */
#include "stoke_geometry.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* A fused multiply-add rounds once where Pillow's code rounds twice: keep them apart. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/*
 * Pillow's rounding of a coordinate to a pixel, and its floor. Where a coordinate is past INT_MAX,
 * C leaves (int) undefined and x86-64 gives INT_MIN, a column outside the image; so does this,
 * defined.
 */
#define COORD(v) ((v) < 0.0 || (v) >= 2147483648.0 ? -1 : ((int)(v)))
#define FLOOR(v) ((v) < 0.0 ? ((int)floor(v)) : ((int)(v)))

/* Clamp a column or row index to the image, as Pillow's XCLIP and YCLIP. */
#define XCLIP(x) (((x) < 0) ? 0 : ((x) < width) ? (x) : width - 1)
#define YCLIP(y) (((y) < 0) ? 0 : ((y) < height) ? (y) : height - 1)

int32_t stoke_geometry_abi_version(void)
{
  return STOKE_GEOMETRY_ABI_VERSION;
}

static void fill_row(uint8_t *out, int32_t width, const uint8_t fill[3])
{
  for (int32_t x = 0; x < width; x++) {
    out[3 * x] = fill[0];
    out[3 * x + 1] = fill[1];
    out[3 * x + 2] = fill[2];
  }
}

static inline void copy_pixel(uint8_t *out, const uint8_t *in)
{
  out[0] = in[0];
  out[1] = in[1];
  out[2] = in[2];
}

/* bilinear_filter32RGB: 0 where (xin, yin) is outside the image. */
static int bilinear(uint8_t *out, const uint8_t *src, int32_t width, int32_t height, int64_t row_bytes, double xin,
                    double yin)
{
  if (xin < 0.0 || xin >= width || yin < 0.0 || yin >= height)
    return 0;
  xin -= 0.5;
  yin -= 0.5;
  int x = FLOOR(xin);
  int y = FLOOR(yin);
  double dx = xin - x;
  double dy = yin - y;
  int x0 = XCLIP(x + 0) * 3;
  int x1 = XCLIP(x + 1) * 3;
  const uint8_t *row0 = src + (int64_t)YCLIP(y) * row_bytes;
  const uint8_t *row1 = (y + 1 >= 0 && y + 1 < height) ? src + (int64_t)(y + 1) * row_bytes : NULL;
  for (int b = 0; b < 3; b++) {
    double v1 = row0[x0 + b] + (row0[x1 + b] - row0[x0 + b]) * dx;
    double v2 = row1 ? row1[x0 + b] + (row1[x1 + b] - row1[x0 + b]) * dx : v1;
    v1 = v1 + (v2 - v1) * dy;
    out[b] = (uint8_t)v1;
  }
  return 1;
}

/* Pillow's BICUBIC macro: its integer terms stay integers when the values are. */
#define BICUBIC(v, v1, v2, v3, v4, d)                \
  {                                                  \
    double p1 = v2;                                  \
    double p2 = -v1 + v3;                            \
    double p3 = 2 * (v1 - v2) + v3 - v4;             \
    double p4 = -v1 + v2 - v3 + v4;                  \
    v = p1 + (d) * (p2 + (d) * (p3 + (d) * p4));     \
  }

/* bicubic_filter32RGB: 0 where (xin, yin) is outside the image. */
static int bicubic(uint8_t *out, const uint8_t *src, int32_t width, int32_t height, int64_t row_bytes, double xin,
                   double yin)
{
  if (xin < 0.0 || xin >= width || yin < 0.0 || yin >= height)
    return 0;
  xin -= 0.5;
  yin -= 0.5;
  int x = FLOOR(xin);
  int y = FLOOR(yin);
  double dx = xin - x;
  double dy = yin - y;
  x--;
  y--;
  int x0 = XCLIP(x + 0) * 3;
  int x1 = XCLIP(x + 1) * 3;
  int x2 = XCLIP(x + 2) * 3;
  int x3 = XCLIP(x + 3) * 3;
  const uint8_t *rows[4];
  rows[0] = src + (int64_t)YCLIP(y) * row_bytes;
  for (int k = 1; k < 4; k++)
    rows[k] = (y + k >= 0 && y + k < height) ? src + (int64_t)(y + k) * row_bytes : NULL;
  for (int b = 0; b < 3; b++) {
    double v[4];
    const uint8_t *in = rows[0];
    int i0 = in[x0 + b], i1 = in[x1 + b], i2 = in[x2 + b], i3 = in[x3 + b];
    BICUBIC(v[0], i0, i1, i2, i3, dx);
    for (int k = 1; k < 4; k++) {
      in = rows[k];
      if (in != NULL) {
        i0 = in[x0 + b], i1 = in[x1 + b], i2 = in[x2 + b], i3 = in[x3 + b];
        BICUBIC(v[k], i0, i1, i2, i3, dx);
      } else {
        v[k] = v[k - 1];
      }
    }
    double r;
    BICUBIC(r, v[0], v[1], v[2], v[3], dy);
    out[b] = r <= 0.0 ? 0 : r >= 255.0 ? 255 : (uint8_t)r;
  }
  return 1;
}

/* ImagingGenericTransform with affine_transform: bilinear and bicubic. */
static void generic(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                    int64_t dst_row_bytes, const double a[6], int32_t filter, const uint8_t fill[3])
{
  for (int32_t y = 0; y < height; y++) {
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    for (int32_t x = 0; x < width; x++, out += 3) {
      double xin = x + 0.5;
      double yin = y + 0.5;
      double xx = a[0] * xin + a[1] * yin + a[2];
      double yy = a[3] * xin + a[4] * yin + a[5];
      int ok = filter == STOKE_GEOMETRY_BICUBIC ? bicubic(out, src, width, height, src_row_bytes, xx, yy)
                                                : bilinear(out, src, width, height, src_row_bytes, xx, yy);
      if (!ok)
        copy_pixel(out, fill);
    }
  }
}

/*
 * ImagingScaleAffine (nearest, a[1] == a[3] == 0): columns from a running sum of a[0], tabulated
 * by Pillow and recomputed here per row so that nothing is allocated. Between the first and the
 * last column that lands inside, a column that does not reads column 0, as Pillow's zeroed table.
 */
static void scale_nearest(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                          int64_t dst_row_bytes, const double a[6], const uint8_t fill[3])
{
  double xo = a[2] + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5;
  int32_t xmin = width, xmax = 0;
  double xs = xo;
  for (int32_t x = 0; x < width; x++) {
    int xin = COORD(xs);
    if (xin >= 0 && xin < width) {
      xmax = x + 1;
      if (x < xmin)
        xmin = x;
    }
    xs += a[0];
  }
  for (int32_t y = 0; y < height; y++) {
    int yi = COORD(yo);
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    fill_row(out, width, fill);
    if (yi >= 0 && yi < height) {
      const uint8_t *in = src + (int64_t)yi * src_row_bytes;
      xs = xo;
      for (int32_t x = 0; x < xmax; x++) {
        if (x >= xmin) {
          int xin = COORD(xs);
          copy_pixel(out + 3 * x, in + 3 * (int64_t)(xin >= 0 && xin < width ? xin : 0));
        }
        xs += a[0];
      }
    }
    yo += a[4];
  }
}

static inline int check_fixed(const double a[6], int x, int y)
{
  return fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

/* affine_fixed: nearest in 16.16 fixed point, where every corner fits. */
static void fixed_nearest(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                          int64_t dst_row_bytes, const double a[6], const uint8_t fill[3])
{
#define FIX(v) FLOOR((v) * 65536.0 + 0.5)
  int a0 = FIX(a[0]);
  int a1 = FIX(a[1]);
  int a3 = FIX(a[3]);
  int a4 = FIX(a[4]);
  int a2 = FIX(a[2] + a[0] * 0.5 + a[1] * 0.5);
  int a5 = FIX(a[5] + a[3] * 0.5 + a[4] * 0.5);
#undef FIX
  for (int32_t y = 0; y < height; y++) {
    int xx = a2;
    int yy = a5;
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    fill_row(out, width, fill);
    for (int32_t x = 0; x < width; x++, out += 3) {
      int xin = xx >> 16;
      if (xin >= 0 && xin < width) {
        int yin = yy >> 16;
        if (yin >= 0 && yin < height)
          copy_pixel(out, src + (int64_t)yin * src_row_bytes + 3 * (int64_t)xin);
      }
      xx += a0;
      yy += a3;
    }
    a2 += a1;
    a5 += a4;
  }
}

/* ImagingTransformAffine's last path: nearest in double, running sums, where a corner is too far for 16.16. */
static void float_nearest(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                          int64_t dst_row_bytes, const double a[6], const uint8_t fill[3])
{
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int32_t y = 0; y < height; y++) {
    double xx = xo;
    double yy = yo;
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    fill_row(out, width, fill);
    for (int32_t x = 0; x < width; x++, out += 3) {
      int xin = COORD(xx);
      if (xin >= 0 && xin < width) {
        int yin = COORD(yy);
        if (yin >= 0 && yin < height)
          copy_pixel(out, src + (int64_t)yin * src_row_bytes + 3 * (int64_t)xin);
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

/*
 * A map that moves by whole pixels, [1 0 tx; 0 1 ty] with integer tx and ty: the auto-augment
 * policies' TranslateX and TranslateY, which torchvision hands Pillow as int(magnitude). Output
 * pixel (x, y) then samples (x + tx + 0.5, y + ty + 0.5), an input pixel's centre, every double
 * operation of bilinear() and bicubic() is exact, and their weights are 0 and 1: the pixel is input
 * (x + tx, y + ty) where that is inside the image, else the fill. So the rows are copied, the same
 * bytes as generic() (AffineOpsTest compares both with Pillow). |t| is bounded so that x + t + 0.5
 * stays exact in a double, as generic() computes it.
 */
static int whole_pixel_shift(const double a[6], int64_t *tx, int64_t *ty)
{
  if (a[0] != 1.0 || a[1] != 0.0 || a[3] != 0.0 || a[4] != 1.0)
    return 0;
  if (!(fabs(a[2]) <= 1073741824.0 && fabs(a[5]) <= 1073741824.0) || a[2] != floor(a[2]) || a[5] != floor(a[5]))
    return 0; /* NaN fails the first test */
  *tx = (int64_t)a[2];
  *ty = (int64_t)a[5];
  return 1;
}

static void shift_rows(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                       int64_t dst_row_bytes, int64_t tx, int64_t ty, const uint8_t fill[3])
{
  /* The output columns [x0, x1) read input columns [x0 + tx, x1 + tx), all inside the image. */
  int64_t x0 = tx < 0 ? -tx : 0;
  int64_t x1 = width - tx;
  if (x0 > width)
    x0 = width;
  if (x1 > width)
    x1 = width;
  if (x1 < x0)
    x1 = x0;
  for (int32_t y = 0; y < height; y++) {
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    int64_t sy = y + ty;
    if (sy < 0 || sy >= height || x0 == x1) {
      fill_row(out, width, fill);
      continue;
    }
    fill_row(out, (int32_t)x0, fill);
    memcpy(out + 3 * x0, src + sy * src_row_bytes + 3 * (x0 + tx), 3 * (size_t)(x1 - x0));
    fill_row(out + 3 * x1, (int32_t)(width - x1), fill);
  }
}

void stoke_affine_rgb(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                      int64_t dst_row_bytes, const double matrix[6], int32_t filter, const uint8_t fill[3])
{
  int64_t tx, ty;
  if (filter != STOKE_GEOMETRY_NEAREST && whole_pixel_shift(matrix, &tx, &ty))
    shift_rows(src, width, height, src_row_bytes, dst, dst_row_bytes, tx, ty, fill);
  else if (filter != STOKE_GEOMETRY_NEAREST)
    generic(src, width, height, src_row_bytes, dst, dst_row_bytes, matrix, filter, fill);
  else if (matrix[1] == 0 && matrix[3] == 0)
    scale_nearest(src, width, height, src_row_bytes, dst, dst_row_bytes, matrix, fill);
  else if (check_fixed(matrix, 0, 0) && check_fixed(matrix, width, height) && check_fixed(matrix, 0, height) &&
           check_fixed(matrix, width, 0))
    fixed_nearest(src, width, height, src_row_bytes, dst, dst_row_bytes, matrix, fill);
  else
    float_nearest(src, width, height, src_row_bytes, dst, dst_row_bytes, matrix, fill);
}

void stoke_rotate_quarter_rgb(const uint8_t *src, int32_t width, int32_t height, int64_t src_row_bytes, uint8_t *dst,
                              int64_t dst_row_bytes, int32_t quarter_turns)
{
  for (int32_t y = 0; y < height; y++) {
    uint8_t *out = dst + (int64_t)y * dst_row_bytes;
    if (quarter_turns == 0) {
      memcpy(out, src + (int64_t)y * src_row_bytes, 3 * (size_t)width);
      continue;
    }
    for (int32_t x = 0; x < width; x++, out += 3) {
      int64_t sx, sy;
      if (quarter_turns == 1) { /* ROTATE_90: out[r][c] = in[c][w - 1 - r] */
        sx = width - 1 - y;
        sy = x;
      } else if (quarter_turns == 2) {
        sx = width - 1 - x;
        sy = height - 1 - y;
      } else { /* ROTATE_270: out[r][c] = in[h - 1 - c][r] */
        sx = y;
        sy = height - 1 - x;
      }
      copy_pixel(out, src + sy * src_row_bytes + 3 * sx);
    }
  }
}
