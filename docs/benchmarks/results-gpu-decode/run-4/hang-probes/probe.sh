# Diagnosis only (issue 50's hung training cell): run on the device from the checkout's root.
set -u
OUT=$1; mkdir -p "$OUT"; exec > >(tee -a "$OUT/log.txt") 2>&1
SITE=/tmp/stoke-site DATA=/tmp/stoke-gpu-data
mkdir -p $SITE && tar -xJf .devcarry/site.tar.xz -C $SITE
export PYTHONPATH=$SITE LD_LIBRARY_PATH=$PWD/.devcarry/lib PYTHONUNBUFFERED=1
STOKE_JAVA_OPTS=-Xmx8g timeout 120 python3 -m stoke make-dataset --images 4096 --seed 1 --photos .devcarry/photos $DATA
[[ ${BENCH:-1} == 1 ]] && for extra in "" "--dct-scaling none"; do
  echo "--- stoke bench --decode gpu --transform train --output float32 $extra"
  python3 -m stoke bench $DATA --decode gpu --workers 16 --epochs 4 --transform train --output float32 $extra &
  pid=$!; for i in $(seq 40); do kill -0 $pid 2>/dev/null || break; sleep 1; done
  if kill -0 $pid 2>/dev/null; then echo "HUNG: bench $extra"; pkill -QUIT -x java; sleep 3; pkill -9 -x java; fi
  wait $pid
done
timeout 200 python3 .devcarry/probe.py --data $DATA --out "$OUT" --limit 45 --modes ${MODES:-train} --decodes ${DECODES:-gpu,auto}
