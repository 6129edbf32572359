"""The docs test can fail: a wrong exit status, a changed output line or a bad marker is caught
(``doc_examples.py``, issue 16). Runs real shell commands in a temporary directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from doc_examples import DocError, Session, activated_env, find_blocks, missing_lines, update_doc


def blocks_of(text: str, tmp: Path):
    doc = tmp / "doc.md"
    doc.write_text(text)
    return find_blocks(doc)


def run(text: str, tmp: Path):
    session = Session(tmp, activated_env(dict(os.environ)))
    try:
        return [f for b in blocks_of(text, tmp) for f in session.run_block(b)]
    finally:
        session.close()


def test_transcript_that_still_holds_passes(tmp_path: Path) -> None:
    doc = ("<!-- runnable -->\n```console\n$ printf 'a   b\\nignored\\nc d e\\n'\na b\nc ... e\n"
           "$ exit 3\n[exit 3]\n```\n")
    assert run(doc, tmp_path) == []


def test_changed_output_fails(tmp_path: Path) -> None:
    failures = run("<!-- runnable -->\n```\n$ echo switch s1 ok\nswitch s1 missing\n```\n", tmp_path)
    assert len(failures) == 1 and "switch s1 missing" in failures[0].message


def test_lines_out_of_order_fail(tmp_path: Path) -> None:
    assert missing_lines(["b", "a"], "a\nb\n") == ["a"]
    assert missing_lines(["a", "b"], "a\nx\nb\n") == []


def test_wrong_exit_status_fails(tmp_path: Path) -> None:
    failures = run("<!-- runnable -->\n```sh\ntrue\nfalse   # a comment\n```\n", tmp_path)
    assert len(failures) == 1 and "exit status 1" in failures[0].message


def test_commands_run_with_the_venv_on_path(tmp_path: Path) -> None:
    assert run("<!-- runnable -->\n```\n$ command -v dlcpctl p4sim dlcp-agent dlcp-exp\n"
               "...bin/dlcpctl\n...bin/p4sim\n...bin/dlcp-agent\n...bin/dlcp-exp\n```\n",
               tmp_path) == []


def test_file_blocks_are_written(tmp_path: Path) -> None:
    doc = "<!-- runnable: file=conf/a.yaml -->\n```yaml\nx: 1\n```\n<!-- runnable -->\n```\n$ cat conf/a.yaml\nx: 1\n```\n"
    assert run(doc, tmp_path) == []


def test_markers_shown_inside_code_blocks_are_not_markers(tmp_path: Path) -> None:
    doc = "````markdown\n<!-- runnable -->\n```sh\nfalse\n```\n````\n<!-- runnable -->\n```\ntrue\n```\n"
    blocks = blocks_of(doc, tmp_path)
    assert [b.line for b in blocks] == [7] and blocks[0].commands[0].text == "true"


@pytest.mark.parametrize("text, message", [
    ("<!-- runnable -->\n\nplain text\n", "not followed by a fenced code block"),
    ("<!-- runnable: speed=fast -->\n```\ntrue\n```\n", "unknown runnable option 'speed'"),
    ("<!-- runnable -->\n```\n# only a comment\n```\n", "has no command"),
    ("<!-- runnable -->\n```\ntrue\n", "is not closed"),
])
def test_bad_markers_are_errors(text: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(DocError, match=message):
        blocks_of(text, tmp_path)


def test_update_writes_the_real_output_back(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n<!-- runnable -->\n```text\n$ echo a; echo b\nold\n\n$ exit 2\n[exit 0]\n```\nend\n")
    work = tmp_path / "work"
    work.mkdir()
    failures = update_doc(doc, work)
    assert len(failures) == 2          # both commands disagreed with the doc before the update
    assert doc.read_text() == "intro\n<!-- runnable -->\n```text\n$ echo a; echo b\na\nb\n\n$ exit 2\n[exit 2]\n```\nend\n"
    again = tmp_path / "again"
    again.mkdir()
    assert update_doc(doc, again) == []
