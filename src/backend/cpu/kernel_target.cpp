// Choosing the kernel target: Highway knows which targets the CPU supports
// (cpuid, and whether the OS saves the wider registers); this file names them and
// applies ATTN_TRACE_KERNEL by narrowing what Highway may choose from.
#include "kernel_target.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>
#include <hwy/targets.h>

#include "attn_trace/cpu_kernel.hpp"
#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

struct NamedTarget {
    const char* name;
    std::int64_t bits;  // the Highway targets that go by this name
    const char* description;
};

// Best first. Every x86 target Highway has, by its register width: the AVX-512 ones
// (AVX3, AVX3_DL, and in later Highway releases AVX3_ZEN4, AVX3_SPR: each of the x86 bits
// above AVX2), AVX2, and the baseline: every x86 bit below AVX2 (SSE4, SSSE3 and those
// Highway reserves) and EMU128 or SCALAR, what Highway calls the compiler's own.
// A test holds every bit of HWY_TARGETS to a name (tests/test_fast_attention.cpp).
constexpr std::int64_t x86_bits = (1LL << (HWY_HIGHEST_TARGET_BIT_X86 + 1)) - 1;
constexpr std::int64_t x86_bits_above_avx2 = (HWY_AVX2 - 1) & x86_bits;
constexpr std::int64_t x86_bits_below_avx2 = x86_bits & ~((HWY_AVX2 << 1) - 1);
const NamedTarget named_targets[] = {
    {"avx512", x86_bits_above_avx2, "AVX-512 (F, VL, DQ, BW), 16 floats a vector"},
    {"avx2", HWY_AVX2, "AVX2 + FMA, 8 floats a vector"},
    {"baseline", x86_bits_below_avx2 | HWY_EMU128 | HWY_SCALAR, "the x86-64 baseline (SSE2), 4 floats a vector"},
};

const NamedTarget* named(const std::string& name) {
    for (const auto& target : named_targets)
        if (name == target.name) return &target;
    return nullptr;
}

std::vector<std::string> names_within(std::int64_t bits) {
    std::vector<std::string> out;
    for (const auto& target : named_targets)
        if (target.bits & bits) out.push_back(target.name);
    return out;
}

// The error is kept and thrown again on every later call, so a bad setting
// stays an error however many kernels a command runs.
std::once_flag settled;
std::string setting_error;
std::int64_t cpu_targets = 0;  // what the CPU supports, read before any narrowing

void settle() {
    cpu_targets = hwy::SupportedTargets();
    const char* value = std::getenv("ATTN_TRACE_KERNEL");
    if (value == nullptr || *value == '\0') return;
    const std::int64_t usable = cpu_targets & compiled_kernel_targets();
    const NamedTarget* target = named(value);
    if (target == nullptr) {
        setting_error = fmt::format("ATTN_TRACE_KERNEL={}: expected one of avx512, avx2, baseline (this CPU runs {})", value,
                                    fmt::join(names_within(usable), ", "));
        return;
    }
    if ((target->bits & usable) == 0) {
        setting_error = fmt::format("ATTN_TRACE_KERNEL={}: this CPU (or this build) cannot run {}; it runs {}", value, target->description,
                                    fmt::join(names_within(usable), ", "));
        return;
    }
    // Highway then chooses the best of what is left: the named target itself.
    hwy::SetSupportedTargetsForTest(target->bits & usable);
}

}  // namespace

void settle_kernel_target() {
    std::call_once(settled, settle);
    if (!setting_error.empty()) throw InputError(setting_error);
}

std::string kernel_target() {
    const std::int64_t bits = dispatched_kernel_target();
    for (const auto& target : named_targets)
        if (target.bits & bits) return target.name;
    return hwy::TargetName(bits);  // a target this table does not name (not compiled here)
}

std::string kernel_target_description(const std::string& name) {
    const NamedTarget* target = named(name);
    return target ? target->description : name;
}

std::vector<std::string> compiled_kernel_target_names() { return names_within(compiled_kernel_targets()); }

std::vector<std::string> kernel_target_names_of(std::int64_t bits) { return names_within(bits); }

std::vector<std::string> supported_kernel_target_names() {
    std::call_once(settled, settle);  // the CPU's list, not narrowed by ATTN_TRACE_KERNEL
    return names_within(cpu_targets & compiled_kernel_targets());
}

}  // namespace attn_trace
