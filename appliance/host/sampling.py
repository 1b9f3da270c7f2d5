"""Take one sample of a host's counters: the shipped sampler (appliance/host/sampler.py) run as one command."""

import inspect
import json

from appliance.host import sampler
from appliance.host.errors import CommandFailed
from appliance.host.runner import Transport

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
