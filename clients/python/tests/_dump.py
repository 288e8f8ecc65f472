"""A test aid, not part of the package: prints every batch and sample of a ring.

    PYTHONPATH=clients/python python3 -m tests._dump RING [--hold-after N]
    python3 clients/python/tests/_dump.py RING [--hold-after N]

The Java suite (ShmTestSupport's PYTHON consumer) compares its lines with the producer's data and
with native/stoke_consumer.c's, which prints the same:
  B <sequence> <epoch> <batch index> <samples>
  S <sequence> <dataset index> <label> <status> <crc32 of the sample's pixels, hex>
  END | HOLDING <sequence> | ERROR <message> (exit status 3)
"""
import os
import signal
import sys
import zlib
from typing import List

# Run as a script or as tests._dump, the package is the folder above this one.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from stoke.ring import ProducerGoneError, Ring, RingBusyError, RingFormatError  # noqa: E402


def main(argv: List[str]) -> int:
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
