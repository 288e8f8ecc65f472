#!/usr/bin/env bash
# The GPU decode's checks on a real GPU machine (issue 50), from the self-contained wheel alone.
#
#   benchmarks/gpu/decode-on-device.sh WHEEL LIBDIR OUT
#
# WHEEL:  the wheel ./stoke wheel builds; a folder its contents were unpacked into (used as it is);
#         or an xz'd tar of those contents (unpacked here). The wheel is about 67 MB, more than a
#         device call carries: with its jars stored rather than deflated, xz brings the contents to
#         about 35 MB (docs/benchmarks/results-gpu-decode/README.md says how);
# LIBDIR: libturbojpeg.so.0 and libjpeg.so.62 from the OS packages, for a machine without them;
# OUT:    where the results go, 8 files at most (what a device call brings back):
#           machine.txt             the GPU, driver, Python stack, Stoke;
#           gpu-check-decode.txt    stoke gpu-check --decode: nvJPEG through Stoke's binding against
#                                   TurboJPEG, pixels and rates, on the data set and on the PHOTOS themselves;
#           dataloader-decode.json  benchmarks/gpu/dataloader_decode.py: stoke.DataLoader with decode=cpu,
#                                   gpu and auto, batches to the device, whether they arrived as CUDA tensors,
#                                   and decode=gpu's pixels against cpu's per image;
#           bench.txt, bench.jsonl  stoke bench --decode cpu|gpu|auto at 16 CPU threads, no model, with the
#                                   CPU seconds of the whole process, and gpu and auto with each batch's
#                                   nvJPEG call split over 2 and 4 threads (--decode-gpu-threads; BENCH_RUNS
#                                   names the rows, auto-shares being auto with --decode-cpu-batches 0, and
#                                   X-cache X through a restart cache that stoke cache fills first, timed,
#                                   X-cold X through an empty one, filled from the idle time as it runs);
#                                   then ResNet50 v2's training transform;
#           torchvision-decode.json benchmarks/gpu/decode_gpu.py: torchvision's batched decode_jpeg on the
#                                   GPU, alone and with the eval resize, on the same files;
#           model-decode.json       benchmarks/gpu/model_decode.py: resnet50 inference and training (bf16,
#                                   batch 256) fed by decode=cpu|gpu|auto, beside the model's own rate;
#           upsampling-diff.json    benchmarks/gpu/upsampling_diff.py: nvJPEG's pixels against TurboJPEG's
#                                   with libjpeg's smooth chroma upsampling and with its plain one;
#           hang.json               (STEPS=hang only) resnet50 training fed by decode=gpu, HANG_CELLS fresh
#                                   loaders in one process: the cell that hung in run-4; a cell that hangs
#                                   has its producer's stall report (every thread's stack) in log.txt;
#           log.txt                 everything (machine.txt is left out when all nine steps run).
#
# The data: with PHOTOS (a folder of photographs carried along), IMAGES ImageNet-like JPEGs cut from
# them by `stoke make-dataset --photos` (ImageNet's sizes, qualities, progressive and gray shares);
# without, procedural ones. The machine needs python3 with torch (CUDA), torchvision (whose CUDA
# wheel bundles libnvjpeg) and psutil, and an NVIDIA driver. Steps run in the order of what matters
# most (pixels, then rates, then the model); each has its own time limit, and a failed step is said
# and the next one runs. Environment: IMAGES (4096), PHOTOS, BATCH (128), WORKERS (16), CELL_SECONDS (8),
# GPU_CHECK_IMAGES (256: gpu-check compares each image with TurboJPEG's on one thread), MODEL_DECODES
# (cpu,gpu,auto), MODEL_MODES (infer,train), HANG_CELLS (4), BENCH_RUNS (cpu gpu auto gpu-t2 auto-t2 gpu-t4),
# STEPS (which to run: check,dataloader,bench,
# diff,torchvision,model,train, all by default; and hang, only when named).
set -u
WHEEL=$(realpath "$1") LIBDIR=$(realpath "$2") OUT=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
IMAGES=${IMAGES:-4096} BATCH=${BATCH:-128} PHOTOS=${PHOTOS:-} WORKERS=${WORKERS:-16} CELL_SECONDS=${CELL_SECONDS:-8}
GPU_CHECK_IMAGES=${GPU_CHECK_IMAGES:-256} MODEL_DECODES=${MODEL_DECODES:-cpu,gpu,auto} MODEL_MODES=${MODEL_MODES:-infer,train}
HANG_CELLS=${HANG_CELLS:-4} BENCH_RUNS=${BENCH_RUNS:-cpu gpu auto gpu-t2 auto-t2 gpu-t4}
STEPS=${STEPS:-check,dataloader,bench,diff,torchvision,model,train}
runs() { [[ ,$STEPS, == *,$1,* ]]; }
DATA=/tmp/stoke-gpu-data SITE=/tmp/stoke-site CACHE=/tmp/stoke-gpu-restart-cache
started=$(date +%s)
step() { echo; echo "=== $1 ($(( $(date +%s) - started )) s in)"; }
failed=()

if [[ -d $WHEEL ]]; then
  SITE=$WHEEL
  step "the wheel's contents, unpacked in $SITE"
elif [[ $WHEEL == *.tar.xz ]]; then
  step "the wheel's contents, unpacked from $WHEEL into $SITE"
  rm -rf "$SITE" && mkdir -p "$SITE" && { tar -xJf "$WHEEL" -C "$SITE" || python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$WHEEL" "$SITE"; } \
    || { echo "unpacking failed"; exit 1; }
else
  step "install the wheel into $SITE"
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHEEL" || { echo "pip install failed"; exit 1; }
fi
[[ -d $SITE/stoke/_java ]] || { echo "$SITE holds no stoke/_java: not a Stoke wheel's contents"; exit 1; }
export PYTHONPATH=$SITE LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1

step "machine"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo)"
  python3 -c 'import sys, torch, torchvision; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__)'
  python3 -m stoke --version
} 2>&1 | if [[ $STEPS == check,dataloader,bench,diff,torchvision,model,train ]]; then cat; else tee "$OUT/machine.txt"; fi

step "stoke make-dataset --images $IMAGES ${PHOTOS:+--photos $PHOTOS}"
rm -rf "$DATA" "$CACHE" "$CACHE-cold"
STOKE_JAVA_OPTS=-Xmx8g timeout 120 python3 -m stoke make-dataset --images "$IMAGES" --seed 1 ${PHOTOS:+--photos "$PHOTOS"} "$DATA" \
  || failed+=("make-dataset")

runs check && step "stoke gpu-check --decode: nvJPEG through Stoke's binding against TurboJPEG" && {
  echo "--- the data set ($DATA), its first $GPU_CHECK_IMAGES images"
  timeout 90 python3 -m stoke gpu-check --iterations 3 --decode "$DATA" --decode-images "$GPU_CHECK_IMAGES" \
    --decode-batch "$BATCH" || echo "(exit $?)"
  if [[ -n $PHOTOS ]]; then
    echo "--- the photographs themselves ($PHOTOS)"
    timeout 60 python3 -m stoke gpu-check --iterations 3 --decode "$PHOTOS" --decode-images "$IMAGES" \
      --decode-batch "$BATCH" || echo "(exit $?)"
  fi
} 2>&1 | tee "$OUT/gpu-check-decode.txt"

if runs dataloader; then
  step "stoke.DataLoader(decode=cpu|gpu|auto): the same files to the device, $WORKERS workers (dataloader_decode.py)"
  timeout 120 python3 "$HERE/dataloader_decode.py" --data "$DATA" --workers "$WORKERS" \
    --out "$OUT/dataloader-decode.json" || failed+=("dataloader_decode.py")
fi

TIMEFORMAT='process: %R s wall, %U s user + %S s system CPU'
runs bench && step "stoke bench --decode cpu|gpu|auto: the same files, $WORKERS CPU threads, eval transform, no model" && {
  # auto-shares: auto with --decode-cpu-batches 0, the CPU threads taking shares of the GPU's batches
  # only (no whole batches), beside auto's default in the same run. gpu-tN, auto-tN: each batch's
  # nvJPEG call split over N threads (--decode-gpu-threads N).
  for run in $BENCH_RUNS; do
    decode=${run%%-*} extra=()
    [[ $run == auto-shares ]] && extra=(--decode-cpu-batches 0)
    [[ $run == *-t[0-9]* ]] && extra=(--decode-gpu-threads "${run##*-t}")
    if [[ $run == *-cache ]]; then # through a restart cache, filled once by stoke cache on every core
      if [[ ! -d $CACHE ]]; then
        echo "--- stoke cache $DATA --restart-cache-dir $CACHE --workers $WORKERS"
        time timeout 120 python3 -m stoke cache "$DATA" --restart-cache-dir "$CACHE" --workers "$WORKERS" || echo "(exit $?)"
      fi
      extra+=(--restart-cache-dir "$CACHE")
    fi
    if [[ $run == *-cold ]]; then # as a user starts: an empty folder, filled from the idle time
      rm -rf "$CACHE-cold" && extra+=(--restart-cache-dir "$CACHE-cold")
    fi
    echo "--- stoke bench $DATA --decode $decode ${extra[*]} --workers $WORKERS --epochs 6"
    time timeout 60 python3 -m stoke bench "$DATA" --decode "$decode" "${extra[@]}" --workers "$WORKERS" --epochs 6 \
      --json /tmp/bench-$run.json || echo "(exit $?)"
    [[ -f /tmp/bench-$run.json ]] && python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
      /tmp/bench-$run.json >> "$OUT/bench.jsonl"
  done
} 2>&1 | tee "$OUT/bench.txt"

if runs diff; then
  step "nvJPEG's pixels against TurboJPEG's two chroma upsamplings (upsampling_diff.py)"
  timeout 90 python3 "$HERE/upsampling_diff.py" --data "$DATA" --out "$OUT/upsampling-diff.json" --images 512 \
    --turbojpeg "$LIBDIR/libturbojpeg.so.0" || failed+=("upsampling_diff.py")
fi

if runs torchvision; then
  step "torchvision's batched decode_jpeg on the GPU (decode_gpu.py)"
  timeout 90 python3 "$HERE/decode_gpu.py" --data "$DATA" --out "$OUT/torchvision-decode.json" \
    --images "$IMAGES" --batch "$BATCH" || failed+=("decode_gpu.py")
fi

if runs model; then
  step "resnet50 inference and training fed by decode=$MODEL_DECODES (model_decode.py)"
  timeout 260 python3 "$HERE/model_decode.py" --data "$DATA" --out "$OUT/model-decode.json" --workers "$WORKERS" \
    --seconds "$CELL_SECONDS" --decodes "$MODEL_DECODES" --modes "$MODEL_MODES" || failed+=("model_decode.py")
fi

# The training cell that hung in run-4 (decode=gpu), again and again: each cell that hangs prints the
# producer's stall report (every thread's stack) at half the loaders' batch timeout, then fails.
if runs hang; then
  step "resnet50 training fed by decode=gpu, $HANG_CELLS cells (model_decode.py, the stall report on a hang)"
  cells=$(printf 'gpu,%.0s' $(seq "$HANG_CELLS")); cells=${cells%,}
  timeout $(( 30 + 60 * HANG_CELLS )) python3 "$HERE/model_decode.py" --data "$DATA" --out "$OUT/hang.json" \
    --workers "$WORKERS" --seconds "$CELL_SECONDS" --decodes "$cells" --modes train --batch-timeout 50 \
    || failed+=("model_decode.py (hang)")
fi

# The GPU decodes and resizes, the CPU threads run the policy and the erasing after (the host's tail).
runs train && step "stoke bench, ResNet50 v2's training transform (TrivialAugmentWide, RandomErasing 0.1, float32)" && {
  for decode in cpu gpu; do
    echo "--- stoke bench $DATA --decode $decode --workers $WORKERS --epochs 4, ResNet50 v2's training transform"
    time timeout 45 python3 -m stoke bench "$DATA" --decode "$decode" --workers "$WORKERS" --epochs 4 --transform train \
      --crop 176 --augment ta_wide --erase 0.1 --output float32 --dct-scaling none \
      || echo "(exit $?)"
  done
} 2>&1 | tee -a "$OUT/bench.txt"

step "done"
echo "failed steps: ${failed[*]:-none}"
