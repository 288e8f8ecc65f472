/*
 * check_hue.c: ColorJitter's hue (stoke_augment_hue) in its vector form against its plain loop, on
 * the CPU it runs on.
 *
 * stoke_augment_hue converts sixteen pixels at a time where the CPU has AVX-512 (hue16), else eight
 * where it has AVX2 (hue8), and the rest one at a time (the plain loop); ColorJitterTest compares the
 * library with torchvision on 360,000 colours, through this CPU's widest path only. This program
 * runs each width this CPU has and compares every output byte with the plain loop's over all
 * 16,777,216 RGB colours at each shift asked for (by default
 * 0, 1, 2, 127, 128, 129, 254, 255, and -1 and -128 as the caller may pass them; "all" runs the 256),
 * into another buffer and in place, and over runs of 1 to 40 pixels at every start in a block of
 * eight. Each source ends against a page that faults on reading, so a read past the pixels crashes,
 * and each destination is followed by a guard byte, which must stay as it was.
 *
 *   gcc -std=c11 -O2 -o /tmp/check_hue native/pixels/check_hue.c -lm && /tmp/check_hue [all]
 *
 * Prints the number of pixels checked; exits 1 naming the first that differs.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_guard.h"
#include "stoke_augment.c"

#define COLOURS (1L << 24)

/* Compares n pixels of the library's result with the plain loop's; 0 where each byte is the same. */
static int same(const uint8_t *got, const uint8_t *want, int64_t n, int32_t shift, const char *what)
{
  int64_t i;

  for (i = 0; i < 3 * n; i++) {
    if (got[i] != want[i]) {
      printf("differs: %s, shift %d, pixel %ld channel %ld: %d, the plain loop %d\n", what, shift, (long)(i / 3),
             (long)(i % 3), got[i], want[i]);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv)
{
  static const int32_t some[] = {0, 1, 2, 127, 128, 129, 254, 255, -1, -128};
  const int all = argc > 1 && strcmp(argv[1], "all") == 0;
  const int shifts = all ? 256 : (int)(sizeof some / sizeof some[0]);
  uint8_t *colours = against_guard(3 * COLOURS), *want = malloc(3 * COLOURS), *got = malloc(3 * COLOURS + 1);
  uint8_t *inplace = against_guard(3 * COLOURS);
  long checked = 0;
  int k, start, n;

  if (!want || !got) {
    perror("malloc");
    return 2;
  }
  int widths[2], nwidths = 0, w;

  /* A CPU with AVX-512's BW has AVX2 too. */
  if (hue_lanes() == 16)
    widths[nwidths++] = 16;
  if (hue_lanes() >= 8)
    widths[nwidths++] = 8;
  if (nwidths == 0) {
    printf("this CPU has no AVX2: the library runs the plain loop alone; checking the call against it\n");
    widths[nwidths++] = 0;
  }
  for (long c = 0; c < COLOURS; c++) {
    colours[3 * c] = (uint8_t)(c >> 16);
    colours[3 * c + 1] = (uint8_t)(c >> 8);
    colours[3 * c + 2] = (uint8_t)c;
  }
  for (k = 0; k < shifts; k++) {
    const int32_t shift = all ? k : some[k];

    hue_with(colours, want, COLOURS, shift, 0);
    for (w = 0; w < nwidths; w++) {
      got[3 * COLOURS] = 0xA5;
      hue_with(colours, got, COLOURS, shift, widths[w]);
      if (same(got, want, COLOURS, shift, widths[w] == 16 ? "every colour, 16 lanes" : "every colour, 8 lanes"))
        return 1;
      if (got[3 * COLOURS] != 0xA5) {
        printf("differs: the byte after the destination was written (shift %d)\n", shift);
        return 1;
      }
      memcpy(inplace, colours, 3 * COLOURS);
      hue_with(inplace, inplace, COLOURS, shift, widths[w]);
      if (same(inplace, want, COLOURS, shift, "every colour, in place"))
        return 1;
      checked += 2 * COLOURS;
    }
  }
  /* Short runs, starting anywhere in a block of sixteen and ending against the guard page. */
  for (w = 0; w < nwidths; w++) {
    for (start = 0; start < 16; start++) {
      for (n = 1; n <= 56; n++) {
        const uint8_t *src = colours + 3 * (COLOURS - n) - 3 * start;
        uint8_t *tail = against_guard(3 * (size_t)n);

        memcpy(tail, src, 3 * (size_t)n);
        hue_with(tail, want, n, 77, 0);
        got[3 * n] = 0xA5;
        hue_with(tail, got, n, 77, widths[w]);
        if (same(got, want, n, 77, "a short run") || got[3 * n] != 0xA5)
          return 1;
        checked += n;
      }
    }
  }
  /* And the library's own entry point, the widest form. */
  hue_with(colours, want, 1000003, 200, 0);
  stoke_augment_hue(colours, got, 1000003, 200);
  if (same(got, want, 1000003, 200, "stoke_augment_hue"))
    return 1;
  checked += 1000003;
  printf("check_hue: %ld pixels at %d shifts and in short runs, %s; 0 differ\n", checked, shifts,
         nwidths == 2 ? "16 and 8 lanes (AVX-512 and AVX2)" : widths[0] == 8 ? "8 lanes (AVX2)" : "the plain loop");
  return 0;
}
