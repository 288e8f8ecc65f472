"""The soak's Python consumer of a ring that ``./stoke serve`` writes (scenario b); started by soak.py.

One JSON line per batch to LOG (epoch, batch index, dataset indices, indices whose status is not
ok), written before the batch is released (``Ring`` releases it on the next ``next()``): a kill
between the two leaves a logged batch that the producer delivers again to the next consumer, as
documented; soak.py allows exactly that one repeat.

``--step-ms``: after logging a batch it holds it for a random 0 to that many ms (a training step),
so that a kill often falls while a logged batch is held and its re-delivery is exercised.

Exit status 0 at the end of the stream, 3 when the producer is gone (soak.py restarts it and then
this), 4 when no ring could be attached within the time given.
"""

import argparse
import json
import os
import random
import sys
import time

import numpy as np

from stoke import Ring
from stoke.ring import ProducerGoneError, RingBusyError, RingFormatError


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ring")
    p.add_argument("--log", required=True)
    p.add_argument("--attach-timeout", type=float, default=20.0)
    p.add_argument("--step-ms", type=float, default=0.0)
    args = p.parse_args()
    parent = os.getppid()
    log = open(args.log, "a", encoding="utf-8")

    def emit(record):
        log.write(json.dumps(record, separators=(",", ":")) + "\n")
        log.flush()

    # The seat of a consumer killed a moment ago is freed by the producer within ~50 ms; a producer
    # restarted a moment ago may not have replaced the dead one's file yet: retry, bounded.
    deadline = time.monotonic() + args.attach_timeout
    while True:
        try:
            ring = Ring(args.ring, timeout=30.0)
            break
        except (FileNotFoundError, RingBusyError, RingFormatError, ProducerGoneError) as e:
            if time.monotonic() > deadline:
                emit({"attach_failed": f"{type(e).__name__}: {e}"})
                return 4
            time.sleep(0.05)
    emit({"attached": os.getpid()})
    try:
        while True:
            try:
                batch = ring.next(timeout=30.0)
            except ProducerGoneError as e:
                emit({"producer_gone": str(e)})
                return 3
            if batch is None:
                emit({"end": True})
                return 0
            emit({"e": batch.epoch, "b": batch.batch_index, "i": batch.indices.tolist(),
                  "bad": batch.indices[np.flatnonzero(batch.status)].tolist()})
            if args.step_ms > 0:
                time.sleep(random.uniform(0, args.step_ms) / 1000)  # the step, holding the batch
            if os.getppid() != parent:
                return 1
    finally:
        ring.close()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
