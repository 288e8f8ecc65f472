#!/usr/bin/env bash
# A Delta Lake table, an Apache Iceberg table and a plain folder over the same Parquet files, read by
# `stoke bench` side by side (docs/benchmarks/lakehouse.md): PAIRS rounds, each reading the three in
# a rotating order, warm (the page cache holding the files) and then cold (the page cache dropped
# before each process: the files, the JDK and Stoke's jars are read from disk). Each read is a fresh
# process, timed from its start to its exit as well as by bench's own figures.
#
#   benchmarks/lakehouse/side-by-side.sh DIR PAIRS OUT.csv
#
# DIR holds delta/, iceberg/ and loose/ (see docs/benchmarks/lakehouse.md for how they are made).
# Cold runs need root (/proc/sys/vm/drop_caches); without it they are skipped, saying so.
set -euo pipefail
dir=$1 pairs=$2 out=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
reads=(delta iceberg loose)
caches=(warm)
if sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
  caches+=(cold)
else
  echo "side-by-side: cannot drop the page cache (not root): the cold runs are skipped" >&2
fi
echo "pair,read,cache,images,images_per_s,time_to_first_batch_s,process_s" > "$out"
json=$(mktemp)
trap 'rm -f "$json"' EXIT
for cache in "${caches[@]}"; do
  for ((p = 1; p <= pairs; p++)); do
    for ((k = 0; k < 3; k++)); do
      read=${reads[$(((p + k) % 3))]}
      if [[ $cache == warm ]]; then
        cat "$dir/$read"/*.parquet > /dev/null
      else
        sync && echo 3 > /proc/sys/vm/drop_caches
      fi
      start=$(date +%s.%N)
      "$here/stoke" bench "$dir/$read" --batch-size 64 --json "$json" > /dev/null 2>&1
      end=$(date +%s.%N)
      python3 -S -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(",".join([sys.argv[2], sys.argv[3], sys.argv[4], str(d["images"]), "%.1f" % d["images_per_s"],
                "%.3f" % d["time_to_first_batch_s"], "%.3f" % (float(sys.argv[6]) - float(sys.argv[5]))]))
' "$json" "$p" "$read" "$cache" "$start" "$end" >> "$out"
    done
  done
done
