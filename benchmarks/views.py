"""Benchmark pages (fio and iperf3 runs arrive with the benchmarks issue)."""

from django.shortcuts import render

from appliance.selectors import host_current


def benchmark_list(request):
    return render(
        request,
        "_not_built_yet.html",
        {
            "title": "Benchmarks",
            "needs_zfs": False,
            "host": host_current(request),
            "what": "fio and iperf3 benchmark runs against",
        },
    )
