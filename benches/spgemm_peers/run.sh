#!/usr/bin/env bash
# run.sh MTXDIR OUTDIR -- run every built peer SpGEMM code on every MTXDIR/*.mtx
#
# Computes C = A*A (square matrices only) with each binary built by build.sh
# and writes OUTDIR/peers.csv  (code,matrix,ms,nnz_c,note)  plus the full
# output of every run in OUTDIR/raw/<code>-<matrix>.txt.
#   ms    = median wall time of one complete SpGEMM call (symbolic + numeric +
#           allocation of C and temporaries; A already on the GPU; C freed
#           between calls outside the timed region), over PEERS_REPS calls
#           after PEERS_WARMUP untimed calls.
#   note  = precision, min/mean, the code's own timer, result checks, and
#           what the call covers.  A mismatch of nnz_c against the other codes
#           (cuSPARSE if present) is flagged as nnz_c_MISMATCH.
#
# Environment knobs:
#   PEERS_BIN=dir        binaries (default ${PEERS_BUILD:-/tmp/peers-build}/bin)
#   PEERS_CODES="..."    default: opsparse opsparse_f64 nsparse speck cusparse
#   PEERS_REPS=10 PEERS_WARMUP=2
#   PEERS_TIMEOUT=600    seconds per (code, matrix) run
#   PEERS_MATCH=glob     only MTXDIR/<glob>.mtx (default *), e.g. to split a
#                        long list over several commands / OUTDIRs
set -u
MTXDIR="${1:?usage: run.sh MTXDIR OUTDIR}"
OUT="${2:?usage: run.sh MTXDIR OUTDIR}"
BIN="${PEERS_BIN:-${PEERS_BUILD:-/tmp/peers-build}/bin}"
CODES="${PEERS_CODES:-opsparse opsparse_f64 nsparse speck cusparse}"
REPS="${PEERS_REPS:-10}"
WARMUP="${PEERS_WARMUP:-2}"
TMO="${PEERS_TIMEOUT:-600}"
mkdir -p "$OUT/raw"
OUT="$(cd "$OUT" && pwd)"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

shopt -s nullglob
mats=("$MTXDIR"/${PEERS_MATCH:-*}.mtx)
if [ ${#mats[@]} = 0 ]; then echo "no .mtx files in $MTXDIR"; exit 1; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/raw/_gpu.txt" 2>&1 || true

runs="$OUT/raw/_runs.tsv"   # code \t matrix \t rc \t rawfile
: > "$runs"
for m in "${mats[@]}"; do
    name="$(basename "$m" .mtx)"
    for code in $CODES; do
        exe="$BIN/bench_$code"
        raw="$OUT/raw/$code-$name.txt"
        if [ ! -x "$exe" ]; then
            printf '%s\t%s\t%s\t%s\n' "$code" "$name" "notbuilt" "$raw" >> "$runs"
            continue
        fi
        t0=$SECONDS
        timeout -k 10 "$TMO" "$exe" "$m" "$REPS" "$WARMUP" > "$raw" 2>&1
        rc=$?
        printf '%s\t%s\t%s\t%s\n' "$code" "$name" "$rc" "$raw" >> "$runs"
        echo "[run] $code $name rc=$rc ($((SECONDS - t0))s) $(grep -o 'median_ms=[0-9.]*.*check=[A-Za-z]*' "$raw" | sed 's/ min_ms.*check=/ check=/')"
    done
done

python3 - "$runs" "$OUT/peers.csv" <<'PY'
import collections, csv, re, sys
runs_path, csv_path = sys.argv[1], sys.argv[2]
COVERS = {
    "opsparse": "covers opsparse() full call: setup(C.rpt+meta alloc+8 streams)+binning+symbolic+numeric binning+C alloc+scan+numeric+cleanup; f32 port (upstream double-only)",
    "opsparse_f64": "covers opsparse() full call as opsparse; upstream double precision",
    "nsparse": "covers SpGEMM_Hash() full call: BIN alloc+7 streams+binning+symbolic+scan+C alloc+numeric(sorted)+BIN free",
    "speck": "covers MultiplyspECK() full call: temporaries+analysis+load balancing+symbolic+C alloc+numeric+sort+cleanup; config(streams/events) created once outside",
    "cusparse": "covers cuSPARSE generic SpGEMM DEFAULT: C descr+workEstimation x2+compute x2+2 buffers+C alloc+copy+frees; handle/A descr outside",
}
rows = []
for line in open(runs_path):
    code, mat, rc, raw = line.rstrip("\n").split("\t")
    text = ""
    try:
        text = open(raw, errors="replace").read()
    except OSError:
        pass
    res = re.search(r"^PEER_RESULT (.*)$", text, re.M)
    kv = dict(x.split("=", 1) for x in res.group(1).split() if "=" in x) if res else {}
    native = [l[len("PEER_NATIVE "):] for l in text.splitlines() if l.startswith("PEER_NATIVE ")]
    own = ""
    for l in native:
        m = re.search(r"total=([0-9.]+)", l) or re.search(r"'complete'.*?: ([0-9.]+)", l)
        if m:
            own = m.group(1)
    if rc == "notbuilt":
        rows.append([code, mat, "", "", "not built"]); continue
    if not kv:
        err = re.findall(r"^(PEER_ERROR.*|.*(?:error|Error|ERROR|what\(\)).*)$", text, re.M)
        why = ("timeout" if rc in ("124", "137") else f"failed rc={rc}")
        lines = text.strip().splitlines()
        last = err[-1] if err else (lines[-1] if lines else "no output")
        rows.append([code, mat, "", "", (why + ": " + last)[:300].replace(",", ";")])
        continue
    note = [f"prec={kv.get('prec')}", f"median of {kv.get('reps')} after {kv.get('warmup')} warmup",
            f"min={float(kv['min_ms']):.4f}", f"mean={float(kv['mean_ms']):.4f}",
            f"check={kv.get('check')}", f"sorted={kv.get('sorted')}", f"sum_rel_err={kv.get('sum_rel_err')}"]
    if "why" in kv:
        note.append("why=" + kv["why"])
    if own:
        note.append(f"own_timer_mean={own}")
    if rc != "0":
        note.append(f"rc={rc}")
    note.append(f"products={kv.get('products')}")
    note.append(COVERS.get(code, ""))
    rows.append([code, mat, f"{float(kv['median_ms']):.4f}", kv.get("nnz_c", ""), "; ".join(note).replace(",", ";")])

# cross-code nnz(C) check: reference = cusparse if it ran, else the most common value
by_mat = collections.defaultdict(dict)
for r in rows:
    if r[3]:
        by_mat[r[1]][r[0]] = r[3]
for r in rows:
    vals = by_mat.get(r[1], {})
    if not r[3] or len(vals) < 2:
        continue
    ref = vals.get("cusparse") or collections.Counter(vals.values()).most_common(1)[0][0]
    if r[3] != ref:
        r[4] = f"nnz_c_MISMATCH(ref={ref}); " + r[4]

with open(csv_path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["code", "matrix", "ms", "nnz_c", "note"])
    w.writerows(rows)
print(f"wrote {csv_path} ({len(rows)} rows)")
for r in rows:
    print(f"  {r[0]:<13} {r[1]:<28} {r[2]:>12} {r[3]:>14}  {r[4][:90]}")
PY
