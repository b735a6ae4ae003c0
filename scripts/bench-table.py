#!/usr/bin/env python3
"""Print scripts/bench's table: each target against the measured figure (results file from
scripts/bench: one `key<TAB>value` per line; a value is a figure, a hyperfine JSON export, or a
`name median_ms=… p99_ms=…` line from memtrail-corpus)."""
import json
import sys

res = {}
for line in open(sys.argv[1], encoding="utf-8"):
    k, _, v = line.rstrip("\n").partition("\t")
    res[k] = v
size = sys.argv[2]
profile = sys.argv[3] if len(sys.argv) > 3 else "release"


def hf(key):
    """(median ms, p99 ms, runs) of a hyperfine export."""
    if key not in res:
        return None
    times = sorted(json.load(open(res[key]))["results"][0]["times"])
    n = len(times)
    p99 = times[min(n, max(1, -(-99 * n // 100))) - 1]
    return times[n // 2] * 1e3, p99 * 1e3, n


def line(key):
    if key not in res:
        return None
    f = dict(x.split("=", 1) for x in res[key].split() if "=" in x)
    return float(f["median_ms"]), float(f["p99_ms"]), int(f["runs"])


def cpu(key):
    """` (CPU x ms)` when scripts/bench measured the command's CPU time."""
    return f" (CPU {float(res[key]):.1f} ms)" if key in res else ""


def secs(t):
    parts = [float(x) for x in t.split(":")]
    s = 0.0
    for x in parts:
        s = s * 60 + x
    return s


rows = []


def row(what, target, measured, ok):
    rows.append((what, target, measured, "yes" if ok else ("n/a" if ok is None else "NO")))


raw = int(res["raw_bytes"])
msgs = int(res.get("messages_total") or res.get("import_messages") or 0)
h = hf("hook")
rss = int(res["hook_rss_kb"]) / 1024
row(f"Stop hook, new 20 KB turn, store of {msgs:,} msgs",
    "median <= 5 ms, p99 <= 15 ms, RSS <= 15 MB",
    f"median {h[0]:.2f} ms, p99 {h[1]:.2f} ms, RSS {rss:.1f} MB ({h[2]} runs){cpu('cpu_hook')}",
    h[0] <= 5 and h[1] <= 15 and rss <= 15)
n = hf("hook_noop")
row("Stop hook, nothing new (no-op)", "-",
    f"median {n[0]:.2f} ms, p99 {n[1]:.2f} ms{cpu('cpu_hook_noop')}", None)
if "cm_hook" in res:
    cm_s, cm_kb = res["cm_hook"].split()
    ratio = float(cm_s) * 1e3 / h[0]
    row(f"context-mode 1.0.169 Stop hook, same payload (node {res.get('node_version', '?')})",
        ">= 20x slower than memtrail",
        f"{float(cm_s) * 1e3:.0f} ms, RSS {int(cm_kb) / 1024:.0f} MB: {ratio:.0f}x", ratio >= 20)
else:
    row("context-mode Stop hook", ">= 20x slower", "not run (no npx/node)", None)
t = secs(res["import_time"])
im = int(res["import_messages"])
irss = int(res["import_rss_kb"]) / 1024
mbs = raw / 1e6 / t
row(f"import {raw / 1e6:,.0f} MB, {res['files']} files, end to end",
    ">= 40 MB/s, >= 40k msgs/s, RSS <= 150 MB",
    f"{t:.1f} s: {mbs:.1f} MB/s, {im / t:,.0f} msgs/s ({im:,} msgs), RSS {irss:.0f} MB",
    mbs >= 40 and im / t >= 40000 and irss <= 150)
r = hf("reimport")
row(f"re-import, nothing changed, {res['files']} files", "<= 150 ms",
    f"median {r[0]:.0f} ms", r[0] <= 150)
s = hf("search_cli")
s2 = hf("search_cli_rare")
s3 = hf("search_cli_rareword")
row(f"`memtrail search` 2 frequent words, limit 20, {msgs:,} msgs", "median <= 10 ms end to end",
    f"median {s[0]:.1f} ms (mid-frequency pair: {s2[0]:.1f} ms"
    + (f", rare word: {s3[0]:.1f} ms" if s3 else "") + f"){cpu('cpu_search_cli')}", s[0] <= 10)
i = line("search_inproc")
i2 = line("search_inproc_rare")
row("search in-process (the first two queries; a serving process's 16 MiB page cache)", "<= 2 ms",
    f"median {i[0]:.2f} ms (mid-frequency pair: {i2[0]:.2f} ms)", i[0] <= 2)
se = hf("sessions")
row(f"`memtrail sessions list --limit 20`, {int(res['sessions_count']):,} sessions", "<= 10 ms",
    f"median {se[0]:.1f} ms", se[0] <= 10)
m = line("mcp_search")
row("MCP `search` round trip, warm server", "<= 5 ms", f"median {m[0]:.2f} ms, p99 {m[1]:.2f} ms",
    m[0] <= 5)
st = int(res["store_bytes"])
# Issue 18's target (the first round's was 25%).
row("store size / raw transcript bytes", "<= 50%",
    f"{st / 1e6:,.0f} MB / {raw / 1e6:,.0f} MB = {100 * st / raw:.0f}%", st / raw <= 0.50)
sn = line("snapshot")
ss = line("snapshot_store")
if ss:
    row("snapshot of a session with 10k events: read from the store, correlated, built", "<= 2 ms",
        f"median {ss[0]:.2f} ms, p99 {ss[1]:.2f} ms (the build alone: {sn[0]:.2f} ms)", ss[0] <= 2)
else:
    row("snapshot of a session with 10k events (build only)", "<= 2 ms", f"median {sn[0]:.3f} ms",
        sn[0] <= 2)
v = hf("version")
row("`memtrail --version`", "<= 2 ms", f"median {v[0]:.2f} ms{cpu('cpu_version')}", v[0] <= 2)

if "sync_skipped" in res:
    row("sync to PostgreSQL", "-", f"not run: {res['sync_skipped']}", None)
elif "sync_first_time" in res:
    t = secs(res["sync_first_time"])
    n = int(res["sync_first_messages"])
    b = int(res["sync_first_bytes"])
    srss = int(res["sync_first_rss_kb"]) / 1024
    row(f"first `memtrail sync` of the store ({n:,} msgs) into an empty PostgreSQL",
        "<= 60 s, RSS <= 200 MB (1 GB corpus)",
        f"{t:.1f} s: {n / t:,.0f} msgs/s, {b / 1e6 / t:.1f} MB/s of text ({b / 1e6:,.0f} MB), "
        f"RSS {srss:.0f} MB", t <= 60 and srss <= 200)
    st = hf("sync_turn")
    row("`memtrail sync` after one new 20 KB turn", "median <= 50 ms",
        f"median {st[0]:.1f} ms, p99 {st[1]:.1f} ms ({st[2]} runs)", st[0] <= 50)
    sp, sp2, sp3 = hf("search_pg"), hf("search_pg_rare"), hf("search_pg_rareword")
    if sp and sp2 and sp3:
        # The mid-frequency pair is held to the frequent words' bound: it is neither.
        row(f"`memtrail --store postgres://… search`, limit 20, {msgs:,} msgs",
            "frequent <= 50 ms, rare word <= 20 ms, mid-frequency pair <= 50 ms (~1M msgs)",
            f"frequent median {sp[0]:.1f} ms, rare word {sp3[0]:.1f} ms "
            f"(mid-frequency pair {sp2[0]:.1f} ms)",
            sp[0] <= 50 and sp3[0] <= 20 and sp2[0] <= 50)
    elif sp and sp2:
        # A results file from before the rare word was measured (2026-12-04).
        row(f"`memtrail --store postgres://… search`, limit 20, {msgs:,} msgs",
            "frequent <= 50 ms, rare <= 20 ms (~1M msgs)",
            f"frequent median {sp[0]:.1f} ms, mid-frequency pair {sp2[0]:.1f} ms "
            "(no rare word in this run)", None)
    else:
        row("`memtrail --store postgres://… search`", "frequent <= 50 ms, rare <= 20 ms",
            "not run (this memtrail has no --store)", None)
    hs, hsp = hf("hook_sync"), hf("hook_sync_spawn")
    # "Unchanged": within 10% (at least 0.5 ms) of the Stop hook without sync, same payloads;
    # on CPU time when perf measured both (wall time on a shared machine drifts between runs).
    if "cpu_hook_sync" in res and "cpu_hook" in res:
        a, b = float(res["cpu_hook_sync"]), float(res["cpu_hook"])
        cpu_note = f"; CPU {a:.1f} ms, without sync {b:.1f} ms"
    else:
        a, b = hs[0], h[0]
        cpu_note = ""
    row("Stop hook, new 20 KB turn, sync configured (a background sync at most once a minute)",
        "unchanged (no network in the hook)",
        f"median {hs[0]:.2f} ms, p99 {hs[1]:.2f} ms (without sync {h[0]:.2f} ms){cpu_note}; "
        f"starting a background sync at every run: median {hsp[0]:.2f} ms",
        a <= b + max(0.5, 0.1 * b))

built = "" if profile == "release" else f", {profile} build: not comparable with the release figures"
print(f"\nmemtrail benchmark, corpus {size} ({raw:,} bytes){built}\n")
print("| what | target | measured | met |")
print("|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
