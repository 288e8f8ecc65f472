/*
 * hue_forms.c: ColorJitter's hue (stoke_augment_hue) in each of its forms, one thread, on
 * photographs' pixels: the plain loop (a pixel at a time, as before 2026-12-01), eight pixels at a
 * time (AVX2) and sixteen (AVX-512), each where this CPU has it. Each JPEG is decoded whole, and
 * its centre's 224 x 224 pixels (fewer where it is smaller) are converted at 16 shifts. It includes
 * the library's source to reach each form; it is a measurement, not part of Stoke.
 *
 *   gcc -std=c11 -O3 -o /tmp/hue_forms benchmarks/native/hue_forms.c -ljpeg -lm
 *   find DIR -name '*.jpg' | sort | head -200 | /tmp/hue_forms
 *
 * The plain loop runs first in each round: code of SSE instructions that runs after the vector
 * forms, with the vector registers' upper halves left dirty, ran 2.7x as slow on the 2-core VM
 * of docs/benchmarks (which is why the vector forms clear them on return).
 */
#define _DEFAULT_SOURCE
#include "../../native/pixels/stoke_augment.c"
#include "read_whole.h"

#include <jpeglib.h>
#include <time.h>

#define SIDE 224
#define MAX_CROPS 1000

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The centre SIDE x SIDE (or less) of the JPEG in data as packed RGB, malloc'd; NULL where it is not a colour JPEG. */
static uint8_t *centre(const uint8_t *data, long size, int64_t *pixels)
{
  struct jpeg_decompress_struct d;
  struct jpeg_error_mgr err;
  uint8_t *whole, *crop;
  int w, h, cw, ch, x0, y0, y;

  d.err = jpeg_std_error(&err);
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, data, (unsigned long)size);
  if (jpeg_read_header(&d, TRUE) != JPEG_HEADER_OK || d.num_components != 3) {
    jpeg_destroy_decompress(&d);
    return NULL;
  }
  d.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d);
  w = (int)d.output_width, h = (int)d.output_height;
  whole = malloc((size_t)w * h * 3);
  while (d.output_scanline < d.output_height) {
    JSAMPROW row = whole + (size_t)d.output_scanline * w * 3;
    jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  cw = w < SIDE ? w : SIDE, ch = h < SIDE ? h : SIDE, x0 = (w - cw) / 2, y0 = (h - ch) / 2;
  crop = malloc((size_t)cw * ch * 3);
  for (y = 0; y < ch; y++)
    memcpy(crop + (size_t)y * cw * 3, whole + ((size_t)(y0 + y) * w + x0) * 3, (size_t)cw * 3);
  free(whole);
  *pixels = (int64_t)cw * ch;
  return crop;
}

int main(void)
{
  static uint8_t *crops[MAX_CROPS];
  static int64_t sizes[MAX_CROPS];
  static const char *names[] = {"plain loop", "8 lanes (AVX2)", "16 lanes (AVX-512)"};
  const int lanes[] = {0, 8, 16}, widest = hue_lanes();
  char path[4096];
  int n = 0, round, form, k, c;
  int64_t total = 0;
  uint8_t *out;

  while (n < MAX_CROPS && next_path(stdin, path, sizeof path)) {
    long size;
    uint8_t *data = read_whole(path, &size);
    if (data != NULL && (crops[n] = centre(data, size, &sizes[n])) != NULL)
      total += sizes[n++];
    free(data);
  }
  if (n == 0) {
    fprintf(stderr, "no colour JPEG on stdin\n");
    return 2;
  }
  out = malloc((size_t)SIDE * SIDE * 3);
  printf("%d crops, %.0f pixels each on average, 16 shifts, one thread\n", n, (double)total / n);
  for (round = 0; round < 3; round++) {
    for (form = 0; form < 3; form++) {
      double t;
      if (lanes[form] > widest) /* a CPU with AVX-512's BW has AVX2 too */
        continue;
      t = now();
      for (k = 0; k < 16; k++)
        for (c = 0; c < n; c++)
          hue_with(crops[c], out, sizes[c], k * 16 + 5, lanes[form]);
      t = now() - t;
      printf("round %d, %-19s %7.1f us a 224 x 224 crop\n", round + 1, names[form],
             t / (16.0 * total) * SIDE * SIDE * 1e6);
    }
  }
  return 0;
}
