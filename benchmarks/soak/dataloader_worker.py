"""The soak's training loop over ``stoke.DataLoader`` (scenarios a and d); started by soak.py.

One JSON line per batch to LOG, written with the batch: its epoch, batch index, dataset indices,
the indices the loader reported as skipped, and ``loader.state_dict()`` after it. That line is
this "user's" checkpoint: a new process started with ``--resume LOG_OF_THE_KILLED_ONE`` takes the
last state in it and calls ``load_state_dict``, as a training job resumes from its checkpoint. A
producer that dies under the loop (soak.py kills it) is met as a user meets it: catch
``stoke.ProducerError``, close the loader, make a new one and ``load_state_dict`` its state.

It stops at the end of an epoch once the file STOP exists, and when its parent (soak.py) is gone.
"""

import argparse
import json
import os
import sys
import time

import stoke


def last_state(path):
    state = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by kill -9: that batch was not checkpointed
            state = record.get("st", state)
    return state


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--log", required=True)
    p.add_argument("--stop", required=True)
    p.add_argument("--resume")
    p.add_argument("--settings", required=True, help="JSON of stoke.DataLoader keyword arguments")
    args = p.parse_args()
    settings = json.loads(args.settings)
    parent = os.getppid()
    log = open(args.log, "a", encoding="utf-8")

    def emit(record):
        log.write(json.dumps(record, separators=(",", ":")) + "\n")
        log.flush()  # one write(2) a line: a kill leaves whole lines, at most the last one cut

    def new_loader(state):
        loader = stoke.DataLoader(args.root, with_indices=True, **settings)
        if state is not None:
            loader.load_state_dict(state)
        emit({"loader": loader._producer.pid, "n": len(loader.samples), "nb": len(loader), "from": state})
        return loader

    loader = new_loader(last_state(args.resume) if args.resume else None)
    try:
        while True:
            try:
                for batch in loader:
                    _, _, indices = batch
                    emit({"e": batch.epoch, "b": batch.batch_index, "i": indices.tolist(),
                          "bad": [s.index for s in batch.skipped], "st": loader.state_dict()})
                    del batch
                    if os.getppid() != parent:
                        return 1  # soak.py is gone: nobody checks what we deliver
            except stoke.ProducerError as e:
                state = loader.state_dict()
                emit({"producer_error": str(e).splitlines()[0], "st": state})
                loader.close()
                loader = new_loader(state)
                continue
            if os.path.exists(args.stop):
                emit({"stopped": True})
                return 0
    finally:
        loader.close()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
