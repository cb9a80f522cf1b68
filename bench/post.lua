-- bench/post.lua — wrk sends one body as a POST, again and again, and reports in one line.
--
--   BENCH_BODY=build/bench/medium.json wrk -s bench/post.lua --latency -c 8 -d 5s URL
--   BENCH_BODY=build/bench/medium.v2.bin BENCH_HEADER_LENGTH=546 wrk -s bench/post.lua ... URL
--
-- BENCH_BODY is the file whose bytes every request carries (read as bytes: a V2 binary
-- body is sent as it is). Without BENCH_HEADER_LENGTH it goes as Content-Type:
-- application/json; with it, as tritonclient.http sends a binary request: with
-- Inference-Header-Content-Length: BENCH_HEADER_LENGTH and no Content-Type. Besides wrk's own report, done() prints one line that
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
local header_length = os.getenv("BENCH_HEADER_LENGTH")
if header_length ~= nil and header_length ~= "" then
  wrk.headers["Inference-Header-Content-Length"] = header_length
else
  wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.timeout + e.status
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "BENCH requests=%d seconds=%.3f rps=%.2f p50_ms=%.3f p99_ms=%.3f errors=%d non2xx=%d bytes=%d\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1e3, latency:percentile(99) / 1e3, errors, e.status, summary.bytes))
end
