package io.stoke.gpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.stoke.ffm.JpegDecompressor;
import io.stoke.ffm.TurboJpeg;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.cuda.CudaStream;
import io.stoke.ffm.cuda.DeviceBuffer;
import io.stoke.ffm.cuda.Nvjpeg;
import io.stoke.loader.resample.ResampleTables;
import io.stoke.loader.resample.Resampler;
import io.stoke.loader.transform.TransformSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * nvJPEG's decode against TurboJPEG's on the same files (what {@code stoke gpu-check --decode DIR}
 * runs): the pixels of every image the GPU takes, compared with the CPU's full-size decode
 * (accurate DCT, fancy upsampling: the CPU path with {@code --dct-scaling none}), and both decoders'
 * rates; and the device's resize ({@link DeviceResize}, the evaluation transform) of each image
 * against the CPU resampler's on the GPU's own decoded pixels, which must be the same bytes. On a
 * GPU this says how far nvJPEG's pixels are from the CPU's and whether Stoke's CUDA resize kernels
 * are exact; on the test doubles it checks the wiring only (the double decodes with libjpeg and
 * resizes with the kernels' own source compiled for the host, so every difference there is a fault).
 */
final class DecodeComparison {
    private DecodeComparison() {}

    /** The JPEG files under {@code dir} (by name: .jpg, .jpeg, any case), sorted, at most {@code limit}. */
    static List<Path> jpegsUnder(Path dir, int limit) throws IOException {
        try (Stream<Path> all = Files.walk(dir)) {
            return all.filter(Files::isRegularFile)
                    .filter(p -> {
                        String n = p.getFileName().toString().toLowerCase(Locale.ROOT);
                        return n.endsWith(".jpg") || n.endsWith(".jpeg");
                    })
                    .sorted()
                    .limit(limit)
                    .toList();
        }
    }

    /** The resize checked on the device: the evaluation transform's, Resize(256) + CenterCrop(224), bilinear. */
    static final TransformSpec RESIZE = TransformSpec.defaults();

    static GpuCheck.Decode run(CudaDriver driver, Nvjpeg nvjpeg, List<Path> files, int batch) {
        int sample = (int) RESIZE.sampleBytes();
        try (Arena arena = Arena.ofConfined();
                CudaStream stream = CudaStream.create(driver);
                JpegDecompressor cpu = new JpegDecompressor();
                DeviceKernels kernels = new DeviceKernels(driver);
                DeviceResize resize = new DeviceResize(driver, kernels, batch);
                Resampler resampler = new Resampler(RESIZE);
                DeviceBuffer resized = DeviceBuffer.allocate(driver, (long) batch * sample)) {
            ResampleTables[] tables = new ResampleTables[batch];
            for (int i = 0; i < batch; i++) {
                tables[i] = new ResampleTables();
            }
            MemorySegment deviceSample = arena.allocate(sample);
            MemorySegment hostSample = arena.allocate(sample);
            long resizeBytes = 0;
            long resizeDiffering = 0;
            List<MemorySegment> bytes = new ArrayList<>(files.size());
            long maxPixels = 1;
            for (Path f : files) {
                MemorySegment s = read(f, arena);
                bytes.add(s);
                if (cpu.readHeader(s, s.byteSize()) == 0) {
                    maxPixels = Math.max(maxPixels, (long) cpu.width() * cpu.height());
                }
            }
            Map<String, Integer> reasons = new TreeMap<>();
            int onGpu = 0;
            long gpuNanos = 0;
            long resizeNanos = 0;
            long cpuNanos = 0;
            int cpuDecoded = 0;
            double sum = 0;
            long values = 0;
            int largest = 0;
            Path largestFile = null;
            try (GpuJpegDecoder dec = GpuJpegDecoder.open(driver, nvjpeg, true, batch, maxPixels)) {
                MemorySegment gpuRgb = arena.allocate(3 * maxPixels);
                MemorySegment cpuRgb = arena.allocate(3 * maxPixels);
                MemorySegment gpuRgbx = arena.allocate(4 * maxPixels);
                for (int from = 0; from < bytes.size(); from += batch) {
                    List<MemorySegment> chunk = bytes.subList(from, Math.min(bytes.size(), from + batch));
                    long t0 = System.nanoTime();
                    GpuJpegDecoder.Decoded d = dec.decode(chunk, stream);
                    stream.synchronize();
                    gpuNanos += System.nanoTime() - t0;
                    // The device's resize of each image nvJPEG took, into sample slot i.
                    long r0 = System.nanoTime();
                    resize.begin();
                    for (int i = 0; i < d.size(); i++) {
                        if (d.onGpu(i)) {
                            resampler.evalTables(d.width(i), d.height(i), tables[i]);
                            resize.add(d, i, tables[i], resized, (long) i * sample);
                        }
                    }
                    resize.launch(stream);
                    stream.synchronize();
                    resizeNanos += System.nanoTime() - r0;
                    for (int i = 0; i < d.size(); i++) {
                        if (!d.onGpu(i)) {
                            reasons.merge(d.cpuReason(i), 1, Integer::sum);
                            continue;
                        }
                        onGpu++;
                        int w = d.width(i);
                        int h = d.height(i);
                        long n = 3L * w * h;
                        d.copyToHost(i, stream, gpuRgb);
                        // The CPU resampler on the GPU's own decoded pixels: the device's resize must be its bytes.
                        for (long p = 0; p < (long) w * h; p++) {
                            MemorySegment.copy(gpuRgb, 3 * p, gpuRgbx, 4 * p, 3);
                        }
                        resampler.resizeCenterCrop(gpuRgbx, w, h, w, h, hostSample, 0);
                        resized.copyToHost(deviceSample, (long) i * sample);
                        for (long o = 0; o < sample; o++) {
                            if (deviceSample.get(JAVA_BYTE, o) != hostSample.get(JAVA_BYTE, o)) {
                                resizeDiffering++;
                            }
                        }
                        resizeBytes += sample;
                        MemorySegment file = chunk.get(i);
                        long c0 = System.nanoTime();
                        int rc = cpu.decompress(file, file.byteSize(), cpuRgb, w, 3 * w, h, TurboJpeg.TJPF_RGB, 0);
                        cpuNanos += System.nanoTime() - c0;
                        if (rc != 0 && cpu.errorCode() != TurboJpeg.TJERR_WARNING) {
                            reasons.merge(
                                    "decoded on the GPU, refused by TurboJPEG: " + cpu.errorMessage(), 1, Integer::sum);
                            continue;
                        }
                        cpuDecoded++;
                        for (long o = 0; o < n; o++) {
                            int diff = Math.abs((gpuRgb.get(JAVA_BYTE, o) & 0xFF) - (cpuRgb.get(JAVA_BYTE, o) & 0xFF));
                            sum += diff;
                            if (diff > largest) {
                                largest = diff;
                                largestFile = files.get(from + i);
                            }
                        }
                        values += n;
                    }
                }
                return new GpuCheck.Decode(
                        dec.backend().name(),
                        dec.backendNote(),
                        files.size(),
                        onGpu,
                        reasons,
                        values == 0 ? 0 : sum / values,
                        largest,
                        largestFile,
                        gpuNanos == 0 ? 0 : files.size() * 1e9 / gpuNanos,
                        gpuNanos + resizeNanos == 0 ? 0 : files.size() * 1e9 / (gpuNanos + resizeNanos),
                        cpuNanos == 0 ? 0 : cpuDecoded * 1e9 / cpuNanos,
                        resizeBytes,
                        resizeDiffering);
            }
        }
    }

    private static MemorySegment read(Path f, Arena arena) {
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
            long size = ch.size();
            MemorySegment s = arena.allocate(Math.max(1, size));
            long done = 0;
            while (done < size) {
                int n = ch.read(s.asSlice(done).asByteBuffer());
                if (n < 0) {
                    throw new IOException("ended at byte " + done + " of " + size);
                }
                done += n;
            }
            return s.asSlice(0, size);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + f + ": " + e.getMessage(), e);
        }
    }
}
