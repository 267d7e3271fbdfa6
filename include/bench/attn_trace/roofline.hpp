#pragma once
// bench's roofline (docs/PERFORMANCE.md#the-roofline): the two roofs measured on the machine
// in the same run, and where a measured setting sits under them.
#include <string>

#include "attn_trace/dtype.hpp"

namespace attn_trace {

struct Roofs {
    double fma_gflops = 0;     // float32 multiply-add peak, all threads (fma_peak_gflops)
    double copy_gb_per_s = 0;  // memory copy bandwidth, bytes read plus bytes written per second
    // The compute roof for a dtype: float64 runs the same instructions on half the lanes.
    double compute_gflops(Dtype dtype) const { return dtype == Dtype::f64 ? fma_gflops / 2 : fma_gflops; }
};

// Both roofs on `threads` threads: about 0.1 s of multiply-adds and 0.2 s of copying.
Roofs measure_roofs(int threads);

// A plain copy of a buffer far larger than the caches (256 MiB, each thread its slice)
// into another, the best of a few: (bytes read + bytes written) / seconds, in GB/s.
double copy_bandwidth_gb_per_s(int threads);

struct RooflinePoint {
    double intensity = 0;     // FLOP per byte of inputs read once and outputs written once
    double bound_gflops = 0;  // min(compute roof, intensity × bandwidth)
    bool memory_bound = false;
    double fraction = 0;      // measured GFLOP/s / bound_gflops
};

// A setting of `flops` on `bytes` measured at `gflops`, under `roofs` (compute roof of `dtype`).
RooflinePoint place_on_roofline(double flops, double bytes, double gflops, const Roofs& roofs, Dtype dtype);
std::string bound_name(const RooflinePoint& point);  // "memory" or "compute"

}  // namespace attn_trace
