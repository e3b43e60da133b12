-- wrk script (bench/lib/load.ts): one request per line of a feed file, "Authorization value<TAB>body"
-- (and, for DPoP, "<TAB>proof": the line's DPoP header),
-- every line once ("once": single-use refresh tokens) or cycling ("cycle": access tokens); counts the
-- answers by status and prints a JSON summary.
--   wrk ... -s feed.lua URL -- FEED once|cycle METHOD RATE ["Header: value" ...]
-- RATE 0: wrk's closed loop. RATE > 0: open loop at RATE requests a second (wrk -t1 only). Request
-- k is due at start + k / RATE; each connection, once answered, takes the next due request and waits
-- for its time (delay()). A request sent after its time, because every connection was still waiting
-- for an answer, is late: wrk's latency starts at the send, so the lateness is recorded here (see
-- done()): a stall's queue is not hidden (no coordinated omission). Each request also carries its
-- due time as its X-Request-Id; a server that echoes it (ours does) gets each latency measured
-- exactly from its due time.
local lines, n, once, method, headers, threads = {}, 0, false, "GET", {}, {}
counts, sent, over, late, exact = {}, 0, 0, {}, {}

local ffi = require("ffi")
ffi.cdef [[ typedef struct { long tv_sec; long tv_nsec; } bench_timespec; int clock_gettime(int, bench_timespec *); ]]
local ts = ffi.new("bench_timespec")
local function now_us() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3 end

-- Due times handed to connections and not yet sent, in order (a queue).
local due, first, last, interval, start, slot = {}, 1, 0, 0, nil, 0

function init(args)
  once, method = args[2] == "once", args[3] or "GET"
  local rate = tonumber(args[4]) or 0
  for k = 5, #args do
    local name, value = args[k]:match("^([^:]+):%s*(.*)$")
    headers[name] = value
  end
  if args[1] and args[1] ~= "-" then for l in io.lines(args[1]) do n = n + 1; lines[n] = l end end
  -- wrk asks for delay() after init: defined only for an open loop.
  if rate > 0 then
    interval = 1e6 / rate
    function delay()
      local now = now_us()
      start = start or now
      local at = start + slot * interval
      slot, last = slot + 1, last + 1
      due[last] = at
      return math.max(0, math.floor((at - now) / 1000)) -- ms: up to 1 ms early, never late
    end
  end
end

function request()
  if first <= last then
    local now, at = now_us(), due[first]
    late[#late + 1] = math.max(0, now - at)
    -- Sent early (a timer's millisecond), it is timed from its send.
    headers["X-Request-Id"] = string.format("bench-due-%d", math.min(now, at))
    due[first], first = nil, first + 1
  end
  if n == 0 then return wrk.format(method, nil, headers) end
  sent = sent + 1
  if once and sent > n then over = over + 1 end -- a spent token again: the feed was too short
  local auth, body, proof = lines[(sent - 1) % n + 1]:match("^([^\t]*)\t?([^\t]*)\t?(.*)$")
  if auth ~= "" then headers["Authorization"] = auth end
  headers["DPoP"] = proof ~= "" and proof or nil
  return wrk.format(method, nil, headers, body ~= "" and body or nil)
end

function response(status, answer)
  counts[status] = (counts[status] or 0) + 1
  local echoed = interval > 0 and (answer["X-Request-Id"] or answer["x-request-id"])
  local at = echoed and tonumber(echoed:match("^bench%-due%-(%d+)$"))
  if at then exact[#exact + 1] = now_us() - at end
end

function setup(thread) table.insert(threads, thread) end

local function percentile(sorted, p)
  if #sorted == 0 then return 0 end
  return sorted[math.max(1, math.ceil(p / 100 * #sorted))]
end

-- p99 from the due time, open loop: measured exactly when the server echoed the due times;
-- otherwise bounded from above by lateness p99.5 + wrk's p99.5, as P(late + wait > a + b) <=
-- P(late > a) + P(wait > b).
function done(summary, latency)
  local status, spent, lateness, exactly = {}, 0, {}, {}
  for _, t in ipairs(threads) do
    for code, c in pairs(t:get("counts")) do status[#status + 1] = string.format('"%d":%d', code, c) end
    spent = spent + t:get("over")
    for _, v in ipairs(t:get("late")) do lateness[#lateness + 1] = v end
    for _, v in ipairs(t:get("exact")) do exactly[#exactly + 1] = v end
  end
  table.sort(lateness)
  table.sort(exactly)
  local p50, p99 = latency:percentile(50), latency:percentile(99)
  if #exactly >= 0.99 * summary.requests and #exactly > 0 then
    p50, p99 = percentile(exactly, 50), percentile(exactly, 99)
  elseif #lateness > 0 then
    p99 = latency:percentile(99.5) + percentile(lateness, 99.5)
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"errors":%d,"timeouts":%d,"wrapped":%d,"p50Us":%d,"p99Us":%d,"lateP99Us":%d,"lateMaxUs":%d,"exact":%s,"status":{%s}}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write, e.timeout, spent,
    p50, p99, percentile(lateness, 99.5), lateness[#lateness] or 0, tostring(#exactly > 0 and #exactly >= 0.99 * summary.requests), table.concat(status, ",")))
end
