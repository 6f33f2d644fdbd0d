#!/usr/bin/env bash
# selftest.sh OUTDIR -- quick correctness smoke test of the built peer codes.
# Generates a few small synthetic square matrices (pure python) that exercise
# the small-row, medium-row and huge-row (global hash) paths of the codes,
# then runs run.sh on them with 3 reps.  Look at OUTDIR/peers.csv: every row
# should have check=ok and no nnz_c_MISMATCH.
set -u
OUT="${1:?usage: selftest.sh OUTDIR}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$OUT/mtx"
python3 - "$OUT/mtx" <<'PY'
# pure python (no numpy/scipy needed)
import random, sys
d = sys.argv[1]
rnd = random.Random(7)
def write(name, n, entries, field="real", symmetry="general"):
    with open(f"{d}/{name}.mtx", "w") as f:
        f.write(f"%%MatrixMarket matrix coordinate {field} {symmetry}\n% peers selftest\n{n} {n} {len(entries)}\n")
        if field == "pattern":
            f.write("".join(f"{i + 1} {j + 1}\n" for i, j, _ in entries))
        else:
            f.write("".join(f"{i + 1} {j + 1} {v:.6g}\n" for i, j, v in entries))
    print(name, n, len(entries))
# 1. uniform random, ~8 per row (small-row bins); duplicates are summed by the reader
n = 20000
write("st_rand8", n, [(i, rnd.randrange(n), rnd.uniform(-1, 1)) for i in range(n) for _ in range(8)])
# 2. heavy-tailed row lengths (1..2000) -> medium/large shared-memory bins
n = 30000
e = []
for i in range(n):
    L = min(int(rnd.paretovariate(1.2) * 4), 2000)
    e += [(i, rnd.randrange(n), rnd.uniform(-1, 1)) for _ in range(L)]
write("st_powerlaw", n, e)
# 3. diagonal + one dense row: row 0 of A*A has n entries (2n-1 products),
#    beyond every code's shared-memory table -> global-memory hash paths
n = 100000
e = [(0, j, rnd.uniform(0.5, 1.5)) for j in range(n)] + [(i, i, rnd.uniform(0.5, 1.5)) for i in range(1, n)]
write("st_denserow", n, e)
# 4. symmetric pattern file (lower triangle stored) -> tests the reader's expansion
n = 5000
e = {}
for i in range(n):
    for _ in range(3):
        j = rnd.randrange(n)
        e[(max(i, j), min(i, j))] = 1.0
write("st_sympattern", n, [(i, j, v) for (i, j), v in sorted(e.items())], field="pattern", symmetry="symmetric")
PY
PEERS_REPS="${PEERS_REPS:-3}" PEERS_WARMUP="${PEERS_WARMUP:-1}" bash "$HERE/run.sh" "$OUT/mtx" "$OUT"
