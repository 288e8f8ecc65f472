"""The calls torchvision's reference classification recipe (references/classification/train.py,
presets.py and transforms.py) makes of its data loaders, in a small script that runs one epoch with
torch's DataLoader (``--loader torch``) or with stoke.DataLoader (``--loader stoke``): the swap is
the one line marked SWAP. Writes what the model and the loss saw as JSON. The presets are built as
0.21's are: from ``torchvision.transforms``, or with ``--use-v2`` from ``torchvision.transforms.v2``
(``ToDtype(torch.float, scale=True)``, ``ToPureTensor()``, v2's ``MixUp``/``CutMix``), with
``PILToTensor()`` after the geometry (``--backend pil``) or first (``--backend tensor``); on the
0.14 line (no v2) mixup and cutmix are that line's own ``RandomMixup``/``RandomCutmix``.

    python3 recipe_train.py DATA OUT.json --loader stoke --train-crop-size 176 --val-crop-size 208 \\
        --val-resize-size 232 --mixup-alpha 0.2 --cutmix-alpha 1.0 [--use-v2]
"""

import argparse
import json
import math
import os

import torch
import torchvision
from torch.utils.data import default_collate
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as F
from torchvision import transforms


# ---- presets.py (0.21), as the recipe builds them ----

def get_module(use_v2):
    if use_v2:
        import torchvision.transforms.v2
        return torchvision.transforms.v2
    return transforms


class ClassificationPresetTrain:
    def __init__(self, *, crop_size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR, hflip_prob=0.5, backend="pil", use_v2=False):
        T = get_module(use_v2)
        trans = []
        if backend == "tensor":
            trans.append(T.PILToTensor())
        trans.append(T.RandomResizedCrop(crop_size, interpolation=interpolation, antialias=True))
        if hflip_prob > 0:
            trans.append(T.RandomHorizontalFlip(hflip_prob))
        if backend == "pil":
            trans.append(T.PILToTensor())
        trans.extend([T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float),
                      T.Normalize(mean=mean, std=std)])
        if use_v2:
            trans.append(T.ToPureTensor())
        self.transforms = T.Compose(trans)

    def __call__(self, img):
        return self.transforms(img)


class ClassificationPresetEval:
    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR, backend="pil", use_v2=False):
        T = get_module(use_v2)
        trans = []
        if backend == "tensor":
            trans.append(T.PILToTensor())
        trans += [T.Resize(resize_size, interpolation=interpolation, antialias=True), T.CenterCrop(crop_size)]
        if backend == "pil":
            trans.append(T.PILToTensor())
        trans += [T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float),
                  T.Normalize(mean=mean, std=std)]
        if use_v2:
            trans.append(T.ToPureTensor())
        self.transforms = T.Compose(trans)

    def __call__(self, img):
        return self.transforms(img)


# ---- transforms.py (0.14): mixup and cutmix on a batch ----

class RandomMixup(torch.nn.Module):
    def __init__(self, num_classes, p=0.5, alpha=1.0):
        super().__init__()
        self.num_classes, self.p, self.alpha = num_classes, p, alpha

    def forward(self, batch, target):
        if target.ndim == 1:
            target = torch.nn.functional.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)
        batch, target = batch.clone(), target.clone()
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
        lambda_param = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
        batch_rolled.mul_(1.0 - lambda_param)
        batch.mul_(lambda_param).add_(batch_rolled)
        target_rolled.mul_(1.0 - lambda_param)
        target.mul_(lambda_param).add_(target_rolled)
        return batch, target


class RandomCutmix(torch.nn.Module):
    def __init__(self, num_classes, p=0.5, alpha=1.0):
        super().__init__()
        self.num_classes, self.p, self.alpha = num_classes, p, alpha

    def forward(self, batch, target):
        if target.ndim == 1:
            target = torch.nn.functional.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)
        batch, target = batch.clone(), target.clone()
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
        lambda_param = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
        _, H, W = F.get_dimensions(batch)
        r_x, r_y = torch.randint(W, (1,)), torch.randint(H, (1,))
        r = 0.5 * math.sqrt(1.0 - lambda_param)
        r_w_half, r_h_half = int(r * W), int(r * H)
        x1, y1 = int(torch.clamp(r_x - r_w_half, min=0)), int(torch.clamp(r_y - r_h_half, min=0))
        x2, y2 = int(torch.clamp(r_x + r_w_half, max=W)), int(torch.clamp(r_y + r_h_half, max=H))
        batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
        lambda_param = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        target_rolled.mul_(1.0 - lambda_param)
        target.mul_(lambda_param).add_(target_rolled)
        return batch, target


class Recorder:
    """What the model and the loss receive."""

    def __init__(self):
        self.seen = {"train_inputs": set(), "val_inputs": set(), "train_target": set(), "val_target": set()}
        self.train_samples = 0
        self.train_steps = 0

    def note(self, key, value):
        self.seen[key].add(value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("out")
    parser.add_argument("--loader", choices=("torch", "stoke"), required=True)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--train-crop-size", type=int, default=224)
    parser.add_argument("--val-crop-size", type=int, default=224)
    parser.add_argument("--val-resize-size", type=int, default=256)
    parser.add_argument("--mixup-alpha", type=float, default=0.0)
    parser.add_argument("--cutmix-alpha", type=float, default=0.0)
    parser.add_argument("--backend", default="pil", choices=("pil", "tensor"))
    parser.add_argument("--use-v2", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        torch.distributed.init_process_group("gloo")

    # load_data(), as the recipe has it
    dataset = torchvision.datasets.ImageFolder(
        os.path.join(args.data, "train"),
        ClassificationPresetTrain(crop_size=args.train_crop_size, backend=args.backend, use_v2=args.use_v2))
    dataset_test = torchvision.datasets.ImageFolder(
        os.path.join(args.data, "val"),
        ClassificationPresetEval(crop_size=args.val_crop_size, resize_size=args.val_resize_size, backend=args.backend,
                                 use_v2=args.use_v2))
    if distributed:
        train_sampler = torch.utils.data.distributed.DistributedSampler(dataset)
        test_sampler = torch.utils.data.distributed.DistributedSampler(dataset_test, shuffle=False)
    else:
        train_sampler = torch.utils.data.RandomSampler(dataset)
        test_sampler = torch.utils.data.SequentialSampler(dataset_test)

    collate_fn = None
    num_classes = len(dataset.classes)
    # transforms.get_mixup_cutmix(), as 0.21 has it
    T = get_module(args.use_v2)
    mixup_transforms = []
    if args.mixup_alpha > 0.0:
        mixup_transforms.append(T.MixUp(alpha=args.mixup_alpha, num_classes=num_classes) if args.use_v2
                                else RandomMixup(num_classes, p=1.0, alpha=args.mixup_alpha))
    if args.cutmix_alpha > 0.0:
        mixup_transforms.append(T.CutMix(alpha=args.cutmix_alpha, num_classes=num_classes) if args.use_v2
                                else RandomCutmix(num_classes, p=1.0, alpha=args.cutmix_alpha))
    if mixup_transforms:
        mixupcutmix = T.RandomChoice(mixup_transforms)

        def collate_fn(batch):
            return mixupcutmix(*default_collate(batch))

    if args.loader == "torch":
        from torch.utils.data import DataLoader
    else:
        from stoke import DataLoader  # SWAP: the only line that differs
    data_loader = DataLoader(dataset, batch_size=args.batch_size, sampler=train_sampler, num_workers=args.workers,
                             pin_memory=True, collate_fn=collate_fn)
    data_loader_test = DataLoader(dataset_test, batch_size=args.batch_size, sampler=test_sampler,
                                  num_workers=args.workers, pin_memory=True)

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=4), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(4, num_classes))
    rec = Recorder()
    criterion_inner = torch.nn.CrossEntropyLoss(label_smoothing=0.1)

    def criterion(output, target, key):
        rec.note(key, (str(target.dtype), tuple(target.shape[1:])))
        return criterion_inner(output, target)

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    device = torch.device("cpu")
    for epoch in range(1):
        if distributed:
            train_sampler.set_epoch(epoch)
        # train_one_epoch
        model.train()
        for i, (image, target) in enumerate(data_loader):
            image, target = image.to(device, non_blocking=True), target.to(device, non_blocking=True)
            rec.note("train_inputs", (str(image.dtype), tuple(image.shape[1:])))
            loss = criterion(model(image), target, "train_target")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            rec.train_samples += image.shape[0]
            rec.train_steps += 1
        # evaluate
        model.eval()
        num_processed_samples = 0
        correct = 0
        with torch.inference_mode():
            for image, target in data_loader_test:
                image = image.to(device, non_blocking=True)
                target = target.to(device, non_blocking=True)
                rec.note("val_inputs", (str(image.dtype), tuple(image.shape[1:])))
                output = model(image)
                criterion(output, target, "val_target")
                correct += int((output.argmax(1) == target).sum())
                num_processed_samples += image.shape[0]
        if distributed:
            t = torch.tensor([num_processed_samples])
            torch.distributed.all_reduce(t)
            num_processed_samples = int(t)
    result = {
        "len_train": len(data_loader), "len_val": len(data_loader_test),
        "dataset_len": len(data_loader_test.dataset), "num_processed_samples": num_processed_samples,
        "train_samples": rec.train_samples, "train_steps": rec.train_steps,
        "sampler": type(data_loader.sampler).__name__, "batch_size": data_loader.batch_size,
        **{k: sorted(map(list, v)) for k, v in rec.seen.items()},
    }
    if not distributed or torch.distributed.get_rank() == 0:
        with open(args.out, "w") as f:
            json.dump(result, f)
    if distributed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
