#include "model_reader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "json/json_text.hpp"
#include "model_config_rules.hpp"
#include "model_layer_config.hpp"
#include "model_directory.hpp"
#include "model_families.hpp"

namespace attn_trace {

namespace {

using json = nlohmann::json;

// The problem keys a model decides: given beside it they would contradict it.
const std::vector<std::string> decided_keys = {"heads", "kv_heads", "rope", "scale", "softcap", "alibi", "weights_layout", "qk_norm", "mla",
                                               "Q", "K", "V", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O",
                                               "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias", "X_source"};

// DeepSeek-V3's attention as the problem's "mla" (docs/FAMILY.md#models-from-their-own-configuration):
// per head the query rows of q_b_proj (or q_proj) are [nope | rope], kv_a_proj_with_mqa's
// are [latent | the shared rope key], kv_b_proj's per head [k_nope | v]; both latents are
// normed with eps 1e-6 whatever rms_norm_eps says, as the model's code does.
json mla_keys(const ModelDirectory& dir, const std::string& prefix, long heads, const std::function<bool(const std::string&, bool)>& take,
              const std::function<json(const std::string&)>& weight) {
    const std::size_t H = static_cast<std::size_t>(heads);
    const std::size_t d_nope = static_cast<std::size_t>(dir.whole("qk_nope_head_dim", 1)), d_rope = static_cast<std::size_t>(dir.whole("qk_rope_head_dim", 0));
    const std::size_t d_v = static_cast<std::size_t>(dir.whole("v_head_dim", 1)), d_c = static_cast<std::size_t>(dir.whole("kv_lora_rank", 1));
    const auto per_head = [&](std::size_t stride, std::size_t first, std::size_t width) {
        json blocks = json::array();
        for (std::size_t h = 0; h < H; ++h) blocks.push_back({h * stride + first, h * stride + first + width});
        return blocks;
    };
    const auto rows = [&](const std::string& tensor, json blocks) {
        json ref = weight(tensor);
        ref["rows"] = std::move(blocks);
        return ref;
    };
    for (const char* biased : {"q_a_proj.bias", "kv_a_proj_with_mqa.bias", "q_proj.bias"})
        if (take(biased, false)) dir.fail("attention_bias", fmt::format("{}{}: biases on MLA's projections are not implemented: the layer is refused rather than traced without them", prefix, biased));
    json mla = {{"rope_dims", d_rope}};
    take("kv_a_proj_with_mqa.weight", true);
    mla["W_DKV"] = rows("kv_a_proj_with_mqa.weight", json{0, d_c});
    if (d_rope) mla["W_KR"] = rows("kv_a_proj_with_mqa.weight", json{d_c, d_c + d_rope});
    take("kv_a_layernorm.weight", true);
    mla["c_kv_norm"] = {{"weight", dir.reference(prefix + "kv_a_layernorm.weight")}, {"eps", 1e-6}};
    take("kv_b_proj.weight", true);
    mla["W_UK"] = rows("kv_b_proj.weight", per_head(d_nope + d_v, 0, d_nope));
    mla["W_UV"] = rows("kv_b_proj.weight", per_head(d_nope + d_v, d_nope, d_v));
    json query;  // W_Q beside mla when the query is not compressed
    const std::string q_tensor = dir.has("q_lora_rank") ? "q_b_proj.weight" : "q_proj.weight";
    if (dir.has("q_lora_rank")) {
        take("q_a_proj.weight", true);
        mla["W_DQ"] = weight("q_a_proj.weight");
        take("q_a_layernorm.weight", true);
        mla["c_q_norm"] = {{"weight", dir.reference(prefix + "q_a_layernorm.weight")}, {"eps", 1e-6}};
        take(q_tensor, true);
        mla["W_UQ"] = rows(q_tensor, per_head(d_nope + d_rope, 0, d_nope));
    } else {
        take(q_tensor, true);
        query = rows(q_tensor, per_head(d_nope + d_rope, 0, d_nope));
    }
    if (d_rope) mla["W_QR"] = rows(q_tensor, per_head(d_nope + d_rope, d_nope, d_rope));
    return {{"mla", mla}, {"W_Q", query}};
}

}  // namespace

std::string expand_model(json& root, ArraySource& arrays, const JsonReader& reader) {
    const std::string at = "$.checkpoint";
    const json spec = root["checkpoint"];
    for (const auto& [key, value] : spec.items())
        if (key != "model" && key != "layer")
            reader.fail(at + "." + key, fmt::format("\"{}\" goes with \"safetensors\" and \"family\"; a model directory reads \"model\" and \"layer\" only", key));
    for (const auto& key : decided_keys)
        if (root.contains(key))
            reader.fail("$." + key, fmt::format("given beside \"checkpoint\": {{\"model\": …}}, whose config.json decides it; remove \"{}\" (the model's value applies)", key));
    if (!root.contains("X")) reader.fail(at, "needs \"X\": the attention module's input hidden states, e.g. {\"npy\": \"hidden.npy\"}");
    const std::string dir_name = reader.string(spec["model"], at + ".model");
    const long layer = spec.contains("layer") ? reader.whole_number(spec["layer"], at + ".layer", 0, 1L << 20) : 0;
    const ModelDirectory dir(dir_name, arrays, reader);
    const json& c = dir.config();

    std::string model_type = dir.has("model_type") && c["model_type"].is_string() ? c["model_type"].get<std::string>() : "";
    if (model_type.empty() && dir.outer_type() == "gemma3") model_type = "gemma3_text";
    const ModelFamily* family = model_family(model_type);
    if (!family)
        dir.fail("model_type", fmt::format("\"{}\" is not a family attn-trace reads from a model directory (it reads {})", model_type, fmt::join(model_types(), ", ")));
    refuse_unimplemented(dir, *family);
    // BLOOM's config names them n_layer, n_head and n_embed; GPT-2's n_layer, n_head and n_embd.
    const auto either = [&](const char* name, std::initializer_list<const char*> older) {
        for (const char* field : older)
            if (!dir.has(name) && dir.has(field)) return dir.whole(field, 1);
        return dir.whole(name, 1);
    };
    const long layers = either("num_hidden_layers", {"n_layer"});
    if (layer >= layers) reader.fail(at + ".layer", fmt::format("the model has {} layers (0 to {}), found {}", layers, layers - 1, layer));
    const long hidden = either("hidden_size", {"n_embed", "n_embd"}), heads = either("num_attention_heads", {"n_head"});
    const long kv_heads = dir.has("num_key_value_heads") ? dir.whole("num_key_value_heads", 1) : heads;
    const long head_dim = dir.has("head_dim") ? dir.whole("head_dim", 1) : hidden / heads;
    if (heads % kv_heads) dir.fail("num_key_value_heads", fmt::format("{} query heads do not share {} KV heads evenly", heads, kv_heads));

    // The layer's prefix: the family's, bare, or below a multimodal model's language model.
    std::string prefix = family->prefix;
    prefix.replace(prefix.find("{L}"), 3, std::to_string(layer));
    const std::string bare = prefix.substr(prefix.find('.') + 1);
    const std::string first = family->layout == ModelFamily::Layout::separate ? family->separate[0] + ".weight"
                              : family->layout == ModelFamily::Layout::mla    ? "kv_a_proj_with_mqa.weight"
                                                                              : family->fused + ".weight";
    const std::vector<std::string> candidates = {prefix, bare, "language_model." + prefix, "model.language_model." + bare};
    const auto found = std::find_if(candidates.begin(), candidates.end(), [&](const std::string& p) { return dir.tensors().count(p + first) > 0; });
    if (found == candidates.end())
        reader.fail(at, fmt::format("{}: no tensor {} (nor under {}): is layer {} in this model's safetensors?", dir_name, prefix + first, fmt::join(candidates.begin() + 1, candidates.end(), ", "), layer));
    prefix = *found;

    // The tensors the family reads, and the check that nothing else sits under the prefix.
    std::vector<std::string> read;
    const auto take = [&](const std::string& name, bool required) {
        if (!dir.tensors().count(prefix + name)) {
            if (required) reader.fail(at, fmt::format("{}: the {} layer {} needs the tensor {}, which the checkpoint does not have", dir_name, model_type, layer, prefix + name));
            return false;
        }
        read.push_back(prefix + name);
        return true;
    };
    const auto weight = [&](const std::string& name) {
        json ref = dir.reference(prefix + name);
        ref["transpose"] = true;  // torch's (out, in) → the problem's (in, out)
        return ref;
    };
    const std::size_t d = static_cast<std::size_t>(head_dim), q_rows = static_cast<std::size_t>(heads) * d, kv_rows = static_cast<std::size_t>(kv_heads) * d;
    // A tensor whose shape disagrees with the config (head_dim, the head counts) would be traced
    // with the wrong head width or scale, so it is refused, naming both.
    const auto expect_shape = [&](const std::string& name, std::size_t rows, std::size_t cols, const std::string& why) {
        const auto shape = dir.shape(prefix + name);
        if (shape.size() != 2 || shape[0] != rows || shape[1] != cols)
            reader.fail(at, fmt::format("{}: {}{} has shape ({}), expected ({}, {}) from config.json: {}", dir_name, prefix, name, fmt::join(shape, ", "), rows, cols, why));
    };
    const std::string head_counts = fmt::format("{} heads of head_dim {}", heads, head_dim), kv_counts = fmt::format("{} KV heads of head_dim {}", kv_heads, head_dim);
    const char* keys[] = {"W_Q", "W_K", "W_V"};
    const char* bias_keys[] = {"b_Q", "b_K", "b_V"};
    if (family->layout == ModelFamily::Layout::mla) {
        const json parts = mla_keys(dir, prefix, heads, take, weight);
        root["mla"] = parts["mla"];
        if (!parts["W_Q"].is_null()) root["W_Q"] = parts["W_Q"];
    } else if (family->layout == ModelFamily::Layout::separate) {
        const auto& names = family->separate;
        for (std::size_t part = 0; part < 3; ++part) {
            take(std::string(names[part]) + ".weight", true);
            expect_shape(std::string(names[part]) + ".weight", part ? kv_rows : q_rows, static_cast<std::size_t>(hidden), part ? kv_counts : head_counts);
            root[keys[part]] = weight(std::string(names[part]) + ".weight");
            if (take(std::string(names[part]) + ".bias", false)) root[bias_keys[part]] = dir.reference(prefix + names[part] + ".bias");
        }
    } else if (family->layout == ModelFamily::Layout::conv1d_columns) {
        const std::string fused = family->fused + ".weight";
        take(fused, true);
        expect_shape(fused, static_cast<std::size_t>(hidden), q_rows + 2 * kv_rows, "hidden_size by q, k and v of " + head_counts);
        const bool biased = take(family->fused + ".bias", false);
        const std::size_t bounds[] = {0, q_rows, q_rows + kv_rows, q_rows + 2 * kv_rows};
        for (std::size_t part = 0; part < 3; ++part) {
            json ref = dir.reference(prefix + fused);  // (in, out): the problem's orientation already
            ref["cols"] = {bounds[part], bounds[part + 1]};
            root[keys[part]] = ref;
            if (!biased) continue;
            json bias = dir.reference(prefix + family->fused + ".bias");
            bias["cols"] = {bounds[part], bounds[part + 1]};
            root[bias_keys[part]] = bias;
        }
    } else {
        // The rows of q, k and v in the fused tensor: one block each (phi3), or one per head.
        std::vector<json> blocks(3, json::array());
        if (family->layout == ModelFamily::Layout::fused_rows) {
            const std::size_t bounds[] = {0, q_rows, q_rows + kv_rows, q_rows + 2 * kv_rows};
            for (int part = 0; part < 3; ++part) blocks[static_cast<std::size_t>(part)] = {bounds[part], bounds[part + 1]};
        } else {
            if (kv_heads != heads) dir.fail("num_key_value_heads", fmt::format("a head-by-head fused {} holds q, k and v for every head: found {} KV heads for {} heads", family->fused, kv_heads, heads));
            for (std::size_t h = 0; h < static_cast<std::size_t>(heads); ++h)
                for (std::size_t part = 0; part < 3; ++part) blocks[part].push_back({(3 * h + part) * d, (3 * h + part + 1) * d});
        }
        const std::string fused = family->fused + ".weight";
        take(fused, true);
        const auto shape = dir.shape(prefix + fused);
        if (shape.size() != 2 || shape[0] != q_rows + 2 * kv_rows || shape[1] != static_cast<std::size_t>(hidden))
            reader.fail(at, fmt::format("{}: {}{} has shape ({}), expected ({}, {}): q, k and v rows for {} heads and {} KV heads of {}", dir_name, prefix, fused,
                                        fmt::join(shape, ", "), q_rows + 2 * kv_rows, hidden, heads, kv_heads, head_dim));
        const bool biased = take(family->fused + ".bias", false);
        for (std::size_t part = 0; part < 3; ++part) {
            json ref = weight(fused);
            ref["rows"] = blocks[part];
            root[keys[part]] = ref;
            if (!biased) continue;
            json bias = dir.reference(prefix + family->fused + ".bias");
            bias["cols"] = blocks[part];
            root[bias_keys[part]] = bias;
        }
    }
    take(family->out + ".weight", true);
    const bool conv1d = family->layout == ModelFamily::Layout::conv1d_columns;
    if (family->layout != ModelFamily::Layout::mla)
        expect_shape(family->out + ".weight", conv1d ? q_rows : static_cast<std::size_t>(hidden), conv1d ? static_cast<std::size_t>(hidden) : q_rows,
                     conv1d ? head_counts + " by hidden_size" : "hidden_size by " + head_counts);
    root["W_O"] = conv1d ? dir.reference(prefix + family->out + ".weight") : weight(family->out + ".weight");
    if (take(family->out + ".bias", false)) root["b_O"] = dir.reference(prefix + family->out + ".bias");
    if (family->qk_norm != ModelFamily::QkNorm::none) {
        take("q_norm.weight", true);
        take("k_norm.weight", true);
        root["qk_norm"] = {{"over", family->qk_norm == ModelFamily::QkNorm::whole ? "all" : "head"},
                           {"q_weight", dir.reference(prefix + "q_norm.weight")},
                           {"k_weight", dir.reference(prefix + "k_norm.weight")},
                           {"eps", dir.has("rms_norm_eps") ? dir.number("rms_norm_eps") : 1e-6},
                           {"weight_offset", family->qk_norm == ModelFamily::QkNorm::per_head_plus_one ? 1 : 0}};
    }
    json ignored = json::array();
    for (const auto& [tensor, file] : dir.tensors()) {
        if (tensor.rfind(prefix, 0) != 0 || std::find(read.begin(), read.end(), tensor) != read.end()) continue;
        const std::string rest = tensor.substr(prefix.size());
        if (std::find(family->ignored.begin(), family->ignored.end(), rest) == family->ignored.end())
            reader.fail(at, fmt::format("{}: {} is under layer {}'s attention, but the {} family does not read it: attn-trace would ignore it and trace a different layer, "
                                        "so it refuses; is this checkpoint really {}?",
                                        dir_name, tensor, layer, model_type, model_type));
        ignored.push_back(tensor);
    }

    root["heads"] = heads;
    if (family->layout != ModelFamily::Layout::mla) root["kv_heads"] = kv_heads;  // MLA expands keys and values for every head
    const LayerKind kind = layer_kind(dir, *family, layer);
    std::string rope_field;
    nlohmann::ordered_json rope_summary;
    if (family->positions == ModelFamily::Positions::alibi) {
        root["alibi"] = true;  // BLOOM: the slopes of docs/PROBLEM.md#alibi, no RoPE
        rope_summary = nullptr;
    } else if (family->positions == ModelFamily::Positions::absolute) {
        rope_summary = nullptr;  // added to the embeddings before layer 0: X holds them already
    } else if (family->layout == ModelFamily::Layout::mla) {
        // RoPE turns the qk_rope_head_dim part (the config's head_dim is that part, too),
        // in adjacent pairs unless rope_interleave is false; the softmax scale is over the
        // whole query, 1/√(d_nope + d_rope), and yarn folds mscale(s, mscale_all_dim)² into it.
        const json params = rope_parameters(dir, *family, kind, rope_field);
        const auto d_rope = static_cast<std::size_t>(dir.whole("qk_rope_head_dim", 2));
        json rope = rope_of(dir, *family, params, rope_field, d_rope, rope_summary);
        rope.erase("rotary_dims");
        rope["style"] = dir.flag("rope_interleave", true) ? "interleaved" : "half";
        root["rope"] = rope;
        double scale = 1.0 / std::sqrt(static_cast<double>(dir.whole("qk_nope_head_dim", 1)) + static_cast<double>(d_rope));
        const double all_dim = params.contains("mscale_all_dim") && params["mscale_all_dim"].is_number() ? params["mscale_all_dim"].get<double>() : 0.0;
        if (rope_summary["type"] != "default" && all_dim != 0.0 && rope_summary["factor"].is_number()) {
            const double factor = rope_summary["factor"].get<double>();
            const double m = factor <= 1.0 ? 1.0 : 0.1 * all_dim * std::log(factor) + 1.0;
            scale *= m * m;
        }
        root["scale"] = scale;
    } else {
        root["rope"] = rope_of(dir, *family, rope_parameters(dir, *family, kind, rope_field), rope_field, static_cast<std::size_t>(head_dim), rope_summary);
    }
    if (family->gemma_scale) {
        root["scale"] = 1.0 / std::sqrt(dir.has("query_pre_attn_scalar") ? dir.number("query_pre_attn_scalar") : static_cast<double>(head_dim));
        // Gemma 2 caps its logits; Gemma 3's attention never reads the field (transformers 5.25).
        if (family->model_type == "gemma2" && dir.has("attn_logit_softcapping")) root["softcap"] = dir.number("attn_logit_softcapping");
    }
    if (const auto scale = config_scale(dir, *family, layer, head_dim)) root["scale"] = *scale;
    // The model's own mask, then the file's: causal (bottom-right), and the layer's window.
    json masks = json::array();
    if (config_causal(dir, *family)) masks.push_back("causal");
    if (kind.window) masks.push_back(fmt::format("window:{}", *kind.window));
    const std::size_t model_masks = masks.size();
    if (root.contains("mask")) {
        const json& given = root["mask"];
        if (given.is_array() && !given.empty() && (given[0].is_string() || given[0].is_object())) masks.insert(masks.end(), given.begin(), given.end());
        else masks.push_back(given);
    }
    if (masks.empty()) root.erase("mask");
    else root["mask"] = masks;
    root.erase("checkpoint");
    // What a cache and a parameter count need (cost --model): the keys and values per token
    // (MLA: the latent and the RoPE key), the elements of the tensors read, their dtype.
    std::uint64_t kv_numbers = 2 * static_cast<std::uint64_t>(kv_heads) * static_cast<std::uint64_t>(head_dim);
    if (family->layout == ModelFamily::Layout::mla)
        kv_numbers = static_cast<std::uint64_t>(dir.whole("kv_lora_rank", 1)) + static_cast<std::uint64_t>(dir.whole("qk_rope_head_dim", 0));
    std::uint64_t parameters = 0;
    for (const auto& tensor : read) {
        std::uint64_t count = 1;
        for (std::size_t extent : dir.shape(tensor)) count *= extent;
        parameters += count;
    }
    // Every layer's kind, for the cache of the whole model (decode counts it).
    json cache_layers = json::array();
    for (long l = 0; l < layers; ++l) {
        const LayerKind each = layer_kind(dir, *family, l);
        cache_layers.push_back({{"layer_type", each.type}, {"sliding_window", each.window ? json(*each.window) : json(nullptr)}});
    }
    const nlohmann::ordered_json summary = {{"model_type", model_type},
                                            {"layer", layer},
                                            {"num_layers", layers},
                                            {"dtype", dir.dtype(prefix + family->out + ".weight")},
                                            {"kv_numbers_per_token", kv_numbers},
                                            {"attention_parameters", parameters},
                                            {"layer_type", kind.type},
                                            {"sliding_window", kind.window ? json(*kind.window) : json(nullptr)},
                                            {"model_masks", model_masks},
                                            {"cache_layers", cache_layers},
                                            {"rope", rope_summary},
                                            {"ignored_tensors", ignored}};
    return summary.dump();
}

std::optional<Dtype> stored_dtype(const std::string& safetensors_dtype) {
    if (safetensors_dtype == "F64") return Dtype::f64;
    if (safetensors_dtype == "F32") return Dtype::f32;
    if (safetensors_dtype == "F16") return Dtype::f16;
    if (safetensors_dtype == "BF16") return Dtype::bf16;
    return std::nullopt;
}

ModelCacheFacts read_model_cache(const std::string& dir) {
    ArraySource arrays("<stdin>");  // DIR as given, relative to the working directory
    const JsonReader reader("--model " + dir);
    ModelCacheFacts facts;
    for (long layer = 0, layers = 1; layer < layers; ++layer) {
        json root = {{"checkpoint", {{"model", dir}, {"layer", layer}}}, {"X", json::array({json::array({0})})}};
        const auto summary = nlohmann::json::parse(expand_model(root, arrays, reader));
        layers = summary["num_layers"].get<long>();
        facts.model_type = summary["model_type"].get<std::string>();
        const std::string dtype = summary["dtype"].get<std::string>();
        facts.bytes_per_number = dtype_bytes(stored_dtype(dtype).value_or(Dtype::f32));
        ModelLayerCache cache;
        cache.layer_type = summary["layer_type"].get<std::string>();
        if (summary["sliding_window"].is_number()) cache.window = summary["sliding_window"].get<std::uint64_t>();
        cache.kv_numbers_per_token = summary["kv_numbers_per_token"].get<std::uint64_t>();
        cache.attention_parameters = summary["attention_parameters"].get<std::uint64_t>();
        facts.layers.push_back(cache);
    }
    return facts;
}

}  // namespace attn_trace
