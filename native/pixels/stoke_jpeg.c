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

/*
 * Whether a progressive image has passed max_scans scans, as TurboJPEG's TJFLAG_LIMITSCANS
 * refuses it; text then says so. The decoder's and the transcoder's progress monitors ask it.
 */
static int past_scan_limit(j_common_ptr cinfo, int max_scans, char *text, size_t bytes)
{
  j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
  if (!dinfo->is_decompressor || dinfo->input_scan_number <= max_scans) return 0;
  snprintf(text, bytes, "Progressive JPEG image has more than %d scans", max_scans);
  return 1;
}

static void on_progress(j_common_ptr cinfo)
{
  struct decoder *d = (struct decoder *)cinfo->err;
  char text[128];
  if (past_scan_limit(cinfo, d->max_scans, text, sizeof(text))) {
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

/*
 * Reads rows [y, y + h) and at least columns [x, x + w) of the scaled image into dst, once
 * jpeg_start_decompress (or, in buffered-image mode, jpeg_start_output) has run; region's first
 * four fields say where. The region is checked against the image and dst_bytes before a row is
 * written. NULL, or why not.
 */
static const char *read_region(j_decompress_ptr cinfo, int32_t x, int32_t y, int32_t w, int32_t h, uint8_t *dst,
                               int64_t dst_bytes, int32_t *region)
{
  if (x < 0 || y < 0 || w < 1 || h < 1 || (int64_t)x + w > cinfo->output_width
      || (int64_t)y + h > cinfo->output_height) {
    return "region outside the scaled image";
  }
  JDIMENSION xoffset = (JDIMENSION)x;
  JDIMENSION width = (JDIMENSION)w;
  jpeg_crop_scanline(cinfo, &xoffset, &width);
  if ((int64_t)width * 4 * h > dst_bytes || xoffset > (JDIMENSION)x || xoffset + width < (JDIMENSION)(x + w)) {
    return "the cropped region does not fit the destination";
  }
  if (y > 0 && jpeg_skip_scanlines(cinfo, (JDIMENSION)y) != (JDIMENSION)y) {
    return "could not skip to the region's first row";
  }
  int64_t stride = (int64_t)width * 4;
  for (int32_t row = 0; row < h;) {
    JSAMPROW rows[1] = {dst + (int64_t)row * stride};
    JDIMENSION got = jpeg_read_scanlines(cinfo, rows, 1);
    if (got == 0) {
      return "Premature end of JPEG file";
    }
    row += (int32_t)got;
  }
  region[STOKE_REGION_X] = (int32_t)xoffset;
  region[STOKE_REGION_Y] = y;
  region[STOKE_REGION_WIDTH] = (int32_t)width;
  region[STOKE_REGION_HEIGHT] = h;
  return NULL;
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
  const char *refused = read_region(cinfo, x, y, w, h, dst, dst_bytes, region);
  if (refused != NULL) {
    return fail(d, refused);
  }
  return d->warned ? STOKE_JPEG_WARNING : STOKE_JPEG_OK;
}

/*
 * Seeking to restart segments.
 *
 * A plan says which segments hold the region and the smaller image they make: segment
 * first + i * stride + j for row band i < bands and column j < columns, an image of
 * sub_width x sub_height original pixels whose top left corner is (sub_x, sub_y) of the file's.
 */
struct seek_plan {
  uint32_t first;
  uint32_t stride;
  uint32_t bands;
  uint32_t columns;
  uint32_t sub_x;
  uint32_t sub_y;
  uint32_t sub_width;
  uint32_t sub_height;
  uint32_t sof_dims;   /* offset of the frame header's height field (then the width's) */
  uint32_t data_start; /* offset of the scan's first entropy-coded byte */
  uint32_t segments;   /* segments in the scan, as the DRI's interval gives them */
  uint32_t interval;   /* MCUs in a segment (the DRI's) */
};

#define PLAN_SEQUENTIAL 0 /* nothing to seek to: decode sequentially, say nothing */
#define PLAN_SEEK 1
#define PLAN_FALL_BACK 2 /* the markers cannot be trusted: decode sequentially, say why */

static uint32_t be16(const uint8_t *p)
{
  return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t gcd32(uint32_t a, uint32_t b)
{
  while (b != 0) {
    uint32_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/*
 * Finds the frame header's size fields by walking the marker segments from SOI to the scan that
 * libjpeg just read: one SOF before one SOS, whose end must be where libjpeg's data starts.
 */
static int find_frame(const uint8_t *jpeg, uint32_t data_start, struct seek_plan *plan, char *why, size_t why_bytes)
{
  uint32_t p = 2;
  int sofs = 0;
  while (p + 4 <= data_start) {
    if (jpeg[p] != 0xFF) {
      snprintf(why, why_bytes, "bytes between the header's markers at byte %u", p);
      return PLAN_FALL_BACK;
    }
    uint32_t code = jpeg[p + 1];
    if (code == 0xFF) {
      p++; /* fill byte */
      continue;
    }
    if (code == 0x01 || (code >= 0xD0 && code <= 0xD7)) {
      p += 2; /* markers without a length */
      continue;
    }
    uint32_t length = be16(jpeg + p + 2);
    if (length < 2 || (uint64_t)p + 2 + length > data_start) {
      snprintf(why, why_bytes, "a header segment's length runs past the scan at byte %u", p);
      return PLAN_FALL_BACK;
    }
    if (code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC) {
      if (length < 8) {
        snprintf(why, why_bytes, "a frame header of %u bytes", length);
        return PLAN_FALL_BACK;
      }
      plan->sof_dims = p + 5;
      sofs++;
    }
    if (code == 0xDA) {
      if (p + 2 + length != data_start || sofs != 1) {
        snprintf(why, why_bytes, "%d frame headers before the scan, or a scan header libjpeg read otherwise", sofs);
        return PLAN_FALL_BACK;
      }
      return PLAN_SEEK;
    }
    p += 2 + length;
  }
  snprintf(why, why_bytes, "no scan header where libjpeg found one");
  return PLAN_FALL_BACK;
}

/*
 * Which segments hold rows [y, y + h) and columns [x, x + w) of the scaled image, with a margin
 * for fancy upsampling: one chroma sample, max_samp scaled pixels, on each side that is cut.
 * Returns PLAN_SEQUENTIAL when the file has nothing to seek to or the region needs it all.
 */
static int plan_region(j_decompress_ptr cinfo, int32_t x, int32_t y, int32_t w, int32_t h, struct seek_plan *plan)
{
  if (cinfo->restart_interval == 0 || cinfo->progressive_mode || cinfo->arith_code
      || cinfo->comps_in_scan != cinfo->num_components || cinfo->data_precision != 8) {
    return PLAN_SEQUENTIAL;
  }
  int max_h = cinfo->max_h_samp_factor;
  int max_v = cinfo->max_v_samp_factor;
  if (cinfo->num_components == 1 && (max_h != 1 || max_v != 1)) {
    return PLAN_SEQUENTIAL; /* a lone component's MCU is one block, not its sampling factors' iMCU */
  }
  int subsampled_h = 0;
  int subsampled_v = 0;
  for (int c = 0; c < cinfo->num_components; c++) {
    subsampled_h |= cinfo->comp_info[c].h_samp_factor != max_h;
    subsampled_v |= cinfo->comp_info[c].v_samp_factor != max_v;
  }
  uint32_t mcu_w = (uint32_t)max_h * DCTSIZE; /* original pixels */
  uint32_t mcu_h = (uint32_t)max_v * DCTSIZE;
  uint32_t scaled = (uint32_t)cinfo->min_DCT_scaled_size; /* pixels of a block at this scale */
  uint32_t smcu_w = (uint32_t)max_h * scaled;
  uint32_t smcu_h = (uint32_t)max_v * scaled;
  uint32_t mcus_per_row = (cinfo->image_width + mcu_w - 1) / mcu_w;
  uint32_t mcu_rows = (cinfo->image_height + mcu_h - 1) / mcu_h;
  uint32_t interval = cinfo->restart_interval;
  uint64_t mcus = (uint64_t)mcus_per_row * mcu_rows;
  plan->segments = (uint32_t)((mcus + interval - 1) / interval);
  plan->interval = interval;

  int64_t margin_x = subsampled_h ? max_h : 0;
  int64_t margin_y = subsampled_v ? max_v : 0;
  int64_t x0 = (int64_t)x - margin_x < 0 ? 0 : (int64_t)x - margin_x;
  int64_t y0 = (int64_t)y - margin_y < 0 ? 0 : (int64_t)y - margin_y;
  int64_t x1 = (int64_t)x + w + margin_x > cinfo->output_width ? cinfo->output_width : (int64_t)x + w + margin_x;
  int64_t y1 = (int64_t)y + h + margin_y > cinfo->output_height ? cinfo->output_height : (int64_t)y + h + margin_y;
  uint32_t col0 = (uint32_t)(x0 / smcu_w);
  uint32_t col1 = (uint32_t)((x1 + smcu_w - 1) / smcu_w); /* exclusive */
  uint32_t row0 = (uint32_t)(y0 / smcu_h);
  uint32_t row1 = (uint32_t)((y1 + smcu_h - 1) / smcu_h);
  if (col1 > mcus_per_row) col1 = mcus_per_row;
  if (row1 > mcu_rows) row1 = mcu_rows;

  uint32_t first_col, end_col;
  if (interval <= mcus_per_row && mcus_per_row % interval == 0) {
    /* Whole segments in every row: the box's columns can be cut too. */
    uint32_t per_row = mcus_per_row / interval;
    uint32_t j0 = col0 / interval;
    uint32_t j1 = (col1 + interval - 1) / interval;
    plan->first = row0 * per_row + j0;
    plan->stride = per_row;
    plan->bands = row1 - row0;
    plan->columns = j1 - j0;
    first_col = j0 * interval;
    end_col = j1 * interval;
  } else {
    /* Segments cross rows: keep whole rows, from and to a row where a segment starts. */
    uint32_t period = interval / gcd32(interval, mcus_per_row);
    row0 = row0 / period * period;
    uint64_t end = ((uint64_t)row1 + period - 1) / period * period;
    row1 = end > mcu_rows ? mcu_rows : (uint32_t)end;
    uint64_t first = (uint64_t)row0 * mcus_per_row / interval;
    uint64_t last = ((uint64_t)row1 * mcus_per_row + interval - 1) / interval;
    plan->first = (uint32_t)first;
    plan->stride = 0;
    plan->bands = 1;
    plan->columns = (uint32_t)(last - first);
    first_col = 0;
    end_col = mcus_per_row;
  }
  plan->sub_x = first_col * mcu_w;
  plan->sub_y = row0 * mcu_h;
  plan->sub_width = end_col >= mcus_per_row ? cinfo->image_width - plan->sub_x : (end_col - first_col) * mcu_w;
  plan->sub_height = row1 >= mcu_rows ? cinfo->image_height - plan->sub_y : (row1 - row0) * mcu_h;
  if (plan->sub_width == cinfo->image_width && plan->sub_height == cinfo->image_height) {
    return PLAN_SEQUENTIAL;
  }
  return PLAN_SEEK;
}

/*
 * Scans the entropy-coded data for its restart markers, which need no Huffman decoding: a 0xFF
 * byte is data only when a 0x00 follows it. Fills starts[k] and ends[k], segment k's first byte
 * and the byte after its last, for every segment, and checks what a whole decode relies on: RST0
 * to RST7 in turn, as many segments as the interval gives, none empty, then EOI.
 */
static int find_segments(const uint8_t *jpeg, uint32_t size, const struct seek_plan *plan, uint32_t *starts,
                         uint32_t *ends, char *why, size_t why_bytes)
{
  const uint8_t *end = jpeg + size;
  const uint8_t *p = jpeg + plan->data_start;
  uint32_t k = 0;
  starts[0] = plan->data_start;
  for (;;) {
    const uint8_t *ff = memchr(p, 0xFF, (size_t)(end - p));
    if (ff == NULL) {
      snprintf(why, why_bytes, "the scan ends without an EOI marker after %u of %u restart segments", k + 1,
               plan->segments);
      return PLAN_FALL_BACK;
    }
    const uint8_t *code = ff + 1;
    while (code < end && *code == 0xFF) code++;
    if (code == end) {
      snprintf(why, why_bytes, "the scan ends without an EOI marker after %u of %u restart segments", k + 1,
               plan->segments);
      return PLAN_FALL_BACK;
    }
    if (*code == 0x00) {
      p = code + 1;
      continue;
    }
    ends[k] = (uint32_t)(ff - jpeg);
    if (ends[k] == starts[k]) {
      snprintf(why, why_bytes, "restart segment %u of %u is empty", k + 1, plan->segments);
      return PLAN_FALL_BACK;
    }
    if (*code >= 0xD0 && *code <= 0xD7) {
      if (k + 1 >= plan->segments) {
        snprintf(why, why_bytes, "more restart markers than the %u segments the DRI's interval of %u MCUs gives",
                 plan->segments, plan->interval);
        return PLAN_FALL_BACK;
      }
      if (*code != 0xD0 + (k & 7)) {
        snprintf(why, why_bytes, "RST%d where RST%u was due, after restart segment %u", *code - 0xD0, k & 7, k + 1);
        return PLAN_FALL_BACK;
      }
      k++;
      starts[k] = (uint32_t)(code + 1 - jpeg);
      p = code + 1;
      continue;
    }
    if (*code == 0xD9 && k + 1 == plan->segments) {
      return PLAN_SEEK;
    }
    if (*code == 0xD9) {
      snprintf(why, why_bytes, "%u restart segments where the DRI's interval gives %u", k + 1, plan->segments);
    } else {
      snprintf(why, why_bytes, "marker 0xFF%02X inside the scan, after restart segment %u of %u", *code, k + 1,
               plan->segments);
    }
    return PLAN_FALL_BACK;
  }
}

/*
 * The smaller JPEG: the file's header with the frame's size changed, then the planned segments
 * with their markers renumbered from RST0, then EOI, then zeros, so that libjpeg-turbo's fast
 * Huffman decoder (which wants a few KB of input ahead) runs to the last segment. Its memory is
 * libjpeg's, freed with the decompressor. Returns its length.
 */
static size_t build_stream(j_decompress_ptr cinfo, const uint8_t *jpeg, const struct seek_plan *plan,
                           const uint32_t *starts, const uint32_t *ends, uint8_t **out)
{
  size_t pad = (size_t)DCTSIZE2 * 8 * D_MAX_BLOCKS_IN_MCU;
  size_t bytes = plan->data_start + 2 + pad;
  for (uint32_t i = 0; i < plan->bands; i++) {
    for (uint32_t j = 0; j < plan->columns; j++) {
      uint32_t k = plan->first + i * plan->stride + j;
      bytes += (size_t)(ends[k] - starts[k]) + 2;
    }
  }
  uint8_t *s = (*cinfo->mem->alloc_large)((j_common_ptr)cinfo, JPOOL_PERMANENT, bytes);
  memcpy(s, jpeg, plan->data_start);
  s[plan->sof_dims] = (uint8_t)(plan->sub_height >> 8);
  s[plan->sof_dims + 1] = (uint8_t)plan->sub_height;
  s[plan->sof_dims + 2] = (uint8_t)(plan->sub_width >> 8);
  s[plan->sof_dims + 3] = (uint8_t)plan->sub_width;
  size_t at = plan->data_start;
  uint32_t n = 0;
  for (uint32_t i = 0; i < plan->bands; i++) {
    for (uint32_t j = 0; j < plan->columns; j++) {
      uint32_t k = plan->first + i * plan->stride + j;
      size_t length = (size_t)(ends[k] - starts[k]);
      memcpy(s + at, jpeg + starts[k], length);
      at += length;
      s[at++] = 0xFF;
      s[at++] = (uint8_t)(i + 1 == plan->bands && j + 1 == plan->columns ? 0xD9 : 0xD0 + (n & 7));
      n++;
    }
  }
  memset(s + at, 0, bytes - at);
  *out = s;
  return bytes;
}

/* Points the decompressor at data[0, bytes), reads its header and asks for the scale. */
static void open_at_scale(j_decompress_ptr cinfo, const uint8_t *data, size_t bytes, int32_t scale_num,
                          int32_t scale_denom)
{
  jpeg_mem_src(cinfo, data, (unsigned long)bytes);
  jpeg_read_header(cinfo, TRUE);
  cinfo->scale_num = (unsigned int)scale_num;
  cinfo->scale_denom = (unsigned int)scale_denom;
}

/*
 * Plans a seek for the region in the file whose header cinfo has just read and builds the smaller
 * JPEG (*stream, *stream_bytes): PLAN_SEEK, PLAN_SEQUENTIAL, or PLAN_FALL_BACK with why set.
 */
static int prepare_seek(j_decompress_ptr cinfo, const uint8_t *jpeg, int64_t size, int32_t x, int32_t y, int32_t w,
                        int32_t h, struct seek_plan *plan, uint8_t **stream, size_t *stream_bytes, char *why,
                        size_t why_bytes)
{
  jpeg_calc_output_dimensions(cinfo);
  if ((int64_t)x + w > cinfo->output_width || (int64_t)y + h > cinfo->output_height) {
    return PLAN_SEQUENTIAL; /* decode_rows refuses it, with its message */
  }
  int planned = plan_region(cinfo, x, y, w, h, plan);
  if (planned != PLAN_SEEK) {
    return planned;
  }
  /* Where libjpeg stopped reading: in the file, unless it ran out and fed itself a fake EOI. */
  uintptr_t next = (uintptr_t)cinfo->src->next_input_byte;
  if (next < (uintptr_t)jpeg + 4 || next >= (uintptr_t)jpeg + (uintptr_t)size) {
    snprintf(why, why_bytes, "the file ends at its scan header");
    return PLAN_FALL_BACK;
  }
  plan->data_start = (uint32_t)(next - (uintptr_t)jpeg);
  planned = find_frame(jpeg, plan->data_start, plan, why, why_bytes);
  if (planned != PLAN_SEEK) {
    return planned;
  }
  uint32_t *starts = (*cinfo->mem->alloc_large)((j_common_ptr)cinfo, JPOOL_PERMANENT,
                                                (size_t)plan->segments * 2 * sizeof(uint32_t));
  uint32_t *ends = starts + plan->segments;
  planned = find_segments(jpeg, (uint32_t)size, plan, starts, ends, why, why_bytes);
  if (planned == PLAN_SEEK) {
    *stream_bytes = build_stream(cinfo, jpeg, plan, starts, ends, stream);
  }
  return planned;
}

int32_t stoke_decode_region(const uint8_t *jpeg, int64_t size, int32_t scale_num, int32_t scale_denom,
                            int32_t x, int32_t y, int32_t w, int32_t h, int64_t max_pixels, int32_t max_scans,
                            int32_t flags, uint8_t *dst, int64_t dst_bytes, int32_t *region, char *message,
                            int32_t message_bytes)
{
  struct jpeg_decompress_struct cinfo;
  struct decoder d;
  memset(&d, 0, sizeof(d));
  d.max_scans = max_scans;
  d.message = message;
  d.message_bytes = message_bytes;
  if (message_bytes > 0) message[0] = '\0';
  region[STOKE_REGION_PATH] = STOKE_PATH_SEQUENTIAL;
  if (size < 4 || size > (int64_t)0xFFFFFFFF) {
    set_message(&d, "JPEG size out of range");
    return STOKE_JPEG_ERROR;
  }
  cinfo.err = jpeg_std_error(&d.err);
  d.err.error_exit = on_error_exit;
  d.err.emit_message = on_message;
  d.progress.progress_monitor = on_progress;
  /* Why the restart markers were not used, kept apart from libjpeg's messages. */
  char why[200];
  why[0] = '\0';
  volatile int seeking = 0;
  volatile int32_t status = STOKE_JPEG_ERROR;
  if (setjmp(d.on_error)) {
    if (!seeking) {
      jpeg_destroy_decompress(&cinfo);
      return STOKE_JPEG_ERROR;
    }
    /* libjpeg refused the restart segments: the file's own decode says what is wrong, if anything. */
    snprintf(why, sizeof(why), "its restart segments did not decode: %.150s", message_bytes > 0 ? message : "");
    seeking = 0;
    goto sequential;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &d.progress;
  /* Past this, libjpeg asks for a backing store, which this build lacks: an error, not an allocation. */
  cinfo.mem->max_memory_to_use = STOKE_JPEG_MAX_MEMORY;
  open_at_scale(&cinfo, jpeg, (size_t)size, scale_num, scale_denom);
  if ((int64_t)cinfo.image_width * cinfo.image_height > max_pixels) {
    status = fail(&d, "image exceeds the pixel budget");
    jpeg_destroy_decompress(&cinfo);
    return status;
  }
  if (!(flags & STOKE_REGION_NO_SEEK) && x >= 0 && y >= 0 && w >= 1 && h >= 1) {
    struct seek_plan plan;
    memset(&plan, 0, sizeof(plan));
    uint8_t *stream = NULL;
    size_t stream_bytes = 0;
    int planned = prepare_seek(&cinfo, jpeg, size, x, y, w, h, &plan, &stream, &stream_bytes, why, sizeof(why));
    if (planned == PLAN_SEEK) {
      jpeg_abort_decompress(&cinfo);
      seeking = 1;
      open_at_scale(&cinfo, stream, stream_bytes, scale_num, scale_denom);
      jpeg_calc_output_dimensions(&cinfo);
      uint32_t scaled = (uint32_t)cinfo.min_DCT_scaled_size;
      int32_t sx = (int32_t)(plan.sub_x * scaled / DCTSIZE);
      int32_t sy = (int32_t)(plan.sub_y * scaled / DCTSIZE);
      status = decode_rows(&cinfo, &d, x - sx, y - sy, w, h, dst, dst_bytes, region);
      if (status == STOKE_JPEG_OK) {
        region[STOKE_REGION_X] += sx;
        region[STOKE_REGION_Y] += sy;
        region[STOKE_REGION_PATH] = STOKE_PATH_SEEKED;
        goto done;
      }
      /* A warning (a segment short of its MCUs, or longer), or an error: not to be trusted. */
      snprintf(why, sizeof(why), "its restart segments did not decode cleanly: %.150s",
               message_bytes > 0 ? message : "");
      seeking = 0;
      planned = PLAN_FALL_BACK;
    }
    if (planned == PLAN_FALL_BACK) {
      goto sequential;
    }
  }
  status = decode_rows(&cinfo, &d, x, y, w, h, dst, dst_bytes, region);
  goto done;

sequential:
  /* Start again from the file itself, as if it had no restart markers. */
  region[STOKE_REGION_PATH] = STOKE_PATH_FELL_BACK;
  jpeg_abort_decompress(&cinfo);
  d.warned = 0;
  if (message_bytes > 0) message[0] = '\0';
  open_at_scale(&cinfo, jpeg, (size_t)size, scale_num, scale_denom);
  status = decode_rows(&cinfo, &d, x, y, w, h, dst, dst_bytes, region);
  if (status == STOKE_JPEG_OK) {
    set_message(&d, why);
  }

done:
  /* The rows below the region are never decoded: abort instead of finishing. */
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return status;
}

/* Encoding: a destination that writes into the caller's buffer and fails past its end. */
struct encoder {
  struct jpeg_error_mgr err;
  struct jpeg_destination_mgr dest;
  jmp_buf on_error;
  uint8_t *dst;
  size_t dst_bytes;
  char *message;
  int message_bytes;
};

static void on_encode_error(j_common_ptr cinfo)
{
  struct encoder *e = (struct encoder *)cinfo->err;
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  if (e->message_bytes > 0) snprintf(e->message, (size_t)e->message_bytes, "%s", text);
  longjmp(e->on_error, 1);
}

static void on_encode_message(j_common_ptr cinfo, int level)
{
  (void)cinfo;
  (void)level;
}

static void dest_init(j_compress_ptr cinfo)
{
  struct encoder *e = (struct encoder *)cinfo->err;
  cinfo->dest->next_output_byte = e->dst;
  cinfo->dest->free_in_buffer = e->dst_bytes;
}

static boolean dest_full(j_compress_ptr cinfo)
{
  struct encoder *e = (struct encoder *)cinfo->err;
  if (e->message_bytes > 0) snprintf(e->message, (size_t)e->message_bytes, "the JPEG does not fit its buffer");
  longjmp(e->on_error, 1);
}

static void dest_term(j_compress_ptr cinfo)
{
  (void)cinfo;
}

int32_t stoke_encode_rgb(const uint8_t *rgb, int32_t width, int32_t pitch, int32_t height, int32_t subsamp,
                         int32_t quality, int32_t restart_mcus, uint8_t *dst, int64_t dst_bytes, int64_t *jpeg_size,
                         char *message, int32_t message_bytes)
{
  /* tjMCUWidth / 8 and tjMCUHeight / 8 of TurboJPEG, by subsampling. */
  static const int samp_h[] = {1, 2, 2, 1};
  static const int samp_v[] = {1, 1, 2, 1};
  if (message_bytes > 0) message[0] = '\0';
  if (width < 1 || height < 1 || width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION
      || (int64_t)pitch < (int64_t)width * 3 || subsamp < 0 || subsamp > STOKE_SAMP_GRAY || quality < 1
      || quality > 100 || restart_mcus < 0 || restart_mcus > 65535 || dst_bytes < 1) {
    if (message_bytes > 0) snprintf(message, (size_t)message_bytes, "encode parameters out of range");
    return STOKE_JPEG_ERROR;
  }
  struct jpeg_compress_struct cinfo;
  struct encoder e;
  memset(&e, 0, sizeof(e));
  e.dst = dst;
  e.dst_bytes = (size_t)dst_bytes;
  e.message = message;
  e.message_bytes = message_bytes;
  cinfo.err = jpeg_std_error(&e.err);
  e.err.error_exit = on_encode_error;
  e.err.emit_message = on_encode_message;
  if (setjmp(e.on_error)) {
    jpeg_destroy_compress(&cinfo);
    return STOKE_JPEG_ERROR;
  }
  jpeg_create_compress(&cinfo);
  e.dest.init_destination = dest_init;
  e.dest.empty_output_buffer = dest_full;
  e.dest.term_destination = dest_term;
  cinfo.dest = &e.dest;
  cinfo.image_width = (JDIMENSION)width;
  cinfo.image_height = (JDIMENSION)height;
  cinfo.in_color_space = JCS_EXT_RGB;
  cinfo.input_components = 3;
  /* tjCompress2's setCompDefaults, step for step. */
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  cinfo.dct_method = quality >= 96 ? JDCT_ISLOW : JDCT_FASTEST;
  jpeg_set_colorspace(&cinfo, subsamp == STOKE_SAMP_GRAY ? JCS_GRAYSCALE : JCS_YCbCr);
  cinfo.comp_info[0].h_samp_factor = samp_h[subsamp];
  cinfo.comp_info[0].v_samp_factor = samp_v[subsamp];
  if (cinfo.num_components > 1) {
    for (int c = 1; c < 3; c++) {
      cinfo.comp_info[c].h_samp_factor = 1;
      cinfo.comp_info[c].v_samp_factor = 1;
    }
  }
  cinfo.restart_interval = (unsigned int)restart_mcus;
  jpeg_start_compress(&cinfo, TRUE);
  JSAMPROW rows[16];
  while (cinfo.next_scanline < cinfo.image_height) {
    JDIMENSION n = cinfo.image_height - cinfo.next_scanline;
    if (n > 16) n = 16;
    for (JDIMENSION r = 0; r < n; r++) {
      rows[r] = (JSAMPROW)(rgb + (int64_t)(cinfo.next_scanline + r) * pitch);
    }
    jpeg_write_scanlines(&cinfo, rows, n);
  }
  jpeg_finish_compress(&cinfo);
  *jpeg_size = (int64_t)(e.dst_bytes - e.dest.free_in_buffer);
  jpeg_destroy_compress(&cinfo);
  return STOKE_JPEG_OK;
}

/*
 * Lossless restart markers. One error manager serves the reader and the writer: the encoder's,
 * first in struct transcoder, so that the destination's callbacks find their buffer through it.
 */
struct transcoder {
  struct encoder e;
  struct jpeg_progress_mgr progress;
  int max_scans;
  int warned;
  volatile int writing; /* the compressor exists: an error destroys it too */
};

static void set_transcode_message(struct transcoder *t, const char *text)
{
  if (t->e.message_bytes > 0) snprintf(t->e.message, (size_t)t->e.message_bytes, "%s", text);
}

/* A warning while reading means damaged data: kept, first text and all, and the file refused. */
static void on_transcode_message(j_common_ptr cinfo, int level)
{
  struct transcoder *t = (struct transcoder *)cinfo->err;
  if (level >= 0) return;
  cinfo->err->num_warnings++;
  if (!t->warned) {
    char text[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, text);
    set_transcode_message(t, text);
    t->warned = 1;
  }
}

static void on_transcode_progress(j_common_ptr cinfo)
{
  struct transcoder *t = (struct transcoder *)cinfo->err;
  char text[128];
  if (past_scan_limit(cinfo, t->max_scans, text, sizeof(text))) {
    set_transcode_message(t, text);
    longjmp(t->e.on_error, 1);
  }
}

/* The divisor of per_row nearest target (the larger on a tie): pack's rule, PackOptions.restartInterval. */
static int nearest_divisor(int per_row, int target)
{
  int best = per_row;
  for (int d = 1; d <= per_row; d++) {
    int off = d > target ? d - target : target - d;
    int best_off = best > target ? best - target : target - best;
    if (per_row % d == 0 && off <= best_off) best = d;
  }
  return best;
}

/* Whether marker m is one libjpeg writes itself from the parameters it copied: JFIF APP0, Adobe APP14. */
static int written_by_libjpeg(j_compress_ptr out, jpeg_saved_marker_ptr m)
{
  if (out->write_JFIF_header && m->marker == JPEG_APP0 && m->data_length >= 5
      && memcmp(m->data, "JFIF", 5) == 0) {
    return 1;
  }
  return out->write_Adobe_marker && m->marker == JPEG_APP0 + 14 && m->data_length >= 5
         && memcmp(m->data, "Adobe", 5) == 0;
}

/*
 * Whether n coefficients all lie in [-1023, 1023]: one unsigned comparison each, over a row of
 * blocks as one flat array, which gcc vectorises (16-bit lanes); the AVX2 form, where the CPU has
 * it, takes 0.6x the SSE2 one's time. A row that fails is checked block by block (a DC value of
 * -1024 is allowed).
 */
#define ROW_WITHIN(c, n, bad)                                                                        \
  do {                                                                                             \
    for (size_t i_ = 0; i_ < (n); i_++) (bad) |= (unsigned)((uint16_t)((c)[i_] + 1023) > 2046);     \
  } while (0)

static int row_within(const JCOEF *c, size_t n)
{
  unsigned bad = 0;
  ROW_WITHIN(c, n, bad);
  return !bad;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static int row_within_avx2(const JCOEF *c, size_t n)
{
  unsigned bad = 0;
  ROW_WITHIN(c, n, bad);
  return !bad;
}

static int has_avx2(void)
{
  return __builtin_cpu_supports("avx2") != 0;
}
#else
/* Another CPU: the plain form, which gcc vectorises for it. */
static int row_within_avx2(const JCOEF *c, size_t n)
{
  return row_within(c, n);
}

static int has_avx2(void)
{
  return 0;
}
#endif

/* Whether a row of blocks fits, block by block: each AC coefficient [-1023, 1023], DC [-1024, 1023]. */
static int blocks_within(JBLOCKROW r, JDIMENSION blocks)
{
  for (JDIMENSION b = 0; b < blocks; b++) {
    int over = (r[b][0] > 1023) | (r[b][0] < -1024);
    for (int k = 1; k < DCTSIZE2; k++) {
      int v = r[b][k];
      over |= (v > 1023) | (v < -1023);
    }
    if (over) return 0;
  }
  return 1;
}

/*
 * Whether every coefficient of every block fits the standard tables: each AC coefficient their 10
 * bits (|v| <= 1023), each DC value [-1024, 1023], so that every difference the coder takes from
 * the one before (or from 0 after a restart marker) fits their 11 bits. 8-bit samples give no other.
 * The flat check of each row first (a 0.2 MP photograph's 4,800 blocks: 14 us with AVX2, where the
 * block-by-block loop alone took 42, a copy's 6%), the exact one only where it fails; avx2 says
 * which form (check_baseline.c runs both against the rule).
 */
static int within_baseline_rows(j_decompress_ptr src, jvirt_barray_ptr *coefficients, int avx2)
{
  for (int c = 0; c < src->num_components; c++) {
    jpeg_component_info *comp = &src->comp_info[c];
    size_t n = (size_t)comp->width_in_blocks * DCTSIZE2;
    for (JDIMENSION row = 0; row < comp->height_in_blocks; row++) {
      JBLOCKARRAY blocks = (*src->mem->access_virt_barray)((j_common_ptr)src, coefficients[c], row, 1, FALSE);
      const JCOEF *flat = blocks[0][0];
      if (!(avx2 ? row_within_avx2(flat, n) : row_within(flat, n)) && !blocks_within(blocks[0], comp->width_in_blocks)) {
        return 0;
      }
    }
  }
  return 1;
}

static int within_baseline(j_decompress_ptr src, jvirt_barray_ptr *coefficients)
{
  return within_baseline_rows(src, coefficients, has_avx2());
}

/* One error manager, t's, for src and out; the copy goes to dst. Before the caller's setjmp. */
static void init_transcoder(struct jpeg_decompress_struct *src, struct jpeg_compress_struct *out, struct transcoder *t,
                            int32_t max_scans, uint8_t *dst, int64_t dst_bytes, char *message, int32_t message_bytes)
{
  memset(t, 0, sizeof(*t));
  t->e.dst = dst;
  t->e.dst_bytes = (size_t)dst_bytes;
  t->e.message = message;
  t->e.message_bytes = message_bytes;
  t->max_scans = max_scans;
  src->err = jpeg_std_error(&t->e.err);
  out->err = &t->e.err;
  t->e.err.error_exit = on_encode_error;
  t->e.err.emit_message = on_transcode_message;
}

/* Creates src and reads the header of jpeg[0, size), every APPn and COM marker kept. Under the caller's setjmp. */
static void open_transcoder(struct jpeg_decompress_struct *src, struct transcoder *t, const uint8_t *jpeg, int64_t size)
{
  jpeg_create_decompress(src);
  src->mem->max_memory_to_use = STOKE_JPEG_MAX_MEMORY;
  t->progress.progress_monitor = on_transcode_progress;
  src->progress = &t->progress;
  jpeg_mem_src(src, jpeg, (unsigned long)size);
  for (int m = 0; m < 16; m++) jpeg_save_markers(src, JPEG_APP0 + m, 0xFFFF);
  jpeg_save_markers(src, JPEG_COM, 0xFFFF);
  jpeg_read_header(src, TRUE);
}

/* Why the file whose header src has read is kept as it is, or NULL. */
static const char *header_refusal(j_decompress_ptr src, int64_t max_pixels)
{
  if (src->arith_code) return "arithmetic-coded";
  if (src->jpeg_color_space == JCS_CMYK || src->jpeg_color_space == JCS_YCCK) {
    return "CMYK or YCCK (the region decoder decodes those whole)";
  }
  if ((int64_t)src->image_width * src->image_height > max_pixels) return "image exceeds the pixel budget";
  return NULL;
}

/* The restart interval for src, and info filled with it and what the header says. */
static int plan_interval(j_decompress_ptr src, int32_t target_mcus, int32_t *info)
{
  /* An interleaved scan's MCU is max_h_samp_factor blocks wide; a one-component scan's is one block. */
  int mcu_width = src->num_components == 1 ? DCTSIZE : src->max_h_samp_factor * DCTSIZE;
  int per_row = (int)((src->image_width + (JDIMENSION)mcu_width - 1) / (JDIMENSION)mcu_width);
  int interval = nearest_divisor(per_row, target_mcus);
  info[STOKE_RESTART_INTERVAL] = interval;
  info[STOKE_RESTART_MCUS_PER_ROW] = per_row;
  info[STOKE_RESTART_PROGRESSIVE] = src->progressive_mode ? 1 : 0;
  info[STOKE_RESTART_HAD_MARKERS] = (int32_t)src->restart_interval;
  return interval;
}

/* Why the coefficients read cannot be copied exactly, or NULL. */
static const char *coefficient_refusal(j_decompress_ptr src, jvirt_barray_ptr *coefficients)
{
  /*
   * A progressive file whose scans leave a coefficient short of its last bit (or never send it)
   * is decoded with libjpeg's block smoothing, which guesses the missing low frequencies; a
   * sequential copy has no such gaps to smooth, so its pixels would differ. Kept as it is.
   */
  if (src->progressive_mode && src->coef_bits != NULL) {
    for (int c = 0; c < src->num_components; c++) {
      for (int k = 0; k < DCTSIZE2; k++) {
        if (src->coef_bits[c][k] != 0) {
          return "progressive scans that leave coefficients incomplete (decoders smooth them)";
        }
      }
    }
  }
  /*
   * The standard Huffman tables below code an AC coefficient of up to 10 bits and a DC difference
   * of up to 11, all that baseline 8-bit data holds; libjpeg's coding pass does not check (its
   * optimising pass did), and would write a symbol the table lacks as nothing. A damaged or hostile
   * file can decode to larger coefficients, or to DC values whose differences are larger: refused,
   * rather than copied wrong (a copy whose segments then do not decode).
   */
  if (!within_baseline(src, coefficients)) return "DCT coefficients beyond baseline's range (a damaged file)";
  return NULL;
}

/*
 * The coefficients of the file whose header src has read (jpeg_read_coefficients: read now, or
 * given as they are once buffered-image mode has absorbed the file), or NULL with
 * the message set: a warning while reading them (its text), or a reason they cannot be copied
 * exactly. Under the caller's setjmp.
 */
static jvirt_barray_ptr *checked_coefficients(j_decompress_ptr src, struct transcoder *t)
{
  jvirt_barray_ptr *coefficients = jpeg_read_coefficients(src);
  if (t->warned) return NULL;
  const char *refused = coefficient_refusal(src, coefficients);
  if (refused != NULL) {
    set_transcode_message(t, refused);
    return NULL;
  }
  return coefficients;
}

/* Writes the copy of src's coefficients, into t's buffer; *jpeg_size its length. Under the caller's setjmp. */
static void write_copy(j_decompress_ptr src, j_compress_ptr out, struct transcoder *t, jvirt_barray_ptr *coefficients,
                       int interval, int64_t *jpeg_size)
{
  jpeg_create_compress(out);
  t->writing = 1;
  t->e.dest.init_destination = dest_init;
  t->e.dest.empty_output_buffer = dest_full;
  t->e.dest.term_destination = dest_term;
  out->dest = &t->e.dest;
  jpeg_copy_critical_parameters(src, out);
  /*
   * The standard Huffman tables (jpeg_set_defaults', which copy_critical_parameters calls), not
   * optimised ones: optimising reads every block twice (a statistics pass, then the coding pass),
   * which made the copy cost more than a whole decode; the standard tables code every 8-bit
   * coefficient, and cost a few per cent in bytes (docs/benchmarks/results-filling).
   */
  out->optimize_coding = FALSE;
  out->restart_interval = (unsigned int)interval;
  jpeg_write_coefficients(out, coefficients);
  for (jpeg_saved_marker_ptr m = src->marker_list; m != NULL; m = m->next) {
    if (!written_by_libjpeg(out, m)) {
      jpeg_write_marker(out, m->marker, m->data, m->data_length);
    }
  }
  jpeg_finish_compress(out);
  *jpeg_size = (int64_t)(t->e.dst_bytes - t->e.dest.free_in_buffer);
  jpeg_destroy_compress(out);
  t->writing = 0;
}

/* What stoke_jpeg_add_restarts_decoding decodes besides the copy. */
struct region_request {
  int32_t scale_num, scale_denom, x, y, w, h;
  uint8_t *dst;
  int64_t dst_bytes;
  int32_t *region;
};

/* Gives up on src, with `refused` as the message where it is not NULL (else libjpeg's warning). */
static int32_t refuse(j_decompress_ptr src, struct transcoder *t, const char *refused)
{
  if (refused != NULL) set_transcode_message(t, refused);
  jpeg_destroy_decompress(src);
  return STOKE_JPEG_ERROR;
}

/*
 * Reads the whole file into src's coefficient buffer in buffered-image mode, set up to decode
 * `then`'s region from it: NULL, or why not. Under the caller's setjmp.
 *
 * Buffered-image mode keeps every coefficient, as jpeg_read_coefficients does, and decodes the
 * region from them: the file's entropy-coded data is decoded once for both the copy and the
 * pixels. The pixels are a sequential decode's: the same IDCT, upsampling and colour conversion
 * over the same coefficients (libjpeg smooths no block of a sequential file, and the progressive
 * files it would smooth are refused by checked_coefficients).
 */
static const char *absorb_for_region(j_decompress_ptr src, const struct region_request *then)
{
  src->buffered_image = TRUE;
  src->scale_num = (unsigned int)then->scale_num;
  src->scale_denom = (unsigned int)then->scale_denom;
  src->out_color_space = JCS_EXT_RGBX;
  jpeg_calc_output_dimensions(src);
  if (src->min_DCT_scaled_size < 2) {
    /* At 1/8 scale libjpeg keeps only each block's DC coefficient: no copy could be written. */
    return "a 1/8 scale keeps only DC coefficients";
  }
  jpeg_start_decompress(src);
  for (;;) {
    (*src->progress->progress_monitor)((j_common_ptr)src); /* the scan limit, as jpeg_read_coefficients checks it */
    int got = jpeg_consume_input(src);
    if (got == JPEG_REACHED_EOI) return NULL;
    if (got == JPEG_SUSPENDED) return "the file's data stopped short"; /* a memory source never suspends */
  }
}

/*
 * stoke_jpeg_add_restarts, and with `then` stoke_jpeg_add_restarts_decoding: one body, so that the
 * copy the two write is the same by construction.
 */
static int32_t transcode(const uint8_t *jpeg, int64_t size, int32_t target_mcus, int64_t max_pixels, int32_t max_scans,
                         int32_t flags, uint8_t *copy, int64_t copy_bytes, int64_t *copy_size, int32_t *info,
                         const struct region_request *then, char *message, int32_t message_bytes)
{
  if (message_bytes > 0) message[0] = '\0';
  if (jpeg == NULL || size < 4 || target_mcus < 1 || target_mcus > 65535 || max_scans < 1 || copy == NULL
      || copy_bytes < 1 || (then != NULL && (then->dst == NULL || then->dst_bytes < 1))) {
    if (message_bytes > 0) snprintf(message, (size_t)message_bytes, "transcode parameters out of range");
    return STOKE_JPEG_ERROR;
  }
  struct jpeg_decompress_struct src;
  struct jpeg_compress_struct out;
  struct transcoder t;
  init_transcoder(&src, &out, &t, max_scans, copy, copy_bytes, message, message_bytes);
  if (setjmp(t.e.on_error)) {
    if (t.writing) jpeg_destroy_compress(&out);
    jpeg_destroy_decompress(&src);
    return STOKE_JPEG_ERROR;
  }
  open_transcoder(&src, &t, jpeg, size);
  const char *refused = header_refusal(&src, max_pixels);
  int seeks = !src.progressive_mode && src.restart_interval > 0;
  if (refused == NULL && seeks && then != NULL) {
    refused = "it seeks already"; /* its own markers: the region decoder reads the file as it is */
  }
  if (refused != NULL || t.warned) return refuse(&src, &t, refused); /* a header warning: its text */
  int interval = plan_interval(&src, target_mcus, info);
  if (seeks && (flags & STOKE_RESTART_UNLESS_SEEKABLE)) {
    info[STOKE_RESTART_INTERVAL] = (int32_t)src.restart_interval;
    *copy_size = 0;
    jpeg_destroy_decompress(&src);
    return STOKE_JPEG_OK;
  }
  if (then != NULL && (refused = absorb_for_region(&src, then)) != NULL) return refuse(&src, &t, refused);
  jvirt_barray_ptr *coefficients = checked_coefficients(&src, &t);
  if (coefficients == NULL) return refuse(&src, &t, NULL);
  write_copy(&src, &out, &t, coefficients, interval, copy_size);
  if (then != NULL) {
    jpeg_start_output(&src, src.input_scan_number);
    refused = read_region(&src, then->x, then->y, then->w, then->h, then->dst, then->dst_bytes, then->region);
    if (refused != NULL || t.warned) return refuse(&src, &t, refused);
    then->region[STOKE_REGION_PATH] = STOKE_PATH_SEQUENTIAL;
  }
  jpeg_abort_decompress(&src);
  jpeg_destroy_decompress(&src);
  return STOKE_JPEG_OK;
}

int32_t stoke_jpeg_add_restarts(const uint8_t *jpeg, int64_t size, int32_t target_mcus, int64_t max_pixels,
                                int32_t max_scans, int32_t flags, uint8_t *dst, int64_t dst_bytes, int64_t *jpeg_size,
                                int32_t *info, char *message, int32_t message_bytes)
{
  return transcode(jpeg, size, target_mcus, max_pixels, max_scans, flags, dst, dst_bytes, jpeg_size, info, NULL,
                   message, message_bytes);
}

int32_t stoke_jpeg_add_restarts_decoding(const uint8_t *jpeg, int64_t size, int32_t target_mcus, int64_t max_pixels,
                                         int32_t max_scans, uint8_t *copy, int64_t copy_bytes, int64_t *copy_size,
                                         int32_t *info, int32_t scale_num, int32_t scale_denom, int32_t x, int32_t y,
                                         int32_t w, int32_t h, uint8_t *dst, int64_t dst_bytes, int32_t *region,
                                         char *message, int32_t message_bytes)
{
  struct region_request then = {scale_num, scale_denom, x, y, w, h, dst, dst_bytes, region};
  return transcode(jpeg, size, target_mcus, max_pixels, max_scans, 0, copy, copy_bytes, copy_size, info, &then,
                   message, message_bytes);
}
