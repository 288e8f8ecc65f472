/*
 * check_baseline.c: the restart copy's range check (within_baseline_rows, stoke_jpeg.c) against
 * its rule, in both its forms (SSE2, and AVX2 where the CPU has it).
 *
 * The rule: a copy is written with the standard Huffman tables, so every AC coefficient must lie
 * in [-1023, 1023] and every DC value in [-1024, 1023]. The check reads each row of blocks as one
 * flat array first and goes block by block only where that fails; this program plants one value
 * at a time (each edge of both ranges, and far past them) at the first, a middle and the last
 * block of the first, a middle and the last row of each component, at DC, the first AC and the
 * last AC coefficient, in JPEGs of several sizes (a row of blocks of odd length, and one block)
 * and samplings (4:2:0, 4:2:2, 4:4:4, gray), and compares the check's answer with the rule's.
 *
 *   gcc -std=c11 -O2 -o /tmp/check_baseline native/pixels/check_baseline.c -ljpeg && /tmp/check_baseline
 *
 * Prints the number of cases checked; exits 1 naming the first case that differs.
 * NativeCheckProgramsTest (ffm-bindings) builds and runs it.
 */
#include "stoke_jpeg.c"

#include <stdlib.h>

static int failures;

/* A JPEG of w x h noise at `samp` (0 4:2:0, 1 4:2:2, 2 4:4:4, 3 gray), in *out (malloc'd by libjpeg). */
static unsigned long encode(int w, int h, int samp, unsigned char **out)
{
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  unsigned long size = 0;
  *out = NULL;
  jpeg_mem_dest(&c, out, &size);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = samp == 3 ? 1 : 3;
  c.in_color_space = samp == 3 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  if (samp != 3) {
    c.comp_info[0].h_samp_factor = samp == 2 ? 1 : 2;
    c.comp_info[0].v_samp_factor = samp == 0 ? 2 : 1;
  }
  jpeg_start_compress(&c, TRUE);
  unsigned char *row = malloc((size_t)w * 3);
  unsigned seed = (unsigned)(w * 31 + h * 7 + samp);
  while (c.next_scanline < c.image_height) {
    for (int i = 0; i < w * c.input_components; i++) row[i] = (unsigned char)((seed = seed * 1103515245u + 12345u) >> 24);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(row);
  return size;
}

/* The rule, block by block. */
static int rule(j_decompress_ptr src, jvirt_barray_ptr *coefficients)
{
  for (int c = 0; c < src->num_components; c++) {
    jpeg_component_info *comp = &src->comp_info[c];
    for (JDIMENSION row = 0; row < comp->height_in_blocks; row++) {
      JBLOCKROW r = (*src->mem->access_virt_barray)((j_common_ptr)src, coefficients[c], row, 1, FALSE)[0];
      for (JDIMENSION b = 0; b < comp->width_in_blocks; b++)
        for (int k = 0; k < DCTSIZE2; k++) {
          int lo = k == 0 ? -1024 : -1023;
          if (r[b][k] < lo || r[b][k] > 1023) return 0;
        }
    }
  }
  return 1;
}

static void check(int w, int h, int samp, int avx2_here, int *cases)
{
  static const int values[] = {1023, 1024, -1023, -1024, -1025, 2047, -2048, 32767, -32768, 0};
  unsigned char *jpeg;
  unsigned long size = encode(w, h, samp, &jpeg);
  struct jpeg_decompress_struct src;
  struct jpeg_error_mgr e;
  src.err = jpeg_std_error(&e);
  jpeg_create_decompress(&src);
  jpeg_mem_src(&src, jpeg, size);
  jpeg_read_header(&src, TRUE);
  jvirt_barray_ptr *coefficients = jpeg_read_coefficients(&src);
  if (!rule(&src, coefficients) || !within_baseline_rows(&src, coefficients, 0)) {
    fprintf(stderr, "%dx%d sampling %d: the encoder's own coefficients are refused\n", w, h, samp);
    failures++;
  }
  for (int c = 0; c < src.num_components; c++) {
    jpeg_component_info *comp = &src.comp_info[c];
    JDIMENSION rows[] = {0, comp->height_in_blocks / 2, comp->height_in_blocks - 1};
    JDIMENSION blocks[] = {0, comp->width_in_blocks / 2, comp->width_in_blocks - 1};
    for (int ri = 0; ri < 3; ri++)
      for (int bi = 0; bi < 3; bi++)
        for (int k = 0; k < DCTSIZE2; k += (k == 0 ? 1 : DCTSIZE2 - 2))
          for (size_t vi = 0; vi < sizeof(values) / sizeof(values[0]); vi++) {
            JBLOCKROW r =
                (*src.mem->access_virt_barray)((j_common_ptr)&src, coefficients[c], rows[ri], 1, TRUE)[0];
            JCOEF kept = r[blocks[bi]][k];
            r[blocks[bi]][k] = (JCOEF)values[vi];
            int want = rule(&src, coefficients);
            for (int avx2 = 0; avx2 <= avx2_here; avx2++) {
              int got = within_baseline_rows(&src, coefficients, avx2);
              (*cases)++;
              if (got != want) {
                fprintf(stderr,
                        "%dx%d sampling %d, component %d, row %u, block %u, coefficient %d = %d, %s: %s, the rule "
                        "says %s\n",
                        w, h, samp, c, rows[ri], blocks[bi], k, values[vi], avx2 ? "AVX2" : "SSE2",
                        got ? "accepted" : "refused", want ? "accept" : "refuse");
                failures++;
              }
            }
            r[blocks[bi]][k] = kept;
          }
  }
  jpeg_abort_decompress(&src);
  jpeg_destroy_decompress(&src);
  free(jpeg);
}

int main(void)
{
  int avx2_here = has_avx2();
  static const int sizes[][2] = {{8, 8}, {17, 9}, {200, 40}, {333, 65}};
  int cases = 0;
  for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
    for (int samp = 0; samp < 4; samp++) check(sizes[s][0], sizes[s][1], samp, avx2_here, &cases);
  printf("within_baseline_rows: %d cases (%s); %d differ\n", cases, avx2_here ? "SSE2 and AVX2" : "SSE2 only",
         failures);
  return failures ? 1 : 0;
}
