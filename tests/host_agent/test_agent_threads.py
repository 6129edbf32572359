"""Agents on Mininet hosts run with one BLAS thread (mininet_topos.agents.agent_env).

Every emulated host is a process on the same 2-core machine. With NumPy's default (a BLAS thread per
core) the per-iteration test-set accuracy of the digits workers, a 360 x 64 by 64 x 64 product,
took 12 ms on the busy machine instead of 0.1 ms, in every mode. A real child process started with
the agents' environment, as the study starts them, must see one thread.
"""

from __future__ import annotations

import json
import subprocess
import sys

from mininet_topos import agents

PROBE = """
import json, threadpoolctl, numpy
print(json.dumps(sorted({i["user_api"]: i["num_threads"] for i in threadpoolctl.threadpool_info()}.items())))
"""


def test_agent_processes_get_one_blas_thread():
    out = subprocess.run([sys.executable, "-c", PROBE], env=agents.agent_env(), capture_output=True, text=True,
                         check=True, timeout=60).stdout
    threads = dict(json.loads(out))
    assert threads.get("blas") == 1, threads
    assert all(n == 1 for n in threads.values()), threads
