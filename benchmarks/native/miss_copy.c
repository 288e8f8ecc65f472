/*
 * miss_copy.c: what a restart cache's miss costs a worker, one thread, per file, at full scale
 * (stoke.DataLoader's exact decode) with RandomResizedCrop's boxes and the 2-pixel margin
 * JpegDecoder gives them:
 *
 *   miss         the region decoded from the original alone (stoke_decode_region)
 *   copy         the restart-marker copy alone (stoke_jpeg_add_restarts: a filler's, stoke cache's)
 *   hit          the region decoded from the copy (a later epoch's read)
 *   copy + hit   a worker's copy before 2026-11-30: the copy, then the region from the copy
 *   both         a worker's copy since: the copy and the region from one entropy decode
 *                (stoke_jpeg_add_restarts_decoding)
 *
 * Each file's copy and pixels from "both" are checked against "copy" and "miss": a difference
 * exits 1. It includes the region decoder's source; it is a measurement, not part of Stoke.
 *
 *   gcc -O2 -o /tmp/miss_copy benchmarks/native/miss_copy.c -ljpeg -lm
 *   find DIR -name '*.jpg' | sort | /tmp/miss_copy REPEATS
 */
#include "../../native/pixels/stoke_jpeg.c"
#include "crop_boxes.h"
#include "read_whole.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#define MARGIN 2

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct file {
  uint8_t *data;
  long size;
  int x, y, w, h; /* the box with its margin, in pixels */
};

/* torchvision's RandomResizedCrop.get_params (crop_boxes.h), then the margin. */
static void draw_box(struct file *f, int width, int height)
{
  int box[4];
  crop_box(width, height, box);
  int x = box[0], y = box[1], w = box[2], h = box[3];
  f->x = x > MARGIN ? x - MARGIN : 0;
  f->y = y > MARGIN ? y - MARGIN : 0;
  f->w = (x + w + MARGIN < width ? x + w + MARGIN : width) - f->x;
  f->h = (y + h + MARGIN < height ? y + h + MARGIN : height) - f->y;
}

static int read_header(const struct file *f, int *width, int *height)
{
  struct jpeg_decompress_struct cinfo;
  struct decoder d;
  memset(&d, 0, sizeof(d));
  cinfo.err = jpeg_std_error(&d.err);
  d.err.error_exit = on_error_exit;
  d.err.emit_message = on_message;
  if (setjmp(d.on_error)) {
    jpeg_destroy_decompress(&cinfo);
    return 0;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, f->data, (unsigned long)f->size);
  jpeg_read_header(&cinfo, TRUE);
  *width = (int)cinfo.image_width;
  *height = (int)cinfo.image_height;
  jpeg_destroy_decompress(&cinfo);
  return 1;
}

int main(int argc, char **argv)
{
  int repeats = argc > 1 ? atoi(argv[1]) : 3;
  struct file *files = NULL;
  int n = 0, cap = 0;
  char path[4096];
  while (next_path(stdin, path, sizeof(path))) {
    long size;
    uint8_t *data = read_whole(path, &size);
    if (data == NULL) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 1024;
      files = realloc(files, (size_t)cap * sizeof(*files));
    }
    files[n].data = data;
    files[n].size = size;
    int width, height;
    if (read_header(&files[n], &width, &height)) {
      draw_box(&files[n], width, height);
      n++;
    } else {
      free(data);
    }
  }
  if (n == 0) {
    fprintf(stderr, "no JPEGs on stdin\n");
    return 2;
  }
  size_t largest = 0;
  for (int i = 0; i < n; i++) {
    size_t px = (size_t)(files[i].w + 64) * 4 * (size_t)files[i].h;
    if (px > largest) largest = px;
  }
  uint8_t *pixels = malloc(largest), *check = malloc(largest);
  uint8_t *copy = malloc(64 << 20), *both = malloc(64 << 20);
  int32_t region[STOKE_REGION_FIELDS], region2[STOKE_REGION_FIELDS], info[STOKE_RESTART_FIELDS];
  char message[256];
  int64_t copy_size, both_size;
  double t_miss = 0, t_copy = 0, t_hit = 0, t_both = 0;
  int copied = 0, declined = 0;
  for (int r = 0; r < repeats; r++) {
    for (int i = 0; i < n; i++) {
      struct file *f = &files[i];
      int64_t room = (int64_t)(f->w + 64) * 4 * f->h;
      double a = now();
      int rc = stoke_decode_region(f->data, f->size, 8, 8, f->x, f->y, f->w, f->h, (int64_t)1 << 30, 500, 0, check,
                                   room, region, message, sizeof(message));
      double b = now();
      int rc2 = stoke_jpeg_add_restarts(f->data, f->size, 4, (int64_t)1 << 30, 500, STOKE_RESTART_UNLESS_SEEKABLE,
                                        copy, 64 << 20, &copy_size, info, message, sizeof(message));
      double c = now();
      if (rc2 == STOKE_JPEG_OK && copy_size > 0) {
        stoke_decode_region(copy, copy_size, 8, 8, f->x, f->y, f->w, f->h, (int64_t)1 << 30, 500, 0, pixels, room,
                            region2, message, sizeof(message));
      }
      double d = now();
      int rc3 = stoke_jpeg_add_restarts_decoding(f->data, f->size, 4, (int64_t)1 << 30, 500, both, 64 << 20,
                                                 &both_size, info, 8, 8, f->x, f->y, f->w, f->h, pixels, room,
                                                 region2, message, sizeof(message));
      double e = now();
      t_miss += b - a;
      t_copy += c - b;
      t_hit += d - c;
      t_both += e - d;
      if (rc3 != STOKE_JPEG_OK) {
        declined += r == 0;
        continue;
      }
      copied += r == 0;
      if (rc != STOKE_JPEG_OK || rc2 != STOKE_JPEG_OK || both_size != copy_size
          || memcmp(both, copy, (size_t)copy_size) != 0 || region[STOKE_REGION_WIDTH] != region2[STOKE_REGION_WIDTH]
          || memcmp(pixels, check, (size_t)region[STOKE_REGION_WIDTH] * 4 * (size_t)f->h) != 0) {
        fprintf(stderr, "file %d: the copy and the region made at once differ from those made apart\n", i);
        return 1;
      }
    }
  }
  double per = 1e3 / ((double)n * repeats);
  printf("%d files x %d, one thread, full scale; %d copied at once, %d declined (decoded alone)\n", n, repeats,
         copied, declined);
  printf("ms a file: miss %.3f | copy %.3f | hit %.3f | copy + hit %.3f | both %.3f\n", t_miss * per, t_copy * per,
         t_hit * per, (t_copy + t_hit) * per, t_both * per);
  printf("a worker's copy costs a miss plus %.3f ms before, plus %.3f ms since\n", (t_copy + t_hit - t_miss) * per,
         (t_both - t_miss) * per);
  return 0;
}
