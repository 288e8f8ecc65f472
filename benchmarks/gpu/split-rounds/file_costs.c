/*
 * file_costs.c: each file's whole decode to RGB by libjpeg-turbo on one thread, the fastest of
 * REPEATS, in microseconds, one "us progressive path" line per file: the cost of each image the GPU
 * decode stage's CPU threads take, as round_makespan.py schedules them. Full size, no resize (the
 * evaluation transform's resize costs about the same for every ImageNet-sized file; what a round's
 * tail depends on is how far the slow files, progressive and large ones, stand out). A measurement,
 * not part of Stoke.
 *
 * With "entropy" after REPEATS, "whole_us entropy_us progressive path" per file: the whole decode and
 * libjpeg-turbo's entropy (Huffman) decode alone, jpeg_read_coefficients, the fastest of REPEATS each.
 * The entropy decode is what nvJPEG's hybrid decoder (NVJPEG_BACKEND_HYBRID) leaves on the CPU for a
 * progressive file; the rest (dequantising, the inverse DCT, upsampling, colour conversion, and
 * Stoke's resize after it) it does on the GPU.
 *
 *   gcc -O2 -o /tmp/file_costs benchmarks/gpu/split-rounds/file_costs.c -ljpeg
 *   find DATA -name '*.jpg' | sort | /tmp/file_costs 3 > /tmp/costs.txt
 *   find DATA -name '*.jpg' | sort | /tmp/file_costs 3 entropy > /tmp/entropy.txt
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
 * Decodes data: whole into rgb (grown as needed), or, with entropy_only, to its DCT coefficients
 * alone. 0, or -1 where libjpeg fails.
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
  cinfo.out_color_space = JCS_RGB;
  *progressive = cinfo.progressive_mode ? 1 : 0;
  if (entropy_only) {
    (void)jpeg_read_coefficients(&cinfo);
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return 0;
  }
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

/* The fastest of repeats decodes, in microseconds, or -1 where libjpeg fails. */
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
  return best * 1e6;
}

int main(int argc, char **argv)
{
  int repeats = argc > 1 ? atoi(argv[1]) : 3;
  int entropy = argc > 2 && strcmp(argv[2], "entropy") == 0;
  char path[4096];
  unsigned char *rgb = NULL;
  size_t rgb_bytes = 0;
  while (next_path(stdin, path, sizeof path)) {
    long size = 0;
    int progressive = 0;
    uint8_t *data = read_whole(path, &size);
    double whole = data == NULL ? -1 : best_of(data, size, 0, repeats, &rgb, &rgb_bytes, &progressive);
    double coefficients = whole < 0 || !entropy ? 0 : best_of(data, size, 1, repeats, &rgb, &rgb_bytes, &progressive);
    if (whole < 0 || coefficients < 0) {
      fprintf(stderr, "skipped %s\n", path);
    } else if (entropy) {
      printf("%.1f %.1f %d %s\n", whole, coefficients, progressive, path);
    } else {
      printf("%.1f %d %s\n", whole, progressive, path);
    }
    free(data);
  }
  free(rgb);
  return 0;
}
