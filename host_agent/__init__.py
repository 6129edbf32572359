"""DLCP host agents: tag gradient tensors into DLCP packets, move them with a bounded-loss transport,
and run parameter-server / ring all-reduce collectives and training jobs on top (``dlcp-agent``)."""
