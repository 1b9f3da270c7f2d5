"""The sampler: its parsers on output captured from the lab, the rates between two real samples taken while an SMB
client and an NFS mount read from the guest, a real sample of this machine through the local transport, rollups
and pruning, the analytics page with its drill-down, and the sampler's settings refused outside their limits."""

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from analytics import selectors, series, services
from analytics.choices import CHARTS, FIVE_MINUTES, HOUR, RANGES, RAW
from analytics.models import Sample, SamplerSetting, SamplerState
from appliance.services import api_token_create
from benchmarks.models import Run
from hostlib import sampler
from hostlib.runner import LocalTransport
from hostlib.sampling import sample

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "sampler"


def captured(name: str) -> str:
    return (CAPTURED / name).read_text()


def test_the_parsers_read_the_counters_the_lab_printed():
    assert sampler.parse_arcstats(captured("arcstats.txt"))["c_max"] == 628075520
    assert sampler.parse_objset(captured("objset.txt")) == ("tp/a", [6475, 200, 1048576000, 209715200])
    links = sampler.parse_net_dev(captured("net_dev.txt"))
    assert "lo" not in links and links["enp0s16"][:2] == [24164007, 653337680]
    assert sampler.parse_nfsd(captured("nfsd.txt"))[1] == 419430400  # bytes read through nfsd
    assert sampler.parse_ss(captured("ss.txt")) == [
        ["nfs", "127.0.0.1", 811, 119003036, 117044],
        ["smb", "10.0.2.2", 41202, 156234850, 3953],
    ]
    assert sampler.parse_smbstatus(captured("smbstatus.json")) == {
        "10.0.2.2 41202": {"user": "capuser", "shares": ["cap"], "dialect": "3_11"}
    }
    vdevs = sampler.parse_vdev_props(captured("vdev_props.json"))
    assert vdevs["mirror-0"][:2] == ["tp", "normal"] and vdevs["virtio-zfsdisk1"][0] == "mirror-0"
    assert "root-0" not in vdevs
    assert sampler.parse_iostat_waits(captured("iostat_l.txt")) == {"tp": [2012340, 2222815]}
    assert sampler.parse_nfs4_clients(captured("nfs4_info.txt")) == ["127.0.0.1"]


def test_nfs_clients_map_to_exports_by_rmtab_for_v3_and_open_files_for_v4():
    assert sampler.parse_rmtab(captured("rmtab.txt")) == {"127.0.0.1": ["/tp/a"]}
    mounts = sampler.parse_mountinfo(captured("mountinfo.txt"))
    assert mounts[(0, 43)] == "/tp/a" and mounts[(0, 44)] == "/tp/b"
    assert sampler.parse_nfs4_states(captured("nfs4_states.txt"), mounts) == ["/tp/b"]  # superblock "00:2c:…"
    assert sampler.parse_rmtab("10.0.0.9:/tank/x:0x00000000\n") == {}  # unmounted: its count is zero
    assert sampler.parse_health(captured("vdev_props.json")) == ("ONLINE", {})


def test_ss_addresses_in_ipv6_form_are_the_clients_address():
    text = "0 0 [::ffff:10.0.0.5]:445 [::ffff:10.0.0.9]:50000\n\t bytes_acked:10 bytes_received:20\n"
    text += "0 0 [fd00::1]:2049 [fd00::2%eth0]:700\n\t bytes_acked:5 bytes_received:6\n0 0 10.0.0.5:22 10.0.0.9:1\n"
    assert sampler.parse_ss(text) == [["smb", "10.0.0.9", 50000, 10, 20], ["nfs", "fd00::2", 700, 5, 6]]


def test_two_real_samples_give_pool_arc_link_and_per_client_smb_and_nfs_rates():
    before, after = json.loads(captured("sample_before.json")), json.loads(captured("sample_after.json"))
    values = series.rates(before, after)
    seconds = after["t"] - before["t"]
    # the SMB client (10.0.2.2, this machine's smbclient) and the NFS mount (127.0.0.1) are separate clients
    smb = (after["conns"][0][3] - before["conns"][0][3]) / seconds
    assert values["smb_client|10.0.2.2|read_bps"] == pytest.approx(smb, rel=0.01) and smb > 1e6
    assert values["smb_share|cap|read_bps"] == values["smb_user|capuser|read_bps"] == values["smb||read_bps"]
    assert values["nfs_client|127.0.0.1|read_bps"] > 1e6 and "nfs_client|10.0.2.2|read_bps" not in values
    assert values["nfs_version|3|read_bps"] == values["nfs_client|127.0.0.1|read_bps"]
    # the pool is the sum of its top-level vdev, about its disks' sum (a mirror)
    assert values["pool|tp|r_bps"] == values["vdev|tp/mirror-0|r_bps"]
    disks = values["vdev|tp/virtio-zfsdisk1|r_bps"] + values["vdev|tp/virtio-zfsdisk2|r_bps"]
    assert disks == pytest.approx(values["pool|tp|r_bps"], rel=0.1)  # the mirror counts at its own level
    assert 0 < values["pool|tp|r_ms"] < 1000 and 0 <= values["arc||hit_pct"] <= 100
    assert values["link|enp0s16|tx_bps"] > values["link|enp0s16|rx_bps"]  # the guest sent the file
    assert values["dataset|tp/a|r_bps"] > 1e6 and 0 <= values["cpu||busy_pct"] <= 100


def test_a_counter_that_went_backwards_gives_no_rate_and_far_apart_samples_none():
    before, after = json.loads(captured("sample_before.json")), json.loads(captured("sample_after.json"))
    after["links"]["enp0s16"][0] = 0  # the link was recreated (a bridge change)
    values = series.rates(before, after)
    assert "link|enp0s16|rx_bps" not in values and "link|enp0s16|tx_bps" in values
    assert series.rates(after, before) == {}


def test_averages_count_a_missing_rate_as_zero_and_a_missing_ratio_as_unknown():
    rows = [{"smb||read_bps": 300, "arc||hit_pct": 90}, {"smb||read_bps": 0}, {}]
    assert series.average(rows) == {"smb||read_bps": 100, "arc||hit_pct": 90}


def test_the_sampler_runs_on_this_machine_as_one_command(local_host):
    first = sample(LocalTransport(read_only=True))
    assert first["cpu"][1] > 0 and first["cost_cpu_ms"] > 0 and first["round_trip_ms"] > 0
    assert first["vdevs"] == {} and not first["errors"]  # no ZFS here: no pools, and nothing failed


def test_two_samples_store_rates_and_the_page_draws_them(local_host, viewer_client):
    assert services.sample_take(host=local_host) is None  # the first only keeps counters
    row = services.sample_take(host=local_host)
    values = series.unpack(row.values)
    assert row.step == RAW and 0 <= values["cpu||busy_pct"] <= 100 and "sampler||cpu_ms" in values
    assert row.values["cpu"][""]["busy_pct"] == values["cpu||busy_pct"]  # stored packed
    page = viewer_client.get("/analytics/")
    assert page.status_code == 200 and b'id="chart-grid"' in page.content and b"round trip" in page.content
    assert b"chart-smb-data" in page.content


@pytest.fixture
def series_rows(local_host):
    now = timezone.now()
    rows = []
    for i in range(60):  # ten minutes of samples: two SMB clients, one of them twice as busy
        values = {
            "smb||read_bps": 300.0,
            "smb_client|10.0.0.7|read_bps": 200.0,
            "smb_client|10.0.0.8|read_bps": 100.0,
            "cpu||busy_pct": 5.0,
        }
        rows.append(
            Sample(host=local_host, at=now - timedelta(seconds=10 * (60 - i)), step=RAW, values=series.pack(values))
        )
    Sample.objects.bulk_create(rows)
    SamplerState.objects.create(host=local_host, at=now, counters={"cost_cpu_ms": 40, "round_trip_ms": 80})
    return now


def test_a_chart_breaks_down_by_client_busiest_first(local_host, series_rows, viewer_client):
    page = viewer_client.get("/analytics/?range=1h&chart=smb&by=smb_client")
    assert page.status_code == 200
    spec = json.loads(page.content.split(b'id="chart-smb-data" type="application/json">')[1].split(b"</script>")[0])
    assert [d["label"] for d in spec["datasets"]] == ["10.0.0.7", "10.0.0.8"]
    assert spec["datasets"][0]["data"][-1] == 200.0 and len(spec["labels"]) == 60
    assert b'id="breakdown"' in page.content and b"10.0.0.8" in page.content
    bad = viewer_client.get("/analytics/?chart=smb&by=vdev", follow=True)  # not a breakdown of SMB
    assert b"by: Not a breakdown of this chart." in bad.content


def test_a_benchmark_run_is_a_marker_on_the_timeline(local_host, series_rows):
    run = Run.objects.create(host=local_host, profile="seq-1m", title="Sequential 1M", target="tank")
    Run.objects.filter(pk=run.pk).update(created_at=series_rows - timedelta(minutes=5))
    data = selectors.analytics(local_host, RANGES["1h"])
    assert [m["label"] for m in data["markers"]] == [f"Benchmark #{run.pk} Sequential 1M"]
    assert data["charts"][0]["spec"]["markers"][0]["index"] == 30  # the first sample at or after it


def test_htmx_polls_only_the_charts_while_the_page_is_visible(local_host, series_rows, viewer_client):
    page = viewer_client.get("/analytics/?range=15m", headers={"HX-Request": "true"})
    assert page.content.startswith(b'\n<section id="analytics-charts"') or page.content.lstrip().startswith(
        b'<section id="analytics-charts"'
    )
    assert b"document.visibilityState === 'visible'" in page.content and b"<html" not in page.content


def test_rollups_average_finished_periods_and_old_rows_are_dropped(local_host):
    now = timezone.now().replace(minute=7, second=30, microsecond=0)
    hour = now.replace(minute=0, second=0)
    rows = [
        Sample(
            host=local_host,
            at=hour + timedelta(seconds=10 * i),
            step=RAW,
            values={"nfs": {"": {"read_bps": float(i % 2) * 100}}},
        )
        for i in range(30)
    ]  # (00:00–00:05)
    rows.append(
        Sample(host=local_host, at=now - timedelta(hours=30), step=RAW, values={"nfs": {"": {"read_bps": 1.0}}})
    )
    rows.append(Sample(host=local_host, at=now - timedelta(days=40), step=FIVE_MINUTES, values={}))
    Sample.objects.bulk_create(rows)
    SamplerState.objects.create(host=local_host, rolled_up_to=hour - timedelta(hours=1))
    services.series_maintain(now=now)
    five = Sample.objects.get(host=local_host, step=FIVE_MINUTES, at=hour)
    assert five.values == {"nfs": {"": {"read_bps": 50.0}}}
    assert not Sample.objects.filter(step=RAW, at__lt=now - timedelta(hours=24)).exists()  # past 24 h: gone
    assert not Sample.objects.filter(step=FIVE_MINUTES, at__lt=now - timedelta(days=30)).exists()
    assert not Sample.objects.filter(step=HOUR, at=hour).exists()  # this hour has not ended
    services.series_maintain(now=now)  # again: no duplicates
    assert Sample.objects.filter(host=local_host, step=FIVE_MINUTES, at=hour).count() == 1


def test_sampling_settings_outside_their_limits_are_refused_naming_the_field(admin_client, viewer_client):
    page = admin_client.post("/analytics/sampling/", {"interval": 1, "raw_hours": 24, "rollup_days": 30}, follow=True)
    assert b"interval: from 5 to 300 seconds." in page.content and not SamplerSetting.objects.exists()
    admin_client.post("/analytics/sampling/", {"interval": 30, "raw_hours": 24, "rollup_days": 400}, follow=True)
    assert not SamplerSetting.objects.exists()
    admin_client.post("/analytics/sampling/", {"interval": 30, "raw_hours": 48, "rollup_days": 60})
    assert selectors.sampler_initial() == {"interval": 30, "raw_hours": 48, "rollup_days": 60}
    assert (
        viewer_client.post("/analytics/sampling/", {"interval": 10, "raw_hours": 24, "rollup_days": 30}).status_code
        == 403
    )


def test_hosts_are_due_an_interval_after_their_last_sample_and_never_twice_at_once(local_host):
    assert selectors.hosts_due() == [local_host]
    assert services.sample_claim(host=local_host) and not services.sample_claim(host=local_host)
    assert selectors.hosts_due() == []
    SamplerState.objects.filter(pk=local_host.pk).update(busy_until=None, at=timezone.now())
    assert selectors.hosts_due() == []
    assert selectors.hosts_due(now=timezone.now() + timedelta(seconds=10)) == [local_host]


def test_every_chart_has_a_title_unit_and_known_breakdowns():
    groups = {
        "pool",
        "vdev",
        "dataset",
        "link",
        "smb_client",
        "smb_share",
        "smb_user",
        "nfs_client",
        "nfs_export",
        "nfs_version",
    }
    for chart in CHARTS.values():
        assert chart.title and chart.unit and {g for g, _ in chart.breakdowns} <= groups


def test_metrics_export_the_sampled_counters_and_throughput_by_client(client, local_host, admin_user):
    after = json.loads(captured("sample_after.json"))
    SamplerState.objects.create(host=local_host, at=timezone.now(), counters=after)
    Sample.objects.create(
        host=local_host,
        at=timezone.now(),
        step=RAW,
        values=series.pack(series.rates(json.loads(captured("sample_before.json")), after)),
    )
    _, key = api_token_create(user=admin_user, name="prometheus")
    text = client.get("/metrics", headers={"Authorization": f"Bearer {key}"}).content.decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }
    vdev = (("host", "local"), ("pool", "tp"), ("vdev", "mirror-0"))
    assert samples[("tarn_vdev_read_bytes_total", vdev)] == after["vdevs"]["tp"]["mirror-0"][4]
    assert (
        samples[("tarn_dataset_write_bytes_total", (("dataset", "tp/a"), ("host", "local")))]
        == after["datasets"]["tp/a"][3]
    )
    smb = (("client", "10.0.2.2"), ("direction", "read"), ("host", "local"), ("protocol", "smb"))
    assert samples[("tarn_client_bytes_per_second", smb)] > 1e6


def test_the_api_gives_the_charts_and_refuses_a_breakdown_naming_the_field(local_host, series_rows, admin_user, client):
    _, key = api_token_create(user=admin_user, name="api")
    auth = {"Authorization": f"Bearer {key}"}
    data = client.get("/api/v1/analytics/?range=1h&chart=smb&by=smb_client", headers=auth).json()
    assert data["host"] == "local" and data["points"] == 60
    assert [d["label"] for d in data["charts"][0]["datasets"]] == ["10.0.0.7", "10.0.0.8"]
    bad = client.get("/api/v1/analytics/?chart=smb&by=vdev", headers=auth)
    assert bad.status_code == 400 and "by" in bad.json()
    assert client.get("/api/v1/analytics/?host=nope", headers=auth).json() == {"host": ["No such host."]}


def test_the_dashboard_shows_each_hosts_last_sample_while_it_is_fresh(local_host, viewer_client):
    Sample.objects.create(
        host=local_host,
        at=timezone.now(),
        step=RAW,
        values=series.pack({"smb||read_bps": 50e6, "arc||hit_pct": 96.5, "cpu||busy_pct": 12.0}),
    )
    page = viewer_client.get("/").content.decode()
    assert 'id="live"' in page and "47.7\xa0MB/s" in page and "96.5 %" in page
    Sample.objects.update(at=timezone.now() - timedelta(minutes=5))  # stale: no figures shown as if current
    assert 'id="live"' not in viewer_client.get("/").content.decode()


def hostile(monkeypatch, document: str):
    """A NAS whose sampler prints this (answered through the real Transport.run checks)."""
    from tests.support.runners import FakeHost  # noqa: PLC0415

    return FakeHost().answer("python3", stdout=document).install(monkeypatch)


def test_a_sample_with_nan_or_a_wrong_shape_is_refused_whole_and_the_page_says_why(
    local_host, viewer_client, monkeypatch
):
    good = json.loads(captured("sample_after.json"))
    for document, words in (
        (captured("sample_after.json").replace('"size":219899120', '"size":NaN'), "NaN is not a number"),
        (json.dumps({**good, "links": {"eth0": [1, 2, 3]}}), "links is not what the sampler prints"),
        (json.dumps({**good, "datasets": {"tank": [-1, 0, 0, 0]}}), "datasets is not what the sampler prints"),
        (json.dumps({k: v for k, v in good.items() if k != "arc"}), "ARC counters are missing"),
        ("[1, 2]", "not a JSON object"),
    ):
        hostile(monkeypatch, document)
        assert services.sample_take(host=local_host) is None
        state = SamplerState.objects.get(host=local_host)
        assert words in state.error and state.counters == {}, (words, state.error)
        assert not Sample.objects.exists()
    assert "the sample was refused" in viewer_client.get("/analytics/").content.decode()


def test_a_nas_with_200k_datasets_makes_a_bounded_sample_that_keeps_the_busiest(local_host, monkeypatch):
    good = json.loads(captured("sample_after.json"))
    datasets = {f"tank/d{i}": [i, i, i, i] for i in range(200_000)}
    hostile(monkeypatch, json.dumps({**good, "datasets": datasets}))
    services.sample_take(host=local_host)
    kept = SamplerState.objects.get(host=local_host).counters
    assert len(kept["datasets"]) == 200 and "tank/d199999" in kept["datasets"] and "tank/d0" not in kept["datasets"]
    assert kept["datasets"]["(others)"][2] == sum(range(200_000 - 199))  # the rest, summed
    assert len(json.dumps(kept)) < 50_000
    assert "200,000 datasets: the 200 busiest kept" in SamplerState.objects.get(host=local_host).error
