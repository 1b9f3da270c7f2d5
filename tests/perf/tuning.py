"""Issue 11 figures, on the lab's data link: the raw ceiling, then at 100 ms RTT (netem in the guest: the TCP window
is the limit) with MTU 1500 and 9000, iperf3 guest → this machine with the kernel's defaults and with base tuning
(medians of interleaved runs, through Tarn's own iperf3 and kernel code); and how long after its deadline an
unkept network change is undone by the guest, with a live worker and with a killed one."""

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tests.perf.foundation import lab_host, run_operations_inline

ROUNDS = 3
SECONDS = 5


def _guest_nic(lab, t, mac_key="LAB_DATA_MAC") -> str:
    links = json.loads(t.run(["ip", "-j", "link"]).stdout)
    return next(x["ifname"] for x in links if x.get("address") == lab.env[mac_key])


def tuning_figures():
    found = lab_host("tuning")
    if found is None:
        return
    lab, host = found
    run_operations_inline()
    from django.utils import timezone

    from appliance.connect import transport_for
    from appliance.models import Host
    from hostlib import iperf, kernel
    from tuning import services
    from tuning.models import ChangeSet

    local = Host.objects.get(name="local")
    t, peer = transport_for(host), transport_for(local)
    nic = _guest_nic(lab, t)
    address = lab.env["LAB_GUEST_DATA_ADDR"].split("/")[0]
    tap = lab.env["LAB_PEER_IFACE"]

    def run(tag: str) -> float:
        return iperf.measure(t, peer, address, seconds=SECONDS, reverse=True, tag=tag).bps / 1e6

    yield "tuning_raw_ceiling", statistics.median(run(str(i)) for i in range(ROUNDS)), "Mbit/s", "no delay, MTU 1500"

    cs = services.tuning_plan_start(host=host, user=None, profile="lan10g")
    cs.refresh_from_db()
    planned = [s for s in cs.settings.all() if s.action == "set" and s.kind == "sysctl"]

    def use(values: str) -> None:
        for s in planned:
            kernel.write(t, s.kind, s.key, getattr(s, values))

    def compare(label: str, goal: str):
        before, after = [], []
        for i in range(ROUNDS):  # interleaved: drift in the emulated guest hits both sides alike
            use("original")
            before.append(run(f"{len(label)}{i}0"))
            use("value")
            after.append(run(f"{len(label)}{i}1"))
        b, a = statistics.median(before), statistics.median(after)
        yield f"tuning_{label}_defaults", b, "Mbit/s", f"median of {ROUNDS}"
        yield f"tuning_{label}_base_tuning", a, "Mbit/s", f"median of {ROUNDS}"
        yield f"tuning_{label}_ratio", a / b, "x", goal

    yield from compare("lan_mtu1500", "about 1: on a LAN the defaults are enough")
    t.run(["tc", "qdisc", "add", "dev", nic, "root", "netem", "delay", "100ms", "limit", "100000"], mutating=True)
    for mtu in (1500, 9000):
        subprocess.run(["ip", "link", "set", tap, "mtu", str(mtu)], check=True)
        t.run(["ip", "link", "set", "dev", nic, "mtu", str(mtu)], mutating=True)
        yield from compare(f"100ms_mtu{mtu}", "goal > 1: bandwidth x RTT exceeds the default caps")
    use("original")
    lab.reset()
    subprocess.run(["ip", "link", "set", tap, "mtu", "1500"], check=True)

    def mtu_now() -> int:
        return json.loads(t.run(["ip", "-j", "link", "show", "dev", nic]).stdout)[0]["mtu"]

    def restored_after(cs: ChangeSet) -> float:
        cs.refresh_from_db()
        assert cs.status == "pending", cs.message
        while mtu_now() != 1500:
            time.sleep(0.1)
        return (timezone.now() - cs.deadline).total_seconds()

    services.links_refresh(host=host)
    cs = services.link_mtu_start(host=host, user=None, link=nic, mtu=4000, peers=[], seconds=20)
    yield "rollback_after_deadline_live_worker", restored_after(cs), "s", "goal < 5 s; polled over SSH (~0.2 s)"
    time.sleep(6)  # the settle beat records it 5 s after the deadline
    services.changes_settle()

    from tarn.celery import app
    from tests.support.worker import start_worker, stop_worker

    del app.send_task  # back to the real broker: a real worker takes it, and is killed
    log = Path(tempfile.mkdtemp()) / "worker.log"
    worker = start_worker(host.host_queue, log)
    try:
        cs = services.link_mtu_start(host=host, user=None, link=nic, mtu=4000, peers=[], seconds=20)
        while ChangeSet.objects.get(pk=cs.pk).status == "applying":
            time.sleep(0.2)
    finally:
        stop_worker(worker, sig=9)
    yield "rollback_after_deadline_killed_worker", restored_after(cs), "s", "goal < 5 s; worker SIGKILLed on apply"
    run_operations_inline()
    lab.reset()


CHECKS = [tuning_figures]
