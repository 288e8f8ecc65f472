"""python3 -m stoke.dump RING [--hold-after N]: prints every batch and sample of a ring.

Lines (the same as native/stoke_consumer.c, which the tests compare with the producer's data):
  B <sequence> <epoch> <batch index> <samples>
  S <sequence> <dataset index> <label> <status> <crc32 of the sample's pixels, hex>
  END | HOLDING <sequence> | ERROR <message> (exit status 3)
"""
import signal
import sys
import zlib

from .ring import Ring, RingFormatError, ProducerGoneError, RingBusyError


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    hold_after = int(argv[2]) if len(argv) >= 3 and argv[1] == "--hold-after" else -1
    out = sys.stdout
    try:
        with Ring(argv[0]) as ring:
            for taken, batch in enumerate(ring):
                out.write(f"B {batch.sequence} {batch.epoch} {batch.batch_index} {batch.size}\n")
                for i in range(batch.size):
                    crc = zlib.crc32(batch.pixels[i])
                    out.write(f"S {batch.sequence} {int(batch.indices[i])} {int(batch.labels[i])} "
                              f"{int(batch.status[i])} {crc:08x}\n")
                if taken == hold_after:
                    out.write(f"HOLDING {batch.sequence}\n")
                    out.flush()
                    while True:
                        signal.pause()
                out.flush()
        out.write("END\n")
        return 0
    except (RingFormatError, ProducerGoneError, RingBusyError, OSError) as e:
        out.write(f"ERROR {e}\n")
        return 3
    finally:
        out.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
