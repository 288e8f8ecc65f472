#!/usr/bin/env python3
"""Web-sized photographs (0.7-1.0 MP: 960x720 to 1280x853) cut from the 4-5 MP ones of
``debian_photos.sh``: each a region of twice its size, from a place drawn at random, resized with
PIL's bicubic filter and saved at quality 80, 85, 90 or 95, into OUT/c0 .. OUT/c3, an ImageFolder.
The size of most images on the web, between ImageNet's and a camera's: a resize to 256 or 224 is a
downscale by about 3 to 4 there, where the one of ImageNet-sized images is by 1.5 to 2.

  benchmarks/python/debian_photos.sh /tmp/photos-4mp
  python3 benchmarks/python/web_photos.py /tmp/photos-4mp /tmp/photos-1mp --count 400
  python3 benchmarks/python/web_photos.py /tmp/photos-4mp /tmp/photos-2mp --size 1600x1200 --size 1920x1080

Each region is twice its size where the photograph is large enough, else as much of it as there is.
"""
import argparse
import random
from pathlib import Path

from PIL import Image

SIZES = [(1024, 768), (1280, 853), (960, 720), (1200, 800)]
QUALITIES = [80, 85, 90, 95]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path, help="debian_photos.sh's folder")
    ap.add_argument("out", type=Path, help="the ImageFolder to write (created)")
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", action="append", metavar="WxH",
                    help="a size to draw from, again for more (default: " + ", ".join(f"{w}x{h}" for w, h in SIZES) + ")")
    args = ap.parse_args()
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.size] if args.size else SIZES
    sources = sorted(args.source.rglob("*.jpg"))
    if not sources:
        raise SystemExit(f"no JPEGs under {args.source}: run debian_photos.sh first")
    rng = random.Random(args.seed)
    for i in range(args.count):
        with Image.open(sources[i % len(sources)]) as opened:
            image = opened.convert("RGB")
        w, h = rng.choice(sizes)
        x = rng.randint(0, image.width - 2 * w) if image.width > 2 * w else 0
        y = rng.randint(0, image.height - 2 * h) if image.height > 2 * h else 0
        region = image.crop((x, y, x + min(2 * w, image.width), y + min(2 * h, image.height)))
        folder = args.out / f"c{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        region.resize((w, h), Image.BICUBIC).save(folder / f"{i:04d}.jpg", quality=rng.choice(QUALITIES))
    print(f"web_photos.py: {args.count} photographs in {args.out}")


if __name__ == "__main__":
    main()
