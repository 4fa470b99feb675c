"""tests.interleave installs its trace functions safely from several threads at once.

CPython 3.11's sys.settrace refuses a call that lands while another thread's call is still inside
(python/cpython#98257): with a Python audit hook on "sys.settrace" the GIL can change hands there,
and the guard race sweeps then failed at random with "Cannot install a trace function while another
trace function is being installed". In a process of its own (an audit hook cannot be removed), four
threads enter and leave `opcodes_of` thousands of times under such a hook; none may fail. The same
run with the lock taken out fails (the `unlocked` case), so the check can tell.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import contextlib, sys, threading
from tests import interleave
if sys.argv[1] == "unlocked":
    interleave._SETTRACE = contextlib.nullcontext()
def hook(event, args):
    if event == "sys.settrace":
        sum(range(20))  # Python code in the hook: the GIL may change hands inside sys.settrace
sys.addaudithook(hook)
sys.setswitchinterval(1e-6)
errors = []
def worker():
    try:
        for _ in range(5000):
            with interleave.opcodes_of("/no/such/module.py", lambda: None):
                pass
    except RuntimeError as error:
        errors.append(error)
threads = [threading.Thread(target=worker) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(errors))
"""


@pytest.mark.parametrize("mode", ["locked", pytest.param("unlocked", marks=pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="the race is CPython <= 3.11's (python/cpython#98257)"))])
def test_concurrent_trace_installs_under_an_audit_hook(mode: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    failed = int(done.stdout.split()[-1])
    if mode == "locked":
        assert failed == 0, done.stdout
    else:  # the lock is what keeps them apart: without it the race shows (3 of 4 threads, every try here)
        assert failed > 0, done.stdout
