// The portable generator must give the same numbers everywhere: these values
// are pinned, so a change to the generator (or to the platform's arithmetic)
// fails here before it silently changes every {"random": ...} problem.
#include <catch2/catch.hpp>
#include <cmath>

#include "attn_trace/random.hpp"

using namespace attn_trace;

TEST_CASE("portable_log agrees with libm to about an ulp") {
    for (double x : {1e-300, 1e-10, 0.1, 0.5, 0.70710678, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300}) REQUIRE(portable_log(x) == Approx(std::log(x)).epsilon(1e-15));
    REQUIRE(portable_log(1.0) == 0.0);
}

TEST_CASE("the generator's stream is pinned") {
    PortableRandom a(1), b(1), c(2);
    const std::uint64_t first = a.next_u64();
    REQUIRE(first == b.next_u64());
    REQUIRE(first != c.next_u64());
    PortableRandom pinned(0);
    REQUIRE(pinned.next_u64() == 11091344671253066420ULL);
    PortableRandom normals(7);
    REQUIRE(normals.normal() == 0.96436185272551833);
}

TEST_CASE("normal draws have mean 0 and variance 1, uniform and integers stay in range") {
    PortableRandom generator(42);
    double sum = 0, squares = 0;
    const int count = 200000;
    for (int i = 0; i < count; ++i) {
        const double x = generator.normal();
        sum += x;
        squares += x * x;
    }
    REQUIRE(sum / count == Approx(0.0).margin(0.01));
    REQUIRE(squares / count == Approx(1.0).margin(0.01));
    for (int i = 0; i < 1000; ++i) {
        const double u = generator.uniform();
        REQUIRE((u >= 0.0 && u < 1.0));
        const auto k = generator.integer(-2, 3);
        REQUIRE((k >= -2 && k <= 3));
    }
}
