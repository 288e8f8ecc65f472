"""What ``stoke.DataLoader`` takes from PyTorch users as they pass it: a torchvision dataset (its
samples, written as a list file) and its ``transform``, translated exactly into Stoke's producer
settings or refused at construction."""

import inspect
import os
import re
import textwrap
from typing import Any, Dict, List, NoReturn, Sequence, Tuple

__all__ = ["UnsupportedError", "dataset_samples", "translate_transform", "write_list_file"]

WAYS_OUT = ("Either apply it to each batch on the device (stoke.DataLoader(..., batch_transform=fn): fn gets the "
            "(images, labels) of each batch, without a copy), or use torch.utils.data.DataLoader for this dataset.")

ONLY = ("Stoke's producer does Resize(s) + CenterCrop(c), Resize((s, s)) [+ CenterCrop(c)] or "
        "RandomResizedCrop(...) + RandomHorizontalFlip(p) [+ TrivialAugmentWide, RandAugment, AutoAugment, AugMix, or "
        "ColorJitter (bare or under RandomApply) and/or RandomGrayscale], "
        "then "
        "PILToTensor() or ToImage() [+ RandomErasing(...)] [+ ToDtype(torch.float32, scale=True) or "
        "ConvertImageDtype(torch.float)] or "
        "ToTensor(), and Normalize(mean, std) [+ RandomErasing(...)], in that order (v1's or v2's, ToPureTensor() "
        "anywhere after the conversion, ToDtype(torch.uint8) on its uint8 image, which returns it as it is), and "
        "nothing else")


class UnsupportedError(ValueError):
    """Something a PyTorch user passed that Stoke's producer cannot do exactly; raised at construction."""


def _refuse(what: str, why: str = "") -> NoReturn:
    raise UnsupportedError(f"stoke.DataLoader cannot do {what}{': ' + why if why else ''}. {WAYS_OUT}")


def is_dataset(obj: Any) -> bool:
    """Whether ``obj`` is a dataset object (anything with ``samples``) rather than a path."""
    return not isinstance(obj, (str, bytes, os.PathLike)) and hasattr(obj, "samples")


def dataset_samples(dataset: Any) -> List[Tuple[str, int]]:
    """A dataset's samples, checked, for Stoke's list file.

    Stoke reads each path and tells its format by its bytes (a file it does not decode is named
    when its batch comes, never refused here), and takes a label as a non-negative int.

    Args:
        dataset: a torchvision ``ImageFolder``/``DatasetFolder``, or any object with ``samples``.

    Returns:
        ``dataset.samples`` as a list of ``(absolute path, label)``.

    Raises:
        UnsupportedError: the dataset would do what Stoke cannot (a ``target_transform``, a loader
            of its own, a label that is not a non-negative integer, a path a list file cannot
            hold, no samples), naming it.
    """
    name = type(dataset).__name__
    target_transform = getattr(dataset, "target_transform", None)
    if target_transform is not None:
        _refuse(f"{name}.target_transform ({target_transform!r})", "labels come from the dataset's samples as they are")
    loader = getattr(dataset, "loader", None)
    if loader is not None:
        try:
            from torchvision.datasets.folder import default_loader, pil_loader
            known = (default_loader, pil_loader)
        except ImportError:  # no torchvision: no way to tell its loader; a loader means a custom one
            known = ()
        if loader not in known:
            _refuse(f"{name}'s loader {getattr(loader, '__name__', loader)!r}",
                    "Stoke decodes the files itself, as torchvision's default_loader (PIL, RGB) does")
    samples = []
    for i, item in enumerate(dataset.samples):
        try:
            path, label = item
        except (TypeError, ValueError):
            raise UnsupportedError(f"{name}.samples[{i}] is {item!r}, not a (path, label) pair") from None
        path = os.path.abspath(os.fspath(path))
        if not isinstance(label, int) or isinstance(label, bool) or label < 0:
            try:
                import numbers
                ok = isinstance(label, numbers.Integral) and int(label) >= 0
            except Exception:
                ok = False
            if not ok:
                raise UnsupportedError(f"{name}.samples[{i}] has the label {label!r}: Stoke's labels are "
                                       "non-negative integers (int64 in each batch)")
        if "\n" in path or "\r" in path or path != path.strip():
            raise UnsupportedError(f"{name}.samples[{i}] is {path!r}: a path with a line break or with white space "
                                   "at its start or end cannot be written to Stoke's list file (one "
                                   "'<path> <label>' a line); rename the file")
        samples.append((path, int(label)))
    if not samples:
        raise UnsupportedError(f"{name} has no samples")
    return samples


def write_list_file(samples: Sequence[Tuple[str, int]], fd: int) -> None:
    """Writes Stoke's list file: one ``<path> <label>`` line per sample (a path may hold spaces: the
    label is what follows the last one).

    Args:
        samples: ``(path, label)`` pairs, as :func:`dataset_samples` gives them.
        fd: the empty file's descriptor, left open.
    """
    with open(fd, "w", encoding="utf-8", closefd=False) as f:
        for p, label in samples:
            f.write(f"{p} {label}\n")


#: The torchvision transforms Stoke translates, by name: v1's (``torchvision.transforms``) and v2's
#: (``torchvision.transforms.v2``) of the same name mean the same on a PIL image.
_TRANSLATED = ("Compose", "Resize", "CenterCrop", "RandomResizedCrop", "RandomHorizontalFlip", "PILToTensor",
               "ToImage", "ToTensor", "ConvertImageDtype", "ToDtype", "Normalize", "ToPureTensor", "RandomErasing",
               "TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix", "ColorJitter", "RandomApply",
               "RandomGrayscale", "Grayscale")

#: The auto-augment policies, which Stoke runs after RandomResizedCrop [+ RandomHorizontalFlip].
_POLICIES = ("TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix")


#: The classes of timm and open_clip that do on a PIL image what a torchvision transform does:
#: ``(module, class, the torchvision name it is read as)``. Both libraries' ``MaybeToTensor`` is
#: ``ToTensor`` on a PIL image (they pass a tensor through); timm's ``MaybePILToTensor`` is
#: ``PILToTensor``; timm's ``RandomResizedCropAndInterpolation`` with one interpolation draws its
#: box as torchvision's ``RandomResizedCrop.get_params`` does (ten tries of the same area and
#: log-ratio draws, the same centred fallback; Python's ``random`` for torch's generator) and
#: resizes with ``F.resized_crop``; open_clip's ``MaybeConvertMode("RGB")`` is ``convert("RGB")``
#: of an image the dataset's loader made RGB already (and Stoke decodes to RGB as that loader does);
#: open_clip's ``color_jitter(p)`` and ``gray_scale(p)`` are torchvision's ``ColorJitter`` and
#: ``Grayscale(3)`` run when Python's ``random.random() < p``: RandomApply's and RandomGrayscale's
#: distribution (their own names here, as ``_colour_steps`` reads their ``transf`` and ``p``).
_LIBRARY_KINDS = (("timm.data.transforms", "MaybeToTensor", "ToTensor"),
                  ("open_clip.transform", "color_jitter", "open_clip color_jitter"),
                  ("open_clip.transform", "gray_scale", "open_clip gray_scale"),
                  ("timm.data.transforms", "MaybePILToTensor", "PILToTensor"),
                  ("timm.data.transforms", "RandomResizedCropAndInterpolation", "RandomResizedCrop"),
                  ("open_clip.transform", "MaybeToTensor", "ToTensor"),
                  ("open_clip.transform", "MaybeConvertMode", "MaybeConvertMode"))


def _kinds():
    """{class: name} of the transforms in ``_TRANSLATED``, v1's and, where the caller has imported it
    (a v2 transform was built), v2's, and timm's and open_clip's of ``_LIBRARY_KINDS`` where they
    are imported; matched by exact class, so a subclass is not taken for one."""
    import sys

    from torchvision import transforms as T
    kinds = {getattr(T, name): name for name in _TRANSLATED if hasattr(T, name)}
    v2 = sys.modules.get("torchvision.transforms.v2")
    if v2 is not None:
        kinds.update({getattr(v2, name): name for name in _TRANSLATED if hasattr(v2, name)})
    for module, cls, name in _LIBRARY_KINDS:
        found = getattr(sys.modules.get(module), cls, None)
        if found is not None:
            kinds[found] = name
    return kinds


def _flatten(transform, kinds):
    if kinds.get(type(transform)) == "Compose":
        out = []
        for t in transform.transforms:
            out += _flatten(t, kinds)
        return out
    inner = _delegated(transform)
    if inner is not None:
        return _flatten(inner, kinds)
    if _is_identity(transform, kinds):
        return []
    return [transform]


def _is_identity(t: Any, kinds) -> bool:
    """Whether ``t`` leaves a PIL RGB image as it is: open_clip's ``MaybeConvertMode("RGB")`` (the
    dataset's loader gives RGB already), and a ``ColorJitter`` whose every factor is off (timm's
    ``color_jitter=0``), which torchvision keeps as None and skips."""
    kind = kinds.get(type(t))
    if kind == "MaybeConvertMode":
        if getattr(t, "mode", None) != "RGB":
            _refuse(f"open_clip's MaybeConvertMode(mode={t.mode!r})", "Stoke's images are RGB, as torchvision's "
                    "default_loader makes them")
        return True
    if kind == "ColorJitter":
        return all(getattr(t, f, None) is None for f in ("brightness", "contrast", "saturation", "hue"))
    return False


#: timm's and open_clip's own steps that Stoke does not translate, by (module, class), with why and
#: the way out in the library's own arguments.
_LIBRARY_REFUSALS = {
    ("timm.data.auto_augment", "RandAugment"): (
        "timm's own RandAugment (create_transform(auto_augment='rand-...'))", "its ops and their draws are timm's "
        "(Python's random on PIL, its own op set and magnitude noise), not torchvision's: pass auto_augment=None and "
        "put torchvision's T.RandAugment() after the crop and flip, which Stoke translates"),
    ("timm.data.auto_augment", "AutoAugment"): (
        "timm's own AutoAugment (create_transform(auto_augment='original'/'v0'/...))", "its policies and draws are "
        "timm's: pass auto_augment=None and put torchvision's T.AutoAugment() after the crop and flip, which Stoke "
        "translates"),
    ("timm.data.auto_augment", "AugMixAugment"): (
        "timm's own AugMix (create_transform(auto_augment='augmix-...'))", "its ops and mixing are timm's: pass "
        "auto_augment=None and put torchvision's T.AugMix() after the crop and flip, which Stoke translates"),
    ("timm.data.random_erasing", "RandomErasing"): (
        "timm's own RandomErasing (create_transform(re_prob=...))", "its modes ('const', 'rand', 'pixel'), counts "
        "and draws are timm's: pass re_prob=0 and put torchvision's T.RandomErasing() after Normalize, which Stoke "
        "translates"),
    ("timm.data.transforms", "ResizeKeepRatio"): (
        "timm's ResizeKeepRatio (crop_mode='border', a non-square input_size, or train_crop_mode='rkrc'/'rkrr')",
        "Stoke resizes the shorter side to one size and crops a square inside the image: use crop_mode='center' "
        "with a square input_size, or train_crop_mode='rrc'"),
    ("timm.data.transforms", "CenterCropOrPad"): (
        "timm's CenterCropOrPad (crop_mode='border')", "it pads; Stoke crops inside the image: use "
        "crop_mode='center'"),
    ("timm.data.transforms", "RandomCropOrPad"): (
        "timm's RandomCropOrPad (train_crop_mode='rkrr')", "it pads; use train_crop_mode='rrc'"),
    ("timm.data.transforms", "TrimBorder"): (
        "timm's TrimBorder (crop_border_pixels)", "Stoke resizes the whole image: pass crop_border_pixels=None"),
    ("timm.data.transforms", "ToTensor"): (
        "timm's ToTensor(dtype)", "it converts without scaling to a dtype of its own; Stoke gives uint8 "
        "(MaybePILToTensor, PILToTensor) or float32 scaled to [0, 1] (MaybeToTensor, ToTensor)"),
    ("open_clip.transform", "ResizeKeepRatio"): (
        "open_clip's ResizeKeepRatio (resize_mode='longest', or a non-square image_size)", "Stoke resizes the "
        "shorter side and crops a square inside the image: resize_mode='shortest' with a square image_size"),
    ("open_clip.transform", "CenterCropOrPad"): (
        "open_clip's CenterCropOrPad (resize_mode='longest')", "it pads; Stoke crops inside the image: "
        "resize_mode='shortest'"),
}


def _refuse_library_steps(steps: Sequence[Any]) -> None:
    """Refuses, by name and with the way out in the library's own arguments, the steps of timm and
    open_clip that Stoke does not do, before the generic reading of the pipeline would name them
    without saying where they came from."""
    for t in steps:
        key = (type(t).__module__, type(t).__name__)
        if key in _LIBRARY_REFUSALS:
            what, why = _LIBRARY_REFUSALS[key]
            _refuse(what, why)
        if key == ("timm.data.transforms", "RandomResizedCropAndInterpolation") and isinstance(
                t.interpolation, (list, tuple)):
            _refuse("timm's RandomResizedCropAndInterpolation(interpolation='random')", "it picks bilinear or "
                    "bicubic for each image with Python's random; Stoke resizes every image with one filter: pass "
                    "interpolation='bilinear' or 'bicubic'")


_DELEGATING_CALL = re.compile(r"def __call__\(self, (\w+)\):\s*return self\.transforms\(\1\)\s*$")


def _delegated(transform):
    """The ``transforms`` of a wrapper whose ``__call__`` only returns ``self.transforms(img)``, as
    the reference recipe's ``ClassificationPresetTrain``/``Eval`` (presets.py) do; else None. Only
    that exact body is looked through: a wrapper that does anything more is not a Compose."""
    inner = getattr(transform, "transforms", None)
    call = getattr(type(transform), "__call__", None)
    if inner is None or call is None or not callable(inner):
        return None
    try:
        source = textwrap.dedent(inspect.getsource(call)).strip()
    except (OSError, TypeError):
        return None
    return inner if _DELEGATING_CALL.match(source) else None


def _square(size, what):
    """An int side from torchvision's size forms: int, [s], (s,), (s, s); else refused."""
    if isinstance(size, int):
        return size
    if isinstance(size, (list, tuple)):
        if len(size) == 1:
            return int(size[0])
        if len(size) == 2 and size[0] == size[1]:
            return int(size[0])
    _refuse(f"{what} with size {size!r}", "Stoke's output is square (an int size, or (s, s))")


#: PIL's filter numbers (``PIL.Image.BILINEAR``, ``Image.Resampling.BICUBIC``, torchvision's old int
#: spelling) for the filters Stoke computes as PIL does.
_PIL_FILTERS = {0: "nearest", 2: "bilinear", 3: "bicubic"}


def _interpolation(t: Any, what: str) -> str:
    """The resize filter of a Resize or RandomResizedCrop, as the table's ``interpolation``, or refused.

    Accepts every spelling torchvision takes: an ``InterpolationMode`` (v1 and v2 share it), its
    value as a string, or PIL's filter number. ``NEAREST_EXACT`` is PIL's ``NEAREST`` on a PIL image
    (torchvision maps both to it), so it is nearest here too.
    """
    from torchvision.transforms import InterpolationMode
    mode = getattr(t, "interpolation", InterpolationMode.BILINEAR)
    if isinstance(mode, InterpolationMode):
        name = mode.value
    elif isinstance(mode, str):
        name = mode.lower()
    elif isinstance(mode, int):  # PIL's numbers, an IntEnum in Pillow 9.1+
        name = _PIL_FILTERS.get(int(mode), f"PIL filter {int(mode)}")
    else:
        name = repr(mode)
    if name == "nearest-exact":
        name = "nearest"
    if name not in ("bilinear", "bicubic", "nearest"):
        _refuse(f"{what} with interpolation {mode}", "Stoke resizes as PIL does with bilinear, bicubic or nearest "
                "only: pick one of them, or run this transform in torch's DataLoader")
    return name


def translate_transform(transform: Any) -> Dict[str, Any]:
    """A torchvision transform as Stoke's producer settings, exactly, or refused.

    Args:
        transform: a ``Compose`` or one transform, of ``torchvision.transforms`` or
            ``torchvision.transforms.v2`` (or a wrapper whose ``__call__`` only applies its
            ``transforms``).

    Returns:
        ``{"transform": "eval"|"train"|"squash", "resize", "crop", "scale", "ratio", "flip", "augment", "interpolation":
        "bilinear"|"bicubic"|"nearest", "output": "uint8"|"float32", "chw": bool (uint8 as [n, 3, H, W],
        PILToTensor's layout), "mean", "std"}``.

    Raises:
        UnsupportedError: a step Stoke cannot do exactly, naming it and the ways out (also when
            torchvision is not installed).

    Example::

        >>> translate_transform(T.Compose([T.Resize(256), T.CenterCrop(224), T.PILToTensor()]))["chw"]
        True
    """
    try:
        import torchvision  # noqa: F401
    except ImportError:
        raise UnsupportedError("a dataset's transform needs torchvision to be read; it is not installed") from None
    import torch

    kinds = _kinds()
    steps = _flatten(transform, kinds)
    _refuse_library_steps(steps)
    names = [type(t).__name__ for t in steps]
    settings = {"scale": None, "ratio": None, "flip": None, "augment": None, "mean": None, "std": None, "erase": None,
                "erase_scale": None, "erase_ratio": None, "erase_value": None}
    i = 0

    def at(*wanted):
        return i < len(steps) and kinds.get(type(steps[i])) in wanted

    def skip_pure_tensor():
        # v2's ToPureTensor() unwraps a TVTensor into a plain tensor: Stoke's batches are plain already.
        nonlocal i
        while at("ToPureTensor"):
            i += 1

    def skip_uint8_to_uint8():
        # ToDtype(torch.uint8[, scale]) and ConvertImageDtype(torch.uint8) return a uint8 image as it
        # is (torchvision's to_dtype_image and convert_image_dtype: the same dtype, the same tensor):
        # torchvision's own docs put the first after ToImage().
        nonlocal i
        while at("ConvertImageDtype", "ToDtype") and steps[i].dtype is torch.uint8:
            i += 1
            skip_pure_tensor()

    after = 1  # past torchvision's docs' ToImage() + ToDtype(torch.uint8, scale=True) before the crop
    while i + after < len(steps) and kinds.get(type(steps[i + after])) in ("ToDtype", "ConvertImageDtype") \
            and steps[i + after].dtype is torch.uint8:
        after += 1
    if at("PILToTensor", "ToImage") and i + after < len(steps) and kinds.get(type(steps[i + after])) in (
            "Resize", "RandomResizedCrop", "CenterCrop", "RandomHorizontalFlip", "ToPureTensor"):
        _refuse(f"{names[0]}() before the crop ({' + '.join(names)}; the reference recipe's --backend tensor)",
                "torchvision then resizes a tensor with torch's own antialiased filter, whose pixels are not PIL's; "
                "Stoke resamples exactly as PIL does: put the conversion after the crop (--backend pil, the default)")
    # Geometry: Resize(s) + CenterCrop(c), or RandomResizedCrop(...) [+ RandomHorizontalFlip(p)].
    if at("Resize"):
        r = steps[i]
        if r.size is None:
            _refuse(f"Resize(size=None, max_size={r.max_size})", "Stoke resizes the shorter side (Resize(int))")
        # Resize((s, s)) squashes the image to s x s (timm's crop_mode='squash', open_clip's
        # resize_mode='squash'): Stoke's "squash" transform; any other pair distorts it otherwise.
        squash = isinstance(r.size, (list, tuple)) and len(r.size) == 2 and r.size[0] == r.size[1]
        if isinstance(r.size, (list, tuple)) and len(r.size) != 1 and not squash:
            _refuse(f"Resize({tuple(r.size)!r})", "a (height, width) pair of two sizes gives a rectangle; Stoke "
                    "resizes the shorter side (Resize(int)) or both to one size (Resize((s, s)))")
        interpolation = _interpolation(r, "Resize")
        if getattr(r, "max_size", None) is not None:
            _refuse(f"Resize(max_size={r.max_size})")
        resize = int(r.size if isinstance(r.size, int) else r.size[0])
        i += 1
        if at("CenterCrop"):
            crop = _square(steps[i].size, "CenterCrop")
            if crop > resize:
                _refuse(f"CenterCrop({crop}) after Resize({resize})", "a crop larger than the resized image pads it; "
                        "Stoke crops inside the image")
            i += 1
        elif squash:
            crop = resize  # open_clip's squash: the s x s image is the output
        else:
            _refuse(f"Resize({resize}) without a CenterCrop after it ({' + '.join(names)})",
                    "Stoke's batches are square crops: Resize(s) + CenterCrop(c)")
        settings.update(transform="squash" if squash else "eval", resize=resize, crop=crop,
                        interpolation=interpolation)
    elif at("RandomResizedCrop"):
        c = steps[i]
        interpolation = _interpolation(c, "RandomResizedCrop")
        crop = _square(c.size, "RandomResizedCrop")
        settings.update(transform="train", resize=crop, crop=crop, scale=[float(v) for v in c.scale],
                        ratio=[float(v) for v in c.ratio], flip=0.0, interpolation=interpolation)
        i += 1
        # The colour steps (ColorJitter, maybe under RandomApply, then a random grey) act on each
        # pixel alone (Contrast's mean grey is the whole image's), so they give the same bytes before
        # the flip as after it: either place is taken.
        colour = None
        colour_at = i  # the first colour step, named if a policy follows
        if at(*_COLOUR_STEPS):
            colour, i = _colour_steps(steps, names, i, kinds)
        if at("RandomHorizontalFlip"):
            settings["flip"] = float(steps[i].p)
            i += 1
        if colour is None and at(*_COLOUR_STEPS):
            colour_at = i
            colour, i = _colour_steps(steps, names, i, kinds)
        if at(*_POLICIES):
            if colour is not None:
                _refuse(f"{names[colour_at]} and {names[i]} ({' + '.join(names)})", "Stoke runs one augmentation on a "
                        "sample: ColorJitter and RandomGrayscale, or one auto-augment policy")
            settings["augment"] = _policy(steps[i], kinds.get(type(steps[i])))
            i += 1
        elif colour is not None:
            settings["augment"] = colour
    else:
        what = names[0] if steps else "an empty Compose"
        _refuse(f"{what} as the transform's first step ({' + '.join(names)})",
                "Stoke translates Resize(s) + CenterCrop(c), Resize((s, s)) [+ CenterCrop(c)] or "
                "RandomResizedCrop(...) [+ RandomHorizontalFlip(p)], "
                "then PILToTensor() or ToImage() [+ ToDtype(torch.float32, scale=True) or ConvertImageDtype(torch.float)] "
                "or ToTensor() [+ Normalize(mean, std)] [+ ToPureTensor()]")
    if at(*_POLICIES, *_COLOUR_STEPS):
        _refuse(f"{names[i]} here ({' + '.join(names)})", "torchvision's recipes run the auto-augment policy, and "
                "timm's and SimCLR's their colour steps, on the training crop, after RandomResizedCrop "
                "[+ RandomHorizontalFlip] and before the conversion, and that is where Stoke runs them")
    # Conversion: PILToTensor()/ToImage() [+ ToDtype(float32, scale=True)/ConvertImageDtype(float)] | ToTensor().
    if at("PILToTensor", "ToImage"):
        i += 1
        skip_pure_tensor()
        skip_uint8_to_uint8()
        if at("RandomErasing"):  # on the uint8 image, which torchvision allows: erased before the conversion
            settings.update(_erasing(steps[i], uint8=True))
            i += 1
            skip_pure_tensor()
            skip_uint8_to_uint8()
        if at("ConvertImageDtype", "ToDtype"):
            _to_float32(steps[i], kinds.get(type(steps[i])), torch)
            i += 1
            settings.update(output="float32", chw=False)
        else:
            settings.update(output="uint8", chw=True)
    elif at("ToTensor"):
        i += 1
        settings.update(output="float32", chw=False)
    elif i < len(steps):
        _refuse(f"{names[i]} ({' + '.join(names)})", ONLY)
    else:
        _refuse(f"a transform that ends with a PIL image ({' + '.join(names)})",
                "after the crop Stoke needs PILToTensor(), ToImage() or ToTensor() (PIL images cannot be batched)")
    skip_pure_tensor()
    if at("Normalize"):
        if settings["output"] != "float32":
            _refuse("Normalize on PILToTensor()'s uint8 tensor", "torchvision refuses it too: add "
                    "ToDtype(torch.float32, scale=True) or ConvertImageDtype(torch.float) before it")
        n = steps[i]
        mean = [float(v) for v in torch.as_tensor(n.mean, dtype=torch.float32).flatten().tolist()]
        std = [float(v) for v in torch.as_tensor(n.std, dtype=torch.float32).flatten().tolist()]
        if len(mean) == 1:
            mean *= 3
        if len(std) == 1:
            std *= 3
        if len(mean) != 3 or len(std) != 3 or not all(s > 0 for s in std):
            _refuse(f"Normalize(mean={n.mean}, std={n.std})", "Stoke normalises 3 channels with positive std")
        settings.update(mean=mean, std=std)
        i += 1
    elif settings["output"] == "float32":
        settings.update(mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])
    skip_pure_tensor()
    if at("RandomErasing"):
        if settings["erase"] is not None:
            _refuse(f"a second RandomErasing ({' + '.join(names)})", "Stoke erases one box per sample: keep one")
        settings.update(_erasing(steps[i]))
        i += 1
        skip_pure_tensor()
    if i < len(steps):
        _refuse(f"{names[i]} ({' + '.join(names)})", ONLY)
    return settings


def _policy(t: Any, kind: str) -> str:
    """An auto-augment policy of v1 or v2 in Stoke's spelling (``ta_wide:31,interpolation=nearest,
    fill=0:0:0``, see ``AugmentPolicy`` in the loader), or refused."""
    from torchvision.transforms import InterpolationMode

    v2 = type(t).__module__.startswith("torchvision.transforms.v2")
    if kind == "AugMix":
        return _augmix(t, v2)
    if kind == "TrivialAugmentWide":
        head = f"ta_wide:{int(t.num_magnitude_bins)}"
    elif kind == "RandAugment":
        head = f"ra:{int(t.num_ops)}:{int(t.magnitude)}:{int(t.num_magnitude_bins)}"
    else:
        head = "aa:" + t.policy.name.lower()
    interpolation = t.interpolation
    if interpolation in (InterpolationMode.NEAREST, "nearest", 0):
        mode = "nearest"
    elif interpolation in (InterpolationMode.BILINEAR, "bilinear", 2):
        mode = "bilinear"
    elif interpolation in (InterpolationMode.BICUBIC, "bicubic", 3):
        mode = "bicubic"
    else:
        _refuse(f"{kind}(interpolation={interpolation})", "Stoke's geometric ops interpolate as PIL's affine "
                "transform does, with NEAREST, BILINEAR or BICUBIC")
    fill = t.fill
    if fill is None:
        rgb = [0, 0, 0]
    elif isinstance(fill, (int, float)):
        rgb = [int(fill)] * 3
    elif isinstance(fill, (list, tuple)) and len(fill) in (1, 3) and all(isinstance(v, (int, float)) for v in fill):
        rgb = [int(v) for v in fill] * (3 if len(fill) == 1 else 1)
    else:
        _refuse(f"{kind}(fill={fill!r})", "Stoke fills with one value or an RGB triple")
    if not all(0 <= v <= 255 for v in rgb):
        _refuse(f"{kind}(fill={fill!r})", "a uint8 image's fill is 0 to 255")
    return f"{head},interpolation={mode},fill={rgb[0]}:{rgb[1]}:{rgb[2]}" + (",v2" if v2 else "")


#: The colour steps Stoke runs on the training crop: a ColorJitter (bare, under RandomApply, or
#: open_clip's color_jitter(p)), then a grey (RandomGrayscale(p), Grayscale(3), open_clip's gray_scale(p)).
_COLOUR_STEPS = ("ColorJitter", "RandomApply", "open_clip color_jitter", "RandomGrayscale", "Grayscale",
                 "open_clip gray_scale")


def _colour_steps(steps: Sequence[Any], names: Sequence[str], i: int, kinds) -> Tuple[str, int]:
    """The colour steps from ``steps[i]`` on, as Stoke's ``jitter:B:C:S:H[,p=P][,gray=G]``, and the
    index after them; refused where they are not a jitter then a grey (each optional, in that order).

    A jitter runs with probability ``p``: 1 bare, RandomApply's ``p`` (which applies when
    ``torch.rand(1) <= p``) or open_clip's (``random.random() < p``), the same distribution. The grey
    is ``F.rgb_to_grayscale(img, 3)``, PIL's ``convert("L")`` in three channels, with probability
    ``gray``: RandomGrayscale's ``p``, open_clip's ``gray_scale``'s, 1 for ``Grayscale(3)``.
    """
    jitter, p, gray = None, 1.0, 0.0
    kind = kinds.get(type(steps[i]))
    if kind == "ColorJitter":
        jitter, i = steps[i], i + 1
    elif kind == "RandomApply":
        inner = list(steps[i].transforms)
        if len(inner) != 1 or kinds.get(type(inner[0])) != "ColorJitter":
            _refuse(f"RandomApply({inner!r})", "Stoke runs RandomApply around one ColorJitter only")
        jitter, p, i = inner[0], float(steps[i].p), i + 1
    elif kind == "open_clip color_jitter":
        jitter, p, i = steps[i].transf, float(steps[i].p), i + 1
    kind = kinds.get(type(steps[i])) if i < len(steps) else None
    if kind in ("RandomGrayscale", "open_clip gray_scale"):
        gray, i = float(steps[i].p), i + 1
    elif kind == "Grayscale":
        if int(steps[i].num_output_channels) != 3:
            _refuse(f"Grayscale(num_output_channels={steps[i].num_output_channels})", "Stoke's images have 3 "
                    "channels: num_output_channels=3")
        gray, i = 1.0, i + 1
    if i < len(steps) and kinds.get(type(steps[i])) in _COLOUR_STEPS:
        _refuse(f"{names[i]} after {names[i - 1]} ({' + '.join(names)})", "Stoke runs one ColorJitter (bare, under "
                "RandomApply or open_clip's color_jitter) and then one random grey, in that order")
    if not 0.0 <= p <= 1.0 or not 0.0 <= gray <= 1.0:
        _refuse(f"a probability of {p if not 0.0 <= p <= 1.0 else gray}", "it is 0 to 1")
    spelling = _jitter(jitter) if jitter is not None else "jitter:-:-:-:-"
    return spelling + (f",p={p!r}" if p != 1.0 else "") + (f",gray={gray!r}" if gray != 0.0 else ""), i


def _jitter(t: Any) -> str:
    """A ``ColorJitter`` (v1's or v2's) in Stoke's spelling: ``jitter:B:C:S:H``, each the range
    torchvision holds after its checks (``LO/HI``, Python's exact ``repr`` of each float), or ``-``
    where it holds None (that op is off). Its draws (the order of the four ops by ``randperm(4)``, each
    factor uniform in its range) and its ops on the PIL image (``adjust_brightness``, ``_contrast``,
    ``_saturation``, ``_hue``) are the same in both versions.

    Args:
        t: the ``ColorJitter`` transform.
    """
    parts = []
    for name in ("brightness", "contrast", "saturation", "hue"):
        r = getattr(t, name, None)
        if r is None:
            parts.append("-")
            continue
        lo, hi = (float(v) for v in r)
        parts.append(f"{lo!r}/{hi!r}")
    return "jitter:" + ":".join(parts)


def _augmix(t: Any, v2: bool) -> str:
    """An AugMix (v1's or v2's) in Stoke's spelling (``augmix:3:3:-1:1.0,interpolation=bilinear``).

    Its ops run on a uint8 tensor, as torchvision's AugMix runs them on a PIL image, so the interpolation
    is NEAREST or BILINEAR (what Stoke's tensor kernels do) and the fill is None (grid_sample's zeros) or
    whole values 0 to 255, blended through a mask as torchvision blends them.

    Args:
        t: the ``AugMix`` transform.
        v2: whether it is ``torchvision.transforms.v2``'s.
    """
    from torchvision.transforms import InterpolationMode

    severity, width, depth, alpha = t.severity, t.mixture_width, t.chain_depth, t.alpha
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (severity, width, depth)):
        _refuse(f"AugMix(severity={severity!r}, mixture_width={width!r}, chain_depth={depth!r})",
                "they are whole numbers")
    if not 1 <= width <= 64:
        _refuse(f"AugMix(mixture_width={width})", "Stoke mixes 1 to 64 chains")
    if depth > 64:
        _refuse(f"AugMix(chain_depth={depth})", "Stoke runs chains of at most 64 ops (or -1: 1 to 3 drawn)")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
        _refuse(f"AugMix(alpha={alpha!r})", "the Dirichlet weights need a positive alpha")
    interpolation = t.interpolation
    if interpolation in (InterpolationMode.NEAREST, "nearest", 0):
        mode = "nearest"
    elif interpolation in (InterpolationMode.BILINEAR, "bilinear", 2):
        mode = "bilinear"
    else:
        _refuse(f"AugMix(interpolation={interpolation})", "AugMix runs torchvision's tensor ops, and Stoke's "
                "tensor ops interpolate with NEAREST or BILINEAR, as v1's tensor affine transform does")
    spelling = f"augmix:{severity}:{width}:{depth}:{float(alpha)!r}" + ("" if t.all_ops else ",all_ops=false")
    spelling += f",interpolation={mode}"
    fill = t.fill
    if fill is not None:
        values = [fill] if isinstance(fill, (int, float)) else fill
        if (not isinstance(values, (list, tuple)) or len(values) not in (1, 3)
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer()
                           and 0 <= v <= 255 for v in values)):
            _refuse(f"AugMix(fill={fill!r})", "Stoke fills with one whole value 0 to 255 or an RGB triple of them")
        rgb = [int(v) for v in values] * (3 if len(values) == 1 else 1)
        spelling += f",fill={rgb[0]}:{rgb[1]}:{rgb[2]}"
    return spelling + (",v2" if v2 else "")


def _erasing(t: Any, uint8: bool = False) -> Dict[str, Any]:
    """A RandomErasing (v1's or v2's) as the table's ``erase``, ``erase_scale``, ``erase_ratio`` and
    ``erase_value``; ``inplace`` changes nothing in a fresh batch, so it is not kept.

    Args:
        t: the transform.
        uint8: whether it erases ``PILToTensor()``'s uint8 image (``erase_value`` ``uint8:V``), where
            torch casts the value to uint8 by truncation; ``'random'`` and values outside
            ``[0, 256)`` are refused there, since torch's cast of a negative float is the CPU's.
    """
    value = getattr(t, "value", 0)
    if value is None or (isinstance(value, str) and value == "random"):  # v2 keeps "random" as None
        if uint8:
            _refuse("RandomErasing(value='random') on a uint8 image",
                    "torchvision casts its standard normal draws to uint8, which makes most of them 0 and a negative "
                    "one whatever the CPU's cast gives (255 on x86, 0 on ARM): give a value, or erase after "
                    "ToDtype(torch.float32, scale=True) and Normalize")
        text = "random"
    elif isinstance(value, (int, float)):
        text = repr(float(value))
    elif isinstance(value, (list, tuple)) and len(value) in (1, 3):
        text = ",".join(repr(float(v)) for v in value)
    else:
        _refuse(f"RandomErasing(value={value!r})", "Stoke erases with one number, three (one per channel) or 'random'")
    if uint8:
        if not all(0 <= float(v) < 256 for v in text.split(",")):
            _refuse(f"RandomErasing(value={value!r}) on a uint8 image", "torch wraps a value over 255 and casts a "
                    "negative one as the CPU does: give values from 0 to 255")
        text = "uint8:" + text
    return {"erase": float(t.p), "erase_scale": [float(v) for v in t.scale],
            "erase_ratio": [float(v) for v in t.ratio], "erase_value": text}


def _to_float32(t, kind, torch):
    """Refuses a dtype conversion other than uint8 -> float32 scaled to [0, 1]."""
    if kind == "ToDtype":
        if isinstance(t.dtype, dict) or t.dtype != torch.float32:
            _refuse(f"ToDtype({t.dtype!r})", "Stoke gives uint8, or float32 scaled to [0, 1] (ToDtype(torch.float32, "
                    "scale=True))")
        if not t.scale:
            _refuse("ToDtype(torch.float32, scale=False)", "Stoke's float32 is scaled to [0, 1], as "
                    "ToDtype(torch.float32, scale=True) and ConvertImageDtype(torch.float) give")
    elif t.dtype != torch.float32:
        _refuse(f"ConvertImageDtype({t.dtype})", "Stoke gives uint8 or float32")
