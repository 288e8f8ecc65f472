/*
 * A test double for the CUDA driver API (libcuda.so.1), for machines without a GPU.
 *
 * It is compiled against NVIDIA's own cuda.h, and every function is defined under the name the
 * API uses (cuMemAlloc, cuMemcpyHtoDAsync ...): cuda.h's #defines turn those into the versioned
 * symbols (cuMemAlloc_v2 ...) and its prototypes make the compiler check every signature. So a
 * Java binding that loads this library and finds its symbols has used the names and types NVIDIA
 * declares. What it does NOT verify: anything a GPU does. "Device memory" is host memory, copies are
 * memcpy, and kernels are chosen by the kernel's name (see KERNELS below) and run on the host:
 * the device kernels' own CUDA source compiled by the host's C++ compiler (kernels_host.cpp),
 * over the launch's grid, except stoke_spin (PTX timer assembly), which sleeps. The PTX itself is
 * only checked to declare the entry point, never executed.
 *
 * Behaviour it does model, because Stoke's GPU stage depends on it:
 *   - cuInit before anything; a current context (per thread) before context-bound calls;
 *   - one worker thread per stream running its work in FIFO order, truly asynchronously
 *     (copies and kernels can be slowed down on request to widen race windows);
 *   - events that complete in stream order, cuEventQuery/Synchronize/ElapsedTime, cuStreamWaitEvent;
 *   - registered (pinned) host ranges, with a count of async copies from unpinned memory;
 *   - per copy, a checksum of the source at enqueue time compared with the bytes that arrived:
 *     a mismatch means the host buffer changed before the copy completed;
 *   - failure injection: the nth call to a named function returns a chosen CUresult.
 * Control and statistics go through the exported stoke_double_* functions at the end.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

struct CUctx_st { int device; };
struct CUmod_st { char *image; };
struct CUfunc_st { int kernel; };

typedef struct CUevent_st {
    unsigned flags;
    uint64_t recorded;   /* number of records issued */
    uint64_t completed;  /* the latest record that has completed */
    struct timespec when;
} event_t;

enum { OP_COPY, OP_RECORD, OP_WAIT, OP_KERNEL, OP_HOST };
enum { K_NORMALIZE = 1, K_SPIN = 2, K_RESAMPLE_H = 3, K_RESAMPLE_V = 4, K_YCC = 5 };

typedef struct op {
    int kind;
    struct op *next;
    /* copy */
    void *dst;
    const void *src;
    size_t bytes;
    uint64_t enqueue_sum;
    int device_copy; /* device to device: no checksum at enqueue, counted apart */
    /* record / wait */
    event_t *event;
    uint64_t seq;
    /* kernel, arguments copied at launch as the driver does */
    int kernel;
    const uint8_t *k_src;
    float *k_dst;
    unsigned k_pixels, k_hw;
    float k_mean[3], k_std[3];
    unsigned long long k_nanos;
    /* the resample passes: the jobs and their tables */
    const struct resize_job *k_jobs;
    const struct ycc_job *k_ycc;
    const int32_t *k_tables;
    /* the launch's grid and block, as the kernels see them (gridDim, blockDim) */
    unsigned k_grid[3], k_block[3];
    /* host work of a library double (nvjpeg_double.c) run in stream order */
    void (*host_fn)(void *);
    void *host_arg;
} op_t;

typedef struct CUstream_st {
    pthread_t thread;
    pthread_cond_t wake;
    op_t *head, *tail;
    int pending;   /* queued or running */
    int stopping;
} stream_t;

/* fd: a device allocation's memfd (its IPC handle names it), -1 for other ranges; mapped: the
   bytes mapped, for munmap (an allocation rounded to pages, or a mapping opened by IPC). */
typedef struct range { uintptr_t start; size_t bytes; int host_alloc; int fd; size_t mapped; struct range *next; } range_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER; /* broadcast whenever an op completes */
static int initialised;
static int device_count = 1;
static int primary_retains;
static struct CUctx_st primary = {0};
static __thread CUcontext current;
static range_t *device_allocs, *pinned, *ipc_opened;
static long live_streams, live_events, live_modules;

/* statistics */
static long long st_async_copies, st_pageable_async_copies, st_checksum_mismatches, st_sync_copies;
static long long st_bytes_async, st_kernels, st_inflight_copies, st_max_inflight_copies;
static long long st_registrations, st_completed_async_copies, st_device_copies;

/* knobs */
static long copy_delay_us;
static int verify = 1;
static char fail_name[64];
static int fail_countdown;
static CUresult fail_result;

static CUresult injected(const char *name) {
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (fail_countdown > 0 && strcmp(fail_name, name) == 0 && --fail_countdown == 0) {
        r = fail_result;
        fail_name[0] = 0;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

#define ENTER(needs_context)                                                       \
    do {                                                                           \
        CUresult inj_ = injected(__func__);                                        \
        if (inj_ != CUDA_SUCCESS) return inj_;                                     \
        if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;                       \
        if ((needs_context) && (current == NULL || primary_retains <= 0))          \
            return CUDA_ERROR_INVALID_CONTEXT;                                     \
    } while (0)

static uint64_t checksum(const void *p, size_t n) {
    /* FNV-1a over 8-byte words, then the tail: cheap, and any changed byte changes it. */
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ULL;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static range_t *find_range(range_t *list, uintptr_t p, size_t bytes) {
    for (range_t *r = list; r; r = r->next)
        if (p >= r->start && p + bytes <= r->start + r->bytes && p + bytes >= p) return r;
    return NULL;
}

/* The range based at p, or NULL. (find_range(list, p, 0) may find one that ends at p: mappings
   are often adjacent.) */
static range_t *find_base(range_t *list, uintptr_t p) {
    for (range_t *r = list; r; r = r->next)
        if (r->start == p) return r;
    return NULL;
}

static void add_range(range_t **list, uintptr_t p, size_t bytes, int host_alloc) {
    range_t *r = malloc(sizeof *r);
    r->start = p;
    r->bytes = bytes;
    r->host_alloc = host_alloc;
    r->fd = -1;
    r->mapped = 0;
    r->next = *list;
    *list = r;
}

static int remove_range(range_t **list, uintptr_t p) {
    for (range_t **pp = list; *pp; pp = &(*pp)->next)
        if ((*pp)->start == p) {
            range_t *r = *pp;
            *pp = r->next;
            free(r);
            return 1;
        }
    return 0;
}

static void sleep_us(long us) {
    if (us > 0) {
        struct timespec t = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&t, NULL);
    }
}

/* The normalise kernel's math, in the same order and precision as native/cuda/normalize.cu:
   each operation single precision, rounded to nearest, no contraction. */
/* The device kernels' own source, compiled for the host (kernels_host.cpp): run over the launch's grid. */
void stoke_host_normalize(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          const unsigned char *src, float *dst, unsigned pixels, unsigned hw, const float mean[3],
                          const float std[3]);
void stoke_host_resample(int vertical, unsigned z, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, const void *jobs, const int *tables);

static void normalize_kernel(const op_t *o) {
    stoke_host_normalize(o->k_grid[0], o->k_grid[1], o->k_grid[2], o->k_block[0], o->k_block[1], o->k_block[2],
                         o->k_src, o->k_dst, o->k_pixels, o->k_hw, o->k_mean, o->k_std);
}

/* native/cuda/resize.cu's job, field for field (64 bytes): read here to check its ranges. */
struct resize_job {
    uint64_t src;
    int64_t src_pitch;
    uint64_t tmp, dst;
    int32_t y_first, rows, cols, out_rows, h_taps, v_taps, tables, unused;
};

static int resample_ranges_ok(const struct resize_job *j, const int32_t *tables, int vertical);
static long long st_kernel_faults;

/* resize.cu's two kernels, job by job (blockIdx.z): a job whose ranges a GPU would fault on is
   counted and left unwritten; the others run over the launch's grid (a grid too small for a job
   leaves the rest unwritten, as on a GPU). */
static void resample_kernel(const op_t *o, int vertical) {
    for (unsigned z = 0; z < o->k_grid[2]; z++) {
        if (!resample_ranges_ok(&o->k_jobs[z], o->k_tables, vertical)) {
            pthread_mutex_lock(&lock);
            st_kernel_faults++;
            pthread_mutex_unlock(&lock);
            continue;
        }
        stoke_host_resample(vertical, z, o->k_grid[0], o->k_grid[1], o->k_grid[2], o->k_block[0], o->k_block[1],
                            o->k_block[2], o->k_jobs, o->k_tables);
    }
}

/* native/cuda/ycc.cu's job, field for field (64 bytes): read here to check its ranges. */
struct ycc_job {
    uint64_t y, cb, cr, dst;
    int32_t y_pitch, c_pitch, width, height, c_width, c_height, h_factor, v_factor;
};

void stoke_host_ycc(unsigned z, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                    const void *jobs);

static int device_range_ok(CUdeviceptr d, size_t bytes);

/* Every byte a colour job reads or writes lies in live device memory (a GPU would fault). */
static int ycc_ranges_ok(const struct ycc_job *j) {
    if (j->width <= 0 || j->height <= 0 || j->y_pitch < j->width) return 0;
    if (!device_range_ok(j->y, (size_t) (j->height - 1) * (size_t) j->y_pitch + (size_t) j->width)) return 0;
    if (!device_range_ok(j->dst, (size_t) j->width * j->height * 3)) return 0;
    if (j->h_factor == 0) return 1;
    if (j->c_width <= 0 || j->c_height <= 0 || j->c_pitch < j->c_width || j->v_factor <= 0
        || (size_t) j->c_width * j->h_factor < (size_t) j->width || (size_t) j->c_height * j->v_factor < (size_t) j->height)
        return 0;
    size_t plane = (size_t) (j->c_height - 1) * (size_t) j->c_pitch + (size_t) j->c_width;
    return device_range_ok(j->cb, plane) && device_range_ok(j->cr, plane);
}

/* ycc.cu's kernel, job by job, as resample_kernel: a job a GPU would fault on is counted, not run. */
static void ycc_kernel(const op_t *o) {
    for (unsigned z = 0; z < o->k_grid[2]; z++) {
        if (!ycc_ranges_ok(&o->k_ycc[z])) {
            pthread_mutex_lock(&lock);
            st_kernel_faults++;
            pthread_mutex_unlock(&lock);
            continue;
        }
        stoke_host_ycc(z, o->k_grid[0], o->k_grid[1], o->k_grid[2], o->k_block[0], o->k_block[1], o->k_block[2],
                       o->k_ycc);
    }
}

static void run(op_t *o) {
    switch (o->kind) {
    case OP_COPY: {
        sleep_us(copy_delay_us);
        memcpy(o->dst, o->src, o->bytes);
        if (verify && !o->device_copy && checksum(o->dst, o->bytes) != o->enqueue_sum) {
            pthread_mutex_lock(&lock);
            st_checksum_mismatches++;
            pthread_mutex_unlock(&lock);
        }
        pthread_mutex_lock(&lock);
        st_inflight_copies--;
        if (!o->device_copy) st_completed_async_copies++;
        pthread_mutex_unlock(&lock);
        break;
    }
    case OP_RECORD:
        pthread_mutex_lock(&lock);
        clock_gettime(CLOCK_MONOTONIC, &o->event->when);
        if (o->seq > o->event->completed) o->event->completed = o->seq;
        pthread_cond_broadcast(&progress);
        pthread_mutex_unlock(&lock);
        break;
    case OP_WAIT:
        pthread_mutex_lock(&lock);
        while (o->event->completed < o->seq) pthread_cond_wait(&progress, &lock);
        pthread_mutex_unlock(&lock);
        break;
    case OP_KERNEL:
        if (o->kernel == K_NORMALIZE) normalize_kernel(o);
        else if (o->kernel == K_RESAMPLE_H || o->kernel == K_RESAMPLE_V) resample_kernel(o, o->kernel == K_RESAMPLE_V);
        else if (o->kernel == K_YCC) ycc_kernel(o);
        else sleep_us((long) (o->k_nanos / 1000));
        break;
    case OP_HOST:
        o->host_fn(o->host_arg);
        break;
    }
}

static void *stream_main(void *arg) {
    stream_t *s = arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (s->head == NULL && !s->stopping) pthread_cond_wait(&s->wake, &lock);
        if (s->head == NULL) break;
        op_t *o = s->head;
        s->head = o->next;
        if (s->head == NULL) s->tail = NULL;
        pthread_mutex_unlock(&lock);
        run(o);
        free(o);
        pthread_mutex_lock(&lock);
        s->pending--;
        pthread_cond_broadcast(&progress);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Appends under the lock; the caller holds it. */
static void enqueue(stream_t *s, op_t *o) {
    o->next = NULL;
    if (s->tail) s->tail->next = o;
    else s->head = o;
    s->tail = o;
    s->pending++;
    pthread_cond_signal(&s->wake);
}

/* ------------------------------------------------------------------ errors */

static const struct { CUresult code; const char *name, *text; } ERRORS[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == error) { *pStr = ERRORS[i].name; return CUDA_SUCCESS; }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == error) { *pStr = ERRORS[i].text; return CUDA_SUCCESS; }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------ init, devices, contexts */

CUresult CUDAAPI cuInit(unsigned int Flags) {
    CUresult r = injected(__func__);
    if (r != CUDA_SUCCESS) return r;
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    initialised = 1;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
    ENTER(0);
    *count = device_count;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
    ENTER(0);
    if (ordinal < 0 || ordinal >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
    ENTER(0);
    if (dev < 0 || dev >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t) len, "Stoke CUDA test double (host memory, no GPU)");
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
    ENTER(0);
    if (dev < 0 || dev >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t) 1 << 30;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    ENTER(0);
    if (dev < 0 || dev >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 7; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 5; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
    ENTER(0);
    if (dev < 0 || dev >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t) len, "0000:00:%02x.0", dev);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    ENTER(0);
    if (dev != 0 || dev >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    primary_retains++;
    pthread_mutex_unlock(&lock);
    *pctx = &primary;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
    ENTER(0);
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    CUresult r = primary_retains > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (primary_retains > 0) primary_retains--;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    ENTER(0);
    if (ctx != NULL && ctx != &primary) return CUDA_ERROR_INVALID_CONTEXT;
    current = ctx;
    return CUDA_SUCCESS;
}

/* Every stream, so that cuCtxSynchronize can wait for all of them. */
#define MAX_STREAMS 256
static stream_t *streams[MAX_STREAMS];

CUresult CUDAAPI cuCtxSynchronize(void) {
    ENTER(1);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_STREAMS; i++)
        while (streams[i] && streams[i]->pending > 0) pthread_cond_wait(&progress, &lock);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ host memory */

CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) {
    ENTER(1);
    if (!p || bytesize == 0 || (Flags & ~0xfu)) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (range_t *r = pinned; r; r = r->next)
        if ((uintptr_t) p < r->start + r->bytes && r->start < (uintptr_t) p + bytesize) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
        }
    add_range(&pinned, (uintptr_t) p, bytesize, 0);
    st_registrations++;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostUnregister(void *p) {
    ENTER(1);
    pthread_mutex_lock(&lock);
    range_t *r = find_base(pinned, (uintptr_t) p);
    int ok = r && !r->host_alloc && remove_range(&pinned, (uintptr_t) p);
    pthread_mutex_unlock(&lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
    ENTER(1);
    if (!pp || bytesize == 0 || (Flags & ~0xfu)) return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytesize) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    add_range(&pinned, (uintptr_t) p, bytesize, 1);
    pthread_mutex_unlock(&lock);
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeHost(void *p) {
    ENTER(1);
    pthread_mutex_lock(&lock);
    range_t *r = find_base(pinned, (uintptr_t) p);
    int ok = r && r->host_alloc && remove_range(&pinned, (uintptr_t) p);
    pthread_mutex_unlock(&lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    free(p);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ device memory */

/* Device memory is a shared mapping of a memfd, so that another process can open it by IPC
   (cuIpcGetMemHandle's handle names this process and the fd, cuIpcOpenMemHandle maps
   /proc/PID/fd/FD): the cross-process hand-off is checked on the host, as the rest is. */
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
    ENTER(1);
    if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    size_t page = (size_t) sysconf(_SC_PAGESIZE);
    size_t mapped = (bytesize + page - 1) / page * page;
    int fd = memfd_create("stoke-cuda-double", MFD_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = ftruncate(fd, (off_t) mapped) == 0 ? mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(p, 0xA5, bytesize); /* device memory starts as garbage, not zeros */
    pthread_mutex_lock(&lock);
    add_range(&device_allocs, (uintptr_t) p, bytesize, 0);
    device_allocs->fd = fd;
    device_allocs->mapped = mapped;
    pthread_mutex_unlock(&lock);
    *dptr = (CUdeviceptr) (uintptr_t) p;
    return CUDA_SUCCESS;
}

static CUresult drain_all_streams(void);

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
    ENTER(1);
    /* As CUDA's, the free waits for the device's queued work (which may still use the memory). */
    drain_all_streams();
    pthread_mutex_lock(&lock);
    range_t *r = find_base(device_allocs, (uintptr_t) dptr);
    int ok = r && r->fd >= 0;
    int fd = ok ? r->fd : -1;
    size_t mapped = ok ? r->mapped : 0;
    if (ok) remove_range(&device_allocs, (uintptr_t) dptr);
    pthread_mutex_unlock(&lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    munmap((void *) (uintptr_t) dptr, mapped);
    close(fd);
    return CUDA_SUCCESS;
}

/* The double's IPC handle: this process, the allocation's memfd and its size (CUDA's is opaque). */
struct ipc_handle { char magic[8]; int32_t pid; int32_t fd; uint64_t bytes; uint64_t mapped; };
_Static_assert(sizeof(struct ipc_handle) <= CU_IPC_HANDLE_SIZE, "the double's IPC handle fits CUDA's");
static const char IPC_MAGIC[8] = {'s', 't', 'o', 'k', 'e', 'i', 'p', 'c'};

CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
    ENTER(1);
    if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    range_t *r = find_base(device_allocs, (uintptr_t) dptr);
    /* As CUDA's: the allocation's base only (an offset into it is the importer's to add). */
    int ok = r && r->fd >= 0;
    struct ipc_handle h = {{0}, 0, 0, 0, 0};
    if (ok) {
        memcpy(h.magic, IPC_MAGIC, sizeof h.magic);
        h.pid = (int32_t) getpid();
        h.fd = r->fd;
        h.bytes = r->bytes;
        h.mapped = r->mapped;
    }
    pthread_mutex_unlock(&lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    memset(pHandle, 0, sizeof *pHandle);
    memcpy(pHandle, &h, sizeof h);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
    ENTER(1);
    struct ipc_handle h;
    memcpy(&h, &handle, sizeof h);
    if (!pdptr || Flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS || memcmp(h.magic, IPC_MAGIC, sizeof h.magic) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* CUDA refuses a handle from the process itself. */
    if (h.pid == (int32_t) getpid()) return CUDA_ERROR_INVALID_CONTEXT;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int) h.pid, (int) h.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_INVALID_HANDLE; /* the exporter is gone, or freed it */
    void *p = mmap(NULL, h.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    add_range(&ipc_opened, (uintptr_t) p, h.bytes, 0);
    ipc_opened->mapped = h.mapped;
    /* Device memory like the process's own: copies and kernels may use it. */
    add_range(&device_allocs, (uintptr_t) p, h.bytes, 0);
    pthread_mutex_unlock(&lock);
    *pdptr = (CUdeviceptr) (uintptr_t) p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr) {
    ENTER(1);
    drain_all_streams();
    pthread_mutex_lock(&lock);
    range_t *r = find_base(ipc_opened, (uintptr_t) dptr);
    int ok = r != NULL;
    size_t mapped = ok ? r->mapped : 0;
    if (ok) {
        remove_range(&ipc_opened, (uintptr_t) dptr);
        remove_range(&device_allocs, (uintptr_t) dptr);
    }
    pthread_mutex_unlock(&lock);
    if (!ok) return CUDA_ERROR_INVALID_VALUE;
    munmap((void *) (uintptr_t) dptr, mapped);
    return CUDA_SUCCESS;
}

static int device_range_ok(CUdeviceptr d, size_t bytes) {
    pthread_mutex_lock(&lock);
    int ok = find_range(device_allocs, (uintptr_t) d, bytes) != NULL;
    pthread_mutex_unlock(&lock);
    return ok;
}

static CUresult drain_all_streams(void) {
    /* The legacy default stream waits for blocking streams; the double keeps it simple and
       synchronous copies wait for every stream, which is at least as strict. */
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_STREAMS; i++)
        while (streams[i] && streams[i]->pending > 0) pthread_cond_wait(&progress, &lock);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    ENTER(1);
    if (!srcHost || !device_range_ok(dstDevice, ByteCount)) return CUDA_ERROR_INVALID_VALUE;
    drain_all_streams();
    sleep_us(copy_delay_us);
    memcpy((void *) (uintptr_t) dstDevice, srcHost, ByteCount);
    pthread_mutex_lock(&lock);
    st_sync_copies++;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    ENTER(1);
    if (!dstHost || !device_range_ok(srcDevice, ByteCount)) return CUDA_ERROR_INVALID_VALUE;
    drain_all_streams();
    memcpy(dstHost, (void *) (uintptr_t) srcDevice, ByteCount);
    pthread_mutex_lock(&lock);
    st_sync_copies++;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static int stream_ok(CUstream s) {
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i] == s) return 1;
    return 0;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream) {
    ENTER(1);
    if (!srcHost || !device_range_ok(dstDevice, ByteCount)) return CUDA_ERROR_INVALID_VALUE;
    if (hStream == NULL) return cuMemcpyHtoD(dstDevice, srcHost, ByteCount);
    op_t *o = calloc(1, sizeof *o);
    o->kind = OP_COPY;
    o->dst = (void *) (uintptr_t) dstDevice;
    o->src = srcHost;
    o->bytes = ByteCount;
    o->enqueue_sum = verify ? checksum(srcHost, ByteCount) : 0;
    pthread_mutex_lock(&lock);
    if (!stream_ok(hStream)) {
        pthread_mutex_unlock(&lock);
        free(o);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    st_async_copies++;
    st_bytes_async += (long long) ByteCount;
    if (!find_range(pinned, (uintptr_t) srcHost, ByteCount)) st_pageable_async_copies++;
    if (++st_inflight_copies > st_max_inflight_copies) st_max_inflight_copies = st_inflight_copies;
    enqueue(hStream, o);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
    ENTER(1);
    if (!device_range_ok(dstDevice, ByteCount) || !device_range_ok(srcDevice, ByteCount)) return CUDA_ERROR_INVALID_VALUE;
    op_t *o = calloc(1, sizeof *o);
    o->kind = OP_COPY;
    o->dst = (void *) (uintptr_t) dstDevice;
    o->src = (const void *) (uintptr_t) srcDevice;
    o->bytes = ByteCount;
    if (hStream == NULL) {
        drain_all_streams();
        memcpy(o->dst, o->src, o->bytes);
        free(o);
        return CUDA_SUCCESS;
    }
    o->device_copy = 1; /* the source is written by the stream's earlier work: no checksum at enqueue */
    pthread_mutex_lock(&lock);
    if (!stream_ok(hStream)) {
        pthread_mutex_unlock(&lock);
        free(o);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    st_device_copies++;
    ++st_inflight_copies;
    enqueue(hStream, o);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ streams and events */

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    ENTER(1);
    if (!phStream || Flags > 1) return CUDA_ERROR_INVALID_VALUE;
    stream_t *s = calloc(1, sizeof *s);
    pthread_cond_init(&s->wake, NULL);
    pthread_mutex_lock(&lock);
    int slot = -1;
    for (int i = 0; i < MAX_STREAMS && slot < 0; i++)
        if (!streams[i]) slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&lock);
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    streams[slot] = s;
    live_streams++;
    pthread_mutex_unlock(&lock);
    pthread_create(&s->thread, NULL, stream_main, s);
    *phStream = s;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
    ENTER(1);
    pthread_mutex_lock(&lock);
    int found = 0;
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i] == hStream) { streams[i] = NULL; found = 1; }
    if (!found) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    /* As in CUDA, queued work still completes; here the caller waits for it. */
    hStream->stopping = 1;
    pthread_cond_signal(&hStream->wake);
    live_streams--;
    pthread_mutex_unlock(&lock);
    pthread_join(hStream->thread, NULL);
    pthread_cond_destroy(&hStream->wake);
    free(hStream);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
    ENTER(1);
    if (hStream == NULL) return drain_all_streams();
    pthread_mutex_lock(&lock);
    if (!stream_ok(hStream)) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    while (hStream->pending > 0) pthread_cond_wait(&progress, &lock);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    ENTER(1);
    if (!phEvent || Flags > 0xf) return CUDA_ERROR_INVALID_VALUE;
    event_t *e = calloc(1, sizeof *e);
    e->flags = Flags;
    pthread_mutex_lock(&lock);
    live_events++;
    pthread_mutex_unlock(&lock);
    *phEvent = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
    ENTER(1);
    if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    uint64_t seq = ++hEvent->recorded;
    if (hStream == NULL) {
        /* Nothing runs asynchronously on the double's default stream: complete now. */
        clock_gettime(CLOCK_MONOTONIC, &hEvent->when);
        hEvent->completed = seq;
        pthread_cond_broadcast(&progress);
    } else {
        if (!stream_ok(hStream)) {
            hEvent->recorded--;
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_INVALID_HANDLE;
        }
        op_t *o = calloc(1, sizeof *o);
        o->kind = OP_RECORD;
        o->event = hEvent;
        o->seq = seq;
        enqueue(hStream, o);
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    ENTER(1);
    if (!hEvent || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    uint64_t seq = hEvent->recorded;
    if (hStream == NULL) {
        while (hEvent->completed < seq) pthread_cond_wait(&progress, &lock);
    } else {
        if (!stream_ok(hStream)) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_INVALID_HANDLE;
        }
        op_t *o = calloc(1, sizeof *o);
        o->kind = OP_WAIT;
        o->event = hEvent;
        o->seq = seq;
        enqueue(hStream, o);
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
    ENTER(1);
    if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    int done = hEvent->completed >= hEvent->recorded;
    pthread_mutex_unlock(&lock);
    return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
    ENTER(1);
    if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    uint64_t seq = hEvent->recorded;
    while (hEvent->completed < seq) pthread_cond_wait(&progress, &lock);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    ENTER(1);
    if (!pMilliseconds || !hStart || !hEnd) return CUDA_ERROR_INVALID_HANDLE;
    if ((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    int ready = hStart->recorded > 0 && hEnd->recorded > 0 && hStart->completed >= hStart->recorded
                && hEnd->completed >= hEnd->recorded;
    struct timespec a = hStart->when, b = hEnd->when;
    pthread_mutex_unlock(&lock);
    if (!ready) return CUDA_ERROR_NOT_READY;
    *pMilliseconds = (float) ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
    ENTER(1);
    if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
    /* CUDA allows destroying an event whose work is pending; the double waits, so that the
       stream thread never touches freed memory. */
    pthread_mutex_lock(&lock);
    while (hEvent->completed < hEvent->recorded) pthread_cond_wait(&progress, &lock);
    live_events--;
    pthread_mutex_unlock(&lock);
    free(hEvent);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ modules and kernels */

static const struct { const char *name; int kernel; } KERNELS[] = {
    {"stoke_normalize_u8_nhwc_to_f32_nchw", K_NORMALIZE},
    {"stoke_spin", K_SPIN},
    {"stoke_resample_h_batch", K_RESAMPLE_H},
    {"stoke_resample_v_batch", K_RESAMPLE_V},
    {"stoke_ycc_rgb_batch", K_YCC},
};

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
    ENTER(1);
    if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
    const char *text = image;
    /* Only PTX text is accepted, and only checked for its header: the double cannot compile it. */
    if (!strstr(text, ".version") || !strstr(text, ".target")) return CUDA_ERROR_INVALID_IMAGE;
    struct CUmod_st *m = malloc(sizeof *m);
    m->image = strdup(text);
    pthread_mutex_lock(&lock);
    live_modules++;
    pthread_mutex_unlock(&lock);
    *module = m;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
    ENTER(1);
    if (!hmod) return CUDA_ERROR_INVALID_HANDLE;
    free(hmod->image);
    free(hmod);
    pthread_mutex_lock(&lock);
    live_modules--;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static struct CUfunc_st FUNCS[] = {{K_NORMALIZE}, {K_SPIN}, {K_RESAMPLE_H}, {K_RESAMPLE_V}, {K_YCC}};

/* Every byte a resample job reads or writes lies in live device memory (a GPU would fault). */
static int resample_ranges_ok(const struct resize_job *j, const int32_t *tables, int vertical) {
    {
        if (j->cols <= 0 || j->rows <= 0 || j->out_rows <= 0 || j->h_taps <= 0 || j->v_taps <= 0 || j->tables < 0)
            return 0;
        size_t ints = 2 * (size_t) j->cols + (size_t) j->cols * j->h_taps + 2 * (size_t) j->out_rows
                + (size_t) j->out_rows * j->v_taps;
        const int32_t *t = tables + j->tables;
        if (!device_range_ok((CUdeviceptr) (uintptr_t) t, ints * 4)) return 0;
        if (!device_range_ok(j->tmp, (size_t) j->rows * j->cols * 4)) return 0;
        if (vertical && !device_range_ok(j->dst, (size_t) j->out_rows * j->cols * 3)) return 0;
        if (!vertical) {
            int32_t reach = 0;
            for (int32_t x = 0; x < j->cols; x++)
                if (t[2 * x] < 0 || t[2 * x + 1] < 0) return 0;
                else if (t[2 * x] + t[2 * x + 1] > reach) reach = t[2 * x] + t[2 * x + 1];
            if (j->y_first < 0 || !device_range_ok(j->src + (uint64_t) ((int64_t) j->y_first * j->src_pitch),
                                                   (size_t) (j->rows - 1) * (size_t) j->src_pitch + 3 * (size_t) reach))
                return 0;
        }
    }
    return 1;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    ENTER(1);
    if (!hfunc || !hmod || !name) return CUDA_ERROR_INVALID_VALUE;
    char entry[160];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    if (!strstr(hmod->image, entry)) return CUDA_ERROR_NOT_FOUND; /* the PTX must really declare it */
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
        if (strcmp(KERNELS[i].name, name) == 0) { *hfunc = &FUNCS[i]; return CUDA_SUCCESS; }
    return CUDA_ERROR_NOT_FOUND; /* declared, but the double has no stand-in for it */
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra) {
    ENTER(1);
    if (!f || !kernelParams || extra) return CUDA_ERROR_INVALID_VALUE;
    if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ || blockDimX * blockDimY * blockDimZ > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    (void) sharedMemBytes;
    op_t *o = calloc(1, sizeof *o);
    o->kind = OP_KERNEL;
    o->kernel = f->kernel;
    o->k_grid[0] = gridDimX;
    o->k_grid[1] = gridDimY;
    o->k_grid[2] = gridDimZ;
    o->k_block[0] = blockDimX;
    o->k_block[1] = blockDimY;
    o->k_block[2] = blockDimZ;
    if (f->kernel == K_NORMALIZE) {
        /* (const uint8_t *src, float *dst, unsigned pixels, unsigned hw, float mean0..2, float std0..2) */
        CUdeviceptr src = *(CUdeviceptr *) kernelParams[0], dst = *(CUdeviceptr *) kernelParams[1];
        o->k_src = (const uint8_t *) (uintptr_t) src;
        o->k_dst = (float *) (uintptr_t) dst;
        o->k_pixels = *(unsigned *) kernelParams[2];
        o->k_hw = *(unsigned *) kernelParams[3];
        for (int c = 0; c < 3; c++) {
            o->k_mean[c] = *(float *) kernelParams[4 + c];
            o->k_std[c] = *(float *) kernelParams[7 + c];
        }
        /* A real GPU would fault on a bad address; the double checks the ranges instead. */
        if (o->k_hw == 0 || o->k_pixels % o->k_hw != 0 || !device_range_ok(src, (size_t) o->k_pixels * 3)
            || !device_range_ok(dst, (size_t) o->k_pixels * 3 * sizeof(float))) {
            free(o);
            return CUDA_ERROR_INVALID_VALUE;
        }
        /* The launch must cover every pixel, as the real kernel's grid-stride loop needs at least one thread. */
        if ((unsigned long long) gridDimX * blockDimX == 0) { free(o); return CUDA_ERROR_INVALID_VALUE; }
    } else if (f->kernel == K_RESAMPLE_H || f->kernel == K_RESAMPLE_V) {
        /* (const stoke_resize_job *jobs, const int *tables); the jobs are gridDimZ */
        o->k_jobs = (const struct resize_job *) (uintptr_t) *(CUdeviceptr *) kernelParams[0];
        o->k_tables = (const int32_t *) (uintptr_t) *(CUdeviceptr *) kernelParams[1];
        /* The jobs' contents arrive by copies queued before this launch: they are read, and their
           ranges checked, when the kernel runs (resample_kernel), as a GPU reads them. */
        if (!device_range_ok((CUdeviceptr) (uintptr_t) o->k_jobs, (size_t) gridDimZ * sizeof *o->k_jobs)
            || !device_range_ok((CUdeviceptr) (uintptr_t) o->k_tables, 4)) {
            free(o);
            return CUDA_ERROR_INVALID_VALUE;
        }
    } else if (f->kernel == K_YCC) {
        /* (const stoke_ycc_job *jobs); the jobs are gridDimZ, read and checked when the kernel runs */
        o->k_ycc = (const struct ycc_job *) (uintptr_t) *(CUdeviceptr *) kernelParams[0];
        if (!device_range_ok((CUdeviceptr) (uintptr_t) o->k_ycc, (size_t) gridDimZ * sizeof *o->k_ycc)) {
            free(o);
            return CUDA_ERROR_INVALID_VALUE;
        }
    } else {
        o->k_nanos = *(unsigned long long *) kernelParams[0];
    }
    if (hStream == NULL) {
        drain_all_streams();
        run(o);
        free(o);
    } else {
        pthread_mutex_lock(&lock);
        if (!stream_ok(hStream)) {
            pthread_mutex_unlock(&lock);
            free(o);
            return CUDA_ERROR_INVALID_HANDLE;
        }
        st_kernels++;
        enqueue(hStream, o);
        pthread_mutex_unlock(&lock);
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&lock);
    st_kernels++;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ hooks for the library doubles built in */

/* The CUresult injected for the named call (see stoke_double_fail), else 0. */
int stoke_double_injected(const char *name) {
    return (int) injected(name);
}

/* Whether [p, p + bytes) lies inside one live device allocation. */
int stoke_double_device_range_ok(uintptr_t p, size_t bytes) {
    return device_range_ok((CUdeviceptr) p, bytes);
}

/* Whether the calling thread has a current context, as the CUDA runtime's calls need. */
int stoke_double_context_current(void) {
    return initialised && current != NULL && primary_retains > 0;
}

/* Runs fn(arg) in hStream's order (at once, after every stream drains, for the NULL stream). */
CUresult stoke_double_enqueue_host(CUstream hStream, void (*fn)(void *), void *arg) {
    if (hStream == NULL) {
        drain_all_streams();
        fn(arg);
        return CUDA_SUCCESS;
    }
    op_t *o = calloc(1, sizeof *o);
    o->kind = OP_HOST;
    o->host_fn = fn;
    o->host_arg = arg;
    pthread_mutex_lock(&lock);
    if (!stream_ok(hStream)) {
        pthread_mutex_unlock(&lock);
        free(o);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    enqueue(hStream, o);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ control, for tests only */

/** Clears statistics, knobs and pending failure injections (not live objects). */
void stoke_double_reset(void) {
    pthread_mutex_lock(&lock);
    st_async_copies = st_pageable_async_copies = st_checksum_mismatches = st_sync_copies = 0;
    st_bytes_async = st_kernels = st_max_inflight_copies = st_registrations = st_completed_async_copies = st_device_copies = 0;
    st_kernel_faults = 0;
    st_max_inflight_copies = st_inflight_copies;
    copy_delay_us = 0;
    verify = 1;
    fail_name[0] = 0;
    fail_countdown = 0;
    device_count = 1;
    pthread_mutex_unlock(&lock);
}

/** The nth call (1 = the next) to the exported function named fn returns result. */
void stoke_double_fail(const char *fn, int nth, int result) {
    pthread_mutex_lock(&lock);
    snprintf(fail_name, sizeof fail_name, "%s", fn);
    fail_countdown = nth;
    fail_result = (CUresult) result;
    pthread_mutex_unlock(&lock);
}

/** Every copy (async and sync host-to-device) sleeps this long first. */
void stoke_double_set_copy_delay_us(long us) {
    copy_delay_us = us;
}

/** Whether copies checksum their source at enqueue time (default on). */
void stoke_double_set_verify(int on) {
    verify = on;
}

/** What cuDeviceGetCount reports (default 1). */
void stoke_double_set_device_count(int n) {
    device_count = n;
}

/** A statistic by name, or -1 for an unknown name. */
long long stoke_double_stat(const char *name) {
    long long v = -1;
    long n = 0;
    pthread_mutex_lock(&lock);
    if (!strcmp(name, "async_copies")) v = st_async_copies;
    else if (!strcmp(name, "pageable_async_copies")) v = st_pageable_async_copies;
    else if (!strcmp(name, "checksum_mismatches")) v = st_checksum_mismatches;
    else if (!strcmp(name, "completed_async_copies")) v = st_completed_async_copies;
    else if (!strcmp(name, "sync_copies")) v = st_sync_copies;
    else if (!strcmp(name, "bytes_async")) v = st_bytes_async;
    else if (!strcmp(name, "kernels")) v = st_kernels;
    else if (!strcmp(name, "kernel_faults")) v = st_kernel_faults;
    else if (!strcmp(name, "max_inflight_copies")) v = st_max_inflight_copies;
    else if (!strcmp(name, "registrations")) v = st_registrations;
    else if (!strcmp(name, "primary_retains")) v = primary_retains;
    else if (!strcmp(name, "live_streams")) v = live_streams;
    else if (!strcmp(name, "live_events")) v = live_events;
    else if (!strcmp(name, "live_modules")) v = live_modules;
    else if (!strcmp(name, "live_device_allocs")) { for (range_t *r = device_allocs; r; r = r->next) n += r->fd >= 0; v = n; }
    else if (!strcmp(name, "ipc_opened")) { for (range_t *r = ipc_opened; r; r = r->next) n++; v = n; }
    else if (!strcmp(name, "device_copies")) v = st_device_copies;
    else if (!strcmp(name, "live_pinned_ranges")) { for (range_t *r = pinned; r; r = r->next) n++; v = n; }
    pthread_mutex_unlock(&lock);
    return v;
}
