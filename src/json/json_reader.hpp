#pragma once
// Reading typed values out of a parsed JSON document, with errors that name the
// file, the JSON path, what was expected and what was found.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn_trace/nearest_word.hpp"

#include "attn_trace/matrix.hpp"
#include "attn_trace/numeric_array.hpp"

namespace attn_trace {

class JsonReader {
public:
    explicit JsonReader(std::string file) : file_(std::move(file)) {}
    const std::string& file() const { return file_; }

    [[noreturn]] void fail(const std::string& path, const std::string& what) const;

    // Matrices kept in files ({"npy": …}, {"safetensors": …},
    // docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint) are read by the
    // problem layer, which knows where the problem file lies; a reader without these
    // refuses them.
    struct ArrayFiles {
        std::function<NumericArray(const nlohmann::json&, const std::string&)> read;
        std::function<std::vector<std::size_t>(const nlohmann::json&, const std::string&)> shape;
    };
    void set_array_files(ArrayFiles files) { files_ = std::move(files); }
    static bool in_a_file(const nlohmann::json& value) { return value.is_object() && (value.contains("npy") || value.contains("safetensors")); }

    // A number, or one of the strings "inf", "-inf", "nan".
    double number(const nlohmann::json& value, const std::string& path) const;
    long whole_number(const nlohmann::json& value, const std::string& path, long min, long max) const;
    std::string string(const nlohmann::json& value, const std::string& path) const;
    bool boolean(const nlohmann::json& value, const std::string& path) const;

    // The shape a matrix value declares, read without making its numbers: the loader
    // checks every shape against the rest of the problem before a random matrix
    // (which may be gigabytes) is generated. Fails as array() would on a malformed value.
    std::vector<std::size_t> declared_shape(const nlohmann::json& value, const std::string& path) const;
    // The same, required to have `rank` dimensions (2: a matrix, 1: a vector).
    std::vector<std::size_t> declared_shape(const nlohmann::json& value, const std::string& path, std::size_t rank) const;

    // Nested arrays, {"shape": [...], "data": [...]} or {"random": {...}}.
    NumericArray array(const nlohmann::json& value, const std::string& path) const;
    Matrix matrix(const nlohmann::json& value, const std::string& path) const;  // exactly 2-D
    std::vector<double> vector(const nlohmann::json& value, const std::string& path) const;  // 1-D
    std::vector<std::string> strings(const nlohmann::json& value, const std::string& path) const;

private:
    // [r, c] (or 1 or 3 extents), each >= 1, their product within the size limit.
    std::vector<std::size_t> shape(const nlohmann::json& value, const std::string& path) const;
    NumericArray nested(const nlohmann::json& value, const std::string& path) const;
    NumericArray shaped(const nlohmann::json& value, const std::string& path) const;
    NumericArray random(const nlohmann::json& value, const std::string& path) const;
    std::string file_;
    ArrayFiles files_;
};

std::size_t element_count(const std::vector<std::size_t>& shape);

// "a string \"abc\"", "an array of 3 items", "an object", "null", ...
std::string describe_json(const nlohmann::json& value);


}  // namespace attn_trace
