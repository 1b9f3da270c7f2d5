"""Hosts (local or over SSH), the operations every change becomes, and the audit log of who did what."""
