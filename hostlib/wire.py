"""JSON for Tarn's programs on a host (the snapshot reader, tarn-restore, the ACL helper, the sampler), by CPython's
own C codec (_json) without importing json: json imports re and compiles six patterns in pure Python, ~0.5 s of
every start on the emulated lab guest (a python3 -I -S that does nothing takes ~0.1 s). Where _json is missing or
differs, json itself.

A program says `from hostlib.wire import dumps, loads`; hostlib.runner.source_of() puts this module's source in
that line's place when the program is sent to (or installed on) a host, so the program stays one file there.
Standard library only."""

try:
    import _json

    def _constant(name):
        raise ValueError(f"not JSON: {name}")  # NaN and Infinity are not JSON; json itself would take them

    class _Context:  # what json.scanner.py_make_scanner reads off a JSONDecoder
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = staticmethod(_constant)

    def _refuse(value):
        raise TypeError(f"not JSON: {type(value).__name__}")

    _scan = _json.make_scanner(_Context())
    _encode = _json.make_encoder(None, _refuse, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True)

    def loads(text):
        """The value of a JSON text (str or bytes); ValueError if it is not one value and nothing else."""
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        text = text.strip(" \t\n\r")
        try:
            value, end = _scan(text, 0)
        except (StopIteration, SystemError, RecursionError):
            # SystemError: on 3.11, _json raises its error through json.decoder, which these programs do not import
            raise ValueError("not JSON") from None
        if end != len(text):
            raise ValueError("not JSON: more after the value")
        return value

    def dumps(value):
        """value as JSON, as json.dumps(value) writes it (ASCII, ", " and ": ")."""
        return "".join(_encode(value, 0))

    dumps({"probe": [1, 2.5, None, True, "x"]})  # a _json that differs fails here, not mid-answer
except (ImportError, AttributeError, TypeError):
    from json import dumps, loads  # noqa: F401 - what a program imports from here
