#pragma once
// A Hugging Face model directory as the model reader sees it (model_reader.hpp): its
// config.json and its tensors, and the messages that name the file and field.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "array_source.hpp"
#include "json/json_reader.hpp"

namespace attn_trace {

// One model directory's config and tensors, and the messages that name them.
class ModelDirectory {
public:
    // Reads DIR's config.json (its text_config, for a multimodal model) and indexes its
    // tensors; DIR is relative to the problem file, whose reader names it in errors.
    ModelDirectory(const std::string& dir_name, ArraySource& arrays, const JsonReader& problem);

    const nlohmann::json& config() const { return config_; }
    const std::string& outer_type() const { return outer_type_; }
    std::string path(const std::string& field) const { return at_ + "." + field; }
    [[noreturn]] void fail(const std::string& field, const std::string& what) const { JsonReader(config_path_).fail(path(field), what); }
    bool has(const std::string& field) const { return config_.contains(field) && !config_[field].is_null(); }

    double number(const std::string& field) const {
        if (!has(field)) fail(field, "needs this field: attn-trace cannot size the layer without it");
        return JsonReader(config_path_).number(config_[field], path(field));
    }
    long whole(const std::string& field, long min) const {
        if (!has(field)) fail(field, "needs this field: attn-trace cannot size the layer without it");
        return JsonReader(config_path_).whole_number(config_[field], path(field), min, 1L << 30);
    }

    // A true/false field: one spelt "true" or "yes" is refused, not read as false.
    bool flag(const std::string& field, bool absent) const { return has(field) ? JsonReader(config_path_).boolean(config_[field], path(field)) : absent; }

    // Every tensor name and the file (relative to the problem file) that holds it.
    const std::map<std::string, std::string>& tensors() const { return tensors_; }
    nlohmann::json reference(const std::string& tensor) const { return {{"safetensors", tensors_.at(tensor)}, {"tensor", tensor}}; }
    std::vector<std::size_t> shape(const std::string& tensor) const { return arrays_.safetensors(tensors_.at(tensor)).tensor(tensor).shape; }
    std::string dtype(const std::string& tensor) const { return arrays_.safetensors(tensors_.at(tensor)).tensor(tensor).dtype; }

private:
    // model.safetensors, or the shards model.safetensors.index.json maps each tensor to.
    void index_tensors(const std::string& dir);

    std::string name_, config_path_, outer_type_, at_;
    ArraySource& arrays_;
    const JsonReader& problem_;
    nlohmann::json config_;
    std::map<std::string, std::string> tensors_;
};

}  // namespace attn_trace
