#include "model_layer_config.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn_trace {

using json = nlohmann::json;

namespace {

// The rope parameters each scaling type reads (transformers' names); any other key in the
// config's rope dictionary is named rather than ignored.
const std::vector<std::string> rope_keys = {"rope_type", "type", "rope_theta", "factor", "original_max_position_embeddings", "low_freq_factor",
                                            "high_freq_factor", "beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim",
                                            "truncate", "partial_rotary_factor"};

}  // namespace

LayerKind layer_kind(const ModelDirectory& dir, const ModelFamily& family, long layer) {
    const json& c = dir.config();
    LayerKind kind;
    if (dir.has("layer_types") && family.sliding != ModelFamily::Sliding::every_layer) {  // mistral and phi3 ignore the list, as transformers does
        const json& types = c["layer_types"];
        if (!types.is_array() || static_cast<long>(types.size()) <= layer || !types[static_cast<std::size_t>(layer)].is_string())
            dir.fail("layer_types", fmt::format("expected a list naming the attention of each layer, layer {} included", layer));
        kind.type = types[static_cast<std::size_t>(layer)].get<std::string>();
    } else {
        bool sliding = false;
        switch (family.sliding) {
            case ModelFamily::Sliding::none: break;
            case ModelFamily::Sliding::every_layer: sliding = dir.has("sliding_window"); break;
            case ModelFamily::Sliding::after_max_window_layers:
                // transformers' default max_window_layers is 28
                sliding = dir.flag("use_sliding_window", false) && layer >= (dir.has("max_window_layers") ? dir.whole("max_window_layers", 0) : 28);
                break;
            case ModelFamily::Sliding::even_layers: sliding = layer % 2 == 0; break;
            case ModelFamily::Sliding::pattern: {
                // transformers 5 saves the pattern as _sliding_window_pattern
                const long pattern = dir.has("sliding_window_pattern")    ? dir.whole("sliding_window_pattern", 1)
                                     : dir.has("_sliding_window_pattern") ? dir.whole("_sliding_window_pattern", 1)
                                                                          : 6;
                sliding = (layer + 1) % pattern != 0;
                break;
            }
        }
        kind.type = sliding ? "sliding_attention" : "full_attention";
    }
    if (kind.type == "sliding_attention") {
        if (!dir.has("sliding_window")) dir.fail("sliding_window", fmt::format("layer {} is a sliding layer, but the config gives no window", layer));
        kind.window = dir.whole("sliding_window", 1);
    } else if (kind.type != "full_attention") {
        dir.fail("layer_types", fmt::format("layer {} has attention \"{}\", which attn-trace does not implement (it knows full_attention and sliding_attention)", layer, kind.type));
    }
    return kind;
}

json rope_parameters(const ModelDirectory& dir, const ModelFamily& family, const LayerKind& kind, std::string& field) {
    const json& c = dir.config();
    if (dir.has("rope_parameters")) {
        json params = c["rope_parameters"];
        field = "rope_parameters";
        if (params.is_object() && params.contains(kind.type) && params[kind.type].is_object()) {  // nested by layer type (gemma3)
            field += "." + kind.type;
            params = json(params[kind.type]);
        }
        if (!params.is_object()) dir.fail(field, "expected an object of RoPE parameters, found " + describe_json(params));
        return params;
    }
    json params = dir.has("rope_scaling") ? c["rope_scaling"] : json::object();
    field = dir.has("rope_scaling") ? "rope_scaling" : "rope_theta";
    if (!params.is_object()) dir.fail("rope_scaling", "expected an object of RoPE parameters, found " + describe_json(params));
    // GPT-NeoX's older names: rotary_emb_base, rotary_pct.
    params["rope_theta"] = dir.has("rope_theta") ? c["rope_theta"] : dir.has("rotary_emb_base") ? c["rotary_emb_base"] : json(10000.0);
    if (dir.has("rotary_pct") && !dir.has("partial_rotary_factor")) params["partial_rotary_factor"] = c["rotary_pct"];
    // Gemma 3's sliding layers turn with their own base and no scaling.
    if (family.model_type == "gemma3_text" && kind.type == "sliding_attention") {
        params = {{"rope_type", "default"}, {"rope_theta", dir.has("rope_local_base_freq") ? c["rope_local_base_freq"] : json(10000.0)}};
        field = "rope_local_base_freq";
    }
    return params;
}

json rope_of(const ModelDirectory& dir, const ModelFamily& family, const json& params, const std::string& field, std::size_t head_dim,
             nlohmann::ordered_json& summary) {
    for (const auto& [key, value] : params.items())
        if (std::find(rope_keys.begin(), rope_keys.end(), key) == rope_keys.end())
            dir.fail(field + "." + key, "a RoPE parameter attn-trace does not implement: it would change the angles, so the layer is refused rather than traced wrong");
    const auto get = [&](const char* key) { return params.contains(key) && !params[key].is_null(); };
    const auto number = [&](const char* key) {
        if (!params[key].is_number()) dir.fail(field + "." + key, "expected a number, found " + describe_json(params[key]));
        return params[key].get<double>();
    };
    std::string type = get("rope_type") ? params["rope_type"].get<std::string>() : get("type") ? params["type"].get<std::string>() : "default";
    // Phi-3's "su" and "yarn" are LongRoPE in transformers, not the yarn of the table.
    if (dir.config().value("model_type", "") == "phi3" && (type == "su" || type == "yarn")) type = "longrope (phi3's " + type + ")";
    static const std::vector<std::string> types = {"default", "linear", "dynamic", "yarn", "llama3"};
    if (std::find(types.begin(), types.end(), type) == types.end())
        dir.fail(field + ".rope_type", fmt::format("RoPE scaling \"{}\" is not implemented (attn-trace has {}): the layer is refused rather than traced wrong", type, fmt::join(types, ", ")));
    double partial = get("partial_rotary_factor") ? number("partial_rotary_factor") : dir.has("partial_rotary_factor") ? dir.number("partial_rotary_factor") : family.partial_rotary;
    if (!(partial > 0 && partial <= 1)) dir.fail("partial_rotary_factor", fmt::format("expected a fraction in (0, 1], found {}", partial));
    const auto rotary_dims = static_cast<std::size_t>(static_cast<double>(head_dim) * partial);  // as int(head_dim · factor)
    if (rotary_dims < 2 || rotary_dims % 2) dir.fail("partial_rotary_factor", fmt::format("gives {} rotary dimensions of {}: RoPE needs an even number ≥ 2", rotary_dims, head_dim));
    const double theta = get("rope_theta") ? number("rope_theta") : 10000.0;
    json rope = {{"base", theta}, {"style", "half"}, {"rotary_dims", rotary_dims}};
    json scaling = {{"type", type}};
    std::optional<double> factor;
    if (type != "default") {
        if (get("factor")) factor = number("factor");
        const double max_positions = dir.has("max_position_embeddings") ? dir.number("max_position_embeddings") : 0.0;
        double original = get("original_max_position_embeddings") ? number("original_max_position_embeddings") : max_positions;
        if (dir.has("original_max_position_embeddings") && type != "linear" && type != "dynamic") original = dir.number("original_max_position_embeddings");
        if (type == "dynamic") original = max_positions;  // transformers reads max_position_embeddings here
        if (!factor && type == "yarn" && original > 0) factor = max_positions / original;  // DeepSeek's form: the ratio
        if (!factor) dir.fail(field + ".factor", type + " scaling needs its factor");
        scaling["factor"] = *factor;
        if (type != "linear") {
            if (!(original > 0)) dir.fail(field + ".original_max_position_embeddings", type + " scaling needs the original context length");
            scaling["original_max_position_embeddings"] = original;
        }
        if (type == "llama3")
            for (const char* key : {"low_freq_factor", "high_freq_factor"}) {
                if (!get(key)) dir.fail(field + "." + key, "llama3 scaling needs it");
                scaling[key] = number(key);
            }
        if (type == "yarn") {
            if (get("truncate") && !(params["truncate"].is_boolean() && params["truncate"].get<bool>()))
                dir.fail(field + ".truncate", "yarn without truncation (truncate: false) is not implemented: the layer is refused rather than traced wrong");
            // transformers reads `beta_fast or 32`: a 0 is the default too.
            for (const char* key : {"beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim"})
                if (get(key) && !(std::string(key).rfind("beta", 0) == 0 && number(key) == 0)) scaling[key] = number(key);
        }
        rope["scaling"] = scaling;
    }
    summary = {{"theta", theta}, {"type", type}, {"factor", factor ? json(*factor) : json(nullptr)}, {"rotary_dims", rotary_dims}};
    return rope;
}

}  // namespace attn_trace
