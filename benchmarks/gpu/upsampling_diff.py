#!/usr/bin/env python3
"""Where nvJPEG's pixels part from libjpeg-turbo's: nvJPEG's decode on the GPU against TurboJPEG's,
with libjpeg's default (smooth, "fancy") chroma upsampling and with its plain one (TJFLAG_FASTUPSAMPLE),
on the same files, at full size (issue 50's "name any cause beyond 2 levels").

  python3 upsampling_diff.py --data DIR --out OUT.json [--images 512] [--turbojpeg libturbojpeg.so.0]

nvJPEG runs through torchvision's batched ``decode_jpeg(device="cuda")`` (RGB). Per variant: the mean
absolute difference over all channel values, the largest, the share of values more than 2 levels
apart, and how many images have any. Gray and progressive files are included as they come; a file
TurboJPEG cannot read is skipped and counted. --device cpu compares torchvision's CPU decode instead
(the check this script works, on a machine without a GPU).
"""
import argparse
import ctypes
import json
from pathlib import Path

import numpy as np
import torch
from torchvision.io import ImageReadMode, decode_jpeg, read_file

TJPF_RGB = 0
TJFLAG_FASTUPSAMPLE = 256
TJFLAG_ACCURATEDCT = 4096


class TurboJpeg:
    """TurboJPEG's decompressor through its C API (the 2.x functions every 2.x and 3.x library keeps)."""

    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(path)
        self.lib.tjInitDecompress.restype = ctypes.c_void_p
        self.lib.tjDecompressHeader3.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong] + \
            [ctypes.POINTER(ctypes.c_int)] * 4
        self.lib.tjDecompress2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p,
                                           ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self.handle = ctypes.c_void_p(self.lib.tjInitDecompress())

    def decode(self, data: bytes, flags: int):
        w, h, ss, cs = (ctypes.c_int() for _ in range(4))
        if self.lib.tjDecompressHeader3(self.handle, data, len(data), *(ctypes.byref(v) for v in (w, h, ss, cs))):
            return None
        out = np.empty((h.value, w.value, 3), np.uint8)
        if self.lib.tjDecompress2(self.handle, data, len(data), out.ctypes.data, w.value, 0, h.value, TJPF_RGB,
                                  flags):
            return None
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--turbojpeg", default="libturbojpeg.so.0")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    files = sorted(p for p in a.data.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))[:a.images]
    turbo = TurboJpeg(a.turbojpeg)
    variants = {"turbojpeg default (smooth upsampling)": TJFLAG_ACCURATEDCT,
                "turbojpeg TJFLAG_FASTUPSAMPLE": TJFLAG_ACCURATEDCT | TJFLAG_FASTUPSAMPLE}
    sums = {v: {"abs": 0.0, "values": 0, "largest": 0, "over_2": 0, "images_over_2": 0} for v in variants}
    skipped = 0
    for start in range(0, len(files), a.batch):
        chunk = files[start:start + a.batch]
        data = [read_file(str(p)) for p in chunk]
        gpu = decode_jpeg(data, device=a.device, mode=ImageReadMode.RGB)
        for p, raw, g in zip(chunk, data, gpu):
            g = g.permute(1, 2, 0).cpu().numpy().astype(np.int16)
            blob = raw.numpy().tobytes()
            for name, flags in variants.items():
                t = turbo.decode(blob, flags)
                if t is None or t.shape != g.shape:
                    skipped += 1
                    continue
                d = np.abs(t.astype(np.int16) - g)
                s = sums[name]
                s["abs"] += float(d.sum())
                s["values"] += d.size
                s["largest"] = max(s["largest"], int(d.max()))
                over = int((d > 2).sum())
                s["over_2"] += over
                s["images_over_2"] += over > 0
    result = {"files": len(files), "device": a.device, "skipped": skipped, "torch": torch.__version__}
    for name, s in sums.items():
        result[name] = {"mean_abs_diff": s["abs"] / max(1, s["values"]), "largest_abs_diff": s["largest"],
                        "share_of_values_over_2": s["over_2"] / max(1, s["values"]),
                        "images_over_2": s["images_over_2"]}
    print(json.dumps(result, indent=1), flush=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
