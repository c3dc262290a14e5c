"""RaySession beside ProcessSession(python=True) and beside a plain Ray actor call, in one run on a
local Ray instance (``ray.init(num_cpus=2)``). Prints a Markdown table:

* round trip: a call by name plus a sync of every worker (2 workers); for plain Ray, an actor
  method call on each of 2 actors and ``ray.get`` of both (what a session would cost with Ray on
  the command path);
* copy_to_worker_0 and copy_from_worker_0 of 64 MiB float32, including the wait; for plain Ray,
  a numpy array passed to an actor method, and one returned by it (through Ray's object store);
* start: the constructor, until the first sync has come back (Ray already running).

The three columns alternate for 3 rounds; the table has each figure's median round.

Run (after ``make python-test``, which installs rffi, numpy and ray in target/py-venv):
``cd /tmp && <repo>/target/py-venv/bin/python <repo>/ffi-python/benches/bench_ray_session.py``
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import ray

import rffi

MIB = 1 << 20
REPS, CALLS = 5, 200
ROUNDS = 3


def median_us(fn, calls=CALLS, reps=REPS) -> float:
    fn()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(runs)


def median_ms(fn, reps=REPS) -> float:
    fn()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(runs)


def measure(make) -> dict:
    t0 = time.perf_counter()
    sess = make()
    sess.sync()
    start_ms = (time.perf_counter() - t0) * 1e3
    f = sess.get_global_func("session.worker_rank")

    def round_trip():
        f()
        sess.sync()

    host = np.ones(64 * MIB // 4, dtype="float32")
    t = sess.empty(host.shape, "float32")
    out = np.empty_like(host)
    r = {
        "start": start_ms,
        "rt": median_us(round_trip),
        "to": median_ms(lambda: sess.copy_to_worker_0(host, t)),
        "from": median_ms(lambda: sess.copy_from_worker_0(out, t)),
    }
    assert out[0] == 1.0
    sess.shutdown()
    return r


@ray.remote(num_cpus=0.5)
class Echo:
    def rank(self, r):
        return r

    def size(self, a):
        return a.nbytes

    def ones(self, n):
        return np.ones(n, dtype="float32")


def ray_actor_calls() -> dict:
    """A plain Ray actor: method calls on 2 actors; 64 MiB to one and back (the object store)."""
    actors = [Echo.remote() for _ in range(2)]
    ray.get([a.rank.remote(0) for a in actors])
    host = np.ones(64 * MIB // 4, dtype="float32")
    r = {
        "rt": median_us(
            lambda: ray.get([a.rank.remote(i) for i, a in enumerate(actors)]), calls=50
        ),
        "to": median_ms(lambda: ray.get(actors[0].size.remote(host))),
        "from": median_ms(lambda: ray.get(actors[0].ones.remote(host.size))),
    }
    for a in actors:
        ray.kill(a)
    return r


def main() -> None:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    runs = {"proc": [], "rays": [], "actor": []}
    for _ in range(ROUNDS):  # alternating, so a drifting load touches every column alike
        runs["proc"].append(measure(lambda: rffi.ProcessSession(2, python=True)))
        runs["rays"].append(measure(lambda: rffi.RaySession(2, resources_per_worker={"CPU": 0.5})))
        runs["actor"].append(ray_actor_calls())
    proc, rays, actor = (
        {k: statistics.median(r[k] for r in runs[name]) for k in runs[name][0]}
        for name in ("proc", "rays", "actor")
    )
    gib = 64 / 1024

    def bw(ms):
        return f"{ms:.1f} ms ({gib / (ms / 1e3):.2f} GiB/s)"

    print(
        "| 2 workers | RaySession | ProcessSession(python=True) | Ray actor calls | Ray/Process |"
    )
    print("|---|---|---|---|---|")
    print(
        f"| round trip: call + sync | {rays['rt']:.0f} µs | {proc['rt']:.0f} µs | "
        f"{actor['rt']:.0f} µs | {rays['rt'] / proc['rt']:.1f}x |"
    )
    for key, name in (("to", "copy_to_worker_0"), ("from", "copy_from_worker_0")):
        print(
            f"| {name} 64 MiB | {bw(rays[key])} | {bw(proc[key])} | {bw(actor[key])} | "
            f"{rays[key] / proc[key]:.1f}x |"
        )
    print(
        f"| start, until first sync | {rays['start']:.0f} ms | {proc['start']:.0f} ms | | "
        f"{rays['start'] / proc['start']:.1f}x |"
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
