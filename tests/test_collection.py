"""Every pytest-xdist worker collects the suite for itself, and xdist stops the run when two
workers' lists differ. So the test ids must not depend on when or in which process they were
collected: no time (a gzip header's mtime), no hash order (a set's iteration), no temporary path.
"""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT, worker_order


def _as_a_worker_orders(nodeids):
    return sorted(nodeids, key=worker_order)


def test_a_second_process_collects_the_same_tests_in_the_same_order(request):
    here = [item.nodeid for item in request.session.items]
    files = dict.fromkeys(n.split("::", 1)[0] for n in here)  # in the order this session collected them
    args = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files]
    if request.config.option.markexpr:
        args += ["-m", request.config.option.markexpr]
    if request.config.option.keyword:
        args += ["-k", request.config.option.keyword]
    # another hash seed, a later clock and a worker's name: what a second worker would be
    env = {**os.environ, "PYTHONHASHSEED": str(os.getpid() % 1000 + 1), "PYTEST_XDIST_WORKER": "gw9"}
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    there = [line for line in out.stdout.splitlines() if "::" in line]
    assert there, out.stdout[-2000:] + out.stderr[-2000:]
    assert _as_a_worker_orders(here) == there
