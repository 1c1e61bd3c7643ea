#!/usr/bin/env bash
# Runs Quarry's HNSW benchmark and native hnswlib back to back at growing
# sizes, on the same exported files, writing every report to OUT.
#   bash bench/scale.sh [OUT]
# The largest size builds for about seven minutes in each engine.
set -euo pipefail
OUT=${1:-/tmp/quarry-scale}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
go build -o "$OUT/quarry" "$ROOT/cmd/quarry"
g++ -O3 -march=native -std=c++17 -pthread -o "$OUT/hnswlib-native" "$ROOT/bench/peers/hnswlib/driver.cpp"
EF=16,24,32,48,64,96,128,192,256
for spec in "20000 128" "100000 128" "500000 128" "1000000 96"; do
  read -r n d <<<"$spec"
  uptime | tee -a "$OUT/load.txt"
  "$OUT/quarry" bench ann --n "$n" --dim "$d" --ef "$EF" --filter-selectivity 0.5,0.1,0.01,0.001 \
    --export "$OUT/ann-$n-$d" > "$OUT/q-$n-$d.txt"
  "$OUT/hnswlib-native" "$OUT/ann-$n-$d" 16 200 10 "$EF" > "$OUT/h-$n-$d.txt"
  rm -f "$OUT/ann-$n-$d/base.fvecs" # hundreds of MB; the reports are what is kept
done
uptime | tee -a "$OUT/load.txt"
