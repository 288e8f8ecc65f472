/*
 * entropy_share.c: for each file, libjpeg-turbo's whole decode to RGB on one thread, and its entropy
 * (Huffman) decode alone, jpeg_read_coefficients, the fastest of REPEATS each, in microseconds:
 * "whole_us entropy_us progressive path" per file. The entropy decode is what nvJPEG's hybrid
 * decoder (NVJPEG_BACKEND_HYBRID) leaves on the CPU for a progressive file; the rest (dequantising,
 * the inverse DCT, upsampling, colour conversion, and Stoke's resize after it) it does on the GPU.
 * So the difference bounds the CPU time that decoder could take off the GPU decode stage's CPU
 * threads, per file, if its own Huffman decoder ran at libjpeg-turbo's speed. A measurement, not part
 * of Stoke.
 *
 *   gcc -O2 -o /tmp/entropy_share benchmarks/gpu/split-rounds/entropy_share.c -ljpeg
 *   find DATA -name '*.jpg' | sort | /tmp/entropy_share 3 > /tmp/entropy.txt
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>

#include "../../native/read_whole.h"

struct failing {
  struct jpeg_error_mgr pub;
  jmp_buf back;
};

static void fail_exit(j_common_ptr cinfo) { longjmp(((struct failing *)cinfo->err)->back, 1); }

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/*
 * Decodes data: whole into rgb (grown as needed) where entropy_only is 0, or to its DCT coefficients
 * alone where it is 1. 0, or -1 where libjpeg fails.
 */
static int decode(const uint8_t *data, long size, int entropy_only, unsigned char **rgb, size_t *rgb_bytes,
                  int *progressive)
{
  struct jpeg_decompress_struct cinfo;
  struct failing err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = fail_exit;
  if (setjmp(err.back)) {
    jpeg_destroy_decompress(&cinfo);
    return -1;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, (unsigned long)size);
  jpeg_read_header(&cinfo, TRUE);
  *progressive = cinfo.progressive_mode ? 1 : 0;
  if (entropy_only) {
    (void)jpeg_read_coefficients(&cinfo);
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return 0;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  size_t row = (size_t)cinfo.output_width * 3;
  size_t need = row * cinfo.output_height;
  if (need > *rgb_bytes) {
    free(*rgb);
    *rgb = malloc(need);
    *rgb_bytes = need;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW at = *rgb + row * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &at, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

/* The fastest of repeats decodes, in seconds, or -1 where libjpeg fails. */
static double best_of(const uint8_t *data, long size, int entropy_only, int repeats, unsigned char **rgb,
                      size_t *rgb_bytes, int *progressive)
{
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    double t0 = now();
    if (decode(data, size, entropy_only, rgb, rgb_bytes, progressive) != 0) return -1;
    double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv)
{
  int repeats = argc > 1 ? atoi(argv[1]) : 3;
  char path[4096];
  unsigned char *rgb = NULL;
  size_t rgb_bytes = 0;
  while (next_path(stdin, path, sizeof path)) {
    long size = 0;
    int progressive = 0;
    uint8_t *data = read_whole(path, &size);
    double whole = data == NULL ? -1 : best_of(data, size, 0, repeats, &rgb, &rgb_bytes, &progressive);
    double entropy = whole < 0 ? -1 : best_of(data, size, 1, repeats, &rgb, &rgb_bytes, &progressive);
    if (whole < 0 || entropy < 0) {
      fprintf(stderr, "skipped %s\n", path);
    } else {
      printf("%.1f %.1f %d %s\n", whole * 1e6, entropy * 1e6, progressive, path);
    }
    free(data);
  }
  free(rgb);
  return 0;
}
