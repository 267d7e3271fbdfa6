#include "checkpoint_reader.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/errors.hpp"
#include "model_reader.hpp"

namespace attn_trace {

namespace {

using json = nlohmann::json;

// Where one of W_Q … b_O comes from: a tensor, a slice of it, and whether to transpose.
struct Source {
    const char* key;
    std::string tensor;
    int part = -1;           // gpt2 and torch-mha pack Q | K | V in one tensor: which third
    bool transpose = false;  // torch orientation (out, in) → the problem's (in, out)
    bool optional = false;   // llama's biases exist only in some models
};

struct Family {
    std::vector<std::string> prefixes;  // tried in order: the first under which the layer exists
    std::vector<Source> (*sources)(const std::string& layer);
};

std::vector<Source> gpt2(const std::string& l) {
    // GPT-2's Conv1D keeps weights as (in, out): already the problem's orientation; Q | K | V side by side.
    const std::string a = "h." + l + ".attn.";
    return {{"W_Q", a + "c_attn.weight", 0}, {"W_K", a + "c_attn.weight", 1}, {"W_V", a + "c_attn.weight", 2},
            {"b_Q", a + "c_attn.bias", 0},   {"b_K", a + "c_attn.bias", 1},   {"b_V", a + "c_attn.bias", 2},
            {"W_O", a + "c_proj.weight"},    {"b_O", a + "c_proj.bias"}};
}

std::vector<Source> llama(const std::string& l) {
    const std::string a = "model.layers." + l + ".self_attn.";
    std::vector<Source> out;
    for (const auto& [w, b, name] : {std::tuple{"W_Q", "b_Q", "q_proj"}, {"W_K", "b_K", "k_proj"}, {"W_V", "b_V", "v_proj"}, {"W_O", "b_O", "o_proj"}}) {
        out.push_back({w, a + name + ".weight", -1, true});
        out.push_back({b, a + name + ".bias", -1, false, true});
    }
    return out;
}

std::vector<Source> bert(const std::string& l) {
    const std::string a = "encoder.layer." + l + ".attention.";
    return {{"W_Q", a + "self.query.weight", -1, true}, {"b_Q", a + "self.query.bias"}, {"W_K", a + "self.key.weight", -1, true},
            {"b_K", a + "self.key.bias"},           {"W_V", a + "self.value.weight", -1, true}, {"b_V", a + "self.value.bias"},
            {"W_O", a + "output.dense.weight", -1, true}, {"b_O", a + "output.dense.bias"}};
}

std::vector<Source> torch_mha(const std::string&) {
    // nn.MultiheadAttention: in_proj_weight (3d, d) is W_Q; W_K; W_V stacked by rows, in torch orientation.
    return {{"W_Q", "in_proj_weight", 0, true}, {"W_K", "in_proj_weight", 1, true}, {"W_V", "in_proj_weight", 2, true},
            {"b_Q", "in_proj_bias", 0},         {"b_K", "in_proj_bias", 1},         {"b_V", "in_proj_bias", 2},
            {"W_O", "out_proj.weight", -1, true}, {"b_O", "out_proj.bias"}};
}

const std::vector<std::pair<std::string, Family>>& families() {
    static const std::vector<std::pair<std::string, Family>> all = {
        {"gpt2", {{"transformer.", ""}, gpt2}}, {"llama", {{""}, llama}}, {"bert", {{"bert.", ""}, bert}}, {"torch-mha", {{""}, torch_mha}}};
    return all;
}

}  // namespace

std::string expand_checkpoint(json& root, ArraySource& arrays, const JsonReader& reader) {
    if (!root.is_object() || !root.contains("checkpoint")) return "";
    const std::string at = "$.checkpoint";
    const json spec = root["checkpoint"];
    if (!spec.is_object()) reader.fail(at, "expected {\"model\": DIR, \"layer\": L} or {\"safetensors\": FILE, \"family\": F, \"layer\": L}, found " + describe_json(spec));
    if (spec.contains("model")) return expand_model(root, arrays, reader);
    static const std::vector<std::string> keys = {"safetensors", "family", "layer", "prefix"};
    for (const auto& [key, value] : spec.items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            const auto near = nearest_word(key, keys);
            reader.fail(at + "." + key, "unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
        }
    for (const char* key : {"safetensors", "family"})
        if (!spec.contains(key)) reader.fail(at, fmt::format("needs \"{}\"", key));
    for (const char* key : {"W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V", "W_O", "b_O", "in_proj_weight", "in_proj_bias", "out_proj.weight",
                            "out_proj.bias", "weights_layout", "Q", "K", "V", "mla"})
        if (root.contains(key)) reader.fail("$." + std::string(key), "given beside \"checkpoint\", which sets the projections");
    if (!root.contains("heads")) reader.fail(at, "needs \"heads\" at the top level (and \"kv_heads\" for GQA): checkpoints do not record them");
    if (!root.contains("X")) reader.fail(at, "needs \"X\": the layer's input hidden states, e.g. {\"npy\": \"hidden.npy\"}");

    const std::string name = reader.string(spec["family"], at + ".family");
    const auto family = std::find_if(families().begin(), families().end(), [&](const auto& f) { return f.first == name; });
    if (family == families().end()) {
        std::vector<std::string> known;  // from the table, so a new family is listed without another edit
        for (const auto& f : families()) known.push_back(f.first);
        const std::string last = known.back();
        known.pop_back();
        reader.fail(at + ".family", fmt::format("unknown family \"{}\": expected {} or {}", name, fmt::join(known, ", "), last));
    }
    const std::string layer = spec.contains("layer") ? std::to_string(reader.whole_number(spec["layer"], at + ".layer", 0, 100000)) : "0";
    const std::string file = reader.string(spec["safetensors"], at + ".safetensors");
    const SafetensorsFile* st = nullptr;
    try {
        st = &arrays.safetensors(file);
    } catch (const InputError& e) {
        reader.fail(at + ".safetensors", e.marked());
    }
    const std::vector<Source> sources = family->second.sources(layer);
    std::vector<std::string> prefixes = family->second.prefixes;
    if (spec.contains("prefix")) prefixes = {reader.string(spec["prefix"], at + ".prefix")};
    const auto found = std::find_if(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return st->find(p + sources[0].tensor); });
    const std::string prefix = found == prefixes.end() ? prefixes[0] : *found;
    for (const Source& s : sources) {
        const std::string tensor = prefix + s.tensor;
        if (!st->find(tensor)) {
            if (s.optional) continue;
            try {
                st->tensor(tensor);  // the error naming the nearest names
            } catch (const InputError& e) {
                reader.fail(at, fmt::format("{} family, layer {}: {}", name, layer, e.marked()));
            }
        }
        json ref = {{"safetensors", file}, {"tensor", tensor}};
        if (s.part >= 0) {
            // The packed tensor holds three equal parts along its output axis.
            const auto& shape = st->tensor(tensor).shape;
            if (shape.size() != 1 && shape.size() != 2)
                reader.fail(at, fmt::format("{}: {}: a packed Q, K, V tensor of {} dimensions (expected 1 or 2)", file, tensor, shape.size()));
            const bool by_rows = s.transpose;  // torch-mha stacks rows; gpt2 puts columns side by side
            const std::size_t axis = shape.size() == 1 ? 0 : by_rows ? 0 : 1;
            if (shape[axis] % 3 != 0) reader.fail(at, fmt::format("{}: {}: {} values along the packed axis do not split into Q, K and V", file, tensor, shape[axis]));
            const std::size_t third = shape[axis] / 3, first = third * static_cast<std::size_t>(s.part);
            ref[shape.size() == 1 || !by_rows ? "cols" : "rows"] = {first, first + third};
        }
        if (s.transpose) ref["transpose"] = true;
        root[s.key] = ref;
    }
    // A layer with qk-norm is not a plain llama layer: tracing it without the norm would be wrong.
    if (name == "llama" && st->find(prefix + "model.layers." + layer + ".self_attn.q_norm.weight"))
        reader.fail(at + ".family", fmt::format("{}: layer {} has q_norm and k_norm tensors (a Qwen3, OLMo 2 or Gemma 3 layer), which the llama family does not apply; "
                                                "give the model directory instead, \"checkpoint\": {{\"model\": DIR, \"layer\": {}}}, so its config.json says how",
                                                file, layer, layer));
    if (name == "llama") {  // Llama turns q and k by rotate_half: pairs (p, p + d_k/2)
        json rope = root.contains("rope") ? root["rope"] : json::object();
        if (rope.is_object() && rope.contains("style") && rope["style"] != "half")
            reader.fail("$.rope.style", "a llama checkpoint turns pairs (p, p + d_k/2): the style is \"half\"");
        if (rope.is_object()) rope["style"] = "half";
        root["rope"] = rope;
    }
    root.erase("checkpoint");
    return "";
}

}  // namespace attn_trace
