/*
 * check_geometry.c: the affine transform's vector paths against its plain loops, on the CPU it
 * runs on.
 *
 * Under bilinear and bicubic, stoke_affine_rgb runs the vector rows (affine_row8 with AVX-512,
 * eight pixels at a time, else affine_row4 with AVX2, four) for each row's first multiple of their
 * width, and it copies rows for a shift by whole pixels; AffineOpsTest compares the library with
 * Pillow on a few hundred matrices, through the CPU's widest path only. This program runs each
 * width this CPU has and stoke_affine_rgb itself (bicubic too), and compares every output byte
 * with generic() with no vector rows, bilinear() and bicubic() pixel by pixel, over random affine
 * matrices (rotations, shears, scales of both signs, shifts by whole and by fractional pixels,
 * maps that leave the image), images of 1 to 67 pixels a side with and without row gaps, and
 * random fills. Each source ends where its last row's last pixel does, against a page that faults on
 * reading, so a read past the image crashes; each destination row is followed by a guard byte,
 * which must stay as it was.
 *
 *   gcc -std=c11 -O2 -o /tmp/check_geometry native/pixels/check_geometry.c -lm && /tmp/check_geometry
 *
 * Prints the number of cases checked; exits 1 naming the first case that differs.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stoke_geometry.c"

static uint64_t state = 0x243F6A8885A308D3ull;

static uint64_t next(void)
{
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

static double uniform(double lo, double hi)
{
  return lo + (hi - lo) * (double)(next() >> 11) / 9007199254740992.0;
}

static void matrix(double a[6], int32_t width, int32_t height)
{
  double cx = width * 0.5, cy = height * 0.5;
  switch (next() % 6) {
  case 0: { /* a rotation about the centre, as torchvision's Rotate */
    double t = uniform(-3.2, 3.2), c = cos(t), s = sin(t);
    a[0] = c, a[1] = s, a[3] = -s, a[4] = c;
    a[2] = cx - c * cx - s * cy + uniform(-2, 2);
    a[5] = cy + s * cx - c * cy + uniform(-2, 2);
    break;
  }
  case 1: /* a shear, as ShearX */
    a[0] = 1, a[1] = uniform(-1, 1), a[3] = 0, a[4] = 1;
    a[2] = uniform(-20, 20), a[5] = 0;
    break;
  case 2: /* a shear, as ShearY */
    a[0] = 1, a[1] = 0, a[3] = uniform(-1, 1), a[4] = 1;
    a[2] = 0, a[5] = uniform(-20, 20);
    break;
  case 3: /* a shift by whole pixels, which is copied, or by a fraction */
    a[0] = 1, a[1] = (next() & 1) ? 0.0 : -0.0, a[3] = (next() & 1) ? 0.0 : -0.0, a[4] = 1;
    a[2] = (double)((int64_t)(next() % (uint64_t)(2 * width + 7)) - width - 3);
    a[5] = (double)((int64_t)(next() % (uint64_t)(2 * height + 7)) - height - 3);
    if (next() & 1) a[2] += uniform(-0.99, 0.99);
    break;
  case 4: /* scales of either sign */
    a[0] = uniform(-2.5, 2.5), a[1] = 0, a[3] = 0, a[4] = uniform(-2.5, 2.5);
    a[2] = uniform(-30, 30), a[5] = uniform(-30, 30);
    break;
  default:
    for (int k = 0; k < 6; k++) a[k] = uniform(-2, 2) * (k == 2 || k == 5 ? 30 : 1);
  }
}

int main(void)
{
  long page = sysconf(_SC_PAGESIZE);
  int cases[3] = {0, 0, 0}, failures = 0;
  int32_t top = affine_lanes();
  /* -1: stoke_affine_rgb as the library runs it; then each vector width this CPU has */
  const int32_t paths[3] = {-1, 4, 8};
  const int32_t filters[2] = {STOKE_GEOMETRY_BILINEAR, STOKE_GEOMETRY_BICUBIC};
  for (int32_t width = 1; width <= 67; width += (width < 20 ? 1 : 7)) {
    for (int32_t height = 1; height <= 67; height += (height < 6 ? 1 : 11)) {
      int64_t gap = (int64_t)(next() % 3) * 5;
      int64_t row_bytes = 3 * (int64_t)width + gap;
      int64_t bytes = (height - 1) * row_bytes + 3 * (int64_t)width;
      size_t mapped = (size_t)((bytes + page - 1) / page + 1) * (size_t)page;
      uint8_t *map = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (map == MAP_FAILED) {
        perror("mmap");
        return 2;
      }
      mprotect(map + mapped - page, (size_t)page, PROT_NONE);
      uint8_t *src = map + (mapped - (size_t)page) - (size_t)bytes; /* ends against the guard page */
      for (int64_t i = 0; i < bytes; i++) src[i] = (uint8_t)next();
      int64_t dst_row = 3 * (int64_t)width + 1; /* a guard byte after each row */
      uint8_t *want = malloc((size_t)(dst_row * height)), *got = malloc((size_t)(dst_row * height));
      for (int m = 0; m < 40; m++) {
        double a[6];
        matrix(a, width, height);
        uint8_t fill[3] = {(uint8_t)next(), (uint8_t)next(), (uint8_t)next()};
        for (int f = 0; f < 2; f++) {
          memset(want, 0xA5, (size_t)(dst_row * height));
          memset(got, 0xA5, (size_t)(dst_row * height));
          generic(src, width, height, row_bytes, want, dst_row, a, filters[f], fill, 0);
          for (int i = 0; i < 3; i++) {
            int32_t lanes = paths[i];
            if (lanes > top) continue;
            memset(got, 0xA5, (size_t)(dst_row * height));
            if (lanes < 0)
              stoke_affine_rgb(src, width, height, row_bytes, got, dst_row, a, filters[f], fill);
            else
              generic(src, width, height, row_bytes, got, dst_row, a, filters[f], fill, lanes);
            cases[lanes < 0 ? 0 : lanes / 4]++;
            if (memcmp(want, got, (size_t)(dst_row * height)) != 0 && failures++ == 0)
              fprintf(stderr, "%dx%d (row gap %lld), filter %d, %d lanes, matrix [%.17g %.17g %.17g %.17g %.17g %.17g]"
                      " differs\n", width, height, (long long)gap, filters[f], lanes, a[0], a[1], a[2], a[3], a[4],
                      a[5]);
          }
        }
      }
      free(want);
      free(got);
      munmap(map, mapped);
    }
  }
  printf("%d cases through stoke_affine_rgb (bilinear and bicubic, random affine maps), %d through 4 lanes,"
         " %d through 8 (this CPU's widest: %d); %d differ\n", cases[0], cases[1], cases[2], top, failures);
  return failures ? 1 : 0;
}
