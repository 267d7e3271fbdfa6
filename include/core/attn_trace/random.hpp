#pragma once
// The project's own random numbers: identical on every platform and compiler.
// std::normal_distribution differs between standard libraries, and libm's log may
// differ in the last bit, so both the generator (xoshiro256**, seeded by
// splitmix64) and the logarithm behind the normal draws are written here out of
// IEEE operations (+ - * / sqrt), which every conforming platform rounds alike.
#include <cstdint>
#include <span>
#include <string>

namespace attn_trace {

class PortableRandom {
public:
    explicit PortableRandom(std::uint64_t seed);
    std::uint64_t next_u64();
    double uniform();                                  // [0, 1), 53 random bits
    double normal();                                   // N(0, 1), Marsaglia's polar method
    std::int64_t integer(std::int64_t low, std::int64_t high);  // uniform in [low, high]

private:
    std::uint64_t state_[4];
    bool has_spare_ = false;
    double spare_ = 0.0;
};

// How the numbers of a random matrix are drawn: a problem file's {"random": {"dist": ...,
// "mean": ..., ...}} (docs/PROBLEM.md#matrix-forms). The defaults are the file's.
struct RandomDraw {
    enum class Dist { normal, uniform, integers } dist = Dist::normal;
    double mean = 0.0, std = 1.0;  // normal: mean + std · N(0, 1)
    double low = 0.0, high = 1.0;  // uniform: [low, high); integers: every whole number in [low, high]
};
// "normal", "uniform", "integers"; false for anything else.
bool parse_dist(const std::string& name, RandomDraw::Dist& dist);
// The integers dist's default range, [-4, 4].
RandomDraw integers_draw(long low = -4, long high = 4);

// Fills `out` in order from `generator`: the one way every random matrix is made
// (the loader's {"random": ...}, `random --literal`, bench's inputs, variance).
void draw(PortableRandom& generator, const RandomDraw& how, std::span<double> out);

// Natural logarithm from IEEE arithmetic only (see above), accurate to ~1 ulp.
double portable_log(double x);

}  // namespace attn_trace
