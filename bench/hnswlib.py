#!/usr/bin/python3
"""Peer benchmark: Debian's python3-hnswlib on the files `quarry bench ann --export DIR` writes.

Single thread for build and search, the same M / efConstruction and ef sweep as Quarry,
recall@10 against gt.ivecs, QPS, build rate and memory per vector (RSS growth over the
build divided by n). Queries go to hnswlib as one batch per ef (num_threads=1), so the
figures measure hnswlib's C++ loop, not Python call overhead.

Run with /usr/bin/python3 (pyenv's python cannot import Debian packages):
  /usr/bin/python3 bench/hnswlib.py DIR [--m 16] [--ef-construction 200] [--k 10] [--ef 10,16,...] [--json]
"""
import argparse
import json
import os
import sys
import time

# This file shares its name with the module it measures: drop its own folder
# from the path so "import hnswlib" finds Debian's package, not this script.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]

import hnswlib  # noqa: E402
import numpy as np  # noqa: E402


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    if raw.size == 0:
        sys.exit(f"{path}: empty")
    dim = int(raw[0])
    rows = raw.reshape(-1, dim + 1)
    if not (rows[:, 0] == dim).all():
        sys.exit(f"{path}: records of differing dimension")
    return np.ascontiguousarray(rows[:, 1:]).view(dtype)


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--ef", default="10,12,16,20,24,32,40,48,56,64,80,96,128,192,256,384,512")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    base = read_vecs(os.path.join(a.dir, "base.fvecs"), np.float32)
    queries = read_vecs(os.path.join(a.dir, "query.fvecs"), np.float32)
    gt = read_vecs(os.path.join(a.dir, "gt.ivecs"), np.int32)[:, : a.k]
    n, dim = base.shape

    before = rss()
    index = hnswlib.Index(space="ip", dim=dim)  # rows are unit vectors: ip is cosine
    index.init_index(max_elements=n, M=a.m, ef_construction=a.ef_construction, random_seed=a.seed)
    index.set_num_threads(1)
    t0, c0 = time.perf_counter(), time.process_time()
    index.add_items(base, np.arange(n), num_threads=1)
    build, build_cpu = time.perf_counter() - t0, time.process_time() - c0
    mem = (rss() - before) / n

    sweep = []
    for ef in [int(x) for x in a.ef.split(",")]:
        index.set_ef(max(ef, a.k))
        # The machine is shared: as in quarry bench ann, the queries run in ten
        # chunks, three passes each, and each chunk's fastest pass counts.
        # Wall and CPU time are both kept; CPU time does not count the time
        # other processes held the cores.
        size = max(1, -(-len(queries) // 10))
        total, total_cpu, parts = 0.0, 0.0, []
        for lo in range(0, len(queries), size):
            chunk = queries[lo:lo + size]
            fastest, fastest_cpu = float("inf"), float("inf")
            for _ in range(3):
                t0, c0 = time.perf_counter(), time.process_time()
                labels_chunk, _ = index.knn_query(chunk, k=a.k, num_threads=1)
                fastest = min(fastest, time.perf_counter() - t0)
                fastest_cpu = min(fastest_cpu, time.process_time() - c0)
            total += fastest
            total_cpu += fastest_cpu
            parts.append(labels_chunk)
        labels = np.concatenate(parts)
        hits = sum(len(set(l.tolist()) & set(g.tolist())) for l, g in zip(labels, gt))
        sweep.append({"ef": ef, "recall": hits / gt.size,
                      "qps": {"wall": len(queries) / total, "cpu": len(queries) / max(total_cpu, 1e-9)}})

    rep = {"engine": "hnswlib", "n": n, "dim": dim, "m": a.m, "efConstruction": a.ef_construction,
           "buildSeconds": build, "insertsPerSecond": {"wall": n / build, "cpu": n / build_cpu},
           "rssBytesPerVector": mem, "sweep": sweep}
    if a.json:
        print(json.dumps(rep, indent=2))
        return
    print(f"hnswlib {hnswlib.__version__ if hasattr(hnswlib, '__version__') else ''} n={n} dim={dim} M={a.m} efConstruction={a.ef_construction}, 1 thread")
    print(f"built in {build:.1f}s = {n / build:.0f} inserts/s ({n / build_cpu:.0f} per CPU s); memory {mem:.0f} B/vector RSS")
    print(f"    ef  recall@{a.k}  QPS (wall)  QPS (per CPU s)")
    for p in sweep:
        print(f"  {p['ef']:4d}  {p['recall']:9.4f}  {p['qps']['wall']:10.1f}  {p['qps']['cpu']:15.1f}")
    for target in (0.95, 0.99):
        hit = next((p for p in sweep if p["recall"] >= target), None)
        if hit:
            print(f"  smallest ef with recall >= {target:.2f}: {hit['ef']} ({hit['recall']:.4f} at "
                  f"{hit['qps']['wall']:.1f} QPS wall, {hit['qps']['cpu']:.1f} per CPU s)")
        else:
            print(f"  recall {target:.2f} not reached")

if __name__ == "__main__":
    main()
