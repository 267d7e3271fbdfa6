#pragma once
// Which compiled copy of the fast path's micro-kernels runs (the "kernel target"):
// the CPU's best, unless ATTN_TRACE_KERNEL names a lower one. The names people
// see (avx512, avx2, baseline) and Highway's target bits, in one place.
#include <cstdint>

namespace attn_trace {

// Applies ATTN_TRACE_KERNEL once, before the first dispatch (thread-safe); throws
// InputError when it names a target that is not compiled or not on this CPU.
void settle_kernel_target();

// From fast_attention.cpp's dispatch table: the targets compiled into this
// binary (Highway bits), and the one a call runs now.
std::int64_t compiled_kernel_targets();
std::int64_t dispatched_kernel_target();

}  // namespace attn_trace
