// peer_common.h -- shared benchmark harness for the peer SpGEMM codes.
//
// Written for this comparison (not part of any upstream repository).  Every
// peer driver (bench_opsparse.cu, bench_nsparse.cu, bench_speck.cu,
// bench_cusparse.cu) uses the same Matrix Market reader, the same timing loop
// and the same output format, so that the numbers are directly comparable:
//
//   * input:   one .mtx file (coordinate; real/integer/pattern/complex(real
//              part); general/symmetric/skew-symmetric/hermitian).  Symmetric
//              storage is expanded, duplicates are summed, columns are sorted
//              within each row.  Only square matrices are accepted (C = A*A).
//   * timing:  A is uploaded to the GPU once.  Each timed call is
//                cudaDeviceSynchronize(); t0; <full SpGEMM call incl. symbolic,
//                numeric, allocation of C and of all temporaries>;
//                cudaDeviceSynchronize(); t1
//              measured with std::chrono::steady_clock (host wall clock).
//              C is freed between calls, outside the timed region, so every
//              timed call allocates C afresh.  `warmup` untimed calls precede
//              `reps` timed calls; median/min/mean/max are reported.
//   * check:   after the last timed call C is copied back and checked:
//              row pointers monotone, column indices in range, whether rows
//              are sorted, and sum(C) against the exact identity
//              sum(A*A) = sum_k colsum(A)[k] * rowsum(A)[k] (double precision).
//
// Output lines (parsed by run.sh):
//   PEER_ITER   <i> <ms>
//   PEER_NATIVE <free text: the code's own timer / phase breakdown>
//   PEER_RESULT code=.. prec=.. matrix=.. rows=.. nnz_a=.. products=..
//               nnz_c=.. reps=.. warmup=.. median_ms=.. min_ms=.. mean_ms=..
//               max_ms=.. check=ok|BAD sorted=0|1 sum_rel_err=..
//   PEER_ERROR  <message>           (then exit code != 0)
#pragma once

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

namespace peer {

[[noreturn]] inline void die(const std::string &msg) {
    std::printf("PEER_ERROR %s\n", msg.c_str());
    std::fflush(stdout);
    std::exit(2);
}

inline void cuda_check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        die(std::string(what) + ": " + cudaGetErrorName(e) + " " + cudaGetErrorString(e));
    }
}

// Host CSR with 32-bit indices (every peer code uses 32-bit indices) and
// double values (converted to the code's value type by the driver).
struct HostCsr {
    int64_t rows = 0, cols = 0;
    std::vector<int> rpt;     // rows + 1
    std::vector<int> col;     // nnz
    std::vector<double> val;  // nnz
    int64_t nnz() const { return (int64_t)col.size(); }
};

inline std::string lower(std::string s) {
    for (auto &c : s) c = (char)std::tolower((unsigned char)c);
    return s;
}

inline std::string basename_noext(const std::string &path) {
    size_t p = path.find_last_of('/');
    std::string b = (p == std::string::npos) ? path : path.substr(p + 1);
    if (b.size() > 4 && lower(b.substr(b.size() - 4)) == ".mtx") b = b.substr(0, b.size() - 4);
    return b;
}

// Reads a Matrix Market coordinate file into CSR (sorted, duplicates summed).
inline HostCsr load_mtx(const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) die("cannot open " + path);
    std::fseek(f, 0, SEEK_END);
    long long fsize = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    std::vector<char> buf((size_t)fsize + 1);
    if (fsize > 0 && std::fread(buf.data(), 1, (size_t)fsize, f) != (size_t)fsize) die("short read " + path);
    std::fclose(f);
    buf[(size_t)fsize] = '\0';
    char *p = buf.data();
    char *end = p + fsize;

    auto next_line = [&](char *q) {
        while (q < end && *q != '\n') ++q;
        return q < end ? q + 1 : end;
    };

    // banner
    char *eol = p;
    while (eol < end && *eol != '\n') ++eol;
    std::string banner = lower(std::string(p, eol));
    if (banner.rfind("%%matrixmarket", 0) != 0) die("not a MatrixMarket file: " + path);
    bool coordinate = banner.find("coordinate") != std::string::npos;
    if (!coordinate) die("only coordinate MatrixMarket files are supported: " + path);
    bool pattern = banner.find("pattern") != std::string::npos;
    bool complex_ = banner.find("complex") != std::string::npos;
    int sym = 0;  // 0 general, 1 symmetric/hermitian, 2 skew
    if (banner.find("skew-symmetric") != std::string::npos) sym = 2;
    else if (banner.find("symmetric") != std::string::npos || banner.find("hermitian") != std::string::npos) sym = 1;
    p = next_line(p);

    // comments / blank lines, then the size line
    while (p < end && (*p == '%' || *p == '\n' || *p == '\r')) p = next_line(p);
    if (p >= end) die("missing size line: " + path);
    char *q;
    long long m = std::strtoll(p, &q, 10);
    long long n = std::strtoll(q, &q, 10);
    long long nz = std::strtoll(q, &q, 10);
    if (m <= 0 || n <= 0 || nz < 0) die("bad size line: " + path);
    if (m >= (1LL << 31) - 1 || n >= (1LL << 31) - 1) die("matrix too large for 32-bit indices");
    p = next_line(q);

    std::vector<int> I, J;
    std::vector<double> V;
    size_t reserve = (size_t)nz * (sym ? 2 : 1);
    I.reserve(reserve); J.reserve(reserve); V.reserve(reserve);
    long long read = 0;
    while (p < end && read < nz) {
        // skip blank / comment lines
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
        if (p >= end) break;
        if (*p == '\n') { ++p; continue; }
        if (*p == '%') { p = next_line(p); continue; }
        long long r = std::strtoll(p, &q, 10);
        long long c = std::strtoll(q, &q, 10);
        double v = 1.0;
        if (!pattern) {
            v = std::strtod(q, &q);
            if (complex_) (void)std::strtod(q, &q);  // imaginary part dropped
        }
        if (r < 1 || r > m || c < 1 || c > n) die("entry out of range in " + path);
        I.push_back((int)(r - 1)); J.push_back((int)(c - 1)); V.push_back(v);
        if (sym && r != c) {
            I.push_back((int)(c - 1)); J.push_back((int)(r - 1)); V.push_back(sym == 2 ? -v : v);
        }
        ++read;
        p = next_line(q);
    }
    if (read != nz) die("expected " + std::to_string(nz) + " entries, read " + std::to_string(read));

    // COO -> CSR (counting sort by row, then sort each row by column, sum duplicates)
    HostCsr A;
    A.rows = m; A.cols = n;
    std::vector<int64_t> cnt((size_t)m + 1, 0);
    for (size_t k = 0; k < I.size(); ++k) cnt[(size_t)I[k] + 1]++;
    for (int64_t i = 0; i < m; ++i) cnt[(size_t)i + 1] += cnt[(size_t)i];
    std::vector<std::pair<int, double>> ent(I.size());
    {
        std::vector<int64_t> pos(cnt.begin(), cnt.end() - 1);
        for (size_t k = 0; k < I.size(); ++k) ent[(size_t)pos[(size_t)I[k]]++] = {J[k], V[k]};
    }
    std::vector<int>().swap(I); std::vector<int>().swap(J); std::vector<double>().swap(V);
    std::vector<int64_t> rowlen((size_t)m, 0);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1024)
#endif
    for (int64_t i = 0; i < m; ++i) {
        auto b = ent.begin() + cnt[(size_t)i], e = ent.begin() + cnt[(size_t)i + 1];
        std::sort(b, e, [](const std::pair<int, double> &x, const std::pair<int, double> &y) { return x.first < y.first; });
        int64_t w = cnt[(size_t)i];
        for (auto it = b; it != e; ++it) {
            if (w > cnt[(size_t)i] && ent[(size_t)w - 1].first == it->first) ent[(size_t)w - 1].second += it->second;
            else ent[(size_t)w++] = *it;
        }
        rowlen[(size_t)i] = w - cnt[(size_t)i];
    }
    A.rpt.assign((size_t)m + 1, 0);
    int64_t total = 0;
    for (int64_t i = 0; i < m; ++i) { total += rowlen[(size_t)i]; }
    if (total >= (1LL << 31) - 1) die("nnz(A) too large for 32-bit indices");
    A.col.resize((size_t)total); A.val.resize((size_t)total);
    int64_t w = 0;
    for (int64_t i = 0; i < m; ++i) {
        A.rpt[(size_t)i] = (int)w;
        for (int64_t k = cnt[(size_t)i]; k < cnt[(size_t)i] + rowlen[(size_t)i]; ++k) {
            A.col[(size_t)w] = ent[(size_t)k].first; A.val[(size_t)w] = ent[(size_t)k].second; ++w;
        }
    }
    A.rpt[(size_t)m] = (int)w;
    return A;
}

// Number of scalar products of A*A (flops = 2 * products).
inline int64_t count_products(const HostCsr &A) {
    int64_t s = 0;
    for (int64_t k = 0; k < A.nnz(); ++k) {
        int c = A.col[(size_t)k];
        s += A.rpt[(size_t)c + 1] - A.rpt[(size_t)c];
    }
    return s;
}

struct Args {
    std::string path;
    int reps = 10;
    int warmup = 2;
};

inline Args parse_args(int argc, char **argv, const char *code) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s MATRIX.mtx [reps=10] [warmup=2]\n", argv[0]);
        std::exit(1);
    }
    Args a;
    a.path = argv[1];
    if (argc > 2) a.reps = std::max(1, std::atoi(argv[2]));
    if (argc > 3) a.warmup = std::max(0, std::atoi(argv[3]));
    (void)code;
    return a;
}

inline double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// run(): one full SpGEMM call.  after_timed(i): called after each timed call
// (i = 0..reps-1), outside the timed region, e.g. to collect native timers.
// free_c(): releases C.  C from the last timed call is kept for checking.
template <class Run, class AfterTimed, class FreeC>
std::vector<double> time_calls(const Args &a, Run run, AfterTimed after_timed, FreeC free_c) {
    for (int i = 0; i < a.warmup; ++i) {
        run();
        cuda_check(cudaDeviceSynchronize(), "warmup call");
        cuda_check(cudaGetLastError(), "warmup call (last error)");
        free_c();
    }
    std::vector<double> t;
    for (int i = 0; i < a.reps; ++i) {
        cuda_check(cudaDeviceSynchronize(), "before timed call");
        double t0 = now_ms();
        run();
        cudaError_t e = cudaDeviceSynchronize();
        double t1 = now_ms();
        cuda_check(e, "timed call");
        cuda_check(cudaGetLastError(), "timed call (last error)");
        t.push_back(t1 - t0);
        std::printf("PEER_ITER %d %.6f\n", i, t1 - t0);
        after_timed(i);
        if (i + 1 < a.reps) free_c();
    }
    return t;
}

struct Check {
    bool ok = true;
    bool sorted = true;
    double sum = 0, expected = 0, rel_err = 0;
    std::string why;
};

// Checks C = A*A (host copies of C's arrays; IT = int or unsigned).
template <class IT, class VT>
Check check_c(const HostCsr &A, int64_t c_rows, const std::vector<IT> &rpt, const std::vector<IT> &col,
              const std::vector<VT> &val) {
    Check r;
    int64_t n = A.rows;
    if (c_rows != n || (int64_t)rpt.size() != n + 1) { r.ok = false; r.why = "bad_row_count"; return r; }
    if ((int64_t)rpt[0] != 0) { r.ok = false; r.why = "rpt0_nonzero"; return r; }
    for (int64_t i = 0; i < n; ++i) {
        int64_t b = (int64_t)rpt[(size_t)i], e = (int64_t)rpt[(size_t)i + 1];
        if (e < b || e > (int64_t)col.size()) { r.ok = false; r.why = "rpt_not_monotone"; return r; }
        for (int64_t k = b; k < e; ++k) {
            int64_t c = (int64_t)col[(size_t)k];
            if (c < 0 || c >= A.cols) { r.ok = false; r.why = "col_out_of_range"; return r; }
            if (k > b && (int64_t)col[(size_t)k - 1] >= c) r.sorted = false;
            r.sum += (double)val[(size_t)k];
        }
    }
    if ((size_t)rpt[(size_t)n] != col.size()) { r.ok = false; r.why = "rpt_end_ne_nnz"; return r; }
    std::vector<double> colsum((size_t)A.cols, 0.0), colabs((size_t)A.cols, 0.0);
    for (int64_t k = 0; k < A.nnz(); ++k) {
        colsum[(size_t)A.col[(size_t)k]] += A.val[(size_t)k];
        colabs[(size_t)A.col[(size_t)k]] += std::fabs(A.val[(size_t)k]);
    }
    double scale = 0;
    for (int64_t i = 0; i < n; ++i) {
        double rs = 0, ra = 0;
        for (int64_t k = A.rpt[(size_t)i]; k < A.rpt[(size_t)i + 1]; ++k) {
            rs += A.val[(size_t)k];
            ra += std::fabs(A.val[(size_t)k]);
        }
        r.expected += colsum[(size_t)i] * rs;
        scale += colabs[(size_t)i] * ra;
    }
    r.rel_err = scale > 0 ? std::fabs(r.sum - r.expected) / scale : std::fabs(r.sum - r.expected);
    // f32 accumulation: allow 1e-3 of sum(|A||A|); f64 would pass far tighter.
    if (!(r.rel_err <= 1e-3)) { r.ok = false; r.why = "sum_C_mismatch"; }
    return r;
}

inline void report(const char *code, const char *prec, const Args &a, const HostCsr &A, int64_t products,
                   int64_t nnz_c, const std::vector<double> &t, const Check &chk) {
    std::vector<double> s = t;
    std::sort(s.begin(), s.end());
    double med = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
    double mean = std::accumulate(s.begin(), s.end(), 0.0) / (double)s.size();
    std::printf(
        "PEER_RESULT code=%s prec=%s matrix=%s rows=%lld nnz_a=%lld products=%lld nnz_c=%lld reps=%d warmup=%d "
        "median_ms=%.6f min_ms=%.6f mean_ms=%.6f max_ms=%.6f check=%s sorted=%d sum_rel_err=%.3e%s%s\n",
        code, prec, basename_noext(a.path).c_str(), (long long)A.rows, (long long)A.nnz(), (long long)products,
        (long long)nnz_c, a.reps, a.warmup, med, s.front(), mean, s.back(), chk.ok ? "ok" : "BAD", chk.sorted ? 1 : 0,
        chk.rel_err, chk.why.empty() ? "" : " why=", chk.why.empty() ? "" : chk.why.c_str());
    std::fflush(stdout);
}

inline void print_device() {
    int dev = 0;
    cudaDeviceProp p;
    cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
    cuda_check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    std::printf("PEER_DEVICE %s sm_%d%d runtime=%d driver=%d\n", p.name, p.major, p.minor, rt, drv);
}

// Loads the matrix named on the command line and prints its header line.
inline HostCsr load_square(const Args &a) {
    double t0 = now_ms();
    HostCsr A = load_mtx(a.path);
    if (A.rows != A.cols) die("matrix is not square (" + std::to_string(A.rows) + "x" + std::to_string(A.cols) + ")");
    std::printf("PEER_MATRIX %s rows=%lld nnz=%lld load_ms=%.1f\n", basename_noext(a.path).c_str(), (long long)A.rows,
                (long long)A.nnz(), now_ms() - t0);
    return A;
}

}  // namespace peer
