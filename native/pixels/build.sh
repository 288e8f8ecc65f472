#!/bin/sh
# Builds libstoke_pixels.so (the resize) and libstoke_jpeg.so (the region decoder, over libjpeg)
# into $1, a folder on the module's classpath, so the jar carries them. Never fails the build:
# what cannot be built gets $1/UNAVAILABLE or $1/UNAVAILABLE_JPEG with the reason, and Stoke says
# so once at run time and resizes in Java, or decodes whole images, instead.
set -u
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cc="${CC:-gcc}"
mkdir -p "$out"

# build LIBRARY SOURCE REASON_FILE WHAT FALLBACK HINT [LINK FLAGS...]: one library, or the reason not.
build() {
    lib="$1" src="$2" reason="$out/$3" what="$4" fallback="$5" hint="$6"
    shift 6
    rm -f "$reason"
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "no C compiler ($cc) on PATH: install gcc to build $what" > "$reason"
    elif [ "$out/$lib" -nt "$here/$src.c" ] && [ "$out/$lib" -nt "$here/$src.h" ] 2>/dev/null; then
        return 0
    else
        log="$(mktemp)"
        if ! "$cc" -std=c11 -O3 -Wall -Wextra -Werror -fPIC -shared -o "$out/$lib" "$here/$src.c" "$@" 2> "$log"; then
            rm -f "$out/$lib"
            if [ -n "$hint" ] && grep -q "$hint" "$log"; then
                echo "the headers of $hint are missing: install libjpeg62-turbo-dev to build $what" > "$reason"
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

build libstoke_pixels.so stoke_pixels UNAVAILABLE "Stoke's native pixel library" "resize in Java" ""
# A library of its own, so that without libjpeg's headers only region decoding is missing.
build libstoke_jpeg.so stoke_jpeg UNAVAILABLE_JPEG "Stoke's region decoder" "decode whole images" "jpeglib.h" -ljpeg
exit 0
