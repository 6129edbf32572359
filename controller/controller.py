"""Many switches at once: connect, check/push pipelines, apply desired state, restore after restarts.

``SwitchSession`` pairs one switch's ``P4RuntimeClient`` with its P4Info index and pipeline bytes.
``Controller`` holds one session per switch of the network YAML and runs apply in parallel (one
thread per switch). ``Controller.supervise`` watches every stream: when a switch restarts the
stream breaks; the controller reconnects (polling the gRPC channel, no fixed sleeps), re-pushes
the pipeline if the switch lost it and re-applies the full state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2

from controller import desired as desired_mod
from controller import gc_pause, reconcile
from controller.errors import ApplyFailed, ControllerError, NoSwitchReachable, PipelineMismatch
from controller.netconfig import NetConfig, SwitchConf
from controller.p4info_index import P4InfoIndex, load_p4info
from controller.p4rt_client import P4RuntimeClient
from controller.targets import device_config, pipeline_cookie

log = logging.getLogger("controller")


def p4info_signature(p4info: p4info_pb2.P4Info) -> tuple:
    """What must agree for two P4Infos to describe the same control API (names, ids, widths)."""
    tables = tuple(sorted((t.preamble.id, t.preamble.name,
                           tuple((m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields))
                          for t in p4info.tables))
    actions = tuple(sorted((a.preamble.id, a.preamble.name, tuple((p.id, p.name, p.bitwidth) for p in a.params))
                           for a in p4info.actions))
    return tables, actions


@dataclass
class PipelineStatus:
    state: str          # "ok" (ours), "pushed", "missing" (dry run), "different"
    cookie: int | None


class SwitchSession:
    """One switch: its client, its P4Info index and the pipeline the YAML says it should run."""

    def __init__(self, conf: SwitchConf, election_id: int, role: str | None, timeout: float) -> None:
        self.conf = conf
        self.name = conf.name
        self.p4info = load_p4info(conf.pipeline.p4info)
        self.index = P4InfoIndex(self.p4info)
        self.client = P4RuntimeClient(conf.name, conf.grpc, conf.device_id, election_id, role, timeout,
                                      tls=getattr(conf, "tls", None))
        self._config: bytes | None = None
        self.synced = False   # True once this controller has applied the full state as primary
        self.lock = threading.Lock()

    @property
    def config_bytes(self) -> bytes:
        if self._config is None:
            self._config = device_config(self.conf.pipeline)
        return self._config

    @property
    def cookie(self) -> int:
        return pipeline_cookie(self.p4info.SerializeToString(deterministic=True), self.config_bytes)

    def connect(self, timeout: float | None = None, arbitrate: bool = True) -> None:
        """Connect; an unreachable switch fails after ``timeout`` (default: 3 s or the RPC timeout)."""
        self.client.connect(min(3.0, self.client.timeout) if timeout is None else timeout, arbitrate)

    def check_pipeline(self, push: bool = True, force: bool = False) -> PipelineStatus:
        """Make sure the switch runs our pipeline: push it when absent (or ``force``); a different
        program already on the switch is an error unless ``force``."""
        their_p4info, their_cookie = self.client.get_pipeline()
        if their_p4info is not None and not force:
            if their_cookie == self.cookie or p4info_signature(their_p4info) == p4info_signature(self.p4info):
                return PipelineStatus("ok", their_cookie)
            names = sorted(t.preamble.name for t in their_p4info.tables)[:3]
            raise PipelineMismatch(self.name, f"runs a different P4 program (tables {', '.join(names)}...) "
                                   f"than {self.conf.pipeline.p4info}; use --force-pipeline to replace it")
        if not push:
            return PipelineStatus("missing" if their_p4info is None else "different", their_cookie)
        self.client.require_primary()
        self.client.set_pipeline(self.p4info, self.config_bytes, self.cookie)
        return PipelineStatus("pushed", self.cookie)

    def close(self) -> None:
        self.client.close()


@dataclass
class SwitchReport:
    switch: str
    pipeline: str
    plan: reconcile.Plan
    result: reconcile.ApplyResult | None


class Controller:
    """The control plane for one network YAML (one session per switch, no global state)."""

    def __init__(self, net: NetConfig, election_id: int | None = None, role: str | None = None,
                 switches: Iterable[str] | None = None) -> None:
        self.net = net
        names = list(switches) if switches else list(net.switches)
        for name in names:
            net.switch(name)  # unknown names fail with a suggestion
        eid = election_id if election_id is not None else net.election_id
        self.sessions = {n: SwitchSession(net.switches[n], eid, role or net.role, net.timeout) for n in names}
        self._desired: dict[str, desired_mod.SwitchDesired] = {}
        self._stop = threading.Event()
        self._restored = threading.Condition()
        self.restore_count: dict[str, int] = {n: 0 for n in names}
        # switches left out by connect(partial=True), with the reason (e.g. unreachable)
        self.unreachable: dict[str, ControllerError] = {}

    def _each(self, fn: Callable[[SwitchSession], object]) -> dict[str, object]:
        """Run ``fn`` on every session in parallel; the first ControllerError (by switch order) is raised."""
        results, errors = self._each_all(fn)
        if errors:
            raise next(iter(errors.values()))
        return results

    def _each_all(self, fn: Callable[[SwitchSession], object]) -> tuple[dict[str, object], dict[str, ControllerError]]:
        """Run ``fn`` on every session in parallel: (results, ControllerErrors) by switch name."""
        if len(self.sessions) == 1:
            (s,) = self.sessions.values()
            try:
                return {s.name: fn(s)}, {}
            except ControllerError as err:
                return {}, {s.name: err}
        with ThreadPoolExecutor(max_workers=min(16, len(self.sessions))) as pool:
            futures = {name: pool.submit(fn, s) for name, s in self.sessions.items()}
        results, errors = {}, {}
        for name, fut in futures.items():
            err = fut.exception()
            if err is None:
                results[name] = fut.result()
            elif isinstance(err, ControllerError):
                errors[name] = err
            else:
                raise err
        return results, errors

    def connect(self, require_primary: bool = True, arbitrate: bool = True, partial: bool = False) -> None:
        """Connect every switch in parallel; the first failure (by switch order) is raised.

        With ``partial`` the switches that fail are left out instead (closed, dropped from
        ``sessions``, the reason kept in ``unreachable``) and the rest carry on; only when every
        switch fails is an error raised, naming each one.
        """
        def one(s: SwitchSession) -> None:
            s.connect(arbitrate=arbitrate)
            if require_primary:
                s.client.require_primary()
        if not partial:
            self._each(one)
            return
        _, errors = self._each_all(one)
        for name, err in errors.items():
            self.sessions.pop(name).close()
            self.unreachable[name] = err
        if not self.sessions and errors:
            raise NoSwitchReachable(list(errors.values()))

    def desired(self, session: SwitchSession) -> desired_mod.SwitchDesired:
        """The entries ``session``'s switch should hold (built once per controller, then cached)."""
        if session.name not in self._desired:
            with gc_pause.paused():
                self._desired[session.name] = desired_mod.build_switch(self.net, session.index, session.name)
        return self._desired[session.name]

    def _wanted(self) -> dict[str, desired_mod.SwitchDesired]:
        return {name: self.desired(s) for name, s in self.sessions.items()}

    def apply(self, dry_run: bool = False, force_pipeline: bool = False) -> dict[str, SwitchReport]:
        """Reconcile every switch; with ``dry_run`` only compute the plans (nothing is written)."""
        with gc_pause.paused():
            return self._apply(dry_run, force_pipeline)

    def _apply(self, dry_run: bool, force_pipeline: bool) -> dict[str, SwitchReport]:
        wanted = self._wanted()  # config errors first, before anything is written
        # a switch running another program stops the whole change before any switch is written
        self._each(lambda s: s.check_pipeline(push=False, force=force_pipeline))

        def one(s: SwitchSession) -> SwitchReport:
            with s.lock:
                status = s.check_pipeline(push=not dry_run, force=force_pipeline)
                if status.state in ("missing", "different"):
                    plan = reconcile.diff(s.name, {}, wanted[s.name], s.index, {})
                else:
                    plan = reconcile.compute_plan(s.client, s.index, wanted[s.name],
                                                  fresh_pipeline=status.state == "pushed")
                if dry_run:
                    return SwitchReport(s.name, status.state, plan, None)
                s.client.require_primary()
                result = reconcile.apply_plan(s.client, s.index, plan, self.net.batch_size)
                s.synced = True
                return SwitchReport(s.name, status.state, plan, result)
        reports, errors = self._each_all(one)
        if errors:
            first = next(iter(errors.values()))
            if dry_run or not reports:
                raise first
            raise self._undo_others(reports, first)
        return reports

    def _undo_others(self, reports: dict[str, SwitchReport], error: ControllerError) -> ControllerError:
        """One switch failed: undo the change on the switches where it succeeded (no partial policy)."""
        undone, failed = [], []
        for name, rep in reports.items():
            if rep.plan.empty():
                continue
            s = self.sessions[name]
            try:
                with s.lock:
                    reconcile.undo_plan(s.client, rep.plan)
                undone.append(name)
            except ControllerError as err:
                failed.append(f"{name} ({err})")
        text = str(error)
        if undone:
            text += f"; change undone on {', '.join(undone)}"
        if failed:
            text += f"; UNDO FAILED on {'; '.join(failed)}"
        return ApplyFailed(text) if undone or failed else error

    # -- restart restore -------------------------------------------------------------------------
    def supervise(self, stop: threading.Event | None = None, poll: float = 0.2,
                  on_restore: Callable[[str, SwitchReport], None] | None = None) -> None:
        """Watch the streams until ``stop``; restore a switch whose stream broke. Blocks.

        A backup whose primary goes away claims primary (re-arbitrates above the highest election
        id) and then re-applies the full state, so the network keeps a controller.
        """
        stop = stop or self._stop
        for s in self.sessions.values():
            s.client.takeover = True
            if not s.client.stream_down.is_set() and not s.client.is_primary \
                    and s.client.primary_election_id is None and s.client._arbitrated:
                s.client.claim_primary()
        while not stop.is_set():
            for s in self.sessions.values():
                # A stream that broke means the switch may have lost everything: restore it. A
                # controller that regains primary after a short-lived one (an operator's `set`
                # with a higher election id) keeps the switch as it is: live changes survive.
                if s.client.stream_down.is_set() or (s.client.is_primary and not s.synced):
                    self._try_restore(s, on_restore)
            stop.wait(poll)

    def _try_restore(self, s: SwitchSession, on_restore: Callable[[str, SwitchReport], None] | None) -> None:
        with s.lock:
            try:
                if s.client.stream_down.is_set():
                    s.client.close()
                    s.connect(timeout=1.0)
                if not s.client.is_primary:
                    return
                status = s.check_pipeline(push=True)
                with gc_pause.paused():
                    plan = reconcile.compute_plan(s.client, s.index, self.desired(s),
                                                  fresh_pipeline=status.state == "pushed")
                    result = reconcile.apply_plan(s.client, s.index, plan, self.net.batch_size)
                s.synced = True
            except ControllerError as err:
                log.debug("switch %s: restore not yet possible: %s", s.name, err)
                return
        report = SwitchReport(s.name, status.state, plan, result)
        if status.state == "pushed":   # a fresh switch process also lost its queue settings
            self._restore_queues(s)
        if not plan.empty() or status.state == "pushed":
            log.warning("switch %s: restored (pipeline %s, %s)", s.name, status.state, plan.counts())
        with self._restored:
            self.restore_count[s.name] += 1
            self._restored.notify_all()
        if on_restore is not None:
            on_restore(s.name, report)

    def _restore_queues(self, s: SwitchSession) -> None:
        from controller.runtime_cli import apply_queue_config, has_runtime
        if not has_runtime(s.conf):
            return
        try:
            apply_queue_config(s.conf, self.net.queues, yaml_ports=self.net.switch_ports(s.name),
                               queues=self.net.policy.queues)
        except ControllerError as err:
            log.warning("switch %s: queue settings not restored: %s", s.name, err)

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        for s in self.sessions.values():
            s.close()
