package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.stoke.ffm.JpegCompressor;
import io.stoke.ffm.JpegDecompressor;
import io.stoke.ffm.NativeMemory;
import io.stoke.ffm.TurboJpeg;
import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaEvent;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.cuda.Nvjpeg;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Semaphore;

/**
 * Decodes batches of JPEG files into device memory with nvJPEG's batched decoder: the hardware
 * JPEG engine where the device has one (A100, H100, H200), nvJPEG's GPU hybrid decoder otherwise.
 * EXPERIMENTAL: built and tested against the nvJPEG and CUDA test doubles, which check the wiring,
 * not a GPU's pixels (docs/gpu.md says what has run where).
 *
 * <p>What it cannot take it leaves to Stoke's CPU decoders, saying why per image
 * ({@link Decoded#cpuReason}): files nvJPEG cannot read (PNG, WebP, a damaged header), four
 * components (CMYK, YCCK), images over the pixel limit, and, on the hardware engine, what it does
 * not decode (progressive, 4:1:1, 4:1:0). Each image is decoded once, on one side.
 *
 * <p>nvJPEG writes each image as planar YCbCr ({@code NVJPEG_OUTPUT_YUV}), and Stoke's colour step
 * ({@link PlanesToRgb}, {@code native/cuda/ycc.cu}) upsamples the chroma and converts to RGB as
 * libjpeg-turbo does by default, into the image's interleaved RGB: nvJPEG's own RGB replicates each
 * chroma sample, which differs from the CPU path's pixels (and PIL's, and torchvision's CPU decode)
 * by up to 62 levels at colour edges. Where nvJPEG refuses planar output, its own RGB is used, and
 * {@link #backendNote()} says so.
 *
 * <p>A batch may be decoded in parts ({@link #open(CudaContext, Nvjpeg, boolean, int, long, int)}):
 * each part a batched call of its own, with an nvJPEG state of its own (nvJPEG's states are one
 * thread's each; the handle is shared), the first on the caller's thread and stream, each other
 * on a thread and a stream of the decoder's, after the work the caller's stream had queued. The
 * batched call's host side (39 us an image on an H200's engine, run-4) then runs on as many
 * threads as there are parts. The caller's stream waits for every part before what it queues next.
 *
 * <p>Owner and lifetime: one thread drives a decoder, with a CUDA context current. The decoder owns
 * its device memory and the one {@link Decoded} it hands back: the pixels of a batch are valid, in
 * the stream's order, until the next {@link #decode} or {@link #close}. Keep the files unchanged
 * until the work queued by {@code decode} is done: the hybrid decoder reads them in the call, but
 * NVIDIA's documentation does not promise that the hardware engine's copies of them have been made
 * by the time it returns. Every destination nvJPEG writes is
 * laid out here, inside the decoder's device buffer, from the header's size, before the call.
 */
public final class GpuJpegDecoder implements AutoCloseable {
    /** Which of nvJPEG's decoders runs. */
    public enum Backend {
        HARDWARE,
        GPU_HYBRID
    }

    /**
     * One batch's files, each {@code length(i)} bytes at {@code address(i)} in native memory that
     * stays put until the decode's queued work is done (the class comment says why). The decode stage
     * hands its readers' buffers this way, with no segment per file.
     */
    public interface Files {
        int count();

        long address(int i);

        long length(int i);

        /**
         * Whether each file was examined already, by an {@link Examiner} on the thread that read it:
         * then {@link #examine} takes {@link #why}, {@link #width} and {@link #height} as they are,
         * rather than reading the headers again on the caller's thread.
         */
        default boolean examined() {
            return false;
        }

        /** What {@link Examiner#examine} said of file {@code i}: why nvJPEG is not given it, or null. */
        default String why(int i) {
            throw new UnsupportedOperationException("not examined");
        }

        /** File {@code i}'s width, where nvJPEG takes it. */
        default int width(int i) {
            throw new UnsupportedOperationException("not examined");
        }

        /** File {@code i}'s height, where nvJPEG takes it. */
        default int height(int i) {
            throw new UnsupportedOperationException("not examined");
        }

        /** File {@code i}'s chroma subsampling as nvJPEG names it ({@code NVJPEG_CSS_*}), where nvJPEG takes it. */
        default int subsampling(int i) {
            throw new UnsupportedOperationException("not examined");
        }

        /** The files of {@code segments}, each a whole file in native memory. */
        static Files of(List<MemorySegment> segments) {
            for (int i = 0; i < segments.size(); i++) {
                if (!segments.get(i).isNative()) {
                    throw new IllegalArgumentException("file " + i + " is not in native memory");
                }
            }
            return new Files() {
                @Override
                public int count() {
                    return segments.size();
                }

                @Override
                public long address(int i) {
                    return segments.get(i).address();
                }

                @Override
                public long length(int i) {
                    return segments.get(i).byteSize();
                }
            };
        }
    }

    /** Each image starts on this boundary in the device buffer, as CUDA's own allocations do. */
    static final long ALIGNMENT = 256;

    private final CudaDriver driver;
    private final Nvjpeg nvjpeg;
    private final int maxBatch;
    private final long maxPixels;
    private final Backend backend;
    private String backendNote; // set in the constructor: its colour check may add to it
    // Shared, not confined: under auto a GpuDecodeStage opens the decoder on a thread of its own
    // (while the CPU threads decode the first batches) and its decode thread uses and closes it after.
    // One thread at a time all the same, the future's completion ordering the handover.
    private final Arena arena = Arena.ofShared();
    private final MemorySegment handle;
    /** The batch's first part, decoded on the caller's thread and stream. */
    private final Part first;
    /** The other parts, each on a thread and a stream of its own; empty where a batch is one part. */
    private final Helper[] helpers;
    /** Recorded on the caller's stream before the parts are queued; each helper's stream waits for it. Null with no helpers. */
    private final CudaEvent queuedBefore;
    /** The examiner of files not examined where they were read; the others are {@link #newExaminer}'s. */
    private final Examiner own;

    private final List<Examiner> examiners = new ArrayList<>();
    private final Decoded decoded;
    // nvJPEG's output: planar YCbCr for the colour step, or (where refused) its own interleaved RGB;
    // the colour step's kernels and jobs, null where nvJPEG writes RGB. Set in the constructor only.
    private int format;
    private DeviceKernels kernels;
    private PlanesToRgb toRgb;
    /** The images' interleaved RGB, where the resize reads them. */
    private DeviceBuffer pixels;
    /** nvJPEG's planes, where it writes planar YCbCr; null otherwise. */
    private DeviceBuffer planes;
    /** The stream of the last {@link #decode}: its work may still write {@link #pixels} when {@link #close} comes. */
    private CudaStream lastStream;

    // What examine() found, for the submit() that follows it: the device bytes of the images nvJPEG
    // takes, and the batch's file count (-1 once submitted).
    private long examinedBytes;
    private long examinedPlaneBytes;
    private int examinedFiles = -1;
    private boolean closed;

    private GpuJpegDecoder(
            CudaDriver driver,
            Nvjpeg nvjpeg,
            int maxBatch,
            long maxPixels,
            boolean preferHardware,
            CudaContext context,
            int parts) {
        this.driver = driver;
        this.nvjpeg = nvjpeg;
        this.maxBatch = maxBatch;
        this.maxPixels = maxPixels;
        MemorySegment out = arena.allocate(ADDRESS);
        Backend chosen = Backend.GPU_HYBRID;
        String note = null;
        int status = Nvjpeg.NVJPEG_STATUS_SUCCESS;
        if (preferHardware) {
            status = nvjpeg.nvjpegCreateEx(
                    Nvjpeg.NVJPEG_BACKEND_HARDWARE, MemorySegment.NULL, MemorySegment.NULL, 0, out);
            if (status == Nvjpeg.NVJPEG_STATUS_SUCCESS) {
                chosen = Backend.HARDWARE;
            } else {
                note = "nvJPEG's hardware decoder is not available on this device (nvjpegCreateEx: "
                        + Nvjpeg.statusName(status) + "): decoding with its GPU hybrid decoder";
            }
        }
        if (chosen == Backend.GPU_HYBRID) {
            try {
                Nvjpeg.check(
                        nvjpeg.nvjpegCreateEx(
                                Nvjpeg.NVJPEG_BACKEND_GPU_HYBRID, MemorySegment.NULL, MemorySegment.NULL, 0, out),
                        "nvjpegCreateEx");
            } catch (RuntimeException e) {
                arena.close();
                throw e;
            }
        }
        backend = chosen;
        handle = out.get(ADDRESS, 0);
        List<Part> made = new ArrayList<>();
        Helper[] started = new Helper[parts - 1];
        CudaEvent before = null;
        Examiner mine = null;
        DeviceKernels loaded = null;
        PlanesToRgb step = null;
        int output = Nvjpeg.NVJPEG_OUTPUT_RGBI;
        try {
            for (int p = 0; p < parts; p++) {
                made.add(new Part());
            }
            // Planar YCbCr where nvJPEG's batched decoder writes it (asked once, on the first part's state).
            int planar = nvjpeg.nvjpegDecodeBatchedInitialize(
                    handle, made.get(0).state, maxBatch, 1, Nvjpeg.NVJPEG_OUTPUT_YUV);
            if (planar == Nvjpeg.NVJPEG_STATUS_SUCCESS) {
                loaded = new DeviceKernels(driver);
                step = new PlanesToRgb(driver, loaded, maxBatch);
                output = Nvjpeg.NVJPEG_OUTPUT_YUV;
            } else {
                String refusal = "nvJPEG writes no planar YCbCr here (nvjpegDecodeBatchedInitialize: "
                        + Nvjpeg.statusName(planar) + "): its own RGB, whose chroma is replicated, not interpolated"
                        + " as the CPU's, up to 62 levels apart at colour edges";
                note = note == null ? refusal : note + "; " + refusal;
            }
            mine = new Examiner();
            if (parts > 1) {
                before = CudaEvent.create(driver);
                for (int p = 1; p < parts; p++) {
                    started[p - 1] = new Helper(made.get(p), context, before, p);
                }
            }
        } catch (RuntimeException e) {
            if (step != null) {
                step.close();
            }
            if (loaded != null) {
                loaded.close();
            }
            for (Helper h : started) {
                if (h != null) {
                    h.stop();
                }
            }
            if (before != null) {
                before.close();
            }
            if (mine != null) {
                mine.close();
            }
            for (Part part : made) {
                part.destroy();
            }
            nvjpeg.nvjpegDestroy(handle);
            arena.close();
            throw e;
        }
        first = made.get(0);
        helpers = started;
        queuedBefore = before;
        own = mine;
        backendNote = note;
        format = output;
        kernels = loaded;
        toRgb = step;
        decoded = new Decoded(maxBatch);
        if (format == Nvjpeg.NVJPEG_OUTPUT_YUV) {
            String failed = colourCheck();
            if (failed != null) {
                toRgb.close();
                kernels.close();
                toRgb = null;
                kernels = null;
                format = Nvjpeg.NVJPEG_OUTPUT_RGBI;
                first.initialized = 0;
                for (Helper h : helpers) {
                    h.part.initialized = 0;
                }
                String refusal = "nvJPEG's planar YCbCr failed Stoke's check at opening (" + failed
                        + "): its own RGB, whose chroma is replicated, not interpolated as the CPU's";
                backendNote = backendNote == null ? refusal : backendNote + "; " + refusal;
            }
        }
    }

    /** The most a check image's pixels may differ from TurboJPEG's: nvJPEG's IDCT is within 3 levels (run-2). */
    static final int COLOUR_CHECK_LEVELS = 8;

    /**
     * Decodes one small 4:2:0 JPEG of colour stripes (chroma edges, where replicated and interpolated
     * chroma differ most) through nvJPEG's planes and the colour step, and compares it with
     * TurboJPEG's decode: why the two disagree, or null. A device or library that writes planar
     * YCbCr otherwise than documented then costs one check at opening, not wrong pixels.
     */
    private String colourCheck() {
        // A size any engine takes (an image it left to the CPU would fail the check), within the pixel
        // limit the decoder was opened with (tests open some with small ones).
        int w = 96;
        int h = 64;
        while ((long) w * h > maxPixels && w > 12) {
            w /= 2;
            h /= 2;
        }
        if ((long) w * h > maxPixels) {
            return null; // no image to check with: the colour step stands unchecked
        }
        CudaStream stream = CudaStream.create(driver);
        try (Arena a = Arena.ofConfined();
                JpegCompressor compressor = new JpegCompressor();
                JpegDecompressor decompressor = new JpegDecompressor()) {
            MemorySegment rgb = a.allocate(3L * w * h);
            for (int y = 0; y < h; y++) {
                for (int x = 0; x < w; x++) {
                    int stripe = (x / 3 + y / 4) % 3;
                    for (int c = 0; c < 3; c++) {
                        rgb.set(JAVA_BYTE, 3L * (y * w + x) + c, (byte) (c == stripe ? 230 : 20 + 2 * x));
                    }
                }
            }
            MemorySegment out = a.allocate(JpegCompressor.maxSize(w, h, TurboJpeg.TJSAMP_420));
            long n = compressor.compress(rgb, w, 3 * w, h, TurboJpeg.TJPF_RGB, TurboJpeg.TJSAMP_420, 95, 0, out);
            MemorySegment file = out.asSlice(0, n);
            MemorySegment want = a.allocate(3L * w * h);
            if (decompressor.decompress(file, n, want, w, 3 * w, h, TurboJpeg.TJPF_RGB, 0) != 0) {
                return "TurboJPEG did not decode the check image";
            }
            Decoded got = decode(List.of(file), stream);
            if (!got.onGpu(0)) {
                return "nvJPEG left the check image to the CPU: " + got.cpuReason(0);
            }
            MemorySegment have = a.allocate(3L * w * h);
            got.copyToHost(0, stream, have);
            int worst = 0;
            for (long i = 0; i < have.byteSize(); i++) {
                int d = Math.abs(
                        Byte.toUnsignedInt(have.get(JAVA_BYTE, i)) - Byte.toUnsignedInt(want.get(JAVA_BYTE, i)));
                worst = Math.max(worst, d);
            }
            return worst <= COLOUR_CHECK_LEVELS
                    ? null
                    : "a check image " + worst + " levels from TurboJPEG's, where nvJPEG's IDCT alone is within 3";
        } catch (RuntimeException e) {
            return e.getMessage();
        } finally {
            // Whatever the check queued is done before its buffers go; the first batch allocates its
            // own then, with nothing to wait for (growing a buffer waits for the caller's stream).
            stream.synchronize();
            stream.close();
            lastStream = null;
            decoded.begin(0);
            if (pixels != null) {
                pixels.close();
                pixels = null;
            }
            if (planes != null) {
                planes.close();
                planes = null;
            }
        }
    }

    /**
     * Opens a decoder on the device whose context is current on this thread.
     *
     * @param preferHardware ask for the hardware engine first (falling back to the GPU hybrid
     *     decoder, with {@link #backendNote()} saying why)
     * @param maxBatch the most files one {@link #decode} takes
     * @param maxPixels the largest image (width x height) sent to the GPU; larger ones go to the CPU
     * @throws io.stoke.ffm.cuda.NvjpegException when nvJPEG cannot start on this device
     */
    public static GpuJpegDecoder open(
            CudaDriver driver, Nvjpeg nvjpeg, boolean preferHardware, int maxBatch, long maxPixels) {
        if (maxBatch <= 0 || maxPixels <= 0) {
            throw new IllegalArgumentException(
                    "maxBatch " + maxBatch + " and maxPixels " + maxPixels + " must be positive");
        }
        return new GpuJpegDecoder(driver, nvjpeg, maxBatch, maxPixels, preferHardware, null, 1);
    }

    /**
     * Opens a decoder, as {@link #open(CudaDriver, Nvjpeg, boolean, int, long)} does, that decodes
     * each batch in up to {@code parts} parts, each on a thread of its own (the class comment). A
     * part takes at least {@link #MIN_PART_IMAGES} images: a smaller batch is decoded in fewer parts.
     *
     * @param context the context current on this thread, made current on the decoder's own threads
     * @param parts 1 (the caller's thread alone) to 8
     */
    public static GpuJpegDecoder open(
            CudaContext context, Nvjpeg nvjpeg, boolean preferHardware, int maxBatch, long maxPixels, int parts) {
        if (maxBatch <= 0 || maxPixels <= 0) {
            throw new IllegalArgumentException(
                    "maxBatch " + maxBatch + " and maxPixels " + maxPixels + " must be positive");
        }
        if (parts < 1 || parts > MAX_PARTS) {
            throw new IllegalArgumentException("parts " + parts + " must be 1 to " + MAX_PARTS);
        }
        return new GpuJpegDecoder(context.driver(), nvjpeg, maxBatch, maxPixels, preferHardware, context, parts);
    }

    /** The most parts a batch is decoded in. */
    public static final int MAX_PARTS = 8;

    /**
     * The fewest images a part takes. nvJPEG's GPU hybrid decoder decodes Huffman on the GPU only in
     * batches of over 100 baseline images (nvjpeg.h): a batch split below that decodes Huffman on the
     * CPU, which is why the stage's default is one part.
     */
    public static final int MIN_PART_IMAGES = 16;

    /** How many parts a batch may be decoded in. */
    public int parts() {
        return helpers.length + 1;
    }

    /** The decoder that runs. */
    public Backend backend() {
        return backend;
    }

    /** Whether nvJPEG writes planar YCbCr, which the colour step converts as the CPU does (the class comment). */
    public boolean convertsColour() {
        return format == Nvjpeg.NVJPEG_OUTPUT_YUV;
    }

    /**
     * Why the hardware engine was asked for and not used, and why nvJPEG's own RGB is used rather than
     * the colour step, in a sentence each; null where neither.
     */
    public String backendNote() {
        return backendNote;
    }

    /**
     * Decodes what nvJPEG takes of {@code files} (native segments, one whole file each) into this
     * decoder's device memory, as interleaved RGB, queued on {@code stream}; says for the others why
     * they are left to the CPU. The result is this decoder's one {@link Decoded}, valid until the next call.
     *
     * @throws io.stoke.ffm.cuda.NvjpegException when the device fails (not a file: those go to the CPU)
     */
    public Decoded decode(List<MemorySegment> files, CudaStream stream) {
        return decode(Files.of(files), stream);
    }

    /**
     * {@link #decode(List, CudaStream)} over files given by address and length: what the decode stage
     * hands each batch, with no object per file.
     */
    public Decoded decode(Files files, CudaStream stream) {
        examine(files);
        return submit(files, stream);
    }

    /**
     * The first half of {@link #decode(Files, CudaStream)}: reads each file's headers (on the hardware
     * engine, up to its first scan) and says which nvJPEG takes and which go to the CPU, why, and the
     * sizes, queuing nothing. The caller may start the CPU on those before {@link #submit} (which takes
     * the same {@code files}) queues the rest. The result is this decoder's one {@link Decoded}.
     */
    public Decoded examine(Files files) {
        checkOpen();
        int n = files.count();
        if (n > maxBatch) {
            throw new IllegalArgumentException(n + " files in a batch of at most " + maxBatch);
        }
        decoded.begin(n);
        boolean examined = files.examined();
        long bytes = 0;
        long planeBytes = 0;
        for (int i = 0; i < n; i++) {
            String why = examined ? files.why(i) : own.examine(files.address(i), files.length(i));
            if (why != null) {
                decoded.toCpu(i, why);
                continue;
            }
            int w = examined ? files.width(i) : own.width();
            int h = examined ? files.height(i) : own.height();
            int css = examined ? files.subsampling(i) : own.subsampling();
            long offset = align(bytes);
            long planesAt = align(planeBytes);
            decoded.toGpu(i, offset, w, h, css, planesAt);
            bytes = offset + 3L * w * h;
            if (format == Nvjpeg.NVJPEG_OUTPUT_YUV) {
                planeBytes = planesAt + Planes.bytes(w, h, css);
            }
        }
        examinedBytes = bytes;
        examinedPlaneBytes = planeBytes;
        examinedFiles = n;
        return decoded;
    }

    /**
     * The second half of {@link #decode(Files, CudaStream)}: queues on {@code stream} the decode of
     * what {@link #examine} found nvJPEG takes of the same {@code files}. A batch nvJPEG refuses as a
     * whole goes to the CPU, each file said so in the result.
     */
    public Decoded submit(Files files, CudaStream stream) {
        checkOpen();
        if (examinedFiles != files.count()) {
            throw new IllegalStateException("submit(" + files.count() + " files) after examine(" + examinedFiles + ")");
        }
        examinedFiles = -1; // once
        lastStream = stream;
        int n = files.count();
        int taken = 0;
        for (int i = 0; i < n; i++) {
            if (decoded.onGpu(i)) {
                taken++;
            }
        }
        if (taken == 0) {
            return decoded;
        }
        long bytes = examinedBytes;
        ensureCapacity(bytes, stream);
        long base = pixels.pointer();
        boolean planar = format == Nvjpeg.NVJPEG_OUTPUT_YUV;
        if (planar) {
            planes = grown(planes, examinedPlaneBytes, stream);
        }
        long planesBase = planar ? planes.pointer() : 0L;
        // Parts of the images nvJPEG takes, in order, each at least MIN_PART_IMAGES (the first part
        // takes what is left over), the first on this thread and stream, the others on the helpers'.
        int parts = Math.max(1, Math.min(helpers.length + 1, taken / MIN_PART_IMAGES));
        // Written at offsets, no slice or address object per image; a pointer is written as the 64-bit
        // value it is (the binding's 64-bit-only layout), the other three channels' pointers and pitches zero.
        int k = 0;
        int filling = -1; // the part being filled
        int start = 0; // part filling's first image
        int next = 0; // part filling + 1's first image
        Part part = null;
        for (int i = 0; i < n; i++) {
            if (!decoded.onGpu(i)) {
                continue;
            }
            if (k == next) {
                filling++;
                start = next;
                next = partStart(filling + 1, taken, parts);
                part = filling == 0 ? first : helpers[filling - 1].part;
                part.images.fill((byte) 0);
            }
            int j = k - start;
            part.dataPointers.setAtIndex(JAVA_LONG, j, files.address(i));
            part.lengths.setAtIndex(JAVA_LONG, j, files.length(i));
            long image = j * Nvjpeg.IMAGE.byteSize();
            if (planar) {
                // Y, Cb and Cr, each plane padded (Planes): a writer past a plane's samples stays in it.
                int w = decoded.width[i];
                int h = decoded.height[i];
                int css = decoded.css[i];
                long at = planesBase + decoded.planesAt[i];
                long yPitch = Planes.yPitch(w);
                long cPitch = Planes.cPitch(w, css);
                part.images.set(JAVA_LONG, image + Nvjpeg.IMAGE_CHANNEL0, at);
                part.images.set(JAVA_LONG, image + Nvjpeg.IMAGE_CHANNEL0 + 8, at + Planes.cbAt(w, h));
                part.images.set(JAVA_LONG, image + Nvjpeg.IMAGE_CHANNEL0 + 16, at + Planes.crAt(w, h, css));
                part.images.set(JAVA_LONG, image + Nvjpeg.IMAGE_PITCH0, yPitch);
                part.images.set(JAVA_LONG, image + Nvjpeg.IMAGE_PITCH0 + 8, cPitch);
                part.images.set(JAVA_LONG, image + Nvjpeg.IMAGE_PITCH0 + 16, cPitch);
            } else {
                part.images.set(JAVA_LONG, image + Nvjpeg.IMAGE_CHANNEL0, base + decoded.offset[i]);
                part.images.set(JAVA_LONG, image + Nvjpeg.IMAGE_PITCH0, 3L * decoded.width[i]); // rows packed
            }
            k++;
        }
        if (parts > 1) {
            // The helpers' streams write this decoder's pixels: not before what this stream queued
            // (the last batch's resize reads them) has run.
            queuedBefore.record(stream);
            for (int p = 1; p < parts; p++) {
                helpers[p - 1].start(partStart(p + 1, taken, parts) - partStart(p, taken, parts));
            }
        }
        int status = Nvjpeg.NVJPEG_STATUS_SUCCESS;
        RuntimeException failure = null;
        try {
            status = first.decode(partStart(1, taken, parts), stream);
        } catch (RuntimeException e) {
            failure = e;
        }
        for (int p = 1; p < parts; p++) {
            RuntimeException f = helpers[p - 1].await(); // every part ended before anything is thrown
            if (failure == null) {
                failure = f;
            } else if (f != null) {
                failure.addSuppressed(f);
            }
        }
        if (failure != null) {
            throw failure;
        }
        // A device failure in any part first, before a refused part's images go to the CPU.
        checkDevice(status);
        for (int p = 1; p < parts; p++) {
            checkDevice(helpers[p - 1].status);
        }
        // From the last part back: a refused part's images are counted among those still on the GPU,
        // which the parts before it still are.
        boolean any = false;
        for (int p = parts - 1; p >= 0; p--) {
            int st = p == 0 ? status : helpers[p - 1].status;
            if (refused(st)) {
                toCpu(p, taken, parts, n, st);
            } else {
                if (p > 0) {
                    stream.waitFor(helpers[p - 1].done); // the caller's next work (the resize) after this part's pixels
                }
                any = true;
            }
        }
        if (any) {
            if (planar) {
                // The colour step, after every part's planes (the caller's stream waits for each above).
                toRgb.begin();
                for (int i = 0; i < n; i++) {
                    if (decoded.onGpu(i)) {
                        int w = decoded.width[i];
                        int h = decoded.height[i];
                        int css = decoded.css[i];
                        long at = decoded.planesAt[i];
                        toRgb.add(
                                planes,
                                at,
                                Planes.yPitch(w),
                                at + Planes.cbAt(w, h),
                                at + Planes.crAt(w, h, css),
                                Planes.cPitch(w, css),
                                w,
                                h,
                                Planes.cWidth(w, css),
                                Planes.cHeight(h, css),
                                Planes.hFactor(css),
                                Planes.vFactor(css),
                                pixels,
                                decoded.offset[i]);
                    }
                }
                toRgb.launch(stream);
            }
            decoded.base = base;
        }
        return decoded;
    }

    /**
     * Where nvJPEG writes an image's planar YCbCr: luma, then Cb, then Cr, each 256-byte aligned,
     * with rows padded to 64 bytes and planes to 16 rows beyond the samples nvJPEG writes (its
     * blocks' padding, should it write that, stays in the image's own planes). A grayscale image
     * gets chroma planes of its full size too, which nothing reads.
     */
    static final class Planes {
        private Planes() {}

        static int hFactor(int css) {
            return switch (css) {
                case Nvjpeg.NVJPEG_CSS_444, Nvjpeg.NVJPEG_CSS_440 -> 1;
                case Nvjpeg.NVJPEG_CSS_422, Nvjpeg.NVJPEG_CSS_420 -> 2;
                case Nvjpeg.NVJPEG_CSS_411, Nvjpeg.NVJPEG_CSS_410 -> 4;
                case Nvjpeg.NVJPEG_CSS_GRAY -> 0;
                default -> throw new IllegalArgumentException("no planes for chroma subsampling " + css);
            };
        }

        static int vFactor(int css) {
            return switch (css) {
                case Nvjpeg.NVJPEG_CSS_420, Nvjpeg.NVJPEG_CSS_440, Nvjpeg.NVJPEG_CSS_410 -> 2;
                case Nvjpeg.NVJPEG_CSS_GRAY -> 0;
                default -> 1;
            };
        }

        /** A chroma plane's samples across: libjpeg's downsampled_width. */
        static int cWidth(int w, int css) {
            int f = hFactor(css);
            return f == 0 ? w : (w + f - 1) / f;
        }

        /** A chroma plane's rows: libjpeg's downsampled_height. */
        static int cHeight(int h, int css) {
            int f = vFactor(css);
            return f == 0 ? h : (h + f - 1) / f;
        }

        static int yPitch(int w) {
            return (int) roundUp(w, 64);
        }

        /** Whether a chroma plane of {@code cw x ch} samples, as nvJPEG reports it, fits the plane laid out. */
        static boolean holds(int w, int h, int css, int cw, int ch) {
            return cw >= 0 && ch >= 0 && cw <= cPitch(w, css) && ch <= roundUp(cHeight(h, css), 16);
        }

        static int cPitch(int w, int css) {
            return (int) roundUp(cWidth(w, css), 64);
        }

        private static long yBytes(int w, int h) {
            return (long) yPitch(w) * roundUp(h, 16);
        }

        private static long cBytes(int w, int h, int css) {
            return (long) cPitch(w, css) * roundUp(cHeight(h, css), 16);
        }

        static long cbAt(int w, int h) {
            return align(yBytes(w, h));
        }

        static long crAt(int w, int h, int css) {
            return align(cbAt(w, h) + cBytes(w, h, css));
        }

        /** The image's planes, from the first to the end of the last. */
        static long bytes(int w, int h, int css) {
            return crAt(w, h, css) + cBytes(w, h, css);
        }

        private static long roundUp(long v, long to) {
            return (v + to - 1) / to * to;
        }
    }

    /** The first image of part {@code p} (of {@code parts}; {@code p == parts} gives {@code taken}). */
    private static int partStart(int p, int taken, int parts) {
        return p == 0 ? 0 : taken - (int) ((long) (parts - p) * (taken / parts));
    }

    /** Whether nvJPEG refused a batch as a whole: the status names no file. */
    private static boolean refused(int status) {
        return status == Nvjpeg.NVJPEG_STATUS_BAD_JPEG
                || status == Nvjpeg.NVJPEG_STATUS_JPEG_NOT_SUPPORTED
                || status == Nvjpeg.NVJPEG_STATUS_INCOMPLETE_BITSTREAM;
    }

    /** Throws a part's failure that is the device's, not a refusal of its files. */
    private static void checkDevice(int status) {
        if (!refused(status)) {
            Nvjpeg.check(status, "nvjpegDecodeBatched");
        }
    }

    /**
     * Sends part {@code p}'s images, which nvJPEG refused as a whole, to the CPU path, which decodes
     * and judges each. The parts after it have gone already, so its images are the ones from its
     * start among those still on the GPU.
     */
    private void toCpu(int p, int taken, int parts, int n, int status) {
        String why = "nvJPEG refused the batch it was in (nvjpegDecodeBatched: " + Nvjpeg.statusName(status) + ")";
        int from = partStart(p, taken, parts);
        int to = partStart(p + 1, taken, parts);
        int k = 0;
        for (int i = 0; i < n && k < to; i++) {
            if (decoded.onGpu(i)) {
                if (k >= from) {
                    decoded.toCpu(i, why);
                }
                k++;
            }
        }
    }

    /** One part of each batch: an nvJPEG state of its own and its images' arrays, laid out once for maxBatch. */
    private final class Part {
        private final MemorySegment state;
        private final MemorySegment dataPointers = arena.allocate(JAVA_LONG, maxBatch); // const unsigned char *[]
        private final MemorySegment lengths = arena.allocate(JAVA_LONG, maxBatch);
        private final MemorySegment images = arena.allocate(Nvjpeg.IMAGE, maxBatch);
        /** The batch size the state was initialised for; 0 after a refused batch (nvJPEG's advice: initialise again). */
        private int initialized;

        private Part() {
            MemorySegment out = arena.allocate(ADDRESS);
            Nvjpeg.check(nvjpeg.nvjpegJpegStateCreate(handle, out), "nvjpegJpegStateCreate");
            state = out.get(ADDRESS, 0);
        }

        /** Queues the decode of this part's first {@code count} images on {@code stream}: nvJPEG's status. */
        private int decode(int count, CudaStream stream) {
            if (count != initialized) {
                Nvjpeg.check(
                        nvjpeg.nvjpegDecodeBatchedInitialize(handle, state, count, 1, format),
                        "nvjpegDecodeBatchedInitialize");
                initialized = count;
            }
            int status = nvjpeg.nvjpegDecodeBatched(handle, state, dataPointers, lengths, images, stream.handle());
            if (status != Nvjpeg.NVJPEG_STATUS_SUCCESS) {
                initialized = 0;
            }
            return status;
        }

        private void destroy() {
            Nvjpeg.check(nvjpeg.nvjpegJpegStateDestroy(state), "nvjpegJpegStateDestroy");
        }
    }

    /**
     * A part decoded on a thread of its own, on a stream of its own, after what the caller's stream
     * had queued. The caller hands it a batch ({@link #start}) and takes the outcome ({@link #await});
     * the semaphores order each handover, so the fields between them are plain.
     */
    private final class Helper implements Runnable {
        private final Part part;
        private final CudaContext context;
        private final CudaEvent after;
        private final CudaStream stream;
        /** Recorded on {@link #stream} once the part's decode is queued. */
        private final CudaEvent done;

        private final Semaphore go = new Semaphore(0);
        private final Semaphore finished = new Semaphore(0);
        private final Thread thread;
        private volatile boolean stopping;
        private int count;
        private int status;
        private RuntimeException failure;

        private Helper(Part part, CudaContext context, CudaEvent after, int index) {
            this.part = part;
            this.context = context;
            this.after = after;
            CudaStream s = CudaStream.create(driver);
            try {
                this.done = CudaEvent.create(driver);
            } catch (RuntimeException e) {
                s.close();
                throw e;
            }
            this.stream = s;
            this.thread = Thread.ofPlatform()
                    .name("stoke-gpu-nvjpeg-part-" + index)
                    .daemon()
                    .start(this);
        }

        private void start(int images) {
            count = images;
            go.release(); // publishes count to the helper
        }

        /** Waits for the part; its failure, or null (its nvJPEG status is then {@link #status}). */
        private RuntimeException await() {
            finished.acquireUninterruptibly(); // publishes status and failure from the helper
            RuntimeException f = failure;
            failure = null;
            return f;
        }

        @Override
        public void run() {
            while (true) {
                go.acquireUninterruptibly();
                if (stopping) {
                    return;
                }
                try {
                    context.makeCurrent();
                    stream.waitFor(after);
                    status = part.decode(count, stream);
                    if (status == Nvjpeg.NVJPEG_STATUS_SUCCESS) {
                        done.record(stream);
                    }
                } catch (RuntimeException | Error e) {
                    failure = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                } finally {
                    finished.release();
                }
            }
        }

        /** Ends the thread, waits for its stream, and frees the stream, the event and the part's state. */
        private void stop() {
            stopping = true;
            go.release();
            boolean interrupted = false;
            while (true) {
                try {
                    thread.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // the thread ends at once; its stream must be waited for all the same
                }
            }
            try {
                stream.synchronize();
                stream.close();
                done.close();
                part.destroy();
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /**
     * An examiner for another thread: it reads the files' headers there, so that {@link #examine}
     * on this decoder's thread takes its verdicts as they are ({@link Files#examined}). Its own
     * scratch and, on the hardware engine, its own parsed stream (nvJPEG's streams are one thread's
     * each; the handle is shared). This decoder closes it at {@link #close}, after the caller has
     * made sure no thread still examines with it.
     */
    public Examiner newExaminer() {
        checkOpen();
        Examiner e = new Examiner();
        examiners.add(e);
        return e;
    }

    /**
     * Reads a file's header for this decoder, as {@link #examine} does: why nvJPEG is not given it, or
     * null with its size in {@link #width}/{@link #height}. Owner: one thread at a time, which may be
     * another than the decoder's (the scratch is a shared arena's); made and closed by the decoder.
     */
    public final class Examiner {
        /** Offsets are addresses: the files are handed by address, with no segment per file. */
        private static final MemorySegment MEMORY = NativeMemory.everything();

        private final Arena scratch = Arena.ofShared();
        private final MemorySegment components = scratch.allocate(JAVA_INT);
        private final MemorySegment subsampling = scratch.allocate(JAVA_INT);
        private final MemorySegment widths = scratch.allocate(JAVA_INT, Nvjpeg.MAX_COMPONENT);
        private final MemorySegment heights = scratch.allocate(JAVA_INT, Nvjpeg.MAX_COMPONENT);
        private final MemorySegment supported = scratch.allocate(JAVA_INT);
        private final MemorySegment
                jpegStream; // NULL unless on the hardware engine (its support check parses the headers)

        private Examiner() {
            MemorySegment js = MemorySegment.NULL;
            if (backend == Backend.HARDWARE) {
                try {
                    MemorySegment out = scratch.allocate(ADDRESS);
                    Nvjpeg.check(nvjpeg.nvjpegJpegStreamCreate(handle, out), "nvjpegJpegStreamCreate");
                    js = out.get(ADDRESS, 0);
                } catch (RuntimeException e) {
                    scratch.close();
                    throw e;
                }
            }
            jpegStream = js;
        }

        /**
         * Why nvJPEG is not given the file of {@code length} bytes at {@code address}, or null, with
         * its size in {@link #width}/{@link #height}.
         */
        public String examine(long address, long length) {
            int status = nvjpeg.nvjpegGetImageInfo(handle, address, length, components, subsampling, widths, heights);
            if (status != Nvjpeg.NVJPEG_STATUS_SUCCESS) {
                return "nvJPEG cannot read it as a JPEG (nvjpegGetImageInfo: " + Nvjpeg.statusName(status) + ")";
            }
            int c = components.get(JAVA_INT, 0);
            if (c != 1 && c != 3) {
                return c + " components (CMYK or YCCK), which nvJPEG's batched decoder does not convert";
            }
            if (c == 3 && JpegColourSpace.rgbCoded(MEMORY, address, length)) {
                return "coded in RGB, not YCbCr (an Adobe marker's transform 0, or components named R, G, B),"
                        + " which nvJPEG and the colour step would convert as YCbCr";
            }
            int css = subsampling.get(JAVA_INT, 0);
            if (c == 3 && (css == Nvjpeg.NVJPEG_CSS_UNKNOWN || css == Nvjpeg.NVJPEG_CSS_410V)) {
                return "a chroma subsampling nvJPEG does not name";
            }
            long w = widths.getAtIndex(JAVA_INT, 0);
            long h = heights.getAtIndex(JAVA_INT, 0);
            if (w <= 0 || h <= 0) {
                return "a header of " + w + " x " + h + " pixels";
            }
            if (w * h > maxPixels) {
                return w + " x " + h + " pixels, over the GPU decode's limit of " + maxPixels;
            }
            if (format == Nvjpeg.NVJPEG_OUTPUT_YUV && c == 3) {
                // nvJPEG writes each chroma plane at the size it reports; the planes are laid out from
                // the subsampling's. Checked here, before nvJPEG is given a pointer.
                int cw = widths.getAtIndex(JAVA_INT, 1);
                int ch = heights.getAtIndex(JAVA_INT, 1);
                if (!Planes.holds((int) w, (int) h, css, cw, ch)
                        || !Planes.holds(
                                (int) w,
                                (int) h,
                                css,
                                widths.getAtIndex(JAVA_INT, 2),
                                heights.getAtIndex(JAVA_INT, 2))) {
                    return "nvJPEG reports chroma of " + cw + " x " + ch + ", more than its subsampling lays out for a "
                            + w + " x " + h + " image";
                }
            }
            if (backend == Backend.HARDWARE) {
                // The headers alone, as NVIDIA's own samples, DALI and torchvision ask before the engine's
                // batched decode: the whole parse also walked the entropy-coded data, most of a file.
                status = nvjpeg.nvjpegJpegStreamParseHeader(handle, address, length, jpegStream);
                if (status != Nvjpeg.NVJPEG_STATUS_SUCCESS) {
                    return "nvJPEG cannot parse it (nvjpegJpegStreamParseHeader: " + Nvjpeg.statusName(status) + ")";
                }
                Nvjpeg.check(
                        nvjpeg.nvjpegDecodeBatchedSupported(handle, jpegStream, supported),
                        "nvjpegDecodeBatchedSupported");
                if (supported.get(JAVA_INT, 0) != 0) {
                    return "nvJPEG's hardware decoder does not take it (it takes single-scan baseline JPEGs, "
                            + "not progressive ones, 4:1:1 or 4:1:0)";
                }
            }
            return null;
        }

        /** The width of the file last examined, where nvJPEG takes it. */
        public int width() {
            return widths.getAtIndex(JAVA_INT, 0);
        }

        /** The height of the file last examined, where nvJPEG takes it. */
        public int height() {
            return heights.getAtIndex(JAVA_INT, 0);
        }

        /** The chroma subsampling of the file last examined ({@code NVJPEG_CSS_*}), where nvJPEG takes it. */
        public int subsampling() {
            return subsampling.get(JAVA_INT, 0);
        }

        private void close() {
            try {
                if (!jpegStream.equals(MemorySegment.NULL)) {
                    Nvjpeg.check(nvjpeg.nvjpegJpegStreamDestroy(jpegStream), "nvjpegJpegStreamDestroy");
                }
            } finally {
                scratch.close();
            }
        }
    }

    private void ensureCapacity(long bytes, CudaStream stream) {
        pixels = grown(pixels, bytes, stream);
    }

    /** {@code buffer}, or a larger one in its place where it holds fewer than {@code bytes}. */
    private DeviceBuffer grown(DeviceBuffer buffer, long bytes, CudaStream stream) {
        if (buffer != null && buffer.byteSize() >= bytes) {
            return buffer;
        }
        if (buffer != null) {
            // The last batch's pixels may still be read by work queued on the stream (and written by
            // a helper's, where the caller's stream did not come to wait for it: a part that failed).
            stream.synchronize();
            for (Helper h : helpers) {
                h.stream.synchronize();
            }
            buffer.close();
        }
        // Grown by half again, so that a batch of slowly growing images does not reallocate each time.
        return DeviceBuffer.allocate(driver, Math.max(bytes, bytes + bytes / 2));
    }

    private static long align(long offset) {
        return (offset + ALIGNMENT - 1) & -ALIGNMENT;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the GPU JPEG decoder is closed");
        }
    }

    /** Waits for the last batch's decode on its stream, then frees nvJPEG's handles and the device memory. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        decoded.begin(0);
        try {
            if (lastStream != null && !lastStream.isClosed()) {
                lastStream.synchronize(); // even where the caller left on an exception
            }
            for (Helper h : helpers) {
                h.stop(); // its stream waited for (it may write the pixels), then its state freed
            }
            if (toRgb != null) {
                toRgb.close();
                kernels.close();
            }
            if (pixels != null) {
                pixels.close();
            }
            if (planes != null) {
                planes.close();
            }
            for (Examiner e : examiners) {
                e.close(); // before the handle they examine with
            }
            own.close();
            if (queuedBefore != null) {
                queuedBefore.close();
            }
            first.destroy();
            Nvjpeg.check(nvjpeg.nvjpegDestroy(handle), "nvjpegDestroy");
        } finally {
            arena.close();
        }
    }

    /**
     * A batch's outcome, per file in the order given: on the GPU (its pixels' device address, size
     * and pitch) or left to the CPU (why). One per decoder, overwritten by each {@link #decode}.
     */
    public final class Decoded {
        private final boolean[] gpu;
        private final long[] offset;
        private final int[] width;
        private final int[] height;
        /** nvJPEG's chroma subsampling, and where the image's planes start ({@link Planes}). */
        private final int[] css;

        private final long[] planesAt;
        private final String[] cpuReason;
        private int count;
        private long base;

        private Decoded(int capacity) {
            gpu = new boolean[capacity];
            offset = new long[capacity];
            width = new int[capacity];
            height = new int[capacity];
            css = new int[capacity];
            planesAt = new long[capacity];
            cpuReason = new String[capacity];
        }

        private void begin(int n) {
            count = n;
            base = 0;
        }

        private void toGpu(int i, long off, int w, int h, int subsampling, long planes) {
            gpu[i] = true;
            offset[i] = off;
            width[i] = w;
            height[i] = h;
            css[i] = subsampling;
            planesAt[i] = planes;
            cpuReason[i] = null;
        }

        private void toCpu(int i, String why) {
            gpu[i] = false;
            width[i] = 0;
            height[i] = 0;
            cpuReason[i] = why;
        }

        /** Files in the batch. */
        public int size() {
            return count;
        }

        /** Whether file {@code i} was decoded on the GPU. */
        public boolean onGpu(int i) {
            return gpu[Objects.checkIndex(i, count)];
        }

        /** Why file {@code i} is left to the CPU; null where it was decoded on the GPU. */
        public String cpuReason(int i) {
            return cpuReason[Objects.checkIndex(i, count)];
        }

        /** The {@code CUdeviceptr} of file {@code i}'s first pixel (interleaved RGB, {@link #pitch} bytes a row). */
        public long deviceAddress(int i) {
            requireGpu(i);
            return base + offset[i];
        }

        public int width(int i) {
            requireGpu(i);
            return width[i];
        }

        public int height(int i) {
            requireGpu(i);
            return height[i];
        }

        /** Bytes from one row of file {@code i}'s pixels to the next. */
        public long pitch(int i) {
            requireGpu(i);
            return 3L * width[i]; // rows packed: an image's pixels are one run of device memory
        }

        /** Waits for the stream's work, then copies file {@code i}'s pixels, packed RGB rows, into {@code dst}. */
        public void copyToHost(int i, CudaStream stream, MemorySegment dst) {
            requireGpu(i);
            long row = 3L * width[i];
            if (dst.byteSize() < row * height[i]) {
                throw new IndexOutOfBoundsException(
                        "host segment of " + dst.byteSize() + " bytes for " + width[i] + " x " + height[i] + " RGB");
            }
            stream.synchronize();
            // pitch == 3 x width: the rows are packed on the device too, so one copy moves them all.
            pixels.copyToHost(dst.asSlice(0, row * height[i]), offset[i]);
        }

        private void requireGpu(int i) {
            if (!onGpu(i)) {
                throw new IllegalStateException("file " + i + " was left to the CPU: " + cpuReason[i]);
            }
            if (closed || base == 0) {
                throw new IllegalStateException("the batch's pixels are gone (the decoder moved on or closed)");
            }
        }
    }
}
