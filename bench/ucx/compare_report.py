#!/usr/bin/env python3
"""Merges bench/ucx/compare.sh's raw runs into ucx_compare.txt (one table) and ucx_compare.jsonl.

Pairs (tether row <- ucx_perftest test):
  put lat   tether `put` (blocking, remote completion = put + flush: one round trip)  <- 2 x ucp_put_lat 50%ile
            (ucp_put_lat is a ping-pong reporting one way = round trip / 2; the one-way number is printed too)
  get lat   tether `get` (blocking)                                                    <- ucp_get 50%ile (1 outstanding)
  put bw    tether `put_nbi` (windows of 64 + quiet)                                   <- ucp_put_bw overall MB/s
  get bw    tether `get_nbi` (windows of 64 + quiet)                                   <- ucp_get -O 64 overall MB/s
With ROWS=msg (two-sided, issue #20; tether_bench_msg's JSON lines):
  msg lat   tether_send/recv ping-pong, one way = round trip / 2, median of batches <- tag_lat 50%ile (one way)
  msg bw    windows of 64 tether_isend + waitall, a 4-byte ack per window            <- tag_bw -O 64 overall MB/s
ratio = tether / ucx_perftest for latency (lower is better), tether / ucx_perftest for bandwidth (higher is better).
"""
import datetime, json, os, platform, subprocess, sys

raw, out, cmdline, sizes = sys.argv[1], sys.argv[2], sys.argv[3], [int(s) for s in sys.argv[4].split()]
kind_of_rows = sys.argv[5] if len(sys.argv) > 5 else "rma"

perf = {}  # (tr, test, size) -> dict
for line in open(os.path.join(raw, "perftest")):
    tr, test, size, csv = line.rstrip("\n").split("|", 3)
    f = csv.split(",")
    if len(f) < 8:
        perf[(tr, test, int(size))] = None
        continue
    perf[(tr, test, int(size))] = {"lat_us": float(f[1]), "bw_MBps": float(f[5])}

tether = {}  # (tr, op, size) -> row
for tr in ("tcp", "shm", "netns"):
    p = os.path.join(raw, f"tether_{tr}.jsonl")
    if not os.path.exists(p):
        continue
    for line in open(p):
        r = json.loads(line)
        if r.get("record") == "row":  # tether_bench_put_get
            tether[(tr, r["op"], r["bytes"])] = r
        elif r.get("impl") == "tether":  # tether_bench_msg: op latency (us) or bw (GB/s) in "value"
            key = "lat_us_median" if r["op"] == "latency" else "bw_GBps"
            tether[(tr, r["op"], r["size"])] = {key: r["value"]}

if kind_of_rows == "msg":
    pairs = [("msg lat (us)", "latency", "tag_lat", "lat"), ("msg bw (GB/s)", "bw", "tag_bw -O 64", "bw")]
else:
    pairs = [("put lat (us)", "put", "ucp_put_lat", "lat"), ("get lat (us)", "get", "ucp_get", "lat"),
             ("put bw (GB/s)", "put_nbi", "ucp_put_bw", "bw"), ("get bw (GB/s)", "get_nbi", "ucp_get -O 64", "bw")]
date = datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
try:
    ucx_ver = subprocess.run(["ucx_info", "-v"], capture_output=True, text=True).stdout.strip().splitlines()[0]
except Exception:
    ucx_ver = "unknown"
NOTES = {
    "tcp": "# tcp: both over UCX_TLS=tcp,self UCX_NET_DEVICES=lo (tether: TETHER_PATHS=host=ucx).",
    "shm": "# shm: ucx_perftest over UCX_TLS=sm,self vs tether's own shm path (no UCX: memcpy into the mapped peer).",
    "netns": "# netns: the two hosts of scripts/netns-hosts (network namespaces joined by a veth pair, 10.77.0.1/.2):\n"
             "#   ucx_perftest server in host 0, client in host 1; tether 1 PE per host (one tetherrun each with\n"
             "#   --ranks/--rendezvous/--secret-file); both over UCX_TLS=tcp,self UCX_NET_DEVICES=tnet0 (the veth).",
}


def write(name, transports):
    rows, lines = [], []
    notes = [NOTES[t] for t in transports]
    lines.append(f"# tether over UCX vs ucx_perftest, side by side in one run ({date})")
    lines.append(f"# machine: {platform.node()} ({os.cpu_count()} CPUs), {ucx_ver}; load average at the end: "
                 f"{' '.join(open('/proc/loadavg').read().split()[:3])}")
    lines.append(f"# command: {cmdline}")
    lines += notes
    if kind_of_rows == "msg":
        lines.append("# msg lat: tether_bench_msg send/recv ping-pong, one way = round trip / 2 (median of 21 batches) vs")
        lines.append("#   ucx_perftest tag_lat (UCP tag ping-pong, one way, 50%ile).")
        lines.append("# msg bw: windows of 64 tether_isend + waitall and a 4-byte ack per window vs tag_bw with up to 64")
        lines.append("#   outstanding sends (-O 64), overall bandwidth (its MB/s read as MiB/s).")
    else:
        lines.append("# put lat: tether put = blocking put that returns remotely complete (put + flush: one round trip), so")
        lines.append("#   its ucx_perftest column is 2 x ucp_put_lat (a ping-pong that reports round trip / 2), one-way beside it.")
        lines.append("# get lat: ucx_perftest's blocking ucp_get over tcp takes ~1.1 ms in UCX 1.13 (with -O 16: ~2.5 us per get),")
        lines.append("#   so its tcp get-latency ratio says nothing about tether; see bench/ucx/README.md.")
    lines.append("# ratio: tether / ucx_perftest (latency: lower is better; bandwidth: higher is better)")
    for tr in transports:
        for title, op, test, kind in pairs:
            lines.append("")
            lines.append(f"## {tr}: {title}: tether {op} vs ucx_perftest {test}")
            extra = kind == "lat" and op == "put"
            lines.append(f"{'size':>10} {'ucx_perftest':>14} {'tether':>12} {'ratio':>8}" +
                         (f" {'(ucp_put_lat one-way)':>22}" if extra else ""))
            for s in sizes:
                p, t = perf.get((tr, test, s)), tether.get((tr, op, s))
                if kind == "lat":
                    pv = p["lat_us"] * (2 if extra else 1) if p else None
                    tv = t["lat_us_median"] if t else None
                else:
                    pv = p["bw_MBps"] * 1.048576e6 / 1e9 if p else None  # perftest MB/s are MiB/s
                    tv = t["bw_GBps"] if t else None
                ratio = tv / pv if pv and tv else None
                fmt = (lambda v: f"{v:.3f}" if v is not None else "n/a")
                lines.append(f"{s:>10} {fmt(pv):>14} {fmt(tv):>12} {fmt(ratio):>8}" +
                             (f" {fmt(p['lat_us'] if p else None):>22}" if extra else ""))
                rows.append({"record": "row", "transport": tr, "metric": title, "tether_op": op,
                             "perftest_test": test + (" x2 (round trip)" if extra else ""),
                             "bytes": s, "ucx_perftest": pv, "tether": tv, "ratio": ratio, "date": date})
    lines.append("")
    lines.append("# commands run (in order):")
    lines += ["#   " + c.rstrip() for c in open(os.path.join(raw, "commands"))]
    open(os.path.join(out, name + ".txt"), "w").write("\n".join(lines) + "\n")
    with open(os.path.join(out, name + ".jsonl"), "w") as f:
        f.write(json.dumps({"record": "run", "date": date, "command": cmdline, "ucx": ucx_ver}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")


present = {k[0] for k in perf} | {k[0] for k in tether}
base = "ucx_compare_msg" if kind_of_rows == "msg" else "ucx_compare"
if present & {"tcp", "shm"}:
    write(base, [t for t in ("tcp", "shm") if t in present])
if "netns" in present:
    write(base + "_netns", ["netns"])
