"""The ``p4sim switch`` process: ports (AF_PACKET, virtual, nanomsg), the traffic manager and
the packet loop that drives a compiled program's ``V1ModelPath``; ``p4sim ctl`` talks to it.

``SwitchDevice`` (``device.py``) is the object the P4Runtime server shares with the packet path.
"""
