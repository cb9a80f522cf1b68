-- bench/post.lua — wrk sends one JSON body as a POST, again and again, and reports in one line.
--
--   BENCH_BODY=build/bench/medium.json wrk -s bench/post.lua --latency -c 8 -d 5s URL
--
-- BENCH_BODY is the file whose bytes every request carries (Content-Type:
-- application/json). Besides wrk's own report, done() prints one line that
-- bench/run.sh reads:
--
--   BENCH requests=N seconds=S rps=R p50_ms=A p99_ms=B errors=E non2xx=X bytes=Y
--
-- errors counts every failed request: connect, read, write, timeout and non-2xx/3xx
-- status (non2xx repeats the last alone). Responses are not read by the script:
-- checking them in Lua would cost more than some of the servers measured.

local path = os.getenv("BENCH_BODY")
if path == nil or path == "" then
  error("BENCH_BODY must name the request body file")
end
local f = assert(io.open(path, "rb"))
local body = f:read("*a")
f:close()

wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.timeout + e.status
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "BENCH requests=%d seconds=%.3f rps=%.2f p50_ms=%.3f p99_ms=%.3f errors=%d non2xx=%d bytes=%d\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1e3, latency:percentile(99) / 1e3, errors, e.status, summary.bytes))
end
