"""The DDP digits trainer (host_agent/torch_train.py) as a user runs it: 2 ranks over DLCP with
injected non-critical loss train 8 steps, give up only non-critical data; bad flags are one-line
usage errors. (DLCP = gloo without loss is checked step by step in test_torch_ddp.py.)
Budget: about 15 s (one 2-rank run of 8 steps, forked from this process)."""

from __future__ import annotations

import json

import pytest

from host_agent.cli import main as agent_main
from host_agent.torch_train import main


def test_lossy_run_gives_up_only_noncritical(capfd, tmp_path):
    steps = tmp_path / "steps"
    assert agent_main(["torch-train", "--nproc", "2", "--steps", "8", "--drop-noncritical", "0.05",
                       "--loss-bound", "0.1", "--steps-out", f"{steps}.{{rank}}"]) == 0
    out = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    done = out[-1]
    assert done["event"] == "done" and done["relay_dropped"].get("DATA_noncritical", 0) > 0
    assert done["critical_given_up"] == 0
    assert [r["epoch"] for r in out if r["event"] == "epoch"] == [0]
    for rank in (0, 1):
        recs = [json.loads(line) for line in (tmp_path / f"steps.{rank}").read_text().splitlines()]
        assert [r["iteration"] for r in recs] == list(range(done["steps"]))
        assert all(r["iteration_seconds"] > 0 and r["critical_given_up"] == 0 and r["bytes_sent"] > 0 for r in recs)
        assert recs[-1]["accuracy"] == done["accuracy"]
        assert all(0.0 <= v <= 0.1 for r in recs for v in r["loss_by_class"].values())   # packets, within p
    given_up = sum(r["elements_given_up"] for r in recs)
    assert given_up > 0 and given_up <= 0.1 * sum(r["dlcp"]["elements"] for r in recs)


@pytest.mark.parametrize("argv, message", [
    (["--rank", "0", "--world-size", "2"], "--rank needs --master"),
    (["--rank", "3", "--world-size", "2", "--master", "127.0.0.1:1"], "--rank 3 outside 0..1"),
    (["--rank", "0", "--world-size", "2", "--master", "h:port"], "port must be a number"),
    (["--comm", "gloo", "--drop-noncritical", "0.05"], "--drop-noncritical needs --comm dlcp"),
    (["--steps-out", "x.jsonl"], "needs {rank} in the file name"),
    (["--epochs", "0"], "--epochs 0 must be >= 1"),
    (["--in-flight", "0"], "--in-flight 0 must be in 1..16"),
])
def test_bad_flags_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "Traceback" not in "\n".join(err)
