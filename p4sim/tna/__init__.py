"""p4sim's Tofino Native Architecture (TNA/T2NA) model: compile with ``compile_tna``, run packets
with ``TnaPath`` (the runtime, tables and externs are the ones the v1model model uses)."""
