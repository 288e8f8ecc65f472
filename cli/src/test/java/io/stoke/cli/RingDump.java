package io.stoke.cli;

import io.stoke.loader.Batch;
import io.stoke.loader.RingConsumer;
import io.stoke.ring.ProducerGoneException;
import io.stoke.ring.RingFormatException;
import java.nio.file.Path;
import java.util.zip.CRC32;

/**
 * The Java twin of native/stoke_consumer.c and {@code clients/python/tests/_dump.py}, for the
 * cross-process tests: prints B/S lines per batch and sample, END, HOLDING, or ERROR (exit 3).
 */
public final class RingDump {
    private RingDump() {}

    public static void main(String[] args) throws Exception {
        long holdAfter = args.length >= 3 && args[1].equals("--hold-after") ? Long.parseLong(args[2]) : -1;
        StringBuilder out = new StringBuilder();
        CRC32 crc = new CRC32();
        try (RingConsumer ring = RingConsumer.attach(Path.of(args[0]))) {
            long taken = 0;
            for (Batch batch : ring) {
                out.setLength(0);
                out.append("B ")
                        .append(batch.sequence())
                        .append(' ')
                        .append(batch.epoch())
                        .append(' ')
                        .append(batch.batchIndex())
                        .append(' ')
                        .append(batch.size())
                        .append('\n');
                for (int i = 0; i < batch.size(); i++) {
                    crc.reset();
                    crc.update(batch.sample(i).asByteBuffer());
                    out.append("S ")
                            .append(batch.sequence())
                            .append(' ')
                            .append(batch.index(i))
                            .append(' ')
                            .append(batch.label(i))
                            .append(' ')
                            .append(batch.status(i).code())
                            .append(' ')
                            .append(String.format("%08x", crc.getValue()))
                            .append('\n');
                }
                System.out.print(out);
                if (taken++ == holdAfter) {
                    System.out.println("HOLDING " + batch.sequence());
                    System.out.flush();
                    Thread.sleep(Long.MAX_VALUE);
                }
                System.out.flush();
                batch.close();
            }
            System.out.println("END");
        } catch (RingFormatException | ProducerGoneException e) {
            System.out.println("ERROR " + e.getMessage());
            System.out.flush();
            System.exit(3);
        }
        System.out.flush();
    }
}
