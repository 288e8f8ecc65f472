/*
 * copy_split.c: where a restart copy's time goes (stoke_jpeg_add_restarts, a filler's and stoke
 * cache's), phase by phase, one thread, per file: reading the coefficients (libjpeg's entropy
 * decoding of the whole file), the range check in each of its forms (block by block, as before
 * 2026-12-01; row by row as one flat array with SSE2 and with AVX2, as since), and writing the copy
 * (libjpeg's coding with the standard tables and the restart markers); a file the copy refuses is
 * left out. It includes the region
 * decoder's source to time its steps; it is a measurement, not part of Stoke.
 *
 *   gcc -O3 -o /tmp/copy_split benchmarks/native/copy_split.c -ljpeg
 *   find DIR -name '*.jpg' | sort | /tmp/copy_split REPEATS
 */
#include "../../native/pixels/stoke_jpeg.c"
#include "read_whole.h"

#include <stdlib.h>
#include <time.h>

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The check as it was: every row block by block. */
static int blocks_only(j_decompress_ptr src, jvirt_barray_ptr *coefficients)
{
  for (int c = 0; c < src->num_components; c++) {
    jpeg_component_info *comp = &src->comp_info[c];
    for (JDIMENSION row = 0; row < comp->height_in_blocks; row++) {
      JBLOCKARRAY blocks = (*src->mem->access_virt_barray)((j_common_ptr)src, coefficients[c], row, 1, FALSE);
      if (!blocks_within(blocks[0], comp->width_in_blocks)) return 0;
    }
  }
  return 1;
}

/* The files, read once (at file scope: nothing setjmp could clobber). */
static uint8_t **data;
static long *sizes;
static int n;

int main(int argc, char **argv)
{
  int repeats = argc > 1 ? atoi(argv[1]) : 3;
  char path[64]; /* the AVX2 figure's text, below */
  n = read_list(stdin, &data, &sizes);
  if (n == 0) {
    fprintf(stderr, "no files on stdin\n");
    return 2;
  }
  int avx2 = has_avx2();
  int64_t copy_bytes = (int64_t)64 << 20;
  uint8_t *copy = malloc((size_t)copy_bytes);
  char message[256];
  double t_read = 0, t_blocks = 0, t_sse2 = 0, t_avx2 = 0, t_write = 0;
  int copied = 0;
  for (int r = 0; r < repeats; r++) {
    for (int i = 0; i < n; i++) {
      struct jpeg_decompress_struct src;
      struct jpeg_compress_struct out;
      struct transcoder t;
      init_transcoder(&src, &out, &t, 500, copy, copy_bytes, message, sizeof(message));
      if (setjmp(t.e.on_error)) {
        if (t.writing) jpeg_destroy_compress(&out);
        jpeg_destroy_decompress(&src);
        continue;
      }
      double a = now();
      open_transcoder(&src, &t, data[i], sizes[i]);
      if (src.arith_code) { /* refused by the copy */
        jpeg_destroy_decompress(&src);
        continue;
      }
      jvirt_barray_ptr *coefficients = jpeg_read_coefficients(&src);
      double b = now();
      int ok = blocks_only(&src, coefficients);
      double c = now();
      ok &= within_baseline_rows(&src, coefficients, 0);
      double d = now();
      if (avx2) ok &= within_baseline_rows(&src, coefficients, 1);
      double e = now();
      int64_t size;
      if (ok) write_copy(&src, &out, &t, coefficients, 4, &size);
      double f = now();
      jpeg_destroy_decompress(&src);
      if (!ok) continue;
      t_read += b - a;
      t_blocks += c - b;
      t_sse2 += d - c;
      t_avx2 += e - d;
      t_write += f - e;
      copied++;
    }
  }
  double k = 1e3 / copied;
  printf("%d files x %d, one thread, %d copies timed\n", n, repeats, copied);
  printf("ms a file: read coefficients %.3f | check block by block %.3f, flat SSE2 %.3f, flat AVX2 %s | write %.3f\n",
         t_read * k, t_blocks * k, t_sse2 * k, avx2 ? (snprintf(path, sizeof(path), "%.3f", t_avx2 * k), path) : "-",
         t_write * k);
  return 0;
}
