"""stoke.DataLoader over a Hugging Face ``datasets.Dataset``, read from its own Arrow files, against torch's
DataLoader over the same dataset with the same torchvision transform applied in ``ds.with_transform``.

Needs numpy, torch, torchvision and datasets (with pyarrow); where one is missing the tests skip and say
so, except on the torch 2.14.1 stack (STOKE_TEST_LIBRARIES=required), where a missing library fails.
"""

import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))
LAUNCHER = str(CHECKOUT / "stoke")

try:
    import numpy as np
    import torch
    import torchvision.transforms as T
    import stoke
    import _aids  # tests/_aids.py
    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

# Small crops: the comparison is of every pixel, not of speed.
RESIZE, CROP = 40, 32


def _reference(ds, transform):
    """(image, label) of each sample as torch's DataLoader gives them over ``ds.with_transform``: the
    transform applied to each decoded image (RGB, as torchvision's loader converts it)."""
    def apply(batch):
        return {"image": [transform(im.convert("RGB")) for im in batch["image"]], "label": batch["label"]}
    loader = torch.utils.data.DataLoader(ds.with_transform(apply), batch_size=8, num_workers=0)
    out = []
    for batch in loader:
        out += list(zip(batch["image"], batch["label"].tolist()))
    return out


class HfDatasetsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if MISSING:
            raise unittest.SkipTest(f"NOT CHECKED: {MISSING}")
        cls.hf = _aids.import_library("datasets")
        cls.tmp = Path(tempfile.mkdtemp(prefix="stoke-hf-"))
        folder = cls.tmp / "folder"
        subprocess.run([LAUNCHER, "make-dataset", str(folder), "--images", "21", "--seed", "5", "--classes", "3"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hf = cls.hf
        cache = str(cls.tmp / "cache")
        # load_dataset("imagefolder") keeps each image as its path; save_to_disk embeds the bytes.
        cls.paths = hf.load_dataset("imagefolder", data_dir=str(folder), cache_dir=cache, split="train")
        cls.paths.save_to_disk(str(cls.tmp / "saved"))
        cls.bytes = hf.load_from_disk(str(cls.tmp / "saved"))
        cls.bytes.to_parquet(str(cls.tmp / "hub.parquet"))  # the Hub's layout, with datasets' features
        cls.parquet = hf.load_dataset("parquet", data_files=str(cls.tmp / "hub.parquet"), cache_dir=cache,
                                      split="train")
        files = sorted(str(p) for p in folder.rglob("*.jpg"))
        made = hf.Dataset.from_dict({"image": files, "label": [i % 3 for i in range(len(files))]})
        made.cast_column("image", hf.Image()).save_to_disk(str(cls.tmp / "from_dict"))
        cls.from_dict = hf.load_from_disk(str(cls.tmp / "from_dict"))
        # Paths saved as plain strings: cast_column("image", Image()) after loading is a cast in memory.
        hf.Dataset.from_dict({"image": files}).save_to_disk(str(cls.tmp / "strings"))
        cls.strings = hf.load_from_disk(str(cls.tmp / "strings"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_same(self, what, ds, transform, dtype, **keywords):
        expected = _reference(ds, transform)
        with stoke.DataLoader(ds, transform=transform, batch_size=8, num_workers=2, with_indices=True,
                              **keywords) as loader:
            self.assertEqual(len(ds), len(loader.samples), what)
            seen = []
            for images, labels, indices in loader:
                self.assertEqual(dtype, images.dtype, what)
                for j, index in enumerate(indices.tolist()):
                    picture, label = expected[index]
                    self.assertEqual(label, int(labels[j]), f"{what}: label of sample {index}")
                    self.assertEqual(tuple(picture.shape), tuple(images[j].shape), what)
                    if dtype == torch.uint8:
                        self.assertTrue(torch.equal(picture, images[j]), f"{what}: sample {index}")
                    else:
                        diff = (picture - images[j]).abs().max().item()
                        self.assertLessEqual(diff, 1e-6, f"{what}: sample {index}")
                    seen.append(index)
            self.assertEqual(list(range(len(ds))), seen, what)

    def test_pixels_and_labels_equal_torchs_over_bytes_and_paths(self):
        uint8 = T.Compose([T.Resize(RESIZE), T.CenterCrop(CROP), T.PILToTensor()])
        float32 = T.Compose([T.Resize(RESIZE), T.CenterCrop(CROP), T.ToTensor(),
                             T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))])
        self.assertEqual("ClassLabel", type(self.bytes.features["label"]).__name__)
        self.assertEqual("Value", type(self.from_dict.features["label"]).__name__)  # an int64 label
        cases = {"load_dataset('imagefolder'): paths": self.paths, "save_to_disk/load_from_disk: bytes": self.bytes,
                 "load_dataset('parquet'): bytes": self.parquet,
                 "from_dict + cast_column(Image()) + save_to_disk": self.from_dict}
        for name, ds in cases.items():
            self.assert_same(f"{name}, uint8", ds, uint8, torch.uint8)
        for name in ("load_dataset('imagefolder'): paths", "save_to_disk/load_from_disk: bytes"):
            self.assert_same(f"{name}, float32", cases[name], float32, torch.float32)
        from torchvision.transforms import v2
        to_image = v2.Compose([v2.Resize(RESIZE), v2.CenterCrop(CROP), v2.ToImage()])
        self.assert_same("load_from_disk, v2 ToImage, uint8", self.bytes, to_image, torch.uint8)
        to_float = v2.Compose([v2.Resize(RESIZE), v2.CenterCrop(CROP), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
        self.assert_same("imagefolder, v2 ToDtype(float32, scale=True)", self.paths, to_float, torch.float32)

    def test_select_shuffle_filter_and_slices_give_their_rows(self):
        uint8 = T.Compose([T.Resize(RESIZE), T.CenterCrop(CROP), T.PILToTensor()])
        views = {
            "select([5, 0, 7, 7])": self.bytes.select([5, 0, 7, 7]),
            "shuffle(seed=1)": self.bytes.shuffle(seed=1),
            "filter(label == 1)": self.bytes.filter(lambda r: r["label"] == 1),
            "select(range(3, 10)), a slice": self.bytes.select(range(3, 10)),
            "shuffle then select(range(5))": self.bytes.shuffle(seed=2).select(range(5)),
            "paths, shuffle(seed=3)": self.paths.shuffle(seed=3),
            # Two files: samples move between them, each run of one file a shard of its own.
            "concatenate_datasets, shuffled": self.hf.concatenate_datasets([self.bytes, self.parquet]).shuffle(seed=5),
            "concatenate_datasets, a slice across both": self.hf.concatenate_datasets(
                [self.bytes, self.parquet]).select(range(15, 30)),
        }
        for name, ds in views.items():
            self.assert_same(name, ds, uint8, torch.uint8)
        # Stoke's own shuffle over a view: a permutation of the view's positions each epoch.
        view = views["filter(label == 1)"]
        with stoke.DataLoader(view, transform=uint8, batch_size=3, shuffle=True, seed=4, with_indices=True) as loader:
            orders = []
            for epoch in range(2):
                loader.set_epoch(epoch)
                orders.append([i for _, _, indices in loader for i in indices.tolist()])
                self.assertEqual(list(range(len(view))), sorted(orders[-1]), f"epoch {epoch}")
            self.assertNotEqual(orders[0], orders[1])

    def test_a_state_dict_resumes_a_shuffled_view_where_it_stopped(self):
        uint8 = T.Compose([T.Resize(RESIZE), T.CenterCrop(CROP), T.PILToTensor()])
        view = self.bytes.shuffle(seed=6).select(range(2, 19))
        resume = dict(transform=uint8, batch_size=4, shuffle=True, seed=3, with_indices=True)
        with stoke.DataLoader(view, **resume) as loader:
            whole = [i for _, _, indices in loader for i in indices.tolist()]
        with stoke.DataLoader(view, **resume) as loader:
            it = iter(loader)
            head = [i for _ in range(2) for i in next(it)[2].tolist()]
            state = loader.state_dict()
        with stoke.DataLoader(view, **resume) as loader:
            loader.load_state_dict(state)
            rest = [i for _, _, indices in loader for i in indices.tolist()]
        self.assertEqual(list(range(len(view))), sorted(whole))
        self.assertEqual(whole, head + rest)

    def test_what_stoke_cannot_read_exactly_is_refused_by_name_with_the_way_out(self):
        hf = self.hf
        uint8 = T.Compose([T.Resize(RESIZE), T.CenterCrop(CROP), T.PILToTensor()])
        cases = [
            (self.bytes.with_transform(lambda b: b), "with_transform", "transform=T.Compose"),
            (self.bytes.with_format("torch"), "set_format('torch')", "reset_format"),
            (self.bytes.to_iterable_dataset(), "streaming datasets.IterableDataset", "without streaming=True"),
            (hf.DatasetDict({"train": self.bytes}), "DatasetDict", "ds['train']"),
            (hf.Dataset.from_dict({"image": [str(self.tmp / "x.jpg")]}).cast_column("image", hf.Image()),
             "held in memory", "save_to_disk"),
            (hf.Dataset.from_dict({"x": [1]}), "no Image column", "cast_column"),
            (self.bytes.cast_column("image", hf.Image(mode="L")), "Image(mode='L')", "cast_column"),
            (self.bytes.add_column("extra", list(range(len(self.bytes)))), "different tables", "flatten_indices"),
            (self.strings.cast_column("image", hf.Image()), "cast to Image() in memory", "flatten_indices"),
        ]
        for ds, named, way_out in cases:
            with self.assertRaises(ValueError, msg=named) as caught:
                stoke.DataLoader(ds, transform=uint8, batch_size=4)
            message = str(caught.exception)
            self.assertIn(named, message)
            self.assertIn(way_out, message)

    def test_an_integer_label_column_is_read_as_named(self):
        hf = self.hf
        raw = self.bytes.rename_column("label", "target").flatten_indices()
        self.assertEqual("ClassLabel", type(raw.features["target"]).__name__)
        ints = raw.cast_column("target", hf.Value("int64")).flatten_indices()
        uint8 = T.Compose([T.Resize(RESIZE), T.CenterCrop(CROP), T.PILToTensor()])
        expected = [label for _, label in _reference(ints.rename_column("target", "label"), uint8)]
        with stoke.DataLoader(ints, transform=uint8, batch_size=8, label_column="target", with_indices=True) as loader:
            got = {i: int(l) for _, labels, indices in loader for i, l in zip(indices.tolist(), labels.tolist())}
        self.assertEqual(expected, [got[i] for i in range(len(ints))])
        self.assertEqual([i % 3 for i in range(3)], sorted(set(expected))[:3])


if __name__ == "__main__":
    unittest.main()
