"""Shared probe for the STF tests: does the compiler chain (front end, back end, v1model) work yet?"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "corpus"


@functools.cache
def backend_ready() -> str | None:
    """None when the compiler chain works; else why programs cannot run yet.

    Probes by compiling and instantiating the simplest corpus program (an empty v1model
    pipeline): while the front end, back end or v1model path are still being written that
    fails (missing module, generated code that does not compile...), and the cases that need
    the compiler are skipped with that reason. Once the probe passes, every case runs.
    """
    try:
        backend = importlib.import_module("p4sim.backend")
        importlib.import_module("p4sim.v1model.pipeline").V1ModelPath  # noqa: B018
    except (ImportError, AttributeError) as err:
        return f"p4sim backend/v1model not available yet ({err})"
    if not hasattr(backend, "compile_file"):
        return "p4sim.backend.compile_file does not exist yet"
    try:
        backend.compile_file(str(CORPUS / "untouched_port0.p4")).instantiate()
    except Exception as err:  # noqa: BLE001 - any failure on the simplest program = chain not ready
        return f"the compiler chain cannot build the simplest program yet ({type(err).__name__}: {err})"
    return None


@pytest.fixture
def need_compiler() -> None:
    reason = backend_ready()
    if reason:
        pytest.skip(reason)
