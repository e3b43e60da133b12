-- wrk script (bench/lib/load.ts): one request per line of a feed file, "Authorization value<TAB>body",
-- every line once ("once": single-use refresh tokens) or cycling ("cycle": access tokens); counts the
-- answers by status and prints a JSON summary.
--   wrk ... -s feed.lua URL -- FEED once|cycle METHOD ["Header: value" ...]
local lines, n, once, method, headers, threads = {}, 0, false, "GET", {}, {}
counts, sent, over = {}, 0, 0

function init(args)
  once, method = args[2] == "once", args[3] or "GET"
  for k = 4, #args do
    local name, value = args[k]:match("^([^:]+):%s*(.*)$")
    headers[name] = value
  end
  if args[1] and args[1] ~= "-" then for l in io.lines(args[1]) do n = n + 1; lines[n] = l end end
end

function request()
  if n == 0 then return wrk.format(method, nil, headers) end
  sent = sent + 1
  if once and sent > n then over = over + 1 end -- a spent token again: the feed was too short
  local auth, body = lines[(sent - 1) % n + 1]:match("^([^\t]*)\t?(.*)$")
  if auth ~= "" then headers["Authorization"] = auth end
  return wrk.format(method, nil, headers, body ~= "" and body or nil)
end

function response(status) counts[status] = (counts[status] or 0) + 1 end

function setup(thread) table.insert(threads, thread) end

function done(summary, latency)
  local status, spent = {}, 0
  for _, t in ipairs(threads) do
    for code, c in pairs(t:get("counts")) do status[#status + 1] = string.format('"%d":%d', code, c) end
    spent = spent + t:get("over")
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"errors":%d,"timeouts":%d,"wrapped":%d,"p50Us":%d,"p99Us":%d,"status":{%s}}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write, e.timeout, spent,
    latency:percentile(50), latency:percentile(99), table.concat(status, ",")))
end
