"""The host boundary: the only code that runs commands or writes system files.

It knows nothing of Django: it takes plain values and returns dataclasses or raises HostError.
"""
