"""Sessions under faults: killed workers, interpreter exit with live sessions, Ctrl-C during a
sync, and memory over many calls."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from session_support import KINDS

import rffi


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("python", [False, True])
def test_a_killed_worker_is_reported_by_rank_without_hanging(python):
    s = rffi.ProcessSession(3, python=python)
    pids = s.worker_pids
    s.get_global_func("testing.nop")()
    s.sync()
    os.kill(pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker 2 .*killed by signal 9 \(SIGKILL\)") as info:
        s.sync()
    assert time.monotonic() - start < 5
    assert info.value.rank == 2
    # Every later call raises the same error.
    with pytest.raises(RuntimeError) as again:
        s.get_global_func("testing.nop")
    assert str(again.value) == str(info.value)
    s.shutdown()
    s.shutdown()
    assert not any(_alive(p) for p in pids)


EXIT_SCRIPT = """
import sys
import rffi
s = rffi.{cls}
f = s.get_global_func("testing.add_one")
r = f(1)
s.sync()
print(" ".join(map(str, getattr(s, "worker_pids", []))), flush=True)


class NoImports:  # from here to the end of the interpreter, any import shows on stderr
    def find_spec(self, name, path=None, target=None):
        sys.stderr.write(f"imported at exit: {{name}}\\n")


sys.meta_path.insert(0, NoImports())
{ending}
"""


@pytest.mark.parametrize(
    "cls",
    ["ProcessSession(3)", "ProcessSession(2, python=True)", "ThreadSession(2)"],
)
@pytest.mark.parametrize("ending", ["", "del s, r, f", "s.shutdown()\ns.shutdown()"])
def test_interpreter_exit_with_a_live_session_is_silent_and_reaps(cls, ending):
    out = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT.format(cls=cls, ending=ending)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    pids = [int(p) for p in out.stdout.split()]
    time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_workers_exit_when_the_controller_is_killed():
    code = textwrap.dedent(
        """
        import rffi, sys, time
        s = rffi.ProcessSession(3)
        print(" ".join(map(str, s.worker_pids)), flush=True)
        time.sleep(60)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pids = [int(x) for x in p.stdout.readline().split()]
    assert len(pids) == 2 and all(_alive(x) for x in pids)
    p.kill()
    p.wait()
    deadline = time.monotonic() + 5
    while any(_alive(x) for x in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(_alive(x) for x in pids)


CTRL_C_SCRIPT = """
import signal, threading, time
import rffi

# A program started in the background by a non-interactive shell inherits SIGINT ignored, and
# Python then installs no handler for it; a user at a terminal has Python's default handler.
signal.signal(signal.SIGINT, signal.default_int_handler)
# The worker's call blocks until the controller has seen Ctrl-C and released it, so the signal
# always lands inside the wait, however loaded the machine is.
release = threading.Event()


@rffi.register_global_func("pytest_session.blocked")
def blocked(value):
    if not release.wait(30):
        raise SystemExit("the interrupt never came")
    return value


def ctrl_c_soon():
    threading.Timer(0.1, lambda: signal.raise_signal(signal.SIGINT)).start()


s = rffi.ThreadSession(1)
blocked_f = s.get_global_func("pytest_session.blocked")
blocked_f(2.0)
ctrl_c_soon()
try:
    s.sync()
    raise SystemExit("sync was not interrupted")
except KeyboardInterrupt:
    pass
release.set()
s.sync()  # finishes the interrupted wait
release.clear()
assert s.get_global_func("testing.add_one")(1).fetch(0) == 2
# The same for a fetch; a sync after an interrupted fetch does not wait for it again.
r = blocked_f(2.0)
ctrl_c_soon()
try:
    r.fetch(0)
    raise SystemExit("fetch was not interrupted")
except KeyboardInterrupt:
    pass
release.set()
assert r.fetch(0) == 2.0
release.clear()
blocked_f(3.0)
ctrl_c_soon()
try:
    s.sync()
    raise SystemExit("the second sync was not interrupted")
except KeyboardInterrupt:
    pass
release.set()
assert r.fetch(0) == 2.0
s.sync()
s.shutdown()
print("ok")
"""


def test_ctrl_c_during_sync_raises_and_the_session_stays_usable():
    # In a process of its own, as a user's program meets Ctrl-C (with Python's default SIGINT
    # handler, which the suite's process lacks when a background job started it).
    out = subprocess.run(
        [sys.executable, "-c", CTRL_C_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr


WAIT_MODULE = """
import os, time
import rffi


@rffi.register_global_func("pytest_session.wait_for_file", override=True)
def wait_for_file(path):
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(path)
        time.sleep(0.005)
    return path
"""

CTRL_C_PROCESS_SCRIPT = """
import signal, sys, threading
import rffi

signal.signal(signal.SIGINT, signal.default_int_handler)
release = sys.argv[1]
s = rffi.ProcessSession(2, python=True)
s.import_python_module("rffi_session_wait")
s.get_global_func("pytest_session.wait_for_file")(release)  # every worker waits for the file
threading.Timer(0.1, lambda: signal.raise_signal(signal.SIGINT)).start()
try:
    s.sync()
    raise SystemExit("sync was not interrupted")
except KeyboardInterrupt:
    pass
open(release, "w").close()
s.sync()
assert s.get_global_func("session.worker_rank")().fetch(1) == 1
s.shutdown()
print("ok")
"""


def test_ctrl_c_during_a_sync_on_worker_processes(tmp_path):
    (tmp_path / "rffi_session_wait.py").write_text(WAIT_MODULE)
    out = subprocess.run(
        [sys.executable, "-c", CTRL_C_PROCESS_SCRIPT, str(tmp_path / "release")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize("kind", ["thread", "process"])
def test_many_calls_keep_memory_flat(kind):
    s = KINDS[kind](2)
    try:
        f = s.get_global_func("testing.add_one")
        x = f(0)

        def run(n):
            for _ in range(n):
                f(x)
            s.sync()

        run(20_000)  # warm up: caches, allocator pools
        pids = [os.getpid()] + getattr(s, "worker_pids", [])
        before = [_rss_kib(p) for p in pids]
        run(100_000)
        after = [_rss_kib(p) for p in pids]
        # Results dropped at once free their registers: ids are reused, not grown.
        assert f(x).register < 8
        for b, a, p in zip(before, after, pids):
            assert a - b < 4096, f"pid {p}: RSS grew from {b} KiB to {a} KiB"
    finally:
        s.shutdown()
