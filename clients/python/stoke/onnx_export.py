"""``stoke.onnx_export``: open_clip's image tower as an ONNX model for ``stoke embed``.

The graph is ``model.encode_image`` (the image tower and its projection), exported with
``torch.onnx.export`` and a dynamic batch axis. What its preprocess does before the tower is
recorded in the file's metadata (``stoke.resize``, ``stoke.crop``, ``stoke.interpolation``,
``stoke.mean``, ``stoke.std``), which ``stoke embed`` holds against its flags, refusing a run whose
pixels would differ. Two forms:

- ``pixels="float32"`` (the default): the input is ``images``, float32 ``[N, 3, H, W]`` as
  ``ToTensor`` + ``Normalize`` give it; Stoke normalises, with the flags ``--mean`` and ``--std``;
- ``pixels="uint8"``: the input is ``pixels``, uint8 ``[N, H, W, 3]``, and ``ToTensor`` +
  ``Normalize`` run in the graph (4x fewer bytes to hand over; the form for a GPU).

From a shell (``pretrained=None`` gives random weights, which is all a machine without the
weights can export)::

    python -m stoke.onnx_export ViT-B-32 vit-b-32.onnx --pretrained laion2b_s34b_b79k

It prints the ``stoke embed`` flags that give the model its preprocess.
"""

import argparse
import sys
from typing import Any, Dict, List, Optional

__all__ = ["export_open_clip_image_tower", "preprocess_flags"]


def preprocess_flags(preprocess: Any) -> Dict[str, str]:
    r"""The ``stoke embed`` flags equal to open_clip's evaluation preprocess.

    open_clip's preprocess (``resize_mode="shortest"``, its default) is ``Resize(size,
    interpolation)`` on the shorter side, ``CenterCrop(size)``, ``MaybeConvertMode``,
    ``MaybeToTensor`` and ``Normalize(mean, std)``; anything else is refused, naming it.

    Args:
        preprocess: the ``torchvision.transforms.Compose`` that
            ``open_clip.create_model_and_transforms`` returned for evaluation.

    Returns:
        ``{"resize": "224", "crop": "224", "interpolation": "bicubic", "mean": "0.48145466,...",
        "std": "..."}``: the flags' values, as the model's metadata records them.

    Raises:
        ValueError: a step Stoke's evaluation transform does not have (a ``ResizeKeepRatio``, a
            squash, a training transform), named with the way out: ``stoke.DataLoader``'s own reading
            of the transform (``UnsupportedError``, a ``ValueError``) refuses what it cannot run exactly.
    """
    from torchvision import transforms as T

    from ._torch_compat import translate_transform

    # stoke.DataLoader's own reading of the preprocess: what it cannot run exactly is refused there,
    # naming the step (open_clip's ResizeKeepRatio of resize_mode='longest', among others).
    options = translate_transform(preprocess)
    if options["transform"] == "squash":
        raise ValueError(f"{preprocess!r}: stoke embed resizes the shorter side to one size (--resize N); this "
                         f"Resize((h, w)) squashes the image (open_clip's resize_mode='squash')")
    if options["transform"] != "eval":
        raise ValueError(f"{preprocess!r} is a training transform (RandomResizedCrop): pass the preprocess "
                         f"create_model_and_transforms returns third (the evaluation one)")
    steps = list(getattr(preprocess, "transforms", [preprocess]))
    normalize = next((step for step in steps if isinstance(step, T.Normalize)), None)
    if normalize is None or options["output"] != "float32":
        raise ValueError(f"{preprocess!r} lacks open_clip's MaybeToTensor and Normalize: stoke embed feeds the "
                         f"tower float32 normalised pixels, as encode_image(preprocess(image)) does")
    # The mean and std in the exporter's own digits (0.48145466, where float32's shortest is 0.48145467):
    # the model's metadata records them so, and a refusal names them so.
    return {"resize": str(options["resize"]), "interpolation": options["interpolation"],
            "crop": str(options["crop"]), "mean": ",".join(repr(float(v)) for v in normalize.mean),
            "std": ",".join(repr(float(v)) for v in normalize.std)}


#: The most weights an ONNX file holds inside itself (protobuf's 2 GB, less the graph's own room).
_ONE_FILE_BYTES = 1_800_000_000


class _ImageTower:
    """The modules exported: built on first use so that this file imports without torch."""

    @staticmethod
    def make(model: Any, pixels: str, mean: List[float], std: List[float], normalize: bool) -> Any:
        import torch

        class FromFloat32(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, images: torch.Tensor) -> torch.Tensor:
                return self.model.encode_image(images, normalize=normalize)

        class FromUint8(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model
                self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1))
                self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1))

            def forward(self, pixels: torch.Tensor) -> torch.Tensor:
                # ToTensor's division, then Normalize's subtraction and division, in their order.
                x = pixels.permute(0, 3, 1, 2).to(torch.float32).div(255)
                x = x.sub(self.mean).div(self.std)
                return self.model.encode_image(x, normalize=normalize)

        return FromFloat32() if pixels == "float32" else FromUint8()


def export_open_clip_image_tower(
    model: Any,
    preprocess: Any,
    path: str,
    *,
    pixels: str = "float32",
    normalize: bool = False,
    opset_version: int = 18,
    dynamo: bool = True,
    source: Optional[str] = None,
) -> List[str]:
    r"""Exports ``model.encode_image`` to ONNX for ``stoke embed``, its preprocess in the metadata.

    The model is put in eval mode. The graph has a dynamic batch axis; its input is ``images``
    (float32 ``[N, 3, S, S]``) or ``pixels`` (uint8 ``[N, S, S, 3]``), ``S`` the preprocess's crop,
    and its output ``embedding`` (float32 ``[N, D]``).

    Args:
        model: an open_clip model (``open_clip.create_model_and_transforms(name, ...)[0]``).
        preprocess: its evaluation preprocess (the third value returned).
        path: the ``.onnx`` file to write.
        pixels: ``"float32"`` (Stoke normalises, with ``--mean`` and ``--std``) or ``"uint8"``
            (``ToTensor`` and ``Normalize`` in the graph).
        normalize: ``encode_image``'s own argument: L2-normalised embeddings (what CLIP's cosine
            similarities use) or, by default, the raw ones ``encode_image`` gives.
        opset_version: the ONNX opset.
        dynamo: ``torch.onnx.export``'s exporter (``torch.export``'s, torch 2.14's default);
            ``False`` for the TorchScript one (the only one in torch 1.x).
        source: what the metadata names as the model (``stoke.source``), e.g. ``"open_clip ViT-B-32"``.

    Returns:
        the ``stoke embed`` flags that give the model its preprocess, as a list of arguments
        (add ``--dct-scaling none`` for PIL's pixels on JPEGs larger than twice the resize).

    Raises:
        ValueError: the preprocess is not one ``stoke embed`` runs exactly (see
            :func:`preprocess_flags`), or ``pixels`` is neither form.
    """
    import onnx
    import torch

    if pixels not in ("float32", "uint8"):
        raise ValueError(f"pixels must be 'float32' or 'uint8', not {pixels!r}")
    flags = preprocess_flags(preprocess)
    side = int(flags["crop"])
    mean = [float(v) for v in flags["mean"].split(",")]
    std = [float(v) for v in flags["std"].split(",")]
    tower = _ImageTower.make(model.eval(), pixels, mean, std, normalize).eval()
    name = "images" if pixels == "float32" else "pixels"
    # A batch of 2: torch.export specialises a dimension whose example is 1.
    example = (torch.zeros(2, 3, side, side) if pixels == "float32"
               else torch.zeros(2, side, side, 3, dtype=torch.uint8))
    if dynamo:
        # One file where protobuf allows it (2 GB): `stoke spark-embed` ships and hashes the .onnx
        # alone, and a weights file beside it is easily left behind.
        visual = getattr(model, "visual", model)  # the graph holds the image tower's weights only
        weights = sum(t.numel() * t.element_size() for t in list(visual.parameters()) + list(visual.buffers()))
        axes: Dict[str, Any] = {"dynamic_shapes": {name: {0: torch.export.Dim("batch")}},
                                "external_data": weights > _ONE_FILE_BYTES}
        if weights > _ONE_FILE_BYTES:
            print(f"stoke.onnx_export: {path}: {weights / 2**30:.1f} GiB of weights, past one ONNX file's 2 GB: they "
                  f"go in {path}.data beside it; keep the two together ('stoke spark-embed' ships the .onnx "
                  f"alone: copy both to every machine)", file=sys.stderr)
    else:
        axes = {"dynamic_axes": {name: {0: "batch"}, "embedding": {0: "batch"}}}
    # Not under torch.no_grad(): there nn.MultiheadAttention takes its fused fast path
    # (aten::_native_multi_head_attention), which the TorchScript exporter cannot translate.
    torch.onnx.export(tower, example, path, input_names=[name], output_names=["embedding"],
                      opset_version=opset_version, dynamo=dynamo, **axes)
    # The metadata goes in after the export, the same way for both exporters; the weights stay
    # where the exporter put them (in the file, or beside it past 2 GB).
    proto = onnx.load(path, load_external_data=False)
    recorded = dict(flags)
    if pixels == "uint8":
        del recorded["mean"], recorded["std"]  # the graph's own
    recorded["l2_normalized"] = "true" if normalize else "false"
    if source:
        recorded["source"] = source
    kept = [p for p in proto.metadata_props if not p.key.startswith("stoke.")]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    for key, value in recorded.items():
        proto.metadata_props.add(key=f"stoke.{key}", value=value)
    onnx.save(proto, path)
    args = ["--resize", flags["resize"], "--crop", flags["crop"], "--interpolation", flags["interpolation"]]
    if pixels == "float32":
        args += ["--mean", flags["mean"], "--std", flags["std"]]
    return args


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stoke.onnx_export",
        description="Exports open_clip's image tower (encode_image) to ONNX for 'stoke embed'.")
    parser.add_argument("model", help="open_clip's model name, e.g. ViT-B-32")
    parser.add_argument("out", help="the .onnx file to write")
    parser.add_argument("--pretrained", default=None,
                        help="open_clip's pretrained tag (default: none, random weights)")
    parser.add_argument("--pixels", choices=("float32", "uint8"), default="float32",
                        help="float32 [N,3,H,W] normalised by Stoke (default), or uint8 [N,H,W,3] "
                             "normalised in the graph")
    parser.add_argument("--normalize", action="store_true", help="L2-normalised embeddings")
    parser.add_argument("--legacy-exporter", action="store_true",
                        help="torch.onnx.export(dynamo=False), the TorchScript exporter")
    a = parser.parse_args(argv)
    import open_clip

    model, _, preprocess = open_clip.create_model_and_transforms(a.model, pretrained=a.pretrained)
    flags = export_open_clip_image_tower(
        model, preprocess, a.out, pixels=a.pixels, normalize=a.normalize, dynamo=not a.legacy_exporter,
        source=f"open_clip {a.model}" + (f" {a.pretrained}" if a.pretrained else ""))
    print(f"{a.out}: open_clip {a.model}'s encode_image; run it with")
    print(f"  stoke embed DATA --model {a.out} --out DIR {' '.join(flags)} --dct-scaling none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
