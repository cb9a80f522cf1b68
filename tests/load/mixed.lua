-- tests/load/mixed.lua — wrk script for `make load`: a mix of valid requests, each
-- answered 200, in a fixed rotation: small and mid-size attention problems (masks,
-- bias, a vector q), the text and SVG renderings, multi-head with random inputs, a
-- batch. Anything but a 200 is counted as unexpected and printed by done().
--
-- The numbers come from a fixed seed, so every run sends the same bytes.

local requests = {}
local counter = 0
unexpected = 0 -- a global: done() reads it from each thread with thread:get
local threads = {}

local function matrix(rows, cols)
  local r = {}
  for i = 1, rows do
    local c = {}
    for j = 1, cols do c[j] = string.format("%.3f", math.random() * 4 - 2) end
    r[i] = "[" .. table.concat(c, ",") .. "]"
  end
  return "[" .. table.concat(r, ",") .. "]"
end

local function attention(nq, nk, dk, dv, extra)
  return string.format('{"q":%s,"k":%s,"v":%s%s}', matrix(nq, dk), matrix(nk, dk),
                       matrix(nk, dv), extra or "")
end

local function add(path, body)
  requests[#requests + 1] = wrk.format("POST", path, { ["Content-Type"] = "application/json" }, body)
end

function init(args)
  math.randomseed(20240501)
  add("/v1/attention", '{"q":[[1,0,1,0],[0,1,0,1]],"k":[[1,0,1,0],[1,1,1,1]],"v":[[10,0],[0,10]]}')
  add("/v1/attention", attention(3, 3, 2, 2, ',"mask":"causal","round":3'))
  add("/v1/attention", '{"q":[1,0],"k":[[1,0],[0,1],[0.8,0.2]],"v":[[10,0],[0,20],[8,4]],"scale":1}')
  add("/v1/attention", attention(16, 24, 8, 8, ',"mask":' .. matrix(16, 24):gsub("-?%d%.%d+", function(x)
    return tonumber(x) > -1.5 and "1" or "0" end)))
  add("/v1/attention", attention(32, 32, 16, 16, ',"include":["weights","summary"]'))
  add("/v1/attention", attention(64, 64, 32, 16, ',"bias":' .. matrix(64, 64)))
  add("/v1/attention?format=text", attention(4, 5, 3, 2))
  add("/v1/attention?format=svg", attention(6, 6, 4, 2))
  add("/v1/multihead", '{"heads":2,"random":{"seed":7,"n":6,"d_model":8}}')
  add("/v1/attention/batch", '{"items":[' .. attention(2, 3, 2, 1) .. ',' .. attention(4, 4, 4, 4) .. ']}')
end

function request()
  counter = counter % #requests + 1
  return requests[counter]
end

function response(status, headers, body)
  if status ~= 200 then unexpected = unexpected + 1 end
end

function setup(thread)
  threads[#threads + 1] = thread
end

function done(summary, latency, reqs)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("unexpected") end
  local e = summary.errors
  io.write(string.format("load: requests %d, errors connect %d read %d write %d timeout %d, " ..
                         "unexpected statuses %d\n", summary.requests, e.connect, e.read, e.write,
                         e.timeout, total))
end
