#!/usr/bin/env bash
# The GPU decode's checks on a real GPU machine (issue 50), from the self-contained wheel alone.
#
#   benchmarks/gpu/decode-on-device.sh WHEEL LIBDIR OUT
#
# WHEEL:  the wheel ./stoke wheel builds, or a folder its contents were unpacked into (then used as
#         it is: the wheel is about 67 MB, and an xz'd tar of its contents 55 MB, to unpack ahead);
# LIBDIR: libturbojpeg.so.0 and libjpeg.so.62 from the OS packages, for a machine without them;
# OUT:    where the results go (at most 15 files): machine.txt; gpu-check-decode.txt (stoke gpu-check
#         --decode: nvJPEG through Stoke's binding against TurboJPEG, pixels and rates, on the
#         procedural images and on PHOTOS); torchvision-decode.json and torchvision-decode-photos.json
#         (benchmarks/gpu/decode_gpu.py: torchvision's batched decode_jpeg on the GPU, alone and with
#         the eval resize, on the same files); bench.txt and bench-{cpu,gpu,auto}-*.json (stoke bench
#         on the same files at 16 CPU threads: the CPU decode, the GPU decode stage, and both sharing
#         the work; and, in bench.txt only, ResNet50 v2's training transform decoded on each); dataloader-decode-*.json (benchmarks/gpu/dataloader_decode.py: stoke.DataLoader
#         with decode=cpu, gpu and auto, batches to the device, whether they arrived as CUDA tensors
#         (device slots), and decode=gpu's pixels against cpu's per image); log.txt is everything.
#
# The machine needs python3 with torch (CUDA) and torchvision (whose CUDA wheel bundles libnvjpeg,
# found through the Python's site-packages) and an NVIDIA driver. Each step has its own time limit;
# a failed step is said and the next one runs. Environment: IMAGES (2048), PHOTOS (a folder of
# photographs carried along; steps on it are left out without one), BATCH (128).
set -u
WHEEL=$(realpath "$1") LIBDIR=$(realpath "$2") OUT=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
IMAGES=${IMAGES:-2048} BATCH=${BATCH:-128} PHOTOS=${PHOTOS:-}
DATA=/tmp/stoke-gpu-data SITE=/tmp/stoke-site
started=$(date +%s)
step() { echo; echo "=== $1 ($(( $(date +%s) - started )) s in)"; }
failed=()

if [[ -d $WHEEL ]]; then
  SITE=$WHEEL
  step "the wheel's contents, unpacked in $SITE"
  [[ -d $SITE/stoke/_java ]] || { echo "$SITE holds no stoke/_java: not an unpacked Stoke wheel"; exit 1; }
else
  step "install the wheel into $SITE"
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHEEL" || { echo "pip install failed"; exit 1; }
fi
export PYTHONPATH=$SITE LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1

step "machine"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo)"
  python3 -c 'import sys, torch, torchvision; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__)'
  python3 -m stoke --version
} 2>&1 | tee "$OUT/machine.txt"

step "stoke make-dataset --images $IMAGES"
rm -rf "$DATA"
STOKE_JAVA_OPTS=-Xmx4g timeout 120 python3 -m stoke make-dataset --images "$IMAGES" --seed 1 "$DATA" || failed+=("make-dataset")

step "stoke gpu-check --decode: nvJPEG through Stoke's binding against TurboJPEG"
{
  echo "--- procedural images ($DATA)"
  timeout 150 python3 -m stoke gpu-check --iterations 3 --decode "$DATA" --decode-images "$IMAGES" \
    --decode-batch "$BATCH" || echo "(exit $?)"
  if [[ -n $PHOTOS ]]; then
    echo "--- photographs ($PHOTOS)"
    timeout 150 python3 -m stoke gpu-check --iterations 3 --decode "$PHOTOS" --decode-images "$IMAGES" \
      --decode-batch "$BATCH" || echo "(exit $?)"
  fi
} 2>&1 | tee "$OUT/gpu-check-decode.txt"

step "torchvision's batched decode_jpeg on the GPU (decode_gpu.py)"
timeout 120 python3 "$HERE/decode_gpu.py" --data "$DATA" --out "$OUT/torchvision-decode.json" \
  --images "$IMAGES" --batch "$BATCH" || failed+=("decode_gpu.py")
if [[ -n $PHOTOS ]]; then
  timeout 120 python3 "$HERE/decode_gpu.py" --data "$PHOTOS" --out "$OUT/torchvision-decode-photos.json" \
    --images "$IMAGES" --batch "$BATCH" || failed+=("decode_gpu.py photos")
fi

step "stoke bench --decode cpu|gpu|auto: the same files, 16 CPU threads, eval transform, no model"
{
  for d in "$DATA" ${PHOTOS:+"$PHOTOS"}; do
    for decode in cpu gpu auto; do
      echo "--- stoke bench $d --decode $decode --workers 16 --epochs 4"
      timeout 60 python3 -m stoke bench "$d" --decode "$decode" --workers 16 --epochs 4 \
        --json "$OUT/bench-$decode-$(basename "$d").json" || echo "(exit $?)"
    done
  done
  # ResNet50 v2's training transform (TrivialAugmentWide, RandomErasing 0.1, float32): the GPU decodes
  # and resizes, the CPU threads run the policy and the erasing after (the host's tail).
  for decode in cpu gpu; do
    echo "--- stoke bench $DATA --decode $decode --workers 16 --epochs 4, ResNet50 v2's training transform"
    timeout 45 python3 -m stoke bench "$DATA" --decode "$decode" --workers 16 --epochs 4 --transform train \
      --crop 176 --augment ta_wide --erase 0.1 --output float32 --dct-scaling none \
      || echo "(exit $?)"
  done
} 2>&1 | tee "$OUT/bench.txt"

step "stoke.DataLoader(decode=cpu|gpu|auto): the same files to the device, 16 workers (dataloader_decode.py)"
for d in "$DATA" ${PHOTOS:+"$PHOTOS"}; do
  timeout 120 python3 "$HERE/dataloader_decode.py" --data "$d" --out "$OUT/dataloader-decode-$(basename "$d").json" \
    || failed+=("dataloader_decode $(basename "$d")")
done

step "done"
echo "failed steps: ${failed[*]:-none}"
