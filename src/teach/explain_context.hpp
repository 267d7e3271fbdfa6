#pragma once
// What the explanations of run, decode and tiled share: the trace they read, the
// target, the notation, and the small pieces of wording every one of them uses.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/explain.hpp"
#include "explain_document.hpp"

namespace attn_trace {

// options.batch as an index, or InputError when the problem has no such sequence.
std::size_t checked_batch(const Problem& problem, const ExplainOptions& options);

class ExplainContext {
public:
    ExplainContext(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options)
        : trace_(trace), p_(problem), target_(target), options_(options), n_(latex_notation(options.format), options.precision) {}

protected:
    // The step of this head (per-head steps) and batch, at decode step t or tile; null when absent.
    const Step* find_step(StepName name, std::optional<int> head, std::optional<int> t = std::nullopt,
                          std::optional<std::array<int, 2>> tile = std::nullopt) const;
    // The names of the steps this trace has (for this batch), in trace order: what can be explained.
    std::vector<StepName> step_names() const;
    // Throws the "no such step" error, naming the steps that exist.
    [[noreturn]] void no_step(const std::string& why) const;
    void check_head_and_batch() const;
    void check_column(const Step& step) const;
    void check_row(std::size_t rows, const std::string& what) const;

    std::string where() const;
    std::string index(std::size_t i) const { return std::to_string(i); }
    // "02" for A_02; "1,10" once an index has two digits, so it stays readable.
    std::string index(std::size_t i, std::size_t j) const;
    std::string footnote() const;
    // The document with the footnote every explanation ends with.
    ExplainDocument finish(ExplainDocument d) const;
    static std::string quoted_label(const std::vector<std::string>& labels, std::size_t i);
    // part(j) for j < count, all of them up to 16, otherwise the first 12, an
    // ellipsis and the last 4: a row of 65 536 keys stays readable.
    std::vector<std::string> elided(std::size_t count, const std::function<std::string(std::size_t)>& part) const;
    // e^(z − max) / Σ with every number, for one weight.
    std::string softmax_quotient(const std::string& A, const std::string& z_name, const std::string& max_name, const std::string& sum_name, double z,
                                 double max, double e, double sum, double weight) const;

    const Trace& trace_;
    const Problem& p_;
    const ExplainTarget& target_;
    const ExplainOptions& options_;
    Notation n_;
};

}  // namespace attn_trace
