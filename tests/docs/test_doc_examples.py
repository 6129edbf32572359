"""The runnable examples of docs/*.md still work as written (issue 16).

Each block marked ``<!-- runnable -->`` (syntax: docs/README.md, machinery: ``doc_examples.py``) is
one test case, run in the doc's order in a per-doc temporary directory that looks like the
repository root, with the venv's ``bin`` first on PATH as after ``. .venv/bin/activate``; the p4sim
switches a block names are started here. A case fails on a non-zero (or other than documented)
exit status or on output that no longer contains the lines the doc shows. Blocks needing tools
that are not on PATH (BMv2, p4c) or root skip with the reason.

Budget: about 1 minute on the loaded 2-core CI machine (three switch processes, a dozen commands).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from doc_examples import (
    ROOT,
    Block,
    DocError,
    Session,
    activated_env,
    find_blocks,
    missing_tools,
    session_dir,
)

DOCS = sorted((ROOT / "docs").glob("*.md"))


def collect() -> list:
    params = []
    for doc in DOCS:
        try:
            blocks = find_blocks(doc)
        except DocError as err:
            params.append(pytest.param(None, str(err), id=f"{doc.stem}-marker-error"))
            continue
        for k, block in enumerate(blocks):
            params.append(pytest.param(block, None, id=f"{doc.stem}-{k}-line{block.line}"))
    return params


PARAMS = collect()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    opened: dict[Path, Session] = {}

    def get(doc: Path) -> Session:
        if doc not in opened:
            workdir = session_dir(tmp_path_factory.mktemp(f"doc-{doc.stem}"))
            opened[doc] = Session(workdir, activated_env(dict(os.environ)))
        return opened[doc]

    yield get
    for session in opened.values():
        session.close()


def test_docs_have_runnable_examples() -> None:
    """The docs whose examples must keep working carry markers (a marker lost is a test lost)."""
    marked = {p.values[0].doc.name for p in PARAMS if p.values[0] is not None}
    assert {"p4sim.md", "controller.md", "bmv2.md", "transport.md"} <= marked, sorted(marked)


@pytest.mark.parametrize("block, marker_error", PARAMS)
def test_doc_example(block: Block | None, marker_error: str | None, sessions) -> None:
    assert marker_error is None, marker_error
    session = sessions(block.doc)
    if "root" in block.options and os.geteuid() != 0:
        pytest.skip(f"{block.where}: needs root")
    missing = missing_tools(block, session.env["PATH"])
    if missing:
        pytest.skip(f"{block.where}: {', '.join(missing)} not on PATH")
    failures = session.run_block(block)
    assert not failures, "\n\n".join(str(f) for f in failures)
