// Where a setting sits under the roofs (docs/PERFORMANCE.md#the-roofline).
#include "attn_trace/roofline.hpp"

#include <algorithm>

#include "attn_trace/cpu_kernel.hpp"

namespace attn_trace {

Roofs measure_roofs(int threads) {
    Roofs roofs;
    roofs.fma_gflops = fma_peak_gflops(threads);
    roofs.copy_gb_per_s = copy_bandwidth_gb_per_s(threads);
    return roofs;
}

RooflinePoint place_on_roofline(double flops, double bytes, double gflops, const Roofs& roofs, Dtype dtype) {
    RooflinePoint point;
    point.intensity = bytes > 0 ? flops / bytes : 0;
    const double memory_roof = point.intensity * roofs.copy_gb_per_s;  // FLOP/B × GB/s = GFLOP/s
    const double compute_roof = roofs.compute_gflops(dtype);
    point.memory_bound = memory_roof < compute_roof;
    point.bound_gflops = std::min(memory_roof, compute_roof);
    point.fraction = point.bound_gflops > 0 ? gflops / point.bound_gflops : 0;
    return point;
}

std::string bound_name(const RooflinePoint& point) { return point.memory_bound ? "memory" : "compute"; }

}  // namespace attn_trace
