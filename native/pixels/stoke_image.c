/*
 * stoke_image.c: see stoke_image.h. libspng and libwebp do the decoding; this file checks sizes
 * first and maps their results to a status and a sentence.
 */
#include "stoke_image.h"

#include <spng.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>

/* Chunks libspng may hold at once (text, ICC profiles): bounds what a hostile file can make it allocate. */
#define STOKE_PNG_CHUNK_LIMIT ((size_t)64 << 20)

int32_t stoke_image_abi_version(void) { return STOKE_IMAGE_ABI_VERSION; }

static int32_t say(char *message, int32_t message_bytes, int32_t status, const char *format, ...)
{
  if (message != NULL && message_bytes > 0) {
    va_list args;
    va_start(args, format);
    vsnprintf(message, (size_t)message_bytes, format, args);
    va_end(args);
  }
  return status;
}

static int32_t too_large(uint32_t width, uint32_t height, int64_t max_pixels, char *message,
                         int32_t message_bytes)
{
  return say(message, message_bytes, STOKE_IMAGE_TOO_LARGE,
             "header claims %ux%u = %lld pixels, over the budget of %lld", width, height,
             (long long)width * height, (long long)max_pixels);
}

static int32_t png_failed(int rc, char *message, int32_t message_bytes)
{
  return say(message, message_bytes, rc == SPNG_IO_EOF ? STOKE_IMAGE_TRUNCATED : STOKE_IMAGE_ERROR,
             "%s", rc == SPNG_IO_EOF ? "premature end of PNG data" : spng_strerror(rc));
}

/* A decoder over png[0, size), its header read; NULL with the message set on failure. */
static spng_ctx *png_open(const uint8_t *png, int64_t size, struct spng_ihdr *ihdr, int32_t *status,
                          char *message, int32_t message_bytes)
{
  spng_ctx *ctx = spng_ctx_new(0);
  if (ctx == NULL) {
    *status = say(message, message_bytes, STOKE_IMAGE_ERROR, "out of memory");
    return NULL;
  }
  int rc = spng_set_chunk_limits(ctx, STOKE_PNG_CHUNK_LIMIT, STOKE_PNG_CHUNK_LIMIT);
  if (rc == 0) rc = spng_set_png_buffer(ctx, png, (size_t)size);
  if (rc == 0) rc = spng_get_ihdr(ctx, ihdr);
  if (rc != 0) {
    *status = png_failed(rc, message, message_bytes);
    spng_ctx_free(ctx);
    return NULL;
  }
  *status = STOKE_IMAGE_OK;
  return ctx;
}

int32_t stoke_png_info(const uint8_t *png, int64_t size, int32_t *info, char *message, int32_t message_bytes)
{
  struct spng_ihdr ihdr;
  int32_t status;
  spng_ctx *ctx = png_open(png, size, &ihdr, &status, message, message_bytes);
  if (ctx == NULL) return status;
  struct spng_trns trns;
  int has_trns = spng_get_trns(ctx, &trns) == 0;
  info[STOKE_INFO_WIDTH] = (int32_t)ihdr.width;
  info[STOKE_INFO_HEIGHT] = (int32_t)ihdr.height;
  info[STOKE_INFO_DEPTH] = ihdr.bit_depth;
  info[STOKE_INFO_KIND] = ihdr.color_type;
  info[STOKE_INFO_ALPHA] = ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ||
                           ihdr.color_type == SPNG_COLOR_TYPE_TRUECOLOR_ALPHA || has_trns;
  spng_ctx_free(ctx);
  return STOKE_IMAGE_OK;
}

int32_t stoke_png_decode_rgbx(const uint8_t *png, int64_t size, int64_t max_pixels, uint8_t *dst,
                              int64_t dst_bytes, char *message, int32_t message_bytes)
{
  struct spng_ihdr ihdr;
  int32_t status;
  spng_ctx *ctx = png_open(png, size, &ihdr, &status, message, message_bytes);
  if (ctx == NULL) return status;
  int64_t pixels = (int64_t)ihdr.width * ihdr.height;
  if (pixels > max_pixels) {
    spng_ctx_free(ctx);
    return too_large(ihdr.width, ihdr.height, max_pixels, message, message_bytes);
  }
  if (dst_bytes < pixels * 4) {
    spng_ctx_free(ctx);
    return say(message, message_bytes, STOKE_IMAGE_ERROR, "%ux%u needs %lld bytes, the buffer holds %lld",
               ihdr.width, ihdr.height, (long long)(pixels * 4), (long long)dst_bytes);
  }
  int rc;
  if (ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth == 16) {
    /* PIL opens 16-bit gray as mode I;16 and clips it to 255 on the way to RGB: decode the samples
     * (host-endian) into the buffer's first half, then spread them out from the last, in place. */
    memset(dst, 0, (size_t)(pixels * 2));
    rc = spng_decode_image(ctx, dst, (size_t)(pixels * 2), SPNG_FMT_PNG, 0);
    if (rc == 0) {
      const uint16_t *gray = (const uint16_t *)dst;
      for (int64_t i = pixels - 1; i >= 0; i--) {
        uint16_t v = gray[i];
        uint8_t g = v > 255 ? 255 : (uint8_t)v;
        dst[4 * i] = g;
        dst[4 * i + 1] = g;
        dst[4 * i + 2] = g;
        dst[4 * i + 3] = 255;
      }
    }
  } else if (ihdr.color_type == SPNG_COLOR_TYPE_INDEXED) {
    /* The indices, expanded here. An index past the palette's entries is black, as Pillow 11 gives
     * it (Pillow 9 gave the gray (i, i, i) of its default palette). A palette's transparency is
     * left out, as PIL's convert("RGB") leaves it. */
    struct spng_plte plte;
    size_t raw_bytes = 0;
    rc = spng_get_plte(ctx, &plte);
    if (rc == 0) rc = spng_decoded_image_size(ctx, SPNG_FMT_PNG, &raw_bytes);
    if (rc == 0 && (int64_t)raw_bytes > dst_bytes) rc = SPNG_EOVERFLOW;
    /* libspng sets the bits of an interlaced image's packed pixels into what the buffer holds:
     * it must start out zero, or the last image's bytes show through. */
    if (rc == 0) memset(dst, 0, raw_bytes);
    if (rc == 0) rc = spng_decode_image(ctx, dst, raw_bytes, SPNG_FMT_PNG, 0);
    if (rc == 0) {
      /* Rows of packed indices, (width * depth + 7) / 8 bytes each. Pixel i's index lies at or
       * before byte i, so spreading them out from the last pixel reads each before it is overwritten. */
      uint32_t depth = ihdr.bit_depth, width = ihdr.width;
      size_t row_bytes = ((size_t)width * depth + 7) / 8;
      uint32_t mask = (1u << depth) - 1;
      for (int64_t i = pixels - 1; i >= 0; i--) {
        size_t y = (size_t)(i / width), x = (size_t)(i % width);
        size_t bit = x * depth;
        uint32_t index = ((uint32_t)dst[y * row_bytes + bit / 8] >> (8 - depth - bit % 8)) & mask;
        uint8_t *px = dst + 4 * i;
        if (index < plte.n_entries) {
          px[0] = plte.entries[index].red;
          px[1] = plte.entries[index].green;
          px[2] = plte.entries[index].blue;
        } else {
          px[0] = px[1] = px[2] = 0;
        }
        px[3] = 255;
      }
    }
  } else {
    /* Without SPNG_DECODE_TRNS: a colour key's transparency is left out, as PIL's convert("RGB")
     * leaves it. */
    rc = spng_decode_image(ctx, dst, (size_t)(pixels * 4), SPNG_FMT_RGBA8, 0);
  }
  spng_ctx_free(ctx);
  return rc == 0 ? STOKE_IMAGE_OK : png_failed(rc, message, message_bytes);
}

int32_t stoke_png_encode_rgb(const uint8_t *rgb, int32_t width, int32_t height, uint8_t *dst, int64_t dst_bytes,
                             int64_t *png_bytes, char *message, int32_t message_bytes)
{
  if (width < 1 || height < 1) {
    return say(message, message_bytes, STOKE_IMAGE_ERROR, "cannot encode a %dx%d image", width, height);
  }
  spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  if (ctx == NULL) return say(message, message_bytes, STOKE_IMAGE_ERROR, "out of memory");
  struct spng_ihdr ihdr = {(uint32_t)width, (uint32_t)height, 8, SPNG_COLOR_TYPE_TRUECOLOR, 0, 0, 0};
  int rc = spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  if (rc == 0) rc = spng_set_ihdr(ctx, &ihdr);
  if (rc == 0) {
    rc = spng_encode_image(ctx, rgb, (size_t)width * height * 3, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  }
  size_t length = 0;
  int error = 0;
  void *png = rc == 0 ? spng_get_png_buffer(ctx, &length, &error) : NULL;
  spng_ctx_free(ctx);
  if (png == NULL) {
    return say(message, message_bytes, STOKE_IMAGE_ERROR, "encoding a %dx%d PNG failed: %s", width, height,
               spng_strerror(rc != 0 ? rc : error));
  }
  if ((int64_t)length > dst_bytes) {
    free(png);
    return say(message, message_bytes, STOKE_IMAGE_ERROR, "the %dx%d PNG takes %lld bytes, the buffer holds %lld",
               width, height, (long long)length, (long long)dst_bytes);
  }
  memcpy(dst, png, length);
  free(png);
  *png_bytes = (int64_t)length;
  return STOKE_IMAGE_OK;
}

static const char *webp_status(VP8StatusCode code)
{
  switch (code) {
  case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
  case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
  case VP8_STATUS_BITSTREAM_ERROR: return "corrupt WebP data (bitstream error)";
  case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported WebP feature";
  case VP8_STATUS_SUSPENDED: return "decoding suspended";
  case VP8_STATUS_USER_ABORT: return "decoding aborted";
  case VP8_STATUS_NOT_ENOUGH_DATA: return "premature end of WebP data";
  default: return "WebP decoding failed";
  }
}

static int32_t webp_failed(VP8StatusCode code, char *message, int32_t message_bytes)
{
  return say(message, message_bytes,
             code == VP8_STATUS_NOT_ENOUGH_DATA ? STOKE_IMAGE_TRUNCATED
             : code == VP8_STATUS_UNSUPPORTED_FEATURE ? STOKE_IMAGE_UNSUPPORTED
                                                      : STOKE_IMAGE_ERROR,
             "%s", webp_status(code));
}

int32_t stoke_webp_info(const uint8_t *webp, int64_t size, int32_t *info, char *message, int32_t message_bytes)
{
  WebPBitstreamFeatures features;
  VP8StatusCode code = WebPGetFeatures(webp, (size_t)size, &features);
  if (code != VP8_STATUS_OK) return webp_failed(code, message, message_bytes);
  if (features.has_animation) {
    return say(message, message_bytes, STOKE_IMAGE_UNSUPPORTED, "animated WebP is not decoded by Stoke");
  }
  info[STOKE_INFO_WIDTH] = features.width;
  info[STOKE_INFO_HEIGHT] = features.height;
  info[STOKE_INFO_DEPTH] = 8;
  info[STOKE_INFO_KIND] = features.format;
  info[STOKE_INFO_ALPHA] = features.has_alpha;
  return STOKE_IMAGE_OK;
}

/* Decodes into dst with config's options (cropping or not), after the checks every decode makes. */
static int32_t webp_decode(const uint8_t *webp, int64_t size, int64_t max_pixels, WebPDecoderConfig *config,
                           int32_t crop_x, int32_t crop_y, int32_t crop_w, int32_t crop_h, uint8_t *dst,
                           int64_t dst_bytes, int32_t *region, char *message, int32_t message_bytes)
{
  VP8StatusCode code = WebPGetFeatures(webp, (size_t)size, &config->input);
  if (code != VP8_STATUS_OK) return webp_failed(code, message, message_bytes);
  if (config->input.has_animation) {
    return say(message, message_bytes, STOKE_IMAGE_UNSUPPORTED, "animated WebP is not decoded by Stoke");
  }
  int32_t width = config->input.width, height = config->input.height;
  if ((int64_t)width * height > max_pixels) {
    return too_large((uint32_t)width, (uint32_t)height, max_pixels, message, message_bytes);
  }
  if (crop_w < 0) { /* the whole image */
    crop_x = 0;
    crop_y = 0;
    crop_w = width;
    crop_h = height;
  } else {
    if (crop_x < 0 || crop_y < 0 || crop_w < 1 || crop_h < 1 || crop_x > width - crop_w || crop_y > height - crop_h) {
      return say(message, message_bytes, STOKE_IMAGE_ERROR, "box %dx%d+%d+%d is not inside the %dx%d image",
                 crop_w, crop_h, crop_x, crop_y, width, height);
    }
    /* libwebp starts a crop on an even column and row (chroma is subsampled 2x2). */
    crop_w += crop_x & 1;
    crop_h += crop_y & 1;
    crop_x &= ~1;
    crop_y &= ~1;
    config->options.use_cropping = crop_w < width || crop_h < height;
    config->options.crop_left = crop_x;
    config->options.crop_top = crop_y;
    config->options.crop_width = crop_w;
    config->options.crop_height = crop_h;
  }
  int64_t bytes = (int64_t)crop_w * crop_h * 4;
  if (dst_bytes < bytes) {
    return say(message, message_bytes, STOKE_IMAGE_ERROR, "%dx%d needs %lld bytes, the buffer holds %lld", crop_w,
               crop_h, (long long)bytes, (long long)dst_bytes);
  }
  /* RGBA, not premultiplied, into the caller's memory: the colour of a transparent pixel is kept,
   * as PIL keeps it before dropping alpha. */
  config->output.colorspace = MODE_RGBA;
  config->output.is_external_memory = 1;
  config->output.u.RGBA.rgba = dst;
  config->output.u.RGBA.stride = crop_w * 4;
  config->output.u.RGBA.size = (size_t)bytes;
  code = WebPDecode(webp, (size_t)size, config);
  WebPFreeDecBuffer(&config->output);
  if (code != VP8_STATUS_OK) return webp_failed(code, message, message_bytes);
  if (region != NULL) {
    region[STOKE_REGION_LEFT] = crop_x;
    region[STOKE_REGION_TOP] = crop_y;
    region[STOKE_REGION_WIDTH] = crop_w;
    region[STOKE_REGION_HEIGHT] = crop_h;
  }
  return STOKE_IMAGE_OK;
}

int32_t stoke_webp_decode_rgbx(const uint8_t *webp, int64_t size, int64_t max_pixels, uint8_t *dst,
                               int64_t dst_bytes, char *message, int32_t message_bytes)
{
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) {
    return say(message, message_bytes, STOKE_IMAGE_ERROR, "libwebp's ABI does not match its header");
  }
  return webp_decode(webp, size, max_pixels, &config, 0, 0, -1, -1, dst, dst_bytes, NULL, message, message_bytes);
}

int32_t stoke_webp_decode_region_rgbx(const uint8_t *webp, int64_t size, int64_t max_pixels, int32_t x, int32_t y,
                                      int32_t w, int32_t h, uint8_t *dst, int64_t dst_bytes, int32_t *region,
                                      char *message, int32_t message_bytes)
{
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) {
    return say(message, message_bytes, STOKE_IMAGE_ERROR, "libwebp's ABI does not match its header");
  }
  if (w < 1 || h < 1) {
    return say(message, message_bytes, STOKE_IMAGE_ERROR, "an empty box (%dx%d)", w, h);
  }
  return webp_decode(webp, size, max_pixels, &config, x, y, w, h, dst, dst_bytes, region, message, message_bytes);
}
