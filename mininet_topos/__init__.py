"""Mininet emulation of DLCP networks: topologies as data, the P4 switch node, the experiment runner."""
