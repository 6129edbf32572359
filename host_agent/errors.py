"""Host-agent error types: user mistakes (bad flags, bad policy files) versus transport failures."""

from __future__ import annotations


class HostAgentError(Exception):
    """Base class of every error the host agent raises on purpose."""


class UserError(HostAgentError):
    """A mistake in what the user gave us (file, flag, value); printed as one line by the CLI."""


class TransportError(HostAgentError):
    """The peer stopped answering (no DONE/BITMAP after the retry budget) or the socket failed."""
