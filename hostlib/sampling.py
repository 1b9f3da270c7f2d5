"""Take one sample of a host's counters: the shipped sampler (hostlib/sampler.py) run as one command."""

import inspect
import json

from hostlib import sampler
from hostlib.errors import CommandFailed
from hostlib.runner import Transport

SOURCE = inspect.getsource(sampler)


def sample(transport: Transport, *, timeout: float = 30.0) -> dict:
    """The sampler's JSON document, with the round trip it cost (ms) added as round_trip_ms."""
    result = transport.run(["python3", "-I", "-S", "-c", SOURCE], timeout=timeout)
    try:
        data = json.loads(result.stdout)
    except ValueError:
        raise CommandFailed(["sampler"], result.returncode, "the sampler printed no JSON document") from None
    data["round_trip_ms"] = round(result.duration * 1000, 1)
    return data
