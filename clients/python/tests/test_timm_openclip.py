"""stoke.DataLoader with timm's and open_clip's own transforms: ``timm.data.create_transform`` of a
model's data config and ``open_clip.create_model_and_transforms``' preprocess, translated into
Stoke's producer settings and giving the pixels torch's DataLoader gives with the same transform
over the same ImageFolder (uint8 byte for byte, float32 within 1e-6), their training transforms
translated where their ops are torchvision's, every step of their own refused by name, and the
open_clip embedding loop giving torch's embeddings. Their "squash" resize (torchvision's
``Resize((s, s))``, Stoke's ``--transform squash``) is checked with torchvision alone too, so that
every stack runs it.

The images are of several sizes and aspect ratios, some smaller than the crop, with gray, RGBA and
palette PNGs beside the JPEGs (open_clip's ``MaybeConvertMode`` is read as the no-op it is after
torchvision's loader, which makes every image RGB as Stoke does). Models have random weights
(``pretrained=None`` / ``False``): the transforms come from their configs, not their weights.
"""

import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))

try:
    import numpy as np
    import torch
    import torchvision
    from PIL import Image
    import stoke
    from stoke._torch_compat import translate_transform
    import _aids  # tests/_aids.py
    MISSING = None
except ImportError as e:  # numpy, torch, torchvision or Pillow not installed: skip, loudly
    MISSING = f"{e.name} is not installed"

DATA = None
TMP = None
#: (width, height, mode, format): wide, tall, square, smaller than every crop, and the PNG colour
#: types a user's folder holds.
IMAGES = [(320, 240, "RGB", "JPEG"), (240, 320, "RGB", "JPEG"), (500, 130, "RGB", "JPEG"), (130, 500, "RGB", "PNG"),
          (224, 224, "RGB", "JPEG"), (100, 80, "RGB", "JPEG"), (57, 300, "RGB", "PNG"), (150, 210, "L", "PNG"),
          (260, 190, "RGBA", "PNG"), (180, 180, "P", "PNG"), (90, 120, "L", "JPEG"), (333, 251, "RGB", "PNG")]


def setUpModule():
    global DATA, TMP
    if MISSING:
        raise unittest.SkipTest(f"NOT CHECKED: {MISSING}")
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-timm-openclip-test-"))
    DATA = TMP / "data"
    rng = np.random.default_rng(48)
    for k, (w, h, mode, fmt) in enumerate(IMAGES):
        folder = DATA / f"class_{k % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        # Smooth gradients under noise: edges and texture for the resampling filters to differ on.
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 7) % 256], -1)
        pixels = np.clip(base + rng.integers(-40, 41, size=(h, w, 3)), 0, 255).astype(np.uint8)
        image = Image.fromarray(pixels, "RGB")
        if mode == "L":
            image = image.convert("L")
        elif mode == "RGBA":
            alpha = Image.fromarray(rng.integers(0, 256, size=(h, w), dtype=np.uint8), "L")
            image = image.convert("RGBA")
            image.putalpha(alpha)
        elif mode == "P":
            image = image.quantize(100)
        image.save(folder / f"image_{k}.{'jpg' if fmt == 'JPEG' else 'png'}", fmt)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def torch_batches(dataset, batch_size):
    """torch's own DataLoader over ``dataset``, in order: the reference."""
    return list(torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=0))


class PixelsTest(unittest.TestCase):
    def check_pixels(self, name, transform, dtype, crop, interpolation="bicubic"):
        """Every sample of stoke.DataLoader over ImageFolder(DATA, transform) is the one torch's
        DataLoader gives over the same dataset: uint8 byte for byte, float32 within 1e-6."""
        dataset = torchvision.datasets.ImageFolder(str(DATA), transform=transform)
        expected = torch_batches(dataset, 5)
        with stoke.DataLoader(dataset, batch_size=5, num_workers=2) as loader:
            self.assertEqual(interpolation, loader.interpolation, name)
            self.assertEqual("none", loader.dct_scaling, f"{name}: a translated transform is exact")
            got = [(images.clone(), labels.clone()) for images, labels in loader]
        self.assertEqual(len(expected), len(got), name)
        checked = 0
        for k, ((e_images, e_labels), (images, labels)) in enumerate(zip(expected, got)):
            self.assertEqual((len(e_labels), 3, crop, crop), tuple(images.shape), name)
            self.assertEqual(dtype, images.dtype, name)
            self.assertEqual(e_labels.tolist(), labels.tolist(), f"{name}: batch {k}")
            for j in range(len(labels)):
                index = k * 5 + j
                if dtype == torch.uint8:
                    self.assertTrue(torch.equal(e_images[j], images[j]), f"{name}: {dataset.samples[index][0]}")
                else:
                    diff = float((e_images[j] - images[j]).abs().max())
                    self.assertLessEqual(diff, 1e-6, f"{name}: {dataset.samples[index][0]}")
                checked += 1
        self.assertEqual(len(IMAGES), checked, name)


class SquashTest(PixelsTest):
    def test_torchvisions_resize_to_a_square_gives_its_pixels_on_every_stack(self):
        # What timm's crop_mode="squash" and open_clip's resize_mode="squash" build, with torchvision
        # alone: Resize((s, s)) squashes the image to s x s, with or without a CenterCrop after it.
        T = torchvision.transforms
        cases = [("Resize((200, 200)) + CenterCrop(180), uint8",
                  [T.Resize((200, 200), interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(180),
                   T.PILToTensor()], torch.uint8, 180, "bicubic"),
                 ("Resize([160, 160]), float32", [T.Resize([160, 160]), T.ToTensor()], torch.float32, 160,
                  "bilinear")]
        for name, steps, dtype, crop, interpolation in cases:
            self.check_pixels(name, T.Compose(steps), dtype, crop, interpolation)


class TimmTest(PixelsTest):
    @classmethod
    def setUpClass(cls):
        cls.timm = _aids.import_library("timm")

    def config(self, name):
        from timm.data import resolve_data_config
        model = self.timm.create_model(name, pretrained=False)
        return resolve_data_config({}, model=model)

    def test_the_eval_transform_of_three_model_configs_gives_timms_pixels(self):
        from timm.data import create_transform
        # resnet50 and convnext_tiny: crop_pct 0.95 (Resize(235)), ImageNet's mean; the ViT: crop_pct 0.9
        # (Resize(248)) and mean = std = 0.5. Every one bicubic, CenterCrop((224, 224)), MaybeToTensor.
        for name, resize in (("resnet50", 235), ("vit_base_patch16_224", 248), ("convnext_tiny", 235)):
            config = self.config(name)
            transform = create_transform(**config)
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=transform)
            with stoke.DataLoader(dataset, batch_size=4) as loader:
                self.assertEqual(("eval", resize, 224, "float32"),
                                 (loader.transform, loader.resize, loader.crop, loader.output), name)
                self.assertEqual([float(v) for v in torch.tensor(config["mean"])], loader.mean, name)
                self.assertEqual([float(v) for v in torch.tensor(config["std"])], loader.std, name)
            self.check_pixels(name, transform, torch.float32, 224)
        # use_prefetcher=True ends in timm's MaybePILToTensor: the uint8 image, byte for byte.
        self.check_pixels("resnet50 uint8", create_transform(**self.config("resnet50"), use_prefetcher=True),
                          torch.uint8, 224)
        # crop_mode="squash": Resize((235, 235)), the aspect ratio not kept, then CenterCrop(224).
        squash = create_transform(**dict(self.config("convnext_tiny"), crop_mode="squash"))
        self.assertIn("Resize(size=(235, 235)", repr(squash))
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=squash), batch_size=4) as loader:
            self.assertEqual(("squash", 235, 224), (loader.transform, loader.resize, loader.crop))
        self.check_pixels("convnext_tiny squash", squash, torch.float32, 224)
        self.check_pixels("convnext_tiny squash uint8", create_transform(
            **dict(self.config("convnext_tiny"), crop_mode="squash", use_prefetcher=True)), torch.uint8, 224)

    def test_the_training_transform_is_translated_where_its_ops_are_torchvisions(self):
        from timm.data import create_transform
        config = self.config("resnet50")
        train = create_transform(**config, is_training=True, color_jitter=None)
        dataset = torchvision.datasets.ImageFolder(str(DATA), transform=train)
        with stoke.DataLoader(dataset, batch_size=4, seed=1) as loader:
            self.assertEqual(("train", [0.08, 1.0], [0.75, 4 / 3], 0.5, "bicubic", "float32"),
                             (loader.transform, loader.scale, loader.ratio, loader.flip, loader.interpolation,
                              loader.output))
            shapes = {tuple(images.shape[1:]) for images, _ in loader}
        self.assertEqual({(3, 224, 224)}, shapes)
        # timm's default (color_jitter=0.4): ColorJitter(0.4, 0.4, 0.4) after the flip, torchvision's own
        # class, which Stoke runs as the training crop's augmentation (hue off: timm passes none).
        jittered = create_transform(**config, is_training=True)
        self.assertIn("ColorJitter(brightness=", repr(jittered))
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=jittered), batch_size=4,
                              seed=1) as loader:
            self.assertEqual("jitter:0.6/1.4:0.6/1.4:0.6/1.4:-", loader.augment)
            shapes = {tuple(images.shape[1:]) for images, _ in loader}
        self.assertEqual({(3, 224, 224)}, shapes)
        # SimCLR-like: color_jitter_prob puts it under RandomApply, grayscale_prob adds RandomGrayscale.
        simclr = create_transform(**config, is_training=True, color_jitter=(0.4, 0.4, 0.4, 0.1), color_jitter_prob=0.8,
                                  grayscale_prob=0.2)
        self.assertIn("RandomGrayscale", repr(simclr))
        self.assertEqual("jitter:0.6/1.4:0.6/1.4:0.6/1.4:-0.1/0.1,p=0.8,gray=0.2",
                         translate_transform(simclr)["augment"])
        # color_jitter=0 is a ColorJitter with every factor off: nothing, read as nothing.
        zero = create_transform(**config, is_training=True, color_jitter=0)
        self.assertIn("ColorJitter", repr(zero))
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=zero), batch_size=4) as loader:
            self.assertEqual(("train", 0.5), (loader.transform, loader.flip))
        # RandomResizedCropAndInterpolation draws as torchvision's RandomResizedCrop does: scale (1, 1)
        # and ratio (10, 10) fit no try, so both fall back to the centred box of ratio 10, and hflip=1
        # always flips; a box and a flip known in advance, so timm's own pixels, in both dtypes.
        for use_prefetcher, dtype in ((False, torch.float32), (True, torch.uint8)):
            fixed = create_transform(**config, is_training=True, color_jitter=None, scale=(1.0, 1.0),
                                     ratio=(10.0, 10.0), hflip=1.0, use_prefetcher=use_prefetcher)
            self.assertIn("RandomResizedCropAndInterpolation", repr(fixed))
            self.check_pixels(f"fixed box {dtype}", fixed, dtype, 224)

    def test_timms_own_steps_are_refused_naming_them_and_the_way_out(self):
        from timm.data import create_transform
        config = self.config("resnet50")
        train = dict(config, is_training=True, color_jitter=None)
        refused = {
            "timm's own RandAugment": (dict(train, auto_augment="rand-m9-mstd0.5-inc1"), "T.RandAugment()"),
            "timm's own AutoAugment": (dict(train, auto_augment="original"), "T.AutoAugment()"),
            "timm's own AugMix": (dict(train, auto_augment="augmix-m5-w4-d2"), "T.AugMix()"),
            "timm's own RandomErasing": (dict(train, re_prob=0.25), "re_prob=0"),
            "interpolation='random'": (dict(train, interpolation="random"), "interpolation='bilinear' or 'bicubic'"),
            "ResizeKeepRatio": (dict(train, train_crop_mode="rkrc"), "train_crop_mode='rrc'"),
            "Resize((235, 270))": (dict(config, crop_mode="squash", input_size=(3, 224, 257)), "Resize((s, s))"),
            "timm's ResizeKeepRatio (crop_mode='border'": (dict(config, crop_mode="border"), "crop_mode='center'"),
            "timm's TrimBorder": (dict(config, crop_border_pixels=4), "crop_border_pixels=None"),
            "CenterCrop(224) after Resize(203)": (dict(config, crop_pct=1.1), "crops inside the image"),
            "RandomVerticalFlip": (dict(train, vflip=0.5), "RandomHorizontalFlip(p)"),
        }
        for name, (kwargs, way_out) in refused.items():
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=create_transform(**kwargs))
            with self.assertRaises(ValueError, msg=name) as caught:
                stoke.DataLoader(dataset, batch_size=4)
            message = str(caught.exception)
            for part in (name, way_out, "batch_transform", "torch.utils.data.DataLoader"):
                self.assertIn(part, message, name)


class OpenClipTest(PixelsTest):
    @classmethod
    def setUpClass(cls):
        cls.open_clip = _aids.import_library("open_clip")

    def test_the_preprocess_of_two_models_gives_open_clips_pixels(self):
        # ViT-S-32: 224, CLIP's mean and std; ViT-B-32-256: 256 (Resize(256) + CenterCrop(256)), and here
        # SigLIP's mean and std (0.5) as image_mean/image_std set them. Both bicubic, with MaybeConvertMode.
        for name, crop, extra in (("ViT-S-32", 224, {}),
                                  ("ViT-B-32-256", 256, dict(image_mean=(0.5,) * 3, image_std=(0.5,) * 3))):
            _, train, preprocess = self.open_clip.create_model_and_transforms(name, pretrained=None, **extra)
            self.assertIn("MaybeConvertMode", repr(preprocess))
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=preprocess)
            with stoke.DataLoader(dataset, batch_size=4) as loader:
                self.assertEqual(("eval", crop, crop), (loader.transform, loader.resize, loader.crop), name)
                mean = extra.get("image_mean", self.open_clip.OPENAI_DATASET_MEAN)
                self.assertEqual([float(v) for v in torch.tensor(mean)], loader.mean, name)
            self.check_pixels(name, preprocess, torch.float32, crop)
            # The training preprocess: torchvision's RandomResizedCrop (scale (0.9, 1), bicubic), no flip.
            with stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=train), batch_size=4,
                                  seed=2) as loader:
                self.assertEqual(("train", [0.9, 1.0], [0.75, 4 / 3], 0.0, "bicubic"),
                                 (loader.transform, loader.scale, loader.ratio, loader.flip, loader.interpolation),
                                 name)
                shapes = {tuple(images.shape[1:]) for images, _ in loader}
            self.assertEqual({(3, crop, crop)}, shapes, name)
        # resize_mode="squash" (SigLIP's, CLIPA's, PE-Core's pretrained configs): Resize((s, s)) and no crop.
        squash = self.open_clip.image_transform(224, False, resize_mode="squash", interpolation="bicubic",
                                                mean=(0.5,) * 3, std=(0.5,) * 3)
        self.assertIn("Resize(size=(224, 224)", repr(squash))
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=squash), batch_size=4) as loader:
            self.assertEqual(("squash", 224, 224), (loader.transform, loader.resize, loader.crop))
        self.check_pixels("squash", squash, torch.float32, 224)
        # aug_cfg's colour steps: open_clip's color_jitter(p) (torchvision's ColorJitter under Python's random)
        # and gray_scale(p) (Grayscale(3) likewise), read as RandomApply and RandomGrayscale.
        colour = self.open_clip.image_transform(224, True, aug_cfg=dict(
            color_jitter=(0.4, 0.4, 0.4, 0.1), color_jitter_prob=0.8, gray_scale_prob=0.2))
        self.assertIn("color_jitter", repr(colour.transforms))
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=colour), batch_size=4) as loader:
            self.assertEqual("jitter:0.6/1.4:0.6/1.4:0.6/1.4:-0.1/0.1,p=0.8,gray=0.2", loader.augment)
            shapes = {tuple(images.shape[1:]) for images, _ in loader}
        self.assertEqual({(3, 224, 224)}, shapes)
        # aug_cfg use_timm=True builds timm's training transform (no flip, colour jitter off by default).
        timm_train = self.open_clip.image_transform(224, True, aug_cfg=dict(use_timm=True, scale=(0.5, 1.0)))
        self.assertIn("RandomResizedCropAndInterpolation", repr(timm_train))
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(DATA), transform=timm_train),
                              batch_size=4) as loader:
            self.assertEqual(("train", [0.5, 1.0], 0.0, "bicubic"),
                             (loader.transform, loader.scale, loader.flip, loader.interpolation))

    def test_open_clips_own_steps_are_refused_naming_them_and_the_way_out(self):
        oc = self.open_clip
        refused = {
            "Resize((224, 256))": (oc.image_transform((224, 256), False, resize_mode="squash"), "Resize((s, s))"),
            "open_clip's ResizeKeepRatio": (oc.image_transform(224, False, resize_mode="longest"),
                                            "resize_mode='shortest'"),
            "MaybeConvertMode(mode='L')": (torchvision.transforms.Compose([
                torchvision.transforms.Resize(224), torchvision.transforms.CenterCrop(224),
                oc.transform.MaybeConvertMode("L"), oc.transform.MaybeToTensor()]), "RGB"),
        }
        for name, (transform, way_out) in refused.items():
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=transform)
            with self.assertRaises(ValueError, msg=name) as caught:
                stoke.DataLoader(dataset, batch_size=4)
            message = str(caught.exception)
            for part in (name, way_out, "batch_transform", "torch.utils.data.DataLoader"):
                self.assertIn(part, message, name)

    def test_the_embedding_loop_gives_torchs_embeddings(self):
        # docs/integrations/open_clip.md's loop: encode_image under no_grad over stoke.DataLoader, and
        # the same over torch's DataLoader with the same preprocess, batch for batch.
        torch.manual_seed(0)
        model, _, preprocess = self.open_clip.create_model_and_transforms("ViT-S-32", pretrained=None)
        model.eval()
        dataset = torchvision.datasets.ImageFolder(str(DATA), transform=preprocess)

        def embed(loader):
            out, targets = [], []
            with torch.no_grad():
                for images, labels in loader:
                    out.append(model.encode_image(images))
                    targets.append(labels.clone())
            return torch.cat(out), torch.cat(targets)

        expected, expected_labels = embed(torch.utils.data.DataLoader(dataset, batch_size=6, num_workers=0))
        with stoke.DataLoader(dataset, batch_size=6, num_workers=2) as loader:
            got, labels = embed(loader)
        self.assertEqual((len(IMAGES), model.visual.output_dim), tuple(got.shape))
        self.assertEqual(expected_labels.tolist(), labels.tolist())
        self.assertGreater(float(expected.abs().max()), 0.01, "the embeddings are not all zero")
        diff = float((expected - got).abs().max())
        self.assertLessEqual(diff, 1e-5, f"max difference {diff}")


if __name__ == "__main__":
    unittest.main()
