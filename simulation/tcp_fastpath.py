"""Build the library that takes the O(window) walks out of ns-3's TCP sender (simulation/tcp_fastpath.cc).

Why this exists: a DCTCP run at paper-144, load 0.6 spent most of its CPU in ns-3's TcpTxBuffer
walking its list of segments in flight: ``NextSeg`` for every segment sent, even when no segment can be
lost, and, later in the run, the search for each retransmitted segment (``GetPacketFromList``, whose
assert compares the whole list at every step) (docs/simulation.md, "DCTCP's per-event cost").
tcp_fastpath.cc answers those calls without the walks, with ns-3's own code for everything that
changes the list, so every record of a run stays the same. Each ns-3 run's process preloads it
(simulation/fresh.py, beside jemalloc). It is compiled here, once per source and ns-3 install, into
``~/.cache/dlcp-sim/`` (``$XDG_CACHE_HOME`` if set), with the C++ compiler that cppyy needs anyway.
``DLCP_SIM_TCP_FASTPATH=off`` runs stock ns-3 (for A/B), ``nextseg`` the NextSeg cut alone (session
15's); if it cannot be built, the run says so once and uses stock ns-3 (the same results, slower).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

ENV = "DLCP_SIM_TCP_FASTPATH"              # "off": stock ns-3; "nextseg": the NextSeg cut only
SOURCE = Path(__file__).with_name("tcp_fastpath.cc")
CHOICES = ("on", "1", "yes", "nextseg", "off", "0", "no")
NS3_CORE = "ns3.44-core"                    # linked (its Time::StaticInit runs from ns-3's headers)
_LOCK = threading.Lock()
_built: dict[str, str | None] = {}


def _ns3_root() -> Path | None:
    """The ns3 wheel's directory (include/, lib64/) without importing ns-3 (20-60 s)."""
    spec = importlib.util.find_spec("ns")
    if spec is None or spec.origin is None:
        return None
    site = Path(spec.origin).resolve().parents[1]          # .../site-packages/ns/__init__.py
    for root in (site / "ns3", site):
        if (root / "include" / "ns3" / "tcp-tx-buffer.h").is_file() and (root / "lib64").is_dir():
            return root
    return None


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dlcp-sim"


def library() -> str | None:
    """Path of the built library to preload, or None (off, ns-3 not installed, or the build failed:
    then one line on stderr says why)."""
    choice = os.environ.get(ENV, "on").lower()
    if choice not in CHOICES:
        raise ValueError(f"{ENV}={os.environ[ENV]!r}: expected one of {', '.join(CHOICES)}")
    if choice in ("off", "0", "no"):
        return None
    root = _ns3_root()
    if root is None:
        return None
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + str(root).encode()).hexdigest()[:16]
    with _LOCK:
        if key not in _built:
            _built[key] = _build(root, key)
        return _built[key]


def _build(root: Path, key: str) -> str | None:
    out = _cache_dir() / f"tcp_fastpath-{key}.so"
    if out.is_file():
        return str(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    cmd = [os.environ.get("CXX", "g++"), "-O2", "-std=c++20", "-shared", "-fPIC", f"-I{root / 'include'}",
           "-o", str(tmp), str(SOURCE), f"-L{root / 'lib64'}", f"-Wl,-rpath,{root / 'lib64'}", f"-l{NS3_CORE}",
           "-ldl"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        print(f"dlcp-sim: the TCP fast path ({SOURCE.name}) was not built ({err}); stock ns-3 is used "
              f"(same results, slower)", file=sys.stderr)
        return None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[0]
        print(f"dlcp-sim: the TCP fast path ({SOURCE.name}) did not compile ({first}); stock ns-3 is used "
              f"(same results, slower)", file=sys.stderr)
        tmp.unlink(missing_ok=True)
        return None
    os.replace(tmp, out)
    return str(out)


def calls() -> dict[str, int] | None:
    """In a run's process after Simulator::Run: NextSeg calls answered without the walk ("shortened")
    and passed to ns-3 ("stock"), retransmissions found through the index ("retx_indexed") and
    rebuilds of an index by a walk ("index_rebuilds"), whether the retransmission index is on
    ("retx_index_on": 0 with ``nextseg``), or None when the library is not loaded here."""
    import ctypes

    try:
        fn = ctypes.CDLL(None).dlcp_tcp_fastpath_calls
    except AttributeError:
        return None
    fn.restype, fn.argtypes = ctypes.c_ulonglong, [ctypes.c_int]
    return {"shortened": int(fn(1)), "stock": int(fn(0)), "retx_indexed": int(fn(2)),
            "index_rebuilds": int(fn(3)), "retx_index_on": int(fn(4))}
