"""Diagnosis only: resnet50 training fed by decode=gpu|auto (model_decode.py's cell), each under a
watchdog that, past --limit seconds, asks the producer JVM for a thread dump (SIGQUIT), dumps this
process's Python stacks, and kills the producer so that the next cell runs."""
import argparse, faulthandler, json, os, signal, sys, threading, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "gpu"))
import psutil, torch
import stoke, stoke._producer as prod
from model_decode import cell, own_rate
from loader_gpu import TrainStep
from model_decode import InferStep

p = argparse.ArgumentParser()
p.add_argument("--data", type=Path); p.add_argument("--out", type=Path)
p.add_argument("--decodes", default="gpu,auto"); p.add_argument("--modes", default="train"); p.add_argument("--limit", type=float, default=45)
a = p.parse_args()
a.batch, a.workers, a.seed, a.seconds, a.crop = 256, 16, 0, 8.0, 224
log = open(a.out / "producer-stderr.txt", "a", buffering=1)
orig = prod.Producer._read_stderr
def tee(self):
    with self.proc.stderr as stderr:
        for line in stderr:
            log.write(f"[{self.proc.pid}] {line}")
            self._stderr.append(line.rstrip("\n"))
prod.Producer._read_stderr = tee
torch.backends.cudnn.benchmark = True
classes = sum(1 for d in a.data.iterdir() if d.is_dir())
for mode in a.modes.split(","):
    step = InferStep("resnet50", classes) if mode == "infer" else TrainStep("resnet50", a.batch, a.crop, classes)
    print(json.dumps(dict(own_rate(step, a.batch, a.crop, classes, 4.0), mode=mode)), flush=True)
    for decode in a.decodes.split(","):
        out = {}
        def run():
            try:
                out["r"] = cell(step, mode, decode, a)
            except Exception as e:
                out["r"] = {"decode": decode, "error": f"{type(e).__name__}: {e}"}
        t = threading.Thread(target=run, daemon=True); t0 = time.time(); t.start(); t.join(a.limit)
        if t.is_alive():
            print(f"HUNG: {mode} decode={decode} after {a.limit} s: thread dump of the producer, Python stacks", flush=True)
            kids = [c for c in psutil.Process().children(recursive=True) if "java" in c.name()]
            for c in kids:
                os.kill(c.pid, signal.SIGQUIT)
            with open(a.out / "python-stacks.txt", "a") as f:
                f.write(f"=== decode={decode}\n"); faulthandler.dump_traceback(f)
            time.sleep(4)
            for c in kids:
                c.kill()
            t.join(30)
        out.setdefault("r", {"decode": decode, "error": "did not end"})
        out["r"]["wall_s"] = time.time() - t0
        print(json.dumps(out["r"]), flush=True)
    del step; torch.cuda.empty_cache()
