"""The lab tier's two lanes (tests/conftest.py): only lane 1's guest is wired to this machine, so a lab test that
reaches the guest over that data link (or through this machine's own host, `local_host`) must be in lane 1; and
each lane's guests have settings of their own, so the two never share a run dir, a port or a namespace."""

import ast
from pathlib import Path

from tests.support.lab_fixtures import lab_env_file

ROOT = Path(__file__).resolve().parents[1]
DATA_LINK = (
    "LAB_PEER_",
    "LAB_GUEST_DATA_ADDR",
    "LAB_NS_",
    "LAB_NETNS",
    "LAB_DATA",
    ".ns(",
    "data_nic(",
    "10.77.",
    "local_host",
)


def marks(path: Path) -> set[str]:
    """The pytest.mark names (and lane(n) as "lane(n)") in a module's pytestmark."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            return {ast.unparse(n).removeprefix("pytest.mark.") for n in ast.walk(node.value) if _is_mark(n)}
    return set()


def _is_mark(node) -> bool:
    text = ast.unparse(node) if isinstance(node, (ast.Attribute, ast.Call)) else ""
    return (
        text.startswith("pytest.mark.")
        and text.count(".") == 2
        and not isinstance(getattr(node, "ctx", None), ast.Store)
    )


def test_every_lab_test_that_uses_this_machines_data_link_runs_in_lane_1():
    lab_modules = [p for p in sorted((ROOT / "tests").glob("*/test_*.py")) if "lab" in marks(p)]
    assert len(lab_modules) > 15
    wired = [p for p in lab_modules if any(word in p.read_text() for word in DATA_LINK)]
    assert {p.name for p in wired} >= {"test_tuning.py", "test_guest.py", "test_benchmarks.py"}
    assert [p for p in wired if "lane(1)" not in marks(p)] == []


def test_the_lanes_guests_share_no_run_dir_port_namespace_or_wire_port():
    lane1 = {"TARN_LAB_RUN": "/run/tarn-lab", "TARN_LAB_SSH_PORT": "2222", "TARN_LAB_SMB_PORT": "4450"}
    lane1 |= {"TARN_LAB_NETNS": "tarnlab", "TARN_LAB_TAP": "taplab", "TARN_LAB_REP_PORT": "17701"}  # lab.sh's own
    guests = [lane1, lab_env_file("second.env"), lab_env_file("lane2.env"), lab_env_file("lane2-second.env")]
    for key in lane1:
        values = [guest[key] for guest in guests]
        assert len(set(values)) == 4, (key, values)
    lab_sh = (ROOT / "lab" / "lab.sh").read_text()
    assert all(f"${{TARN_LAB_{key.removeprefix('TARN_LAB_')}:-{value}}}" in lab_sh for key, value in lane1.items())
