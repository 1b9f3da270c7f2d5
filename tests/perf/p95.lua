-- wrk script: optional think time per connection (TARN_WRK_DELAY_MS on average, drawn from 0.5x-1.5x so
-- the clients do not fire in lockstep), then one line with
-- the p95 latency (ms), the request count, errors and the duration (µs).
--
-- Each of wrk's threads seeds its own random numbers: seeded alike (os.time()), the two threads drew the same
-- delays, so their clients fired in pairs.
-- The first TARN_WRK_FIRST requests of a thread go at once: its clients' first ones, as long as the server takes
-- longer to answer than wrk takes to connect (every page does). A delayed first request left each new connection
-- idle for up to 1.5 s, and gunicorn's gthread worker gives a new connection a thread that waits for its first bytes
-- (up to 5 s): requests that had arrived queued behind connections that had sent nothing, and the run's start took
-- p99 to 0.7-1.5 s. The front (nginx) sends its request as it connects, so that stall was the load generator's own.
-- Now the start is one burst of a request per client (50 pages in about half a second).
local pause = tonumber(os.getenv("TARN_WRK_DELAY_MS") or "0")
local first = tonumber(os.getenv("TARN_WRK_FIRST") or "0")
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end

function init(args)
  math.randomseed(os.time() * 1000 + id)
end

local sent = 0
if pause > 0 then
  delay = function()
    sent = sent + 1
    if sent <= first then
      return 0
    end
    return math.random(math.floor(pause / 2), math.floor(pause * 3 / 2))
  end
end

done = function(summary, latency, requests)
  io.write(string.format("TARN %.2f %d %d %d\n", latency:percentile(95) / 1000, summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.timeout,
    summary.duration))
end
