#!/usr/bin/env python3
"""Exports the small CNNs that `stoke embed`'s tests and demo use, and the PyTorch reference.

    /usr/bin/python3 embed/models/export_tiny_cnn.py OUT_DIR [DATASET_DIR]

Writes, with fixed weights (torch.manual_seed(7)):
  tiny_cnn_f32.onnx    input "images": float32 [N, 3, 224, 224], normalised as torchvision's
                       ToTensor + Normalize(ImageNet mean, std) give it; output "embedding" [N, 32]
                       and "logits" [N, 10] (two outputs, so --output-name has something to pick)
  tiny_cnn_u8.onnx     the same network behind input "pixels": uint8 [N, 224, 224, 3], with the
                       normalisation inside the graph; output "embedding" [N, 32]
  tiny_cnn_f32_any_size.onnx
                       the float32 network with its height and width free: [N, 3, H, W]
and, when DATASET_DIR is given (an ImageFolder tree), reference_f32.npy: the float32 model's
"embedding" in PyTorch for every image of ImageFolder(DATASET_DIR) in its order, preprocessed with
torchvision's Resize(256) + CenterCrop(224) + ToTensor + Normalize.

The embedding is 32 numbers; it means nothing (random weights): the tests compare numbers.
"""
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


class TinyCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 5, stride=4, padding=2), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.embed = nn.Linear(32, 32)
        self.head = nn.Linear(32, 10)

    def forward(self, images):
        e = self.embed(self.features(images))
        return e, self.head(e)


class Uint8Nhwc(nn.Module):
    """uint8 NHWC pixels in, normalisation inside the graph."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1) * 255)
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1) * 255)

    def forward(self, pixels):
        x = (pixels.permute(0, 3, 1, 2).float() - self.mean) / self.std
        return self.net(x)[0]


def main(out, dataset=None):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(7)
    net = TinyCnn().eval()
    dynamic = {0: "batch"}
    torch.onnx.export(net, torch.zeros(2, 3, 224, 224), out / "tiny_cnn_f32.onnx", input_names=["images"],
                      output_names=["embedding", "logits"], opset_version=13,
                      dynamic_axes={"images": dynamic, "embedding": dynamic, "logits": dynamic})
    torch.onnx.export(Uint8Nhwc(net).eval(), torch.zeros(2, 224, 224, 3, dtype=torch.uint8), out / "tiny_cnn_u8.onnx",
                      input_names=["pixels"], output_names=["embedding"], opset_version=13,
                      dynamic_axes={"pixels": dynamic, "embedding": dynamic})
    free = {0: "batch", 2: "height", 3: "width"}
    torch.onnx.export(net, torch.zeros(2, 3, 224, 224), out / "tiny_cnn_f32_any_size.onnx", input_names=["images"],
                      output_names=["embedding", "logits"], opset_version=13,
                      dynamic_axes={"images": free, "embedding": dynamic, "logits": dynamic})
    if dataset:
        from torchvision import datasets, transforms
        ds = datasets.ImageFolder(dataset, transform=transforms.Compose([
            transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
            transforms.Normalize(MEAN, STD)]))
        with torch.no_grad():
            rows = [net(ds[i][0].unsqueeze(0))[0][0].numpy() for i in range(len(ds))]
        np.save(out / "reference_f32.npy", np.stack(rows).astype(np.float32))


if __name__ == "__main__":
    main(*sys.argv[1:])
