#!/bin/sh
# Builds libstoke_pixels.so (the resize), libstoke_jpeg.so (the region decoder, over libjpeg) and
# libstoke_image.so (PNG and WebP, over libspng and libwebp) into $1, a folder on the module's classpath, so the jar carries them. Never fails the build:
# what cannot be built gets $1/UNAVAILABLE or $1/UNAVAILABLE_JPEG with the reason, and Stoke says
# so once at run time and resizes in Java, or decodes whole images, instead.
set -u
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cc="${CC:-gcc}"
mkdir -p "$out"

# build LIBRARY SOURCE REASON_FILE WHAT FALLBACK HINT PACKAGES [LINK FLAGS...]: one library, or the
# reason not (HINT: a header whose absence means PACKAGES are to be installed).
build() {
    lib="$1" src="$2" reason="$out/$3" what="$4" fallback="$5" hint="$6" packages="$7"
    shift 7
    rm -f "$reason"
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "no C compiler ($cc) on PATH: install gcc to build $what" > "$reason"
    elif [ "$out/$lib" -nt "$here/$src.c" ] && [ "$out/$lib" -nt "$here/$src.h" ] 2>/dev/null; then
        return 0
    else
        log="$(mktemp)"
        if ! "$cc" -std=c11 -O3 -Wall -Wextra -Werror -fPIC -shared -o "$out/$lib" "$here/$src.c" "$@" 2> "$log"; then
            rm -f "$out/$lib"
            log_hint=""
            [ -n "$hint" ] && log_hint="$(grep -o "$hint" "$log" | head -n 1)"
            if [ -n "$log_hint" ]; then
                echo "its headers are missing ($log_hint): install $packages to build $what" > "$reason"
            else
                { echo "building $what failed:"; cat "$log"; } > "$reason"
            fi
        fi
        rm -f "$log"
    fi
    if [ -f "$reason" ]; then
        echo "[stoke] WARNING: $what not built: $(head -n 1 "$reason"); Stoke will $fallback" >&2
    fi
}

build libstoke_pixels.so stoke_pixels UNAVAILABLE "Stoke's native pixel library" "resize in Java" "" ""
# A library of its own, so that without libjpeg's headers only region decoding is missing.
build libstoke_jpeg.so stoke_jpeg UNAVAILABLE_JPEG "Stoke's region decoder" "decode whole images" "jpeglib.h" \
    libjpeg62-turbo-dev -ljpeg
# And one for PNG and WebP, so that without their headers only those formats are missing.
build libstoke_image.so stoke_image UNAVAILABLE_IMAGE "Stoke's PNG and WebP decoder" \
    "name PNG and WebP files as not decoded" "spng.h\|decode.h" "libspng-dev and libwebp-dev" -lspng -lwebp
exit 0
