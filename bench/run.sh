#!/usr/bin/env bash
# Runs Quarry's vector benchmarks and the peers back to back on the same
# exported data, writing every report to OUT (default /tmp/quarry-bench).
#   bash bench/run.sh [OUT] [N]
set -euo pipefail
OUT=${1:-/tmp/quarry-bench}
N=${2:-100000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
go build -o "$OUT/quarry" "$ROOT/cmd/quarry"

# hnswlib's headers built for this CPU (Debian: libhnswlib-dev), the anchor;
# Debian's generic python3-hnswlib build runs too, as a second reference.
g++ -O3 -march=native -std=c++17 -pthread -o "$OUT/hnswlib-native" "$ROOT/bench/peers/hnswlib/driver.cpp"

# HNSW, unfiltered and filtered, against hnswlib on the same files.
uptime | tee "$OUT/load.txt"
"$OUT/quarry" bench ann --n "$N" --filter-selectivity 0.5,0.1,0.01,0.001 --build-threads 2 \
  --export "$OUT/ann$N" | tee "$OUT/quarry-$N.txt"
"$OUT/hnswlib-native" "$OUT/ann$N" 16 200 10 10,12,16,20,24,32,40,48,56,64,80,96,128,192,256,384,512 2 \
  | tee "$OUT/hnswlib-native-$N.txt"
if /usr/bin/python3 -c 'import hnswlib' 2>/dev/null; then
  /usr/bin/python3 "$ROOT/bench/hnswlib.py" "$OUT/ann$N" | tee "$OUT/hnswlib-$N.txt"
fi
uptime | tee -a "$OUT/load.txt"

# Exact scan, 25k × 384 on 2 threads, against chromem-go.
"$OUT/quarry" bench ann --n 25000 --threads 2 --ef 64 --export "$OUT/ann25k" | tee "$OUT/quarry-25k.txt"
(cd "$ROOT/bench/peers" && go run ./chromem -dir "$OUT/ann25k" -threads 2) | tee "$OUT/chromem-25k.txt"
