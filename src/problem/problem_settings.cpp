// The settings that shape the scores and the weights: scale, empty_rows, lengths,
// softcap, dropout, ALiBi, the masks, RoPE and the positions it turns by.
#include "problem_loader.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "mask_reader.hpp"

namespace attn_trace {

using nlohmann::json;

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
                // The standard slopes of Press et al.: 2^(-8(h+1)/H).
                std::vector<double> slopes;
                for (int h = 0; h < p.heads; ++h) slopes.push_back(std::exp2(-8.0 * (h + 1) / p.heads));
                p.alibi_slopes = slopes;
            }
        } else {
            auto slopes = reader_.vector(value, "$.alibi");
            need(slopes.size() == static_cast<std::size_t>(p.heads), "$.alibi",
                 fmt::format("expected true, false or one slope per head ({}), found {} slopes", p.heads, slopes.size()));
            p.alibi_slopes = slopes;
        }
    }
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
    // A top-level sparse pattern is one more mask: it combines with `mask` by adding.
    // mask_spec records both as one list --mask reads back: [{"sparse": …}, the masks…].
    nlohmann::json given = nlohmann::json::array();
    if (has("sparse")) {
        problem_.masks.push_back(read_sparse_spec(at("sparse"), "$.sparse", reader_, problem_.n, problem_.m));
        given.push_back({{"sparse", at("sparse")}});
    }
    if (has("mask")) {
        const auto& value = at("mask");
        if (value.is_array() && !value.empty() && (value[0].is_string() || value[0].is_object())) {
            for (std::size_t i = 0; i < value.size(); ++i) {
                problem_.masks.push_back(read_mask_spec(value[i], fmt::format("$.mask[{}]", i), reader_, problem_.n, problem_.m));
                given.push_back(value[i]);
            }
        } else {
            problem_.masks.push_back(read_mask_spec(value, "$.mask", reader_, problem_.n, problem_.m));
            given.push_back(value);
        }
    }
    if (!given.empty()) problem_.mask_spec = (given.size() == 1 ? given[0] : given).dump();
}

void ProblemLoader::read_position_features() {
    auto& p = problem_;
    if (has("rope")) {
        const auto& value = at("rope");
        need(value.is_object(), "$.rope", "expected {\"base\": 10000} or {\"angles_deg\": [...]}, found " + describe_json(value));
        Rope rope;
        for (const auto& [key, item] : value.items())
            if (key != "base" && key != "angles_deg" && key != "style")
                reader_.fail("$.rope." + key, "unknown key: rope has \"base\", \"angles_deg\" and \"style\"");
        // With MLA, RoPE turns the decoupled part (rope_dims wide) only.
        if (p.mla) need(p.mla->d_r > 0, "$.rope", "with mla, RoPE turns the decoupled part only: give mla.rope_dims, W_QR and W_KR");
        const std::size_t d = p.mla ? p.mla->d_r : p.d_k;
        const char* d_name = p.mla ? "rope_dims" : "d_k";
        need(d % 2 == 0, "$.rope", fmt::format("RoPE rotates pairs, so d_k must be even, found {}", d));
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
}

}  // namespace attn_trace
