#pragma once
// The project's own random numbers: identical on every platform and compiler.
// std::normal_distribution differs between standard libraries, and libm's log may
// differ in the last bit, so both the generator (xoshiro256**, seeded by
// splitmix64) and the logarithm behind the normal draws are written here out of
// IEEE operations (+ - * / sqrt), which every conforming platform rounds alike.
#include <cstdint>

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

// Natural logarithm from IEEE arithmetic only (see above), accurate to ~1 ulp.
double portable_log(double x);

}  // namespace attn_trace
