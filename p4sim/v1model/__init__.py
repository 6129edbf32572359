"""The v1model architecture's packet path (BMv2 simple_switch semantics) over a compiled program."""
