/*
 * coefficient_read.c: what the entropy decoding of a restart copy costs against a whole decode,
 * sequential and progressive files apart, one thread, per file. A copy (stoke cache, a filler)
 * reads every coefficient with jpeg_read_coefficients and codes them again; a decode epoch's image
 * decodes its crop. This says which files make the copy's read cost. A measurement, not part of
 * Stoke.
 *
 *   gcc -O2 -o /tmp/coefficient_read benchmarks/native/coefficient_read.c -ljpeg
 *   find DIR -name '*.jpg' | sort | head -1000 | /tmp/coefficient_read REPEATS
 */
#include "read_whole.h"

#include <jpeglib.h>
#include <setjmp.h>
#include <time.h>

struct guard {
  struct jpeg_error_mgr mgr;
  jmp_buf on_error;
};

static void on_error(j_common_ptr cinfo)
{
  longjmp(((struct guard *)cinfo->err)->on_error, 1);
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The files, read once (at file scope: nothing setjmp could clobber). */
static uint8_t **data;
static long *sizes;
static int n;
static uint8_t *row;

/*
 * Decodes file i whole to RGB, a row at a time, or with `coefficients_only` reads its coefficients
 * as a copy does; its mode in *progressive. 0 where libjpeg refused it.
 */
static int run(int i, int coefficients_only, int *progressive)
{
  struct jpeg_decompress_struct src;
  struct guard g;
  src.err = jpeg_std_error(&g.mgr);
  g.mgr.error_exit = on_error;
  if (setjmp(g.on_error)) {
    jpeg_destroy_decompress(&src);
    return 0;
  }
  jpeg_create_decompress(&src);
  jpeg_mem_src(&src, data[i], (unsigned long)sizes[i]);
  jpeg_read_header(&src, TRUE);
  *progressive = src.progressive_mode;
  if (coefficients_only) {
    jpeg_read_coefficients(&src);
  } else {
    src.out_color_space = JCS_RGB;
    jpeg_start_decompress(&src);
    if (src.output_width > 20000) longjmp(g.on_error, 1);
    while (src.output_scanline < src.output_height) {
      JSAMPROW r = row;
      jpeg_read_scanlines(&src, &r, 1);
    }
    jpeg_finish_decompress(&src);
  }
  jpeg_destroy_decompress(&src);
  return 1;
}

int main(int argc, char **argv)
{
  int repeats = argc > 1 ? atoi(argv[1]) : 3;
  n = read_list(stdin, &data, &sizes);
  if (n == 0) {
    fprintf(stderr, "no files on stdin\n");
    return 2;
  }
  row = malloc(3 * 20000);
  double whole[2] = {0, 0}, coefficients[2] = {0, 0};
  long files[2] = {0, 0};
  for (int r = 0; r < repeats; r++) {
    for (int i = 0; i < n; i++) {
      int progressive = 0;
      double a = now();
      if (!run(i, 0, &progressive)) continue;
      double b = now();
      if (!run(i, 1, &progressive)) continue;
      double c = now();
      whole[progressive] += b - a;
      coefficients[progressive] += c - b;
      files[progressive]++;
    }
  }
  printf("%d files x %d, one thread\n", n, repeats);
  for (int p = 0; p < 2; p++) {
    if (files[p] == 0) continue;
    printf("%s: %ld decodes, us a file: whole decode to RGB %.1f | jpeg_read_coefficients %.1f | their share of all"
           " files' coefficient reads %.0f%%\n",
           p ? "progressive" : "sequential", files[p] / repeats, whole[p] / files[p] * 1e6,
           coefficients[p] / files[p] * 1e6, 100 * coefficients[p] / (coefficients[0] + coefficients[1]));
  }
  return 0;
}
