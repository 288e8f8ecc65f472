"""Resuming an epoch on another world: the arithmetic of Java's ``ResumePlan``, on counts alone.

An epoch taken by one world of ranks and resumed on another is its *remainder*: the positions of
the epoch's permutation that no rank had taken, in order, split over the new world as a whole epoch
is (rank ``r`` takes elements ``r, r + W, r + 2W, ...``, the padding repeating the remainder from
its start). What each world took is an *epoch cut*, ``{"world_size": W, "taken": [t_0, ...]}``: rank
``r`` took the first ``t_r`` positions of its share. Which samples those were is the producer's to
compute; here only how many are left matters (for ``len()``, the padding and the report).
"""

from typing import Any, Dict, List, NamedTuple, Optional, Sequence

__all__ = ["Plan", "STATE_VERSION", "left_after", "normalise", "plan"]

#: The version of ``state_dict()`` this package writes; it reads every earlier one.
STATE_VERSION = 2

#: The settings that fix an epoch's order: a state must agree with the loader on them.
ORDER_KEYS = ("seed", "shuffle", "dataset_size", "dataset", "transform", "shuffle_window")
#: The settings of the saved world: all of one run's states agree on them.
RUN_KEYS = ORDER_KEYS + ("batch_size", "drop_last", "world_size", "shard_tail")


class Plan(NamedTuple):
    """Where a loader resumes: epoch ``epoch`` from batch ``batch``, that epoch being what ``cuts``
    left of it (``[]``: whole), with a sentence for the log."""

    epoch: int
    batch: int
    cuts: List[Dict[str, Any]]
    report: str


def left_after(n: int, cuts: Sequence[Dict[str, Any]]) -> int:
    """Samples of an epoch of ``n`` still to come after ``cuts`` (oldest first)."""
    m = n
    for cut in cuts:
        w = int(cut["world_size"])
        taken = [int(t) for t in cut["taken"]]
        if len(taken) != w:
            raise ValueError(f"an epoch cut of a world of {w} ranks counts {len(taken)} of them")
        share = (m + w - 1) // w
        gone = 0
        for r, t in enumerate(taken):
            if t < 0 or t > share:
                raise ValueError(f"rank {r} of a world of {w} is said to have taken {t} samples of an epoch with {m} "
                                 f"left, more than its share of {share}")
            unpadded = (m - r + w - 1) // w if r < m else 0  # rank r's positions r + j*w below m
            gone += min(t, unpadded)
        m -= gone
    return m


def _per_rank(m: int, world_size: int, batch_size: int, drop_last: bool, shard_tail: str) -> int:
    """Samples each rank delivers of an epoch of ``m``: Java's ``Sampler.samplesPerEpoch``."""
    shard = (m + world_size - 1) // world_size if shard_tail == "pad" else m // world_size
    return shard - shard % batch_size if drop_last else shard


def normalise(state: Dict[str, Any]) -> Dict[str, Any]:
    """A state of any version as version 2: ``_num_yielded`` (version 1's ``batch``) and ``epoch_cuts``.

    Raises:
        ValueError: a state of a later version, or one that lacks its position.
    """
    version = int(state.get("version", 1))
    if version > STATE_VERSION:
        raise ValueError(f"state_dict of version {version}, written by a later Stoke; this one reads versions 1 to "
                         f"{STATE_VERSION}")
    out = dict(state)
    if "_num_yielded" not in out:
        if "batch" not in out:
            raise ValueError("state_dict has no _num_yielded (or version 1's batch): not a stoke.DataLoader state")
        out["_num_yielded"] = out.pop("batch")
    out.setdefault("epoch_cuts", [])
    out.setdefault("world_size", 1)
    out.setdefault("rank", 0)
    out.setdefault("drop_last", False)
    out.setdefault("shard_tail", "pad")
    out["version"] = STATE_VERSION
    return out


def plan(states: Sequence[Dict[str, Any]], mine: Dict[str, Any]) -> Plan:
    """The plan that resumes ``states`` (normalised) on the loader whose ``state_dict()`` is ``mine``.

    Args:
        states: one rank's state (every rank of its world taken to be at its step), or every rank's.
        mine: the resuming loader's own state: its world, batch size and order.

    Raises:
        ValueError: in one sentence naming what differs (see ``DataLoader.load_state_dict``).
    """
    first = states[0]
    if first.get("dataset") is not None and mine.get("dataset") is not None and first["dataset"] != mine["dataset"]:
        raise ValueError(f"state_dict was saved over another dataset (dataset={first['dataset']!r}, this loader's is "
                         f"{mine['dataset']!r}: other files or labels, in another order)")
    for key in ORDER_KEYS:
        # A key a state does not fill (a Java state has no transform, says no window it did not
        # choose) is not compared; seed, shuffle and dataset_size every state has.
        if key != "dataset" and first.get(key) is not None and mine[key] is not None and first[key] != mine[key]:
            raise ValueError(f"state_dict was saved with {key}={first[key]!r}, this loader has {mine[key]!r}: the "
                             "epoch's order would not be the one it was taken in")
    for s in states[1:]:
        for key in RUN_KEYS:
            if s.get(key) != first.get(key):
                raise ValueError(f"rank {first['rank']}'s state has {key}={first.get(key)!r} and rank {s['rank']}'s "
                                 f"{s.get(key)!r}: the states are not from one run")
    w, b = int(first["world_size"]), int(first["batch_size"])
    if len(states) > 1:
        ranks = sorted(int(s["rank"]) for s in states)
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"two states of one rank: give one state, or exactly one of each of the {w} ranks")
        if len(states) != w:
            raise ValueError(f"states of {len(states)} of the {w} ranks: give every rank's state, or one state (or "
                             "the lowest step's) taken as every rank's")
    e = min(int(s["epoch"]) for s in states)
    before: Optional[List[Dict[str, Any]]] = None
    for s in states:
        se, k = int(s["epoch"]), int(s["_num_yielded"])
        if se > e + 1 or (se == e + 1 and k > 0):
            raise ValueError(f"rank {s['rank']}'s state is in epoch {se} and another's in epoch {e}: resume from "
                             "states of one epoch")
        if se == e:
            if before is not None and before != list(s["epoch_cuts"]):
                raise ValueError(f"the states of epoch {e} say different things about the worlds before theirs "
                                 "(epoch_cuts): they are not from one run")
            before = list(s["epoch_cuts"])
    n = int(first["dataset_size"])
    left_before = left_after(n, before)
    per_rank = _per_rank(left_before, w, b, bool(first["drop_last"]), first["shard_tail"])
    batches = (per_rank + b - 1) // b
    taken, steps = [0] * len(states), [0] * len(states)
    for s in states:
        k = int(s["_num_yielded"]) if int(s["epoch"]) == e else batches
        if k > batches:
            raise ValueError(f"rank {s['rank']}'s state took {k} batches of epoch {e}, which has {batches}")
        i = int(s["rank"]) % len(states)
        steps[i], taken[i] = k, min(k * b, per_rank)
    if all(t == per_rank for t in taken):
        return Plan(e + 1, 0, [], f"epoch {e} was finished by every rank: resuming at epoch {e + 1}")
    cut = {"world_size": w, "taken": taken * w if len(states) == 1 else taken}
    cuts = before + [cut]
    left = left_after(n, cuts)
    source = (f"one state at step {steps[0]}, taken as every rank's" if len(states) == 1
              else f"the states of all {w} ranks at steps {', '.join(map(str, steps))}")
    report = (f"resuming epoch {e} from {source} (batches of {b}): {left_before - left} of its {left_before} samples "
              f"taken, {left} left")
    if len(states) > 1 and len(set(taken)) > 1:
        again = left_after(n, before + [{"world_size": w, "taken": [min(taken)] * w}]) - left
        report += f"; none taken twice (from the lowest step, {again} would have been)"
    same_world = (mine["world_size"], mine["batch_size"], mine["drop_last"], mine["shard_tail"]) == (
        w, b, bool(first["drop_last"]), first["shard_tail"])
    if same_world and len(set(cut["taken"])) == 1 and taken[0] % b == 0:
        return Plan(e, taken[0] // b, before, report + f"; the same world goes on at batch {taken[0] // b}")
    new_w, new_b = int(mine["world_size"]), int(mine["batch_size"])
    new_per_rank = _per_rank(left, new_w, new_b, bool(mine["drop_last"]), mine["shard_tail"])
    new_batches = (new_per_rank + new_b - 1) // new_b
    delivered = new_per_rank * new_w
    report += (f"; split over {new_w} rank{'s' if new_w != 1 else ''} as {new_batches} "
               f"batch{'es' if new_batches != 1 else ''} of up to {new_b} each")
    if delivered > left:
        report += f", {delivered - left} of them padding (repeats, marked)"
    elif delivered < left:
        report += f", {left - delivered} left out by the shard tail or drop_last"
    if new_batches == 0:
        return Plan(e + 1, 0, [], report + f": none, so at epoch {e + 1}")
    return Plan(e, 0, cuts, report)
