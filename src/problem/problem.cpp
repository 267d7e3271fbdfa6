// The problem layer's public entry points: a problem file or text read through the
// loader (problem_loader.cpp and its parts), masks re-checked once options replace them,
// and the settings' words (a mask, empty_rows, scale) parsed.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "json/json_reader.hpp"
#include "json/json_text.hpp"
#include "array_source.hpp"
#include "checkpoint_reader.hpp"
#include "mask_reader.hpp"
#include "model_reader.hpp"
#include "problem_loader.hpp"

namespace attn_trace {

using nlohmann::json;

double Problem::scale_factor() const {
    switch (scale.kind) {
        case Scale::Kind::automatic: return 1.0 / std::sqrt(static_cast<double>(d_k));
        case Scale::Kind::none: return 1.0;
        case Scale::Kind::value: return scale.value;
    }
    return 1.0;
}

ModelInMemory hold_model(std::string name, std::string config, std::string safetensors) {
    const std::string label = name + " (in memory)/model.safetensors";
    return ModelInMemory{std::move(name), std::move(config), std::make_shared<const SafetensorsFile>(SafetensorsFile::parse(std::move(safetensors), label))};
}

Problem parse_problem(const std::string& text, const std::string& file_label, bool allow_nonfinite, const ModelInMemory* held) {
    json root = parse_json_text(text, file_label);
    ArraySource arrays(file_label);  // .npy and safetensors files, relative to the problem file
    if (held) arrays.hold(*held);
    const std::string model = expand_checkpoint(root, arrays, JsonReader(file_label));
    Problem problem = ProblemLoader(root, file_label, allow_nonfinite, arrays).load();
    if (!model.empty()) {
        auto summary = nlohmann::ordered_json::parse(model);
        if (problem.rope) summary["rope"]["attention_factor"] = problem.rope->attention_factor;  // resolved with the positions
        ModelCacheFacts cache{summary["model_type"].get<std::string>(), 0, {}};
        for (const auto& layer : summary["cache_layers"]) {
            ModelLayerCache held{layer["layer_type"].get<std::string>(), std::nullopt, summary["kv_numbers_per_token"].get<std::uint64_t>(), 0};
            if (layer["sliding_window"].is_number()) held.window = layer["sliding_window"].get<std::uint64_t>();
            cache.layers.push_back(held);
        }
        const auto own = summary["model_masks"].get<std::size_t>();
        summary.erase("cache_layers");  // problem.model says what this layer resolved
        summary.erase("model_masks");
        problem.model = summary.dump();
        problem.checkpoint_dtype = stored_dtype(summary["dtype"].get<std::string>());
        cache.bytes_per_number = dtype_bytes(problem.checkpoint_dtype.value_or(Dtype::f32));
        problem.model_cache = cache;
        // The model reader put its own masks first: causal, and the layer's window.
        for (std::size_t i = 0; i < own && i < problem.masks.size(); ++i) problem.masks[i].origin = MaskOrigin::model;
    }
    return problem;
}

Problem load_problem(const std::string& path, bool allow_nonfinite) {
    if (path == "-") {
        const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        return parse_problem(text, "<stdin>", allow_nonfinite);
    }
    // An ifstream opens a folder on Linux and reads nothing: "malformed JSON at line 1" would mislead.
    std::error_code ignored;
    if (std::filesystem::is_directory(path, ignored))
        throw InputError(fmt::format("{}: is a folder, not a problem file (a model directory is read through a problem file's \"checkpoint\": {{\"model\": …}})", path));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open the problem file (does it exist and is it readable?)", path));
    std::ostringstream text;
    text << in.rdbuf();
    return parse_problem(text.str(), path, allow_nonfinite);
}

void validate_masks(const Problem& problem) {
    for (std::size_t i = 0; i < problem.masks.size(); ++i) {
        const auto& spec = problem.masks[i];
        const std::string path = !spec.path.empty() ? spec.path : problem.masks.size() == 1 ? "$.mask" : fmt::format("$.mask[{}]", i);
        if (spec.needs_shape() && (spec.matrix.rows() != problem.n || spec.matrix.cols() != problem.m))
            throw JsonPathError(problem.file, path, mask_shape_error(problem.n, problem.m, spec.label, spec.matrix.rows(), spec.matrix.cols()));
        if (spec.kind == MaskSpec::Kind::key_valid && spec.key_valid.size() != problem.m)
            throw JsonPathError(problem.file, path,
                                fmt::format("there are {} keys so the padding mask needs {} values, found {}", problem.m, problem.m, spec.key_valid.size()));
    }
}

std::string empty_rows_name(EmptyRows policy) {
    switch (policy) {
        case EmptyRows::error: return "error";
        case EmptyRows::zero: return "zero";
        case EmptyRows::nan: return "nan";
    }
    return "error";
}

namespace {
bool is_json_text(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\n");
    return first != std::string::npos && (text[first] == '{' || text[first] == '[');
}
}  // namespace

std::string recorded_mask_spec(const Problem& problem) {
    if (problem.masks.empty()) return "";
    json given = json::array();
    for (const MaskSpec& spec : problem.masks) given.push_back(spec.given.empty() ? json(spec.label) : json::parse(spec.given));
    return (given.size() == 1 ? given[0] : given).dump();
}

void replace_masks(Problem& problem, std::vector<MaskSpec> masks, MaskOrigin origin) {
    std::erase_if(problem.masks, [](const MaskSpec& spec) { return spec.origin != MaskOrigin::model; });
    for (MaskSpec& spec : masks) {
        spec.origin = origin;
        problem.masks.push_back(std::move(spec));
    }
}

std::vector<MaskSpec> parse_mask_option(const std::string& text, std::size_t n, std::size_t m, const std::string& where) {
    std::vector<MaskSpec> masks;
    if (!is_json_text(text)) {
        if (text != "none") masks.push_back(parse_mask_string(text, where));
        return masks;
    }
    const json value = parse_json_text(text, where);
    const JsonReader reader(where);
    if (value.is_array())
        for (std::size_t i = 0; i < value.size(); ++i) masks.push_back(read_mask_spec(value[i], fmt::format("$[{}]", i), reader, n, m));
    else
        masks.push_back(read_mask_spec(value, "$", reader, n, m));
    return masks;
}

std::vector<MaskSpec> masks_from_spec(const std::string& mask_spec, std::size_t n, std::size_t m, const std::string& where) {
    if (mask_spec.empty()) return {};
    const json value = parse_json_text(mask_spec, where);
    return parse_mask_option(value.is_string() ? value.get<std::string>() : mask_spec, n, m, where);
}

EmptyRows parse_empty_rows(const std::string& text, const std::string& where) {
    if (text == "error") return EmptyRows::error;
    if (text == "zero") return EmptyRows::zero;
    if (text == "nan") return EmptyRows::nan;
    throw InputError(fmt::format("{}: expected \"error\", \"zero\" or \"nan\", found \"{}\"", where, text));
}

Scale parse_scale(const std::string& text, const std::string& where) {
    if (text == "auto") return {};
    if (text == "none") return {Scale::Kind::none, 1.0};
    try {
        std::size_t used = 0;
        const double value = std::stod(text, &used);
        if (used == text.size() && std::isfinite(value)) return {Scale::Kind::value, value};
    } catch (const std::exception&) {
    }
    throw InputError(fmt::format("{}: expected \"auto\", \"none\" or a finite number, found \"{}\"", where, text));
}

}  // namespace attn_trace
