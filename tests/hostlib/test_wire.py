"""hostlib.wire: JSON for Tarn's programs on a host without json's imports, and the programs as a host gets them
(hostlib.runner.source_of): one file each, which imports neither json nor re (each ~0.3-0.5 s a start under the
lab's emulation)."""

import inspect
import json
import subprocess

import pytest

from hostlib import acl_helper, atomic, restore_helper, sampler, snap_helper, wire
from hostlib.runner import PYTHON, WIRE_IMPORT, source_of

VALUES = [
    {"a": [1, -2, 2.5, -3e10, None, True, False, 'x\u00e9\n"\\\x1b', {"b": []}], "c": "\u00df", "": {}},
    [],
    "plain",
    0,
    1.0000000000000002,
]


@pytest.mark.parametrize("value", VALUES)
def test_dumps_writes_what_json_writes_and_loads_reads_it_back(value):
    assert wire.dumps(value) == json.dumps(value)
    assert wire.loads(json.dumps(value)) == value
    assert wire.loads(f" \n{json.dumps(value)}\n".encode()) == value


@pytest.mark.parametrize("text", ["", "[1,", '{"a": 1} x', "{'a': 1}", "[1] [2]", "nul"])
def test_what_is_not_one_json_value_is_a_value_error(text):
    with pytest.raises(ValueError):
        wire.loads(text)


def test_what_json_cannot_write_is_refused():
    with pytest.raises(TypeError, match="not JSON: set"):
        wire.dumps({"a": {1}})


# the sampler runs commands, and subprocess imports re itself
PROGRAMS = [(snap_helper, "[]"), (restore_helper, "[]"), (acl_helper, "[]"), (sampler, "['re']")]


@pytest.mark.parametrize(("module", "imported"), PROGRAMS, ids=lambda m: getattr(m, "__name__", ""))
def test_a_program_reaches_a_host_as_one_file_that_imports_neither_json_nor_re(module, imported):
    source = source_of(module)
    assert WIRE_IMPORT in open(module.__file__).read() and WIRE_IMPORT not in source
    assert not [line for line in source.splitlines() if line.lstrip().startswith(("from hostlib", "import hostlib"))]
    probe = f"import sys\nsys.argv = ['x']\nexec(compile({source!r}, 'p', 'exec'), {{'__name__': 'probe'}})\n"
    probe += "print(sorted(m for m in ('json', 're', 'tempfile', 'shutil') if m in sys.modules))"
    done = subprocess.run([*PYTHON, "-c", probe], capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == imported


def test_the_atomic_writer_imports_neither_re_tempfile_nor_shutil():
    probe = f"import sys\nexec(compile({source_of(atomic)!r}, 'a', 'exec'), {{'__name__': 'probe'}})\n"
    probe += "print(sorted(m for m in ('json', 're', 'tempfile', 'shutil') if m in sys.modules))"
    done = subprocess.run([*PYTHON, "-c", probe], capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]"]


def test_on_a_host_what_is_not_json_is_a_value_error_too():
    """As a host runs it (no json imported: _json reports its errors through json.decoder, which is not there)."""
    bad = ['{"a" 1}', '"\\x01"', "NaN", "-Infinity", "[" * 100_000, '{"a": 1} x', ""]
    probe = f"exec(compile({inspect.getsource(wire)!r}, 'w', 'exec'))\nimport sys\n"
    probe += f"for text in {bad!r}:\n"
    probe += "    try:\n        loads(text)\n    except ValueError:\n        print('refused')\n"
    probe += "    except BaseException as e:\n        print(type(e).__name__)\n    else:\n        print('taken')\n"
    probe += "print(sorted(m for m in ('json', 're') if m in sys.modules))"
    done = subprocess.run([*PYTHON, "-c", probe], capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == ["refused"] * len(bad) + ["[]"]
