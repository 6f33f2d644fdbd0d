"""Radius-search peers on the points `radius_bench --out DIR` wrote.

Times scipy's cKDTree `query_ball_point(A, r, workers=-1, return_sorted=True)`
(the peer of `within`, tree build on B included) and `query_pairs(r)` (the
peer of `self_pairs`, build included), and `query_ball_point` with
`return_length=True` (counting only, the floor of any answer), then writes
`DIR/radius_peers.json` and prints a table beside `DIR/radius.json` (ours and
kiddo's from the same run) with the ratio peer / ours.

    python3 benches/radius_peers.py DIR [--reps N]
"""
import json
import sys
import time

import numpy as np


def median_ms(f, reps):
    f()  # warm-up
    t = []
    for _ in range(reps):
        s = time.perf_counter()
        f()
        t.append((time.perf_counter() - s) * 1e3)
    t.sort()
    return t[len(t) // 2]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 3
    import scipy
    from scipy.spatial import cKDTree

    cases = json.load(open(f"{d}/cases.json"))
    rows = []
    for name, c in cases.items():
        a = np.load(f"{d}/{c['a']}")
        b = np.load(f"{d}/{c['b']}")
        r = float(c["r"])
        # cKDTree computes in f64 whatever the input; the f32 case is widened
        # exactly.
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        out = {}

        def ball():
            out["within"] = sum(len(x) for x in cKDTree(b64).query_ball_point(
                a64, r, workers=-1, return_sorted=True))

        def pairs():
            out["self_pairs"] = len(cKDTree(b64).query_pairs(r))

        def count():
            out["count"] = int(cKDTree(b64).query_ball_point(
                a64, r, workers=-1, return_length=True).sum())

        for call, f, impl in [("within", ball, "cKDTree query_ball_point"),
                              ("self_pairs", pairs, "cKDTree query_pairs"),
                              ("within", count, "cKDTree query_ball_point return_length")]:
            ms = median_ms(f, reps)
            n = out.get(call if impl != "cKDTree query_ball_point return_length" else "count")
            rows.append(dict(case=name, call=call, impl=f"scipy {scipy.__version__} {impl}",
                             ms=ms, pairs=n))
            print(f"{name:<16} {call:<11} {impl:<40} {ms:10.2f} ms  {n} pairs", flush=True)
    json.dump(rows, open(f"{d}/radius_peers.json", "w"), indent=1)
    try:
        ours = json.load(open(f"{d}/radius.json"))
    except FileNotFoundError:
        return
    print("\n| case | call | impl | ms | pairs | peer ms / ms |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for o in ours:
        peer = [p for p in rows if p["case"] == o["case"] and p["call"] == o["call"]
                and "return_length" not in p["impl"]]
        ratio = f"{peer[0]['ms'] / o['ms']:.2f}x" if peer else "-"
        print(f"| {o['case']} | {o['call']} | {o['impl']} | {o['ms']:.1f} | {o['pairs']} | {ratio} |")
    for p in rows:
        print(f"| {p['case']} | {p['call']} | {p['impl']} | {p['ms']:.1f} | {p['pairs']} | 1.00x |")


if __name__ == "__main__":
    main()
