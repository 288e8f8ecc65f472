#!/usr/bin/env bash
# Stoke on a real GPU machine, from the self-contained wheel alone (no JDK, no checkout build).
#
#   benchmarks/gpu/on-device.sh WHEEL LIBDIR OUT
#
# WHEEL:  the wheel ./stoke wheel builds (its jlinked runtime is the Java);
# LIBDIR: libturbojpeg.so.0 and libjpeg.so.62 from the OS packages (libturbojpeg0, libjpeg62-turbo),
#         for a machine that has none;
# OUT:    where the results go (at most 8 files): machine.txt, gpu-check.txt, bench.txt, and
#         loader_gpu.py's meta.json, copy.json, cells.jsonl and summary.md; log.txt is everything.
#
# The machine needs python3 with torch (CUDA), torchvision and psutil, and an NVIDIA driver. Each
# step has its own time limit, and a failed step is said and the next one runs: whatever ran comes back.
# Environment: IMAGES (6000), WORKERS (1,2,4,8,16), CELL_SECONDS (6), MODEL (resnet50).
set -u
WHEEL=$(realpath "$1") LIBDIR=$(realpath "$2") OUT=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
IMAGES=${IMAGES:-6000} WORKERS=${WORKERS:-1,2,4,8,16} CELL_SECONDS=${CELL_SECONDS:-6} MODEL=${MODEL:-resnet50}
DATA=/tmp/stoke-gpu-data SITE=/tmp/stoke-site
started=$(date +%s)
step() { echo; echo "=== $1 ($(( $(date +%s) - started )) s in)"; }
failed=()

step "install the wheel into $SITE"
python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHEEL" || { echo "pip install failed"; exit 1; }
export PYTHONPATH=$SITE LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1

step "machine"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv
  nvidia-smi | head -4 | tail -2
  echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo)"
  free -g | head -2
  uname -r
  python3 -c 'import sys, torch, torchvision, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__, "numpy", numpy.__version__)'
  python3 -m stoke --version
  "$SITE/stoke/_java/runtime/bin/java" -version 2>&1 | head -1
} 2>&1 | tee "$OUT/machine.txt"

step "stoke gpu-check"
timeout 90 python3 -m stoke gpu-check 2>&1 | tee "$OUT/gpu-check.txt"
[[ ${PIPESTATUS[0]} == 0 ]] || failed+=("gpu-check")

step "stoke make-dataset --images $IMAGES"
rm -rf "$DATA"
# make-dataset writes with one thread per 128 MiB of heap: -Xmx4g gives it every core.
STOKE_JAVA_OPTS=-Xmx4g timeout 120 python3 -m stoke make-dataset --images "$IMAGES" --seed 1 "$DATA" || failed+=("make-dataset")

step "loader_gpu.py: copies, then both loaders feeding $MODEL at $WORKERS workers"
timeout 330 python3 "$HERE/loader_gpu.py" --data "$DATA" --out "$OUT" --workers "$WORKERS" \
  --seconds "$CELL_SECONDS" --model "$MODEL" || failed+=("loader_gpu.py")

step "stoke bench through the GPU stage: float32 normalised on the host, against uint8 normalised on the device"
{
  for run in "--device host --output float32" "--device cuda --output float32" "--device cuda --output uint8 --device-normalize"; do
    echo "--- stoke bench $DATA --transform train --workers 16 --epochs 6 $run"
    # shellcheck disable=SC2086
    timeout 45 python3 -m stoke bench "$DATA" --transform train --workers 16 --epochs 6 $run || echo "(exit $?)"
  done
} 2>&1 | tee "$OUT/bench.txt"

step "done"
echo "failed steps: ${failed[*]:-none}"
