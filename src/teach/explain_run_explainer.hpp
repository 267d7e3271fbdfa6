#pragma once
// RunExplainer, private to the explain_run*.cpp files: each of them defines the cells of
// one part of run's pipeline; explain_run.cpp holds the dispatch and the reading of the trace.
#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/mask.hpp"
#include "explain_context.hpp"

namespace attn_trace {

class RunExplainer : ExplainContext {
public:
    RunExplainer(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options, std::size_t first_row)
        : ExplainContext(trace, problem, target, options), first_row_(first_row) {}

    ExplainDocument explain();

private:
    // Reading the trace, and what every part writes the same way (explain_run.cpp).
    static bool per_head(StepName name);
    // What A V mixes the values with: the weights, or after dropout the dropped weights.
    StepName mixer() const;
    const Step& step(StepName name, std::optional<int> head = std::nullopt) const;
    static std::string why_absent(StepName name);
    // Row i (the true query index) of a step; key-indexed steps hold every row.
    std::size_t local(StepName name, std::size_t i) const;
    double at(StepName name, std::size_t i, std::size_t j, std::optional<int> head = std::nullopt) const;
    std::vector<double> row_of(StepName name, std::size_t i, std::size_t first, std::size_t count) const;
    Dtype dtype() const;
    std::size_t j() const { return *target_.column; }
    // Row i of the head's slice of a side-by-side step (q, k, v), or of its RoPE step.
    std::vector<double> head_row(StepName name, std::size_t i, int column_head, std::size_t width) const;
    // Column c of a weight matrix, and its name: W_Q[:,3] / W_{Q\,:,3}.
    static std::vector<double> column_values(const Matrix& w, std::size_t c);
    std::string column_of(const std::string& matrix, std::size_t c) const;
    std::string heading(const std::string& what) const;
    // The target cell and its value: q_02 = 0.5.
    std::string target_value() const;
    // a · b written out for a chain: every product, then every product's value, each
    // ending with the bias when there is one.
    struct DotTerms {
        std::string products, values;
    };
    DotTerms dot_terms(const std::vector<double>& a, const std::vector<double>& b, std::optional<double> bias = std::nullopt) const;
    // "multiply the pairs and add" (then the bias bias_name[c]): the target cell as row · column + bias.
    ExplainLine product_line(const std::vector<double>& row, const std::vector<double>& column, const std::string& bias_name,
                             std::optional<double> bias) const;
    ExplainDocument given_cell(const std::string& what);
    // A cell that is one formula of other steps: what it is and its value.
    ExplainDocument formula_cell(const std::string& what);

    // The projections: q, k, v, MLA's products, q_rot and k_rot (explain_run_projections.cpp).
    ExplainDocument projection_cell();
    ExplainDocument mla_product_cell();
    ExplainDocument rope_cell();

    // The score side: scores, scaled, capped, masked and the mask (explain_run_scores.cpp).
    ExplainDocument score_cell();
    ExplainDocument mask_cell();
    std::string mask_rule(const MaskSpec& spec, std::size_t i, std::size_t j, double alone) const;

    // The softmax and dropout: row_max, exp, row_sum, weights, dropped (explain_run_softmax.cpp).
    std::string z_row_terms(std::size_t i, std::size_t per_line) const;
    // Σ_i = e^(z_i0 - max) + … = the row's sum.
    std::string exp_sum(std::size_t i) const;
    ExplainDocument row_max_cell();
    ExplainDocument exp_cell();
    ExplainDocument row_sum_cell();
    ExplainDocument empty_row(ExplainDocument d, std::size_t i) const;
    ExplainDocument weight_cell();
    ExplainDocument weight_row();
    ExplainDocument dropped_cell();

    // A half type's one rounding of the target cell, the line every rounded step's cell
    // ends with (explain_run_rounding.cpp, docs/PROBLEM.md#dtype-half-precision).
    // x as the type stores it, in f32: a value of the trace is already stored.
    float stored(double x) const;
    // a · b (+ bias) in f32 from the stored values, as the rounding model computes it.
    float f32_dot(const std::vector<double>& a, const std::vector<double>& b, std::optional<double> bias = std::nullopt) const;
    // In a half type, the closing line for the cell whose value before the rounding is
    // f32_value() (called only then); nothing in f64 and f32, or for a non-finite value.
    void close_with_rounding(ExplainDocument& d, const std::function<float()>& f32_value) const;
    // x and y as the explanation writes numbers, or with the digits that tell them apart.
    std::array<std::string, 2> distinct_numbers(double x, double y) const;
    ExplainLine rounding_line(float f32_value, double stored_value) const;

    // The outputs: out, concat, final (explain_run_outputs.cpp).
    ExplainDocument output_cell();
    ExplainDocument output_row();
    ExplainDocument concat_cell();
    ExplainDocument final_cell();

    const std::size_t i_ = target_.row;
    std::size_t first_row_;
};

}  // namespace attn_trace
