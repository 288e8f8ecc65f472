"""./stoke harness with today's PyTorch: every loader it times, and each one's pixels against
torchvision's PIL path (run by ./stoke test; it needs torch, torchvision, PIL, numpy and torchdata,
which the torch 2.14.1 stack has, and skips, saying so, elsewhere).

The references: torchvision's own PIL transforms, run here on the same files, for the PIL path's
first batch (the harness's reference) and for the differences the harness reports; and the tensor
path's own batch for torchdata.nodes, which maps the same samples and must give the same bytes.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent.parent

try:
    import numpy as np
    import torch  # noqa: F401
    import torchdata.nodes  # noqa: F401
    from PIL import Image
    from torchvision import transforms

    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

LOADERS = ["stoke", "pytorch", "pytorch-tensor", "torchdata-nodes"]
SIDE = 224


def image_folder(root: Path) -> list:
    """Two classes of four JPEGs each, of several sizes and aspect ratios; their paths in ImageFolder order."""
    rng = np.random.default_rng(51)
    paths = []
    for c in range(2):
        d = root / f"class{c}"
        d.mkdir(parents=True)
        for i in range(4):
            h, w = 240 + 37 * i, 300 + 53 * c + 21 * i
            y, x = np.mgrid[0:h, 0:w]
            rgb = np.stack([(x * 255 // w), (y * 255 // h), ((x + y) * 127 // (w + h))], axis=-1)
            rgb = np.clip(rgb + rng.integers(-40, 40, size=rgb.shape), 0, 255).astype(np.uint8)
            p = d / f"img{i}.jpg"
            Image.fromarray(rgb).save(p, quality=90)
            paths.append(p)
    return sorted(paths)


@unittest.skipIf(MISSING, f"the harness's PyTorch-side loaders are not tested here: {MISSING}")
class HarnessPeersTest(unittest.TestCase):
    def test_every_loader_runs_and_its_pixels_are_set_against_the_pil_path(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "jpeg"
            paths = image_folder(data)
            out = Path(tmp) / "out"
            r = subprocess.run(
                [str(CHECKOUT / "stoke"), "harness", "--out", str(out), "--dataset", str(data),
                 "--python", sys.executable, "--batch-sizes", "4", "--workers", "2", "--no-model",
                 "--datasets", "jpeg", "--starts", "cold", "--warmup-images", "0", "--sample-ms", "50"],
                capture_output=True, text=True, timeout=900)
            self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr[-4000:])
            with open(out / "runs.csv", newline="") as f:
                runs = list(csv.DictReader(f))
            self.assertEqual([x["loader"] for x in runs], LOADERS, runs)
            for x in runs:
                self.assertEqual((x["images"], x["error"]), ("8", ""), x)

            # The PIL path's first batch is torchvision's PIL transforms of the first files, here.
            tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)])
            reference = np.stack([np.asarray(tf(Image.open(p).convert("RGB"))) for p in paths])
            batch = {l: np.fromfile(out / "first-batch" / f"{l}.u8", dtype=np.uint8).reshape(-1, SIDE, SIDE, 3)
                     for l in LOADERS}
            np.testing.assert_array_equal(batch["pytorch"], reference)
            # torchdata.nodes maps the tensor path's samples: the same bytes.
            np.testing.assert_array_equal(batch["torchdata-nodes"], batch["pytorch-tensor"])

            # What the harness reports is each batch's difference from that reference.
            info = json.loads((out / "report.json").read_text())
            reported = {d["loader"]: d for d in info["pixel_differences"]}
            self.assertEqual(sorted(reported), sorted(LOADERS), reported)
            for l in LOADERS:
                d = np.abs(batch[l].astype(np.int16) - reference.astype(np.int16))
                self.assertEqual(reported[l]["images"], 8, reported[l])
                self.assertAlmostEqual(reported[l]["mean_abs"], float(d.mean()), places=9, msg=l)
                self.assertEqual(reported[l]["max_abs"], int(d.max()), l)
            self.assertEqual(reported["pytorch"]["max_abs"], 0)
            # A uint8 resize and another decoder move a few levels, never another image.
            for l in ["stoke", "pytorch-tensor"]:
                self.assertLess(reported[l]["mean_abs"], 2.0, reported[l])

            summary = (out / "summary.md").read_text()
            self.assertIn("Stoke / PyTorch's fastest path here (", summary)
            self.assertIn("| torchdata.nodes | 8 | ", summary)
            self.assertIn("torchdata ", " ".join(info["conditions"]))


if __name__ == "__main__":
    unittest.main()
