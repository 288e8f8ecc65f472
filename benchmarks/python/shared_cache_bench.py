#!/usr/bin/env python3
"""Two ranks on one node over remote shards, with one shared --shard-cache-dir and without (issue 45:
a shared node). One run of this script:

  1. packs the demo's built-in sample (1,000 JPEGs as they are: --max-side 100000 keeps every file's
     bytes) into shards of about 23 MB with `stoke pack`, 16 of them (the packed ones over again under
     new names), with an index.json,
  2. serves them from s3proxy on 127.0.0.1 (filesystem back end), behind a TCP relay in this script
     that counts the bytes the server sends (what the node fetched),
  3. then --repeats rounds, the cases alternating, each round two fresh Python processes started
     together, rank 0 and rank 1 of a world of 2: stoke.DataLoader("s3://bench/shared/", rank=R,
     world_size=2, shard_cache_size=...) over one epoch, each rank's cache in memory (today's default) or
     both in one shard-cache folder (a fresh one each round, so nothing is left from the last). The
     clock of each rank starts at its DataLoader and stops at its first batch and at its epoch's end.

Writes OUT/runs.jsonl and OUT/summary.md (medians).
  python3 benchmarks/python/shared_cache_bench.py --out docs/benchmarks/results-shared-cache [--repeats 3]
  python3 benchmarks/python/shared_cache_bench.py --out /tmp/smoke --repeats 1 --shards 2   # a smoke check
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import shards_bench  # noqa: E402  (s3proxy's start, the checkout's ./stoke)

SAMPLE = Path.home() / ".cache" / "stoke" / "imagenet-sample-1000-v1"

DRIVER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
rank, folder = int(sys.argv[3]), sys.argv[4]
start = time.perf_counter()
import stoke
kw = {"shard_cache_dir": folder} if folder != "-" else {}
loader = stoke.DataLoader(sys.argv[1], batch_size=64, num_workers=2, shard_cache_size="2G", rank=rank, world_size=2,
                          **kw)
first, n = None, 0
for batch in loader:
    if first is None:
        first = time.perf_counter() - start
    n += 1
epoch = time.perf_counter() - start
loader.close() if hasattr(loader, "close") else None
print(json.dumps({"rank": rank, "first_batch_s": first, "epoch_s": epoch, "batches": n}))
"""


class CountingRelay:
    """A TCP relay on 127.0.0.1 to the server at `port`, counting the bytes the server sends back."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.sent = 0
        self.lock = threading.Lock()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, count: bool) -> None:
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if count:
                    with self.lock:
                        self.sent += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def take(self) -> int:
        """Bytes sent since the last take."""
        with self.lock:
            n, self.sent = self.sent, 0
        return n


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("--work", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "stoke-shared-cache-bench"))
    a = p.parse_args()
    out, work = Path(a.out), Path(a.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    if not SAMPLE.exists():
        shards_bench.sh([shards_bench.STOKE, "demo"], stdout=subprocess.DEVNULL)
    pack = work / "pack"
    if not (pack / "index.json").exists():
        shards_bench.sh([shards_bench.STOKE, "pack", str(SAMPLE), "--out", str(pack), "--max-side", "100000",
                         "--shard-size", "23M"], stdout=subprocess.DEVNULL)
    packed = json.loads((pack / "index.json").read_text())["shardlist"]
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    proc, endpoint = shards_bench.start_s3proxy(work, empty)
    try:
        prefix = work / "s3proxy-data" / "bench" / "shared"
        prefix.mkdir(parents=True, exist_ok=True)
        entries = []
        for i in range(a.shards):
            src = packed[i % len(packed)]
            name = f"train-{i:06d}.tar"
            os.link(pack / src["url"], prefix / name)
            entries.append({"url": name, "nsamples": src["nsamples"], "filesize": src["filesize"]})
        (prefix / "index.json").write_text(json.dumps(
            {"__kind__": "wids-shard-index-v1", "wids_version": 1, "shardlist": entries,
             "stoke": {"labelled": True}}))
        total = sum(e["filesize"] for e in entries)
        relay = CountingRelay(int(endpoint.rsplit(":", 1)[1]))
        env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{relay.port}", AWS_ACCESS_KEY_ID="bench",
                   AWS_SECRET_ACCESS_KEY="bench-secret", AWS_REGION="us-east-1",
                   STOKE_HOME=str(shards_bench.CHECKOUT))
        client = str(shards_bench.CHECKOUT / "clients" / "python")
        url = "s3://bench/shared/"
        subprocess.run(["/usr/bin/python3", "-c", DRIVER, url, client, "0", "-"], env=env,
                       capture_output=True, check=True)  # builds and records the AOT cache, untimed
        cases = {"2 ranks, each its own cache in memory": False, "2 ranks, one shared --shard-cache-dir": True}
        runs = []
        with open(out / "runs.jsonl", "w") as f:
            for r in range(a.repeats):
                for case, shared in cases.items():
                    folder = work / f"cache-{r}"
                    shutil.rmtree(folder, ignore_errors=True)
                    relay.take()
                    ranks = [subprocess.Popen(["/usr/bin/python3", "-c", DRIVER, url, client, str(k),
                                               str(folder) if shared else "-"],
                                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                             for k in range(2)]
                    done = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in ranks]
                    if any(p.returncode for p in ranks):
                        raise SystemExit(f"a rank failed: {[p.returncode for p in ranks]}")
                    row = {"case": case, "repeat": r, "bytes_fetched": relay.take(), "dataset_bytes": total,
                           "first_batch_s": max(d["first_batch_s"] for d in done),
                           "epoch_s": max(d["epoch_s"] for d in done), "ranks": done}
                    runs.append(row)
                    f.write(json.dumps(row) + "\n")
                    print(json.dumps(row), file=sys.stderr)
                    shutil.rmtree(folder, ignore_errors=True)
    finally:
        proc.kill()
    lines = ["# Two ranks on one node: a shared shard cache against one cache each", "",
             f"The demo's 1,000 JPEGs packed into shards of about 23 MB, {a.shards} of them "
             f"({total / 1e9:.2f} GB, with index.json), served by s3proxy on 127.0.0.1 behind a relay that counts "
             "the bytes the server sends. Each round two fresh Python processes, ranks 0 and 1 of 2, "
             "`stoke.DataLoader(\"s3://bench/shared/\", rank=R, world_size=2, batch_size=64, num_workers=2, "
             "shard_cache_size=\"2G\")`, one epoch; with `shard_cache_dir=` one fresh folder for both. First batch and "
             f"epoch: the later of the two ranks. {a.repeats} rounds, the cases alternating; medians.", "",
             "| case | bytes fetched / dataset | first batch (s) | epoch (s) |", "| --- | ---: | ---: | ---: |"]
    for case in cases:
        xs = [x for x in runs if x["case"] == case]
        lines.append(f"| {case} | {statistics.median(x['bytes_fetched'] / total for x in xs):.2f} | "
                     f"{statistics.median(x['first_batch_s'] for x in xs):.2f} | "
                     f"{statistics.median(x['epoch_s'] for x in xs):.2f} |")
    lines += ["", "Regenerate: `python3 benchmarks/python/shared_cache_bench.py --out DIR`."]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
