"""Permissions: a folder's POSIX ACL read live from the NAS (entries by name, the default ACL, getfacl's text), what
a user may do there and why, changed on one folder or, after a count, on everything inside (a walk that stops when
asked)."""
