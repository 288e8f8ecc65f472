package io.stoke.serve;

import io.stoke.ffm.cuda.CudaDevice;
import io.stoke.ring.InheritedDescriptor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * The device slots' description ({@code stoke serve --device-slots-out}): where each ring slot's
 * pixels are when they stay on the GPU. One snake_case JSON object, written once before the first
 * batch is published; its format is specified once, in docs/shared-memory.md ("Device slots"), and
 * its reader is the Python package's {@code stoke._device_slots}. Where the CPU decodes after all,
 * it says so ({@code on_device} false, no handles): the pixels are then in the ring.
 *
 * @param version the format's version, 1
 * @param onDevice whether the pixels are in the slots' device allocations (else in the ring)
 * @param device the producer's device ordinal (as its {@code CUDA_VISIBLE_DEVICES} numbers them), -1 without
 * @param pciBusId the device's {@code domain:bus:device.function}, the same in every process; null without
 * @param slotBytes each slot's device allocation, bytes (a whole batch's pixels); 0 without
 * @param handles each slot's {@code CUipcMemHandle}, in slot order, as 128 lowercase hex digits
 */
record DeviceSlotsFile(
        int version, boolean onDevice, int device, String pciBusId, long slotBytes, List<String> handles) {
    static final int VERSION = 1;

    private static final Set<OpenOption> NAMED = Set.of(
            StandardOpenOption.CREATE,
            StandardOpenOption.TRUNCATE_EXISTING,
            StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS);
    private static final Set<OpenOption> INHERITED = Set.of(StandardOpenOption.WRITE);
    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));

    /** The description of slots whose IPC handles are {@code handles}, on {@code device}. */
    static DeviceSlotsFile of(CudaDevice device, long slotBytes, List<byte[]> handles) {
        HexFormat hex = HexFormat.of();
        return new DeviceSlotsFile(
                VERSION,
                true,
                device.ordinal(),
                device.pciBusId(),
                slotBytes,
                handles.stream().map(hex::formatHex).toList());
    }

    /** The pixels are in the ring: the CPU decodes. */
    static DeviceSlotsFile onCpu() {
        return new DeviceSlotsFile(VERSION, false, -1, null, 0, List.of());
    }

    /**
     * Writes it to {@code file}: /dev/fd/N (stoke.DataLoader's anonymous file) in place; a named file
     * made {@code 0600}, since the handles open the slots to whoever reads them, and a link planted
     * there refused.
     */
    void write(Path file) {
        byte[] json = (JsonLinesLog.line(this) + "\n").getBytes(StandardCharsets.UTF_8);
        try (SeekableByteChannel out = InheritedDescriptor.names(file)
                ? Files.newByteChannel(file, INHERITED)
                : Files.newByteChannel(file, NAMED, OWNER_ONLY)) {
            ByteBuffer b = ByteBuffer.wrap(json);
            while (b.hasRemaining()) {
                out.write(b);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }
}
