"""Shared by the session tests: the session kinds to run against and the Rust test plugin."""

import os
import pathlib
import shutil
import subprocess

import pytest

import rffi

REPO = pathlib.Path(__file__).resolve().parents[2]

KINDS = {
    "thread": lambda n: rffi.ThreadSession(n),
    "process": lambda n: rffi.ProcessSession(n),
    "process-python": lambda n: rffi.ProcessSession(n, python=True),
}


def session_test_plugin() -> str:
    """sessions/test-plugin built in release mode (a no-op when it is up to date)."""
    path = os.environ.get("RFFI_SESSION_TEST_PLUGIN")
    if path and os.path.exists(path):
        return path
    if shutil.which("cargo") is None:
        pytest.skip("cargo is needed to build the session test plugin")
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "rffi-session-test-plugin"],
        cwd=REPO,
        check=True,
    )
    path = str(target / "release" / "librffi_session_test_plugin.so")
    os.environ["RFFI_SESSION_TEST_PLUGIN"] = path
    return path
