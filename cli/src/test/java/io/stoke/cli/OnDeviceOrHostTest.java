package io.stoke.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link OnDeviceOrHost}'s three states, on plain batches (integers) and rows: which path embeds
 * each batch, what is said, and when a refusal is thrown. {@code EmbedGpuDecodeTest} runs it wired
 * into {@code stoke embed}'s device batches and ONNX Runtime.
 */
class OnDeviceOrHostTest {
    final List<String> calls = new ArrayList<>();
    final List<String> said = new ArrayList<>();
    final MemorySegment deviceRows = Arena.global().allocate(4);
    final MemorySegment hostRows = Arena.global().allocate(4);

    OnDeviceOrHost<Integer> refusingFrom(int firstRefused) {
        return new OnDeviceOrHost<>(
                batch -> {
                    calls.add("device " + batch);
                    if (batch >= firstRefused) {
                        throw new IllegalStateException("refused batch " + batch);
                    }
                    return deviceRows;
                },
                batch -> {
                    calls.add("host " + batch);
                    return hostRows;
                },
                said::add);
    }

    @Test
    void batchesStayOnTheDeviceWhileItTakesThem() throws Exception {
        OnDeviceOrHost<Integer> inference = refusingFrom(Integer.MAX_VALUE);
        for (int b = 0; b < 3; b++) {
            assertSame(deviceRows, inference.embed(b));
        }
        assertEquals(List.of("device 0", "device 1", "device 2"), calls);
        assertEquals(List.of(), said);
    }

    @Test
    void aRefusedFirstBatchIsSaidOnceAndEveryBatchGoesThroughTheHostWithoutAskingAgain() throws Exception {
        OnDeviceOrHost<Integer> inference = refusingFrom(0);
        for (int b = 0; b < 3; b++) {
            assertSame(hostRows, inference.embed(b));
        }
        assertEquals(List.of("device 0", "host 0", "host 1", "host 2"), calls);
        assertEquals(List.of("refused batch 0"), said);
    }

    @Test
    void aRefusalAfterTheDevicePathWorkedIsThrownNotHidden() throws Exception {
        OnDeviceOrHost<Integer> inference = refusingFrom(2);
        inference.embed(0);
        inference.embed(1);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> inference.embed(2));
        assertEquals("refused batch 2", e.getMessage());
        assertEquals(List.of("device 0", "device 1", "device 2"), calls);
        assertEquals(List.of(), said);
    }
}
