// JSON → Problem (docs/PROBLEM.md#all-keys-at-a-glance): every key read with its JSON path,
// converted to math orientation and checked against the others so the pipelines can trust
// it. Here: the order of the reading, unknown keys refused, non-finite inputs screened.
#include "problem_loader.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"
#include "attn_trace/text_width.hpp"

namespace attn_trace {

using nlohmann::json;

namespace {

const std::vector<std::string> known_keys = {
    "title", "tokens", "source_tokens", "X", "X_source", "W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V", "W_O", "b_O",
    "weights_layout", "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias", "Q", "K", "V",
    "heads", "kv_heads", "scale", "mask", "empty_rows", "lengths", "rope", "positions", "source_positions",
    "softcap", "alibi", "expect", "allow_nonfinite", "sparse", "dropout", "mla", "d_out", "checkpoint", "qk_norm", "dtype"};

// The keys whose numbers are inputs (docs/PROBLEM.md#non-finite-inputs-allow_nonfinite):
// a non-finite number in them is an error unless allowed. Masks are not among them: −∞ is
// their job.
const std::vector<std::string> input_keys = {"X", "X_source", "Q", "K", "V", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O",
                                             "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias", "d_out"};
// The keys whose numbers are parameters of a step: screened the same way, so that a "nan"
// among ALiBi's slopes is named here, not found later as an overflow "from finite inputs".
const std::vector<std::string> parameter_keys = {"alibi", "positions", "source_positions", "rope", "qk_norm", "mla"};

// The JSON path and text of the first "inf"/"-inf"/"nan" string in a nested array
// or a {"shape", "data"} object (JSON numbers themselves are always finite).
// A parameter object's members ({"angles_deg": [...]}) are searched too; an input's object
// is {"shape", "data"}, or a file or a random draw, whose numbers are checked where they are read.
std::optional<std::string> first_nonfinite_cell(const json& value, const std::string& path, bool parameter) {
    if (value.is_string()) {
        const auto text = value.get<std::string>();
        if (text == "inf" || text == "+inf" || text == "-inf" || text == "nan") return fmt::format("{} is {}", path, text);
        return std::nullopt;
    }
    if (value.is_object()) {
        if (value.contains("data")) return first_nonfinite_cell(value["data"], path + ".data", parameter);
        if (parameter)
            for (const auto& [key, member] : value.items())
                if (auto found = first_nonfinite_cell(member, path + "." + key, parameter)) return found;
        return std::nullopt;
    }
    if (!value.is_array()) return std::nullopt;
    for (std::size_t i = 0; i < value.size(); ++i)
        if (auto found = first_nonfinite_cell(value[i], fmt::format("{}[{}]", path, i), parameter)) return found;
    return std::nullopt;
}

}  // namespace

ProblemLoader::ProblemLoader(const json& root, const std::string& file, bool allow_nonfinite, ArraySource& arrays) : root_(root), reader_(file) {
    reader_.set_array_files(arrays.hooks(reader_));
    // Numbers read from .npy and safetensors files are screened as the file's own are.
    arrays.on_nonfinite([this](const std::string& where, double x) { report_nonfinite(where, std::isnan(x) ? "nan" : x < 0 ? "-inf" : "inf"); });
    problem_.file = file;
    problem_.allow_nonfinite = allow_nonfinite;
}

Problem ProblemLoader::load() {
    if (!root_.is_object()) reader_.fail("$", "expected a JSON object with the problem's keys, found " + describe_json(root_));
    check_known_keys();
    if (has("title")) problem_.title = visible_text(reader_.string(root_["title"], "$.title"));  // one line, as labels
    check_finite_inputs();
    read_heads();
    read_layout();
    check_input_keys();
    // Every shape is checked against the rest of the problem before any number is
    // made: a random V of 16384 × 16384 beside a K of 1 row is refused at once,
    // not after generating its 2 GiB.
    derive_sizes(declared_shapes());
    read_projections();
    read_direct_qkv();
    read_labels();
    read_options();
    read_qk_norm();
    read_masks();
    read_position_features();
    read_d_out();
    read_expectations();
    validate_masks(problem_);
    return std::move(problem_);
}

void ProblemLoader::check_known_keys() {
    for (const auto& [key, value] : root_.items()) {
        if (std::find(known_keys.begin(), known_keys.end(), key) != known_keys.end()) continue;
        const auto near = nearest_word(key, known_keys);
        reader_.fail(path_of(key), "unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
    }
}

// By default a NaN or infinity in an input is a mistake in the file;
// "allow_nonfinite" asks to trace how it spreads instead (the note says so;
// docs/PROBLEM.md#non-finite-inputs-allow_nonfinite).
void ProblemLoader::check_finite_inputs() {
    if (has("allow_nonfinite")) problem_.allow_nonfinite |= reader_.boolean(at("allow_nonfinite"), "$.allow_nonfinite");
    // The inputs, then the parameters (with the MLA matrices inside "mla").
    std::vector<std::tuple<const json*, std::string, bool>> screened;
    for (const auto& key : input_keys)
        if (has(key.c_str())) screened.emplace_back(&at(key.c_str()), path_of(key), false);
    for (const auto& key : parameter_keys)
        if (has(key.c_str())) screened.emplace_back(&at(key.c_str()), path_of(key), true);
    for (const auto& [value, path, parameter] : screened) {
        const auto found = first_nonfinite_cell(*value, path, parameter);
        if (!found) continue;
        const auto space = found->find(' ');
        report_nonfinite(found->substr(0, space), found->substr(found->rfind(' ') + 1));
        return;  // allowed (else report_nonfinite threw): the note names the first
    }
}

// A NaN or infinity at `where` ("$.Q[0][1]"): an error, or the note's first one when allowed.
void ProblemLoader::report_nonfinite(const std::string& where, const std::string& word) {
    if (problem_.allow_nonfinite) {
        if (problem_.first_nonfinite.empty()) problem_.first_nonfinite = where + " is " + word;
        return;
    }
    reader_.fail(where, fmt::format("{} in an input: inputs must be finite (a NaN or infinity here spreads to every step that reads it); "
                                    "to trace how it spreads, add \"allow_nonfinite\": true or pass ⟦allow_nonfinite⟧",
                                    word));
}

}  // namespace attn_trace
