/*
 * check_tensor_affine.c: stoke_tensor_affine's forms against its plain loop (the Java tests reach
 * only the form of the CPU they run on; NativeCheckProgramsTest builds and runs this). The
 * library's x86-64-v3 clone does each fmaf, floorf and nearbyintf in one instruction, where the
 * default clone calls libm for each; and with AVX-512 its bilinear rows go sixteen pixels at a
 * time (affine_row16). Each is exact (a fused
 * multiply-add rounds once; the rounding functions are exact), so each must give the plain loop's
 * bytes: this program compares a build of the default form alone, without the vector rows, with
 * the library over 4,000 random images of 1 to 300 pixels a side, affine matrices (rotations,
 * shears, scales, shifts), fills, both interpolations and both versions. Each source ends against a
 * page that faults on reading, so a read past the image crashes.
 *
 *   gcc -std=c11 -O3 -fPIC -shared -DAFFINE_CLONES= -DAFFINE_LANES=0 -o /tmp/aff_plain.so \
 *       native/pixels/stoke_tensor.c -lm
 *   gcc -std=c11 -O3 -fPIC -shared -o /tmp/aff_clones.so native/pixels/stoke_tensor.c -lm
 *   gcc -O2 -o /tmp/check_tensor_affine native/pixels/check_tensor_affine.c -ldl -lm
 *   /tmp/check_tensor_affine /tmp/aff_plain.so /tmp/aff_clones.so
 *
 * Exits 1 naming the first case that differs. (Built with -ffp-contract=fast -march=x86-64-v3, the
 * plain form differs at once, and so does a vector row with two weights swapped: the check sees a
 * change of rounding.)
 */
#define _DEFAULT_SOURCE
#include "check_guard.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*affine_fn)(const uint8_t *, uint8_t *, int32_t, int32_t, const float *, int32_t, const float *, int32_t);

static uint64_t state = 88172645463325252ull;

static uint64_t next(void)
{
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

static float uniform(float lo, float hi)
{
  return lo + (hi - lo) * (float)((next() >> 11) * (1.0 / 9007199254740992.0));
}

static affine_fn load(const char *path)
{
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  affine_fn f = lib ? (affine_fn)dlsym(lib, "stoke_tensor_affine") : NULL;
  if (f == NULL) {
    fprintf(stderr, "%s: %s\n", path, dlerror());
    exit(2);
  }
  return f;
}

int main(int argc, char **argv)
{
  affine_fn plain, clones;
  long bytes = 0;
  int k;

  if (argc != 3) {
    fprintf(stderr, "usage: %s PLAIN.so CLONES.so\n", argv[0]);
    return 2;
  }
  plain = load(argv[1]);
  clones = load(argv[2]);
  for (k = 0; k < 4000; k++) {
    const int w = 1 + (int)(next() % (k % 4 == 0 ? 300 : 90)), h = 1 + (int)(next() % (k % 4 == 0 ? 300 : 90));
    const size_t n = (size_t)w * h * 3;
    uint8_t *src = against_guard(n), *a = malloc(n), *b = malloc(n);
    const float angle = uniform(-3.2f, 3.2f), scale = k % 7 == 0 ? uniform(0.3f, 3.0f) : 1.0f;
    float theta[6] = {scale * cosf(angle), sinf(angle), uniform(-1, 1), -sinf(angle), scale * cosf(angle),
                      uniform(-1, 1)};
    const float fill[3] = {uniform(0, 255), uniform(0, 255), uniform(0, 255)};
    const int mode = (int)(next() % 2), v2 = (int)(next() % 2), with_fill = (int)(next() % 2);
    size_t i;

    for (i = 0; i < n; i++)
      src[i] = (uint8_t)next();
    if (k % 5 == 0) /* a shear, as ShearX */
      theta[0] = 1, theta[1] = uniform(-1, 1), theta[3] = 0, theta[4] = 1;
    plain(src, a, w, h, theta, mode, with_fill ? fill : NULL, v2);
    clones(src, b, w, h, theta, mode, with_fill ? fill : NULL, v2);
    if (memcmp(a, b, n) != 0) {
      printf("differs: case %d, %dx%d, mode %d, v2 %d, fill %d\n", k, w, h, mode, v2, with_fill);
      return 1;
    }
    bytes += (long)n;
    free(a);
    free(b);
  }
  printf("check_tensor_affine: 4000 cases, %ld bytes; 0 differ\n", bytes);
  return 0;
}
