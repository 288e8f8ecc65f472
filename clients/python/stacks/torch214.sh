#!/usr/bin/env bash
# The Python package's tests on today's PyTorch: torch 2.14.1, torchvision 0.29.1, Pillow 12.3 and
# numpy 2.4, with timm, open_clip, Lightning, datasets and ONNX Runtime, in a venv of the host's
# Python 3.11, with the host's Temurin 25. The wheels come from
# the machine's local package mirror; nothing is downloaded. ./stoke test runs it after Debian 12's
# and Debian 13's stacks, so that a release of torchvision newer than Debian's is tested every run.
#
#   clients/python/stacks/torch214.sh venv [DIR]               make (or reuse) the venv
#   clients/python/stacks/torch214.sh test [DIR] [ARGS...]     run clients/python/tests with it
#   clients/python/stacks/torch214.sh run [DIR] -- CMD...      run CMD with the venv's bin first on
#                                                             PATH, in the checkout
#
# DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/stoke/torch214-venv, kept between runs and made
# again when the pinned list below changes. ARGS go to unittest (e.g. -k test_wheel). The mirror:
# $STOKE_PYPI_INDEX and $STOKE_PYPI_EXTRA_INDEX, by default file:///opt/pypi/simple and
# file:///opt/pypi-more/simple (what `pip config list` shows on this machine image).
#
# Exit status: 0 when done, 3 when this machine cannot do it (no mirror holding torch 2.14.1, no
# Python 3.11 with venv), anything else when it failed. ./stoke test skips the stack on 3, saying
# so, except under CI=true, where it fails.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CHECKOUT="$(cd "$HERE/../../.." && pwd)"
DEFAULT_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/stoke/torch214-venv"
INDEX="${STOKE_PYPI_INDEX:-file:///opt/pypi/simple}"
EXTRA_INDEX="${STOKE_PYPI_EXTRA_INDEX:-file:///opt/pypi-more/simple}"
PYTHON=/usr/bin/python3
# The wheels are built for CPython 3.11 (cp311), Debian 12's python3.
PYTHON_VERSION=3.11

# Issue 47's install, as it is: --no-deps because two of torch's dependencies (cuda-bindings,
# triton) are not in the mirror, and `import torch` runs on the CPU without them; so torch's other
# dependencies are named one by one. The pure-Python ones are not pinned in the issue: the mirror
# holds one release of each, and the venv's `pip freeze` is printed with every run.
WHEELS=(
  torch==2.14.1 torchvision==0.29.1 pillow==12.3.0 numpy==2.4.6
  nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cufft nvidia-cufile nvidia-curand
  nvidia-cusolver nvidia-cusparse nvidia-nvjitlink nvidia-nvtx nvidia-cudnn-cu13==9.24.0.43
  nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.30.7 nvidia-nvshmem-cu13==3.4.5
  filelock typing-extensions setuptools sympy networkx jinja2 fsspec mpmath markupsafe packaging wheel
)
# Issue 48's libraries around PyTorch, ONNX for `stoke embed`'s exported towers, and torchdata
# (its torchdata.nodes is one of the harness's peers, issue 51). They are
# installed first, with their dependencies; the resolver then picks torch 2.13+cpu (2.14.1's
# cuda-bindings and triton are not in the mirror), so WHEELS are forced back in after, --no-deps.
LIBRARIES=(
  timm==1.0.29 open_clip_torch==3.3.0 lightning==2.6.6 datasets==5.0.1 pyarrow==25.0.1
  onnx onnxruntime onnxscript torchdata==0.11.0
)
# The stamp says what a finished venv was made from; a venv whose stamp differs is made again.
# Bump the layout number when what this script does to a venv changes.
STAMP_NAME=.stoke-venv-stamp
STAMP="python=$PYTHON_VERSION
layout=2
libraries=${LIBRARIES[*]}
wheels=${WHEELS[*]}"

say() { printf 'torch214: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
cannot() { say "CANNOT: $*"; exit 3; }

# The mirror must hold torch 2.14.1: a machine without it (a user's) cannot make this stack, and
# pip would otherwise go to the public index and fail minutes later, after its retries.
check_mirror() {
  local url folder
  for url in "$INDEX" "$EXTRA_INDEX"; do
    [[ "$url" == file://* ]] || return 0 # a remote index: pip says what it lacks
    folder="${url#file://}"
    if grep -qs 'torch-2\.14\.1-' "$folder/torch/index.html"; then return 0; fi
  done
  cannot "no local package mirror with torch 2.14.1 here ($INDEX, $EXTRA_INDEX); set STOKE_PYPI_INDEX and STOKE_PYPI_EXTRA_INDEX to one that has the wheels"
}

check_python() {
  [[ -x "$PYTHON" ]] || cannot "$PYTHON is missing: the venv is made from Debian 12's Python $PYTHON_VERSION"
  local v
  v=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [[ "$v" == "$PYTHON_VERSION" ]] || cannot "$PYTHON is Python $v, and the mirror's wheels are for $PYTHON_VERSION (cp311)"
  "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null \
    || cannot "$PYTHON cannot make a venv with pip (apt-get install -y python3-venv)"
}

cmd_venv() {
  local dir="${1:-$DEFAULT_DIR}"
  mkdir -p "$(dirname "$dir")"
  dir="$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")"
  # Two at once would install into one folder; the second waits and then reuses the venv.
  exec {lock}>"$dir.lock"
  flock "$lock"
  if [[ -f "$dir/$STAMP_NAME" && "$(cat "$dir/$STAMP_NAME")" == "$STAMP" ]]; then
    say "reusing $dir ($(du -sh "$dir" 2>/dev/null | cut -f1), made from the same pinned list)"
    return 0
  fi
  # The mirror first: a machine without it (a user's) cannot make this stack whatever its Python,
  # and saying so needs no python3-venv, which ./stoke test installs only after its quick checks.
  check_mirror
  check_python
  [[ -e "$dir" ]] && say "$dir is incomplete or was made from another pinned list: making it again"
  rm -rf "$dir"
  say "making a venv in $dir from the local mirror (torch 2.14.1 and the CUDA wheels, about 4.6 GB); a few minutes..."
  local started=$SECONDS
  "$PYTHON" -m venv "$dir" || die "$PYTHON -m venv $dir failed"
  # The stamp is written last, so a venv left half-made (a killed pip) is made again next time.
  if ! { "$dir/bin/python" -m pip install --quiet --index-url "$INDEX" --extra-index-url "$EXTRA_INDEX" \
      "${LIBRARIES[@]}" \
    && "$dir/bin/python" -m pip install --quiet --no-deps --force-reinstall --index-url "$INDEX" \
      --extra-index-url "$EXTRA_INDEX" "${WHEELS[@]}"; } >"$dir.log" 2>&1; then
    tail -n 20 "$dir.log" >&2
    die "pip install failed (the whole log: $dir.log)"
  fi
  printf '%s\n' "$STAMP" >"$dir/$STAMP_NAME"
  say "made $dir in $((SECONDS - started)) s, $(du -sh "$dir" | cut -f1) on disk"
}

# Checks the venv and builds the jar, for test and run.
ready_venv() {
  local dir="$1"
  [[ -f "$dir/$STAMP_NAME" && "$(cat "$dir/$STAMP_NAME")" == "$STAMP" ]] \
    || die "$dir is not a finished venv from this pinned list: run $0 venv $dir first"
  "$CHECKOUT/stoke" >/dev/null || die "building the jar failed (./stoke)"
  # The JDK ./stoke runs with (its find_jdk), exported as ./stoke test exports it: the soak's S3
  # server starts $JAVA_HOME/bin/java, and the java on PATH may be older than 25.
  JAVA_HOME=$(bash -c 'source "$1/stoke" && find_jdk && printf %s "$JAVA_HOME"' _ "$CHECKOUT") \
    || die "no JDK >= 25 (./stoke's find_jdk, above)"
  export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
  "$dir/bin/python" -c "import sys, numpy, PIL, torch, torchvision
assert torch.__version__.startswith('2.14.1'), f'torch {torch.__version__}, not 2.14.1: the forced reinstall did not hold'
import timm, open_clip, lightning, datasets, pyarrow, onnxruntime
print(f'torch214: python {sys.version.split()[0]}, torch {torch.__version__}, torchvision {torchvision.__version__}, numpy {numpy.__version__}, PIL {PIL.__version__}, timm {timm.__version__}, open_clip {open_clip.__version__}, lightning {lightning.__version__}, datasets {datasets.__version__}', file=sys.stderr)" \
    || die "$dir cannot import torch 2.14.1 and the libraries around it"
  say "the venv holds: $("$dir/bin/python" -m pip freeze --all 2>/dev/null | paste -sd' ')"
}

# The venv's bin first on PATH and VIRTUAL_ENV set, as `source bin/activate` would: a test that
# starts `python3` or ./stoke test_python gets the venv's.
# STOKE_TEST_LIBRARIES=required: the libraries this venv holds fail a test when absent, not skip it.
in_venv() {
  local dir="$1"; shift
  VIRTUAL_ENV="$dir" PATH="$dir/bin:$PATH" STOKE_HOME="$CHECKOUT" STOKE_TEST_LIBRARIES=required HF_HUB_OFFLINE=1 "$@"
}

cmd_test() {
  local dir="$DEFAULT_DIR"
  if [[ $# -gt 0 && "$1" != -* ]]; then dir="$1"; shift; fi
  ready_venv "$dir"
  local started=$SECONDS rc=0
  (cd "$CHECKOUT" && in_venv "$dir" "$dir/bin/python" -m unittest discover -s "$CHECKOUT/clients/python/tests" -v "$@") || rc=$?
  say "torch 2.14.1: the Python tests $([[ $rc -eq 0 ]] && echo passed || echo "FAILED (exit $rc)") in $((SECONDS - started)) s"
  return "$rc"
}

cmd_run() {
  local dir="$DEFAULT_DIR"
  if [[ $# -gt 0 && "$1" != -- ]]; then dir="$1"; shift; fi
  [[ $# -gt 1 && "$1" == -- ]] || die "usage: $0 run [DIR] -- CMD [ARGS...]"
  shift
  ready_venv "$dir"
  cd "$CHECKOUT"
  in_venv "$dir" "$@"
}

case "${1:-}" in
  venv) shift; cmd_venv "$@" ;;
  test) shift; cmd_test "$@" ;;
  run) shift; cmd_run "$@" ;;
  *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
