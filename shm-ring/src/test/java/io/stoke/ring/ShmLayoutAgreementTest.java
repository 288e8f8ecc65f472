package io.stoke.ring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.agrona.concurrent.ringbuffer.RecordDescriptor;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** native/stoke_ring.h and {@link RingLayout} must describe the same bytes. */
class ShmLayoutAgreementTest {
    private static final Pattern DEFINE = Pattern.compile("^#define\\s+(STOKE_[A-Z0-9_]+)\\s+(\\S.*)$");

    @TempDir
    Path tmp;

    /** Every object-like STOKE_ macro, compiled and printed by gcc, equals the Java constant of the same name. */
    @Test
    void everyHeaderConstantEqualsTheJavaConstant() throws Exception {
        NativeTools.requireGcc();
        List<String> names = new ArrayList<>();
        for (String line : Files.readAllLines(NativeTools.nativeDir().resolve("stoke_ring.h"))) {
            Matcher m = DEFINE.matcher(line.strip());
            // Sample status codes are the loader's (SampleStatus), checked by SampleStatusTablesTest.
            if (m.matches()
                    && !m.group(1).equals("STOKE_RING_H")
                    && !m.group(1).startsWith("STOKE__")
                    && !isSampleStatus(m.group(1))) {
                names.add(m.group(1));
            }
        }
        assertTrue(names.size() > 60, "found only " + names.size() + " constants in stoke_ring.h");
        StringBuilder c = new StringBuilder("#include <stdio.h>\n#include \"stoke_ring.h\"\nint main(void) {\n");
        for (String n : names) {
            c.append("  printf(\"%s %lld\\n\", \"")
                    .append(n)
                    .append("\", (long long)(")
                    .append(n)
                    .append("));\n");
        }
        c.append("  return 0;\n}\n");
        Path src = Files.writeString(tmp.resolve("constants.c"), c);
        Path exe = NativeTools.compile(src, tmp.resolve("constants"));
        NativeTools.Result r = NativeTools.run(List.of(exe.toString()));
        assertEquals(0, r.exit(), r.out());

        Map<String, Long> java = new LinkedHashMap<>();
        for (Field f : RingLayout.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && (f.getType() == int.class || f.getType() == long.class)) {
                java.put("STOKE_" + f.getName(), ((Number) f.get(null)).longValue());
            }
        }
        int compared = 0;
        for (String line : r.out().split("\n")) {
            String[] kv = line.split(" ");
            assertTrue(java.containsKey(kv[0]), kv[0] + " in stoke_ring.h has no twin in RingLayout");
            assertEquals(java.get(kv[0]).longValue(), Long.parseLong(kv[1]), kv[0]);
            compared++;
        }
        assertEquals(names.size(), compared);
        // Everything Java names must be in the header too, or a C consumer would miss it.
        for (String name : java.keySet()) {
            assertTrue(names.contains(name), name + " from RingLayout is missing in stoke_ring.h");
        }
    }

    /** {@code STOKE_SAMPLE_OK} and its kin; not {@code STOKE_SAMPLE_BYTES_OFFSET}. */
    static boolean isSampleStatus(String macro) {
        return macro.startsWith("STOKE_SAMPLE_") && !macro.endsWith("_OFFSET");
    }

    /** The Agrona format that the header repeats is the one of the Agrona on the classpath. */
    @Test
    void queueFormatIsAgronas() {
        assertEquals(RingBufferDescriptor.TAIL_POSITION_OFFSET, RingLayout.QUEUE_TAIL_POSITION_OFFSET);
        assertEquals(RingBufferDescriptor.HEAD_CACHE_POSITION_OFFSET, RingLayout.QUEUE_HEAD_CACHE_POSITION_OFFSET);
        assertEquals(RingBufferDescriptor.HEAD_POSITION_OFFSET, RingLayout.QUEUE_HEAD_POSITION_OFFSET);
        assertEquals(RingBufferDescriptor.TRAILER_LENGTH, RingLayout.QUEUE_TRAILER_LENGTH);
        assertEquals(RecordDescriptor.HEADER_LENGTH, RingLayout.QUEUE_RECORD_HEADER_LENGTH);
        assertEquals(RecordDescriptor.ALIGNMENT, RingLayout.QUEUE_RECORD_ALIGNMENT);
    }

    /** The C validator derives the same offsets as {@link RingGeometry} for rings Java wrote. */
    @Test
    void cValidatorDerivesTheJavaGeometry() throws Exception {
        NativeTools.requireGcc();
        String c = """
                #include <fcntl.h>
                #include <stdio.h>
                #include <sys/mman.h>
                #include <sys/stat.h>
                #include <unistd.h>
                #include "stoke_ring.h"
                int main(int argc, char **argv) {
                  int fd = open(argv[1], O_RDONLY); struct stat st; fstat(fd, &st);
                  void *b = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
                  stoke_geometry g; char err[256];
                  if (stoke_ring_validate(b, st.st_size, &g, err, sizeof err)) { printf("ERROR %s\\n", err); return 3; }
                  printf("%lld %lld %lld %lld %lld %d %d %d %d %d %lld\\n", (long long)g.sample_bytes, (long long)g.slot_stride,
                    (long long)g.ready_queue_offset, (long long)g.free_queue_offset, (long long)g.slots_offset,
                    g.queue_length, g.labels_offset, g.indices_offset, g.status_offset, g.pixels_offset, (long long)g.total_length);
                  return 0;
                }
                """;
        Path exe = NativeTools.compile(Files.writeString(tmp.resolve("geometry.c"), c), tmp.resolve("geometry"));
        RingGeometry[] geometries = {
            new RingGeometry(1, 1, RingLayout.DTYPE_UINT8, RingLayout.LAYOUT_HWC, 1, 1, 3),
            new RingGeometry(4, 32, RingLayout.DTYPE_UINT8, RingLayout.LAYOUT_HWC, 64, 64, 3),
            new RingGeometry(3, 7, RingLayout.DTYPE_FLOAT32, RingLayout.LAYOUT_CHW, 3, 17, 19),
            new RingGeometry(100, 3, RingLayout.DTYPE_FLOAT32, RingLayout.LAYOUT_CHW, 3, 8, 8),
        };
        for (RingGeometry g : geometries) {
            Path file = ShmRingTest.shmPath("agree");
            try (ShmRing _ = ShmRing.create(file, g, null)) {
                NativeTools.Result r = NativeTools.run(List.of(exe.toString(), file.toString()));
                assertEquals(0, r.exit(), r.out());
                String expected = g.sampleBytes() + " " + g.slotStride() + " " + g.readyQueueOffset() + " "
                        + g.freeQueueOffset() + " " + g.slotsOffset() + " " + g.queueLength() + " "
                        + g.slotLabelsOffset()
                        + " " + g.slotIndicesOffset() + " " + g.slotStatusOffset() + " " + g.slotPixelsOffset() + " "
                        + g.totalLength();
                assertEquals(expected, r.out().strip(), g.toString());
            }
        }
    }
}
