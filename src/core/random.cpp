// Built with -ffp-contract=off (see CMakeLists.txt): a fused multiply-add would
// round differently from a separate multiply and add and break reproducibility.
#include "attn_trace/random.hpp"

#include <cmath>

namespace attn_trace {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

std::uint64_t rotate_left(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

PortableRandom::PortableRandom(std::uint64_t seed) {
    for (auto& word : state_) word = splitmix64(seed);
}

std::uint64_t PortableRandom::next_u64() {
    const std::uint64_t result = rotate_left(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotate_left(state_[3], 45);
    return result;
}

double PortableRandom::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double PortableRandom::normal() {
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    // Polar method: a point uniform in the unit disc gives two independent normals.
    double u, v, s;
    do {
        u = 2.0 * uniform() - 1.0;
        v = 2.0 * uniform() - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double factor = std::sqrt(-2.0 * portable_log(s) / s);
    spare_ = v * factor;
    has_spare_ = true;
    return u * factor;
}

std::int64_t PortableRandom::integer(std::int64_t low, std::int64_t high) {
    const std::uint64_t span = static_cast<std::uint64_t>(high - low) + 1;
    // Rejection keeps every value equally likely (no modulo bias).
    const std::uint64_t limit = span == 0 ? 0 : (~std::uint64_t{0} / span) * span;
    std::uint64_t draw;
    do draw = next_u64();
    while (limit != 0 && draw >= limit);
    return low + static_cast<std::int64_t>(span == 0 ? draw : draw % span);
}

double portable_log(double x) {
    // x = mantissa * 2^exponent with mantissa in [sqrt(1/2), sqrt(2)); then
    // log(mantissa) = 2 atanh(t) = 2 (t + t^3/3 + t^5/5 + ...), t = (m-1)/(m+1), |t| < 0.172.
    int exponent = 0;
    double mantissa = std::frexp(x, &exponent);  // exact: [0.5, 1)
    if (mantissa < 0.70710678118654752440) {
        mantissa *= 2.0;
        exponent -= 1;
    }
    const double t = (mantissa - 1.0) / (mantissa + 1.0);
    const double t2 = t * t;
    // 13 terms: the first one left out, t^26/27 < 0.0295^13/27 ≈ 4e-22, is below half
    // an ulp of the sum (checked: 5 million draws give the same bits as 21 terms).
    // The reciprocals are constants, folded with correct rounding at compile time.
    static constexpr double reciprocal_odd[] = {1.0 / 1, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13,
                                                1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23, 1.0 / 25};
    double sum = 0.0;
    for (int k = 12; k >= 0; --k) sum = sum * t2 + reciprocal_odd[k];
    const double ln2 = 0.69314718055994530942;
    return 2.0 * t * sum + exponent * ln2;
}

bool parse_dist(const std::string& name, RandomDraw::Dist& dist) {
    if (name == "normal") dist = RandomDraw::Dist::normal;
    else if (name == "uniform") dist = RandomDraw::Dist::uniform;
    else if (name == "integers") dist = RandomDraw::Dist::integers;
    else return false;
    return true;
}

RandomDraw integers_draw(long low, long high) {
    RandomDraw how;
    how.dist = RandomDraw::Dist::integers;
    how.low = static_cast<double>(low);
    how.high = static_cast<double>(high);
    return how;
}

void draw(PortableRandom& generator, const RandomDraw& how, std::span<double> out) {
    for (double& x : out) {
        switch (how.dist) {
            case RandomDraw::Dist::normal: x = how.mean + how.std * generator.normal(); break;
            case RandomDraw::Dist::uniform: x = how.low + (how.high - how.low) * generator.uniform(); break;
            case RandomDraw::Dist::integers:
                x = static_cast<double>(generator.integer(static_cast<std::int64_t>(how.low), static_cast<std::int64_t>(how.high)));
                break;
        }
    }
}

}  // namespace attn_trace
