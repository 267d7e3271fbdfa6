#pragma once
// The fast path's micro-kernels are compiled for several instruction sets and the
// one for this CPU is chosen when the first kernel runs (runtime dispatch through
// Google Highway, docs/PERFORMANCE.md): avx512 (AVX-512 F, VL, DQ, BW), avx2
// (AVX2 + FMA), baseline (x86-64: SSE2). The environment variable
// ATTN_TRACE_KERNEL=avx2 (or baseline, avx512) asks for a lower one, for tests and
// comparisons; naming one this CPU lacks is an error (InputError) at the first
// kernel call, never a crash.
#include <cstdint>
#include <string>
#include <vector>

namespace attn_trace {

// The kernel target the fast path runs with ("avx2"), after ATTN_TRACE_KERNEL.
std::string kernel_target();
// Its instruction set in words: "AVX2 + FMA, 8 floats a vector".
std::string kernel_target_description(const std::string& target);
// The targets this binary holds, best first, and those of them this CPU can run.
std::vector<std::string> compiled_kernel_target_names();
std::vector<std::string> supported_kernel_target_names();
// The names of Highway's target bits `bits` (hwy/detect_targets.h), best first: every x86
// bit has one, so that --version names whatever target a Highway release dispatches to.
std::vector<std::string> kernel_target_names_of(std::int64_t bits);

// The compute roof of that target (docs/PERFORMANCE.md#the-roofline): float32 GFLOP/s of
// fused multiply-adds on its widest vectors, all `threads` threads together, the best of
// several short runs (about 0.1 s in all).
double fma_peak_gflops(int threads);

}  // namespace attn_trace
