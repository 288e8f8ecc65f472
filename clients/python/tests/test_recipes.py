"""torchvision's own classification recipe (references/classification/train.py), run by a rename:
issue 47's headline flag sets, one epoch on the CPU, with torch's DataLoader and with train.py's
two ``torch.utils.data.DataLoader(`` calls renamed to ``stoke.DataLoader(`` (recipe_runner.py does
the rename and records what the model and the loss receive). Checked for each case, with and
without ``--use-v2``:

- the model gets batches of the same shapes and dtype, in the same sequence of batch sizes;
- the loss gets the same targets: in the same order where the sampler's order is deterministic
  (the validation's SequentialSampler or DistributedSampler(shuffle=False), the recipe's RASampler,
  seeded by its epoch), else the same multiset (RandomSampler: torch's loader and Stoke's draw
  their permutations differently);
- validation inputs equal per image and channel (mean and standard deviation within 1e-4, in
  order): the evaluation transform has no random draw, and Stoke's resampling is PIL's;
- training inputs' per-image, per-channel means and standard deviations, per-image shares of
  values exactly 0 (what RandomErasing's value 0 covers: a normalised pixel is never 0 otherwise)
  and the share of images with any (the erased ones) agree within sampling noise:
  |average_stoke - average_torch| < 5 standard errors of that difference, the standard error from
  the two runs' spread across images (sqrt(var_s / n_s + var_t / n_t)), with n the number of
  distinct images (a repeated augmentation of one image is not an independent draw).

What is the headline's and what was shrunk for time: each case's flags in CASES are the README
command's (the policy, --random-erase, --interpolation, --ra-sampler/--ra-reps, and case a's crop
sizes 176/232), run for 1 epoch on the CPU with --model mobilenet_v3_small (no weights), -b 8 -j 2.
Cases b to e crop 112 (resize 128) where their commands say 224 (resize 232 or 256): what they
check is the policy's and the erasure's draws and the resize filter, whose statistics and exact
validation pixels do not depend on the crop's size, while a 224 crop would make the epoch four
times the pixels. The datasets are small (40 training and 20 validation images in 5 classes; 256
for the RA cases, the fewest RASampler takes), made once for the class.

How it runs, to be ~2 minutes a stack on 2 cores rather than ~8: the cases on one process (c, d,
e) are one launch of the runner, which runs train.py's main for each job in turn (case, v1 or v2,
torch's or Stoke's loader; fresh loaders, model and records each), and the RA cases (a, b) are
one launch of 2 ranks running their 8 jobs in one process group. Interpreter start and imports
(8 s a process on a busy machine) and the ranks' rendezvous are paid twice in all, not 18 times.
STOKE_RECIPE_TIMES=1 prints each job's time.

Where the recipe's source comes from: STOKE_VISION_REFERENCES=DIR (a torchvision source tree,
DIR/references/classification; a pytorch/vision checkout at the installed release's tag, say), else
Debian 13's source package pytorch-vision 0.21.0 (its .orig tarball from Debian's archive, checked
against its SHA-256 and kept in ~/.cache/stoke/vision-references/0.21.0). Where neither can be had,
the test skips saying so and how to provide it.
"""

import collections
import fcntl
import hashlib
import io
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PACKAGE_ROOT = HERE.parent  # clients/python
CHECKOUT = PACKAGE_ROOT.parent.parent
LAUNCHER = str(CHECKOUT / "stoke")

try:
    import torch  # noqa: F401 (the runner's need, checked here)
    import torchvision
    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

# Debian 13's pytorch-vision 0.21.0-3 source package: its upstream tarball holds references/.
DEBIAN_VERSION = "0.21.0"
DEBIAN_TARBALL = "pool/main/p/pytorch-vision/pytorch-vision_0.21.0.orig.tar.gz"
DEBIAN_SHA256 = "0a4a967bbb7f9810f792cd0289a07fb98c8fb5d1303fae8b63e3a6b05d720058"
DEBIAN_MIRROR = os.environ.get("STOKE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stoke" / "vision-references"
HOW = ("set STOKE_VISION_REFERENCES to a folder holding references/classification (a pytorch/vision "
       "checkout), or let the test reach Debian's archive (STOKE_DEBIAN_MIRROR) once")

# A small model and one epoch: seconds a run. The headline cases' flags follow.
COMMON = ["--model", "mobilenet_v3_small", "--device", "cpu", "--epochs", "1", "-b", "8", "-j", "2",
          "--output-dir", "", "--print-freq", "100"]
SMALL_CROPS = ["--train-crop-size", "112", "--val-resize-size", "128", "--val-crop-size", "112"]
CASES = {
    "a": ["--auto-augment", "ta_wide", "--random-erase", "0.1", "--ra-sampler", "--ra-reps", "4",
          "--train-crop-size", "176", "--val-resize-size", "232"],
    "b": ["--auto-augment", "ra", "--ra-sampler"] + SMALL_CROPS,
    "c": ["--auto-augment", "imagenet", "--random-erase", "0.2", "--interpolation", "bicubic"] + SMALL_CROPS,
    "d": ["--interpolation", "bicubic", "--auto-augment", "ta_wide", "--random-erase", "0.25"] + SMALL_CROPS,
    "e": ["--auto-augment", "augmix"] + SMALL_CROPS,
}
TMP = None


def debian_references():
    """Debian's 0.21 references folder, fetched once into the cache (under a lock); None and why."""
    folder = CACHE / DEBIAN_VERSION
    if (folder / "references" / "classification" / "train.py").is_file():
        return folder, None
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{DEBIAN_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "references" / "classification" / "train.py").is_file():
            return folder, None
        url = f"{DEBIAN_MIRROR}/{DEBIAN_TARBALL}"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        except OSError as e:
            return None, f"{url} could not be downloaded ({e})"
        digest = hashlib.sha256(data).hexdigest()
        if digest != DEBIAN_SHA256:
            return None, f"{url} has SHA-256 {digest}, not Debian 13's {DEBIAN_SHA256}"
        partial = CACHE / f"{DEBIAN_VERSION}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        prefix = f"vision-{DEBIAN_VERSION}/"
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.startswith(prefix + "references/classification/"):
                    target = partial / member.name[len(prefix):]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(member).read())
        (partial / "version.txt").write_text(DEBIAN_VERSION + "\n")
        partial.rename(folder)
        print(f"[stoke] fetched torchvision {DEBIAN_VERSION}'s references/classification from {url} into {folder}",
              file=sys.stderr)
        return folder, None


def references():
    """(folder, its torchvision version, None) or (None, None, why not)."""
    given = os.environ.get("STOKE_VISION_REFERENCES")
    if given:
        folder = Path(given)
        if not (folder / "references" / "classification" / "train.py").is_file():
            return None, None, f"STOKE_VISION_REFERENCES={given} holds no references/classification/train.py"
    else:
        folder, why = debian_references()
        if folder is None:
            return None, None, f"no torchvision reference recipe here: {why}; {HOW}"
    version = folder / "version.txt"
    return folder, version.read_text().strip() if version.is_file() else "unknown", None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setUpModule():
    if MISSING:
        print(f"[stoke] SKIPPING the recipe tests: {MISSING}", file=sys.stderr)


def make_datasets():
    global TMP
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-recipes-"))
    # 5 classes (the recipe's top-5 accuracy needs them); RASampler takes len // 256 * 256 samples
    # an epoch, so its cases need 256 training images (128 a rank on 2 ranks).
    for folder, images, seed in (("small/train", 40, 31), ("small/val", 20, 32), ("ra/train", 256, 33)):
        subprocess.run([LAUNCHER, "make-dataset", str(TMP / folder), "--images", str(images), "--seed", str(seed),
                        "--classes", "5"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.symlink(TMP / "small" / "val", TMP / "ra" / "val")


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


def welch_z(a, b, n_a, n_b):
    """The difference of two samples' means over its standard error, n_a and n_b independent draws."""
    mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
    var_a = sum((x - mean_a) ** 2 for x in a) / (len(a) - 1)
    var_b = sum((x - mean_b) ** 2 for x in b) / (len(b) - 1)
    if var_a == var_b == 0:  # the share of erased values where nothing was erased
        return (0.0 if mean_a == mean_b else math.inf), mean_a, mean_b
    return (mean_a - mean_b) / math.sqrt(var_a / n_a + var_b / n_b), mean_a, mean_b


@unittest.skipIf(MISSING, MISSING or "")
class RecipeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.references, cls.version, why = references()
        if why is None and tuple(int(p) for p in torchvision.__version__.split(".")[:2]) < (0, 16):
            why = (f"torchvision {torchvision.__version__} predates the recipe's flags (--use-v2, "
                   "transforms.v2 came in 0.16): the recipes run on Debian 13's stack and torch 2.14.1's")
        cls.why = why
        cls.groups = {}
        if why is None:
            make_datasets()
            print(f"[stoke] the recipe tests run torchvision {cls.version}'s references/classification "
                  f"({cls.references}) on torch {torch.__version__}, torchvision {torchvision.__version__}",
                  file=sys.stderr)
            if cls.version != "unknown" and not torchvision.__version__.startswith(cls.version.rsplit(".", 1)[0]):
                print(f"[stoke] NOTE: this is not torchvision {torchvision.__version__}'s own recipe: for it, set "
                      "STOKE_VISION_REFERENCES to a pytorch/vision checkout at that release's tag", file=sys.stderr)

    def setUp(self):
        if self.why:
            self.skipTest(self.why)

    @classmethod
    def run_group(cls, two_ranks):
        """Every job of the cases on that many ranks, in one launch of the runner (one interpreter a
        rank: its imports and its process group are paid once). {(name, v2, loader): [one record a
        rank] or the launch's output where a record is missing}; kept for the class."""
        if two_ranks in cls.groups:
            return cls.groups[two_ranks]
        # One intra-op thread a process: two ranks, their loaders and the model share a few cores.
        env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), STOKE_HOME=str(CHECKOUT), USE_LIBUV="0",
                   OMP_NUM_THREADS="1")
        data = TMP / ("ra" if two_ranks else "small")
        tmp = Path(tempfile.mkdtemp(dir=TMP))
        jobs, outs = [], {}
        for name, flags in CASES.items():
            if ("--ra-sampler" in flags) != two_ranks:
                continue
            for v2 in (False, True):
                for loader in ("torch", "stoke"):
                    out = tmp / f"{name}-{'v2' if v2 else 'v1'}-{loader}.json"
                    jobs.append({"loader": loader, "out": str(out),
                                 "args": ["--data-path", str(data), *COMMON, *flags, *(["--use-v2"] if v2 else [])]})
                    outs[name, v2, loader] = [out.with_name(f"{out.stem}.rank{r}.json") for r in range(2)] \
                        if two_ranks else [out]
        plan = tmp / "plan.json"
        plan.write_text(json.dumps(jobs))
        argv = [str(HERE / "recipe_runner.py"), str(cls.references), str(plan)]
        started = time.monotonic()
        if two_ranks:
            from test_dataloader import run_two_ranks
            done = run_two_ranks(argv, free_port(), tmp / "logs", env, timeout=900)
        else:
            done = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=900)
        print(f"[stoke] the recipe runner ran {len(jobs)} jobs on {2 if two_ranks else 1} rank(s) in "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr)
        if os.environ.get("STOKE_RECIPE_TIMES"):
            print("".join(line + "\n" for line in done.stderr.splitlines() if "[recipe_runner]" in line),
                  file=sys.stderr)
        failed = f"the runner's exit status {done.returncode}:\n" + done.stdout[-3000:] + done.stderr[-6000:]
        cls.groups[two_ranks] = {job: [json.loads(o.read_text()) for o in files] if all(o.is_file() for o in files)
                                 else failed for job, files in outs.items()}
        return cls.groups[two_ranks]

    def check_case(self, name):
        flags = CASES[name]
        runs = self.run_group("--ra-sampler" in flags)
        for v2 in (False, True):
            case = f"case {name} ({' '.join(flags)}{' --use-v2' if v2 else ''})"
            with self.subTest(case=case):
                for loader in ("torch", "stoke"):
                    run = runs[name, v2, loader]
                    self.assertIsInstance(run, list, f"{case}, {loader}'s loader: the runner failed:\n{run}")
                    for record in run:
                        self.assertNotIn("error", record, f"{case}, {loader}'s loader failed:\n{record.get('error')}")
                self.compare(case, runs[name, v2, "torch"], runs[name, v2, "stoke"], flags)

    def compare(self, case, torch_ranks, stoke_ranks, flags):
        ra = "--ra-sampler" in flags
        reps = int(flags[flags.index("--ra-reps") + 1]) if "--ra-reps" in flags else 3 if ra else 1
        train_stats = {"torch": [], "stoke": []}
        for rank, (theirs, ours) in enumerate(zip(torch_ranks, stoke_ranks)):
            where = f"{case}, rank {rank}"
            for phase in ("train", "val"):
                self.assertEqual([(b["shape"], b["dtype"]) for b in theirs["batches"][phase]],
                                 [(b["shape"], b["dtype"]) for b in ours["batches"][phase]],
                                 f"{where}, {phase}: the model's batches (shape, dtype) in sequence")
                self.assertEqual([(t["shape"], t["dtype"]) for t in theirs["targets"][phase]],
                                 [(t["shape"], t["dtype"]) for t in ours["targets"][phase]], f"{where}, {phase}")
                targets = [[v for t in run["targets"][phase] for v in t["values"]] for run in (theirs, ours)]
                if phase == "val" or ra:  # a deterministic order: the same targets in the same order
                    self.assertEqual(targets[0], targets[1], f"{where}, {phase}: the loss's targets, in order")
                else:
                    self.assertEqual(collections.Counter(targets[0]), collections.Counter(targets[1]),
                                     f"{where}, {phase}: the loss's targets, as a multiset")
            self.assertTrue(theirs["batches"]["train"], f"{where}: the model saw no training batch")
            # Evaluation has no random draw: each image's statistics are torch's own.
            for stat in ("mean", "std"):
                a = [c for b in theirs["batches"]["val"] for image in b[stat] for c in image]
                b = [c for b in ours["batches"]["val"] for image in b[stat] for c in image]
                worst = max(abs(x - y) for x, y in zip(a, b))
                self.assertLess(worst, 1e-4, f"{where}: validation per-image channel {stat}s differ by up to {worst}")
            for loader, run in (("torch", theirs), ("stoke", ours)):
                train_stats[loader] += [(image_mean, image_std, [zeros], [float(zeros > 0)])
                                        for b in run["batches"]["train"]
                                        for image_mean, image_std, zeros in zip(b["mean"], b["std"], b["zeros"])]
        # Training draws differ between the two loaders: each channel's statistics within sampling noise.
        n_t, n_s = len(train_stats["torch"]), len(train_stats["stoke"])
        self.assertEqual(n_t, n_s, case)
        for s, stat in enumerate(("mean", "std", "share of erased values", "share of erased images")):
            for channel in range(3 if s < 2 else 1):
                a = [image[s][channel] for image in train_stats["stoke"]]
                b = [image[s][channel] for image in train_stats["torch"]]
                z, ours, theirs = welch_z(a, b, n_s / reps, n_t / reps)
                self.assertLess(abs(z), 5, f"{case}: training images' channel {channel} {stat}: Stoke's average "
                                           f"{ours:.4f}, torch's {theirs:.4f}, {z:.1f} standard errors apart")

    def test_a_resnet50_v2_trivialaugment_random_erase_ra_sampler_on_two_ranks(self):
        self.check_case("a")

    def test_b_regnet_randaugment_ra_sampler_on_two_ranks(self):
        self.check_case("b")

    def test_c_mobilenet_v3_autoaugment_imagenet_random_erase_bicubic(self):
        self.check_case("c")

    def test_d_vit_bicubic_trivialaugment_random_erase(self):
        self.check_case("d")

    def test_e_augmix(self):
        self.check_case("e")


if __name__ == "__main__":
    unittest.main()
