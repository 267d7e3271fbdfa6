// Decode and tiled steps: every number is read from the step's own trace
// (pipeline_decode_step, pipeline_tiled_block) or, for the query and key rows
// behind a score, from run's rows of the same query (pipeline_full_rows): the same
// code computed both, so they agree to the bit.
#include "explain_stepwise.hpp"

#include <cmath>
#include <limits>
#include <regex>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

// What decode and tiled share: the score of one query against one key, from run's rows of that query.
class StepwiseExplainer : protected ExplainContext {
public:
    StepwiseExplainer(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options, const RunOptions& run,
                      const ExplainSource& source, std::size_t batch)
        : ExplainContext(trace, problem, target, options), run_(run), source_(source), batch_(batch) {}

protected:
    // Decode and tiled steps are explained one cell at a time: checks the head, the batch
    // and that a cell is named (`place` is the option that picked the step, `example` a
    // cell to name), and gives the target's step.
    StepName cell_step(const char* place, const char* example) const {
        check_head_and_batch();
        if (!target_.column) no_step(fmt::format("with ⟦{}⟧, explain one cell (⟦cell⟧), e.g. ⟦cell⟧ '{}'", place, example));
        return target_.step;
    }

    // run's trace of query row i alone: its q (after RoPE), k, v, the raw and scaled scores.
    Trace query_row(std::size_t i) const { return pipeline_full_rows(p_, run_, batch_, {i, 1}); }

    static std::vector<double> values_of(const Trace& rows, StepName name, std::optional<int> head, std::size_t row, std::size_t first,
                                         std::size_t count, std::optional<int> batch) {
        const Step* s = rows.find(name, head, batch, std::nullopt, std::nullopt);
        const double* r = s->values.row(row);
        return {r + first, r + first + count};
    }
    std::optional<int> batch_tag() const { return p_.batched ? std::optional<int>(static_cast<int>(batch_)) : std::nullopt; }
    // Query head h's q row (its only row) and key j of its KV head, RoPE applied.
    std::vector<double> q_of(const Trace& rows) const {
        return p_.rope ? values_of(rows, StepName::q_rot, options_.head, 0, 0, p_.d_k, batch_tag())
                       : values_of(rows, StepName::q, std::nullopt, 0, static_cast<std::size_t>(options_.head) * p_.d_k, p_.d_k, batch_tag());
    }
    std::vector<double> k_of(const Trace& rows, std::size_t j) const {
        return p_.rope ? values_of(rows, StepName::k_rot, options_.head, j, 0, p_.d_k, batch_tag())
                       : values_of(rows, StepName::k, std::nullopt, j, static_cast<std::size_t>(kv_head_of(p_, options_.head)) * p_.d_k, p_.d_k, batch_tag());
    }
    std::vector<double> v_of(const Trace& rows, std::size_t j) const {
        return values_of(rows, StepName::v, std::nullopt, j, static_cast<std::size_t>(kv_head_of(p_, options_.head)) * p_.d_v, p_.d_v, batch_tag());
    }

    // z = s · q_i · k_j (capped) + M_ij, ending at `z` as the step recorded it.
    void score_lines(ExplainDocument& d, std::size_t i, std::size_t j, double z, const std::string& mask_words) const {
        const Trace rows = query_row(i);
        const auto q = q_of(rows), k = k_of(rows, j);
        std::vector<std::string> products;
        for (std::size_t t = 0; t < q.size(); ++t) products.push_back(n_.factor(q[t]) + n_.times() + n_.factor(k[t]));
        const double score = values_of(rows, StepName::scores, options_.head, 0, j, 1, batch_tag())[0];
        const double scaled = values_of(rows, p_.softcap ? StepName::capped : StepName::scaled, options_.head, 0, j, 1, batch_tag())[0];
        const std::string rope = p_.rope ? " (after RoPE)" : "";
        d.lines.push_back({fmt::format("query {}{}", i, rope), n_.sub("q", index(i)) + " = " + n_.vector(q)});
        d.lines.push_back({fmt::format("key {}{}", j, rope), n_.sub("k", index(j)) + " = " + n_.vector(k)});
        d.lines.push_back({"the dot product", n_.chain({n_.sub("S", index(i, j)), n_.terms(products, " + ", 3), n_.number(score)})});
        d.lines.push_back({fmt::format("scaled by s = {}{}", n_.number(p_.scale_factor()), p_.softcap ? fmt::format(", then capped at c = {}", *p_.softcap) : ""),
                           fmt::format("{} = {}", p_.softcap ? "c" + n_.dot() + "tanh(s" + n_.dot() + "S / c)" : "s" + n_.dot() + "S", n_.number(scaled))});
        // The step may hide more than the problem's mask (decode's prefill block hides its later keys).
        const double mask = std::isinf(z) ? z : values_of(rows, StepName::mask, options_.head, 0, j, 1, batch_tag())[0];
        d.lines.push_back({mask_words, fmt::format("{} = {} + {} = {}", n_.sub("z", index(i, j)), n_.number(scaled), n_.factor(mask), n_.number(z))});
    }

    // decode and tiled call s · Q Kᵀ + M `masked`, as run does (docs/NOTATION.md): an
    // old target naming it `scores` is pointed to the new name.
    std::string renamed_scores(const char* command) const {
        return fmt::format("{} calls s · Q Kᵀ + M 'masked', as run does: explain '{}'", command,
                           std::regex_replace(target_.spec, std::regex(R"(^\s*scores)"), "masked"));
    }

    const Step& step_at(StepName name, int head, std::optional<int> t, std::optional<std::array<int, 2>> tile) const {
        const Step* s = find_step(name, head, t, tile);
        if (!s) no_step(fmt::format("no step '{}' here", name));
        return *s;
    }

    RunOptions run_;
    const ExplainSource& source_;
    std::size_t batch_;
};

class DecodeExplainer : StepwiseExplainer {
public:
    using StepwiseExplainer::StepwiseExplainer;

    ExplainDocument explain() {
        const StepName name = cell_step("t", "weights[0,2]");
        const bool cache = name == StepName::k_cache || name == StepName::v_cache;
        if (name == StepName::scores) no_step(renamed_scores("decode"));
        if (!cache && name != StepName::masked && name != StepName::weights && name != StepName::out) no_step(fmt::format("decode steps have no '{}' at t", name));
        const int g = kv_head_of(p_, options_.head);
        const Step& s = step_at(name, cache ? g : options_.head, static_cast<int>(t()), std::nullopt);
        check_row(s.values.rows(), fmt::format("{} at t = {}", name, t()));
        check_column(s);
        if (cache) return cache_cell(s, g);
        if (name == StepName::masked) return score_cell(s);
        if (name == StepName::weights) return weight_cell(s);
        return output_cell(s);
    }

private:
    std::size_t t() const { return *source_.t; }
    std::size_t offset() const { return p_.m - std::min(p_.m, p_.n); }
    // Row r of a step at t is query first + r (the prefill block has several rows).
    std::size_t query(std::size_t r) const { return t() + 1 - trace_.steps.back().values.rows() + r; }
    std::string heading(const std::string& what) const {
        return fmt::format("{}[{},{}] at decode step t = {}, {}: {}", target_.step, target_.row, *target_.column, t(), where(), what);
    }

    ExplainDocument cache_cell(const Step& s, int g) {
        const std::size_t j = target_.row, c = *target_.column;
        const bool key = target_.step == StepName::k_cache;
        ExplainDocument d;
        d.heading = heading(fmt::format("row {} of KV head {}'s {} cache", j, g, key ? "key" : "value"));
        const std::string when = j < offset() ? fmt::format("one of the {} keys before the first query", offset())
                                              : fmt::format("appended at step {}", j - offset());
        d.lines.push_back({fmt::format("the cache holds {} after step {}: rows 0 to {}; row {} is {}_{} of KV head {}{}, {}", key ? "keys" : "values", t(), s.values.rows() - 1, j,
                                       key ? "k" : "v", j, g, key && p_.rope ? " after RoPE" : "", when),
                           n_.sub(key ? "k" : "v", index(j, c)) + " = " + n_.number(s.values(j, c))});
        return finish(d);
    }

    ExplainDocument score_cell(const Step& s) {
        const std::size_t r = target_.row, j = *target_.column, i = query(r);
        ExplainDocument d;
        d.heading = heading(fmt::format("query {} against cached key {}", i, j));
        const double z = s.values(r, j);
        score_lines(d, i, j, z, std::isinf(z) ? "the key is hidden (a later key in the prefill block, or the problem's mask)"
                                              : "the problem's mask (the cache holds only the past)");
        return finish(d);
    }

    ExplainDocument weight_cell(const Step& s) {
        const std::size_t r = target_.row, j = *target_.column;
        const Step& scores = step_at(StepName::masked, options_.head, static_cast<int>(t()), std::nullopt);
        Matrix z(1, scores.values.cols());
        for (std::size_t l = 0; l < z.cols(); ++l) z(0, l) = scores.values(r, l);
        // The same softmax the decode step ran, on the same row.
        const SoftmaxSteps soft = softmax_rows(z, p_.empty_rows, parse_dtype(trace_.problem.dtype, "the trace's dtype"));
        ExplainDocument d;
        d.heading = heading(fmt::format("the softmax over the {} cached keys", z.cols()));
        const double max = soft.row_max(0, 0), sum = soft.row_sum(0, 0);
        d.lines.push_back({"the scores of this step's row (scaled, masked)", n_.sub("z", index(r)) + " = (" + n_.terms(elided(z.cols(), [&](std::size_t l) { return n_.number(z(0, l)); }), ", ", 8) + ")"});
        if (std::isinf(max)) {
            d.lines.push_back({"every key is hidden: the empty-row policy decides", n_.sub("a", index(j)) + " = " + n_.number(s.values(r, j))});
        } else {
            d.lines.push_back({"its max and the sum of e^(z - max)", fmt::format("{} = {},  {} = {} = {}", n_.max_of(index(r)), n_.number(max), n_.total(index(r)),
                                                                                n_.terms(elided(z.cols(), [&](std::size_t l) { return n_.number(soft.exp(0, l)); }), " + ", 8), n_.number(sum))});
            d.lines.push_back({"the weight", softmax_quotient(n_.sub("a", index(j)), n_.sub("z", index(j)), n_.max_of(index(r)), n_.total(index(r)), z(0, j), max, soft.exp(0, j), sum, s.values(r, j))});
        }
        return finish(d);
    }

    ExplainDocument output_cell(const Step& s) {
        const std::size_t r = target_.row, c = *target_.column;
        const int g = kv_head_of(p_, options_.head);
        const Step& weights = step_at(StepName::weights, options_.head, static_cast<int>(t()), std::nullopt);
        const Step& cache = step_at(StepName::v_cache, g, static_cast<int>(t()), std::nullopt);
        const auto products = elided(cache.values.rows(), [&](std::size_t j) { return n_.number(weights.values(r, j)) + n_.times() + n_.factor(cache.values(j, c)); });
        ExplainDocument d;
        d.heading = heading(fmt::format("component {} of the output: the weights times the cached values", c));
        d.lines.push_back({fmt::format("Σ_j a_j · v_j[{}] over the {} cached values of KV head {}", c, cache.values.rows(), g),
                           n_.chain({n_.sub("o", index(r, c)), n_.terms(products, " + ", 3), n_.number(s.values(r, c))})});
        return finish(d);
    }
};

class TiledExplainer : StepwiseExplainer {
public:
    using StepwiseExplainer::StepwiseExplainer;

    ExplainDocument explain() {
        const StepName name = cell_step("tile", "l[0,0]");
        if (name == StepName::scores) no_step(renamed_scores("tiled"));
        if (name != StepName::masked && name != StepName::m && name != StepName::l && name != StepName::u && name != StepName::rescale)
            no_step(fmt::format("tiled steps have no '{}' at a tile", name));
        const Step* s = find_step(name, options_.head, std::nullopt, tile());
        if (!s)
            throw InputError(fmt::format("⟦tile⟧ {},{}: the tile was skipped, every score in it is masked (no step records it); its state is "
                                         "the previous tile's", (*source_.tile)[0], (*source_.tile)[1]));
        check_row(s->values.rows(), fmt::format("{} of tile [{},{}]", name, (*source_.tile)[0], (*source_.tile)[1]));
        check_column(*s);
        if (name == StepName::masked) return score_cell(*s);
        return state_cell(*s);
    }

private:
    std::array<int, 2> tile() const { return {static_cast<int>((*source_.tile)[0]), static_cast<int>((*source_.tile)[1])}; }
    std::size_t Br() const { return std::min(source_.tiled.block_q, p_.n); }
    std::size_t Bc() const { return std::min(source_.tiled.block_k, p_.m); }
    std::string heading(const std::string& what) const {
        return fmt::format("{}[{},{}] of tile [{},{}], {}: {}", target_.step, target_.row, *target_.column, tile()[0], tile()[1], where(), what);
    }
    // The same head's step at the last computed tile before this one, or null at the block's first.
    const Step* previous(StepName name) const {
        for (int kt = tile()[1] - 1; kt >= 0; --kt)
            if (const Step* s = find_step(name, options_.head, std::nullopt, std::array<int, 2>{tile()[0], kt})) return s;
        return nullptr;
    }

    ExplainDocument score_cell(const Step& s) {
        const std::size_t r = target_.row, c = *target_.column, i = tile()[0] * Br() + r, j = tile()[1] * Bc() + c;
        ExplainDocument d;
        d.heading = heading(fmt::format("query {} against key {}", i, j));
        score_lines(d, i, j, s.values(r, c), "the mask");
        return finish(d);
    }

    // m, rescale, ℓ, u: the recurrence from the previous tile.
    ExplainDocument state_cell(const Step& s) {
        const std::size_t r = target_.row, c = *target_.column;
        const Step& scores = step_at(StepName::masked, options_.head, std::nullopt, tile());
        const Step& m = step_at(StepName::m, options_.head, std::nullopt, tile());
        const Step* m_prev = previous(StepName::m);
        const double m_old = m_prev ? m_prev->values(r, 0) : minus_infinity, m_new = m.values(r, 0);
        const double rescale = step_at(StepName::rescale, options_.head, std::nullopt, tile()).values(r, 0);
        const std::size_t cols = scores.values.cols();
        ExplainDocument d;
        d.heading = heading(fmt::format("the running state of query {} after key tile {}", tile()[0] * Br() + r, tile()[1]));
        d.lines.push_back({m_prev ? "m_old: the running max after the previous computed tile" : "the block's first tile: m starts at -inf, ℓ and u at 0",
                           n_.sub("m", "old") + " = " + n_.number(m_old)});
        d.lines.push_back({"the running max: the old max or the largest score of this tile's row",
                           fmt::format("{} = {}({}, {}({})) = {}", n_.sub("m", "new"), max_word(), n_.number(m_old), max_word(),
                                       n_.terms(elided(cols, [&](std::size_t l) { return n_.number(scores.values(r, l)); }), ", ", 6), n_.number(m_new))});
        if (target_.step == StepName::m) return finish(d);
        d.lines.push_back({"the rescale factor for what was summed under the old max (1 when the max did not change)",
                           fmt::format("{} = {} = {}", n_.exp(n_.sub("m", "old") + " - " + n_.sub("m", "new")), n_.exp(n_.number(m_old) + " - " + n_.factor(m_new)), n_.number(rescale))});
        if (target_.step == StepName::rescale) return finish(d);
        const auto p = [&](std::size_t l) { return std::isinf(scores.values(r, l)) ? 0.0 : std::exp(scores.values(r, l) - m_new); };
        if (target_.step == StepName::l) {
            const Step* l_prev = previous(StepName::l);
            const double l_old = l_prev ? l_prev->values(r, 0) : 0.0;
            d.lines.push_back({"ℓ_new = rescale · ℓ_old + Σ_j e^(z_j - m_new), over this tile's keys",
                               n_.chain({n_.latex() ? "\\ell_{new}" : "ℓ_new",
                                         n_.terms(with_first(n_.number(rescale) + n_.times() + n_.factor(l_old), elided(cols, [&](std::size_t l) { return n_.number(p(l)); })), " + ", 6),
                                         n_.number(s.values(r, 0))})});
            return finish(d);
        }
        const Step* u_prev = previous(StepName::u);
        const double u_old = u_prev ? u_prev->values(r, c) : 0.0;
        const Trace rows = query_row(tile()[0] * Br() + r);
        const std::size_t j0 = tile()[1] * Bc();
        d.lines.push_back({fmt::format("u_new = rescale · u_old + Σ_j e^(z_j - m_new) · v_j[{}], over this tile's keys", c),
                           n_.chain({n_.sub("u", "new"),
                                     n_.terms(with_first(n_.number(rescale) + n_.times() + n_.factor(u_old),
                                                         elided(cols, [&](std::size_t l) { return n_.number(p(l)) + n_.times() + n_.factor(v_of(rows, j0 + l)[c]); })),
                                              " + ", 3),
                                     n_.number(s.values(r, c))})});
        return finish(d);
    }

    std::string max_word() const { return n_.latex() ? "\\max" : "max"; }
    // The rescaled old value, then the tile's terms: one sum.
    static std::vector<std::string> with_first(std::string first, std::vector<std::string> rest) {
        rest.insert(rest.begin(), std::move(first));
        return rest;
    }
};

}  // namespace

ExplainDocument explain_decode_step(const Problem& problem, const RunOptions& run, const ExplainTarget& target, const ExplainOptions& options,
                                    const ExplainSource& source, std::size_t batch) {
    const std::size_t t = *source.t, prefill = source.decode.prefill;
    if (t >= problem.n || (prefill > 0 && t + 1 < prefill))
        throw InputError(fmt::format("⟦t⟧ {}: decode's steps are t = {} to {}{}", t, prefill > 0 ? prefill - 1 : 0, problem.n - 1,
                                     prefill > 0 ? fmt::format(" (the prefill block of {} queries is the step t = {})", prefill, prefill - 1) : ""));
    const Trace trace = pipeline_decode_step(problem, run, source.decode, batch, t);
    return DecodeExplainer(trace, problem, target, options, run, source, batch).explain();
}

ExplainDocument explain_tiled_step(const Problem& problem, const RunOptions& run, const ExplainTarget& target, const ExplainOptions& options,
                                   const ExplainSource& source, std::size_t batch) {
    validate_tiles(source.tiled);
    const std::size_t Br = std::min(source.tiled.block_q, problem.n), Bc = std::min(source.tiled.block_k, problem.m);
    const std::size_t Tr = (problem.n + Br - 1) / Br, Tc = (problem.m + Bc - 1) / Bc;
    const auto [qb, kt] = *source.tile;
    if (qb >= Tr || kt >= Tc)
        throw InputError(fmt::format("⟦tile⟧ {},{}: with Br = {} and Bc = {} the tiles are [0…{}, 0…{}]", qb, kt, Br, Bc, Tr - 1, Tc - 1));
    const Trace trace = pipeline_tiled_block(problem, run, source.tiled, batch, qb, kt);
    return TiledExplainer(trace, problem, target, options, run, source, batch).explain();
}

}  // namespace attn_trace
