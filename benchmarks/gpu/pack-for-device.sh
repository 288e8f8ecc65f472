#!/usr/bin/env bash
# What a device call carries for benchmarks/gpu/decode-on-device.sh, in one folder of the checkout
# that git ignores (a device call carries 64 MiB at most, the working tree included):
#
#   benchmarks/gpu/pack-for-device.sh [DIR (.devcarry)] [PHOTOS]
#
# DIR/site.tar.xz  the wheel's contents (./stoke wheel, built here), its jars re-stored uncompressed so
#                  that xz sees the classes: about 35 MB, where the wheel is about 67 MB;
# DIR/lib/         libturbojpeg.so.0 and libjpeg.so.62 from this machine's packages;
# DIR/photos/      the photographs under PHOTOS (JPEGs; e.g. Debian's mate-backgrounds, nature/).
# Then, on the device: PHOTOS=DIR/photos benchmarks/gpu/decode-on-device.sh DIR/site.tar.xz DIR/lib OUT
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(realpath -m "${1:-$ROOT/.devcarry}") PHOTOS=${2:-}
WHEEL=$("$ROOT/stoke" wheel | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/site" "$DIR/lib"
(cd "$work/site" && unzip -q "$WHEEL")
for jar in "$work"/site/stoke/_java/lib/*.jar; do
  rm -rf "$work/jar" && mkdir "$work/jar" && (cd "$work/jar" && unzip -q "$jar")
  rm "$jar" && (cd "$work/jar" && zip -q -0 -r -X "$jar" .)
done
tar -cf - -C "$work/site" . | xz -T0 -9e > "$DIR/site.tar.xz"
cp -L /usr/lib/x86_64-linux-gnu/libturbojpeg.so.0 /usr/lib/x86_64-linux-gnu/libjpeg.so.62 "$DIR/lib/"
if [[ -n $PHOTOS ]]; then
  mkdir -p "$DIR/photos" && find "$PHOTOS" -maxdepth 1 -iname '*.jp*g' -exec cp {} "$DIR/photos/" \;
fi
du -sh "$DIR"/*
