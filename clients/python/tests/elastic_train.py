"""A training script that survives a change of world size: run by torchrun (``--nnodes=MIN:MAX`` and
``--max-restarts``, or restarted by hand), it checkpoints every rank's loader state every K steps and
resumes from the last checkpoint on whatever world it is started in.

    python -m torch.distributed.run --nnodes=1:2 --nproc_per_node=1 --rdzv_backend=c10d \\
        --rdzv_endpoint=127.0.0.1:29400 --max_restarts=3 elastic_train.py DATA OUT

What it keeps in OUT: ``checkpoint.pt`` (the model and every rank's ``state_dict()``, written by rank 0
with a rename, so a kill leaves the last whole one); for the test that runs it,
``seen-<generation>-<rank>.jsonl``, one line per step ``{"epoch", "step", "real", "padded"}`` (the
step's sample indices), and ``resumed-<generation>.json``, the states a generation (a world: 0 for the
first, one more at each resume) resumed from.
With ``--die-at E,S,R`` rank R of a 2-rank world kills itself at step S of epoch E (and its torchrun
agent with ``--node-lost``: a node lost mid-epoch); the last checkpoint is the one before it.
"""

import argparse
import json
import os
import signal

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import stoke


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("out")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--every", type=int, default=4, help="checkpoint every K steps")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--die-at", default=None, help="E,S,R: rank R of a 2-rank world dies at step S of epoch E")
    parser.add_argument("--node-lost", action="store_true", help="the dying rank kills its torchrun agent too")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(3, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    # rank and world_size come from torch.distributed: this attempt's world, whatever the last one was.
    loader = stoke.DataLoader(args.data, batch_size=args.batch_size, shuffle=True, seed=3, num_workers=1, slots=2,
                              with_indices=True, resize=32, crop=32, output="float32")
    checkpoint = os.path.join(args.out, "checkpoint.pt")
    start_epoch, generation = 0, 0  # generation: the worlds this job has run on before this one
    if os.path.exists(checkpoint):
        saved = torch.load(checkpoint)
        model.module.load_state_dict(saved["model"])
        loader.load_state_dict(saved["loaders"])  # every rank's state of the saved world
        start_epoch, generation = loader.state_dict()["epoch"], saved["generation"] + 1
        if rank == 0:
            with open(os.path.join(args.out, f"resumed-{generation}.json"), "w") as f:
                json.dump({"world": world, "from": saved["loaders"]}, f)
    die = tuple(int(x) for x in args.die_at.split(",")) if args.die_at else None
    log = open(os.path.join(args.out, f"seen-{generation}-{rank}.jsonl"), "a")
    for epoch in range(start_epoch, args.epochs):
        loader.set_epoch(epoch)  # the resumed epoch stays where it was; a later one starts whole
        for batch in loader:
            images, labels, idx = batch
            step = loader.state_dict()["_num_yielded"] - 1
            if die is not None and world == 2 and (epoch, step, rank) == die:
                if args.node_lost and "TORCHELASTIC_RUN_ID" in os.environ:
                    os.kill(os.getppid(), signal.SIGKILL)  # its torchrun agent: the whole node is gone
                os.kill(os.getpid(), signal.SIGKILL)
            loss = torch.nn.functional.cross_entropy(model(images.mean(dim=(2, 3))), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log.write(json.dumps({"epoch": epoch, "step": step, "real": idx[~batch.padded].tolist(),
                                  "padded": idx[batch.padded].tolist()}) + "\n")
            log.flush()
            if (step + 1) % args.every == 0:
                states = [None] * world
                dist.all_gather_object(states, loader.state_dict())
                if rank == 0:
                    torch.save({"model": model.module.state_dict(), "loaders": states, "generation": generation},
                               checkpoint + ".part")
                    os.replace(checkpoint + ".part", checkpoint)
                dist.barrier()
    loader.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
