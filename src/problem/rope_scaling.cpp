// RoPE's angle per pair under a long-context scaling, as transformers computes its
// inverse frequencies (docs/PROBLEM.md#rope-scaling-partial-rotary). Each formula is the
// library's, so that a model's layer gives the model's numbers; where the library differs
// from the paper that introduced a scaling, the library is followed and the place says so.
#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

namespace {

constexpr double pi = std::numbers::pi;

// YaRN's magnitude correction 0.1·m·ln(s) + 1 (1 for s ≤ 1).
double yarn_mscale(double factor, double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; }

// The (fractional) pair index whose wavelength makes `rotations` turns over the original context.
double yarn_correction_dim(double rotations, double dims, double base, double original) {
    return dims * std::log(original / (rotations * 2.0 * pi)) / (2.0 * std::log(base));
}

void yarn(Rope& rope, std::vector<double>& theta, double dims, const std::string& where) {
    const RopeScaling& s = rope.scaling;
    // Pairs below `low` keep their angle (many turns: extrapolated), above `high` are divided
    // by the factor (few turns: interpolated), a linear ramp between; transformers floors
    // low and ceils high (its `truncate`, on by default).
    const double low = std::max(std::floor(yarn_correction_dim(s.beta_fast, dims, rope.base, s.original_max_positions)), 0.0);
    double high = std::min(std::ceil(yarn_correction_dim(s.beta_slow, dims, rope.base, s.original_max_positions)), dims - 1.0);
    if (high == low) high += 0.001;  // as the library does, so the ramp never divides by 0
    for (std::size_t p = 0; p < theta.size(); ++p) {
        const double ramp = std::clamp((static_cast<double>(p) - low) / (high - low), 0.0, 1.0);
        const double extrapolation = 1.0 - ramp;
        theta[p] = theta[p] / s.factor * ramp + theta[p] * extrapolation;
    }
    if (s.attention_factor) rope.attention_factor = *s.attention_factor;
    else if (s.mscale && s.mscale_all_dim && *s.mscale != 0.0 && *s.mscale_all_dim != 0.0)
        rope.attention_factor = yarn_mscale(s.factor, *s.mscale) / yarn_mscale(s.factor, *s.mscale_all_dim);
    else rope.attention_factor = yarn_mscale(s.factor, 1.0);
    if (!(rope.attention_factor > 0) || !std::isfinite(rope.attention_factor))
        throw InputError(fmt::format("{}: yarn's attention factor came out as {}; expected a number > 0", where, rope.attention_factor));
}

// Llama 3.1: long wavelengths (beyond original / low_freq_factor) are divided by the factor,
// short ones (below original / high_freq_factor) kept, the band between blended smoothly.
void llama3(const RopeScaling& s, std::vector<double>& theta, const std::string& where) {
    if (!(s.high_freq_factor > s.low_freq_factor))
        throw InputError(fmt::format("{}: llama3 scaling needs high_freq_factor > low_freq_factor, found {} and {}", where, s.high_freq_factor, s.low_freq_factor));
    const double low_wavelength = s.original_max_positions / s.low_freq_factor, high_wavelength = s.original_max_positions / s.high_freq_factor;
    for (double& t : theta) {
        const double wavelength = 2.0 * pi / t;
        if (wavelength > low_wavelength) t /= s.factor;
        else if (wavelength >= high_wavelength) {
            const double smooth = (s.original_max_positions / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
            t = (1.0 - smooth) * t / s.factor + smooth * t;
        }
    }
}

}  // namespace

std::string rope_scaling_name(RopeScaling::Type type) {
    switch (type) {
        case RopeScaling::Type::none: return "default";
        case RopeScaling::Type::linear: return "linear";
        case RopeScaling::Type::dynamic: return "dynamic";
        case RopeScaling::Type::yarn: return "yarn";
        case RopeScaling::Type::llama3: return "llama3";
    }
    return "default";
}

void resolve_rope(Rope& rope, std::size_t rotary_dims, double seq_len, const std::string& where) {
    const RopeScaling& s = rope.scaling;
    const double dims = static_cast<double>(rotary_dims);
    double base = rope.base;
    if (s.type == RopeScaling::Type::dynamic && seq_len > s.original_max_positions) {
        // Dynamic NTK raises the base with the length read so far; within the original
        // context the angles are the plain ones.
        if (rotary_dims <= 2) throw InputError(fmt::format("{}: dynamic scaling needs more than 2 rotary dimensions, found {}", where, rotary_dims));
        base *= std::pow(s.factor * seq_len / s.original_max_positions - (s.factor - 1.0), dims / (dims - 2.0));
    }
    rope.theta.assign(rotary_dims / 2, 0.0);
    for (std::size_t p = 0; p < rope.theta.size(); ++p)
        rope.theta[p] = rope.angles_deg.empty() ? std::pow(base, -2.0 * static_cast<double>(p) / dims) : rope.angles_deg[p] * pi / 180.0;
    rope.attention_factor = 1.0;
    switch (s.type) {
        case RopeScaling::Type::none:
        case RopeScaling::Type::dynamic: break;
        case RopeScaling::Type::linear:
            for (double& t : rope.theta) t /= s.factor;  // positions divided by the factor
            break;
        case RopeScaling::Type::yarn: yarn(rope, rope.theta, dims, where); break;
        case RopeScaling::Type::llama3: llama3(s, rope.theta, where); break;
    }
}

}  // namespace attn_trace
