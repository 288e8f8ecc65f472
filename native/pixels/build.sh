#!/bin/sh
# Builds libstoke_pixels.so (the resize), libstoke_jpeg.so (the region decoder, over libjpeg),
# libstoke_image.so (PNG and WebP, over libspng and libwebp) and libstoke_augment.so (the
# auto-augment policies' colour operations) into $1, a folder on the module's
# classpath, so the jar carries them. Only a missing compiler (none on PATH, or one that cannot
# compile a file that includes libc's headers) or a missing header is skipped: the library
# gets $1/UNAVAILABLE, $1/UNAVAILABLE_JPEG or $1/UNAVAILABLE_IMAGE with the reason, and Stoke says
# so once at run time and resizes in Java, or decodes whole images, instead. Where the compiler
# and the headers are there, a compile error is a broken change: it is printed, naming the file,
# and the script exits 1, which fails the Maven build (and so ./stoke test and CI).
set -u
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cc="${CC:-gcc}"
mkdir -p "$out"
failed=""

# Why the compiler cannot build anything here, or nothing: none on PATH, or one that fails a file
# of libc's headers alone (gcc without libc6-dev, or a stand-in that hides gcc from a test run).
if ! command -v "$cc" >/dev/null 2>&1; then
    no_cc="no C compiler ($cc) on PATH: install gcc"
elif ! printf '#include <setjmp.h>\n#include <stdarg.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint stoke_probe;\n' \
        | "$cc" -x c -c -o /dev/null - >/dev/null 2>&1; then
    no_cc="no working C compiler ($cc cannot compile a file of libc's headers alone): install gcc and libc6-dev"
else
    no_cc=""
fi

# build LIBRARY SOURCE REASON_FILE WHAT FALLBACK HEADERS PACKAGES [LINK FLAGS...]: one library, or
# the reason not (HEADERS: the system headers, space-separated, whose absence means PACKAGES are
# to be installed).
build() {
    lib="$1" src="$2" reason="$out/$3" what="$4" fallback="$5" headers="$6" packages="$7"
    shift 7
    rm -f "$reason"
    if [ -n "$no_cc" ]; then
        echo "$no_cc to build $what" > "$reason"
    elif missing="$(missing_headers "$headers")" && [ -n "$missing" ]; then
        echo "its headers are missing ($missing): install $packages to build $what" > "$reason"
    elif up_to_date "$out/$lib" "$here/$src.c" "$@"; then
        return 0
    elif ! "$cc" -std=c11 -O3 -Wall -Wextra -Werror -fPIC -shared -o "$out/$lib" "$here/$src.c" "$@"; then
        # The compiler has printed why (file, line and message) above.
        rm -f "$out/$lib"
        echo "[stoke] ERROR: building $what failed: $cc could not compile $here/$src.c (above)" >&2
        failed="$failed $src.c"
        return 0
    fi
    if [ -f "$reason" ]; then
        echo "[stoke] WARNING: $what not built: $(head -n 1 "$reason"); Stoke will $fallback" >&2
    fi
}

# up_to_date LIBRARY ARGS...: whether LIBRARY is newer than each C file among ARGS and its header
# (a library of more than one source names the others among its link arguments).
up_to_date() {
    target="$1"
    shift
    [ -f "$target" ] || return 1
    for arg in "$@"; do
        case "$arg" in
            *.c) [ "$target" -nt "$arg" ] && [ "$target" -nt "${arg%.c}.h" ] || return 1 ;;
        esac
    done
    return 0
}

# missing_headers "H1 H2": those of the headers that the compiler cannot find, space-separated.
missing_headers() {
    sep=""
    for h in $1; do
        if ! printf '#include <%s>\n' "$h" | "$cc" -E -x c -o /dev/null - >/dev/null 2>&1; then
            printf '%s%s' "$sep" "$h"
            sep=" "
        fi
    done
}

# The geometric ops of the auto-augment policies (stoke_geometry.c) and the restart cache's content
# hash (stoke_hash.c) are part of the pixel library.
build libstoke_pixels.so stoke_pixels UNAVAILABLE "Stoke's native pixel library" "resize in Java" "" "" \
    "$here/stoke_geometry.c" "$here/stoke_hash.c" -lm
# A library of its own, so that without libjpeg's headers only region decoding is missing.
build libstoke_jpeg.so stoke_jpeg UNAVAILABLE_JPEG "Stoke's region decoder" "decode whole images" "jpeglib.h" \
    libjpeg62-turbo-dev -ljpeg
# And one for PNG and WebP, so that without their headers only those formats are missing.
build libstoke_image.so stoke_image UNAVAILABLE_IMAGE "Stoke's PNG and WebP decoder" \
    "name PNG and WebP files as not decoded" "spng.h webp/decode.h" "libspng-dev and libwebp-dev" -lspng -lwebp
# The auto-augment policies' colour operations, so that without them only augmentation is refused.
# torchvision's tensor kernels of the same ops (stoke_tensor.c, AugMix's) are part of it.
build libstoke_augment.so stoke_augment UNAVAILABLE_AUGMENT "Stoke's augmentation library" \
    "refuse --augment" "" "" "$here/stoke_tensor.c" -lm
if [ -n "$failed" ]; then
    echo "[stoke] ERROR: $here did not compile:$failed (a compile error with gcc and the headers present fails the build)" >&2
    exit 1
fi
exit 0
