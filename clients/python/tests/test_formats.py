"""Every image format users hold, through stoke.DataLoader, against torchvision and PIL (run by ./stoke test).

A mixed folder: JPEGs (RGB, gray, CMYK), PNGs of every colour type PIL writes (RGB, RGBA, palette
with and without transparency, gray, gray+alpha, 1-bit, 16-bit gray), PNGs from another encoder
(16-bit RGB, Adam7-interlaced, 2- and 4-bit, a palette shorter than its indices, written here
with zlib), WebP (lossy, lossless, each
with and without alpha), and a PNG named .jpg. Its pixels after torchvision's transforms must be
torchvision's own: byte for byte, lossy WebP too (PIL and Stoke both decode it with the system's
libwebp). TIFF and BMP are named as not decoded, file by file, and nothing else in their batch is lost.

Where the checkout's jar lacks Stoke's PNG and WebP decoder (built without gcc or libspng's and
libwebp's headers) or libspng0/libwebp7 are not installed, the PNG and WebP files must be named as
not decoded instead; the test checks that in place of the pixels, and says so.
"""

import ctypes.util
import io
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
CHECKOUT = PACKAGE_ROOT.parent.parent
sys.path.insert(0, str(PACKAGE_ROOT))

try:
    import numpy as np
    import torch
    import torchvision
    from torchvision import transforms as T
    from PIL import Image
    import stoke
    MISSING = None
except ImportError as e:
    MISSING = f"{e.name} is not installed"

TMP = None
ROOT = None  # what Stoke decodes: class folders a_pil, b_other
NAMED = None  # ROOT plus c_named: TIFF and BMP
SOURCE = None  # the photographs the files are cut from (make-dataset's JPEGs)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(rows_by_pass, width, height, depth, colour, interlace=0, palette=None):
    """A PNG from already-packed scanlines (filter type 0), one list of rows per pass."""
    raw = b"".join(b"\0" + row for rows in rows_by_pass for row in rows)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0,
                                                                   interlace))
    if palette is not None:
        out += png_chunk(b"PLTE", palette)
    return out + png_chunk(b"IDAT", zlib.compress(raw, 9)) + png_chunk(b"IEND", b"")


ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def encode_png(pixels, depth, colour, interlace=False, palette=None):
    """pixels: uint8/uint16 [h, w, c] (c = 1 gray, 3 RGB, 4 RGBA); samples of depth < 8 packed MSB first."""
    h, w = pixels.shape[:2]
    passes = ADAM7 if interlace else ((0, 0, 1, 1),)

    def row_bytes(row):
        if depth == 16:
            return row.astype(">u2").tobytes()
        if depth == 8:
            return row.astype(np.uint8).tobytes()
        flat = row.reshape(-1).astype(np.uint8)
        per = 8 // depth
        flat = np.concatenate([flat, np.zeros((-len(flat)) % per, np.uint8)]).reshape(-1, per)
        shifts = np.arange(per - 1, -1, -1, dtype=np.uint8) * depth
        return (flat << shifts).sum(axis=1).astype(np.uint8).tobytes()

    rows_by_pass = []
    for x0, y0, dx, dy in passes:
        sub = pixels[y0::dy, x0::dx]
        rows_by_pass.append([row_bytes(r) for r in sub] if sub.shape[0] and sub.shape[1] else [])
    return png_bytes(rows_by_pass, w, h, depth, colour, 1 if interlace else 0, palette)


def pil_blackens_indices_past_the_palette():
    """Whether this Pillow gives an index past a PNG's palette black, as Stoke does (Pillow 11 does;
    Pillow 9 gave the gray (i, i, i) of its default palette)."""
    one = encode_png(np.array([[[3]]], dtype=np.uint8), 2, 3, palette=bytes(9))
    return Image.open(io.BytesIO(one)).convert("RGB").getpixel((0, 0)) == (0, 0, 0)


def decoder_here():
    """Why Stoke's PNG and WebP decoder cannot run here, or None."""
    jar = CHECKOUT / "cli" / "target" / "stoke.jar"
    try:
        with zipfile.ZipFile(jar) as z:
            if "io/stoke/ffm/native/libstoke_image.so" not in z.namelist():
                return f"{jar} holds no libstoke_image.so (built without gcc or libspng's and libwebp's headers)"
    except FileNotFoundError:
        return f"{jar} is not built"
    for lib in ("spng", "webp"):
        if ctypes.util.find_library(lib) is None:
            return f"lib{lib} is not installed"
    return None


def setUpModule():
    global TMP, ROOT, NAMED, SOURCE
    if MISSING:
        print(f"[stoke] SKIPPING the image format tests: {MISSING}", file=sys.stderr)
        return
    os.environ.setdefault("STOKE_HOME", str(CHECKOUT))
    TMP = Path(tempfile.mkdtemp(prefix="stoke-py-test-formats-"))
    SOURCE = TMP / "source"
    subprocess.run([str(CHECKOUT / "stoke"), "make-dataset", str(SOURCE), "--images", "12", "--seed", "21",
                    "--classes", "1"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    photos = [Image.open(p).convert("RGB") for p in sorted(next(SOURCE.iterdir()).iterdir())]
    ROOT = TMP / "mixed"
    a, b = ROOT / "a_pil", ROOT / "b_other"
    a.mkdir(parents=True)
    b.mkdir()

    def photo(i, size=None):
        im = photos[i % len(photos)]
        return im.resize(size, Image.BILINEAR) if size else im

    def save(path, im, fmt, **kw):
        buf = io.BytesIO()
        im.save(buf, fmt, **kw)
        path.write_bytes(buf.getvalue())

    # Files PIL wrote.
    save(a / "jpeg.jpg", photo(0), "JPEG", quality=90)
    save(a / "gray-jpeg.jpg", photo(1).convert("L"), "JPEG", quality=85)
    save(a / "cmyk.jpg", photo(2).convert("CMYK"), "JPEG", quality=90)
    save(a / "rgb.png", photo(3), "PNG")
    rgba = photo(4).convert("RGBA")
    rgba.putalpha(photo(5, rgba.size).convert("L"))
    save(a / "rgba.png", rgba, "PNG")
    save(a / "palette.png", photo(6).quantize(200), "PNG")
    save(a / "palette-transparent.png", photo(7).quantize(64), "PNG", transparency=5)
    save(a / "gray.png", photo(8).convert("L"), "PNG")
    base = photo(9)
    save(a / "gray-alpha.png", Image.merge("LA", (base.convert("L"), photo(10, base.size).convert("L"))), "PNG")
    save(a / "bilevel.png", photo(11).convert("1"), "PNG")
    deep = (np.asarray(photo(0).convert("L"), dtype=np.uint16) * 3).astype(np.uint16)  # some samples > 255
    save(a / "gray16.png", Image.fromarray(deep), "PNG")
    save(a / "lossy.webp", photo(1), "WEBP", quality=80)
    save(a / "lossless.webp", photo(2), "WEBP", lossless=True)
    save(a / "lossy-alpha.webp", rgba, "WEBP", quality=75)
    save(a / "lossless-alpha.webp", rgba, "WEBP", lossless=True)
    save(a / "png-named.jpg", photo(3), "PNG")  # a PNG named .jpg, as ImageNet has one
    # Files another encoder wrote (zlib, here): what PIL cannot write.
    rgb = np.asarray(photo(4))
    (b / "rgb16.png").write_bytes(encode_png(rgb.astype(np.uint16) * 257 + 128, 16, 2))
    (b / "interlaced.png").write_bytes(encode_png(rgb, 8, 2, interlace=True))
    rgba16 = np.dstack([rgb, np.asarray(photo(5, rgb.shape[1::-1]).convert("L"))]).astype(np.uint16) * 256
    (b / "interlaced-rgba16.png").write_bytes(encode_png(rgba16, 16, 6, interlace=True))
    gray = np.asarray(photo(6).convert("L"))[..., None]
    (b / "gray4.png").write_bytes(encode_png(gray >> 4, 4, 0))
    (b / "gray2-interlaced.png").write_bytes(encode_png(gray >> 6, 2, 0, interlace=True))
    quant = photo(7).quantize(4)
    palette = bytes(quant.getpalette()[:12])
    (b / "palette2.png").write_bytes(encode_png(np.asarray(quant)[..., None], 2, 3, palette=palette))
    (b / "palette2-interlaced.png").write_bytes(encode_png(np.asarray(quant)[..., None], 2, 3, interlace=True,
                                                          palette=palette))
    # Indices past a 3-entry palette: black in Pillow 11 (Debian 13) and in Stoke; Pillow 9 gave gray.
    (b / "palette-short.png").write_bytes(encode_png(np.asarray(quant)[..., None], 2, 3, palette=palette[:9]))
    # Formats Stoke names rather than decodes.
    NAMED = TMP / "named"
    shutil.copytree(ROOT, NAMED)
    c = NAMED / "c_named"
    c.mkdir()
    save(c / "photo.tif", photo(8), "TIFF")
    save(c / "photo.bmp", photo(9), "BMP")


def tearDownModule():
    if TMP is not None:
        shutil.rmtree(TMP, ignore_errors=True)


EVAL = [T.Resize(72), T.CenterCrop(64), T.PILToTensor()] if not MISSING else None
TRAIN = [T.RandomResizedCrop(56), T.RandomHorizontalFlip(), T.PILToTensor()] if not MISSING else None


class EveryFormatTest(unittest.TestCase):
    def setUp(self):
        if MISSING:
            self.skipTest(MISSING)
        self.why_not = decoder_here()

    def torch_batch(self, root, transform):
        ds = torchvision.datasets.ImageFolder(str(root), transform=T.Compose(transform))
        return ds.samples, torch.stack([ds[i][0] for i in range(len(ds))])

    def test_pixels_are_torchvisions_for_every_format_through_an_image_folder_and_a_path(self):
        samples, want = self.torch_batch(ROOT, EVAL)
        names = [Path(p).name for p, _ in samples]
        if self.why_not:
            print(f"[stoke] Stoke's PNG and WebP decoder is not available here ({self.why_not}): checking that "
                  "PNG and WebP files are named as not decoded instead of their pixels", file=sys.stderr)
            with stoke.DataLoader(torchvision.datasets.ImageFolder(str(ROOT), transform=T.Compose(EVAL)),
                                  batch_size=len(names), num_workers=2, on_error="skip") as loader:
                batch = next(iter(loader))
            reasons = {Path(s.path).name: s.reason for s in batch.skipped}
            for name in names:
                if Path(name).suffix in (".png", ".webp") or name == "png-named.jpg":
                    self.assertTrue(reasons.get(name, "").startswith("format not decoded"), (name, reasons))
            return
        # An ImageFolder object with torchvision's transforms, translated by Stoke.
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(ROOT), transform=T.Compose(EVAL)),
                              batch_size=len(names), num_workers=2) as loader:
            images, labels = next(iter(loader))
        self.assertEqual(list(images.shape), list(want.shape))
        # A folder path with Stoke's own options: uint8 [n, H, W, 3].
        with stoke.DataLoader(str(ROOT), batch_size=len(names), num_workers=2, resize=72, crop=64,
                              dct_scaling="none") as loader:
            by_path = next(iter(loader))[0].permute(0, 3, 1, 2)
        old_pillow = not pil_blackens_indices_past_the_palette()
        if old_pillow:
            print(f"[stoke] NOT COMPARED: palette-short.png, since this Pillow ({Image.__version__}) gives indices "
                  "past the palette gray where Pillow 11 and Stoke give them black", file=sys.stderr)
        for got, how in ((images, "ImageFolder"), (by_path, "folder path")):
            for i, name in enumerate(names):
                if old_pillow and name == "palette-short.png":
                    continue
                diff = (got[i].int() - want[i].int()).abs().max().item()
                self.assertEqual(0, diff, f"{how}: {name} differs from torchvision by up to {diff}")

    def test_the_training_transform_decodes_every_format(self):
        if self.why_not:
            self.skipTest(f"Stoke's PNG and WebP decoder is not available here: {self.why_not}")
        samples, _ = self.torch_batch(ROOT, EVAL)
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(ROOT), transform=T.Compose(TRAIN)),
                              batch_size=len(samples), num_workers=2, seed=3) as loader:
            batch = next(iter(loader))
        self.assertEqual([], list(batch.skipped))
        self.assertEqual([len(samples), 3, 56, 56], list(batch[0].shape))
        # Nothing is blank: every format's pixels arrived.
        for i, (path, _) in enumerate(samples):
            self.assertGreater(int(batch[0][i].float().std()), 0, path)

    def test_formats_not_decoded_are_named_file_by_file_and_the_rest_arrive(self):
        samples, _ = self.torch_batch(NAMED, EVAL)
        n = len(samples)
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(NAMED), transform=T.Compose(EVAL)),
                              batch_size=n, num_workers=2) as loader:
            with self.assertRaises(stoke.SampleError) as caught:
                next(iter(loader))
        reasons = {Path(s.path).name: s.reason for s in caught.exception.samples}
        expected = {"photo.tif": "format not decoded: TIFF", "photo.bmp": "format not decoded: BMP"}
        if self.why_not:
            expected.update({Path(p).name: "format not decoded: " + ("WebP" if p.endswith(".webp") else "PNG")
                             for p, _ in samples
                             if Path(p).suffix in (".png", ".webp") or Path(p).name == "png-named.jpg"})
        self.assertEqual(expected, reasons)
        self.assertIn("photo.tif", str(caught.exception))
        # Under skip the same two are listed and every other sample arrives.
        with stoke.DataLoader(torchvision.datasets.ImageFolder(str(NAMED), transform=T.Compose(EVAL)),
                              batch_size=n, num_workers=2, on_error="skip") as loader:
            batch = next(iter(loader))
        self.assertEqual(expected, {Path(s.path).name: s.reason for s in batch.skipped})
        self.assertEqual(n - len(expected), sum(int(batch[0][i].abs().sum()) > 0 for i in range(n)))

    def test_tar_shards_and_stoke_pack_take_every_format(self):
        if self.why_not:
            self.skipTest(f"Stoke's PNG and WebP decoder is not available here: {self.why_not}")
        samples, want = self.torch_batch(ROOT, EVAL)
        # A WebDataset shard written by Python's tarfile: each file a member named by its own extension.
        shard = TMP / "shards" / "mixed-000000.tar"
        shard.parent.mkdir(exist_ok=True)
        with tarfile.open(shard, "w") as t:
            for i, (path, label) in enumerate(samples):
                t.add(path, arcname=f"s{i:03d}{Path(path).suffix}")
                info = tarfile.TarInfo(f"s{i:03d}.cls")
                info.size = len(str(label))
                t.addfile(info, io.BytesIO(str(label).encode()))
        with stoke.DataLoader(str(shard), batch_size=len(samples), num_workers=2, resize=72, crop=64,
                              dct_scaling="none", with_indices=True) as loader:
            images, labels, indices = next(iter(loader))
        old_pillow = not pil_blackens_indices_past_the_palette()
        for j, i in enumerate(indices.tolist()):
            name = Path(samples[i][0]).name
            self.assertEqual(samples[i][1], int(labels[j]), name)
            if old_pillow and name == "palette-short.png":
                continue
            self.assertTrue(torch.equal(want[i], images[j].permute(2, 0, 1)), f"tar member of {name} differs")
        # stoke pack reads every format and writes JPEG shards that decode.
        out = TMP / "packed"
        run = subprocess.run([str(CHECKOUT / "stoke"), "pack", str(ROOT), "--out", str(out), "--resize", "72"],
                             capture_output=True, text=True)
        self.assertEqual(0, run.returncode, run.stdout + run.stderr)
        with stoke.DataLoader(str(out), batch_size=len(samples), num_workers=2, resize=72, crop=64) as loader:
            batch = next(iter(loader))
        self.assertEqual([], list(batch.skipped))
        self.assertEqual(len(samples), len(batch[0]))
        # --format png is lossless: its pixels are torchvision's Resize(72), so the crop is torchvision's too.
        lossless = TMP / "packed-png"
        run = subprocess.run([str(CHECKOUT / "stoke"), "pack", str(ROOT), "--out", str(lossless), "--resize", "72",
                              "--format", "png"], capture_output=True, text=True)
        self.assertEqual(0, run.returncode, run.stdout + run.stderr)
        with tarfile.open(next(lossless.glob("*.tar"))) as t:
            self.assertEqual({".png", ".cls"}, {Path(m.name).suffix for m in t.getmembers()})
        with stoke.DataLoader(str(lossless), batch_size=len(samples), num_workers=2, resize=72, crop=64,
                              dct_scaling="none", with_indices=True) as loader:
            packed = loader.samples
            images, _, indices = next(iter(loader))
        keys = {Path(p).relative_to(ROOT).with_suffix("").as_posix(): i for i, (p, _) in enumerate(samples)}
        for j, i in enumerate(indices.tolist()):
            key = packed[i][0].split(".tar/", 1)[1]
            name = Path(samples[keys[key]][0]).name
            if old_pillow and name == "palette-short.png":
                continue
            self.assertTrue(torch.equal(want[keys[key]], images[j].permute(2, 0, 1)), f"packed PNG of {name} differs")


if __name__ == "__main__":
    unittest.main()
