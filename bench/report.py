#!/usr/bin/python3
"""bench/report.py — the two judgments of `make bench`: do the services agree, and how did attnd do.

    report.py compare ATTND.json PYTHON.json
        Both responses to the same request, parsed: the largest |attnd − python| of each
        matrix and summary field. Exits 1 when the shapes differ or weights differ by
        more than 1e-9, so nothing is timed between services that disagree.

    report.py compare-v2 ATTND.bin PYTHON.bin
        The same for two V2 binary answers (each with its header's length, from
        Inference-Header-Content-Length, in FILE.hlen): every output's shape and
        datatype, and its largest |attnd − python| (−∞ where both block); exits 1 when
        they differ, or weights by more than 1e-9.

    report.py pyjson DIR NAME...
        For reference beside attnd's JSON figures: ujson.loads of DIR/NAME.json (the
        request) and ujson.dumps of attnd's response to it (DIR/NAME.response.json,
        parsed first), the Python service's own parser and writer; medians.

    report.py table HTTP.tsv META
        The HTTP table (every attnd figure as a ratio to its floor and to the Python
        service, all measured in the same run) and the targets, PASS or MISS (n/a: not
        measured, or a pass against a Python run that left one of its cores idle); under
        each target against a floor, the bound that target sets on attnd's CPU a request.
        HTTP.tsv: payload conns target requests seconds rps p50_ms p99_ms errors
        [cpu_ms] (target: attnd, fixed, replay, python for JSON; v2, replay_v2,
        python_v2 for V2 binary), one line a run; a server run
        several times at the same payload and connections (rounds, in turn with the
        others) is reported by its medians, and each ratio against a floor is the median
        of the rounds' ratios, each round's pair measured seconds apart. META: key=value
        lines from bench/run.sh (the long request's targets come from these alone). The
        binary path has its own table and targets (attnd V2 against its binary replay
        floor, attnd's own JSON and the Python V2 service, in req/s and in CPU a
        request), and the JSON path's floor targets are restated as the CPU a request
        they leave.

Standard library only (and numpy for compare), run with /usr/bin/python3. Not here:
running anything; the targets are printed, never asserted.
"""
import json
import os
import statistics
import sys

PAYLOADS = ("tiny", "medium", "large", "xl")
TOLERANCE = 1e-9
PYTHON_WORKERS = 2  # bench/run.sh starts bench/pyservice.py with --workers 2
TARGET_CONNS = (("tiny", 64), ("medium", 8), ("large", 1), ("xl", 1))  # each payload's target
NAMES = {"attnd": "attnd", "v2": "attnd V2", "replay_v2": "the binary replay floor",
         "python_v2": "the Python V2 service"}


def compare(path_a, path_b):
    import numpy as np

    with open(path_a) as f:
        a = json.load(f)
    with open(path_b) as f:
        b = json.load(f)

    def arr(x):  # null (a blocked cell) as NaN on both sides
        return np.array(x, dtype=float)

    fields = [(k, a.get(k), b.get(k)) for k in ("scores", "scaled", "masked", "weights", "output")]
    fields += [("summary." + k, (a.get("summary") or {}).get(k), (b.get("summary") or {}).get(k))
               for k in ("row_sums", "max_weight", "entropy")]
    worst, ok, parts = {}, True, []
    for name, x, y in fields:
        if x is None and y is None:
            continue
        if x is None or y is None:
            parts.append(f"{name}: only in one")
            ok = False
            continue
        xa, ya = arr(x), arr(y)
        if xa.shape != ya.shape:
            parts.append(f"{name}: shapes {xa.shape} vs {ya.shape}")
            ok = False
            continue
        both_nan = np.isnan(xa) & np.isnan(ya)
        d = np.where(both_nan, 0.0, np.abs(xa - ya))
        worst[name] = float(np.nanmax(np.where(np.isnan(d), np.inf, d))) if d.size else 0.0
        parts.append(f"{name} {worst[name]:.1e}")
    for key in ("argmax", "fully_masked_rows"):
        if (a.get("summary") or {}).get(key) != (b.get("summary") or {}).get(key):
            parts.append(f"summary.{key} differs")
            ok = False
    if "weights" not in worst or worst["weights"] > TOLERANCE:
        ok = False
    print("  max |attnd - python|: " + ", ".join(parts))
    print(f"  agreement: {'OK' if ok else 'FAILED'} (weights within {TOLERANCE:g}: "
          f"{'yes' if worst.get('weights', 1) <= TOLERANCE else 'no'})")
    return 0 if ok else 1


def read_v2_answer(path):
    """{name: (datatype, float64 array)} of a V2 binary answer and its FILE.hlen."""
    import numpy as np

    with open(path + ".hlen") as f:
        n = int(f.read())
    with open(path, "rb") as f:
        raw = f.read()
    header, at, out = json.loads(raw[:n]), n, {}
    for o in header["outputs"]:
        dtype = {"FP64": "<f8", "FP32": "<f4"}[o["datatype"]]
        size = o["parameters"]["binary_data_size"]
        a = np.frombuffer(raw[at:at + size], dtype=dtype).reshape(o["shape"])
        out[o["name"]] = (o["datatype"], a.astype(np.float64))
        at += size
    if at != len(raw):
        raise ValueError(f"{path}: {len(raw) - at} bytes after the last output")
    return out


def compare_v2(path_a, path_b):
    import numpy as np

    a, b = read_v2_answer(path_a), read_v2_answer(path_b)
    ok, parts, worst = list(a) == list(b), [], {}
    if not ok:
        parts.append(f"outputs {list(a)} vs {list(b)}")
    for name in [n for n in a if n in b]:
        (ta, xa), (tb, xb) = a[name], b[name]
        if ta != tb or xa.shape != xb.shape:
            parts.append(f"{name}: {ta} {list(xa.shape)} vs {tb} {list(xb.shape)}")
            ok = False
            continue
        same_inf = np.isinf(xa) & (xa == xb)  # a blocked cell on both sides
        d = np.where(same_inf, 0.0, np.abs(xa - xb))
        worst[name] = float(np.max(np.where(np.isnan(d), np.inf, d))) if d.size else 0.0
        parts.append(f"{name} {worst[name]:.1e}")
    if worst.get("WEIGHTS", np.inf) > TOLERANCE:
        ok = False
    print("  max |attnd - python|: " + ", ".join(parts))
    print(f"  agreement: {'OK' if ok else 'FAILED'} (WEIGHTS within {TOLERANCE:g}: "
          f"{'yes' if worst.get('WEIGHTS', 1) <= TOLERANCE else 'no'})")
    return 0 if ok else 1


def count_numbers(x):
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return 1
    if isinstance(x, list):
        return sum(count_numbers(y) for y in x)
    if isinstance(x, dict):
        return sum(count_numbers(y) for y in x.values())
    return 0


def median_time(fn, budget=0.3, min_reps=3):
    import time

    times, start = [], time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def pyjson(out_dir, names):
    import os

    import ujson

    budget = float(os.environ.get("BENCH_BUDGET") or 0.3)
    print(f"JSON in Python, for reference: ujson {ujson.__version__} (the Python service's "
          "parser and writer), one thread")
    print(f"  {'payload':<7} | {'ujson.loads ms':>14} {'MB/s':>7} {'Mnum/s':>7} | "
          f"{'ujson.dumps ms':>14} {'MB/s':>7} {'Mnum/s':>7}")
    for name in names:
        with open(os.path.join(out_dir, name + ".json"), "rb") as f:
            body = f.read()
        with open(os.path.join(out_dir, name + ".response.json"), "rb") as f:
            resp = ujson.loads(f.read())
        n_req = count_numbers(ujson.loads(body))
        n_resp = count_numbers(resp)
        t_load = median_time(lambda: ujson.loads(body), budget)
        out = ujson.dumps(resp)
        t_dump = median_time(lambda: ujson.dumps(resp), budget)
        print(f"  {name:<7} | {t_load * 1e3:>14.3f} {len(body) / t_load * 1e-6:>7.1f} "
              f"{n_req / t_load * 1e-6:>7.2f} | {t_dump * 1e3:>14.3f} "
              f"{len(out) / t_dump * 1e-6:>7.1f} {n_resp / t_dump * 1e-6:>7.2f}")
    return 0


def read_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    return meta


def human_bytes(n):
    for unit, size in (("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def fmt_rps(x):
    return "-" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:,.2f}")


def fmt_ms(x):
    if x is None:
        return "-"
    return f"{x:.1f}" if x >= 10 else (f"{x:.2f}" if x >= 1 else f"{x:.3f}")


def summary_of(rs):
    """One server's runs at one payload and connection count: medians of req/s and
    latency, totals of requests, errors and CPU time (so CPU per request is the whole's)."""
    def med(k):
        xs = [r[k] for r in rs if r[k] is not None]
        return statistics.median(xs) if xs else None
    cpus = [r["cpu"] for r in rs]
    return dict(req=sum(r["req"] for r in rs), secs=rs[0]["secs"], rps=med("rps"),
                p50=med("p50"), p99=med("p99"), err=sum(r["err"] for r in rs),
                cpu=None if None in cpus else sum(cpus), n=len(rs),
                secs_total=sum(r["secs"] for r in rs))


def v2_tables(runs, paired, get, cpu_per_req, conns_all, meta):
    """The binary path's rows: attnd V2 against its binary replay floor, attnd's own JSON
    and the Python V2 service, then their CPU a request."""
    if not any(t == "v2" for (_, _, t) in runs):
        return
    print()
    print("HTTP, V2 binary: wrk, POST /v2/models/attention/infer with the payload's Q, K, V as "
          "binary FP64 (tritonclient.http's bytes), every step asked as binary FP64 (xl's "
          "too); runs and rounds as above")
    print("  replay_v2 = libmicrohttpd answering attnd's real binary answer with its headers; "
          "python_v2 = the Python service's V2 route (np.frombuffer in, tobytes out)")
    head = (f"  {'payload':<7} {'response':>9} {'conn':>4} {'s':>3} {'r':>1} | {'V2 req/s':>10} "
            f"{'n':>6} {'p50':>7} {'p99':>7} {'err':>3} | {'replay_v2':>9} | {'py_v2 req/s':>11} "
            f"{'n':>5} {'s':>3} {'p50':>7} {'p99':>7} {'err':>3} | {'of floor':>8} {'x py_v2':>7} "
            f"{'x JSON':>6}")
    print(head)
    print("  " + "-" * (len(head) - 2))
    for p in PAYLOADS:
        for c in conns_all:
            a = runs.get((p, c, "v2"))
            if a is None:
                continue
            py = runs.get((p, c, "python_v2"))
            share, _ = paired(p, c, "v2", "replay_v2", "rps")
            x_json, _ = paired(p, c, "v2", "attnd", "rps")
            x_py = f"{a['rps'] / py['rps']:.1f}x" if py and py["rps"] > 0 else "-"
            resp = int(meta.get("resp_v2_" + p, "0"))
            print(f"  {p:<7} {human_bytes(resp):>9} {c:>4} {a['secs']:>3.0f} {a['n']:>1} | "
                  f"{fmt_rps(a['rps']):>10} {a['req']:>6} {fmt_ms(a['p50']):>7} "
                  f"{fmt_ms(a['p99']):>7} {a['err']:>3} | {fmt_rps(get(p, c, 'replay_v2')):>9} | "
                  f"{fmt_rps(py and py['rps']):>11} {(py['req'] if py else '-'):>5} "
                  f"{(format(py['secs'], '.0f') if py else '-'):>3} "
                  f"{fmt_ms(py and py['p50']):>7} {fmt_ms(py and py['p99']):>7} "
                  f"{(py['err'] if py else '-'):>3} | "
                  f"{(f'{100 * share:.0f}%' if share is not None else '-'):>8} "
                  f"{x_py:>7} "
                  f"{(f'{x_json:.1f}x' if x_json is not None else '-'):>6}")
    print("  (of floor: V2 req/s as a share of replay_v2's; x py_v2: over the Python V2 "
          "service's; x JSON: over attnd's own JSON req/s at the same connections, both "
          "medians of the rounds' ratios)")
    print()
    print("server CPU per request, V2 binary (as above, in ms)")
    print(f"  {'payload':<7} {'conn':>4} | {'V2':>8} {'replay_v2':>9} {'python_v2':>9} "
          f"{'JSON':>8} | {'py_v2/V2':>8} {'JSON/V2':>8} {'V2-replay_v2':>12}")
    for p in PAYLOADS:
        for c in conns_all:
            v2, rv, pv, js = (cpu_per_req(p, c, t) for t in ("v2", "replay_v2", "python_v2", "attnd"))
            if v2 is None:
                continue
            print(f"  {p:<7} {c:>4} | {fmt_ms(v2):>8} {fmt_ms(rv):>9} {fmt_ms(pv):>9} "
                  f"{fmt_ms(js):>8} | {(f'{pv / v2:.1f}x' if pv is not None and v2 > 0 else '-'):>8} "
                  f"{(f'{js / v2:.1f}x' if js is not None and v2 > 0 else '-'):>8} "
                  f"{(fmt_ms(v2 - rv) if rv is not None else '-'):>12}")
    print("  (V2-replay_v2: what attnd spends on a binary request above sending its answer; "
          "JSON: attnd's CPU a request on the same payload as JSON)")


def long_targets(meta, line):
    """The long request's two targets (bench/run.sh, section 4b): its time within 1.5x the
    bare dgemm pair at n = 32,768 on as many threads, and attnd's peak RSS above idle
    within the body, the answer and 64 MiB; "n/a (refused: ...)" while attnd refuses it."""
    what = "long: n_q = n_k = 32,768, d = 64, V2 BF16 binary, OUTPUT and LSE"
    status = meta.get("long_status")
    if status is None:
        line(None, f"{what}: not run (BENCH_LONG=0)")
        return
    if status != "200":
        why = f"refused: {status} {meta.get('long_type', '?')}"
        if meta.get("long_pointer"):
            why += f" at {meta['long_pointer']}"
        line(None, f"{what}: time within 1.5x the bare dgemm pair ({why})")
        line(None, f"{what}: peak RSS above idle within body + answer + 64 MiB ({why})")
        return
    ms, pair = float(meta.get("long_ms", "0")), float(meta.get("long_pair_ms", "0"))
    threads, block = meta.get("long_threads", "?"), meta.get("long_block", "?")
    if pair > 0:
        r = ms / pair
        line(r <= 1.5, f"{what}: {ms / 1000:.2f} s is {r:.2f}x the bare dgemm pair's "
             f"{pair / 1000:.2f} s (measured at n = 32,768 in {block}-row blocks on {threads} "
             f"threads, as attnd has; want <= 1.5x)")
    else:
        line(None, f"{what}: {ms / 1000:.2f} s; the bare dgemm pair was not measured")
    hwm, idle = int(meta.get("hwm_long", "0")), int(meta.get("rss_idle_long", "0"))
    req, resp = int(meta.get("req_long", "0")), int(meta.get("resp_long", "0"))
    bound = req + resp + 64 * 2**20
    line(hwm - idle <= bound, f"{what}: peak RSS above idle {(hwm - idle) / 2**20:.0f} MiB, "
         f"body {req / 2**20:.1f} + answer {resp / 2**20:.1f} + 64 MiB = {bound / 2**20:.0f} MiB "
         f"(want within)")


def table(tsv_path, meta_path):
    meta = read_meta(meta_path)
    rounds = {}  # (payload, conns, target) -> its runs, in order
    with open(tsv_path) as f:
        for line in f:
            cols = line.split()
            if len(cols) not in (9, 10) or cols[0] == "payload":
                continue
            payload, conns, target = cols[0], int(cols[1]), cols[2]
            req, secs, rps, p50, p99, err = (int(cols[3]), float(cols[4]), float(cols[5]),
                                             float(cols[6]), float(cols[7]), int(cols[8]))
            if req == 0:  # nothing completed: no latency to speak of
                p50 = p99 = None
            cpu = float(cols[9]) if len(cols) == 10 else None  # ms of the server's CPU
            rounds.setdefault((payload, conns, target), []).append(
                dict(req=req, secs=secs, rps=rps, p50=p50, p99=p99, err=err, cpu=cpu))
    runs = {key: summary_of(rs) for key, rs in rounds.items()}

    def get(p, c, t, k="rps"):
        r = runs.get((p, c, t))
        return None if r is None else r[k]

    def paired(p, c, t, other, k):
        """attnd's k over other's, round by round where both ran the same rounds (each
        pair seconds apart), else their medians' ratio: (median, [each round's])."""
        a, o = rounds.get((p, c, t)), rounds.get((p, c, other))
        if not a or not o:
            return None, []
        if len(a) == len(o) and all(x[k] is not None and y[k] for x, y in zip(a, o)):
            each = [x[k] / y[k] for x, y in zip(a, o)]
            return statistics.median(each), each
        ma, mo = get(p, c, t, k), get(p, c, other, k)
        return (ma / mo if ma is not None and mo else None), []

    def floor_of(p):  # the floor each payload is judged against
        return "fixed" if p == "tiny" else "replay"

    conns_all = sorted({c for (_, c, _) in runs})
    print("HTTP: wrk, POST /v1/attention, %s s a run, longer (up to %s s) where ten of the "
          "server's requests per connection take longer (s: attnd's and its floors', then the "
          "Python service's); req/s, latency p50/p99 in ms, errors (failed + non-2xx); n = "
          "requests completed" % (meta.get("seconds", "?"), meta.get("max_seconds", "?")))
    print("  r: rounds; a run no longer than %s s is made %s times, attnd and its floors in "
          "turn, and reported by its medians (n and err: all rounds'); of floor: the median "
          "of the rounds' ratios" % (meta.get("seconds", "?"), meta.get("rounds", "?")))
    print("  floors: fixed = libmicrohttpd answering a 16-byte reply, replay = it answering "
          "attnd's real response; same thread model as attnd")
    head = (f"  {'payload':<7} {'response':>9} {'conn':>4} {'s':>3} {'r':>1} | {'attnd req/s':>11} {'n':>6} {'p50':>7} {'p99':>7} "
            f"{'err':>3} | {'fixed':>8} {'replay':>8} | {'python req/s':>12} {'n':>5} {'s':>3} {'p50':>7} "
            f"{'p99':>7} {'err':>3} | {'of floor':>8} {'x python':>8}")
    print(head)
    print("  " + "-" * (len(head) - 2))
    for p in PAYLOADS:
        for c in conns_all:
            if (p, c, "attnd") not in runs:
                continue
            a = runs[p, c, "attnd"]
            py = runs.get((p, c, "python"))
            share, _ = paired(p, c, "attnd", floor_of(p), "rps")
            of_floor = f"{100 * share:.0f}% {floor_of(p)[0]}" if share is not None else "-"
            x_py = f"{a['rps'] / py['rps']:.1f}x" if py and py["rps"] > 0 else "-"
            resp = int(meta.get("resp_" + p, "0"))
            print(f"  {p:<7} {human_bytes(resp):>9} {c:>4} {a['secs']:>3.0f} {a['n']:>1} | {fmt_rps(a['rps']):>11} {a['req']:>6} "
                  f"{fmt_ms(a['p50']):>7} {fmt_ms(a['p99']):>7} {a['err']:>3} | "
                  f"{fmt_rps(get(p, c, 'fixed')):>8} {fmt_rps(get(p, c, 'replay')):>8} | "
                  f"{fmt_rps(py and py['rps']):>12} {(py['req'] if py else '-'):>5} "
                  f"{(format(py['secs'], '.0f') if py else '-'):>3} "
                  f"{fmt_ms(py and py['p50']):>7} {fmt_ms(py and py['p99']):>7} "
                  f"{(py['err'] if py else '-'):>3} | {of_floor:>8} {x_py:>8}")
    print("  (of floor: attnd req/s as a share of the fixed (f) or replay (r) floor at the same "
          "connections; x python: attnd req/s over the Python service's)")

    print()
    print("server CPU per request: the server's CPU time over the run (user + system, every "
          "thread; the Python service's workers summed) over the requests it completed, in ms; "
          "steadier than req/s on a shared machine")
    print(f"  {'payload':<7} {'conn':>4} | {'attnd':>8} {'fixed':>8} {'replay':>8} {'python':>8} | "
          f"{'python/attnd':>12} {'attnd-replay':>12}")

    def cpu_per_req(p, c, t):
        r = runs.get((p, c, t))
        return None if r is None or r["cpu"] is None or r["req"] == 0 else r["cpu"] / r["req"]

    for p in PAYLOADS:
        for c in conns_all:
            per = {t: cpu_per_req(p, c, t) for t in ("attnd", "fixed", "replay", "python")}
            if per["attnd"] is None:
                continue
            a, py, rp = per["attnd"], per["python"], per["replay"]
            ratio = f"{py / a:.1f}x" if py is not None and a > 0 else "-"
            extra = fmt_ms(a - rp) if rp is not None else "-"
            print(f"  {p:<7} {c:>4} | " + " ".join(f"{fmt_ms(per[t]):>8}" for t in per) +
                  f" | {ratio:>12} {extra:>12}")
    print("  (attnd-replay: what attnd spends a request above sending its answer. CPU time is "
          "counted in ticks of 10 ms over wrk's run, and the requests still in flight at its end "
          "add to it: at 64 connections, and for runs of few requests, it reads coarsely)")

    print()
    print("where attnd's time goes at 1 connection: its p50 over its floor's, next to "
          "api_handle in process (JSON section)")
    print(f"  {'payload':<7} {'attnd p50':>10} {'floor p50':>10} {'gap':>9} | {'api_handle':>10} "
          f"{'read':>6} {'forward':>8} {'write':>6}")
    for p in PAYLOADS:
        a, f = get(p, 1, "attnd", "p50"), get(p, 1, floor_of(p), "p50")
        h = meta.get("handle_ms_" + p)
        if a is None or f is None or h is None:
            continue
        h = float(h)
        parts = [meta.get(k + "_ms_" + p) for k in ("read", "forward", "write")]
        split = (["-"] * 3 if None in parts else
                 [f"{100 * float(x) / h:.0f}%" for x in parts])
        print(f"  {p:<7} {fmt_ms(a) + ' ms':>10} {fmt_ms(f) + ' ms':>10} {fmt_ms(a - f) + ' ms':>9} | "
              f"{h:>7.3f} ms {split[0]:>6} {split[1]:>8} {split[2]:>6}")
    print("  (read = parse (api/json/read.c) + validation + copy; forward = trace allocation + attn_forward; "
          "write = the JSON writer)")

    v2_tables(runs, paired, get, cpu_per_req, conns_all, meta)

    print()
    print("targets (reported, not asserted):")

    def line(ok, text):
        print(f"  {'n/a ' if ok is None else ('PASS' if ok else 'MISS')}  {text}")

    def each_of(values, as_share):  # the rounds' ratios, when there were several
        if len(values) < 2:
            return ""
        return " (rounds: " + ", ".join(f"{100 * v:.0f}%" if as_share else f"{v:.1f}x"
                                        for v in values) + ")"

    def ratio_target(p, c, other, want, label, as_share, t="attnd"):
        a, o = get(p, c, t), get(p, c, other)
        if a is None or o is None:
            line(None, f"{p} @{c}: {label} (not measured)")
            return
        if o == 0:
            line(None if a == 0 else True,
                 f"{p} @{c}: {label}: {other} completed no request in the run")
            return
        r, each = paired(p, c, t, other, "rps")
        got = f"{100 * r:.0f}%" if as_share else f"{r:.1f}x"
        text = f"{p} @{c}: {NAMES[t]} {fmt_rps(a)} req/s is {got} {label}{each_of(each, as_share)}"
        # A Python run that kept one core idle (its workers' sockets got the connections
        # unevenly: rare since each has its own, see bench/pyservice.py) makes attnd's
        # ratio look better than it is, so such a pass is not counted (a miss stands)
        py = runs.get((p, c, other))
        if other in ("python", "python_v2") and r >= want and py is not None and py["cpu"] is not None:
            could = min(c, PYTHON_WORKERS, os.cpu_count() or 1)
            used = py["cpu"] / (1000 * py["secs_total"]) if py["secs_total"] > 0 else 0
            if used < 0.75 * could:
                line(None, f"{text}, but the Python service kept {used:.1f} of its {could} "
                           f"cores busy in that run (its workers did not share the connections): "
                           f"not counted")
                return
        line(r >= want, text)

    def floor_bound(p, c, floor, want):
        """What a share of a floor leaves attnd at most, even if the client (wrk, on the
        same cores) cost nothing: the cores' time over the target's req/s. Beside it, what
        attnd needs at least: the floor's own serving of an answer, plus api_handle on one
        thread in process, warm (the JSON section)."""
        f, fc, h = get(p, c, floor), cpu_per_req(p, c, floor), meta.get("handle_ms_" + p)
        cores = os.cpu_count() or 1
        if not f or fc is None or h is None:
            return
        budget, needs = 1000 * cores / (want * f), fc + float(h)
        verdict = ("more than that: out of reach on these cores while api_handle costs what "
                   "it does, however fast the client" if needs > budget
                   else "within it, so this bound does not rule it out")
        print(f"        bound: {100 * want:.0f}% of {floor} is {fmt_rps(want * f)} req/s; on "
              f"{cores} cores with a client that cost nothing, at most {fmt_ms(budget)} ms of "
              f"CPU a request. {floor}'s own serving ({fmt_ms(fc)} ms) plus api_handle in "
              f"process ({float(h):.3f} ms) take {fmt_ms(needs)} ms, {verdict}")

    ratio_target("tiny", 64, "fixed", 0.8, "of the fixed-reply floor (want >= 80%)", True)
    floor_bound("tiny", 64, "fixed", 0.8)
    ratio_target("tiny", 64, "python", 5, "the Python service (want >= 5x)", False)
    ratio_target("medium", 8, "replay", 0.6, "of the replay floor (want >= 60%)", True)
    floor_bound("medium", 8, "replay", 0.6)
    ratio_target("medium", 8, "python", 10, "the Python service (want >= 10x)", False)
    for p in ("large", "xl"):
        ratio_target(p, 1, "python", 10, "the Python service (want >= 10x)", False)
        a, r = get(p, 1, "attnd", "p50"), get(p, 1, "replay", "p50")
        if get(p, 1, "attnd", "req") == 0:
            line(False, f"{p} @1: within 3x of replay: attnd completed no request in the run")
        elif a is None or r is None:
            line(None, f"{p} @1: within 3x of replay (not measured)")
        else:
            x, each = paired(p, 1, "attnd", "replay", "p50")
            line(x <= 3, f"{p} @1: attnd p50 {fmt_ms(a)} ms is {x:.1f}x the replay "
                         f"floor's {fmt_ms(r)} ms (want <= 3x){each_of(each, False)}")
    best = [get("large", c, "attnd") for c in conns_all if get("large", c, "attnd") is not None]
    a64 = get("large", 64, "attnd")
    if a64 is None or not best:
        line(None, "large @64: within 20% of its best (not measured)")
    else:
        line(a64 >= 0.8 * max(best), f"large @64: attnd {fmt_rps(a64)} req/s is "
             f"{100 * a64 / max(best):.0f}% of its best, {fmt_rps(max(best))} (want >= 80%)")
    errs = [(p, get(p, 64, "attnd", "err")) for p in PAYLOADS if get(p, 64, "attnd", "err") is not None]
    if errs:
        line(all(e == 0 for _, e in errs), "@64: attnd errors " +
             ", ".join(f"{p} {e}" for p, e in errs) + " (want 0)")
    hwm, req, resp = (int(meta.get(k, "0")) for k in ("hwm_xl", "req_xl", "resp_xl"))
    if hwm and resp:
        bound = 3 * (req + resp)
        line(hwm <= bound, f"memory: attnd peak RSS (VmHWM) serving one xl request "
             f"{hwm / 1e6:.0f} MB, 3 x (request {req / 1e6:.1f} MB + response {resp / 1e6:.1f} MB)"
             f" = {bound / 1e6:.0f} MB; idle RSS before it {int(meta.get('rss_idle', '0')) / 1e6:.0f} MB")
    else:
        line(None, "memory: not measured")

    cores = os.cpu_count() or 1
    print("  JSON, CPU a request (the floor targets above as the bound they set, and against "
          "the Python service):")

    def cpu_bound_target(p, c, floor, want):
        """The floor target restated as its bound: attnd's CPU a request against what want
        of the floor's req/s leaves a request on these cores with a client that cost nothing."""
        f, a = get(p, c, floor), cpu_per_req(p, c, "attnd")
        if not f or a is None:
            line(None, f"{p} @{c}: attnd's CPU a request against {100 * want:.0f}% of {floor} "
                       "(not measured)")
            return
        budget = 1000 * cores / (want * f)
        line(a <= budget, f"{p} @{c}: attnd's CPU a request {fmt_ms(a)} ms against the "
             f"{fmt_ms(budget)} ms that {100 * want:.0f}% of {floor} ({fmt_rps(want * f)} req/s) "
             f"leaves on {cores} cores (want within)")

    def cpu_vs_python(p, c, t, py, want, label):
        a, b = cpu_per_req(p, c, t), cpu_per_req(p, c, py)
        if a is None or b is None or a == 0:
            line(None, f"{p} @{c}: {label}'s CPU a request over {NAMES[t]}'s (not measured)")
            return
        x_rps = (f"{get(p, c, t) / get(p, c, py):.1f}x" if get(p, c, py) else "-")
        line(b / a >= want, f"{p} @{c}: {label} spends {b / a:.1f}x {NAMES[t]}'s CPU a request "
             f"({fmt_ms(b)} ms against {fmt_ms(a)}; want >= {want:g}x); in req/s {x_rps}")

    cpu_bound_target("tiny", 64, "fixed", 0.8)
    cpu_bound_target("medium", 8, "replay", 0.6)
    for p, c in TARGET_CONNS:
        cpu_vs_python(p, c, "attnd", "python", 10, "the Python service")

    if not any(t == "v2" for (_, _, t) in runs):
        long_targets(meta, line)
        return 0
    print("  V2 binary (every step asked as binary FP64):")

    def v2_bound(p, c, want):
        """What want of the binary floor leaves attnd V2 a request, with a client that cost
        nothing, beside what attnd V2 spent a request in this run and the floor's own."""
        f, fc, a = get(p, c, "replay_v2"), cpu_per_req(p, c, "replay_v2"), cpu_per_req(p, c, "v2")
        if not f or fc is None or a is None:
            return
        budget = 1000 * cores / (want * f)
        verdict = ("more than that: out of reach on these cores at that cost, however fast "
                   "the client" if a > budget else "within it, so this bound does not rule it out")
        print(f"        bound: {100 * want:.0f}% of replay_v2 is {fmt_rps(want * f)} req/s; on "
              f"{cores} cores with a client that cost nothing, at most {fmt_ms(budget)} ms of "
              f"CPU a request. attnd V2 spent {fmt_ms(a)} ms a request in this run "
              f"(replay_v2's own serving {fmt_ms(fc)} ms), {verdict}")

    ratio_target("medium", 8, "replay_v2", 0.6, "of the binary replay floor (want >= 60%)",
                 True, t="v2")
    v2_bound("medium", 8, 0.6)
    ratio_target("medium", 8, "python_v2", 2, "the Python V2 service (want >= 2x)", False, t="v2")
    for p in ("large", "xl"):
        ratio_target(p, 1, "replay_v2", 0.5, "of the binary replay floor (want >= 50%: "
                     "within 2x)", True, t="v2")
        v2_bound(p, 1, 0.5)
        ratio_target(p, 1, "attnd", 3, "attnd's own JSON (want >= 3x)", False, t="v2")
        ratio_target(p, 1, "python_v2", 3, "the Python V2 service (want >= 3x)", False, t="v2")
    # The CPU a request, which a shared machine moves much less than req/s: at most half
    # the Python V2 service's at large, a third at xl (the req/s lines above stay: at one
    # connection attnd may use both cores for one request, which CPU a request does not see).
    cpu_vs_python("large", 1, "v2", "python_v2", 2, "the Python V2 service")
    cpu_vs_python("xl", 1, "v2", "python_v2", 3, "the Python V2 service")
    ratio_target("tiny", 64, "python_v2", 5, "the Python V2 service (want >= 5x)", False, t="v2")
    hwm, req, resp = (int(meta.get(k, "0")) for k in ("hwm_v2_xl", "req_v2_xl", "resp_v2_xl"))
    if hwm and resp:
        bound = 2 * (req + resp)
        line(hwm < bound, f"memory: attnd peak RSS (VmHWM) serving one xl V2 binary request "
             f"{hwm / 1e6:.0f} MB, 2 x (request {req / 1e6:.1f} MB + response {resp / 1e6:.1f} MB)"
             f" = {bound / 1e6:.0f} MB (want under); idle RSS before it "
             f"{int(meta.get('rss_idle_v2', '0')) / 1e6:.0f} MB")
    else:
        line(None, "memory, V2: not measured")
    long_targets(meta, line)
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        return compare(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "compare-v2":
        return compare_v2(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 4 and sys.argv[1] == "pyjson":
        return pyjson(sys.argv[2], sys.argv[3:])
    if len(sys.argv) == 4 and sys.argv[1] == "table":
        return table(sys.argv[2], sys.argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
