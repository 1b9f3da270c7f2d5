"""Tarn's core app: auth and roles, hosts, operations and audit (the project wiring is in tarn/, the host library
in hostlib/)."""
