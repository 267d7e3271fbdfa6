#include "model_directory.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "json/json_text.hpp"

namespace attn_trace {

using json = nlohmann::json;

ModelDirectory::ModelDirectory(const std::string& dir_name, ArraySource& arrays, const JsonReader& problem)
    : name_(dir_name), arrays_(arrays), problem_(problem) {
    const ModelInMemory* held = arrays.held(dir_name);
    const std::string dir = held ? dir_name + " (in memory)" : arrays.resolve(dir_name);
    config_path_ = (std::filesystem::path(dir) / "config.json").lexically_normal().string();
    if (!held && !std::filesystem::is_directory(dir))
        problem.fail("$.checkpoint.model", fmt::format("\"{}\" is not a folder: expected a model directory holding config.json and model.safetensors", dir_name));
    config_ = held ? parse_json_text(held->config, config_path_) : read_json_file(config_path_, "the model's config");
    if (!config_.is_object()) JsonReader(config_path_).fail("$", "expected the model's configuration object, found " + describe_json(config_));
    at_ = "$";
    if (config_.contains("text_config") && config_["text_config"].is_object()) {  // a multimodal config: its text part
        outer_type_ = config_.value("model_type", "");
        config_ = json(config_["text_config"]);
        at_ = "$.text_config";
    }
    if (!held) {
        index_tensors(dir);
        return;
    }
    for (const auto& t : held->tensors->tensors()) tensors_[t.name] = dir_name;  // ArraySource::safetensors(dir_name) is the held file
}

void ModelDirectory::index_tensors(const std::string& dir) {
    const auto single = std::filesystem::path(dir) / "model.safetensors";
    const auto index = std::filesystem::path(dir) / "model.safetensors.index.json";
    const auto relative = [&](const std::string& file) { return (std::filesystem::path(name_) / file).lexically_normal().string(); };
    if (std::filesystem::exists(single)) {
        const std::string file = relative("model.safetensors");
        for (const auto& t : arrays_.safetensors(file).tensors()) tensors_[t.name] = file;
        return;
    }
    if (!std::filesystem::exists(index))
        problem_.fail("$.checkpoint.model", fmt::format("\"{}\" holds neither model.safetensors nor model.safetensors.index.json", name_));
    const json map = read_json_file(index.string(), "the index of the shards");
    const JsonReader reader(index.string());
    if (!map.is_object() || !map.contains("weight_map") || !map["weight_map"].is_object())
        reader.fail("$.weight_map", "expected an object naming the shard of every tensor");
    for (const auto& [tensor, shard] : map["weight_map"].items()) tensors_[tensor] = relative(reader.string(shard, "$.weight_map." + tensor));
}

}  // namespace attn_trace
