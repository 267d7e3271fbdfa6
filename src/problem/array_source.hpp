#pragma once
// The matrix forms that live in files
// (docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint): {"npy": FILE} and
// {"safetensors": FILE, "tensor": NAME, "rows": [a, b], "cols": [a, b], "transpose":
// false} (rows, or cols of a 1-D tensor, also as a list of ranges read one after
// another), their paths relative to the problem file. A safetensors file is opened (mapped)
// once however many tensors a problem reads from it.
#include <functional>
#include <array>
#include <map>
#include <optional>
#include <vector>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "attn_trace/array_files.hpp"
#include "attn_trace/problem.hpp"
#include "json/json_reader.hpp"

namespace attn_trace {

class ArraySource {
public:
    explicit ArraySource(const std::string& problem_file);

    // The hooks a JsonReader calls for these forms; errors are JsonPathErrors at `path`.
    JsonReader::ArrayFiles hooks(const JsonReader& reader);
    // A file named in the problem, relative to the problem file's folder.
    std::string resolve(const std::string& name) const;
    // The safetensors file (opened on first use); InputError if it cannot be.
    const SafetensorsFile& safetensors(const std::string& name);
    // A model in memory, named as a model directory would be (ModelDirectory reads it).
    void hold(const ModelInMemory& model) { held_ = &model; }
    const ModelInMemory* held(const std::string& name) const { return held_ && held_->name == name ? held_ : nullptr; }
    // Called with "$.X[2][5] (hidden.npy)" and the value for the first NaN or infinity of each array read.
    void on_nonfinite(std::function<void(const std::string&, double)> report) { nonfinite_ = std::move(report); }

private:
    NumericArray read(const nlohmann::json& value, const std::string& path, const JsonReader& reader);
    std::vector<std::size_t> shape(const nlohmann::json& value, const std::string& path, const JsonReader& reader);
    TensorSlice slice_of(const nlohmann::json& value, const std::string& path, const JsonReader& reader) const;
    // A "rows" or "cols" value that is a list of ranges; an empty list when it is malformed.
    static std::optional<std::vector<std::array<std::size_t, 2>>> blocks_of(const nlohmann::json& value, const char* key);
    NumericArray read_blocks(const SafetensorsFile& file, const std::string& tensor, const nlohmann::json& value, const std::string& path,
                             const JsonReader& reader, bool shape_only) const;
    void check_keys(const nlohmann::json& value, const std::string& path, const JsonReader& reader) const;

    std::function<void(const std::string&, double)> nonfinite_;
    std::string folder_;
    std::map<std::string, std::unique_ptr<SafetensorsFile>> open_;
    const ModelInMemory* held_ = nullptr;
};

}  // namespace attn_trace
