#!/usr/bin/env python3
"""The Python consumer of ShmHandoff (run by it with --consumer python; not meant to be run alone).

Prints "median p99 mean max n" in nanoseconds: the time from the Java producer's publish (its
System.nanoTime(), CLOCK_MONOTONIC) to Ring.next() returning the batch here (time.monotonic_ns(),
the same clock).
"""
import sys
import time

import numpy as np

from stoke import Ring


def main():
    path, iterations, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    lat = np.zeros(iterations, dtype=np.int64)
    n = seen = 0
    sink = 0
    with Ring(path, spin=float("inf")) as ring:  # busy-poll, never sleep
        slots = ring._g.slot_count
        while True:
            b = ring.next()
            now = time.monotonic_ns()
            if b is None:
                break
            flat = b.pixels.reshape(-1)
            stamp = int(flat[:8].view("<i8")[0])
            if seen < slots:
                sink += int(flat[::4096].sum())  # touch every page once, as a long-running consumer has
            if seen >= warmup and n < iterations:
                lat[n] = now - stamp
                n += 1
            seen += 1
    lat = np.sort(lat[:n])
    p99 = lat[min(n - 1, int(np.ceil(n * 0.99)) - 1)]
    print(int(lat[n // 2]), int(p99), int(lat.mean()), int(lat[-1]), n, flush=True)


if __name__ == "__main__":
    main()
