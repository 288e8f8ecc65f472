/*
 * stoke_jpeg.h: decode only a region of a JPEG, over libjpeg-turbo's libjpeg API, and encode
 * JPEGs with restart markers. libjpeg's setjmp/longjmp error model stays inside this file: every
 * call returns a status and a message, never unwinds through its caller. No global state.
 *
 * A region of a baseline file with restart markers (a DRI segment) is decoded from the
 * entropy-coded segments that hold it: the segments are found by scanning for their RSTn markers,
 * which needs no Huffman decoding, and copied with the header into a smaller JPEG whose frame
 * holds only those MCU rows (and columns, when a row holds several segments). Other files are
 * decoded sequentially: jpeg_crop_scanline for the columns, jpeg_skip_scanlines for the rows above,
 * stopping after the last row needed. Either way the pixels are the whole decode's.
 *
 * A file without markers gets them losslessly (stoke_jpeg_add_restarts): its DCT coefficients are
 * rewritten as they are, sequential, with a restart marker every few MCUs, so that every decoder
 * gives the same pixels and the region decoder can seek.
 */
#ifndef STOKE_JPEG_H
#define STOKE_JPEG_H

#include <stdint.h>

#define STOKE_JPEG_ABI_VERSION 5

/* What libjpeg may allocate for one image (coefficient buffers of a progressive image above all). */
#define STOKE_JPEG_MAX_MEMORY ((long)1 << 30)

#define STOKE_JPEG_OK 0       /* decoded, no warning */
#define STOKE_JPEG_WARNING 1  /* decoded, but libjpeg warned (message set): the caller decides */
#define STOKE_JPEG_ERROR (-1) /* nothing usable (message set) */

/* Indices into the `region` array that stoke_decode_region fills. */
#define STOKE_REGION_X 0      /* first decoded column, in scaled pixels (<= the x asked for) */
#define STOKE_REGION_Y 1      /* first decoded row (= the y asked for) */
#define STOKE_REGION_WIDTH 2  /* decoded columns (>= the width asked for: whole iMCU columns) */
#define STOKE_REGION_HEIGHT 3 /* decoded rows (= the height asked for) */
#define STOKE_REGION_PATH 4   /* how: one of STOKE_PATH_* */
#define STOKE_REGION_FIELDS 5

#define STOKE_PATH_SEQUENTIAL 0 /* no usable restart markers (none, progressive, or the box is the image) */
#define STOKE_PATH_SEEKED 1     /* decoded from the restart segments that hold the region */
#define STOKE_PATH_FELL_BACK 2  /* the restart markers could not be trusted (message says why): sequential */

/* stoke_decode_region's flags. */
#define STOKE_REGION_NO_SEEK 1 /* decode sequentially even where restart markers would allow seeking */

/* stoke_encode_rgb's subsampling, TurboJPEG's TJSAMP_* numbering. */
#define STOKE_SAMP_444 0
#define STOKE_SAMP_422 1
#define STOKE_SAMP_420 2
#define STOKE_SAMP_GRAY 3

/* Indices into the `info` array that stoke_jpeg_add_restarts fills. */
#define STOKE_RESTART_INTERVAL 0      /* the restart interval written, in MCUs */
#define STOKE_RESTART_MCUS_PER_ROW 1  /* the image's MCUs per row (the interval divides it) */
#define STOKE_RESTART_PROGRESSIVE 2   /* 1 when the original was progressive */
#define STOKE_RESTART_HAD_MARKERS 3   /* the original's own restart interval (0: none) */
#define STOKE_RESTART_FIELDS 4

/* stoke_jpeg_add_restarts's flags. */
#define STOKE_RESTART_UNLESS_SEEKABLE 1 /* write nothing (*jpeg_size = 0) for a sequential file with markers */

int32_t stoke_jpeg_abi_version(void);

/*
 * Decodes rows [y, y + h) and at least columns [x, x + w) of the image scaled by
 * scale_num / scale_denom, as RGBX (4 bytes a pixel, rows packed), into dst. The region is checked
 * against the scaled image and the output against dst_bytes before a row is written. Images whose
 * header claims more than max_pixels pixels (decompression bombs) and progressive images with more
 * than max_scans scans are refused, and libjpeg may allocate at most STOKE_JPEG_MAX_MEMORY. CMYK
 * images are refused.
 *
 * Restart markers that lie (out of order, too few or too many for the DRI's interval, another
 * marker inside the scan, a segment that does not decode to its interval's MCUs without a warning)
 * are never trusted: the region is decoded sequentially instead, region[STOKE_REGION_PATH] is
 * STOKE_PATH_FELL_BACK, and the message (when the status is OK) says why.
 */
int32_t stoke_decode_region(const uint8_t *jpeg, int64_t size, int32_t scale_num, int32_t scale_denom,
                            int32_t x, int32_t y, int32_t w, int32_t h, int64_t max_pixels, int32_t max_scans,
                            int32_t flags, uint8_t *dst, int64_t dst_bytes, int32_t *region, char *message,
                            int32_t message_bytes);

/*
 * Encodes width x height RGB pixels (3 bytes each, rows pitch bytes apart) as a baseline JPEG with
 * the settings of TurboJPEG's tjCompress2 (the same quality tables, DCT and subsampling, so the
 * same bytes when restart_mcus is 0), plus a restart marker every restart_mcus MCUs. Writes at most
 * dst_bytes into dst and its length into *jpeg_size. Returns STOKE_JPEG_OK or STOKE_JPEG_ERROR.
 */
int32_t stoke_encode_rgb(const uint8_t *rgb, int32_t width, int32_t pitch, int32_t height, int32_t subsamp,
                         int32_t quality, int32_t restart_mcus, uint8_t *dst, int64_t dst_bytes, int64_t *jpeg_size,
                         char *message, int32_t message_bytes);

/*
 * Rewrites a JPEG losslessly as a sequential, Huffman-coded JPEG with a restart marker every
 * `interval` MCUs, `interval` being the divisor of the image's MCUs per row nearest target_mcus
 * (the larger on a tie), so that every MCU row holds whole segments: libjpeg's
 * jpeg_read_coefficients, then jpeg_write_coefficients with the same quantisation tables and
 * sampling, what `jpegtran -restart` does. The coefficients do not change, so every decoder gives
 * the same pixels; a progressive file comes out sequential. The Huffman tables are the standard ones
 * (optimising them costs a second pass over every block). Every APPn and COM marker is copied, except the JFIF APP0 and Adobe APP14 that libjpeg
 * writes itself from the same values.
 *
 * Refused (STOKE_JPEG_ERROR, the message says why; the caller keeps the original): an arithmetic-
 * coded file, a CMYK or YCCK file (the region decoder decodes those whole), an image over
 * max_pixels pixels or a progressive one over max_scans scans, a progressive file whose scans
 * leave any coefficient incomplete (libjpeg smooths those blocks when it decodes, a sequential
 * copy would not), a file libjpeg warns about (damaged data: rewriting would keep the damage as
 * libjpeg read it), and output past dst_bytes. Every copy made is therefore exact by construction.
 * Writes the new file's length into *jpeg_size and STOKE_RESTART_FIELDS values into info. With
 * STOKE_RESTART_UNLESS_SEEKABLE, a sequential Huffman-coded file that has restart markers already
 * (many cameras write them) is only read to its header: STOKE_JPEG_OK, *jpeg_size 0, info filled.
 */
int32_t stoke_jpeg_add_restarts(const uint8_t *jpeg, int64_t size, int32_t target_mcus, int64_t max_pixels,
                                int32_t max_scans, int32_t flags, uint8_t *dst, int64_t dst_bytes, int64_t *jpeg_size,
                                int32_t *info, char *message, int32_t message_bytes);

/*
 * stoke_jpeg_add_restarts and stoke_decode_region of the same file at once, for a reader that has
 * just missed its copy and decodes it now: the entropy-coded data is decoded once (libjpeg's
 * buffered-image mode keeps every coefficient), the copy written from the coefficients, and the
 * region (x, y, w, h at scale_num / scale_denom, RGBX) decoded from them. On STOKE_JPEG_OK both
 * are what the two calls would give: the copy's bytes stoke_jpeg_add_restarts's, into
 * copy[0, *copy_size) with info filled; the pixels stoke_decode_region's of the original, into
 * dst, region filled (STOKE_PATH_SEQUENTIAL). On STOKE_JPEG_ERROR neither is to be used and the
 * message says why: whatever stoke_jpeg_add_restarts refuses, a sequential file with restart
 * markers (it seeks as it is), any warning, a region outside the image or dst, a copy past
 * copy_bytes. The caller then decodes the original alone, which says what is wrong, if anything.
 */
int32_t stoke_jpeg_add_restarts_decoding(const uint8_t *jpeg, int64_t size, int32_t target_mcus, int64_t max_pixels,
                                         int32_t max_scans, uint8_t *copy, int64_t copy_bytes, int64_t *copy_size,
                                         int32_t *info, int32_t scale_num, int32_t scale_denom, int32_t x, int32_t y,
                                         int32_t w, int32_t h, uint8_t *dst, int64_t dst_bytes, int32_t *region,
                                         char *message, int32_t message_bytes);

#endif
