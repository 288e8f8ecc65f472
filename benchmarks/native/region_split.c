/*
 * region_split.c: where a seeking region decode's time goes, phase by phase, beside the whole
 * decode and the sequential region decode of the same boxes at the same DCT scale, one thread.
 * It includes the region decoder's source to time its own steps; it is a measurement, not part of
 * Stoke. Boxes are RandomResizedCrop's (scale 0.08-1, ratio 3/4-4/3, torchvision's algorithm with
 * its own random numbers); the scale is the smallest power of two at which the box's shorter side
 * still spans 224 pixels, and the box gets the 2-pixel margin Stoke's JpegDecoder gives it.
 *
 *   gcc -O2 -o /tmp/region_split benchmarks/native/region_split.c -ljpeg -lm
 *   find DIR -name '*.jpg' | sort | /tmp/region_split REPEATS
 */
#include "../../native/pixels/stoke_jpeg.c"
#include "crop_boxes.h"
#include "read_whole.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

static double sub_area; /* summed fraction of the image that the seeking path's sub-images cover */

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

struct file {
  uint8_t *data;
  long size;
};

static int whole_decode(const struct file *f, int denom, uint8_t *dst)
{
  struct jpeg_decompress_struct cinfo;
  struct jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, f->data, (unsigned long)f->size);
  jpeg_read_header(&cinfo, TRUE);
  cinfo.scale_num = 1;
  cinfo.scale_denom = (unsigned)denom;
  cinfo.out_color_space = JCS_EXT_RGBX;
  jpeg_start_decompress(&cinfo);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = dst + (size_t)cinfo.output_scanline * cinfo.output_width * 4;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

enum { WHOLE, SEQUENTIAL, SEEK, HEADER, SCAN, COPY, SETUP, ROWS, ENTROPY, FREE, WHOLE_BOX, PHASES };
static const char *names[] = {"whole decode", "sequential region", "seeking region", "  read the file's header",
                              "  plan + scan for markers", "  copy the segments", "  sub-image header + tables",
                              "  rows (entropy + IDCT + colour)", "    of which entropy decoding",
                              "  abort and free the decompressor", "  boxes that need every segment"};

/* The seeking path's steps, as stoke_decode_region takes them, each timed. */
static int seek_phases(const struct file *f, int denom, int x, int y, int w, int h, uint8_t *dst, int64_t cap,
                       double *t)
{
  struct jpeg_decompress_struct cinfo;
  struct decoder d;
  memset(&d, 0, sizeof(d));
  char msg[200], why[200];
  d.message = msg;
  d.message_bytes = sizeof(msg);
  cinfo.err = jpeg_std_error(&d.err);
  d.err.error_exit = on_error_exit;
  d.err.emit_message = on_message;
  if (setjmp(d.on_error)) {
    jpeg_destroy_decompress(&cinfo);
    return -1;
  }
  double t0 = now();
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, f->data, (unsigned long)f->size);
  jpeg_read_header(&cinfo, TRUE);
  cinfo.scale_num = 1;
  cinfo.scale_denom = (unsigned)denom;
  jpeg_calc_output_dimensions(&cinfo);
  double t1 = now();
  struct seek_plan plan;
  memset(&plan, 0, sizeof(plan));
  if (plan_region(&cinfo, x, y, w, h, &plan) != PLAN_SEEK) {
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  plan.data_start = (uint32_t)(cinfo.src->next_input_byte - f->data);
  uint32_t *starts = (*cinfo.mem->alloc_large)((j_common_ptr)&cinfo, JPOOL_PERMANENT,
                                               (size_t)plan.segments * 2 * sizeof(uint32_t));
  uint32_t *ends = starts + plan.segments;
  if (find_frame(f->data, plan.data_start, &plan, why, sizeof(why)) != PLAN_SEEK
      || find_segments(f->data, (uint32_t)f->size, &plan, starts, ends, why, sizeof(why)) != PLAN_SEEK) {
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  double t2 = now();
  sub_area += (double)plan.sub_width * plan.sub_height / ((double)cinfo.image_width * cinfo.image_height);
  uint8_t *stream;
  size_t bytes = build_stream(&cinfo, f->data, &plan, starts, ends, &stream);
  double t3 = now();
  jpeg_abort_decompress(&cinfo);
  jpeg_mem_src(&cinfo, stream, (unsigned long)bytes);
  jpeg_read_header(&cinfo, TRUE);
  cinfo.scale_num = 1;
  cinfo.scale_denom = (unsigned)denom;
  cinfo.out_color_space = JCS_EXT_RGBX;
  jpeg_start_decompress(&cinfo);
  double t4 = now();
  int sx = (int)(plan.sub_x / denom), sy = (int)(plan.sub_y / denom);
  int32_t region[STOKE_REGION_FIELDS];
  /* decode_rows starts the decompressor itself: only its rows are timed here. */
  JDIMENSION xo = (JDIMENSION)(x - sx), cw = (JDIMENSION)w;
  jpeg_crop_scanline(&cinfo, &xo, &cw);
  if (y - sy > 0) jpeg_skip_scanlines(&cinfo, (JDIMENSION)(y - sy));
  for (int row = 0; row < h; row++) {
    JSAMPROW r = dst + (size_t)row * cw * 4;
    jpeg_read_scanlines(&cinfo, &r, 1);
  }
  (void)region;
  (void)cap;
  double t5 = now();
  /* Entropy decoding alone: the sub-image's coefficients, no IDCT (after its header), on a copy of
     the stream (this decompressor's memory, the stream's too, goes at the end of the decode). */
  uint8_t *copy = malloc(bytes);
  memcpy(copy, stream, bytes);
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  double t6 = now();
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, copy, (unsigned long)bytes);
  jpeg_read_header(&cinfo, TRUE);
  double t7 = now();
  jpeg_read_coefficients(&cinfo);
  double t8 = now();
  jpeg_destroy_decompress(&cinfo);
  free(copy);
  t[FREE] += t6 - t5;
  t[HEADER] += t1 - t0;
  t[SCAN] += t2 - t1;
  t[COPY] += t3 - t2;
  t[SETUP] += t4 - t3;
  t[ROWS] += t5 - t4;
  t[ENTROPY] += t8 - t7;
  return 0;
}

int main(int argc, char **argv)
{
  int repeats = argc > 1 ? atoi(argv[1]) : 3;
  struct file *files = NULL;
  int n = 0, capacity = 0;
  char path[4096];
  while (next_path(stdin, path, sizeof(path))) {
    long size;
    uint8_t *data = read_whole(path, &size);
    if (data == NULL) continue;
    if (n == capacity) files = realloc(files, sizeof(*files) * (capacity = capacity * 2 + 64));
    files[n].data = data;
    files[n].size = size;
    n++;
  }
  size_t cap = (size_t)8192 * 8192 * 4;
  uint8_t *dst = malloc(cap);
  double t[PHASES] = {0};
  long images = 0, seeked = 0;
  double box_pixels = 0, image_pixels = 0;
  for (int r = 0; r < repeats; r++) {
    for (int i = 0; i < n; i++) {
      struct jpeg_decompress_struct cinfo;
      struct jpeg_error_mgr err;
      cinfo.err = jpeg_std_error(&err);
      jpeg_create_decompress(&cinfo);
      jpeg_mem_src(&cinfo, files[i].data, (unsigned long)files[i].size);
      jpeg_read_header(&cinfo, TRUE);
      int width = (int)cinfo.image_width, height = (int)cinfo.image_height;
      int progressive = cinfo.progressive_mode;
      jpeg_destroy_decompress(&cinfo);
      if (progressive) continue;
      int box[4];
      crop_box(width, height, box);
      int shorter = box[2] < box[3] ? box[2] : box[3];
      int denom = 8;
      while (denom > 1 && (shorter + denom - 1) / denom < 224) denom /= 2;
      int sw = (width + denom - 1) / denom, sh = (height + denom - 1) / denom;
      int x0 = (int)((long)box[0] * sw / width) - 2, y0 = (int)((long)box[1] * sh / height) - 2;
      int x1 = (int)(((long)(box[0] + box[2]) * sw + width - 1) / width) + 2;
      int y1 = (int)(((long)(box[1] + box[3]) * sh + height - 1) / height) + 2;
      if (x0 < 0) x0 = 0;
      if (y0 < 0) y0 = 0;
      if (x1 > sw) x1 = sw;
      if (y1 > sh) y1 = sh;
      int32_t region[STOKE_REGION_FIELDS];
      char msg[256];
      if (getenv("SEEK_ONLY")) {
        stoke_decode_region(files[i].data, files[i].size, 1, denom, x0, y0, x1 - x0, y1 - y0, 100000000, 500, 0,
                            dst, (int64_t)cap, region, msg, sizeof(msg));
        images++;
        continue;
      }
      double a = now();
      whole_decode(&files[i], denom, dst);
      double b = now();
      stoke_decode_region(files[i].data, files[i].size, 1, denom, x0, y0, x1 - x0, y1 - y0, 100000000, 500,
                          STOKE_REGION_NO_SEEK, dst, (int64_t)cap, region, msg, sizeof(msg));
      double c = now();
      stoke_decode_region(files[i].data, files[i].size, 1, denom, x0, y0, x1 - x0, y1 - y0, 100000000, 500, 0,
                          dst, (int64_t)cap, region, msg, sizeof(msg));
      double e = now();
      t[WHOLE] += b - a;
      t[SEQUENTIAL] += c - b;
      t[SEEK] += e - c;
      seeked += region[STOKE_REGION_PATH] == STOKE_PATH_SEEKED;
      /* A box that needs every segment (or the file has no markers) is decoded sequentially. */
      if (region[STOKE_REGION_PATH] != STOKE_PATH_SEEKED) t[WHOLE_BOX] += e - c;
      seek_phases(&files[i], denom, x0, y0, x1 - x0, y1 - y0, dst, (int64_t)cap, t);
      box_pixels += (double)(x1 - x0) * (y1 - y0);
      image_pixels += (double)sw * sh;
      images++;
    }
  }
  if (getenv("SEEK_ONLY")) return 0;
  printf("%ld decodes of %d files (progressive ones left out), %ld seeked; the box is %.0f%% of the scaled image,"
         " the segments decoded %.0f%% of it\n",
         images, n, seeked, 100 * box_pixels / image_pixels, 100 * sub_area / seeked);
  for (int p = 0; p < PHASES; p++) {
    printf("%-36s %8.1f us/image  %5.1f%% of the seeking region\n", names[p], t[p] / images / 1e3,
           100 * t[p] / t[SEEK]);
  }
  double phases = t[HEADER] + t[SCAN] + t[COPY] + t[SETUP] + t[ROWS] + t[FREE] + t[WHOLE_BOX];
  printf("%-36s %8.1f us/image  %5.1f%% (the steps timed apart against the whole call)\n", "  other", (t[SEEK] - phases) / images / 1e3,
         100 * (t[SEEK] - phases) / t[SEEK]);
  printf("whole / seeking %.2fx, whole / sequential %.2fx, sequential / seeking %.2fx\n", t[WHOLE] / t[SEEK],
         t[WHOLE] / t[SEQUENTIAL], t[SEQUENTIAL] / t[SEEK]);
  return 0;
}
