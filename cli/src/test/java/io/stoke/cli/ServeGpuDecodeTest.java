package io.stoke.cli;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.stoke.ffm.cuda.CudaContext;
import io.stoke.ffm.cuda.CudaDriver;
import io.stoke.ffm.testing.CudaTestDouble;
import io.stoke.loader.Batch;
import io.stoke.loader.RingConsumer;
import io.stoke.loader.testing.BadImages;
import java.awt.image.BufferedImage;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.function.BiFunction;
import java.util.zip.CRC32;
import javax.imageio.ImageIO;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stoke serve --decode gpu|auto} on the nvJPEG and CUDA test doubles, read by a consumer in
 * another process (this one) against {@code --decode cpu} on the same files and settings: every
 * batch's sequence, epoch, index, samples, labels, statuses and pixels, a bad file's batch under
 * both policies, and the end of the stream. The doubles decode with libjpeg and run the kernels'
 * source on the host: this checks the wiring into the ring, not a GPU.
 */
class ServeGpuDecodeTest {
    @TempDir
    Path tmp;

    private final List<Path> rings = new ArrayList<>();

    @AfterEach
    void removeRings() throws Exception {
        for (Path r : rings) {
            Files.deleteIfExists(r);
        }
    }

    /** The doubles' library, for a server's JVM (this one's properties are cleared again). */
    private static Path doubleLibrary() {
        Path library = GpuDoubles.open("serve --decode gpu").library().toAbsolutePath();
        GpuDoubles.clear();
        return library;
    }

    /** Starts {@code stoke serve DATA} in a JVM pointed at the doubles, and waits for its ring. */
    private ShmTestSupport.Child serve(Path data, String decode, String onError, String... more) throws Exception {
        Path ring = ShmTestSupport.shmPath("gpu-" + decode);
        rings.add(ring);
        Path dbl = doubleLibrary();
        List<String> cmd = ShmTestSupport.javaCommand(
                Main.class.getName(),
                "serve",
                data.toString(),
                "--ring",
                ring.toString(),
                "--decode",
                decode,
                "--on-error",
                onError,
                "--batch-size",
                "4",
                "--workers",
                "2",
                "--epochs",
                "2",
                "--slots",
                "3",
                "--shuffle",
                "--seed",
                "5",
                "--resize",
                "24",
                "--crop",
                "16",
                "--dct-scaling",
                "none",
                "--status-interval",
                "0");
        cmd.addAll(List.of(more));
        cmd.add(1, "-Dstoke.cuda.path=" + dbl);
        cmd.add(2, "-Dstoke.nvjpeg.path=" + dbl);
        ShmTestSupport.Child p = new ShmTestSupport.Child(cmd);
        p.await(l -> l.contains("ready:"), 30_000);
        p.ring = ring;
        return p;
    }

    /** Every batch the ring hands out, a line each (and the failure that ended the reading, if any). */
    private static List<String> read(Path ring) {
        return read(ring, Batch::sample);
    }

    /** As {@link #read(Path)}, with sample {@code i} of a batch from {@code sample}. */
    private static List<String> read(Path ring, BiFunction<Batch, Integer, MemorySegment> sample) {
        List<String> lines = new ArrayList<>();
        CRC32 crc = new CRC32();
        try (RingConsumer c =
                RingConsumer.attach(ring, Duration.ofSeconds(30), new BackoffIdleStrategy(10, 10, 1_000, 100_000))) {
            while (true) {
                Batch b;
                try {
                    b = c.next();
                } catch (RuntimeException e) {
                    lines.add("failed: " + e.getClass().getSimpleName());
                    continue; // the next batch follows a failed one, as the loader publishes them
                }
                if (b == null) {
                    break;
                }
                try (b) {
                    StringBuilder line = new StringBuilder(String.format(
                            "%d %d/%d%s:", b.sequence(), b.epoch(), b.batchIndex(), b.lastInEpoch() ? " last" : ""));
                    for (int i = 0; i < b.size(); i++) {
                        crc.reset();
                        crc.update(sample.apply(b, i).asByteBuffer());
                        line.append(String.format(" %d:%d:%08x", b.index(i), b.label(i), crc.getValue()));
                    }
                    b.skipped()
                            .forEach(e -> line.append(" skipped ")
                                    .append(e.position())
                                    .append(' ')
                                    .append(e.status()));
                    lines.add(line.toString());
                }
            }
        }
        return lines;
    }

    private List<String> served(Path data, String decode, String onError) throws Exception {
        try (ShmTestSupport.Child p = serve(data, decode, onError)) {
            List<String> lines = read(p.ring);
            assertEquals(0, p.exit(30_000), p.output());
            if (!decode.equals("cpu")) {
                assertTrue(p.output().contains("decoding on CUDA device 0 (EXPERIMENTAL)"), p.output());
                assertTrue(p.output().contains("decoded on the GPU"), p.output());
            }
            assertFalse(Files.exists(p.ring), "the ring's file is removed at the end");
            return lines;
        }
    }

    @Test
    void theRingHoldsTheCpuServersBatchesWithPixelsLabelsAndSkippedFiles() throws Exception {
        Path data = tmp.resolve("data");
        ShmTestSupport.makeDataset(data, 2, 5);
        ImageIO.write(
                new BufferedImage(30, 20, BufferedImage.TYPE_INT_RGB),
                "png",
                data.resolve("class0").resolve("zz.png").toFile());
        BadImages.allBadFolder(data);
        List<String> cpu = served(data, "cpu", "skip");
        List<String> gpu = served(data, "gpu", "skip");
        assertEquals(2 * 5, cpu.size(), String.join("\n", cpu)); // 20 files, batch 4, two epochs
        assertTrue(cpu.stream().anyMatch(l -> l.contains("skipped")), String.join("\n", cpu));
        assertEquals(String.join("\n", cpu), String.join("\n", gpu));
        assertEquals(String.join("\n", cpu), String.join("\n", served(data, "auto", "skip")));
    }

    @Test
    void underFailABadFilesBatchIsPublishedFailedAndTheRestFollow() throws Exception {
        Path data = tmp.resolve("data");
        ShmTestSupport.makeDataset(data, 2, 5);
        Files.write(data.resolve("class1").resolve("cut.jpg"), new byte[] {(byte) 0xFF, (byte) 0xD8, 1, 2, 3});
        List<String> cpu = served(data, "cpu", "fail");
        List<String> gpu = served(data, "gpu", "fail");
        assertEquals(2, cpu.stream().filter(l -> l.startsWith("failed: ")).count(), String.join("\n", cpu));
        assertEquals(String.join("\n", cpu), String.join("\n", gpu));
    }

    @Test
    void withDeviceSlotsEachBatchIsInItsSlotsDeviceAllocationWhichAnotherProcessOpensByIpc() throws Exception {
        Path data = tmp.resolve("data");
        ShmTestSupport.makeDataset(data, 2, 5);
        BadImages.allBadFolder(data);
        List<String> cpu = served(data, "cpu", "skip");
        Path described = tmp.resolve("device-slots.json");
        try (ShmTestSupport.Child p = serve(data, "gpu", "skip", "--device-slots-out", described.toString())) {
            // This process opens the producer's allocations through the double's driver, as the
            // Python package does through the real one.
            CudaTestDouble dbl = GpuDoubles.open("serve --device-slots-out");
            GpuDoubles.clear();
            CudaDriver d = dbl.driver();
            assertEquals(
                    "rw-------",
                    PosixFilePermissions.toString(Files.getPosixFilePermissions(described)),
                    "the handles open the slots: the file is the user's alone");
            JsonNode slots = new ObjectMapper().readTree(described.toFile());
            assertEquals(1, slots.get("version").asInt());
            assertTrue(slots.get("on_device").asBoolean(), slots.toString());
            JsonNode handles = slots.get("handles");
            assertEquals(3, handles.size(), "one allocation per slot: " + slots);
            long slotBytes = slots.get("slot_bytes").asLong();
            assertEquals(4L * 16 * 16 * 3, slotBytes, "a batch of uint8 16x16x3");
            long sampleBytes = slotBytes / 4;
            List<String> gpu;
            try (CudaContext _ = CudaContext.retainPrimary(d, 0);
                    Arena arena = Arena.ofConfined()) {
                MemorySegment[] device = new MemorySegment[handles.size()];
                MemorySegment handle = arena.allocate(CudaDriver.IPC_HANDLE_SIZE);
                MemorySegment out = arena.allocate(8);
                for (int s = 0; s < device.length; s++) {
                    byte[] h = HexFormat.of().parseHex(handles.get(s).asText());
                    handle.copyFrom(MemorySegment.ofArray(h));
                    d.check(
                            d.cuIpcOpenMemHandle_v2(out, handle, CudaDriver.IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                            "cuIpcOpenMemHandle_v2");
                    // The double's device memory is host memory: read it in place.
                    device[s] = MemorySegment.ofAddress(out.get(JAVA_LONG, 0)).reinterpret(slotBytes);
                }
                gpu = read(p.ring, (b, i) -> {
                    MemorySegment host = b.sample(i);
                    for (long k = 0; k < host.byteSize(); k++) {
                        if (host.get(JAVA_BYTE, k) != 0) {
                            throw new AssertionError("the ring's own pixels are written: batch " + b.sequence());
                        }
                    }
                    return device[b.slot()].asSlice(i * sampleBytes, sampleBytes);
                });
                for (MemorySegment m : device) {
                    d.check(d.cuIpcCloseMemHandle(m.address()), "cuIpcCloseMemHandle");
                }
            }
            assertEquals(0, p.exit(30_000), p.output());
            assertEquals(String.join("\n", cpu), String.join("\n", gpu));
        }
    }

    @Test
    void whereTheCpuDecodesTheDeviceSlotsFileSaysSoAndThePixelsAreInTheRing() throws Exception {
        Path data = tmp.resolve("data");
        ShmTestSupport.makeDataset(data, 2, 5);
        List<String> cpu = served(data, "cpu", "skip");
        Path described = tmp.resolve("device-slots.json");
        Files.createFile(described);
        try (ShmTestSupport.Child p = serve(data, "cpu", "skip", "--device-slots-out", described.toString())) {
            List<String> lines = read(p.ring);
            assertEquals(0, p.exit(30_000), p.output());
            assertEquals(String.join("\n", cpu), String.join("\n", lines));
        }
        JsonNode slots = new ObjectMapper().readTree(described.toFile());
        assertFalse(slots.get("on_device").asBoolean(), slots.toString());
        assertEquals(0, slots.get("handles").size(), slots.toString());
    }
}
