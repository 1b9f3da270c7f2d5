-- wrk script: optional think time per connection (TARN_WRK_DELAY_MS on average, drawn from 0.5x-1.5x so
-- the clients do not fire in lockstep), then one line with
-- the p95 latency (ms), the request count, errors and the duration (µs).
local pause = tonumber(os.getenv("TARN_WRK_DELAY_MS") or "0")
if pause > 0 then
  math.randomseed(os.time())
  delay = function() return math.random(math.floor(pause / 2), math.floor(pause * 3 / 2)) end
end
done = function(summary, latency, requests)
  io.write(string.format("TARN %.2f %d %d %d\n", latency:percentile(95) / 1000, summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.timeout,
    summary.duration))
end
