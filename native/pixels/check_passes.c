/*
 * check_passes.c: every form of the resize's two passes against the plain loops, on the CPU it
 * runs on.
 *
 * The horizontal pass: a CPU with AVX-512 VNNI runs horizontal_block16 and horizontal_vnni in
 * production (with VBMI, horizontal_block16_bytes too) and never the AVX2 gathers or one pixel at a
 * time past 16 taps; this program runs each path this CPU has (horizontal_pass without VNNI, with
 * it, and with VBMI's byte permutes) over PIL's bilinear and bicubic coefficients from 1 to 3,000
 * taps, and compares each byte with horizontal_columns, the loop that is the formula.
 *
 * The vertical pass: vertical_clip_zmm (AVX-512) against filter_row and clip_row, the loops gcc
 * vectorises, over PIL's coefficients and over random weights of both signs, every row width from
 * 1 to 70 pixels and wider ones.
 *
 * Each source ends where its last row's last pixel does, against a page that faults on reading, so
 * a read past a column's taps or a row's end crashes. Java's ScalarKernels is compared with the
 * library by ResamplerTest and TrainTransformTest; NativeCheckProgramsTest (ffm-bindings) builds and
 * runs this program.
 *
 *   gcc -std=c11 -O2 -o /tmp/check_passes native/pixels/check_passes.c -lm && /tmp/check_passes
 *
 * Prints the number of cases checked per path; exits 1 naming the first case that differs.
 */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stoke_pixels.c"
#include "pil_coefficients.h"


static int failures;

/* The horizontal pass's paths, by vnni_supported's levels; cases[VERTICAL] counts the vertical ones. */
#define VERTICAL 3
static const char *const LEVELS[] = {"without VNNI", "with VNNI", "with VNNI and VBMI"};

/* One case: rows of width pixels (row_bytes apart), the box [left, left + length) to out pixels. */
static void check(int32_t width, int64_t row_bytes, int32_t rows, double left, double length, int32_t out, int cubic,
                  unsigned seed, int vnni_here, int *cases)
{
  long page = sysconf(_SC_PAGESIZE);
  int64_t bytes = (rows - 1) * row_bytes + 4 * (int64_t)width;
  size_t mapped = (size_t)((bytes + page - 1) / page + 1) * (size_t)page;
  uint8_t *map = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  mprotect(map + mapped - page, (size_t)page, PROT_NONE);
  uint8_t *src = map + mapped - page - bytes;
  uint64_t noise = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < bytes; i++) {
    noise ^= noise << 13, noise ^= noise >> 7, noise ^= noise << 17;
    src[i] = (uint8_t)(noise >> 32);
  }
  int32_t *bounds = malloc(sizeof(int32_t) * 2 * (size_t)out), *weights;
  int32_t taps = pil_coefficients(width, left, length, out, cubic, bounds, &weights);
  size_t tmp_bytes = (size_t)out * (size_t)rows * 4;
  uint8_t *want = malloc(tmp_bytes), *got = malloc(tmp_bytes);
  horizontal_columns(src, row_bytes, 0, rows, out, 0, bounds, weights, taps, want);
  for (int vnni = 0; vnni <= vnni_here; vnni++) {
    memset(got, 0xA5, tmp_bytes);
    horizontal_pass(src, row_bytes, 0, rows, out, bounds, weights, taps, vnni, got);
    if (memcmp(want, got, tmp_bytes) != 0) {
      if (failures++ < 10)
        fprintf(stderr, "differs %s: %d pixels (a row of %lld bytes), %d rows, box %.2f+%.2f -> %d, %s, %d taps\n",
                LEVELS[vnni], width, (long long)row_bytes, rows, left, length, out,
                cubic ? "bicubic" : "bilinear", taps);
    }
    cases[vnni]++;
  }
  free(want);
  free(got);
  free(bounds);
  free(weights);
  munmap(map, mapped);
}

/* A source of `bytes` ending against a page that faults on reading, filled with noise; *mapped to unmap. */
static uint8_t *guarded(int64_t bytes, unsigned seed, uint8_t **map, size_t *mapped)
{
  long page = sysconf(_SC_PAGESIZE);
  *mapped = (size_t)((bytes + page - 1) / page + 1) * (size_t)page;
  *map = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (*map == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  mprotect(*map + *mapped - page, (size_t)page, PROT_NONE);
  uint8_t *src = *map + *mapped - page - bytes;
  uint64_t noise = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < bytes; i++) {
    noise ^= noise << 13, noise ^= noise >> 7, noise ^= noise << 17;
    src[i] = (uint8_t)(noise >> 32);
  }
  return src;
}

/*
 * One vertical case: tmp rows of width pixels, out_rows outputs, each output's taps from the rows
 * PIL's coefficients give (or, with random set, random rows and weights of both signs within 2^23),
 * compared row by row, the zmm path against filter_row then clip_row.
 */
static void check_vertical(int32_t width, int32_t rows, int32_t out_rows, int cubic, int random, unsigned seed,
                           int *cases)
{
  int64_t n = 4 * (int64_t)width;
  uint8_t *map;
  size_t mapped;
  uint8_t *tmp = guarded(n * rows, seed, &map, &mapped);
  int32_t *bounds = malloc(sizeof(int32_t) * 2 * (size_t)out_rows), *weights;
  int32_t taps = pil_coefficients(rows, 0, rows, out_rows, cubic, bounds, &weights);
  if (random) {
    uint64_t r = 0x2545F4914F6CDD1Dull * (seed + 7);
    for (int32_t y = 0; y < out_rows; y++) {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      int32_t count = 1 + (int32_t)(r % (uint64_t)(taps < rows ? taps : rows));
      bounds[2 * y] = (int32_t)((r >> 20) % (uint64_t)(rows - count + 1));
      bounds[2 * y + 1] = count;
      /* Within 2^23, and small enough that no sum overflows (signed overflow is undefined in C). */
      int64_t limit = ((int64_t)1 << 31) / (256 * (int64_t)count + 1);
      if (limit > (1 << 23)) limit = 1 << 23;
      for (int32_t t = 0; t < count; t++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        weights[(int64_t)y * taps + t] = (int32_t)((int64_t)(r % (uint64_t)(2 * limit + 1)) - limit);
      }
    }
  }
  int32_t *acc = malloc(sizeof(int32_t) * (size_t)n);
  uint8_t *want = malloc((size_t)n), *got = malloc((size_t)n);
  for (int32_t y = 0; y < out_rows; y++) {
    filter_row(acc, tmp, width, 0, y, bounds, weights, taps);
    clip_row(acc, (int32_t)n, want);
    memset(got, 0xA5, (size_t)n);
    /* From a pixel within the row as a chunk of it does, and from its start. */
    int64_t from = 4 * (int64_t)(width > 3 ? width / 3 : 0);
    vertical_clip_zmm(tmp + (int64_t)bounds[2 * y] * n, n, bounds[2 * y + 1], weights + (int64_t)y * taps, from,
                      n - from, got + from);
    vertical_clip_zmm(tmp + (int64_t)bounds[2 * y] * n, n, bounds[2 * y + 1], weights + (int64_t)y * taps, 0, from,
                      got);
    if (memcmp(want, got, (size_t)n) != 0) {
      if (failures++ < 10)
        fprintf(stderr, "vertical differs: %d pixels, %d rows to %d, output row %d, %s, %d taps\n", width, rows,
                out_rows, y, random ? "random weights" : cubic ? "bicubic" : "bilinear", bounds[2 * y + 1]);
      break;
    }
  }
  cases[VERTICAL]++;
  free(acc);
  free(want);
  free(got);
  free(bounds);
  free(weights);
  munmap(map, mapped);
}

int main(void)
{
  int vnni_here = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  vnni_here = vnni_supported();
#endif
  int cases[VERTICAL + 1] = {0, 0, 0, 0};
  /* The training transform's boxes, wide and narrow, and the edges of each path. */
  static const int32_t sizes[][4] = {
      {2000, 13, 224, 0}, {2000, 13, 224, 1}, {300, 10, 224, 0}, {300, 10, 224, 1}, {1500, 7, 97, 1},
      {1501, 6, 97, 0},   {1999, 5, 223, 0},  {630, 9, 229, 0},  {510, 11, 229, 1}, {4001, 3, 31, 1},
      {3000, 2, 1, 1},    {90, 7, 128, 1},    {5, 3, 229, 0},    {33, 4, 1, 0},     {65, 5, 2, 1}};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
    check(sizes[i][0], 4 * (int64_t)sizes[i][0], sizes[i][1], 0, sizes[i][0], sizes[i][2], sizes[i][3],
          (unsigned)i, vnni_here, cases);
  /* Downscales by 1.5 to 7.1, bilinear and bicubic: blocks whose taps spread over 33 to 64 pixels,
   * and over more, in two halves of up to 64 each. */
  for (int32_t width = 336; width <= 1606; width += 10)
    for (int cubic = 0; cubic <= 1; cubic++)
      check(width, 4 * (int64_t)width + 4 * (width % 3), 3 + width % 5, (width % 7) * 0.5, width - 4 - width % 7, 224,
            cubic, 100 + (unsigned)width, vnni_here, cases);
  /* Random boxes within rows with pixels past the row's width (a decoder's stride), flipped or not. */
  srand(49);
  for (unsigned i = 0; i < 400; i++) {
    int32_t width = 1 + rand() % 2500;
    int64_t row_bytes = 4 * ((int64_t)width + rand() % 3);
    int32_t rows = 1 + rand() % 9;
    double length = 1 + rand() % width;
    double left = (double)(rand() % (int)(width - length + 1)) + (rand() % 2 ? 0 : 0.5);
    if (left + length > width) left = width - length;
    int32_t out = 1 + rand() % 260;
    check(width, row_bytes, rows, left, length, out, rand() % 2, 1000 + i, vnni_here, cases);
  }
  /* The vertical pass, where this CPU has AVX-512. */
  int zmm_here = zmm_rows_supported();
  if (zmm_here) {
    for (int32_t width = 1; width <= 70; width++)
      for (int cubic = 0; cubic <= 1; cubic++)
        check_vertical(width, 1 + width % 13, 1 + (width * 7) % 29, cubic, 0, (unsigned)width, cases);
    static const int32_t vsizes[][3] = {{224, 250, 224}, {224, 500, 224}, {176, 300, 176}, {229, 120, 229},
                                        {1100, 900, 97}, {3, 2000, 1},    {257, 3, 600}};
    for (size_t i = 0; i < sizeof(vsizes) / sizeof(vsizes[0]); i++)
      for (int cubic = 0; cubic <= 1; cubic++)
        check_vertical(vsizes[i][0], vsizes[i][1], vsizes[i][2], cubic, 0, 77 + (unsigned)i, cases);
    for (unsigned i = 0; i < 200; i++)
      check_vertical(1 + rand() % 400, 1 + rand() % 60, 1 + rand() % 80, rand() % 2, 1, 500 + i, cases);
  }
  printf("check_passes: %d horizontal cases without VNNI, %d with it, %d with VBMI's byte permutes too%s; %d vertical "
         "cases%s; %d differ\n", cases[0], cases[1], cases[2],
         vnni_here == VNNI_BYTES ? "" : vnni_here ? " (this CPU has no VBMI)" : " (this CPU has neither)", cases[VERTICAL],
         zmm_here ? "" : " (this CPU has no AVX-512)", failures);
  return failures ? 1 : 0;
}
