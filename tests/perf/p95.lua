-- wrk script: print the p95 latency (ms), the request count and non-2xx responses on one line.
done = function(summary, latency, requests)
  io.write(string.format("TARN %.2f %d %d %d\n", latency:percentile(95) / 1000, summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.timeout,
    summary.duration))
end
