#!/bin/sh
# Writes 17 real photographs of 4.1-4.9 MP (2560x1600, one 2560x1920; 200-910 KB; 4:2:0, 4:2:2,
# 4:4:4, one grayscale, two progressive) into OUT/c0 and OUT/c1, an ImageFolder: the desktop
# photographs of Debian's mate-backgrounds and plasma-workspace-wallpapers packages (the drawn and
# rendered wallpapers left out). The larger images the benchmarks use beside ImageNet-sized ones,
# where cameras' files are not to be had; filling_bench.py --copies N links each N times.
#
#   benchmarks/python/debian_photos.sh /tmp/photos-4mp
#
# Needs apt-get (download only: nothing is installed) and dpkg-deb.
set -eu
out="${1:?usage: debian_photos.sh OUT}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download mate-backgrounds plasma-workspace-wallpapers >/dev/null)
for deb in "$work"/*.deb; do
    dpkg-deb -x "$deb" "$work/x"
done
mkdir -p "$out/c0" "$out/c1"
i=0
for f in \
    wallpapers/ColdRipple/contents/images/2560x1600.jpg \
    wallpapers/FallenLeaf/contents/images/2560x1600.jpg \
    backgrounds/mate/nature/LadyBird.jpg \
    backgrounds/mate/nature/Garden.jpg \
    wallpapers/Path/contents/images/2560x1600.jpg \
    backgrounds/mate/nature/YellowFlower.jpg \
    backgrounds/mate/nature/TwoWings.jpg \
    backgrounds/mate/nature/Aqua.jpg \
    wallpapers/Kite/contents/images/2560x1600.jpg \
    wallpapers/ColorfulCups/contents/images/2560x1600.jpg \
    wallpapers/Grey/contents/images/2560x1600.jpg \
    wallpapers/OneStandsOut/contents/images/2560x1600.jpg \
    wallpapers/EveningGlow/contents/images/2560x1600.jpg \
    wallpapers/summer_1am/contents/images/2560x1600.jpg \
    wallpapers/BytheWater/contents/images/2560x1600.jpg \
    backgrounds/mate/nature/Wood.jpg \
    wallpapers/DarkestHour/contents/images/2560x1600.jpg; do
    name="$(echo "$f" | sed 's|wallpapers/\([^/]*\)/.*|\1|; s|.*/nature/\([^.]*\)\..*|\1|')"
    cp "$work/x/usr/share/$f" "$out/c$((i % 2))/$name.jpg"
    i=$((i + 1))
done
echo "debian_photos.sh: $i photographs in $out"
