// Native hnswlib peer for `quarry bench ann --export DIR`: the same files,
// protocol and report as bench/hnswlib.py, but calling searchKnn straight
// from C++ built for this CPU, the anchor a user tuning for speed would pick.
//
// Build (bench/run.sh does this):
//   g++ -O3 -march=native -std=c++17 -pthread -o hnswlib-native driver.cpp
// with the upstream headers (Debian: libhnswlib-dev, /usr/include/hnswlib).
//
// Run:
//   hnswlib-native DIR [M] [efConstruction] [k] [ef,ef,...] [threads]
// With threads > 1 a second index is built on that many threads (addPoint
// from each, as hnswlib's own ParallelFor does) and its rate and recall at
// ef 64 and 128 are printed after the sweep.
#include <hnswlib/hnswlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

// readVecs reads a TEXMEX file: each record a little-endian int32 length,
// then that many 4-byte values.
template <typename T>
std::vector<T> readVecs(const std::string &path, int &dim, size_t &rows) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", path.c_str());
    std::exit(1);
  }
  std::vector<T> out;
  rows = 0;
  dim = 0;
  int32_t d;
  while (in.read(reinterpret_cast<char *>(&d), 4)) {
    if (dim == 0) dim = d;
    if (d != dim) {
      std::fprintf(stderr, "%s: records of differing dimension\n", path.c_str());
      std::exit(1);
    }
    size_t at = out.size();
    out.resize(at + d);
    if (!in.read(reinterpret_cast<char *>(out.data() + at), 4 * size_t(d))) {
      std::fprintf(stderr, "%s: truncated\n", path.c_str());
      std::exit(1);
    }
    rows++;
  }
  if (rows == 0) {
    std::fprintf(stderr, "%s: empty\n", path.c_str());
    std::exit(1);
  }
  return out;
}

long rss() {
  long pages = 0, resident = 0;
  FILE *f = std::fopen("/proc/self/statm", "r");
  if (f) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * sysconf(_SC_PAGESIZE);
}

double wall() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu() { return double(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [M] [efConstruction] [k] [ef,ef,...] [threads]\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  size_t M = argc > 2 ? std::atoi(argv[2]) : 16;
  size_t efc = argc > 3 ? std::atoi(argv[3]) : 200;
  size_t k = argc > 4 ? std::atoi(argv[4]) : 10;
  std::string efList = argc > 5 ? argv[5] : "10,12,16,20,24,32,40,48,56,64,80,96,128,192,256,384,512";
  int threads = argc > 6 ? std::atoi(argv[6]) : 1;

  int dim, qdim, gdim;
  size_t n, nq, ng;
  std::vector<float> base = readVecs<float>(dir + "/base.fvecs", dim, n);
  std::vector<float> queries = readVecs<float>(dir + "/query.fvecs", qdim, nq);
  std::vector<int32_t> gt = readVecs<int32_t>(dir + "/gt.ivecs", gdim, ng);
  if (qdim != dim || ng != nq || size_t(gdim) < k) {
    std::fprintf(stderr, "%s: files do not match\n", dir.c_str());
    return 1;
  }

  long before = rss();
  hnswlib::InnerProductSpace space(dim);  // rows are unit vectors: ip is cosine
  auto *index = new hnswlib::HierarchicalNSW<float>(&space, n, M, efc, 1);
  double t0 = wall(), c0 = cpu();
  for (size_t i = 0; i < n; i++) index->addPoint(base.data() + i * dim, i);
  double build = wall() - t0, buildCPU = cpu() - c0;
  double mem = double(rss() - before) / n;

  std::printf("hnswlib native (g++ -O3 -march=native) n=%zu dim=%d M=%zu efConstruction=%zu, 1 thread\n", n, dim, M,
              efc);
  std::printf("built in %.1fs = %.0f inserts/s (%.0f per CPU s); memory %.0f B/vector RSS\n", build, n / build,
              n / buildCPU, mem);
  std::printf("    ef  recall@%zu  QPS (wall)  QPS (per CPU s)\n", k);

  struct Point {
    int ef;
    double recall, qps, qpsCPU;
  };
  std::vector<Point> sweep;
  std::stringstream efs(efList);
  std::string tok;
  std::vector<std::vector<size_t>> labels(nq);
  while (std::getline(efs, tok, ',')) {
    int ef = std::atoi(tok.c_str());
    index->setEf(std::max<size_t>(ef, k));
    // As in quarry bench ann: ten chunks, three passes each, the fastest
    // pass of each chunk counts, because the machine is shared.
    size_t size = std::max<size_t>(1, (nq + 9) / 10);
    double total = 0, totalCPU = 0;
    for (size_t lo = 0; lo < nq; lo += size) {
      size_t hi = std::min(nq, lo + size);
      double fastest = 1e300, fastestCPU = 1e300;
      for (int pass = 0; pass < 3; pass++) {
        double w = wall(), c = cpu();
        for (size_t q = lo; q < hi; q++) {
          auto res = index->searchKnn(queries.data() + q * dim, k);
          if (pass == 0) {
            labels[q].clear();
            while (!res.empty()) {
              labels[q].push_back(res.top().second);
              res.pop();
            }
          }
        }
        fastest = std::min(fastest, wall() - w);
        fastestCPU = std::min(fastestCPU, cpu() - c);
      }
      total += fastest;
      totalCPU += fastestCPU;
    }
    size_t hits = 0;
    for (size_t q = 0; q < nq; q++) {
      std::set<size_t> want(gt.begin() + q * gdim, gt.begin() + q * gdim + k);
      for (size_t l : labels[q]) hits += want.count(l);
    }
    Point p{ef, double(hits) / double(nq * k), nq / total, nq / std::max(totalCPU, 1e-9)};
    sweep.push_back(p);
    std::printf("  %4d  %9.4f  %10.1f  %15.1f\n", p.ef, p.recall, p.qps, p.qpsCPU);
  }
  for (double target : {0.95, 0.99}) {
    const Point *hit = nullptr;
    for (const auto &p : sweep)
      if (p.recall >= target) {
        hit = &p;
        break;
      }
    if (hit)
      std::printf("  smallest ef with recall >= %.2f: %d (%.4f at %.1f QPS wall, %.1f per CPU s)\n", target, hit->ef,
                  hit->recall, hit->qps, hit->qpsCPU);
    else
      std::printf("  recall %.2f not reached\n", target);
  }
  delete index;
  if (threads > 1) {
    auto *par = new hnswlib::HierarchicalNSW<float>(&space, n, M, efc, 1);
    std::atomic<size_t> next{0};
    double t1 = wall();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++)
      pool.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < n;) par->addPoint(base.data() + i * dim, i);
      });
    for (auto &t : pool) t.join();
    double pbuild = wall() - t1;
    std::printf("parallel build on %d threads: %.1fs = %.0f inserts/s;", threads, pbuild, n / pbuild);
    for (int ef : {64, 128}) {
      par->setEf(std::max<size_t>(ef, k));
      size_t hits = 0;
      for (size_t q = 0; q < nq; q++) {
        std::set<size_t> want(gt.begin() + q * gdim, gt.begin() + q * gdim + k);
        auto res = par->searchKnn(queries.data() + q * dim, k);
        for (; !res.empty(); res.pop()) hits += want.count(res.top().second);
      }
      std::printf(" recall@%zu at ef %d %.4f;", k, ef, double(hits) / double(nq * k));
    }
    std::printf("\n");
    delete par;
  }
  return 0;
}
