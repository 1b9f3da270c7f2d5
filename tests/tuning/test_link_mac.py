"""An IPoIB link's hardware address (20 bytes: 59 characters as `ip` prints it) is stored whole (issue 23 item 11):
the column was 40 characters, so PostgreSQL refused the whole links refresh and SQLite kept a value no form would."""

import json

from tests.support.runners import FakeHost
from tuning.models import Link
from tuning.services import links_refresh

IPOIB = "00:00:10:29:fe:80:00:00:00:00:00:00:f4:52:14:03:00:7b:cb:a1"
IP_ADDR = [
    {
        "ifindex": 4,
        "ifname": "ib0",
        "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
        "mtu": 2044,
        "operstate": "UP",
        "link_type": "infiniband",
        "address": IPOIB,
        "broadcast": "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff",
        "min_mtu": 68,
        "max_mtu": 65520,
        "linkinfo": {"info_kind": "ipoib"},
        "addr_info": [{"family": "inet", "local": "10.9.0.5", "prefixlen": 24, "scope": "global"}],
    }
]


def test_an_ipoib_address_is_stored_whole_and_fits_the_column(local_host, monkeypatch):
    assert len(IPOIB) == 59
    host = FakeHost().install(monkeypatch)
    host.answer("ip", "-j", "-d", "-s", "addr", "show", stdout=json.dumps(IP_ADDR))
    links_refresh(host=local_host, t=host.transport())
    link = Link.objects.get(host=local_host, name="ib0")
    assert link.mac == IPOIB and link.kind == "ipoib"
    # PostgreSQL enforces the column's length, SQLite does not: check the value against it as a form would.
    Link._meta.get_field("mac").clean(link.mac, link)


def test_the_column_takes_the_longest_address_the_kernel_has():
    assert Link._meta.get_field("mac").max_length >= 32 * 3 - 1  # MAX_ADDR_LEN bytes as xx: pairs
