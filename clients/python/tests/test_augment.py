"""stoke.DataLoader with torchvision's auto-augment policies: translated from v1's and v2's classes
into Stoke's native stage, placed where torchvision runs them or refused, every augmented image one
that torchvision itself can give from the same crop, and the batches reproducible across runs and
on resume."""

import gc
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))

try:
    import torch
    import torchvision
    from torchvision import transforms as T
    import stoke
    from stoke._torch_compat import UnsupportedError, translate_transform
    MISSING = None
except ImportError as e:  # torch or torchvision not installed: skip, loudly
    MISSING = f"{e.name} is not installed"

#: Whether this torchvision has AugMix (0.13 and later); False without torchvision (the class skips then).
HAS_AUGMIX = MISSING is None and hasattr(T, "AugMix")

try:
    from torchvision.transforms import v2 as V2
    if not hasattr(V2, "TrivialAugmentWide"):
        V2 = None
except ImportError:
    V2 = None

DATA = None
TMP = None
LAUNCHER = str(CHECKOUT / "stoke")


def setUpModule():
    global DATA, TMP
    if MISSING:
        print(f"[stoke] SKIPPING the auto-augment tests: {MISSING}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-augment-test-"))
    DATA = TMP / "data"
    subprocess.run([LAUNCHER, "make-dataset", str(DATA), "--images", "12", "--seed", "3", "--classes", "2"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def _fixed_crop(size):
    # scale (1, 1) and ratio (10, 10) make no try fit, so torchvision falls back to the centred box of
    # ratio 10 on every image, and p=1 always flips: the crop is known, only the policy draws.
    return [T.RandomResizedCrop(size, scale=(1.0, 1.0), ratio=(10.0, 10.0)), T.RandomHorizontalFlip(1.0)]


@unittest.skipIf(MISSING, MISSING or "")
class TranslationTest(unittest.TestCase):
    def test_each_policy_is_spelled_with_its_settings(self):
        crop = _fixed_crop(64)
        cases = [
            (T.TrivialAugmentWide(), "ta_wide:31,interpolation=nearest,fill=0:0:0"),
            (T.TrivialAugmentWide(num_magnitude_bins=7, interpolation=T.InterpolationMode.BILINEAR, fill=[1, 2, 3]),
             "ta_wide:7,interpolation=bilinear,fill=1:2:3"),
            (T.RandAugment(), "ra:2:9:31,interpolation=nearest,fill=0:0:0"),
            (T.RandAugment(num_ops=3, magnitude=5, num_magnitude_bins=11, fill=128),
             "ra:3:5:11,interpolation=nearest,fill=128:128:128"),
            (T.AutoAugment(), "aa:imagenet,interpolation=nearest,fill=0:0:0"),
            (T.AutoAugment(T.AutoAugmentPolicy.SVHN), "aa:svhn,interpolation=nearest,fill=0:0:0"),
        ]
        if V2 is not None:
            cases += [(V2.TrivialAugmentWide(), "ta_wide:31,interpolation=nearest,fill=0:0:0,v2"),
                      (V2.AutoAugment(V2.AutoAugmentPolicy.CIFAR10), "aa:cifar10,interpolation=nearest,fill=0:0:0,v2")]
        for policy, spelling in cases:
            settings = translate_transform(T.Compose(crop + [policy, T.PILToTensor()]))
            self.assertEqual(spelling, settings["augment"], type(policy).__name__)
            self.assertEqual("train", settings["transform"])

    def test_color_jitter_is_spelled_with_the_ranges_torchvision_holds_before_or_after_the_flip(self):
        crop = T.RandomResizedCrop(64)
        cases = [
            (T.ColorJitter(0.4, 0.4, 0.4), "jitter:0.6/1.4:0.6/1.4:0.6/1.4:-"),
            (T.ColorJitter(brightness=(0.5, 0.9), hue=0.1), "jitter:0.5/0.9:-:-:-0.1/0.1"),
            (T.ColorJitter(contrast=0.3, saturation=(1.0, 1.0)), "jitter:-:0.7/1.3:-:-"),
        ]
        if V2 is not None:
            cases += [(V2.ColorJitter(0.2, hue=(-0.5, 0.25)), "jitter:0.8/1.2:-:-:-0.5/0.25")]
        for jitter, spelling in cases:
            for steps in ([crop, T.RandomHorizontalFlip(), jitter], [crop, jitter, T.RandomHorizontalFlip()]):
                settings = translate_transform(T.Compose(steps + [T.ToTensor()]))
                self.assertEqual(spelling, settings["augment"], repr(steps))
                self.assertEqual(("train", 0.5), (settings["transform"], settings["flip"]))
        # RandomApply around it, RandomGrayscale or Grayscale(3) after it (v1's and v2's, open_clip's below).
        for steps, spelling in [
                ([crop, T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), T.RandomGrayscale(0.2)],
                 "jitter:0.6/1.4:0.6/1.4:0.6/1.4:-0.1/0.1,p=0.8,gray=0.2"),
                ([crop, T.RandomGrayscale(0.3), T.RandomHorizontalFlip()], "jitter:-:-:-:-,gray=0.3"),
                ([crop, T.RandomHorizontalFlip(), T.ColorJitter(0.2), T.Grayscale(3)], "jitter:0.8/1.2:-:-:-,gray=1.0"),
        ]:
            self.assertEqual(spelling, translate_transform(T.Compose(steps + [T.ToTensor()]))["augment"])
        # Every factor off: nothing to do, as torchvision skips it.
        self.assertIsNone(translate_transform(T.Compose([crop, T.ColorJitter(0), T.ToTensor()]))["augment"])
        for steps, message in [
                ([T.Resize(72), T.CenterCrop(64), T.ColorJitter(0.4)], r"ColorJitter here .*after RandomResizedCrop"),
                ([crop, T.ColorJitter(0.4), T.TrivialAugmentWide()], r"ColorJitter and TrivialAugmentWide.*one augmentation"),
                ([crop, T.ColorJitter(0.4), T.RandomHorizontalFlip(), T.TrivialAugmentWide()],
                 r"ColorJitter and TrivialAugmentWide.*one augmentation"),
                ([crop, T.ColorJitter(0.4), T.ColorJitter(0.4)], r"ColorJitter after ColorJitter"),
                ([crop, T.RandomGrayscale(0.2), T.ColorJitter(0.4)], r"ColorJitter after RandomGrayscale"),
                ([crop, T.RandomApply([T.ColorJitter(0.4), T.RandomGrayscale()])], r"RandomApply\(.*one ColorJitter"),
                ([crop, T.Grayscale(1)], r"Grayscale\(num_output_channels=1\)"),
        ]:
            with self.assertRaisesRegex(UnsupportedError, message + r".*batch_transform"):
                translate_transform(T.Compose(steps + [T.PILToTensor()]))

    @unittest.skipUnless(HAS_AUGMIX, "torchvision without AugMix (before 0.13)")
    def test_augmix_is_spelled_with_its_settings_v1_and_v2(self):
        crop = _fixed_crop(64)
        cases = [
            (T.AugMix(), "augmix:3:3:-1:1.0,interpolation=bilinear"),
            (T.AugMix(severity=10, mixture_width=2, chain_depth=2, alpha=0.5, all_ops=False,
                      interpolation=T.InterpolationMode.NEAREST, fill=[1, 2, 3]),
             "augmix:10:2:2:0.5,all_ops=false,interpolation=nearest,fill=1:2:3"),
            (T.AugMix(fill=128), "augmix:3:3:-1:1.0,interpolation=bilinear,fill=128:128:128"),
        ]
        if V2 is not None:
            cases += [(V2.AugMix(), "augmix:3:3:-1:1.0,interpolation=bilinear,v2"),
                      (V2.AugMix(severity=1, mixture_width=4, alpha=3.0, fill=7, interpolation=T.InterpolationMode.NEAREST),
                       "augmix:1:4:-1:3.0,interpolation=nearest,fill=7:7:7,v2")]
        for policy, spelling in cases:
            settings = translate_transform(T.Compose(crop + [policy, T.PILToTensor()]))
            self.assertEqual(spelling, settings["augment"], repr(policy))

    @unittest.skipUnless(HAS_AUGMIX, "torchvision without AugMix (before 0.13)")
    def test_augmix_settings_stoke_cannot_do_are_refused_naming_them(self):
        crop = _fixed_crop(64)
        for policy, message in [
                (T.AugMix(interpolation=T.InterpolationMode.BICUBIC), r"AugMix\(interpolation=.*BICUBIC.*NEAREST or BILINEAR"),
                (T.AugMix(fill=0.5), r"AugMix\(fill=0.5\).*whole value"),
                (T.AugMix(fill=[1, 2]), r"AugMix\(fill=\[1, 2\]\)"),
                (T.AugMix(mixture_width=0), r"AugMix\(mixture_width=0\).*1 to 64"),
                (T.AugMix(alpha=0.0), r"AugMix\(alpha=0.0\).*positive"),
        ]:
            with self.assertRaisesRegex(UnsupportedError, message + r".*batch_transform"):
                translate_transform(T.Compose(crop + [policy, T.PILToTensor()]))

    def test_a_policy_anywhere_else_and_augmix_are_refused_naming_them(self):
        with self.assertRaisesRegex(UnsupportedError, r"TrivialAugmentWide here .*after RandomResizedCrop"):
            translate_transform(T.Compose([T.Resize(72), T.CenterCrop(64), T.TrivialAugmentWide(), T.PILToTensor()]))
        with self.assertRaisesRegex(UnsupportedError, r"RandAugment"):
            translate_transform(T.Compose(_fixed_crop(64) + [T.PILToTensor(), T.RandAugment()]))
        if HAS_AUGMIX:
            with self.assertRaisesRegex(UnsupportedError, r"AugMix here .*after RandomResizedCrop"):
                translate_transform(T.Compose([T.Resize(72), T.CenterCrop(64), T.AugMix(), T.PILToTensor()]))
        with self.assertRaisesRegex(UnsupportedError, r"interpolation"):
            translate_transform(T.Compose(_fixed_crop(64) + [
                T.TrivialAugmentWide(interpolation=T.InterpolationMode.BOX), T.PILToTensor()]))


@unittest.skipIf(MISSING, MISSING or "")
class AugmentedBatchesTest(unittest.TestCase):
    def tearDown(self):
        gc.collect()

    def test_every_augmented_image_is_one_torchvision_gives_from_the_same_crop(self):
        from torchvision.transforms.autoaugment import _apply_op
        from torchvision.transforms import functional as F
        bins = 5
        policy = T.TrivialAugmentWide(num_magnitude_bins=bins)
        dataset = torchvision.datasets.ImageFolder(
            str(DATA), transform=T.Compose(_fixed_crop(48) + [policy, T.PILToTensor()]))
        plain = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(_fixed_crop(48)))
        space = policy._augmentation_space(bins)
        changed = 0
        with stoke.DataLoader(dataset, batch_size=4, num_workers=2, with_indices=True, seed=2) as loader:
            self.assertEqual(f"ta_wide:{bins},interpolation=nearest,fill=0:0:0", loader.augment)
            for images, _, indices in loader:
                for j, index in enumerate(indices.tolist()):
                    crop = plain[index][0]
                    ours = images[j]
                    outcomes = []
                    for op, (magnitudes, signed) in space.items():
                        values = [0.0] if magnitudes.ndim == 0 else [float(m) for m in magnitudes]
                        for m in values:
                            for sign in ((1.0, -1.0) if signed else (1.0,)):
                                outcomes.append((op, m * sign))
                    found = [name for name, m in outcomes
                             if torch.equal(F.pil_to_tensor(_apply_op(crop, name, m, T.InterpolationMode.NEAREST,
                                                                      None)), ours)]
                    self.assertTrue(found, f"sample {index}: Stoke's image is none of torchvision's "
                                           f"{len(outcomes)} TrivialAugmentWide outcomes of the same crop")
                    if not torch.equal(F.pil_to_tensor(crop), ours):
                        changed += 1
        self.assertGreater(changed, 4, "the policy changed almost no image")

    def test_every_jittered_image_is_torchvisions_ops_in_one_order_on_the_same_crop(self):
        from torchvision.transforms import functional as F
        # One factor per op (a range of one value, as torch's uniform_ gives it: a float32), so each
        # image is one of torchvision's 24 orders of the four ops on the same crop.
        factors = {"brightness": 1.3, "contrast": 0.7, "saturation": 1.6, "hue": -0.15}
        f32 = {k: float(torch.tensor(v, dtype=torch.float32)) for k, v in factors.items()}
        jitters = [T.ColorJitter(**{k: (v, v) for k, v in factors.items()})]
        if V2 is not None:
            jitters.append(V2.ColorJitter(**{k: (v, v) for k, v in factors.items()}))
        ops = [lambda im: F.adjust_brightness(im, f32["brightness"]), lambda im: F.adjust_contrast(im, f32["contrast"]),
               lambda im: F.adjust_saturation(im, f32["saturation"]), lambda im: F.adjust_hue(im, f32["hue"])]
        plain = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(_fixed_crop(40)))
        for jitter in jitters:
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(
                _fixed_crop(40) + [jitter, T.PILToTensor()]))
            orders = set()
            with stoke.DataLoader(dataset, batch_size=4, num_workers=2, with_indices=True, seed=4) as loader:
                for images, _, indices in loader:
                    for j, index in enumerate(indices.tolist()):
                        crop = plain[index][0]
                        found = []
                        for order in itertools.permutations(range(4)):
                            img = crop
                            for fn in order:
                                img = ops[fn](img)
                            if torch.equal(F.pil_to_tensor(img), images[j]):
                                found.append(order)
                        self.assertTrue(found, f"{type(jitter).__module__}: sample {index}'s image is none of "
                                               "torchvision's 24 orders of the four ops on the same crop")
                        orders.add(found[0])
            self.assertGreater(len(orders), 3, "the order of the ops hardly changed")

    def test_random_apply_and_random_grayscale_give_torchvisions_outcomes_on_the_same_crop(self):
        from torchvision.transforms import functional as F
        # SimCLR's colour steps: RandomApply([ColorJitter], p), then RandomGrayscale(p); each image is
        # the crop, or one of the jitter's 24 orders, then maybe its grey (PIL's convert("L"), thrice).
        factors = {"brightness": 0.8, "contrast": 1.4, "saturation": 0.5, "hue": 0.2}
        f32 = {k: float(torch.tensor(v, dtype=torch.float32)) for k, v in factors.items()}
        ops = [lambda im: F.adjust_brightness(im, f32["brightness"]), lambda im: F.adjust_contrast(im, f32["contrast"]),
               lambda im: F.adjust_saturation(im, f32["saturation"]), lambda im: F.adjust_hue(im, f32["hue"])]
        plain = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(_fixed_crop(32)))
        for M in [T] + ([V2] if V2 is not None else []):
            jitter = M.ColorJitter(**{k: (v, v) for k, v in factors.items()})
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(
                _fixed_crop(32) + [M.RandomApply([jitter], p=0.5), M.RandomGrayscale(p=0.5), T.PILToTensor()]))
            seen = set()
            with stoke.DataLoader(dataset, batch_size=4, num_workers=2, with_indices=True, seed=6) as loader:
                self.assertEqual("jitter:0.8/0.8:1.4/1.4:0.5/0.5:0.2/0.2,p=0.5,gray=0.5", loader.augment)
                for _ in range(3):
                    for images, _, indices in loader:
                        for j, index in enumerate(indices.tolist()):
                            crop = plain[index][0]
                            outcomes = [("none", crop)]
                            for order in itertools.permutations(range(4)):
                                img = crop
                                for fn in order:
                                    img = ops[fn](img)
                                outcomes.append(("jitter", img))
                            found = [(what, grey) for what, img in outcomes for grey in (False, True)
                                     if torch.equal(F.pil_to_tensor(F.rgb_to_grayscale(img, 3) if grey else img),
                                                    images[j])]
                            self.assertTrue(found, f"{M.__name__}: sample {index}'s image is none of torchvision's "
                                                   "outcomes on the same crop")
                            seen.add(found[0])
            self.assertEqual({("none", False), ("none", True), ("jitter", False), ("jitter", True)}, seen, M.__name__)

    @unittest.skipUnless(HAS_AUGMIX, "torchvision without AugMix (before 0.13)")
    def test_augmix_v1_and_v2_run_an_epoch_the_same_twice_and_on_resume(self):
        crop = _fixed_crop(40)
        plain = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(crop + [T.PILToTensor()]))
        policies = [(T.AugMix(), "augmix:3:3:-1:1.0,interpolation=bilinear")]
        if V2 is not None:
            policies.append((V2.AugMix(severity=5, chain_depth=2, fill=[9, 99, 199]),
                             "augmix:5:3:2:1.0,interpolation=bilinear,fill=9:99:199,v2"))
        for policy, spelling in policies:
            dataset = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose(crop + [policy, T.PILToTensor()]))
            runs = []
            for _ in range(2):
                with stoke.DataLoader(dataset, batch_size=4, num_workers=2, with_indices=True, seed=4) as loader:
                    self.assertEqual(spelling, loader.augment)
                    runs.append([(idx.tolist(), images.clone()) for images, _, idx in loader])
            self.assertEqual(3, len(runs[0]), spelling)
            changed = 0
            for (ia, a), (ib, b) in zip(*runs):
                self.assertEqual(ia, ib)
                self.assertEqual((4, 3, 40, 40), tuple(a.shape))
                self.assertTrue(torch.equal(a, b), f"{spelling}: the same seed and epoch give the same mix")
                for j, index in enumerate(ia):
                    changed += not torch.equal(plain[index][0], a[j])
            self.assertGreater(changed, 8, f"{spelling}: AugMix changed almost no image")
            with stoke.DataLoader(dataset, batch_size=4, num_workers=2, with_indices=True, seed=4) as loader:
                next(iter(loader))
                state = loader.state_dict()
            with stoke.DataLoader(dataset, batch_size=4, num_workers=2, with_indices=True, seed=4) as loader:
                loader.load_state_dict(state)
                rest = [(idx.tolist(), images.clone()) for images, _, idx in loader]
            self.assertEqual(2, len(rest), spelling)
            for (ia, a), (ib, b) in zip(runs[0][1:], rest):
                self.assertEqual(ia, ib)
                self.assertTrue(torch.equal(a, b), f"{spelling}: a resumed epoch sees the same mix")

    def test_batches_repeat_across_runs_and_resume_mid_epoch(self):
        dataset = torchvision.datasets.ImageFolder(str(DATA), transform=T.Compose([
            T.RandomResizedCrop(64), T.RandomHorizontalFlip(), T.TrivialAugmentWide(), T.PILToTensor()]))
        settings = dict(batch_size=3, num_workers=2, with_indices=True, shuffle=True, seed=6)
        runs = []
        for _ in range(2):
            with stoke.DataLoader(dataset, **settings) as loader:
                loader.set_epoch(1)
                runs.append([(idx.tolist(), images.clone()) for images, _, idx in loader])
        self.assertEqual(4, len(runs[0]))
        for (ia, a), (ib, b) in zip(*runs):
            self.assertEqual(ia, ib)
            self.assertTrue(torch.equal(a, b), "the same seed and epoch give the same augmentations")
        with stoke.DataLoader(dataset, **settings) as loader:
            loader.set_epoch(1)
            for step, _ in enumerate(loader):
                if step == 1:
                    break
            state = loader.state_dict()
        with stoke.DataLoader(dataset, **settings) as loader:
            loader.load_state_dict(state)
            rest = [(idx.tolist(), images.clone()) for images, _, idx in loader]
        self.assertEqual(len(runs[0]) - 2, len(rest))
        for (ia, a), (ib, b) in zip(runs[0][2:], rest):
            self.assertEqual(ia, ib)
            self.assertTrue(torch.equal(a, b), "a resumed epoch sees the same augmentations")
        with stoke.DataLoader(dataset, **settings) as loader:
            loader.set_epoch(2)
            other = [images.clone() for images, _, _ in loader]
        self.assertFalse(all(torch.equal(a, b) for (_, a), b in zip(runs[0], other)), "another epoch, other draws")


if __name__ == "__main__":
    unittest.main()
