"""Tag policy tests: layer classes, magnitude classes, critical share, policy files."""

from __future__ import annotations

import numpy as np
import pytest

from host_agent import protocol as P
from host_agent.errors import UserError
from host_agent.packetizer import packetize
from host_agent.policy import BASELINE_POLICY, TagPolicy, load_policy


def test_front_layers_get_higher_class():
    pol = TagPolicy()
    classes = [pol.layer_class(i, 16) for i in range(16)]
    assert classes == [7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0]
    assert [pol.layer_class(i, 3) for i in range(3)] == [7, 5, 2]
    back = TagPolicy(layer_order="back_first")
    assert [back.layer_class(i, 8) for i in range(8)] == list(range(8))
    assert TagPolicy(layer_order="uniform", uniform_layer_class=3).layer_class(5, 10) == 3
    assert TagPolicy(layer_classes={42: 1}).layer_class(0, 10, tensor_id=42) == 1


def test_magnitude_classes_are_quantiles():
    pol = TagPolicy()
    mags = np.arange(32, dtype=np.float32)[::-1].copy()   # packet 0 is the largest
    classes = pol.magnitude_classes(mags)
    assert classes.tolist() == [c for c in range(15, -1, -1) for _ in range(2)]
    four = TagPolicy(num_mag_classes=4).magnitude_classes(np.arange(8, dtype=np.float32))
    assert four.tolist() == [0, 0, 5, 5, 10, 10, 15, 15]


@pytest.mark.parametrize("share,expected", [(0.0, 0), (0.05, 5), (0.1, 10), (0.333, 34), (1.0, 100)])
def test_critical_share(share, expected):
    mags = np.random.default_rng(0).random(100).astype(np.float32)
    mask = TagPolicy(critical_share=share).critical_mask(mags)
    assert mask.sum() == expected
    if expected:
        assert mags[mask].min() >= mags[~mask].max() if (~mask).any() else True


def test_packetized_tags_follow_values():
    # 10 packets of 362 floats; packet i holds the value i+1, so magnitude rank = index
    g = np.repeat(np.arange(1, 11, dtype=np.float32), 362)
    quantiles = TagPolicy(critical_share=0.2, drop_within_bound=False)
    pt = packetize(g, tensor_id=1, policy=quantiles, position=0, num_layers=4)
    hdrs = [pt.header(i) for i in range(pt.n_packets)]
    assert {h.layer_class for h in hdrs} == {7}
    assert [h.mag_class for h in hdrs] == [(i * 16) // 10 for i in range(10)]
    crit = [bool(h.flags & P.FLAG_CRITICAL) for h in hdrs]
    assert crit == [False] * 8 + [True] * 2
    assert all(h.flags & P.FLAG_ECN_CAPABLE for h in hdrs)
    assert [bool(h.flags & P.FLAG_LAST) for h in hdrs] == [False] * 9 + [True]


@pytest.mark.parametrize("n,p,budget", [(12, 0.1, 1), (10, 0.1, 1), (9, 0.1, 0), (200, 0.1, 20),
                                         (200, 0.0, 0), (7, 0.5, 3), (5, 1.0, 5)])
def test_droppable_count_is_what_the_receiver_may_miss(n, p, budget):
    """The sender's droppable share uses the receiver's completion arithmetic (ceil((1-p) n_nc))."""
    pol = TagPolicy(loss_bound=p)
    assert pol.droppable_count(n) == budget
    assert n - budget == int(np.ceil((1.0 - p) * n - 1e-9))


def test_only_the_loss_budget_is_in_droppable_classes():
    """Issue 10, hypothesis 1: the n_nc - ceil(0.9 n_nc) smallest non-critical packets get classes
    0..11 (ranked among themselves), everything else 12..15 (ranked among themselves)."""
    rng = np.random.default_rng(3)
    g = rng.laplace(0, 1e-3, 362 * 200).astype(np.float32)
    pol = TagPolicy()
    pt = packetize(g, tensor_id=1, policy=pol, position=0, num_layers=1)
    mags = np.array([pt.header(i).mag_class for i in range(pt.n_packets)])
    low = mags < pol.protected_mag_class
    assert low.sum() == pol.droppable_count(200 - 10) == 19
    assert not (low & pt.critical).any()
    # the droppable ones are the smallest, and classes grow with magnitude in both groups
    assert pt.magnitude[low].max() <= pt.magnitude[~low].min()
    for group in (low, ~low):
        order = np.argsort(pt.magnitude[group], kind="stable")
        assert (np.diff(mags[group][order]) >= 0).all()
    assert mags[low].min() == 0 and mags[low].max() == 11 and mags[~low].min() == 12 and mags.max() == 15
    assert pt.header(pt.n_packets - 1).mag_class >= 12      # LAST is never droppable
    # a 12-packet digits-sized tensor (1 critical) may lose one packet: exactly one is droppable
    small = packetize(g[:362 * 12], tensor_id=2, policy=pol)
    assert sum(small.header(i).mag_class < 12 for i in range(12)) == 1
    # loss bound 0: nothing droppable
    none = packetize(g, tensor_id=1, policy=TagPolicy(loss_bound=0.0))
    assert min(none.header(i).mag_class for i in range(none.n_packets)) == 12


def test_pull_direction_flag_and_critical():
    g = np.ones(1000, np.float32)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(critical_share=0.0, pull_critical=True), pull=True)
    assert all(pt.header(i).flags & (P.FLAG_PULL | P.FLAG_CRITICAL) == P.FLAG_PULL | P.FLAG_CRITICAL
               for i in range(pt.n_packets))
    pt = packetize(g, tensor_id=1, policy=TagPolicy(critical_share=0.0), pull=True)
    assert all(pt.header(i).flags & P.FLAG_CRITICAL == 0 for i in range(pt.n_packets))


def test_baseline_is_one_class_all_critical():
    g = np.random.default_rng(1).standard_normal(5000).astype(np.float32)
    pt = packetize(g, tensor_id=1, policy=BASELINE_POLICY, position=0, num_layers=10)
    hdrs = [pt.header(i) for i in range(pt.n_packets)]
    assert {(h.layer_class, h.mag_class) for h in hdrs} == {(0, 0)}
    assert all(h.flags & P.FLAG_CRITICAL for h in hdrs)
    assert pt.descriptor().loss_bound_ppm == 0


def test_policy_file_roundtrip_and_errors(tmp_path):
    f = tmp_path / "p.json"
    f.write_text('{"critical_share": 0.2, "layer_order": "back_first", "layer_classes": {"3": 6}}')
    pol = load_policy(f)
    assert pol.critical_share == 0.2 and pol.layer_order == "back_first" and pol.layer_classes == {3: 6}
    y = tmp_path / "p.yaml"
    y.write_text("loss_bound: 0.05\n")
    assert load_policy(y).loss_bound == 0.05
    f.write_text('{"critical_shar": 0.2}')
    with pytest.raises(UserError, match=r"p.json: unknown policy field 'critical_shar'"):
        load_policy(f)
    f.write_text('{"critical_share": 2}')
    with pytest.raises(UserError, match="critical_share 2 outside"):
        load_policy(f)
    f.write_text('{"critical_share": ')
    with pytest.raises(UserError, match=r"p.json:1: policy file does not parse"):
        load_policy(f)
