// The backward pass (docs/COMMANDS.md#grad) against finite differences of the forward pass,
// independent of PyTorch (tests/golden/grad_*.json hold torch.autograd's values).
#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/explain.hpp"
#include "stepwise_test_problems.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

// L = Σ d_out ⊙ output, output = final (with W_O) or concat (or head 0's out).
double loss(const Problem& p) {
    const Trace t = pipeline_full(p, {});
    double total = 0;
    for (std::size_t b = 0; b < p.batch; ++b) {
        const std::optional<int> batch = p.batched ? std::optional<int>(static_cast<int>(b)) : std::nullopt;
        const Step* out = t.find(p.W_O ? StepName::final : p.heads > 1 ? StepName::concat : StepName::out, p.W_O || p.heads > 1 ? std::nullopt : std::optional<int>(0), batch,
                                 std::nullopt, std::nullopt);
        const Matrix& d = p.d_out[b];
        for (std::size_t k = 0; k < d.data().size(); ++k) total += d.data()[k] * out->values.data()[k];
    }
    return total;
}

// (L(x + h) − L(x − h)) / 2h for the cell `cell` of a matrix of the problem.
template <typename Cell>
double central_difference(Problem p, Cell cell) {
    const double h = 1e-6, x = cell(p);
    cell(p) = x + h;
    const double up = loss(p);
    cell(p) = x - h;
    const double down = loss(p);
    return (up - down) / (2 * h);
}

double value_of(const Trace& t, const std::string& name, std::optional<int> head, std::size_t i, std::size_t j, std::optional<int> batch = std::nullopt) {
    const Step* s = t.find(step_named(name), head, batch, std::nullopt, std::nullopt);
    if (!s) throw std::runtime_error("no step " + name);
    return s->values(i, j);
}

const std::string direct = R"({"heads": 2, "kv_heads": 1, "mask": "causal", "softcap": 3, "alibi": true,
    "dropout": {"p": 0.2, "seed": 4, "mode": "train"},
    "Q": {"random": {"shape": [5, 8], "seed": 1}}, "K": {"random": {"shape": [5, 4], "seed": 2}}, "V": {"random": {"shape": [5, 4], "seed": 3}},
    "d_out": {"random": {"shape": [5, 8], "seed": 4}}})";

const std::string projected = R"({"heads": 2, "rope": {"base": 100}, "mask": "causal",
    "X": {"random": {"shape": [4, 6], "seed": 1}}, "X_source": {"random": {"shape": [5, 6], "seed": 2}},
    "W_Q": {"random": {"shape": [6, 4], "seed": 3}}, "W_K": {"random": {"shape": [6, 4], "seed": 4}}, "W_V": {"random": {"shape": [6, 4], "seed": 5}},
    "b_Q": [0.1, -0.2, 0.3, 0.0], "W_O": {"random": {"shape": [4, 3], "seed": 6}}, "b_O": [1, 2, 3],
    "d_out": {"random": {"shape": [4, 3], "seed": 7}}})";

}  // namespace

TEST_CASE("grad_q, grad_k and grad_v equal finite differences through GQA, causal, softcap, ALiBi and dropout", "[grad]") {
    const Problem p = parse_problem(direct, "t.json");
    const Trace grad = pipeline_grad(p, {}, {});
    for (std::size_t i : {1u, 4u})
        for (std::size_t j : {0u, 5u}) {
            INFO("Q[" << i << "][" << j << "]");
            const int head = static_cast<int>(j / 4);
            CHECK(value_of(grad, "grad_q", head, i, j % 4) == Approx(central_difference(p, [&](Problem& q) -> double& { return (*q.Q)(i, j); })).margin(1e-7));
        }
    for (std::size_t j : {0u, 3u}) {
        INFO("K[2][" << j << "], V[3][" << j << "]");
        CHECK(value_of(grad, "grad_k", 0, 2, j) == Approx(central_difference(p, [&](Problem& q) -> double& { return (*q.K)(2, j); })).margin(1e-7));
        CHECK(value_of(grad, "grad_v", 0, 3, j) == Approx(central_difference(p, [&](Problem& q) -> double& { return (*q.V)(3, j); })).margin(1e-7));
    }
}

TEST_CASE("weight, bias and input gradients equal finite differences through RoPE, cross-attention and W_O", "[grad]") {
    const Problem p = parse_problem(projected, "t.json");
    const Trace grad = pipeline_grad(p, {}, {});
    const auto check = [&](const std::string& name, std::size_t i, std::size_t j, auto cell) {
        INFO(name << "[" << i << "][" << j << "]");
        CHECK(value_of(grad, name, std::nullopt, i, j) == Approx(central_difference(p, cell)).margin(1e-7));
    };
    check("grad_W_Q", 2, 1, [](Problem& q) -> double& { return (*q.W_Q)(2, 1); });
    check("grad_W_K", 5, 3, [](Problem& q) -> double& { return (*q.W_K)(5, 3); });
    check("grad_W_V", 0, 2, [](Problem& q) -> double& { return (*q.W_V)(0, 2); });
    check("grad_W_O", 3, 0, [](Problem& q) -> double& { return (*q.W_O)(3, 0); });
    check("grad_b_Q", 0, 2, [](Problem& q) -> double& { return (*q.b_Q)[2]; });
    check("grad_x", 1, 4, [](Problem& q) -> double& { return q.X[0](1, 4); });
    check("grad_x_source", 3, 0, [](Problem& q) -> double& { return q.X_source[0](3, 0); });
}

TEST_CASE("the softmax backward is exactly 0 on blocked cells and its rows sum to 0, the Jacobian of a row", "[grad]") {
    const Problem p = parse_problem(direct, "t.json");
    const Trace grad = pipeline_grad(p, {}, GradOptions{"", 3, std::nullopt, std::nullopt});
    const Trace forward = pipeline_full(p, {});
    for (int h = 0; h < 2; ++h) {
        const Matrix& g = step_values(grad, "grad_masked", h);
        const Matrix& mask = step_values(forward, "mask", h);
        for (std::size_t i = 0; i < g.rows(); ++i) {
            double sum = 0;
            for (std::size_t j = 0; j < g.cols(); ++j) {
                if (std::isinf(mask(i, j))) CHECK(g(i, j) == 0.0);
                sum += g(i, j);
            }
            CHECK(sum == Approx(0).margin(1e-15));
        }
        const Matrix& jacobian = step_values(grad, "jacobian", h);
        const Matrix& a = step_values(forward, "weights", h);
        double squares = 0;
        for (std::size_t r = 0; r < jacobian.rows(); ++r)
            for (std::size_t c = 0; c < jacobian.cols(); ++c) {
                CHECK(jacobian(r, c) == jacobian(c, r));
                CHECK(jacobian(r, c) == (r == c ? a(3, r) : 0.0) - a(3, r) * a(3, c));
                squares += jacobian(r, c) * jacobian(r, c);
            }
        const auto& numbers = grad.numbers;
        const auto norm = std::find_if(numbers.begin(), numbers.end(), [&](const auto& n) { return n.first == fmt::format("jacobian_norm_head_{}", h); });
        REQUIRE(norm != numbers.end());
        CHECK(norm->second == Approx(std::sqrt(squares)));
    }
}

TEST_CASE("grad's bad input names what is wrong", "[grad][errors]") {
    CHECK_THROWS_WITH(parse_problem(R"({"Q": [[1, 0]], "K": [[1, 0]], "V": [[1]], "d_out": [[1, 2]]})", "t.json"),
                      Catch::Contains("$.d_out") && Catch::Contains("(1, 1)"));
    const Problem p = parse_problem(R"({"Q": [[1, 0]], "K": [[1, 0]], "V": [[1]]})", "t.json");
    CHECK_THROWS_WITH(pipeline_grad(p, {}, GradOptions{"", 1, std::nullopt, std::nullopt}), Catch::Contains("row 1: the problem has 1 query"));
    CHECK_THROWS_WITH(pipeline_grad(p, {}, GradOptions{"random:x", std::nullopt, std::nullopt, std::nullopt}), Catch::Contains("expected ones or random:SEED"));
    CHECK_THROWS_WITH(pipeline_grad(p, {}, GradOptions{"twos", std::nullopt, std::nullopt, std::nullopt}), Catch::Contains("expected ones or random:SEED"));
    // ones by default, and random:SEED is the portable generator's
    CHECK(step_values(pipeline_grad(p, {}, {}), "grad_concat", 0)(0, 0) == 1.0);
    CHECK(step_values(pipeline_grad(p, {}, GradOptions{"random:3", std::nullopt, std::nullopt, std::nullopt}), "grad_concat", 0).data() ==
          step_values(pipeline_grad(p, {}, GradOptions{"random:3", std::nullopt, std::nullopt, std::nullopt}), "grad_concat", 0).data());
}

TEST_CASE("the tiled backward (FlashAttention-2) equals the untiled one and recomputes each tile's weights", "[grad][tiled]") {
    std::string no_dropout = direct;
    no_dropout.replace(no_dropout.find(R"("dropout": {"p": 0.2, "seed": 4, "mode": "train"},)"), 50, "");
    for (const std::string& json : {no_dropout, projected}) {
        const Problem p = parse_problem(json, "t.json");
        for (const TiledOptions tiles : {TiledOptions{2, 2}, TiledOptions{3, 2}, TiledOptions{1, 5}}) {
            const Trace tiled = pipeline_grad(p, {}, GradOptions{"", std::nullopt, tiles, std::nullopt});
            const auto diff = std::find_if(tiled.numbers.begin(), tiled.numbers.end(), [](const auto& n) { return n.first == "max_abs_diff_vs_full"; });
            REQUIRE(diff != tiled.numbers.end());
            CHECK(diff->second < 1e-13);
            // p of a tile is the forward weights' block: exp(z − lse) with lse = m + ln ℓ
            const Trace forward = pipeline_full(p, {});
            const Step* tile = tiled.find(StepName::p, 1, std::nullopt, std::nullopt, std::array<int, 2>{1, 0});
            REQUIRE(tile != nullptr);
            const Matrix& weights = step_values(forward, "weights", 1);
            for (std::size_t r = 0; r < tile->values.rows(); ++r)
                for (std::size_t c = 0; c < tile->values.cols(); ++c)
                    CHECK(tile->values(r, c) == Approx(weights(tiles.block_q + r, c)).margin(1e-15));
        }
    }
    const Problem with_dropout = parse_problem(direct, "t.json");
    CHECK_THROWS_WITH(pipeline_grad(with_dropout, {}, GradOptions{"", std::nullopt, TiledOptions{}, std::nullopt}), Catch::Contains("dropout in train mode"));
    CHECK_THROWS_WITH(pipeline_grad(parse_problem(projected, "t.json"), {}, GradOptions{"", 1, TiledOptions{}, std::nullopt}), Catch::Contains("row"));
}

TEST_CASE("the tiled backward keeps the nan empty-row policy: its NaN is where the untiled one's is, skipped tiles or not", "[grad][tiled]") {
    // n = 6 > m = 4 under causal-bottom-right: rows 0 and 1 read no key, so with Br = 2 their
    // block's tiles are all masked. Their NaN weights still reach every dK and dV entry, as in
    // the untiled backward (itself checked against torch.autograd: tests/golden/grad_empty_rows_nan.json).
    nlohmann::json json = random_qkv({6, 4, 2, 1, 3, 3}, 4);
    json["mask"] = "causal-bottom-right";
    json["empty_rows"] = "nan";
    const Problem p = parse_problem(json.dump(), "t.json");
    const Trace untiled = pipeline_grad(p, {}, GradOptions{"random:2", std::nullopt, std::nullopt, std::nullopt});
    for (const TiledOptions tiles : {TiledOptions{2, 2}, TiledOptions{1, 3}, TiledOptions{4, 4}}) {
        INFO("Br " << tiles.block_q << " Bc " << tiles.block_k);
        const Trace tiled = pipeline_grad(p, {}, GradOptions{"random:2", std::nullopt, tiles, std::nullopt});
        CHECK(trace_number(tiled, "max_abs_diff_vs_full") < 1e-13);
        for (const char* name : {"grad_q", "grad_k", "grad_v"})
            for (int h = 0; h < (name == std::string("grad_q") ? 2 : 1); ++h) {
                INFO(name << " head " << h);
                CHECK(compare_matrices(step_values(tiled, name, h), step_values(untiled, name, h), tolerances::same_math_f64).passed());
            }
        CHECK(std::isnan(step_values(tiled, "grad_v", 0)(3, 1)));
        CHECK(std::isnan(step_values(tiled, "grad_q", 1)(1, 0)));
        CHECK(std::isfinite(step_values(tiled, "grad_q", 1)(2, 0)));
    }
}

namespace {

// Every "terms = value" line of a text explanation: Σ of the written terms (a × b
// or a lone number) against the value, both as printed (12 decimals).
void check_sums(const std::string& text, const std::string& cell) {
    std::istringstream lines(text);
    std::string line;
    int sums = 0;
    while (std::getline(lines, line)) {
        if (line.find(" = ") == std::string::npos || line.rfind("    ", 0) != 0) continue;
        std::vector<std::string> pieces;
        for (std::size_t at = 0, next; at != std::string::npos; at = next == std::string::npos ? next : next + 3) {
            next = line.find(" = ", at);
            pieces.push_back(line.substr(at, next == std::string::npos ? std::string::npos : next - at));
        }
        const std::string terms = pieces[pieces.size() - 2];
        if (terms.find("×") == std::string::npos && terms.find(" + ") == std::string::npos) continue;
        double total = 0;
        for (std::size_t at = 0, next; at != std::string::npos; at = next == std::string::npos ? next : next + 3) {
            next = terms.find(" + ", at);
            std::string term = terms.substr(at, next == std::string::npos ? std::string::npos : next - at);
            term.erase(std::remove_if(term.begin(), term.end(), [](char c) { return c == '(' || c == ')'; }), term.end());
            const std::size_t times = term.find("×"), over = term.find(" / ");
            double value = times == std::string::npos ? std::stod(term) : std::stod(term.substr(0, times)) * std::stod(term.substr(times + 2));
            if (over != std::string::npos) value /= std::stod(term.substr(over + 3));
            total += value;
        }
        INFO(cell << ": " << line);
        CHECK(total == Approx(std::stod(pieces.back())).margin(1e-9));
        ++sums;
    }
    INFO(cell << "\n" << text);
    CHECK(sums > 0);
}

}  // namespace

TEST_CASE("explain writes every gradient cell as terms that add up to the traced value", "[grad][explain]") {
    const Problem cross = parse_problem(projected, "t.json");
    for (const char* cell : {"grad_concat[1,2]", "grad_W_O[3,1]", "grad_b_O[0,2]", "grad_weights[2,3]", "grad_masked[3,1]", "grad_v[4,1]",
                             "grad_scores[3,2]", "grad_q_rot[2,1]", "grad_k_rot[4,0]", "grad_x[1,5]", "grad_x_source[4,2]", "grad_W_Q[5,3]",
                             "grad_W_K[2,1]", "grad_W_V[0,0]", "grad_b_Q[0,1]"}) {
        for (int head : {0, 1})
            check_sums(explain_problem(cross, {}, parse_cell_spec(cell), ExplainOptions{head, 0, 12, Format::text}), cell);
    }
    // GQA without RoPE: grad_q, and grad_k summed over the two query heads of KV head 0.
    const Problem gqa = parse_problem(direct, "t.json");
    for (const char* cell : {"grad_q[3,2]", "grad_k[2,3]", "grad_v[1,1]", "grad_dropped[4,1]", "grad_weights[4,1]", "grad_weights[3,0]"})
        check_sums(explain_problem(gqa, {}, parse_cell_spec(cell), ExplainOptions{0, 0, 12, Format::text}), cell);
    // A batch: a weight's gradient sums over both sequences.
    const Problem batch = parse_problem(R"({"heads": 1, "X": {"random": {"shape": [2, 3, 2], "seed": 1}}, "lengths": [3, 2],
        "W_Q": {"random": {"shape": [2, 2], "seed": 2}}, "W_K": {"random": {"shape": [2, 2], "seed": 3}}, "W_V": {"random": {"shape": [2, 2], "seed": 4}},
        "b_V": [1, -1], "d_out": {"random": {"shape": [2, 3, 2], "seed": 5}}})", "t.json");
    for (const char* cell : {"grad_W_Q[1,0]", "grad_b_V[0,1]", "grad_x[2,1]"})
        check_sums(explain_problem(batch, {}, parse_cell_spec(cell), ExplainOptions{0, 1, 12, Format::text}), cell);
}

namespace {

// A step that has no head (q, grad_concat).
const Matrix& headless(const Trace& t, const std::string& name) {
    const Step* s = t.find(step_named(name), std::nullopt, std::nullopt, std::nullopt, std::nullopt);
    if (!s) throw std::runtime_error("no step " + name);
    return s->values;
}

}  // namespace

// In a half type a gradient that sums products is one step (docs/PROBLEM.md#dtype-half-precision):
// its terms summed in f32 and rounded once, not each term rounded and then summed.
TEST_CASE("in f16 a KV head's grad_k and grad_v are the f32 sums over its query heads rounded once", "[half][grad]") {
    const Problem p = parse_problem(R"({"heads": 4, "kv_heads": 1, "mask": "causal",
        "Q": {"random": {"shape": [8, 16], "seed": 11}}, "K": {"random": {"shape": [8, 4], "seed": 12}}, "V": {"random": {"shape": [8, 4], "seed": 13}},
        "d_out": {"random": {"shape": [8, 16], "seed": 14}}})",
                                    "t.json");
    const RunOptions f16{Dtype::f16, "cpu"};
    const Trace grad = pipeline_grad(p, f16, {}), forward = pipeline_full(p, f16);
    const Matrix& q = headless(forward, "q");
    const Matrix &grad_k = step_values(grad, "grad_k", 0), &grad_v = step_values(grad, "grad_v", 0);
    std::size_t differs = 0;  // cells where rounding each head's term first would give another value
    for (std::size_t j = 0; j < p.m; ++j)
        for (std::size_t c = 0; c < p.d_k; ++c) {
            float sum_k = 0, sum_v = 0, rounded_terms = 0;
            for (int h = 0; h < p.heads; ++h) {
                const Matrix &d_s = step_values(grad, "grad_scores", h), &d_o = step_values(grad, "grad_out", h), &a = step_values(forward, "weights", h);
                float term_k = 0, term_v = 0;  // dSᵀ Q and Aᵀ dO of head h, accumulated in f32 as the products are
                for (std::size_t i = 0; i < p.n; ++i) {
                    term_k += static_cast<float>(d_s(i, j)) * static_cast<float>(q(i, static_cast<std::size_t>(h) * p.d_k + c));
                    term_v += static_cast<float>(a(i, j)) * static_cast<float>(d_o(i, c));
                }
                sum_k += term_k;
                sum_v += term_v;
                rounded_terms += static_cast<float>(round_to(Dtype::f16, term_k));
            }
            INFO("grad_k[" << j << "][" << c << "]");
            CHECK(grad_k(j, c) == round_to(Dtype::f16, sum_k));
            CHECK(grad_v(j, c) == round_to(Dtype::f16, sum_v));
            if (round_to(Dtype::f16, rounded_terms) != grad_k(j, c)) ++differs;
        }
    CHECK(differs > 0);  // the problem tells the two apart
}

TEST_CASE("in a half type d_out is stored in the type, as every input is", "[half][grad]") {
    const Problem p = parse_problem(R"({"Q": [[1]], "K": [[1]], "V": [[1]], "d_out": [[0.1]]})", "t.json");
    CHECK(headless(pipeline_grad(p, RunOptions{Dtype::f16, "cpu"}, {}), "grad_concat")(0, 0) == 0.0999755859375);
    CHECK(headless(pipeline_grad(p, RunOptions{Dtype::bf16, "cpu"}, {}), "grad_concat")(0, 0) == 0.10009765625);
    CHECK(headless(pipeline_grad(p, {}, {}), "grad_concat")(0, 0) == 0.1);
}

TEST_CASE("a half type stores qk-norm's and the latent norms' weights in the type", "[half]") {
    Problem p = parse_problem(R"({"X": [[1, 0, 0, 1]], "W_Q": [[1, 0], [0, 1], [1, 1], [0, 0]], "W_K": [[1, 0], [0, 1], [1, 1], [0, 0]],
        "W_V": [[1], [0], [0], [1]], "qk_norm": {"q_weight": [0.1, 1], "k_weight": [1, 0.3]}})",
                              "qk.json");
    p.mla = Mla{};
    p.mla->c_kv_norm = Mla::LatentNorm{{0.7, 1}, 1e-6};
    p.mla->c_q_norm = Mla::LatentNorm{{1, 0.2}, 1e-6};
    const Problem stored = *stored_in(p, Dtype::bf16);
    CHECK(stored.qk_norm->q_weight[0] == round_to(Dtype::bf16, 0.1));
    CHECK(stored.qk_norm->k_weight[1] == round_to(Dtype::bf16, 0.3));
    CHECK(stored.mla->c_kv_norm->weight[0] == round_to(Dtype::bf16, 0.7));
    CHECK(stored.mla->c_q_norm->weight[1] == round_to(Dtype::bf16, 0.2));
    CHECK(stored.qk_norm->q_weight[0] != 0.1);
}
