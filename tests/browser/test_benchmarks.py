"""In a real browser, against the lab guest with a real bench worker: start a fio run on a dataset, watch its
progress bar move, read its results, graphs and manifest, run it again, compare the two and download the
comparison's chart as a PNG."""

import re

import pytest

from tests.browser.conftest import login_on_lab, shot, wait_for_operation
from tests.support.worker import start_worker, stop_worker

pytestmark = [pytest.mark.browser, pytest.mark.lab, pytest.mark.lane(1), pytest.mark.django_db(transaction=True)]


def test_start_a_run_watch_it_and_open_its_graphs(page, lab_worker, guest, tmp_path):
    guest.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/data")
    bench = start_worker("bench.lab", tmp_path / "bench.log")
    try:
        login_on_lab(page)
        page.goto("/pools/")
        page.click("text=Refresh inventory")
        wait_for_operation(page)

        page.goto("/benchmarks/")
        assert "No runs yet" in page.inner_text("main")
        page.select_option("select[name=profile]", "randrw-8k")
        page.select_option("#run-form select[name=target]", "dataset:tank/data")
        page.fill("input[name=size]", "16m")
        page.fill("input[name=runtime]", "3")  # after its 10 s ramp: the bar has time to move
        page.check("#run-form input[name=cache_ok]")  # 16 MiB fits in the guest's ARC: a small, quick run
        page.click("#run-form button")
        page.wait_for_url("**/benchmarks/runs/*/")
        first = page.url.rstrip("/").rsplit("/", 1)[-1]
        page.wait_for_selector("#run-status progress", timeout=60_000)
        page.wait_for_function("document.querySelector('#run-status progress')?.value > 0", timeout=60_000)
        seen = int(page.get_attribute("#run-status progress", "value"))
        shot(page, "benchmarks-01-running")
        page.wait_for_selector("#run-status .badge-succeeded", timeout=180_000)
        assert 0 < seen < 100, "the bar moved while fio ran"
        results = page.inner_text("#results")
        assert "randrw-8k" in results and "read" in results and "write" in results
        page.wait_for_function("document.querySelectorAll('canvas[data-drawn]').length == 2", timeout=30_000)
        assert "fio --name=randrw-8k" in page.inner_text("main")
        shot(page, "benchmarks-02-results")
        with page.expect_download() as csv_file:
            page.click("#csv")
        assert csv_file.value.path().read_text().startswith("run,profile,target,job,direction")

        page.click("#again", timeout=120_000)  # enabled once the first run's operation has removed its scratch dataset
        page.wait_for_url(re.compile(rf"/benchmarks/runs/(?!{first}/)\d+/$"))  # the new run's page, not a refusal
        page.wait_for_selector("#run-status .badge-succeeded", timeout=180_000)
        page.goto("/benchmarks/")
        boxes = page.locator("#runs input[name=runs]")
        assert boxes.count() == 2
        boxes.nth(0).check()
        boxes.nth(1).check()
        page.click("#compare")
        page.wait_for_selector("canvas[data-drawn]")
        assert "Bandwidth (MB/s)" in page.inner_text("#compare") and "%" in page.inner_text("#compare")
        shot(page, "benchmarks-03-compare")
        with page.expect_download() as png:
            page.click("a.png-download")
        assert png.value.suggested_filename == "tarn-compare.png"
        assert png.value.path().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        stop_worker(bench)
    assert "tarnbench" not in guest.sh("zfs list -H -o name")
