-- wrk script of bench/bench_load.py.
--   wrk -s bench/load/wrk_report.lua URL -- [PATHS_FILE]
-- With a PATHS_FILE (one path a line) each thread walks the paths in turn, starting at a
-- different place, so the same URL is not asked for twice in a row (caches cannot hide the
-- cost); without one, every request asks for URL. done() prints one JSON line of figures
-- that bench_load.py reads: requests/s, latency percentiles (microseconds), errors.

local paths = nil
local next_path = 1

function init(args)
  if args[1] ~= nil then
    paths = {}
    for line in io.lines(args[1]) do
      if #line > 0 then paths[#paths + 1] = line end
    end
    -- spread the threads over the list (wrk numbers nothing: use the table address)
    next_path = (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % #paths + 1
  end
end

function request()
  if paths == nil then
    return wrk.format(nil)
  end
  local path = paths[next_path]
  next_path = next_path % #paths + 1
  return wrk.format(nil, path)
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "seconds": %.3f, "rps": %.2f, "bytes": %d, ' ..
    '"p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, "mean_us": %.1f, ' ..
    '"non_2xx_3xx": %d, "connect_errors": %d, "read_errors": %d, "write_errors": %d, "timeouts": %d}\n',
    summary.requests, seconds, summary.requests / seconds, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    e.status, e.connect, e.read, e.write, e.timeout))
end
