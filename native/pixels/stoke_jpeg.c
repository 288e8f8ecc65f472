/*
 * stoke_jpeg.c: see stoke_jpeg.h.
 */
#include "stoke_jpeg.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>

/* The error manager first, so that cinfo->err can be cast back to this. */
struct decoder {
  struct jpeg_error_mgr err;
  struct jpeg_progress_mgr progress;
  jmp_buf on_error;
  int max_scans;
  int warned;
  char *message;
  int message_bytes;
};

static void set_message(struct decoder *d, const char *text)
{
  if (d->message_bytes > 0) {
    snprintf(d->message, (size_t)d->message_bytes, "%s", text);
  }
}

static void on_error_exit(j_common_ptr cinfo)
{
  struct decoder *d = (struct decoder *)cinfo->err;
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  set_message(d, text);
  longjmp(d->on_error, 1);
}

/* Warnings (level -1) are kept, the first one's text too; trace messages are dropped. */
static void on_message(j_common_ptr cinfo, int level)
{
  struct decoder *d = (struct decoder *)cinfo->err;
  if (level >= 0 || d->warned) {
    if (level < 0) cinfo->err->num_warnings++;
    return;
  }
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  set_message(d, text);
  d->warned = 1;
  cinfo->err->num_warnings++;
}

/* Refuses a progressive image past max_scans scans, as TurboJPEG's TJFLAG_LIMITSCANS does. */
static void on_progress(j_common_ptr cinfo)
{
  struct decoder *d = (struct decoder *)cinfo->err;
  j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
  if (dinfo->is_decompressor && dinfo->input_scan_number > d->max_scans) {
    char text[128];
    snprintf(text, sizeof(text), "Progressive JPEG image has more than %d scans", d->max_scans);
    set_message(d, text);
    longjmp(d->on_error, 1);
  }
}

int32_t stoke_jpeg_abi_version(void)
{
  return STOKE_JPEG_ABI_VERSION;
}

static int32_t fail(struct decoder *d, const char *text)
{
  set_message(d, text);
  return STOKE_JPEG_ERROR;
}

/* Everything after jpeg_read_header, in its own frame: the caller's setjmp covers it. */
static int32_t decode_rows(j_decompress_ptr cinfo, struct decoder *d, int32_t x, int32_t y, int32_t w, int32_t h,
                           uint8_t *dst, int64_t dst_bytes, int32_t *region)
{
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    return fail(d, "CMYK and YCCK images are not decoded by region");
  }
  cinfo->out_color_space = JCS_EXT_RGBX;
  jpeg_start_decompress(cinfo);
  if (x < 0 || y < 0 || w < 1 || h < 1 || (int64_t)x + w > cinfo->output_width
      || (int64_t)y + h > cinfo->output_height) {
    return fail(d, "region outside the scaled image");
  }
  JDIMENSION xoffset = (JDIMENSION)x;
  JDIMENSION width = (JDIMENSION)w;
  jpeg_crop_scanline(cinfo, &xoffset, &width);
  if ((int64_t)width * 4 * h > dst_bytes || xoffset > (JDIMENSION)x || xoffset + width < (JDIMENSION)(x + w)) {
    return fail(d, "the cropped region does not fit the destination");
  }
  if (y > 0 && jpeg_skip_scanlines(cinfo, (JDIMENSION)y) != (JDIMENSION)y) {
    return fail(d, "could not skip to the region's first row");
  }
  int64_t stride = (int64_t)width * 4;
  for (int32_t row = 0; row < h;) {
    JSAMPROW rows[1] = {dst + (int64_t)row * stride};
    JDIMENSION got = jpeg_read_scanlines(cinfo, rows, 1);
    if (got == 0) {
      return fail(d, "Premature end of JPEG file");
    }
    row += (int32_t)got;
  }
  region[STOKE_REGION_X] = (int32_t)xoffset;
  region[STOKE_REGION_Y] = y;
  region[STOKE_REGION_WIDTH] = (int32_t)width;
  region[STOKE_REGION_HEIGHT] = h;
  return d->warned ? STOKE_JPEG_WARNING : STOKE_JPEG_OK;
}

int32_t stoke_decode_region(const uint8_t *jpeg, int64_t size, int32_t scale_num, int32_t scale_denom,
                            int32_t x, int32_t y, int32_t w, int32_t h, int64_t max_pixels, int32_t max_scans,
                            uint8_t *dst, int64_t dst_bytes, int32_t *region, char *message, int32_t message_bytes)
{
  struct jpeg_decompress_struct cinfo;
  struct decoder d;
  memset(&d, 0, sizeof(d));
  d.max_scans = max_scans;
  d.message = message;
  d.message_bytes = message_bytes;
  if (message_bytes > 0) message[0] = '\0';
  if (size < 4 || size > (int64_t)0xFFFFFFFF) {
    set_message(&d, "JPEG size out of range");
    return STOKE_JPEG_ERROR;
  }
  cinfo.err = jpeg_std_error(&d.err);
  d.err.error_exit = on_error_exit;
  d.err.emit_message = on_message;
  d.progress.progress_monitor = on_progress;
  volatile int32_t status = STOKE_JPEG_ERROR;
  if (setjmp(d.on_error)) {
    jpeg_destroy_decompress(&cinfo);
    return STOKE_JPEG_ERROR;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &d.progress;
  /* Past this, libjpeg asks for a backing store, which this build lacks: an error, not an allocation. */
  cinfo.mem->max_memory_to_use = STOKE_JPEG_MAX_MEMORY;
  jpeg_mem_src(&cinfo, jpeg, (unsigned long)size);
  jpeg_read_header(&cinfo, TRUE);
  if ((int64_t)cinfo.image_width * cinfo.image_height > max_pixels) {
    status = fail(&d, "image exceeds the pixel budget");
    jpeg_destroy_decompress(&cinfo);
    return status;
  }
  cinfo.scale_num = (unsigned int)scale_num;
  cinfo.scale_denom = (unsigned int)scale_denom;
  status = decode_rows(&cinfo, &d, x, y, w, h, dst, dst_bytes, region);
  /* The rows below the region are never decoded: abort instead of finishing. */
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return status;
}
