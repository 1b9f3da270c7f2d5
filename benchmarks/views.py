"""Benchmark pages (fio and iperf3 runs arrive with the benchmarks issue)."""

from django.shortcuts import render

from appliance.selectors import host_current


def benchmark_list(request):
    return render(request, "benchmarks/benchmark_list.html", {"host": host_current(request)})
