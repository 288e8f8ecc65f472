#!/usr/bin/env python3
"""Stoke's soak: hours of epochs with producers and consumers killed at random, checked and measured.

    /usr/bin/python3 benchmarks/soak/soak.py --duration 1h --out DIR      (or ./stoke soak ...)

It cycles through four scenarios, each for a slice of the run, over small generated datasets:

  dataloader  epochs through stoke.DataLoader over an ImageFolder tree with three bad files
              (on_error="skip": they must be reported in every epoch, and nothing else);
  ring-py     ./stoke serve, consumed by the Python stoke.Ring (benchmarks/soak/ring_worker.py);
  ring-c      ./stoke serve, consumed by native/stoke_consumer.c (compiled here with gcc);
  s3          stoke.DataLoader over tar shards (./stoke pack) in a local S3 server (s3proxy) behind
              a proxy that injects seeded faults: 503s, resets, bodies cut short, slow answers.

In each slice it kill -9s the producer and the consumer in turn, at seeded random moments, and
recovers as a user would: a new consumer process resumes from its checkpoint (load_state_dict), a
DataLoader whose producer died makes a new one from its state_dict, a ring's producer is started
again at the batch after the last one the consumer logged and its consumer re-attaches (the ring
delivers again the batch a killed consumer held). Every consumer logs each batch's dataset
indices; afterwards every epoch that completed must hold each sample exactly once, every epoch
before the last one of a run must have completed, and batch k of epoch e must hold the same samples
in every scenario and cycle (the order depends only on seed, epoch and batch).

Every --sample-interval seconds it records, for each live process (producer JVM, Python consumer,
C consumer, S3 server), PSS (/proc/PID/smaps_rollup), open descriptors, threads; the /dev/shm
files of this run; and images/s. It writes DIR/summary.md, report.json, samples.csv, ticks.csv,
events.jsonl and two plots, and exits 1 when a check failed: a lost or repeated sample, a process
that did not come back, a wait that ran out (a hang), a /dev/shm file left behind. Growth of
memory, descriptors or threads between the first and last quarter is flagged in the summary.
"""

import argparse
import csv
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
LAUNCHER = CHECKOUT / "stoke"
PYTHON_PACKAGE = CHECKOUT / "clients" / "python"
SCENARIOS = ("dataloader", "ring-py", "ring-c", "s3")
BAD_FILES = 3  # added to the folder dataset: a truncated JPEG, a PNG named .jpg, an empty file
S3_ACCESS_KEY, S3_SECRET_KEY = "stoke-test-access-key", "stoke-test-secret-key"  # TestS3Server's
# Every wait is bounded; these are generous for a loaded 2-core machine, and running past one is a
# failure (a hang), never a reason to wait longer.
START_TIMEOUT = 120.0     # a producer's ring, a consumer's first batch, the S3 server's READY
PROGRESS_TIMEOUT = 90.0   # no new batch for this long while a scenario runs: a hang
EXIT_TIMEOUT = 30.0       # a process asked to stop (or whose producer died) has exited
# Growth between the first and last quarter flagged in the summary: relative AND absolute.
# Samples of processes younger than this are left out of the memory table and the growth check.
WARM_UP_S = 2.0
GROWTH = {"pss_kb": (1.25, 16 * 1024), "fds": (1.25, 8), "threads": (1.25, 4)}


class Failure(Exception):
    """A check that failed; the scenario's processes are stopped and the run goes on to report."""


def parse_duration(text):
    units = {"s": 1, "m": 60, "h": 3600}
    if text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


# ---------------------------------------------------------------- /proc


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def measure(pid):
    """PSS (kB), open descriptors, threads and age (s) of a live process; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime") as f:
            age = float(f.read().split()[0]) - start_ticks / os.sysconf("SC_CLK_TCK")
        pss = None
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                    break
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        threads = None
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    threads = int(line.split()[1])
        return {"pss_kb": pss, "fds": fds, "threads": threads, "age_s": round(age, 1)}
    except (OSError, ValueError):
        return None


def is_java(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() == "java"
    except OSError:
        return False


def alive(proc):
    return proc is not None and proc.poll() is None


# ---------------------------------------------------------------- the run


class Soak:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out).resolve()
        self.work = self.out / "work"
        self.logs = self.out / "logs"
        self.rng = random.Random(args.seed)
        self.t0 = time.monotonic()
        self.events = []
        self.failures = []
        self.samples = []      # one row per process per tick
        self.ticks = []        # one row per tick
        self.live = {}         # pid -> (kind, Popen or None); children of DataLoader workers are found in /proc
        self.stderr_paths = {} # pid -> its stderr file, for a failure's message
        self.stdout_logs = {}  # pid -> the C consumer's stdout log, for a failure's message
        self.delivered = 0     # samples logged by every consumer so far (for images/s)
        self.tails = []        # LogTail objects of this run, to count samples as they arrive
        self.orders = {}       # (dataset, epoch, batch) -> indices, across scenarios and cycles
        self.results = {s: {"slices": 0, "epochs": 0, "incomplete_epochs": 0, "kills": {"producer": 0, "consumer": 0},
                            "redelivered": 0, "bad_reported": 0, "samples": 0} for s in args.scenarios}
        self.next_sample = 0.0
        self.last_tick = (self.t0, 0)
        self.s3 = None
        self.s3_stats = {}
        self.shm_prefixes = [f"stoke-soak-{os.getpid()}-"]
        self.worker_pids = set()

    # ---- bookkeeping

    def now(self):
        return round(time.monotonic() - self.t0, 3)

    def event(self, kind, **fields):
        record = {"t": self.now(), "event": kind, **fields}
        self.events.append(record)
        print(f"[soak {record['t']:8.1f}s] {kind} {json.dumps(fields)}", file=sys.stderr, flush=True)

    def fail(self, scenario, message):
        self.failures.append({"t": self.now(), "scenario": scenario, "failure": message})
        self.event("FAILURE", scenario=scenario, message=message)
        raise Failure(message)

    def our_shm_files(self):
        """The named rings of this run left in /dev/shm, and the anonymous files of its DataLoader
        processes (memfd stoke-*-<pid>: their rings, indexes and lists) that any process still
        holds or maps once those processes are gone: both must be none at the end."""
        mine = []
        for name in os.listdir("/dev/shm"):
            if any(name.startswith(p) for p in self.shm_prefixes) or \
                    any(name.startswith(f"stoke-py-{pid}-") for pid in self.worker_pids):
                mine.append(name)
        gone = {str(pid) for pid in self.worker_pids if not Path(f"/proc/{pid}").exists()}
        for entry in os.listdir("/proc") if gone else ():
            if not entry.isdigit():
                continue
            try:
                held = [os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")]
                with open(f"/proc/{entry}/maps") as maps:
                    held += [line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) > 5]
            except OSError:
                continue
            for name in held:
                if name.startswith("/memfd:stoke-") and name.split(" ")[0].rsplit("-", 1)[-1] in gone:
                    mine.append(f"{name} (held by pid {entry})")
        return sorted(set(mine))

    def sleep(self, seconds, scenario):
        """Sleeps, sampling on schedule."""
        until = time.monotonic() + seconds
        while True:
            self.maybe_sample(scenario)
            left = until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))

    def maybe_sample(self, scenario):
        if time.monotonic() - self.t0 < self.next_sample:
            return
        self.next_sample = self.now() + self.args.sample_interval
        for tail in self.tails:
            tail.read()
        t = self.now()
        pids = dict(self.live)
        for pid, (kind, _) in list(self.live.items()):
            if kind == "python-consumer" and pid in self.worker_pids:
                for child in children(pid):  # a DataLoader's producer: ./stoke serve, exec'd into java
                    pids[child] = ("producer", None)
        for pid, (kind, _) in list(pids.items()):
            if kind == "producer" and not is_java(pid):
                del pids[pid]  # still the ./stoke script, before it execs the JVM: not a producer yet
        for pid, (kind, _) in sorted(pids.items()):
            m = measure(pid)
            if m is not None and m["pss_kb"] is not None:
                self.samples.append({"t": t, "scenario": scenario, "kind": kind, "pid": pid, **m})
        mono = time.monotonic()
        rate = (self.delivered - self.last_tick[1]) / max(1e-6, mono - self.last_tick[0])
        self.last_tick = (mono, self.delivered)
        shm = self.our_shm_files()
        self.ticks.append({"t": t, "scenario": scenario, "images_per_s": round(rate, 1), "shm_files": len(shm),
                           "shm": " ".join(shm)})
        if self.s3 is not None:
            self.read_s3_stats()

    # ---- processes

    def env(self):
        return dict(os.environ, PYTHONPATH=str(PYTHON_PACKAGE), STOKE_HOME=str(CHECKOUT))

    def spawn(self, kind, cmd, log_name, env=None, **kw):
        stderr = open(self.logs / log_name, "ab")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=stderr, env=env or self.env(), **kw)
        stderr.close()
        self.live[proc.pid] = (kind, proc)
        self.stderr_paths[proc.pid] = self.logs / log_name
        return proc

    def said(self, proc, limit=2000):
        """The end of what ``proc`` wrote to its stderr file, for a failure's message: the report's
        folder may not outlive a failed test."""
        path = self.stderr_paths.get(proc.pid)
        try:
            text = path.read_bytes()[-limit:].decode(errors="replace").strip() if path else ""
        except OSError as e:
            return f"; its stderr could not be read ({e})"
        said = f"; its stderr ends: {text!r}" if text else "; its stderr is empty"
        log = self.stdout_logs.get(proc.pid)  # the C consumer says why it stopped on stdout (ERROR ...)
        if log is not None:
            try:
                errors = [line for line in log.read_bytes().decode(errors="replace").splitlines()
                          if line.startswith("ERROR")]
            except OSError as e:
                errors = [f"(its log could not be read: {e})"]
            said += f"; its log's ERROR lines: {errors[-3:]!r}" if errors else "; its log has no ERROR line"
        return said

    def reap(self, proc):
        self.live.pop(proc.pid, None)

    def stop(self, proc, scenario, what, sig=signal.SIGTERM, expect_exit=True):
        """Stops proc (a signal, then a bounded wait); one that does not exit is a hang."""
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(sig)
        try:
            code = proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=EXIT_TIMEOUT)
            self.reap(proc)
            if expect_exit:
                self.fail(scenario, f"{what} (pid {proc.pid}) did not exit within {EXIT_TIMEOUT:.0f} s of {sig.name}")
            return None
        self.reap(proc)
        return code

    def kill9(self, pid, scenario, target):
        os.kill(pid, signal.SIGKILL)
        self.results[scenario]["kills"][target] += 1
        self.event("kill", scenario=scenario, target=target, pid=pid)

    # ---- preparation

    def prepare(self):
        for d in (self.work, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        self.data = self.work / "data"
        if not self.data.exists():
            self.event("make-dataset", images=self.args.images)
            tmp = self.work / "data.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            run([str(LAUNCHER), "make-dataset", str(tmp), "--images", str(self.args.images), "--seed", "7",
                 "--classes", "5"], "make-dataset")
            # Bad files in a class of their own: they must come back as skipped in every epoch.
            first = sorted(next(p for p in sorted(tmp.iterdir()) if p.is_dir()).iterdir())[0]
            (tmp / "zz_bad").mkdir()
            (tmp / "zz_bad" / "cut.jpg").write_bytes(first.read_bytes()[:2000])
            (tmp / "zz_bad" / "png.jpg").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
            (tmp / "zz_bad" / "empty.jpg").write_bytes(b"")
            tmp.rename(self.data)
        files = sorted(str(f.relative_to(self.data)) for f in self.data.glob("*/*") if f.is_file())
        self.dataset_size = len(files)
        self.bad_indices = sorted(i for i, f in enumerate(files) if f.startswith("zz_bad/"))
        if "s3" in self.args.scenarios:
            self.shards = self.work / "shards"
            if not (self.shards / "index.json").exists():
                self.event("pack")
                # Small shards (about 40 samples each) so that an epoch makes several requests.
                run([str(LAUNCHER), "pack", str(self.data), "--out", str(self.shards), "--resize", "96",
                     "--shard-size", "400K", "--on-error", "skip", "--overwrite"], "pack")
        if "ring-c" in self.args.scenarios:
            # Compiled as the tests compile it (cli's ShmTestSupport): gcc -O2, against stoke_ring.h only.
            self.c_consumer = self.work / "stoke_consumer"
            run(["gcc", "-O2", "-o", str(self.c_consumer), str(CHECKOUT / "native" / "stoke_consumer.c")], "gcc")

    def start_s3(self):
        """The S3 server with its fault proxy: a Java main in the remote module's test code (SoakS3Server)."""
        classes = CHECKOUT / "remote" / "target" / "test-classes"
        main_class = classes / "io" / "stoke" / "remote" / "SoakS3Server.class"
        if not main_class.exists():
            raise SystemExit(f"soak: {main_class} is missing: build the remote module with its tests compiled "
                             "(mvn -q package -DskipTests) first")
        # Written by the build (remote/pom.xml): the tests' class path, Stoke's modules included.
        cp_file = CHECKOUT / "remote" / "target" / "test-classpath.txt"
        if not cp_file.exists():
            raise SystemExit(f"soak: {cp_file} is missing: build with `mvn -q package -DskipTests` first")
        own = [classes, CHECKOUT / "remote" / "target" / "classes"]
        cp = ":".join([str(p) for p in own] + [cp_file.read_text().strip()])
        # The JDK ./stoke found (JAVA_HOME, which ./stoke soak exports), else the java on PATH.
        java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else shutil.which("java")
        if not java or not Path(java).exists():
            raise SystemExit("soak: no java for the S3 server: set JAVA_HOME to a JDK >= 25 (./stoke soak does)")
        self.s3_stats_file = self.work / "s3-stats.json"
        bound = int(self.args.duration_s + 600)  # it stops by itself after that, and when our pipe closes
        cmd = [str(java), "-Xmx256m", "-cp", cp, "io.stoke.remote.SoakS3Server", str(self.shards),
               "soak", "train/", str(self.args.seed), str(self.args.fault_rate), str(bound), str(self.s3_stats_file)]
        stderr = open(self.logs / "s3-server.stderr", "ab")
        self.s3 = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)
        stderr.close()
        self.live[self.s3.pid] = ("s3-server", self.s3)
        ready = read_line_within(self.s3.stdout, START_TIMEOUT)
        if not ready or not ready.startswith("READY "):
            self.fail("s3", f"the S3 server did not start (said {ready!r}); see logs/s3-server.stderr")
        self.s3_port = int(ready.split()[1])
        self.event("s3-server", pid=self.s3.pid, proxy_port=self.s3_port, fault_rate=self.args.fault_rate)

    def read_s3_stats(self):
        try:
            self.s3_stats = json.loads(self.s3_stats_file.read_text())
        except (OSError, ValueError):
            pass

    # ---- the loop

    def run(self):
        self.prepare()
        if "s3" in self.args.scenarios:
            self.start_s3()
        # The duration is the soak's own: making the datasets and starting the S3 server come first.
        end = time.monotonic() + self.args.duration_s
        slice_s = self.args.slice or max(10.0, min(120.0, self.args.duration_s / len(self.args.scenarios)))
        cycle = 0
        try:
            while time.monotonic() < end:
                for scenario in self.args.scenarios:
                    left = end - time.monotonic()
                    if left < 5:
                        break
                    self.run_slice(scenario, cycle, min(slice_s, left))
                cycle += 1
        finally:
            if self.s3 is not None:
                self.read_s3_stats()
                self.s3.stdin.close()  # its cue to stop
                try:
                    self.s3.wait(timeout=EXIT_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.s3.kill()
                    self.s3.wait()
                    self.failures.append({"t": self.now(), "scenario": "s3",
                                          "failure": "the S3 server did not stop when its input closed"})
                self.reap(self.s3)
        # Everything stopped: nothing of this run may be left in /dev/shm (waits for the last
        # producers' shutdown hooks, bounded).
        deadline = time.monotonic() + 5
        while self.our_shm_files() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.leftover_shm = self.our_shm_files()
        if self.leftover_shm:
            self.failures.append({"t": self.now(), "scenario": None,
                                  "failure": f"files left in /dev/shm: {self.leftover_shm} (removed after the check)"})
            for name in self.leftover_shm:
                if "/" not in name:
                    Path("/dev/shm", name).unlink(missing_ok=True)
        for pid, (kind, proc) in list(self.live.items()):
            if proc is not None and proc.poll() is None:
                proc.kill()
                self.failures.append({"t": self.now(), "scenario": None, "failure": f"{kind} {pid} still running"})

    def run_slice(self, scenario, cycle, seconds):
        self.results[scenario]["slices"] += 1
        self.event("scenario", scenario=scenario, cycle=cycle, seconds=round(seconds, 1))
        tag = f"{scenario}-{cycle}"
        try:
            if scenario in ("dataloader", "s3"):
                incarnations = self.dataloader_slice(scenario, tag, seconds)
            else:
                incarnations = self.ring_slice(scenario, tag, seconds)
            self.check(scenario, tag, incarnations)
        except Failure:
            pass
        finally:
            self.terminate_all(keep_s3=True)
            for tail in self.tails:
                tail.read()  # count what came in since the last tick, then let the records go
            self.tails = []  # an hour of indices would otherwise stay in this process

    def terminate_all(self, keep_s3):
        """What a failed or interrupted slice left running: SIGTERM first, so that producers
        remove their rings, then SIGKILL for what did not stop within the bound."""
        procs = [proc for kind, proc in self.live.values()
                 if proc is not None and proc.poll() is None and not (keep_s3 and kind == "s3-server")]
        for proc in procs:
            proc.terminate()
        deadline = time.monotonic() + EXIT_TIMEOUT
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self.reap(proc)

    def kill_times(self, seconds):
        """Seeded moments up to seconds - 2 s, --kill-every apart; producer and consumer in turn."""
        low, high = self.args.kill_every
        times, t = [], self.rng.uniform(low, high)
        while t < seconds - 2:
            times.append(t)
            t += self.rng.uniform(low, high)
        first = self.rng.choice(("producer", "consumer"))
        other = "consumer" if first == "producer" else "producer"
        return [(t, first if k % 2 == 0 else other) for k, t in enumerate(times)]

    # ---- scenarios a and d: stoke.DataLoader

    def dataloader_slice(self, scenario, tag, seconds):
        settings = dict(batch_size=self.args.batch_size, num_workers=2, shuffle=True, seed=self.args.seed,
                        resize=64, crop=56, on_error="skip", slots=4)
        env = self.env()
        if scenario == "s3":
            root = "s3://soak/train/"
            env.update(AWS_ACCESS_KEY_ID=S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY=S3_SECRET_KEY, AWS_REGION="us-east-1",
                       AWS_EC2_METADATA_DISABLED="true", AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
                       AWS_CONFIG_FILE="/nonexistent", AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{self.s3_port}")
        else:
            root = str(self.data)
        stop_file = self.work / f"{tag}.stop"
        stop_file.unlink(missing_ok=True)
        incarnations = []

        def start(resume):
            log = self.logs / f"{tag}-consumer{len(incarnations)}.jsonl"
            cmd = [sys.executable, str(HERE / "dataloader_worker.py"), root, "--log", str(log), "--stop",
                   str(stop_file), "--settings", json.dumps(settings)]
            if resume:
                cmd += ["--resume", str(resume)]
            proc = self.spawn("python-consumer", cmd, f"{tag}-consumer{len(incarnations)}.stderr", env=env,
                              stdout=subprocess.DEVNULL)
            self.worker_pids.add(proc.pid)
            tail = LogTail(log, self)
            self.tails.append(tail)
            incarnations.append(tail)
            self.event("start", scenario=scenario, process="consumer", pid=proc.pid, resume=bool(resume))
            return proc

        self.producer_kills_in_slice = 0
        proc = start(None)
        kills = self.kill_times(seconds)
        begin = time.monotonic()
        self.wait_progress(scenario, incarnations, proc, START_TIMEOUT)
        for at, target in kills:
            if time.monotonic() > begin + seconds - 2:
                break  # recoveries took the slice's time; the moments left are dropped
            self.sleep(max(0.0, begin + at - time.monotonic()), scenario)
            self.check_alive(scenario, proc, "the DataLoader process")
            if target == "producer":
                producers = children(proc.pid)
                if not producers:
                    continue  # between two loaders; the next moment will do
                loaders_before = incarnations[-1].loaders
                self.kill9(producers[0], scenario, "producer")
                self.producer_kills_in_slice += 1
                # The worker meets ProducerError and makes a new loader: that is coming back.
                self.wait_for(scenario, lambda: incarnations[-1].loaders > loaders_before, START_TIMEOUT,
                              "the DataLoader did not start a new producer after its producer was killed", proc)
            else:
                self.kill9(proc.pid, scenario, "consumer")
                proc.wait(timeout=EXIT_TIMEOUT)
                self.reap(proc)
                incarnations[-1].read()
                # Its producer watches it (--parent-pid) and goes within 100 ms, removing its files.
                proc = start(incarnations[-1].path)
            self.wait_progress(scenario, incarnations, proc, PROGRESS_TIMEOUT)
        self.sleep(max(0.0, begin + seconds - time.monotonic()), scenario)
        # Stop at the end of the current epoch, as a training job does.
        stop_file.touch()
        self.wait_for(scenario, lambda: proc.poll() is not None, PROGRESS_TIMEOUT,
                      "the DataLoader process did not stop at the end of its epoch", proc)
        self.reap(proc)
        incarnations[-1].read()
        if proc.returncode != 0:
            self.fail(scenario, f"the DataLoader process exited with status {proc.returncode}; see logs/{tag}-*.stderr")
        if not incarnations[-1].stopped:
            self.fail(scenario, "the DataLoader process exited without finishing its epoch")
        return incarnations

    # ---- scenarios b and c: ./stoke serve and a ring consumer

    def ring_slice(self, scenario, tag, seconds):
        ring = f"/dev/shm/stoke-soak-{os.getpid()}-{tag}"
        batches_per_epoch = math.ceil(self.dataset_size / self.args.batch_size)
        incarnations = []
        producers = 0

        def start_producer(epoch, batch):
            nonlocal producers
            # --parent-pid: if this runner dies, the producer stops and removes its ring.
            cmd = [str(LAUNCHER), "serve", str(self.data), "--ring", ring, "--epochs", "0", "--start-epoch", str(epoch),
                   "--start-batch", str(batch), "--batch-size", str(self.args.batch_size), "--workers", "2",
                   "--shuffle", "--seed", str(self.args.seed), "--resize", "64", "--crop", "56", "--on-error", "skip",
                   "--slots", "4", "--status-interval", "5000", "--parent-pid", str(os.getpid())]
            proc = self.spawn("producer", cmd, f"{tag}-producer{producers}.stderr", stdout=subprocess.DEVNULL)
            producers += 1
            self.event("start", scenario=scenario, process="producer", pid=proc.pid, epoch=epoch, batch=batch)
            # The consumer attaches once the ring carries this producer's pid (a killed one's file
            # stays until the new producer replaces it).
            self.wait_for(scenario, lambda: ring_producer_pid(ring) == proc.pid, START_TIMEOUT,
                          "the producer's ring did not appear", proc)
            return proc

        def start_consumer():
            log = self.logs / f"{tag}-consumer{len(incarnations)}.{'jsonl' if scenario == 'ring-py' else 'txt'}"
            if scenario == "ring-py":
                # A step of up to 10 ms holding each batch: kills then often find a logged batch
                # not yet released, and the ring's re-delivery of it is checked.
                cmd = [sys.executable, str(HERE / "ring_worker.py"), ring, "--log", str(log), "--step-ms", "10"]
                proc = self.spawn("python-consumer", cmd, f"{tag}-consumer{len(incarnations)}.stderr",
                                  stdout=subprocess.DEVNULL)
                tail = LogTail(log, self)
            else:
                # The C example busy-spins while it waits; at nice 10 it leaves the producer's
                # decoding threads the cores it does not need (it still measures the real program).
                out = open(log, "ab")
                proc = self.spawn("c-consumer", [str(self.c_consumer), ring], f"{tag}-consumer{len(incarnations)}.stderr",
                                  stdout=out, preexec_fn=lambda: os.nice(10))
                out.close()
                self.stdout_logs[proc.pid] = log
                tail = CLogTail(log, self)
            self.tails.append(tail)
            incarnations.append(tail)
            self.event("start", scenario=scenario, process="consumer", pid=proc.pid)
            return proc

        def resume_point():
            last = None
            for tail in incarnations:
                tail.read()
                for rec in tail.batches:
                    if last is None or (rec["e"], rec["b"]) > last:
                        last = (rec["e"], rec["b"])
            if last is None:
                return 0, 0
            e, b = last[0], last[1] + 1
            return (e + 1, 0) if b >= batches_per_epoch else (e, b)

        producer = start_producer(0, 0)
        consumer = start_consumer()
        kills = self.kill_times(seconds)
        begin = time.monotonic()
        self.wait_progress(scenario, incarnations, consumer, START_TIMEOUT)
        for at, target in kills:
            if time.monotonic() > begin + seconds - 2:
                break  # recoveries took the slice's time; the moments left are dropped
            self.sleep(max(0.0, begin + at - time.monotonic()), scenario)
            self.check_alive(scenario, producer, "the producer")
            self.check_alive(scenario, consumer, "the consumer")
            if target == "producer":
                self.kill9(producer.pid, scenario, "producer")
                producer.wait(timeout=EXIT_TIMEOUT)
                self.reap(producer)
                # The consumer reads what was published, then says the producer is gone and exits.
                self.wait_for(scenario, lambda: consumer.poll() is not None, EXIT_TIMEOUT,
                              "the consumer did not notice its producer was gone", consumer)
                self.reap(consumer)
                producer = start_producer(*resume_point())
                consumer = start_consumer()
            else:
                self.kill9(consumer.pid, scenario, "consumer")
                consumer.wait(timeout=EXIT_TIMEOUT)
                self.reap(consumer)
                consumer = start_consumer()
            self.wait_progress(scenario, incarnations, consumer, PROGRESS_TIMEOUT)
        self.sleep(max(0.0, begin + seconds - time.monotonic()), scenario)
        # Stop: the producer (SIGTERM: a clean shutdown removes the ring), then the consumer sees
        # it gone. The last epoch is usually cut there; the check allows a cut last epoch.
        self.check_alive(scenario, producer, "the producer")
        self.check_alive(scenario, consumer, "the consumer")
        code = self.stop(producer, scenario, "the producer")
        if code not in (0, 130, 143):
            self.fail(scenario, f"the producer exited with status {code} when stopped")
        self.wait_for(scenario, lambda: consumer.poll() is not None, EXIT_TIMEOUT,
                      "the consumer did not exit after its producer stopped", consumer)
        self.reap(consumer)
        for tail in incarnations:
            tail.read()
        return incarnations

    # ---- waits and checks

    def wait_for(self, scenario, condition, timeout, message, proc=None):
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                self.fail(scenario, f"{message} (waited {timeout:.0f} s){self.said(proc) if proc else ''}")
            self.sleep(0.02, scenario)

    def wait_progress(self, scenario, incarnations, proc, timeout):
        """The current consumer delivers a batch within timeout: it came back."""
        tail = incarnations[-1]
        before = len(tail.batches)

        def progressed():
            tail.read()
            if len(tail.batches) > before:
                return True
            if proc.poll() is not None:
                self.fail(scenario, f"the consumer (pid {proc.pid}) exited with status {proc.returncode} before "
                                    f"delivering a batch; see {tail.path.name}{self.said(proc)}")
            return False
        self.wait_for(scenario, progressed, timeout, "no batch was delivered after a (re)start", proc)

    def check_alive(self, scenario, proc, what):
        if proc.poll() is not None:
            self.fail(scenario, f"{what} (pid {proc.pid}) exited on its own with status {proc.returncode}"
                                f"{self.said(proc)}")

    def check(self, scenario, tag, incarnations):
        """Exactly once per completed epoch; a repeat only where the ring re-delivers a killed consumer's batch."""
        result = self.results[scenario]
        if scenario in ("dataloader", "s3"):
            errors = [m for tail in incarnations for m in tail.producer_errors]
            if len(errors) > self.producer_kills_in_slice:
                self.fail(scenario, f"{tag}: the DataLoader's producer failed {len(errors)} times and was killed "
                                    f"{self.producer_kills_in_slice} times: it failed on its own: {errors}")
        dataset = "shards" if scenario == "s3" else "folder"
        n = self.dataset_size if dataset == "folder" else None
        expected_bad = self.bad_indices if dataset == "folder" else []
        seen = {}  # (e, b) -> indices
        for k, tail in enumerate(incarnations):
            if tail.size is not None:
                n = tail.size
            for j, rec in enumerate(tail.batches):
                key = (rec["e"], rec["b"])
                if key in seen:
                    previous = incarnations[k - 1].batches if k > 0 else []
                    redelivery = (scenario.startswith("ring") and j == 0 and previous
                                  and (previous[-1]["e"], previous[-1]["b"]) == key and seen[key] == rec["i"])
                    if not redelivery:
                        self.fail(scenario, f"{tag}: batch {key[1]} of epoch {key[0]} delivered twice "
                                            f"(consumer {k}, its batch {j})")
                    result["redelivered"] += 1
                    continue
                seen[key] = rec["i"]
                order_key = (dataset, *key)
                if self.orders.setdefault(order_key, rec["i"]) != rec["i"]:
                    self.fail(scenario, f"{tag}: batch {key[1]} of epoch {key[0]} holds other samples than in an "
                                        "earlier run with the same seed")
                result["bad_reported"] += len(rec["bad"])
                if sorted(rec["bad"]) != sorted(i for i in rec["i"] if i in expected_bad):
                    self.fail(scenario, f"{tag}: batch {key[1]} of epoch {key[0]} reported samples {rec['bad']} as bad; "
                                        f"the bad files are {expected_bad}")
        if n is None:
            self.fail(scenario, f"{tag}: no consumer said how many samples the dataset holds")
        epochs = sorted({e for e, _ in seen})
        per_epoch = math.ceil(n / self.args.batch_size)
        for e in epochs:
            indices = [i for (ee, _), ii in seen.items() if ee == e for i in ii]
            batches = sorted(b for ee, b in seen if ee == e)
            complete = batches == list(range(per_epoch))
            if complete:
                if sorted(indices) != list(range(n)):
                    missing = sorted(set(range(n)) - set(indices))
                    extra = len(indices) - len(set(indices))
                    self.fail(scenario, f"{tag}: epoch {e} lost {len(missing)} sample(s) {missing[:10]} and repeated {extra}")
                result["epochs"] += 1
            elif e == epochs[-1] and (scenario.startswith("ring") or not incarnations[-1].stopped):
                # The run was stopped in this epoch: what arrived must still be a gapless prefix.
                if batches != list(range(len(batches))):
                    self.fail(scenario, f"{tag}: the last epoch {e} has gaps: batches {batches}")
                if len(indices) != len(set(indices)):
                    self.fail(scenario, f"{tag}: the last epoch {e} repeats samples")
                result["incomplete_epochs"] += 1
            else:
                self.fail(scenario, f"{tag}: epoch {e} is incomplete: batches {batches} of {per_epoch}")
        result["samples"] += sum(len(ii) for ii in seen.values())
        self.event("checked", scenario=scenario, cycle=tag, epochs=len(epochs), samples=n)


class LogTail:
    """Reads a Python worker's JSON lines as they are written; a cut last line waits for its end."""

    def __init__(self, path, soak):
        self.path, self.soak = Path(path), soak
        self.offset, self.pending = 0, b""
        self.batches, self.loaders, self.size, self.stopped = [], 0, None, False
        self.producer_errors = []

    def read(self):
        """Takes every whole line written since the last read; a cut last line waits for its end."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        self.offset += len(chunk)
        lines = (self.pending + chunk).split(b"\n")
        self.pending = lines.pop()
        for line in lines:
            self.line(line)

    def line(self, raw):
        try:
            self.handle(json.loads(raw))
        except ValueError:
            pass  # cut by kill -9 (the next line starts a new record)

    def handle(self, rec):
        if "e" in rec:
            self.batches.append(rec)
            self.soak.delivered += len(rec["i"])
        elif "loader" in rec:
            self.loaders += 1
            self.size = rec["n"]
        elif "producer_error" in rec:
            self.producer_errors.append(rec["producer_error"])
        elif rec.get("stopped"):
            self.stopped = True


class CLogTail(LogTail):
    """The C consumer's lines: ``B seq epoch batch n`` then n ``S seq index label status crc``; a
    batch counts once all its S lines are in (a kill can cut it, and then it was never released)."""

    def __init__(self, path, soak):
        super().__init__(path, soak)
        self.current = None

    def line(self, raw):
        parts = raw.decode(errors="replace").split()
        if not parts:
            return
        if parts[0] not in ("B", "S"):
            return  # END, HOLDING, ERROR: not batch records
        if len(parts) != (5 if parts[0] == "B" else 6) or not all(p.lstrip("-").isalnum() for p in parts[1:]):
            self.current = None  # a line cut by kill -9: its batch was never released, so never counted
            return
        if parts[0] == "B":
            self.current = {"e": int(parts[2]), "b": int(parts[3]), "n": int(parts[4]), "i": [], "bad": []}
        elif parts[0] == "S" and self.current is not None:
            self.current["i"].append(int(parts[2]))
            if int(parts[4]) != 0:
                self.current["bad"].append(int(parts[2]))
            if len(self.current["i"]) == self.current["n"]:
                self.batches.append(self.current)
                self.soak.delivered += self.current["n"]
                self.current = None


def ring_producer_pid(path):
    """The producer pid in a ring file's header, or None when there is no whole ring yet."""
    try:
        from stoke import ring as ring_module
        with open(path, "rb") as f:
            head = f.read(ring_module.PRODUCER_PID_OFFSET + 8)
        if len(head) < ring_module.PRODUCER_PID_OFFSET + 8 or not head.startswith(b"STOKERNG"):
            return None
        return int.from_bytes(head[ring_module.PRODUCER_PID_OFFSET:ring_module.PRODUCER_PID_OFFSET + 8], "little")
    except OSError:
        return None


def read_line_within(stream, timeout):
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    if not sel.select(timeout):
        return None
    return stream.readline().strip()


def run(cmd, what):
    done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"soak: {what} failed (status {done.returncode}):\n{done.stderr[-3000:]}")


# ---------------------------------------------------------------- the report


def quarter_medians(rows, key):
    """Median of key over the first and the last quarter of rows' time span."""
    if len(rows) < 4:
        return None, None
    t0, t1 = rows[0]["t"], rows[-1]["t"]
    span = t1 - t0
    if span <= 0:
        return None, None
    first = sorted(r[key] for r in rows if r["t"] <= t0 + span / 4)
    last = sorted(r[key] for r in rows if r["t"] >= t1 - span / 4)
    if not first or not last:
        return None, None
    return first[len(first) // 2], last[len(last) // 2]


def write_report(soak):
    out = soak.out
    args = soak.args
    with open(out / "samples.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["t", "scenario", "kind", "pid", "age_s", "pss_kb", "fds", "threads"])
        w.writeheader()
        w.writerows(soak.samples)
    with open(out / "ticks.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["t", "scenario", "images_per_s", "shm_files", "shm"])
        w.writeheader()
        w.writerows(soak.ticks)
    with open(out / "events.jsonl", "w") as f:
        for e in soak.events:
            f.write(json.dumps(e) + "\n")

    # Growth per (scenario, kind), on that scenario's own timeline: processes of a kind are
    # restarted all along, so young and old ones are in both quarters alike; the S3 server lives
    # through the whole run, which makes it the plainest leak detector.
    growth, memory = [], []
    groups = {}
    for row in soak.samples:
        if row["age_s"] < WARM_UP_S:
            continue  # a process just started is still loading its code: not growth
        groups.setdefault((row["scenario"] if row["kind"] != "s3-server" else "all", row["kind"]), []).append(row)
    for (scenario, kind), rows in sorted(groups.items()):
        first_row, last_row = rows[0], rows[-1]
        memory.append({"scenario": scenario, "kind": kind, "samples": len(rows),
                       "pss_mb_start": round(first_row["pss_kb"] / 1024, 1),
                       "pss_mb_end": round(last_row["pss_kb"] / 1024, 1),
                       "pss_mb_max": round(max(r["pss_kb"] for r in rows) / 1024, 1),
                       "fds_start": first_row["fds"], "fds_end": last_row["fds"],
                       "threads_start": first_row["threads"], "threads_end": last_row["threads"]})
        for key, (ratio, absolute) in GROWTH.items():
            a, b = quarter_medians(rows, key)
            if a is not None and b > a * ratio and b - a > absolute:
                growth.append({"scenario": scenario, "kind": kind, "measure": key, "first_quarter": a,
                               "last_quarter": b})

    faults = {k: v for k, v in soak.s3_stats.items() if k not in ("objects", "FORWARDED")}
    rates = [t["images_per_s"] for t in soak.ticks if t["images_per_s"] > 0]
    report = {
        "ok": not soak.failures,
        "duration_s": soak.now(), "seed": args.seed, "scenarios": args.scenarios,
        "dataset_size": soak.dataset_size, "bad_files": len(soak.bad_indices), "batch_size": args.batch_size,
        "results": soak.results, "failures": soak.failures, "growth": growth, "memory": memory,
        "s3_requests": soak.s3_stats, "faults_injected": sum(faults.values()),
        "leftover_shm": soak.leftover_shm,
        "images_per_s_median": sorted(rates)[len(rates) // 2] if rates else 0,
    }
    plots = draw(soak, out)
    report["plots"] = plots
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")

    md = [f"# Stoke soak: {'PASSED' if report['ok'] else 'FAILED'}", "",
          f"`{' '.join(sys.argv)}`, {soak.now():.0f} s, seed {args.seed}; {soak.dataset_size} images in the folder "
          f"({len(soak.bad_indices)} bad), batch {args.batch_size}; S3 fault rate {args.fault_rate}.", "",
          "| scenario | slices | epochs complete | last epochs cut | samples | producer kills | consumer kills "
          "| ring re-deliveries | bad files reported |", "|---|---|---|---|---|---|---|---|---|"]
    for s, r in soak.results.items():
        md.append(f"| {s} | {r['slices']} | {r['epochs']} | {r['incomplete_epochs']} | {r['samples']} | "
                  f"{r['kills']['producer']} | {r['kills']['consumer']} | {r['redelivered']} | {r['bad_reported']} |")
    md += ["", f"Faults injected by the S3 proxy: {report['faults_injected']} "
               f"({', '.join(f'{k} {v}' for k, v in faults.items()) or 'none'}); "
               f"requests forwarded untouched: {soak.s3_stats.get('FORWARDED', 0)}.",
           f"Images/s (consumers, per {args.sample_interval:g} s tick): median {report['images_per_s_median']}.", "",
           "## Failures", ""]
    md += [f"- {f['t']:.0f} s, {f['scenario']}: {f['failure']}" for f in soak.failures] or ["None."]
    md += ["", "## Memory (PSS), descriptors, threads: first and last sample of each process kind", "",
           f"(processes at least {WARM_UP_S:g} s old; killed ones are restarted all along, so a kind's "
           "samples mix young and old processes)", "",
           "| scenario | kind | samples | PSS MB start | end | max | fds start | end | threads start | end |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for m in memory:
        md.append(f"| {m['scenario']} | {m['kind']} | {m['samples']} | {m['pss_mb_start']} | {m['pss_mb_end']} | "
                  f"{m['pss_mb_max']} | {m['fds_start']} | {m['fds_end']} | {m['threads_start']} | {m['threads_end']} |")
    md += ["", "## Growth (median of the last quarter against the first, per scenario and kind; "
               "flagged beyond " + ", ".join(f"{k} x{r} and +{a}" for k, (r, a) in GROWTH.items()) + ")", ""]
    md += [f"- GREW: {g['scenario']} {g['kind']} {g['measure']}: {g['first_quarter']} -> {g['last_quarter']}"
           for g in growth] or ["Nothing grew beyond the thresholds."]
    md += ["", f"Left in /dev/shm at the end: {soak.leftover_shm or 'nothing'}.", ""]
    md += [f"![{p}]({p})" for p in plots if p.endswith(".png")] or [f"Plots: {plots[0]}"]
    (out / "summary.md").write_text("\n".join(md) + "\n")
    return report


def draw(soak, out):
    # matplotlib, not the harness's XChart: the runner and its data are Python, and the report is
    # drawn by the process that measured; XChart would need a second program on the JVM.
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        message = ("NOT DRAWN: matplotlib is missing (apt-get install -y python3-matplotlib); "
                   "the data are in samples.csv and ticks.csv")
        print(f"soak: plots {message}", file=sys.stderr)
        return [message]
    colours = {"producer": "tab:blue", "python-consumer": "tab:orange", "c-consumer": "tab:green",
               "s3-server": "tab:red"}
    fig, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    for ax, key, label in zip(axes, ("pss_kb", "fds", "threads"), ("PSS (MB)", "open fds", "threads")):
        by_pid = {}
        for r in soak.samples:
            by_pid.setdefault((r["kind"], r["pid"]), []).append(r)
        labelled = set()
        for (kind, pid), rows in by_pid.items():
            ys = [r[key] / 1024 if key == "pss_kb" else r[key] for r in rows]
            ax.plot([r["t"] for r in rows], ys, ".-", ms=2, lw=0.8, color=colours.get(kind, "grey"),
                    label=None if kind in labelled else kind)
            labelled.add(kind)
        for e in soak.events:
            if e["event"] == "kill":
                ax.axvline(e["t"], color=colours["producer"] if e["target"] == "producer" else colours["python-consumer"],
                           alpha=0.25, lw=0.8, ls="--")
        ax.set_ylabel(label)
    axes[0].legend(loc="upper left", fontsize=8)
    axes[0].set_title("each line one process; dashed: kill -9 (blue producer, orange consumer)")
    axes[-1].set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(out / "memory.png", dpi=80)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(11, 3.5))
    ax.plot([t["t"] for t in soak.ticks], [t["images_per_s"] for t in soak.ticks], lw=0.8)
    for e in soak.events:
        if e["event"] == "scenario":
            ax.axvline(e["t"], color="k", lw=0.6)
            ax.text(e["t"], ax.get_ylim()[1] * 0.95 if ax.get_ylim()[1] else 1, e["scenario"], fontsize=7)
        elif e["event"] == "kill":
            ax.axvline(e["t"], color="r", alpha=0.2, lw=0.8, ls="--")
    ax.set_ylabel("images/s")
    ax.set_xlabel("seconds (black: scenario starts; red dashed: kills)")
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=80)
    plt.close(fig)
    return ["memory.png", "throughput.png"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", default="10m", help="how long: 90s, 10m, 1h (default 10m)")
    p.add_argument("--out", required=True, help="folder for the report (created)")
    p.add_argument("--seed", type=int, default=1, help="kill moments, fault draws and the shuffle (default 1)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"a subset of {','.join(SCENARIOS)}")
    p.add_argument("--slice", type=float, help="seconds per scenario before the next (default: the duration "
                                               "over the scenarios, 10 to 120 s)")
    p.add_argument("--images", type=int, default=400, help="images in the generated dataset (default 400)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--fault-rate", type=float, default=0.1,
                   help="share of S3 requests given a fault (default 0.1; Stoke retries a request 5 times)")
    p.add_argument("--kill-every", default="1.5,5", help="MIN,MAX seconds between kills, drawn uniformly "
                   "(default 1.5,5; longer gaps let processes age, which a leak needs to show)")
    p.add_argument("--sample-interval", type=float, default=2.0, help="seconds between samples (default 2)")
    p.add_argument("--keep-work", action="store_true", help="keep the datasets and consumer logs when all passed")
    args = p.parse_args(argv)
    args.duration_s = parse_duration(args.duration)
    args.kill_every = tuple(float(x) for x in args.kill_every.split(","))
    if len(args.kill_every) != 2 or not 0 < args.kill_every[0] <= args.kill_every[1]:
        p.error("--kill-every takes MIN,MAX seconds, 0 < MIN <= MAX")
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        p.error(f"unknown scenarios {sorted(unknown)}: choose from {','.join(SCENARIOS)}")
    # Prerequisites, named; missing ones stop the run before it starts (no scenario quietly left out).
    missing = []
    for module in ("numpy", "torch"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"python3-{module} (import {module})")
    if "ring-c" in args.scenarios and not shutil.which("gcc"):
        missing.append("gcc (compiles native/stoke_consumer.c)")
    if missing:
        print("soak: MISSING prerequisites: " + "; ".join(missing), file=sys.stderr)
        return 3
    sys.path.insert(0, str(PYTHON_PACKAGE))
    soak = Soak(args)
    # SIGTERM, like Ctrl-C, ends the run early, still cleaning up and reporting.
    def interrupt(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupt)
    try:
        soak.run()
    except KeyboardInterrupt:
        soak.failures.append({"t": soak.now(), "scenario": None, "failure": "interrupted"})
        soak.terminate_all(keep_s3=False)
        time.sleep(0.5)  # the producers' shutdown hooks remove their rings
        soak.leftover_shm = soak.our_shm_files()
        for name in soak.leftover_shm:
            if "/" not in name:
                Path("/dev/shm", name).unlink(missing_ok=True)
    report = write_report(soak)
    if report["ok"] and not args.keep_work:
        shutil.rmtree(soak.work, ignore_errors=True)
        shutil.rmtree(soak.logs, ignore_errors=True)
    print(f"soak: {'PASSED' if report['ok'] else 'FAILED'}; report in {soak.out / 'summary.md'}", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
