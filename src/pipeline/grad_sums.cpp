// The backward pass's sums and products (grad_sums.hpp).
#include "grad_sums.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/random.hpp"

namespace attn_trace {

Matrix hadamard(const Matrix& a, const Matrix& b) {
    Matrix out(a.rows(), a.cols());
    for (std::size_t i = 0; i < out.data().size(); ++i) out.data()[i] = a.data()[i] * b.data()[i];
    return out;
}

Matrix column_sums(const Matrix& a, Dtype compute) {
    Matrix out(1, a.cols(), 0.0);
    for (std::size_t i = 0; i < a.rows(); ++i)
        for (std::size_t j = 0; j < a.cols(); ++j) out(0, j) = round_to(compute, out(0, j) + a(i, j));
    return out;
}

void add_into(Matrix& into, const Matrix& a, Dtype compute) {
    if (into.empty()) {
        into = a;
        return;
    }
    for (std::size_t i = 0; i < into.data().size(); ++i) into.data()[i] = round_to(compute, into.data()[i] + a.data()[i]);
}

void put_columns(Matrix& into, const Matrix& a, std::size_t first) {
    for (std::size_t i = 0; i < a.rows(); ++i) std::copy(a.row(i), a.row(i) + a.cols(), into.row(i) + first);
}

std::vector<Matrix> upstream(const Problem& p, const std::string& option, std::size_t width) {
    if (option.empty() && !p.d_out.empty()) return p.d_out;
    std::vector<Matrix> out;
    if (option.empty() || option == "ones") {
        for (std::size_t b = 0; b < p.batch; ++b) out.emplace_back(p.n, width, 1.0);
        return out;
    }
    const std::string prefix = "random:";
    char* end = nullptr;
    const std::string digits = option.substr(std::min(option.size(), prefix.size()));
    const unsigned long long seed = option.rfind(prefix, 0) == 0 && !digits.empty() && digits[0] != '-' ? std::strtoull(digits.c_str(), &end, 10) : 0;
    if (option.rfind(prefix, 0) != 0 || digits.empty() || digits[0] == '-' || end == nullptr || *end != '\0')
        throw InputError(fmt::format("⟦d_out⟧ {}: expected ones or random:SEED (a whole number), e.g. random:3", option));
    PortableRandom generator(seed);
    for (std::size_t b = 0; b < p.batch; ++b) {
        Matrix d(p.n, width);
        draw(generator, RandomDraw{}, d.data());
        out.push_back(std::move(d));
    }
    return out;
}

}  // namespace attn_trace
