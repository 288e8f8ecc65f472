"""A Lightning fit fed by a ``stoke.DataLoader`` from a ``LightningDataModule``, run by test_lightning.py.

    python lightning_fit.py DATA OUT --devices 2 [--checkpoint-every K --crash-at S] [--resume CKPT]

With ``--devices 2`` it is ``Trainer(strategy="ddp", devices=2, accelerator="cpu")``: Lightning starts
the second rank by running this script again, and each rank's ``train_dataloader()`` makes its loader
once the process group is up, so it takes its rank and world size from ``torch.distributed``.
Lightning's own defaults stand (``use_distributed_sampler=True`` among them).

What it keeps in OUT, for the test: ``seen-<phase>-<rank>.jsonl``, one line per training step
``{"epoch", "batch_idx", "global_step", "indices", "padded", "batch_epoch", "batch_index", "type"}``
(``phase`` is ``fit`` or ``resume``), ``val-<phase>-<rank>.jsonl``, the same of each validation step
(``val_dataloader()`` is a ``stoke.DataLoader`` too, unshuffled), and ``loader-<phase>-<rank>.json``, the loader Lightning iterated
(its type, rank and world size). ``--checkpoint-every K`` saves a checkpoint every K steps
(Lightning's ``ModelCheckpoint``); ``--crash-at S`` raises at the start of the step with
``global_step == S``, as a crash would; ``--resume CKPT`` is ``fit(ckpt_path=CKPT)``.
"""

import argparse
import json
import os

import torch
import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint

import stoke


class Images(pl.LightningDataModule):
    def __init__(self, data: str, batch_size: int) -> None:
        super().__init__()
        self.data, self.batch_size = data, batch_size

    def train_dataloader(self) -> stoke.DataLoader:
        return stoke.DataLoader(self.data, batch_size=self.batch_size, shuffle=True, seed=3, with_indices=True,
                                resize=32, crop=32, num_workers=1, slots=4)

    def val_dataloader(self) -> stoke.DataLoader:
        return stoke.DataLoader(self.data, batch_size=self.batch_size, with_indices=True, resize=32, crop=32,
                                num_workers=1, slots=4)


class Recorder(pl.LightningModule):
    """A linear model over each image's mean colour, which writes down every step's samples."""

    def __init__(self, out: str, phase: str, crash_at: int) -> None:
        super().__init__()
        self.out, self.phase, self.crash_at = out, phase, crash_at
        self.linear = torch.nn.Linear(3, 3)
        self.log_file = None

    def on_train_start(self) -> None:
        rank = self.trainer.global_rank
        loader = self.trainer.train_dataloader
        with open(os.path.join(self.out, f"loader-{self.phase}-{rank}.json"), "w") as f:
            json.dump({"type": f"{type(loader).__module__}.{type(loader).__qualname__}",
                       "rank": getattr(loader, "rank", None), "world_size": getattr(loader, "world_size", None),
                       "trainer_world_size": self.trainer.world_size}, f)
        self.log_file = open(os.path.join(self.out, f"seen-{self.phase}-{rank}.jsonl"), "a")

    def on_train_batch_start(self, batch, batch_idx: int) -> None:
        if self.trainer.global_step == self.crash_at:
            raise RuntimeError(f"crash at step {self.crash_at}, as a killed job would")

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        images, labels, indices = batch
        self.log_file.write(json.dumps({
            "epoch": self.current_epoch, "batch_idx": batch_idx, "global_step": self.global_step,
            "indices": indices.tolist(), "padded": batch.padded.tolist() if batch.padded is not None else None,
            "batch_epoch": batch.epoch, "batch_index": batch.batch_index,
            "type": f"{type(batch).__module__}.{type(batch).__qualname__}"}) + "\n")
        self.log_file.flush()
        features = images.float().mean(dim=(1, 2)) / 255
        return torch.nn.functional.cross_entropy(self.linear(features), labels)

    def validation_step(self, batch, batch_idx: int) -> None:
        images, labels, indices = batch
        with open(os.path.join(self.out, f"val-{self.phase}-{self.trainer.global_rank}.jsonl"), "a") as f:
            f.write(json.dumps({"epoch": self.current_epoch, "batch_idx": batch_idx, "indices": indices.tolist(),
                                "padded": batch.padded.tolist()}) + "\n")

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("out")
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=0)
    parser.add_argument("--crash-at", type=int, default=-1)
    parser.add_argument("--resume", default=None)
    args = parser.parse_args()

    torch.manual_seed(0)
    callbacks = []
    if args.checkpoint_every:
        callbacks.append(ModelCheckpoint(dirpath=args.out, filename="{step}", every_n_train_steps=args.checkpoint_every,
                                         save_top_k=-1))
    trainer = pl.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices,
                         strategy="ddp" if args.devices > 1 else "auto", callbacks=callbacks, logger=False, default_root_dir=args.out,
                         enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    phase = "resume" if args.resume else "fit"
    trainer.fit(Recorder(args.out, phase, args.crash_at), datamodule=Images(args.data, args.batch_size),
                ckpt_path=args.resume)


if __name__ == "__main__":
    main()
