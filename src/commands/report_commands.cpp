#include "attn_trace/report_commands.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem_file.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/trace_budget.hpp"

namespace attn_trace {

PrecisionReport precision_command(const Problem& problem, const PrecisionRequest& request) {
    refuse_over_budget(problem, "precision", 4 * full_trace_bytes(problem), request.budget);
    return measure_precision(problem, PrecisionOptions{request.max_shift, request.backend});
}

std::string render_precision(const PrecisionReport& report, Format format) {
    switch (format) {
        case Format::json: return precision_json(report);
        case Format::markdown: return precision_markdown(report);
        case Format::latex: return precision_latex(report);
        case Format::text: return precision_text(report);
        case Format::csv:
        case Format::html: break;
    }
    throw InputError(fmt::format("precision writes text, json, markdown or latex, not {}", format_name(format)));
}

namespace {

// A generator spec; each matrix gets its own seed so changing one shape keeps the others.
// `std` scales a normal draw (the projections'); 1 is the file's default and is not written.
nlohmann::json random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed, const std::string& dist, double std = 1.0) {
    nlohmann::json spec = {{"shape", {rows, cols}}, {"seed", seed}, {"dist", dist}};
    if (std != 1.0) spec["std"] = std;
    return {{"random", spec}};
}

// The same numbers the loader would generate from random_matrix(...).
nlohmann::json literal_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed, const std::string& dist, double std = 1.0) {
    RandomDraw how = integers_draw();  // the loader's defaults for each dist
    if (dist != "integers") {
        how = RandomDraw{};
        parse_dist(dist, how.dist);
        how.std = std;
    }
    std::vector<double> values(rows * cols);
    PortableRandom generator(seed);
    draw(generator, how, values);
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < rows; ++i) out.push_back(std::vector<double>(values.begin() + static_cast<long>(i * cols), values.begin() + static_cast<long>((i + 1) * cols)));
    return out;
}

void check_random_request(const RandomRequest& r) {
    if (r.n == 0 || r.d_k == 0) throw InputError(fmt::format("{} 0: expected a whole number of at least 1", r.n == 0 ? "⟦n⟧" : "⟦dk⟧"));
    if (r.heads < 1 || r.heads > 4096) throw InputError(fmt::format("⟦heads⟧ '{}': expected a whole number from 1 to 4096", r.heads));
    if (r.kv_heads < 0 || r.kv_heads > 4096) throw InputError(fmt::format("⟦kv_heads⟧ '{}': expected a whole number from 1 to 4096", r.kv_heads));
    // A problem file's seeds run to 2^63 − 1 (docs/PROBLEM.md#matrix-forms), and the last matrix uses seed+4.
    const auto last_seed = static_cast<std::uint64_t>(std::numeric_limits<long>::max()) - 4;
    if (r.seed > last_seed) throw InputError(fmt::format("⟦seed⟧ '{}': expected a whole number from 0 to {}", r.seed, last_seed));
    if (r.dist != "normal" && r.dist != "uniform" && r.dist != "integers")
        throw InputError(fmt::format("⟦dist⟧ '{}': expected one of normal, uniform, integers", r.dist));
}

}  // namespace

std::string random_problem_text(const RandomRequest& r) {
    check_random_request(r);
    const std::size_t m = r.m ? r.m : r.n, d_v = r.d_v ? r.d_v : r.d_k;
    const int kv_heads = r.kv_heads ? r.kv_heads : r.heads;
    if (r.heads % kv_heads != 0) throw InputError(fmt::format("⟦kv_heads⟧ {} must divide ⟦heads⟧ {}", kv_heads, r.heads));
    if (r.literal && static_cast<double>(std::max(r.n, m)) * static_cast<double>(std::max(r.d_model, static_cast<std::size_t>(r.heads) * std::max(r.d_k, d_v))) > 1e7)
        throw InputError("⟦literal⟧ writes every number: keep it under 10 million values (leave it out for generator specs)");
    if (!r.mask.empty()) {  // refuse a bad spec, or a matrix mask of another shape, now, not when the file is read
        Problem scores;
        scores.file = fmt::format("⟦mask⟧ {}", r.mask);
        scores.n = r.n;
        scores.m = m;
        scores.masks = parse_mask_option(r.mask, r.n, m, "⟦mask⟧");
        validate_masks(scores);
    }
    auto matrix = [&](std::size_t rows, std::size_t cols, std::uint64_t seed, double std = 1.0) {
        return r.literal ? literal_matrix(rows, cols, seed, r.dist, std) : random_matrix(rows, cols, seed, r.dist, std);
    };
    // Normal projections drawn with std 1/√d_model, so that X W has entries of about
    // unit size whatever d_model is and the softmax is not saturated from the start
    // (docs/COMMANDS.md#random); uniform and integer draws stay as hand-friendly as asked.
    const double w_std = r.dist == "normal" && r.d_model ? 1.0 / std::sqrt(static_cast<double>(r.d_model)) : 1.0;
    const std::size_t q_width = static_cast<std::size_t>(r.heads) * r.d_k, k_width = static_cast<std::size_t>(kv_heads) * r.d_k,
                      v_width = static_cast<std::size_t>(kv_heads) * d_v;
    nlohmann::ordered_json problem;
    problem["title"] = fmt::format("random problem, seed {}", r.seed);
    if (r.d_model) {
        problem["X"] = matrix(r.n, r.d_model, r.seed);
        if (m != r.n) problem["X_source"] = matrix(m, r.d_model, r.seed + 4);
        problem["W_Q"] = matrix(r.d_model, q_width, r.seed + 1, w_std);
        problem["W_K"] = matrix(r.d_model, k_width, r.seed + 2, w_std);
        problem["W_V"] = matrix(r.d_model, v_width, r.seed + 3, w_std);
    } else {
        problem["Q"] = matrix(r.n, q_width, r.seed);
        problem["K"] = matrix(m, k_width, r.seed + 1);
        problem["V"] = matrix(m, v_width, r.seed + 2);
    }
    if (r.heads > 1) problem["heads"] = r.heads;
    if (kv_heads != r.heads) problem["kv_heads"] = kv_heads;
    if (!r.mask.empty()) {
        const bool is_json = r.mask.find_first_of("{[") == r.mask.find_first_not_of(" \t\n");
        problem["mask"] = is_json ? nlohmann::ordered_json::parse(r.mask) : nlohmann::ordered_json(r.mask);
    }
    return problem_file_text(problem);
}

}  // namespace attn_trace
