#!/usr/bin/env bash
# The C build fails loudly (`./stoke test` runs this once gcc and Maven are set up, before Maven):
#   - where gcc and the headers are present, a compile error in native/pixels or the CUDA driver's
#     test double (ffm-bindings/src/test/native/cuda-double)
#     makes its build.sh exit 1, naming the file, and fails the Maven build that runs it;
#   - only a missing compiler (PATH without gcc, CC naming none) or a missing header (jpeglib.h,
#     spng.h, cuda.h) skips a library, with exit 0, the reason in its UNAVAILABLE file and a warning.
# Everything runs on copies under a temporary folder: the checkout's sources and target/ are never
# touched.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
failures=0
check() { # check <what> <command...>
  local what="$1"; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}
skip() { echo "skipped: $1"; }

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/native" "$tmp/src/ffm-bindings/src/test/native"
cp -r "$ROOT/native/pixels" "$ROOT/native/cuda" "$tmp/src/native/"
cp -r "$ROOT/ffm-bindings/src/test/native/cuda-double" "$tmp/src/ffm-bindings/src/test/native/"
cp "$ROOT/pom.xml" "$tmp/src/"
cp "$ROOT/ffm-bindings/pom.xml" "$tmp/src/ffm-bindings/"
pixels="$tmp/src/native/pixels"
double="$tmp/src/ffm-bindings/src/test/native/cuda-double"
cuda_h="${CUDA_HOME:-/usr/local/cuda}/include/cuda.h"
# A gcc that compiles, not only one on PATH: design.md hides gcc from a whole run behind a stub that
# exits 127, and then the checks that need a compiler skip, saying so, as the build does.
gcc_works=0
printf 'int main(void) { return 0; }\n' | gcc -x c -o /dev/null - >/dev/null 2>&1 && gcc_works=1
have_header() { printf '#include <%s>\n' "$1" | gcc -E -x c -o /dev/null - >/dev/null 2>&1; }
# break FILE: a syntax error at its end; fix FILE: the original back.
break_file() { cp "$1" "$1.orig"; echo 'int stoke_broken_on_purpose(void) { return }' >>"$1"; }
fix_file() { mv "$1.orig" "$1"; }
# run_build SCRIPT OUT [VAR=VALUE...]: rc and stderr of one build into $rc and $err.
run_build() {
  local script="$1" out="$2"; shift 2
  rm -rf "$out"; rc=0
  env "$@" sh "$script" "$out" 2>"$tmp/err" >/dev/null || rc=$?
  err="$(cat "$tmp/err")"
}
contains() { grep -qF -- "$2" <<<"$1"; }

# 1. A compile error fails, naming the file; the other libraries are still tried.
if (( gcc_works )); then
  run_build "$pixels/build.sh" "$tmp/ok"
  check "native/pixels builds as it is (rc $rc)" test "$rc" -eq 0 -a -f "$tmp/ok/libstoke_pixels.so"
  for src in stoke_pixels.c stoke_jpeg.c stoke_image.c; do
    case $src in
      stoke_jpeg.c) have_header jpeglib.h || { skip "a broken $src (no jpeglib.h: it is skipped, as below)"; continue; } ;;
      stoke_image.c) have_header spng.h && have_header webp/decode.h \
        || { skip "a broken $src (no spng.h or webp/decode.h: it is skipped, as below)"; continue; } ;;
    esac
    break_file "$pixels/$src"
    run_build "$pixels/build.sh" "$tmp/broken"
    check "a broken $src exits 1 (got $rc)" test "$rc" -eq 1
    check "a broken $src is named with gcc's error" contains "$err" "$pixels/$src:"
    check "a broken $src is named in the build's ERROR line" contains "$err" "[stoke] ERROR: $pixels did not compile: $src"
    check "a broken $src leaves no UNAVAILABLE file (nothing at run time may pass over it)" \
      bash -c '! ls "$1"/UNAVAILABLE* >/dev/null 2>&1' _ "$tmp/broken"
    fix_file "$pixels/$src"
  done
  if [[ -f "$cuda_h" ]]; then
    break_file "$double/cuda_double.c"
    run_build "$double/build.sh" "$tmp/broken-double"
    check "a broken cuda_double.c exits 1 (got $rc)" test "$rc" -eq 1
    check "a broken cuda_double.c is named" contains "$err" "could not compile $double/cuda_double.c"
    fix_file "$double/cuda_double.c"
    if printf 'int main() { return 0; }\n' | g++ -x c++ -o /dev/null - >/dev/null 2>&1; then
      kernel="$tmp/src/native/cuda/resize.cu"
      break_file "$kernel"
      run_build "$double/build.sh" "$tmp/broken-kernel"
      check "a broken device kernel exits 1 (got $rc)" test "$rc" -eq 1
      check "a broken device kernel is named with g++'s error" contains "$err" "resize.cu:"
      fix_file "$kernel"
    else
      skip "a broken device kernel (no working g++: the double is skipped, saying so)"
    fi
  else
    skip "a broken cuda_double.c (no $cuda_h: the double is skipped, as below)"
  fi
else
  skip "a broken C file (no working gcc on PATH: the build skips it, as checked below)"
fi

# 2. Only a missing compiler skips, even past a broken file: PATH without gcc, CC naming none, and
# a gcc that compiles nothing (design.md's way of hiding gcc from a whole test run).
break_file "$pixels/stoke_pixels.c"
break_file "$double/cuda_double.c"
mkdir -p "$tmp/bin" "$tmp/hide"
for tool in sh mkdir rm cat head dirname printf; do
  ln -s "$(command -v "$tool")" "$tmp/bin/$tool"
done
printf '#!/bin/sh\nexit 127\n' >"$tmp/hide/gcc"; chmod +x "$tmp/hide/gcc"
for how in "PATH=$tmp/bin" "CC=$tmp/no-such-gcc" "PATH=$tmp/hide:$PATH"; do
  run_build "$pixels/build.sh" "$tmp/nocc" "$how"
  check "native/pixels with ${how:0:40} exits 0 (got $rc)" test "$rc" -eq 0
  check "native/pixels with ${how:0:40}: UNAVAILABLE says no (working) C compiler" \
    grep -qE "no (working )?C compiler" "$tmp/nocc/UNAVAILABLE"
  check "native/pixels with ${how:0:40}: a warning on stderr" \
    contains "$err" "[stoke] WARNING: Stoke's native pixel library not built: no "
  run_build "$double/build.sh" "$tmp/nocc-double" "$how"
  check "the cuda double with ${how:0:40} exits 0 (got $rc), UNAVAILABLE says why" \
    bash -c 'test "$1" -eq 0 && grep -qE "no (working )?C compiler" "$2/UNAVAILABLE"' _ "$rc" "$tmp/nocc-double"
done
fix_file "$pixels/stoke_pixels.c"
fix_file "$double/cuda_double.c"

# 3. Only a missing header skips, even past a broken file: gcc with a root where libjpeg's,
# libspng's and libwebp's headers are not (everything else is the machine's own); CUDA_HOME
# without cuda.h.
if (( gcc_works )); then
  root="$tmp/root"
  mkdir -p "$root/usr/include"
  for e in /usr/include/*; do
    case "${e##*/}" in jpeglib.h | spng.h | webp) ;; *) ln -s "$e" "$root/usr/include/" ;; esac
  done
  ln -s /usr/lib "$root/usr/lib"; ln -s /lib "$root/lib"; [[ ! -e /lib64 ]] || ln -s /lib64 "$root/lib64"
  printf '#!/bin/sh\nexec gcc --sysroot=%s "$@"\n' "$root" >"$tmp/gcc-without-headers"
  chmod +x "$tmp/gcc-without-headers"
  break_file "$pixels/stoke_jpeg.c"
  run_build "$pixels/build.sh" "$tmp/nohdr" "CC=$tmp/gcc-without-headers"
  check "native/pixels without the headers exits 0 (got $rc)" test "$rc" -eq 0
  check "without the headers the pixel library is still built" test -f "$tmp/nohdr/libstoke_pixels.so"
  check "without jpeglib.h: UNAVAILABLE_JPEG names it" grep -q "its headers are missing (jpeglib.h)" "$tmp/nohdr/UNAVAILABLE_JPEG"
  check "without spng.h and webp/decode.h: UNAVAILABLE_IMAGE names them" \
    grep -q "its headers are missing (spng.h webp/decode.h)" "$tmp/nohdr/UNAVAILABLE_IMAGE"
  check "without the headers: a warning on stderr" contains "$err" "[stoke] WARNING: Stoke's region decoder not built"
  fix_file "$pixels/stoke_jpeg.c"
  break_file "$double/cuda_double.c"
  run_build "$double/build.sh" "$tmp/nocuda" "CUDA_HOME=$tmp/no-cuda"
  check "the cuda double without cuda.h exits 0 (got $rc), UNAVAILABLE names it" \
    bash -c 'test "$1" -eq 0 && grep -q "no $2/include/cuda.h" "$3/UNAVAILABLE"' _ "$rc" "$tmp/no-cuda" "$tmp/nocuda"
  fix_file "$double/cuda_double.c"
else
  skip "a missing header (no working gcc on PATH: the build skips for want of a compiler, as checked above)"
fi

# 4. The Maven build that runs the scripts (ffm-bindings' generate-resources: native/pixels;
# generate-test-resources: ffm-bindings/src/test/native/cuda-double) fails on a broken file, on copies of the real poms.
if (( gcc_works )) && command -v mvn >/dev/null; then
  mvn_copy() { # mvn_copy PHASE: rc and output of Maven over the copy into $rc and $err.
    rc=0
    err="$(MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow" \
      mvn -B --no-transfer-progress -Dstyle.color=never -f "$tmp/src/ffm-bindings/pom.xml" "$1" 2>&1)" || rc=$?
  }
  break_file "$pixels/stoke_pixels.c"
  mvn_copy generate-resources
  check "Maven fails on a broken stoke_pixels.c (rc $rc)" test "$rc" -ne 0
  check "Maven's output names stoke_pixels.c" contains "$err" "$pixels/stoke_pixels.c:"
  fix_file "$pixels/stoke_pixels.c"
  if [[ -f "$cuda_h" ]]; then
    break_file "$double/cuda_double.c"
    mvn_copy generate-test-resources
    check "Maven fails on a broken cuda_double.c (rc $rc)" test "$rc" -ne 0
    check "Maven's output names cuda_double.c" contains "$err" "$double/cuda_double.c"
    fix_file "$double/cuda_double.c"
  fi
  mvn_copy generate-test-resources
  check "Maven passes once the files are whole again (rc $rc)" test "$rc" -eq 0
else
  skip "the Maven build over a broken C file (no working gcc or no mvn on PATH)"
fi

(( failures == 0 )) || { echo "tests/test_native_build.sh: $failures check(s) FAILED"; exit 1; }
echo "tests/test_native_build.sh: all checks passed"
