// The settings that shape the scores and the weights: scale, empty_rows, lengths,
// softcap, dropout, ALiBi, the masks, RoPE and the positions it turns by.
#include "problem_loader.hpp"

#include <cmath>
#include <cstdint>
#include <algorithm>

#include <fmt/ranges.h>

#include <fmt/format.h>

#include "mask_reader.hpp"

namespace attn_trace {

using nlohmann::json;

// ALiBi's slopes as the paper's code and BLOOM compute them
// (docs/PROBLEM.md#alibi): with P the largest power of 2 ≤ H, heads 1…P take
// 2^(−8i/P) and the other H − P take every other slope of 2P heads, 2^(−4(2i − 1)/P).
std::vector<double> alibi_slopes(int heads) {
    int power = 1;
    while (power * 2 <= heads) power *= 2;
    std::vector<double> slopes;
    for (int i = 1; i <= power; ++i) slopes.push_back(std::exp2(-8.0 * i / power));
    for (int i = 1; i <= heads - power; ++i) slopes.push_back(std::exp2(-4.0 * (2 * i - 1) / power));
    return slopes;
}

void ProblemLoader::read_options() {
    auto& p = problem_;
    if (has("scale")) {
        const auto& s = at("scale");
        if (s.is_string()) p.scale = parse_scale(s.get<std::string>(), reader_.file() + ": $.scale");
        else {
            const double value = reader_.number(s, "$.scale");
            need(std::isfinite(value), "$.scale", fmt::format("expected a finite number, \"auto\" or \"none\", found {}", s.dump()));
            p.scale = {Scale::Kind::value, value};
        }
    }
    if (has("dtype")) p.dtype = parse_dtype(reader_.string(at("dtype"), "$.dtype"), reader_.file() + ": $.dtype");
    if (has("empty_rows")) p.empty_rows = parse_empty_rows(reader_.string(at("empty_rows"), "$.empty_rows"), reader_.file() + ": $.empty_rows");
    if (has("lengths")) {
        const auto& value = at("lengths");
        need(value.is_array(), "$.lengths", "expected one length per sequence, found " + describe_json(value));
        need(value.size() == p.batch, "$.lengths", fmt::format("the batch has {} sequence{} so lengths needs {} values, found {}", p.batch, p.batch == 1 ? "" : "s", p.batch, value.size()));
        for (std::size_t b = 0; b < value.size(); ++b)
            p.lengths.push_back(static_cast<std::size_t>(reader_.whole_number(value[b], fmt::format("$.lengths[{}]", b), 0, static_cast<long>(p.m))));
    }
    if (has("softcap")) {
        const double cap = reader_.number(at("softcap"), "$.softcap");
        need(std::isfinite(cap) && cap > 0, "$.softcap", fmt::format("expected a number > 0, found {}", at("softcap").dump()));
        p.softcap = cap;
    }
    if (has("dropout")) read_dropout(at("dropout"));
    if (has("alibi")) {
        const auto& value = at("alibi");
        if (value.is_boolean()) {
            if (value.get<bool>()) {
                p.alibi_slopes = alibi_slopes(p.heads);
            }
        } else {
            auto slopes = reader_.vector(value, "$.alibi");
            need(slopes.size() == static_cast<std::size_t>(p.heads), "$.alibi",
                 fmt::format("expected true, false or one slope per head ({}), found {} slopes", p.heads, slopes.size()));
            p.alibi_slopes = slopes;
        }
    }
}

// {"type": "yarn", "factor": 4, "original_max_position_embeddings": 4096, …}: transformers' names.
RopeScaling ProblemLoader::read_rope_scaling(const json& value) {
    const std::string at = "$.rope.scaling";
    need(value.is_object(), at, "expected {\"type\": \"linear\", \"factor\": 2} (types linear, dynamic, yarn, llama3), found " + describe_json(value));
    static const std::vector<std::string> types = {"default", "linear", "dynamic", "yarn", "llama3"};
    need(value.contains("type"), at, "needs \"type\": one of default, linear, dynamic, yarn, llama3");
    const std::string type = reader_.string(value["type"], at + ".type");
    const auto found = std::find(types.begin(), types.end(), type);
    if (found == types.end()) reader_.fail(at + ".type", "unknown scaling \"" + type + "\"" + did_you_mean(type, types) + ": expected one of default, linear, dynamic, yarn, llama3");
    RopeScaling s;
    s.type = static_cast<RopeScaling::Type>(found - types.begin());
    // The keys each type reads; any other is a mistake worth naming.
    std::vector<std::string> keys = {"type"};
    if (s.type != RopeScaling::Type::none) keys.push_back("factor");
    if (s.type == RopeScaling::Type::dynamic || s.type == RopeScaling::Type::yarn || s.type == RopeScaling::Type::llama3)
        keys.push_back("original_max_position_embeddings");
    if (s.type == RopeScaling::Type::llama3) keys.insert(keys.end(), {"low_freq_factor", "high_freq_factor"});
    if (s.type == RopeScaling::Type::yarn) keys.insert(keys.end(), {"beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim"});
    for (const auto& [key, item] : value.items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end())
            reader_.fail(at + "." + key, fmt::format("not a parameter of {} scaling{}: it reads {}", type, did_you_mean(key, keys), fmt::join(keys, ", ")));
    const auto positive = [&](const char* key, double& into) {
        if (!value.contains(key)) return false;
        into = reader_.number(value[key], at + "." + key);
        need(into > 0 && std::isfinite(into), at + "." + key, fmt::format("expected a number > 0, found {}", value[key].dump()));
        return true;
    };
    if (s.type != RopeScaling::Type::none) need(positive("factor", s.factor), at, type + " scaling needs \"factor\"");
    if (keys.size() > 2)
        need(positive("original_max_position_embeddings", s.original_max_positions), at, type + " scaling needs \"original_max_position_embeddings\": the context the model was trained on");
    positive("low_freq_factor", s.low_freq_factor);
    positive("high_freq_factor", s.high_freq_factor);
    positive("beta_fast", s.beta_fast);
    positive("beta_slow", s.beta_slow);
    double number = 0;
    if (positive("attention_factor", number)) s.attention_factor = number;
    for (auto [key, into] : {std::pair{"mscale", &s.mscale}, {"mscale_all_dim", &s.mscale_all_dim}}) {
        if (!value.contains(key)) continue;  // 0 is allowed: the library then ignores the pair
        *into = reader_.number(value[key], at + "." + key);
        need(**into >= 0 && std::isfinite(**into), at + "." + key, fmt::format("expected a number ≥ 0, found {}", value[key].dump()));
    }
    return s;
}

// {"over": "head", "q_weight": […], "k_weight": […], "eps": 1e-6, "weight_offset": 0}
void ProblemLoader::read_qk_norm() {
    if (!has("qk_norm")) return;
    const std::string at_ = "$.qk_norm";
    const auto& value = at("qk_norm");
    auto& p = problem_;
    need(value.is_object(), at_, "expected {\"over\": \"head\", \"q_weight\": [...], \"k_weight\": [...], \"eps\": 1e-6}, found " + describe_json(value));
    static const std::vector<std::string> keys = {"over", "q_weight", "k_weight", "eps", "weight_offset"};
    for (const auto& [key, item] : value.items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end())
            reader_.fail(at_ + "." + key, "unknown key" + did_you_mean(key, keys) + ": qk_norm has over, q_weight, k_weight, eps and weight_offset");
    need(!p.mla, at_, "MLA normalises its latents, not its heads: qk_norm is for plain heads");
    need(p.from_tokens(), at_, "qk_norm normalises the projections X W_Q and X W_K: give X and the weights");
    QkNorm norm;
    if (value.contains("over")) {
        const std::string over = reader_.string(value["over"], at_ + ".over");
        need(over == "head" || over == "all", at_ + ".over", "expected \"head\" (each head's d_k columns) or \"all\" (the whole projection), found \"" + over + "\"");
        norm.per_head = over == "head";
    }
    for (const char* key : {"q_weight", "k_weight"}) need(value.contains(key), at_, fmt::format("needs \"{}\": the norm's weight", key));
    norm.q_weight = reader_.vector(value["q_weight"], at_ + ".q_weight");
    norm.k_weight = reader_.vector(value["k_weight"], at_ + ".k_weight");
    const std::size_t q_width = norm.per_head ? p.d_k : static_cast<std::size_t>(p.heads) * p.d_k;
    const std::size_t k_width = norm.per_head ? p.d_k : static_cast<std::size_t>(p.kv_heads) * p.d_k;
    need(norm.q_weight.size() == q_width, at_ + ".q_weight", fmt::format("expected {} values ({}), found {}", q_width, norm.per_head ? "d_k" : "H·d_k", norm.q_weight.size()));
    need(norm.k_weight.size() == k_width, at_ + ".k_weight", fmt::format("expected {} values ({}), found {}", k_width, norm.per_head ? "d_k" : "H_kv·d_k", norm.k_weight.size()));
    if (value.contains("eps")) {
        norm.eps = reader_.number(value["eps"], at_ + ".eps");
        need(norm.eps > 0 && std::isfinite(norm.eps), at_ + ".eps", fmt::format("expected a number > 0, found {}", value["eps"].dump()));
    }
    if (value.contains("weight_offset")) {
        norm.weight_offset = reader_.number(value["weight_offset"], at_ + ".weight_offset");
        need(norm.weight_offset == 0 || norm.weight_offset == 1, at_ + ".weight_offset", "expected 0 (w) or 1 (1 + w, Gemma's form), found " + value["weight_offset"].dump());
    }
    p.qk_norm = norm;
}

// {"p": 0.1, "seed": 3, "mode": "train"}
void ProblemLoader::read_dropout(const json& value) {
    need(value.is_object(), "$.dropout", "expected {\"p\": 0.1, \"seed\": 3, \"mode\": \"train\"}, found " + describe_json(value));
    for (const auto& [key, item] : value.items())
        if (key != "p" && key != "seed" && key != "mode") reader_.fail("$.dropout." + key, "unknown key: dropout has \"p\", \"seed\" and \"mode\"");
    need(value.contains("p"), "$.dropout", "needs \"p\": the probability of dropping a weight");
    Dropout dropout;
    dropout.p = reader_.number(value["p"], "$.dropout.p");
    need(dropout.p >= 0 && dropout.p < 1, "$.dropout.p",
         fmt::format("expected 0 ≤ p < 1 (p = 1 would drop every weight and divide by 0), found {}", value["p"].dump()));
    if (value.contains("seed")) dropout.seed = static_cast<std::uint64_t>(reader_.whole_number(value["seed"], "$.dropout.seed", 0, 1L << 53));
    if (value.contains("mode")) {
        const auto mode = reader_.string(value["mode"], "$.dropout.mode");
        need(mode == "train" || mode == "eval", "$.dropout.mode", "expected \"train\" or \"eval\", found \"" + mode + "\"");
        dropout.train = mode == "train";
    }
    problem_.dropout = dropout;
}

void ProblemLoader::read_masks() {
    // A top-level sparse pattern is one more mask: it combines with `mask` by adding, and the
    // record of the masks (recorded_mask_spec) lists it first as {"sparse": …}.
    if (has("sparse")) {
        problem_.masks.push_back(read_sparse_spec(at("sparse"), "$.sparse", reader_, problem_.n, problem_.m));
        problem_.masks.back().given = nlohmann::json{{"sparse", at("sparse")}}.dump();
    }
    if (has("mask")) {
        const auto& value = at("mask");
        if (value.is_array() && !value.empty() && (value[0].is_string() || value[0].is_object())) {
            for (std::size_t i = 0; i < value.size(); ++i)
                problem_.masks.push_back(read_mask_spec(value[i], fmt::format("$.mask[{}]", i), reader_, problem_.n, problem_.m));
        } else {
            problem_.masks.push_back(read_mask_spec(value, "$.mask", reader_, problem_.n, problem_.m));
        }
    }
}

void ProblemLoader::read_position_features() {
    auto& p = problem_;
    if (has("rope")) {
        const auto& value = at("rope");
        need(value.is_object(), "$.rope", "expected {\"base\": 10000} or {\"angles_deg\": [...]}, found " + describe_json(value));
        Rope rope;
        static const std::vector<std::string> keys = {"base", "angles_deg", "style", "rotary_dims", "scaling"};
        for (const auto& [key, item] : value.items())
            if (std::find(keys.begin(), keys.end(), key) == keys.end())
                reader_.fail("$.rope." + key, "unknown key" + did_you_mean(key, keys) + ": rope has \"base\", \"angles_deg\", \"style\", \"rotary_dims\" and \"scaling\"");
        // With MLA, RoPE turns the decoupled part (rope_dims wide) only.
        if (p.mla) need(p.mla->d_r > 0, "$.rope", "with mla, RoPE turns the decoupled part only: give mla.rope_dims, W_QR and W_KR");
        std::size_t d = p.mla ? p.mla->d_r : p.d_k;
        const char* d_name = p.mla ? "rope_dims" : "d_k";
        if (value.contains("rotary_dims")) {
            need(!p.mla, "$.rope.rotary_dims", "with mla, RoPE turns mla.rope_dims columns: rotary_dims is for plain heads");
            rope.rotary_dims = static_cast<std::size_t>(reader_.whole_number(value["rotary_dims"], "$.rope.rotary_dims", 2, static_cast<long>(d)));
            d = rope.rotary_dims;
            d_name = "rotary_dims";
        }
        need(d % 2 == 0, "$.rope", fmt::format("RoPE rotates pairs, so {} must be even, found {}", d_name, d));
        rope.rotary_dims = d;
        if (value.contains("scaling")) rope.scaling = read_rope_scaling(value["scaling"]);
        if (value.contains("base")) {
            rope.base = reader_.number(value["base"], "$.rope.base");
            need(rope.base > 0 && std::isfinite(rope.base), "$.rope.base", "expected a number > 0");
        }
        if (value.contains("angles_deg")) {
            need(!value.contains("base"), "$.rope", "give either base or angles_deg, not both");
            rope.angles_deg = reader_.vector(value["angles_deg"], "$.rope.angles_deg");
            need(rope.angles_deg.size() == d / 2, "$.rope.angles_deg",
                 fmt::format("{} = {} has {} pairs so angles_deg needs {} angles, found {}", d_name, d, d / 2, d / 2, rope.angles_deg.size()));
        }
        if (value.contains("style")) {
            const auto style = reader_.string(value["style"], "$.rope.style");
            need(style == "interleaved" || style == "half", "$.rope.style", "expected \"interleaved\" or \"half\", found \"" + style + "\"");
            rope.style = style == "half" ? Rope::Style::half : Rope::Style::interleaved;
        }
        if (p.mla) p.mla->rope = rope;
        else p.rope = rope;
    }
    const bool turns = p.rope.has_value() || (p.mla && p.mla->d_r > 0);
    auto read_positions = [&](const char* key, std::vector<double>& into, std::size_t count, const char* what) {
        if (!has(key)) return;
        need(turns, path_of(key), "positions are used by RoPE only: add \"rope\"");
        into = reader_.vector(at(key), path_of(key));
        need(into.size() == count, path_of(key), fmt::format("there are {} {} so {} needs {} values, found {}", count, what, key, count, into.size()));
    };
    read_positions("positions", p.positions, p.n, "queries");
    read_positions("source_positions", p.source_positions, p.m, "keys");
    Rope* rope = p.mla ? (p.mla->d_r ? &p.mla->rope : nullptr) : (p.rope ? &*p.rope : nullptr);
    if (!rope) return;
    // The length dynamic scaling reads: the largest position + 1 (by default the queries
    // are the last n of max(n, m) positions).
    double seq_len = static_cast<double>(std::max(p.n, p.m));
    if (!p.positions.empty()) seq_len = *std::max_element(p.positions.begin(), p.positions.end()) + 1.0;
    if (!p.source_positions.empty()) seq_len = std::max(seq_len, *std::max_element(p.source_positions.begin(), p.source_positions.end()) + 1.0);
    if (rope->rotary_dims == 0) rope->rotary_dims = p.mla ? p.mla->d_r : p.d_k;
    resolve_rope(*rope, rope->rotary_dims, seq_len, reader_.file() + ": $.rope.scaling");
}

}  // namespace attn_trace
