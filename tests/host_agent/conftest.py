"""Shared fixtures for host-agent tests: real endpoints on loopback, closed at teardown."""

from __future__ import annotations

import pytest

from host_agent.endpoint import Endpoint, EndpointConfig


@pytest.fixture
def endpoints():
    """Factory of loopback endpoints, all closed at teardown."""
    made: list[Endpoint] = []

    def make(**kw) -> Endpoint:
        kw.setdefault("give_up_after", 5.0)
        ep = Endpoint(EndpointConfig(**kw))
        made.append(ep)
        return ep
    yield make
    for ep in made:
        ep.sock.close()
