/*
 * A test double for the subset of nvJPEG (libnvjpeg.so) that Stoke's GPU decode binds, for
 * machines without a GPU. It is linked into the CUDA driver double (cuda_double.c), whose "device
 * memory" is host memory: a decode here writes RGB pixels, decoded by libjpeg, into the
 * destinations the caller allocated with that double's cuMemAlloc.
 *
 * NVIDIA's nvjpeg.h is not on this machine image (the CUDA toolkit here has no nvJPEG), so the
 * declarations below are written from NVIDIA's documented API (the nvJPEG documentation and the
 * header shipped with CUDA 11-13, whose subset used here has not changed since CUDA 11.0). That the
 * names exist in NVIDIA's own library is checked separately, against torchvision's bundled
 * libnvjpeg where one is installed (clients/python/tests/test_nvjpeg_library.py). What this double does NOT verify:
 * anything a GPU or nvJPEG's decoders do. Its pixels are libjpeg's, so a test comparing them with
 * Stoke's CPU decode checks the wiring (which image went where, pitches, bounds, stream order),
 * never nvJPEG's pixels.
 *
 * What it models, because Stoke's GPU decode depends on it:
 *   - the hybrid split: headers and entropy data are read in the call (a bad file fails there,
 *     with NVJPEG_STATUS_BAD_JPEG), and the pixels reach the destinations later, in stream order;
 *   - the hardware backend only where the test says the device has the engine
 *     (stoke_nvjpeg_double_set_hardware, or STOKE_NVJPEG_DOUBLE_HARDWARE=1 in the environment),
 *     NVJPEG_STATUS_ARCH_MISMATCH otherwise; it takes only single-scan baseline JPEGs of 1 or 3
 *     components, not 4:1:1 or 4:1:0, as nvJPEG's does; and it reads the files again when its
 *     queued work runs (the engine's copies may be made then), counting in bitstream_changed a file
 *     that changed after the call;
 *   - nvjpegDecodeBatched needs nvjpegDecodeBatchedInitialize with the same batch size, and every
 *     destination must lie inside one live device allocation, pitch x height bytes of it;
 *   - a state is one thread's at a time (nvJPEG's thread-safety rule): a call on a state another
 *     call is still in fails with NVJPEG_STATUS_INTERNAL_ERROR and counts in state_overlaps;
 *   - failure injection through the CUDA double's stoke_double_fail, by nvJPEG function name.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

/* ------------------------------------------------------------------ the API subset, as documented */

typedef enum {
    NVJPEG_STATUS_SUCCESS = 0,
    NVJPEG_STATUS_NOT_INITIALIZED = 1,
    NVJPEG_STATUS_INVALID_PARAMETER = 2,
    NVJPEG_STATUS_BAD_JPEG = 3,
    NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
    NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
    NVJPEG_STATUS_EXECUTION_FAILED = 6,
    NVJPEG_STATUS_ARCH_MISMATCH = 7,
    NVJPEG_STATUS_INTERNAL_ERROR = 8,
    NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
} nvjpegStatus_t;

enum { NVJPEG_CSS_444 = 0, NVJPEG_CSS_422 = 1, NVJPEG_CSS_420 = 2, NVJPEG_CSS_440 = 3, NVJPEG_CSS_411 = 4,
       NVJPEG_CSS_410 = 5, NVJPEG_CSS_GRAY = 6, NVJPEG_CSS_UNKNOWN = -1 };
enum { NVJPEG_OUTPUT_YUV = 1, NVJPEG_OUTPUT_RGBI = 5 };
enum { NVJPEG_BACKEND_DEFAULT = 0, NVJPEG_BACKEND_HYBRID = 1, NVJPEG_BACKEND_GPU_HYBRID = 2,
       NVJPEG_BACKEND_HARDWARE = 3 };
enum { MAJOR_VERSION = 0, MINOR_VERSION = 1, PATCH_LEVEL = 2 }; /* libraryPropertyType */

#define NVJPEG_MAX_COMPONENT 4
typedef struct {
    unsigned char *channel[NVJPEG_MAX_COMPONENT];
    size_t pitch[NVJPEG_MAX_COMPONENT];
} nvjpegImage_t;

struct nvjpegHandle { int backend; };
struct nvjpegJpegState { int batch; int format; int busy; };
struct nvjpegJpegStream { int parsed, progressive, components, css; unsigned width, height; };
typedef struct nvjpegHandle *nvjpegHandle_t;
typedef struct nvjpegJpegState *nvjpegJpegState_t;
typedef struct nvjpegJpegStream *nvjpegJpegStream_t;

/* From cuda_double.c. */
int stoke_double_injected(const char *name);
int stoke_double_device_range_ok(uintptr_t p, size_t bytes);
int stoke_double_context_current(void);
CUresult stoke_double_enqueue_host(CUstream hStream, void (*fn)(void *), void *arg);

/* ------------------------------------------------------------------ state, knobs, statistics */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int hardware;                      /* whether the modelled device has the JPEG engine */
static int hold_create;                   /* nvjpegCreateEx waits while set (nvJPEG's opening: 0.6 s on an H200) */
static pthread_cond_t create_released = PTHREAD_COND_INITIALIZER;
static long long st_images, st_batches, st_live_handles, st_live_states, st_live_streams, st_pending,
    st_bitstream_changed, st_state_overlaps, st_whole_parses, st_header_parses;

static void count(long long *what, long long by) {
    pthread_mutex_lock(&lock);
    *what += by;
    pthread_mutex_unlock(&lock);
}

#define ENTER()                                                  \
    do {                                                         \
        int inj_ = stoke_double_injected(__func__);              \
        if (inj_ != 0) return (nvjpegStatus_t) inj_;             \
    } while (0)

/* ------------------------------------------------------------------ libjpeg, failing by longjmp */

struct failing { struct jpeg_error_mgr pub; jmp_buf back; };

static void fail_exit(j_common_ptr cinfo) {
    longjmp(((struct failing *) cinfo->err)->back, 1);
}

static void quiet(j_common_ptr cinfo, int level) {
    (void) cinfo;
    (void) level;
}

/* Header facts nvjpegGetImageInfo reports; 0 when libjpeg reads the header, else -1. */
struct header { int components, css, progressive; unsigned width, height; int widths[4], heights[4]; };

static int subsampling(const struct jpeg_decompress_struct *c) {
    if (c->num_components == 1) return NVJPEG_CSS_GRAY;
    if (c->num_components != 3) return NVJPEG_CSS_UNKNOWN;
    const jpeg_component_info *k = c->comp_info;
    if (k[1].h_samp_factor != 1 || k[1].v_samp_factor != 1 || k[2].h_samp_factor != 1 || k[2].v_samp_factor != 1)
        return NVJPEG_CSS_UNKNOWN;
    int h = k[0].h_samp_factor, v = k[0].v_samp_factor;
    if (h == 1 && v == 1) return NVJPEG_CSS_444;
    if (h == 2 && v == 1) return NVJPEG_CSS_422;
    if (h == 2 && v == 2) return NVJPEG_CSS_420;
    if (h == 1 && v == 2) return NVJPEG_CSS_440;
    if (h == 4 && v == 1) return NVJPEG_CSS_411;
    if (h == 4 && v == 2) return NVJPEG_CSS_410;
    return NVJPEG_CSS_UNKNOWN;
}

static int read_header(const unsigned char *data, size_t length, struct header *out) {
    struct jpeg_decompress_struct c;
    struct failing err;
    c.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = fail_exit;
    err.pub.emit_message = quiet;
    jpeg_create_decompress(&c);
    if (setjmp(err.back)) {
        jpeg_destroy_decompress(&c);
        return -1;
    }
    jpeg_mem_src(&c, data, (unsigned long) length);
    jpeg_read_header(&c, TRUE);
    memset(out, 0, sizeof *out);
    out->components = c.num_components;
    out->css = subsampling(&c);
    out->progressive = c.progressive_mode ? 1 : 0;
    out->width = c.image_width;
    out->height = c.image_height;
    int hmax = c.max_h_samp_factor, vmax = c.max_v_samp_factor;
    for (int i = 0; i < c.num_components && i < NVJPEG_MAX_COMPONENT; i++) {
        out->widths[i] = (int) ((c.image_width * (unsigned) c.comp_info[i].h_samp_factor + hmax - 1) / hmax);
        out->heights[i] = (int) ((c.image_height * (unsigned) c.comp_info[i].v_samp_factor + vmax - 1) / vmax);
    }
    jpeg_destroy_decompress(&c);
    return 0;
}

/* Decodes to packed RGB, width x height x 3 bytes at rgb; 0 on success. */
static int decode_rgb(const unsigned char *data, size_t length, unsigned char *rgb, unsigned width, unsigned height) {
    struct jpeg_decompress_struct c;
    struct failing err;
    c.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = fail_exit;
    err.pub.emit_message = quiet;
    jpeg_create_decompress(&c);
    if (setjmp(err.back)) {
        jpeg_destroy_decompress(&c);
        return -1;
    }
    jpeg_mem_src(&c, data, (unsigned long) length);
    jpeg_read_header(&c, TRUE);
    c.out_color_space = JCS_RGB;
    jpeg_start_decompress(&c);
    if (c.output_width != width || c.output_height != height || c.output_components != 3) {
        jpeg_destroy_decompress(&c);
        return -1;
    }
    while (c.output_scanline < c.output_height) {
        JSAMPROW row = rgb + (size_t) c.output_scanline * width * 3;
        jpeg_read_scanlines(&c, &row, 1);
    }
    jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
    return 0;
}

/* Decodes to planar YCbCr, as NVJPEG_OUTPUT_YUV writes it: each component's samples before any
   upsampling or colour conversion (libjpeg's raw data), widths[c] x heights[c] each, packed one
   after the other at planes; 0 on success. */
static int decode_planes(const unsigned char *data, size_t length, unsigned char *planes, const struct header *h) {
    struct jpeg_decompress_struct c;
    struct failing err;
    JSAMPROW *rows[NVJPEG_MAX_COMPONENT] = {0};
    unsigned char *blocks[NVJPEG_MAX_COMPONENT] = {0};
    c.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = fail_exit;
    err.pub.emit_message = quiet;
    jpeg_create_decompress(&c);
    if (setjmp(err.back)) {
        for (int k = 0; k < NVJPEG_MAX_COMPONENT; k++) {
            free(rows[k]);
            free(blocks[k]);
        }
        jpeg_destroy_decompress(&c);
        return -1;
    }
    jpeg_mem_src(&c, data, (unsigned long) length);
    jpeg_read_header(&c, TRUE);
    c.raw_data_out = TRUE;
    jpeg_start_decompress(&c);
    int n = c.num_components;
    if (n != h->components || n > NVJPEG_MAX_COMPONENT) longjmp(err.back, 1);
    /* One iMCU row of each component at a time, into a buffer as wide as its blocks. */
    for (int k = 0; k < n; k++) {
        int rc = c.comp_info[k].v_samp_factor * DCTSIZE;
        size_t pitch = (size_t) c.comp_info[k].width_in_blocks * DCTSIZE;
        blocks[k] = malloc(pitch * (size_t) rc);
        rows[k] = malloc(sizeof(JSAMPROW) * (size_t) rc);
        for (int r = 0; r < rc; r++) rows[k][r] = blocks[k] + pitch * (size_t) r;
    }
    size_t at[NVJPEG_MAX_COMPONENT];
    size_t offset = 0;
    for (int k = 0; k < n; k++) {
        at[k] = offset;
        offset += (size_t) h->widths[k] * (size_t) h->heights[k];
    }
    for (unsigned imcu = 0; c.output_scanline < c.output_height; imcu++) {
        JSAMPARRAY arrays[NVJPEG_MAX_COMPONENT];
        for (int k = 0; k < n; k++) arrays[k] = rows[k];
        jpeg_read_raw_data(&c, arrays, (JDIMENSION) (c.max_v_samp_factor * DCTSIZE));
        for (int k = 0; k < n; k++) {
            int rc = c.comp_info[k].v_samp_factor * DCTSIZE;
            for (int r = 0; r < rc; r++) {
                unsigned y = imcu * (unsigned) rc + (unsigned) r;
                if (y >= (unsigned) h->heights[k]) break;
                memcpy(planes + at[k] + (size_t) y * h->widths[k], rows[k][r], (size_t) h->widths[k]);
            }
        }
    }
    jpeg_finish_decompress(&c);
    for (int k = 0; k < n; k++) {
        free(rows[k]);
        free(blocks[k]);
    }
    jpeg_destroy_decompress(&c);
    return 0;
}

/* ------------------------------------------------------------------ library and handles */

nvjpegStatus_t nvjpegGetProperty(int type, int *value) {
    ENTER();
    if (!value) return NVJPEG_STATUS_INVALID_PARAMETER;
    /* The release the double models: nvJPEG of CUDA 13.0. */
    switch (type) {
    case MAJOR_VERSION: *value = 13; return NVJPEG_STATUS_SUCCESS;
    case MINOR_VERSION: *value = 0; return NVJPEG_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = 0; return NVJPEG_STATUS_SUCCESS;
    default: return NVJPEG_STATUS_INVALID_PARAMETER;
    }
}

nvjpegStatus_t nvjpegCreateEx(int backend, void *dev_allocator, void *pinned_allocator, unsigned int flags,
                              nvjpegHandle_t *handle) {
    ENTER();
    if (!handle || backend < NVJPEG_BACKEND_DEFAULT || backend > 5) return NVJPEG_STATUS_INVALID_PARAMETER;
    /* The double takes CUDA's own allocators only (NULL), as Stoke passes. */
    if (dev_allocator || pinned_allocator || flags > 7) return NVJPEG_STATUS_INVALID_PARAMETER;
    if (!stoke_double_context_current()) return NVJPEG_STATUS_EXECUTION_FAILED; /* no device to create on */
    if (backend == NVJPEG_BACKEND_HARDWARE && !hardware) return NVJPEG_STATUS_ARCH_MISMATCH;
    if (backend > NVJPEG_BACKEND_HARDWARE) return NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED; /* device bitstreams */
    pthread_mutex_lock(&lock);
    while (hold_create) pthread_cond_wait(&create_released, &lock);
    pthread_mutex_unlock(&lock);
    struct nvjpegHandle *h = calloc(1, sizeof *h);
    h->backend = backend;
    count(&st_live_handles, 1);
    *handle = h;
    return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegDestroy(nvjpegHandle_t handle) {
    ENTER();
    if (!handle) return NVJPEG_STATUS_INVALID_PARAMETER;
    free(handle);
    count(&st_live_handles, -1);
    return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegJpegStateCreate(nvjpegHandle_t handle, nvjpegJpegState_t *state) {
    ENTER();
    if (!handle || !state) return NVJPEG_STATUS_INVALID_PARAMETER;
    *state = calloc(1, sizeof **state);
    count(&st_live_states, 1);
    return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegJpegStateDestroy(nvjpegJpegState_t state) {
    ENTER();
    if (!state) return NVJPEG_STATUS_INVALID_PARAMETER;
    free(state);
    count(&st_live_states, -1);
    return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegGetImageInfo(nvjpegHandle_t handle, const unsigned char *data, size_t length, int *nComponents,
                                  int *subsampling_out, int *widths, int *heights) {
    ENTER();
    if (!handle || !data || !nComponents || !subsampling_out || !widths || !heights)
        return NVJPEG_STATUS_INVALID_PARAMETER;
    struct header h;
    if (read_header(data, length, &h) != 0) return NVJPEG_STATUS_BAD_JPEG;
    *nComponents = h.components;
    *subsampling_out = h.css;
    for (int i = 0; i < NVJPEG_MAX_COMPONENT; i++) {
        widths[i] = h.widths[i];
        heights[i] = h.heights[i];
    }
    return NVJPEG_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ parsed streams (for the hardware check) */

nvjpegStatus_t nvjpegJpegStreamCreate(nvjpegHandle_t handle, nvjpegJpegStream_t *stream) {
    ENTER();
    if (!handle || !stream) return NVJPEG_STATUS_INVALID_PARAMETER;
    *stream = calloc(1, sizeof **stream);
    count(&st_live_streams, 1);
    return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegJpegStreamDestroy(nvjpegJpegStream_t stream) {
    ENTER();
    if (!stream) return NVJPEG_STATUS_INVALID_PARAMETER;
    free(stream);
    count(&st_live_streams, -1);
    return NVJPEG_STATUS_SUCCESS;
}

/* Both parse the headers here (what the double's support check needs); nvJPEG's own whole parse
 * also walks the entropy-coded data. Each counts its calls, so that a test can tell which was made. */
static nvjpegStatus_t parse_header(nvjpegHandle_t handle, const unsigned char *data, size_t length,
                                   nvjpegJpegStream_t stream) {
    if (!handle || !data || !stream) return NVJPEG_STATUS_INVALID_PARAMETER;
    struct header h;
    if (read_header(data, length, &h) != 0) return NVJPEG_STATUS_BAD_JPEG;
    stream->parsed = 1;
    stream->progressive = h.progressive;
    stream->components = h.components;
    stream->css = h.css;
    stream->width = h.width;
    stream->height = h.height;
    return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegJpegStreamParse(nvjpegHandle_t handle, const unsigned char *data, size_t length,
                                     int save_metadata, int save_stream, nvjpegJpegStream_t stream) {
    ENTER();
    (void) save_metadata;
    (void) save_stream;
    count(&st_whole_parses, 1);
    return parse_header(handle, data, length, stream);
}

nvjpegStatus_t nvjpegJpegStreamParseHeader(nvjpegHandle_t handle, const unsigned char *data, size_t length,
                                           nvjpegJpegStream_t stream) {
    ENTER();
    count(&st_header_parses, 1);
    return parse_header(handle, data, length, stream);
}

static int hardware_takes(int progressive, int components, int css) {
    return !progressive && (components == 1 || (components == 3 && css != NVJPEG_CSS_411 && css != NVJPEG_CSS_410
                                                && css != NVJPEG_CSS_UNKNOWN));
}

/* is_supported: 0 where the handle's batched decode takes the stream (nvJPEG's convention). */
nvjpegStatus_t nvjpegDecodeBatchedSupported(nvjpegHandle_t handle, nvjpegJpegStream_t stream, int *is_supported) {
    ENTER();
    if (!handle || !stream || !stream->parsed || !is_supported) return NVJPEG_STATUS_INVALID_PARAMETER;
    int takes = handle->backend == NVJPEG_BACKEND_HARDWARE
            ? hardware_takes(stream->progressive, stream->components, stream->css)
            : (stream->components == 1 || stream->components == 3);
    *is_supported = takes ? 0 : 1;
    return NVJPEG_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ batched decode */

/* Takes the state for this call: 0, or -1 (counted) where another call is in it. */
static int enter_state(nvjpegJpegState_t state) {
    if (__atomic_exchange_n(&state->busy, 1, __ATOMIC_ACQ_REL)) {
        count(&st_state_overlaps, 1);
        return -1;
    }
    return 0;
}

static void leave_state(nvjpegJpegState_t state) {
    __atomic_store_n(&state->busy, 0, __ATOMIC_RELEASE);
}

nvjpegStatus_t nvjpegDecodeBatchedInitialize(nvjpegHandle_t handle, nvjpegJpegState_t state, int batch_size,
                                             int max_cpu_threads, int output_format) {
    ENTER();
    if (!handle || !state || batch_size <= 0 || max_cpu_threads <= 0) return NVJPEG_STATUS_INVALID_PARAMETER;
    if (output_format != NVJPEG_OUTPUT_RGBI && output_format != NVJPEG_OUTPUT_YUV)
        return NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED; /* the double's two */
    if (enter_state(state) != 0) return NVJPEG_STATUS_INTERNAL_ERROR;
    state->batch = batch_size;
    state->format = output_format;
    leave_state(state);
    return NVJPEG_STATUS_SUCCESS;
}

/* The device half of a batch: staged pixels copied into the destinations, in stream order. */
/* On the hardware backend the double also reads every file again on the stream, as the engine may
   (NVIDIA does not promise its copies are made when the call returns): src, len and sum (a checksum
   taken in the call) let it count a file that changed before its queued work ran. */
struct job {
    int n;
    int format;                 /* NVJPEG_OUTPUT_RGBI, or _YUV: staged holds each component's plane, packed */
    unsigned char **staged;
    unsigned *width, *height;
    struct header *planes;      /* per image, with _YUV: its components' sizes */
    nvjpegImage_t *dst;
    const unsigned char **src;
    size_t *len;
    unsigned long long *sum;
};

static unsigned long long fnv(const unsigned char *p, size_t n) {
    unsigned long long h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static void free_job(struct job *j) {
    for (int i = 0; i < j->n; i++) free(j->staged[i]);
    free(j->src);
    free(j->len);
    free(j->sum);
    free(j->staged);
    free(j->width);
    free(j->height);
    free(j->planes);
    free(j->dst);
    free(j);
}

static void run_job(void *arg) {
    struct job *j = arg;
    if (j->src) {
        for (int i = 0; i < j->n; i++)
            if (fnv(j->src[i], j->len[i]) != j->sum[i]) count(&st_bitstream_changed, 1);
    }
    for (int i = 0; i < j->n; i++) {
        if (j->format == NVJPEG_OUTPUT_YUV) {
            const struct header *h = &j->planes[i];
            const unsigned char *from = j->staged[i];
            for (int k = 0; k < h->components; k++) {
                size_t row = (size_t) h->widths[k];
                for (int y = 0; y < h->heights[k]; y++, from += row)
                    memcpy(j->dst[i].channel[k] + (size_t) y * j->dst[i].pitch[k], from, row);
            }
            continue;
        }
        size_t row = (size_t) j->width[i] * 3;
        for (unsigned y = 0; y < j->height[i]; y++)
            memcpy(j->dst[i].channel[0] + (size_t) y * j->dst[i].pitch[0], j->staged[i] + y * row, row);
    }
    count(&st_images, j->n);
    count(&st_pending, -1);
    free_job(j);
}

static nvjpegStatus_t decode_batched(nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *const *data,
                                     const size_t *lengths, nvjpegImage_t *destinations, CUstream stream);

/* Whether every plane of an image's NVJPEG_OUTPUT_YUV destination lies in device memory, each row
   pitch[k] bytes apart and widths[k] wide (a GPU would write out of bounds, or fault, where not). */
static int planes_fit(const struct header *h, const nvjpegImage_t *d) {
    for (int k = 0; k < h->components; k++) {
        if (!d->channel[k] || d->pitch[k] < (size_t) h->widths[k] || h->widths[k] <= 0 || h->heights[k] <= 0
            || !stoke_double_device_range_ok((uintptr_t) d->channel[k],
                                             d->pitch[k] * (size_t) (h->heights[k] - 1) + (size_t) h->widths[k]))
            return 0;
    }
    return 1;
}

nvjpegStatus_t nvjpegDecodeBatched(nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *const *data,
                                   const size_t *lengths, nvjpegImage_t *destinations, CUstream stream) {
    ENTER();
    if (!handle || !state || !data || !lengths || !destinations) return NVJPEG_STATUS_INVALID_PARAMETER;
    if (enter_state(state) != 0) return NVJPEG_STATUS_INTERNAL_ERROR;
    nvjpegStatus_t status = decode_batched(handle, state, data, lengths, destinations, stream);
    leave_state(state);
    return status;
}

static nvjpegStatus_t decode_batched(nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *const *data,
                                     const size_t *lengths, nvjpegImage_t *destinations, CUstream stream) {
    if (state->batch <= 0) return NVJPEG_STATUS_NOT_INITIALIZED;
    int n = state->batch;
    struct job *j = calloc(1, sizeof *j);
    j->staged = calloc((size_t) n, sizeof *j->staged);
    j->width = calloc((size_t) n, sizeof *j->width);
    j->height = calloc((size_t) n, sizeof *j->height);
    j->dst = calloc((size_t) n, sizeof *j->dst);
    j->planes = calloc((size_t) n, sizeof *j->planes);
    j->format = state->format;
    if (handle->backend == NVJPEG_BACKEND_HARDWARE) {
        j->src = calloc((size_t) n, sizeof *j->src);
        j->len = calloc((size_t) n, sizeof *j->len);
        j->sum = calloc((size_t) n, sizeof *j->sum);
    }
    nvjpegStatus_t status = NVJPEG_STATUS_SUCCESS;
    /* The host half, in the call: every header and all entropy data read before any pixel moves. */
    for (int i = 0; i < n && status == NVJPEG_STATUS_SUCCESS; i++) {
        j->n = i + 1;
        struct header h;
        if (!data[i] || read_header(data[i], lengths[i], &h) != 0) {
            status = NVJPEG_STATUS_BAD_JPEG;
        } else if ((h.components != 1 && h.components != 3)
                   || (handle->backend == NVJPEG_BACKEND_HARDWARE && !hardware_takes(h.progressive, h.components, h.css))) {
            status = NVJPEG_STATUS_JPEG_NOT_SUPPORTED;
        } else if (j->format == NVJPEG_OUTPUT_RGBI
                   && (!destinations[i].channel[0] || destinations[i].pitch[0] < (size_t) h.width * 3
                       || !stoke_double_device_range_ok((uintptr_t) destinations[i].channel[0],
                                                        destinations[i].pitch[0] * (h.height - 1) + (size_t) h.width * 3))) {
            /* A GPU would write out of bounds (or fault); the double refuses instead. */
            status = NVJPEG_STATUS_INVALID_PARAMETER;
        } else if (j->format == NVJPEG_OUTPUT_YUV && !planes_fit(&h, &destinations[i])) {
            status = NVJPEG_STATUS_INVALID_PARAMETER;
        } else if (j->format == NVJPEG_OUTPUT_YUV) {
            j->width[i] = h.width;
            j->height[i] = h.height;
            j->planes[i] = h;
            j->dst[i] = destinations[i];
            if (j->src) {
                j->src[i] = data[i];
                j->len[i] = lengths[i];
                j->sum[i] = fnv(data[i], lengths[i]);
            }
            size_t bytes = 0;
            for (int k = 0; k < h.components; k++) bytes += (size_t) h.widths[k] * (size_t) h.heights[k];
            j->staged[i] = malloc(bytes);
            if (decode_planes(data[i], lengths[i], j->staged[i], &h) != 0) status = NVJPEG_STATUS_BAD_JPEG;
        } else {
            j->width[i] = h.width;
            j->height[i] = h.height;
            j->dst[i] = destinations[i];
            if (j->src) {
                j->src[i] = data[i];
                j->len[i] = lengths[i];
                j->sum[i] = fnv(data[i], lengths[i]);
            }
            j->staged[i] = malloc((size_t) h.width * h.height * 3);
            if (decode_rgb(data[i], lengths[i], j->staged[i], h.width, h.height) != 0) status = NVJPEG_STATUS_BAD_JPEG;
        }
    }
    if (status != NVJPEG_STATUS_SUCCESS) {
        free_job(j);
        return status;
    }
    count(&st_batches, 1);
    count(&st_pending, 1);
    if (stoke_double_enqueue_host(stream, run_job, j) != CUDA_SUCCESS) {
        count(&st_pending, -1);
        free_job(j);
        return NVJPEG_STATUS_EXECUTION_FAILED;
    }
    return NVJPEG_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ control, for tests only */

/** Clears statistics and knobs (not live objects). */
void stoke_nvjpeg_double_reset(void) {
    pthread_mutex_lock(&lock);
    hardware = 0;
    hold_create = 0;
    pthread_cond_broadcast(&create_released);
    st_images = st_batches = st_bitstream_changed = st_state_overlaps = st_whole_parses = st_header_parses = 0;
    pthread_mutex_unlock(&lock);
}

/** Whether the modelled device has nvJPEG's hardware engine (A100, H100, H200 ...); default 0. */
void stoke_nvjpeg_double_set_hardware(int on) {
    hardware = on;
}

/** While on, a successful nvjpegCreateEx waits (nvJPEG's own opening takes 0.6 s on an H200); off lets it go. */
void stoke_nvjpeg_double_hold_create(int on) {
    pthread_mutex_lock(&lock);
    hold_create = on;
    if (!on) pthread_cond_broadcast(&create_released);
    pthread_mutex_unlock(&lock);
}

/* STOKE_NVJPEG_DOUBLE_HARDWARE=1: the engine from the start, for a producer in another process
 * (stoke serve under a Python test), where no test can call the setter above. */
__attribute__((constructor)) static void hardware_from_environment(void) {
    const char *on = getenv("STOKE_NVJPEG_DOUBLE_HARDWARE");
    if (on != NULL && strcmp(on, "1") == 0) hardware = 1;
}

/** A statistic by name, or -1 for an unknown name. */
long long stoke_nvjpeg_double_stat(const char *name) {
    long long v = -1;
    pthread_mutex_lock(&lock);
    if (!strcmp(name, "nvjpeg_images")) v = st_images;
    else if (!strcmp(name, "nvjpeg_batches")) v = st_batches;
    else if (!strcmp(name, "nvjpeg_pending")) v = st_pending;
    else if (!strcmp(name, "bitstream_changed")) v = st_bitstream_changed;
    else if (!strcmp(name, "state_overlaps")) v = st_state_overlaps;
    else if (!strcmp(name, "whole_parses")) v = st_whole_parses;
    else if (!strcmp(name, "header_parses")) v = st_header_parses;
    else if (!strcmp(name, "live_nvjpeg_handles")) v = st_live_handles;
    else if (!strcmp(name, "live_nvjpeg_states")) v = st_live_states;
    else if (!strcmp(name, "live_nvjpeg_streams")) v = st_live_streams;
    pthread_mutex_unlock(&lock);
    return v;
}
