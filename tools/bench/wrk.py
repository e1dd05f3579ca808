"""Closed-loop load from wrk (a native load generator, so the measured server is the bottleneck,
not the client): a Lua script builds each ``POST /v1/transfers`` with a unique Idempotency-Key
(also in the body, as the API asks) between two random wallets from a file, or, with
``hot`` > 0, from the first wallet for that share of the requests.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

THREADS = int(os.environ.get("BENCH_WRK_THREADS", "1"))

SCRIPT = r"""
-- args: wallets file, hot share, Authorization header value, key prefix, body kind
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tno", counter)
end

local wallets, hot, auth, prefix, kind, n
function init(args)
  wallets = {}
  for line in io.lines(args[1]) do
    if #line > 0 then wallets[#wallets + 1] = line end
  end
  hot = tonumber(args[2])
  auth = args[3]
  prefix = args[4] .. "-" .. tno .. "-"
  kind = args[5]
  math.randomseed(os.time() + tno * 7919)
  n = 0
end

local CUSTOMER = '{"account_type":"individual","email":"ada@example.com","country_code":"US",'
  .. '"service_user_id":"u-1","full_name":"Ada Lovelace"}'

function request()
  n = n + 1
  local key = prefix .. n
  local headers = {["Content-Type"] = "application/json", ["Authorization"] = auth,
                   ["Idempotency-Key"] = key}
  if kind == "customers" then
    return wrk.format("POST", nil, headers, CUSTOMER)
  end
  local nw = #wallets
  local s
  if hot > 0 and math.random() < hot then s = 1 else s = math.random(nw) end
  local d = math.random(nw - 1)
  if d >= s then d = d + 1 end
  local body = '{"source":{"payment_rail":"provider_wallet","currency":"USDC","amount":"0.01",'
    .. '"provider_wallet_id":"' .. wallets[s] .. '"},"destination":{"payment_rail":"provider_wallet",'
    .. '"currency":"USDC","provider_wallet_id":"' .. wallets[d] .. '"},"idempotency_key":"' .. key .. '"}'
  return wrk.format("POST", nil, headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"non2xx":%d,"socket_errors":%d,"timeouts":%d,'
      .. '"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""


def answered(res: dict[str, float]) -> float:
    """The requests of a run answered 2xx: for transfers, the transfers done. A refused or
    failed request costs CPU but moves no money; CPU per transfer divides by this."""
    return res["requests"] - res["non2xx"]


def available() -> bool:
    return shutil.which("wrk") is not None


def run(
    url: str,
    *,
    wallets: list[str] | None = None,
    hot: float = 0.0,
    auth: str = "Bearer none",
    duration: float = 10,
    connections: int = 64,
    kind: str = "transfers",
) -> dict[str, float]:
    """One closed-loop wrk run: requests, rps, errors (non-2xx + socket), p50/p99 ms, client_cores."""
    with tempfile.TemporaryDirectory(prefix="sluice-wrk-") as tmp:
        script, wfile = Path(tmp) / "load.lua", Path(tmp) / "wallets.txt"
        script.write_text(SCRIPT)
        wfile.write_text("\n".join(wallets or ["w_a", "w_b"]) + "\n")
        cmd = [
            "wrk",
            f"-t{THREADS}",
            f"-c{connections}",
            f"-d{max(1, round(duration))}s",
            "--timeout",
            "30s",
            "-s",
            str(script),
            url,
            "--",
            str(wfile),
            str(hot),
            auth,
            uuid.uuid4().hex[:16],
            kind,
        ]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=duration + 120)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = next(x for x in out.stdout.splitlines() if x.startswith("WRKJSON "))
    raw = json.loads(line.split(" ", 1)[1])
    secs = raw["duration_us"] / 1e6 or 1.0
    ok = raw["requests"] - raw["non2xx"]
    return {
        "requests": raw["requests"],
        "rps": raw["requests"] / secs,
        "ok_rps": ok / secs,
        "errors": raw["non2xx"] + raw["socket_errors"] + raw["timeouts"],
        "non2xx": raw["non2xx"],
        "p50_ms": raw["p50_us"] / 1000,
        "p99_ms": raw["p99_us"] / 1000,
        "max_ms": raw["max_us"] / 1000,
        # wrk's own CPU use in cores (1.0 = one core busy): well below its thread count means
        # the load generator had headroom and the server was the bottleneck.
        "client_cores": client_cpu / secs,
    }
