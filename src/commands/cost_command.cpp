#include "attn_trace/cost_command.hpp"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

namespace {

std::uint64_t whole_number(const std::string& setting, long long value, long long minimum = 1) {
    if (value < minimum) throw InputError(fmt::format("⟦{}⟧ {}: expected a whole number of at least {}", setting, value, minimum));
    return static_cast<std::uint64_t>(value);
}

// ⟦sparse⟧: the body of a "sparse" mask ({"window": ...}) or the whole spec ({"sparse": {...}}).
SparsePattern sparse_pattern(const std::string& text, const std::vector<std::uint64_t>& lengths) {
    const std::size_t longest = *std::max_element(lengths.begin(), lengths.end());
    const bool whole = text.find("\"sparse\"") != std::string::npos;
    const auto masks = parse_mask_option(whole ? text : "{\"sparse\": " + text + "}", longest, longest, "⟦sparse⟧");
    if (masks.size() != 1 || masks[0].kind != MaskSpec::Kind::sparse)
        throw InputError("⟦sparse⟧: expected one sparse pattern such as {\"window\": 3, \"global\": [0]}");
    return masks[0].sparse;
}

// ⟦mla⟧ 512,64 -> d_c 512, d_r 64 (d_r 0 when left out).
std::pair<std::uint64_t, std::uint64_t> mla_widths(const std::string& text) {
    std::uint64_t d_c = 0, d_r = 0;
    char comma = 0;
    std::istringstream in(text);
    const bool read = static_cast<bool>(in >> d_c) && (in.eof() || (in >> comma && comma == ',' && in >> d_r && in.eof()));
    if (!read || text.find('-') != std::string::npos)
        throw InputError(fmt::format("⟦mla⟧ {}: expected D_C or D_C,D_R (the latent width and the RoPE key width), e.g. 512,64", text));
    return {d_c, d_r};
}

CostResult model_cost(const CostRequest& r, const std::vector<std::uint64_t>& lengths) {
    // The model states what these would say; n and bytes stay free.
    for (const auto& [setting, given] : {std::pair{"d_model", r.d_model.has_value()}, {"heads", r.heads.has_value()},
                                         {"kv_heads", r.kv_heads.has_value()}, {"layers", r.layers.has_value()}})
        if (given) throw InputError(fmt::format("⟦{}⟧ excludes ⟦model⟧", setting));
    if (!r.sparse.empty() || !r.mla.empty() || lengths.size() > 1)
        throw InputError("⟦model⟧ counts one model's KV cache at one ⟦n⟧: leave out ⟦sparse⟧, ⟦mla⟧ and further ⟦n⟧ values");
    ModelCacheFacts facts = read_model_cache(r.model);
    if (r.bytes) facts.bytes_per_number = *r.bytes;
    const std::uint64_t tokens = r.tokens ? whole_number("tokens", *r.tokens) : lengths.front();
    return ModelCostAnswer{compute_model_cost(facts, lengths.front(), tokens), r.model};
}

}  // namespace

CostResult cost_command(const CostRequest& r) {
    if (r.n.empty()) throw InputError("cost needs ⟦n⟧");
    std::vector<std::uint64_t> lengths;
    for (long long n : r.n) lengths.push_back(whole_number("n", n));
    if (!r.model.empty()) return model_cost(r, lengths);
    if (!r.d_model) throw InputError("cost needs ⟦d_model⟧ (or ⟦model⟧ DIR)");
    CostQuestion q;
    q.n = lengths.front();
    q.d_model = whole_number("d_model", *r.d_model);
    q.heads = whole_number("heads", r.heads.value_or(1));
    if (r.kv_heads) q.kv_heads = whole_number("kv_heads", *r.kv_heads);
    q.layers = whole_number("layers", r.layers.value_or(1));
    if (r.tokens) q.tokens = whole_number("tokens", *r.tokens);
    q.bytes = r.bytes.value_or(4);
    if (!r.sparse.empty() && !r.mla.empty()) throw InputError("⟦sparse⟧ and ⟦mla⟧ answer different questions: give one of them");
    if (lengths.size() > 1 && r.sparse.empty()) throw InputError("several ⟦n⟧ values go with ⟦sparse⟧ (to show the growth); give one otherwise");
    // ⟦sparse⟧ counts one layer's scores and ⟦mla⟧ the cache per token: neither has a cache total to size.
    if (r.tokens && (!r.sparse.empty() || !r.mla.empty()))
        throw InputError(fmt::format("⟦tokens⟧ sizes the KV cache's total, which {} does not print: leave out ⟦tokens⟧",
                                     r.sparse.empty() ? "⟦mla⟧ (per token)" : "⟦sparse⟧"));
    if (r.layers && !r.sparse.empty()) throw InputError("⟦sparse⟧ counts the scores of one layer: leave out ⟦layers⟧");
    if (!r.sparse.empty()) return compute_sparse_cost(q, sparse_pattern(r.sparse, lengths), lengths);
    if (!r.mla.empty()) {
        const auto [d_c, d_r] = mla_widths(r.mla);
        return compare_kv_caches(q, d_c, d_r);
    }
    return compute_cost(q);
}

std::string render_cost(const CostResult& result, Format format) {
    const bool json = format == Format::json;
    struct Render {
        bool json;
        std::string operator()(const CostAnswer& a) const { return json ? cost_json(a) : cost_text(a); }
        std::string operator()(const SparseCost& c) const { return json ? sparse_cost_json(c) : sparse_cost_text(c); }
        std::string operator()(const CacheComparison& c) const { return json ? cache_comparison_json(c) : cache_comparison_text(c); }
        std::string operator()(const ModelCostAnswer& m) const { return json ? model_cost_json(m.cost, m.directory) : model_cost_text(m.cost, m.directory); }
    };
    return std::visit(Render{json}, result);
}

}  // namespace attn_trace
