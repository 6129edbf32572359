"""Back-end tests: code generation semantics, P4Info, device config, v1model packet path."""
