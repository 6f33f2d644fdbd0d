#!/usr/bin/env bash
# The "BLAS recipe" of benches/README.md in alternating rounds, for machines
# whose neighbours swing single runs: each round times the peers
# (benches/peers.py) and then ours (bench_table) on the inputs in DIR, and
# each case reports the median of its round medians, ours and the peer's.
#
#   ROUNDS=3 benches/blas_rounds.sh DIR gemm-1024,gemm-1024-tn,...
#
# DIR holds `bench_table --write-inputs DIR --case CASES`. BENCH_TABLE names
# the binary (default: target/release/bench_table), PYTHON the interpreter.
set -euo pipefail
dir=${1:?usage: blas_rounds.sh DIR CASES}
cases=${2:?usage: blas_rounds.sh DIR CASES}
bench=${BENCH_TABLE:-target/release/bench_table}
python=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
for r in $(seq "${ROUNDS:-3}"); do
  "$python" "$here/peers.py" "$dir" > "$dir/peers.tsv"
  "$bench" --backend rayon --reps 5 --case "$cases" --peers "$dir/peers.tsv" \
    | grep '^| gemm' > "$dir/round-$r.md"
done
"$python" - "$dir" "${ROUNDS:-3}" <<'PY'
import statistics, sys
unit = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}
def ms(cell):
    value, u = cell.split()
    return float(value) * unit[u]
ours, peer = {}, {}
for r in range(1, int(sys.argv[2]) + 1):
    for line in open(f"{sys.argv[1]}/round-{r}.md"):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        ours.setdefault(c[0], []).append(ms(c[2]))
        peer.setdefault(c[0], []).append(ms(c[6]))
print("| case | ours | peer | peer / ours |\n| --- | --: | --: | --: |")
for case in ours:
    o, p = statistics.median(ours[case]), statistics.median(peer[case])
    print(f"| {case} | {o:.3g} ms | {p:.3g} ms | {p / o:.3g} |")
PY
