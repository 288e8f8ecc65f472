"""``stoke embed`` of open_clip's image tower, exported to ONNX, against open_clip's own
``model.encode_image(preprocess(image))`` in torch (run by ./stoke test, on the torch 2.14.1 stack).

The model is ViT-S-32 with random weights (``pretrained=None``: no weights can be downloaded),
whose preprocess is open_clip's usual one: bicubic ``Resize(224)``, ``CenterCrop(224)``,
``MaybeConvertMode``, ``MaybeToTensor`` and CLIP's ``Normalize``. ``stoke.onnx_export`` exports it
with ``torch.onnx.export`` (torch.export's exporter) into a temporary folder, in both forms: float32
input normalised by Stoke (``--mean``/``--std``), and uint8 input normalised in the graph (with
L2-normalised output). ``stoke embed`` runs as a real process, in batches of 4 over 9 images (the
last batch holds one: the batch axis is dynamic), with the flags the export returns.
Each embedding value must be torch's within 1e-4 (the difference seen is printed); a run whose
flags differ from the model's preprocess is refused, naming the flag.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))
sys.path.insert(0, str(HERE))

import _aids  # noqa: E402

MODEL = "ViT-S-32"
TOLERANCE = 1e-4


class OpenClipEmbedTest(unittest.TestCase):
    tmp: Path
    data: Path

    @classmethod
    def setUpClass(cls):
        for name in ("torch", "PIL", "numpy", "open_clip", "onnx", "onnxscript"):
            _aids.import_library(name)
        cls.tmp = Path(tempfile.mkdtemp(prefix="stoke-py-test-openclip-embed-"))
        cls.data = cls.tmp / "photos"
        # make-dataset's JPEGs (photo-like scenes, 4:3 and 3:4, both classes) and one larger
        # landscape that PIL writes, whose resize falls by more than 3x.
        subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(cls.data), "--images", "8", "--seed", "48",
                        "--classes", "2"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from PIL import Image
        first = sorted(p for p in cls.data.rglob("*.jpg"))[0]
        with Image.open(first) as im:
            im.convert("RGB").resize((1000, 700), Image.BICUBIC).save(first.parent / "large.jpg", quality=92)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def export(self, **kwargs):
        """open_clip's model, its preprocess, and the exported file with its ``stoke embed`` flags."""
        import open_clip
        import torch
        from stoke.onnx_export import export_open_clip_image_tower

        torch.manual_seed(48)
        model, _, preprocess = open_clip.create_model_and_transforms(MODEL, pretrained=None)
        path = self.tmp / f"{MODEL}-{'-'.join(f'{k}={v}' for k, v in kwargs.items()) or 'float32'}.onnx"
        flags = export_open_clip_image_tower(model, preprocess, str(path), source=f"open_clip {MODEL}", **kwargs)
        # One file, weights inside (what spark-embed ships and hashes), not torch.onnx.export's .data beside it.
        self.assertEqual([path.name], sorted(p.name for p in self.tmp.glob(path.name + "*")))
        return model.eval(), preprocess, path, flags

    def embed(self, path, flags, out):
        env = dict(os.environ, STOKE_HOME=str(CHECKOUT))
        return subprocess.run([str(CHECKOUT / "stoke"), "embed", str(self.data), "--model", str(path), "--out",
                               str(out), "--batch-size", "4", "--workers", "1", "--intra-op-threads", "2",
                               "--dct-scaling", "none", *flags],
                              capture_output=True, text=True, env=env, timeout=300)

    def torchs(self, model, preprocess, out, normalize=False):
        """open_clip's ``encode_image`` on ``preprocess`` of each image ``stoke embed`` listed, in its order."""
        import torch
        from PIL import Image

        paths = (out / "paths.txt").read_text().splitlines()
        self.assertEqual(9, len(paths))
        images = []
        for p in paths:
            with Image.open(p) as im:
                images.append(preprocess(im))
        with torch.no_grad():
            return model.encode_image(torch.stack(images), normalize=normalize).numpy()

    def assertEmbeddingsEqual(self, reference, out, what):
        import numpy as np

        stoke = np.load(out / "embeddings.npy")
        self.assertEqual(reference.shape, stoke.shape)
        self.assertEqual(np.float32, stoke.dtype)
        diff = float(np.abs(stoke - reference).max())
        print(f"[stoke] {what}: {stoke.shape[0]} embeddings of {stoke.shape[1]} values, largest difference from "
              f"torch's encode_image {diff:.3g} (values up to {float(np.abs(reference).max()):.3g})",
              file=sys.stderr)
        self.assertLessEqual(diff, TOLERANCE, what)

    def test_float32_tower_normalised_by_stoke_equals_encode_image(self):
        model, preprocess, path, flags = self.export()
        self.assertEqual(["--resize", "224", "--crop", "224", "--interpolation", "bicubic",
                          "--mean", "0.48145466,0.4578275,0.40821073", "--std", "0.26862954,0.26130258,0.27577711"],
                         flags)
        out = self.tmp / "float32"
        run = self.embed(path, flags, out)
        self.assertEqual(0, run.returncode, run.stderr)
        self.assertIn("input images FLOAT32_NCHW, output embedding (384 values)", run.stderr)
        self.assertIn("the model's recorded preprocessing, which this run's flags match: " + " ".join(flags),
                      run.stderr)
        self.assertEmbeddingsEqual(self.torchs(model, preprocess, out), out, "float32 input, Stoke's Normalize")

        # Pixels other than the model's preprocess are refused by name, and nothing is written.
        for wrong, named in ((["--interpolation", "bilinear"], "this run has --interpolation bilinear:"),
                             (["--mean", "0.485,0.456,0.406"], "this run has --mean 0.485,0.456,0.406:"),
                             (["--resize", "256"], "this run has --resize 256:")):
            with self.subTest(wrong=wrong):
                bad = self.tmp / f"refused-{wrong[0].strip('-')}"
                given = list(flags)
                given[given.index(wrong[0]) + 1] = wrong[1]
                run = self.embed(path, given, bad)
                self.assertNotEqual(0, run.returncode, run.stderr)
                self.assertIn("the model was exported for --resize 224 --crop 224 --interpolation bicubic", run.stderr)
                self.assertIn(named, run.stderr)
                self.assertFalse((bad / "embeddings.npy").exists())

    def test_uint8_tower_normalising_in_its_graph_equals_encode_image(self):
        model, preprocess, path, flags = self.export(pixels="uint8", normalize=True)
        self.assertEqual(["--resize", "224", "--crop", "224", "--interpolation", "bicubic"], flags)
        out = self.tmp / "uint8"
        run = self.embed(path, flags, out)
        self.assertEqual(0, run.returncode, run.stderr)
        self.assertIn("input pixels UINT8_NHWC, output embedding (384 values)", run.stderr)
        self.assertEmbeddingsEqual(self.torchs(model, preprocess, out, normalize=True), out,
                                   "uint8 input, Normalize and L2 normalisation in the graph")

    def test_a_preprocess_stoke_cannot_run_exactly_is_refused_naming_the_step(self):
        import open_clip
        from stoke.onnx_export import export_open_clip_image_tower, preprocess_flags

        model, train, _ = open_clip.create_model_and_transforms(MODEL, pretrained=None)
        _, _, longest = open_clip.create_model_and_transforms(MODEL, pretrained=None, image_resize_mode="longest")
        _, _, squash = open_clip.create_model_and_transforms(MODEL, pretrained=None, image_resize_mode="squash")
        _, _, bilinear = open_clip.create_model_and_transforms(MODEL, pretrained=None, image_interpolation="bilinear")
        self.assertEqual("bilinear", preprocess_flags(bilinear)["interpolation"])
        for preprocess, named in ((longest, "ResizeKeepRatio"), (squash, "resize_mode='squash'"),
                                  (train, "RandomResizedCrop")):
            with self.subTest(named=named):
                path = self.tmp / "refused.onnx"
                with self.assertRaises(ValueError) as refused:
                    export_open_clip_image_tower(model, preprocess, str(path))
                self.assertIn(named, str(refused.exception))
                self.assertFalse(path.exists())


if __name__ == "__main__":
    unittest.main()
