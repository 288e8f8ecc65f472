/*
 * affine_clones.c: stoke_tensor_affine's two forms against each other, a check run by hand (the
 * Java tests reach only the form of the CPU they run on). The library's x86-64-v3 clone does each
 * fmaf, floorf and nearbyintf in one instruction; the default clone calls libm for each. Both are
 * exact (a fused multiply-add rounds once; the rounding functions are exact), so both must give
 * the same bytes: this program compares a build of the default form alone with the library's
 * clones over 4,000 random images, affine matrices (rotations, shears, shifts), fills, both
 * interpolations and both versions.
 *
 *   gcc -std=c11 -O3 -fPIC -shared -DAFFINE_CLONES= -o /tmp/aff_plain.so native/pixels/stoke_tensor.c -lm
 *   gcc -std=c11 -O3 -fPIC -shared -o /tmp/aff_clones.so native/pixels/stoke_tensor.c -lm
 *   gcc -O2 -o /tmp/affine_clones benchmarks/native/affine_clones.c -ldl -lm
 *   /tmp/affine_clones /tmp/aff_plain.so /tmp/aff_clones.so
 *
 * Exits 1 naming the first case that differs. (Built with -ffp-contract=fast -march=x86-64-v3, the
 * plain form differs at once: the check sees a change of rounding.)
 */
#define _DEFAULT_SOURCE
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
    const int w = 1 + (int)(next() % 90), h = 1 + (int)(next() % 90);
    const size_t n = (size_t)w * h * 3;
    uint8_t *src = malloc(n), *a = malloc(n), *b = malloc(n);
    const float angle = uniform(-3.2f, 3.2f);
    float theta[6] = {cosf(angle), sinf(angle), uniform(-1, 1), -sinf(angle), cosf(angle), uniform(-1, 1)};
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
    free(src);
    free(a);
    free(b);
  }
  printf("affine_clones: 4000 cases, %ld bytes; 0 differ\n", bytes);
  return 0;
}
