#include "array_source.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {

ArraySource::ArraySource(const std::string& problem_file) {
    // "<stdin>" and a bare file name read files from the working directory.
    if (problem_file != "<stdin>") folder_ = std::filesystem::path(problem_file).parent_path().string();
}

std::string ArraySource::resolve(const std::string& name) const {
    const std::filesystem::path path(name);
    return path.is_absolute() || folder_.empty() ? name : (std::filesystem::path(folder_) / path).string();
}

const SafetensorsFile& ArraySource::safetensors(const std::string& name) {
    if (const ModelInMemory* model = held(name)) return *model->tensors;
    const std::string path = resolve(name);
    auto& slot = open_[path];
    if (!slot) slot = std::make_unique<SafetensorsFile>(SafetensorsFile::open(path));
    return *slot;
}

JsonReader::ArrayFiles ArraySource::hooks(const JsonReader& reader) {
    return {[this, &reader](const nlohmann::json& value, const std::string& path) { return read(value, path, reader); },
            [this, &reader](const nlohmann::json& value, const std::string& path) { return shape(value, path, reader); }};
}

void ArraySource::check_keys(const nlohmann::json& value, const std::string& path, const JsonReader& reader) const {
    const bool npy = value.contains("npy");
    if (npy && value.contains("safetensors")) reader.fail(path, "give \"npy\" or \"safetensors\", not both");
    static const std::vector<std::string> npy_keys = {"npy"}, safetensors_keys = {"safetensors", "tensor", "rows", "cols", "transpose"};
    const auto& keys = npy ? npy_keys : safetensors_keys;
    for (const auto& [key, item] : value.items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            const auto near = nearest_word(key, keys);
            reader.fail(path + "." + key, fmt::format("unknown key \"{}\" beside \"{}\"{}", key, npy ? "npy" : "safetensors",
                                                      near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
        }
    if (!npy && !value.contains("tensor")) reader.fail(path, "needs \"tensor\": the name of the tensor in the safetensors file");
}

TensorSlice ArraySource::slice_of(const nlohmann::json& value, const std::string& path, const JsonReader& reader) const {
    TensorSlice slice;
    const auto range = [&](const char* key) -> std::optional<std::array<std::size_t, 2>> {
        if (!value.contains(key) || blocks_of(value, key)) return std::nullopt;  // blocks: read one at a time (read_blocks)
        const auto& r = value[key];
        const std::string at = path + "." + key;
        if (!r.is_array() || r.size() != 2) reader.fail(at, "expected [first, last): a half-open range of whole numbers, found " + describe_json(r));
        return std::array<std::size_t, 2>{static_cast<std::size_t>(reader.whole_number(r[0], at + "[0]", 0, 1L << 40)),
                                          static_cast<std::size_t>(reader.whole_number(r[1], at + "[1]", 0, 1L << 40))};
    };
    slice.rows = range("rows");
    slice.cols = range("cols");
    if (value.contains("transpose")) slice.transpose = reader.boolean(value["transpose"], path + ".transpose");
    return slice;
}

std::optional<std::vector<std::array<std::size_t, 2>>> ArraySource::blocks_of(const nlohmann::json& value, const char* key) {
    if (!value.contains(key) || !value[key].is_array() || value[key].empty() || !value[key][0].is_array()) return std::nullopt;
    std::vector<std::array<std::size_t, 2>> blocks;
    for (const auto& block : value[key]) {
        if (!block.is_array() || block.size() != 2 || !block[0].is_number_unsigned() || !block[1].is_number_unsigned()) return std::vector<std::array<std::size_t, 2>>{};
        blocks.push_back({block[0].get<std::size_t>(), block[1].get<std::size_t>()});
    }
    return blocks;
}

// "rows": [[a, b], [c, d], …] (or "cols" of a 1-D tensor): the blocks read one by one and
// put one after another along that axis, then transposed if asked: a head-by-head fused
// layout (GPT-NeoX's query_key_value) gathered into Q, K or V.
NumericArray ArraySource::read_blocks(const SafetensorsFile& file, const std::string& tensor, const nlohmann::json& value, const std::string& path,
                                      const JsonReader& reader, bool shape_only) const {
    const char* key = value.contains("rows") && blocks_of(value, "rows") ? "rows" : "cols";
    const auto blocks = *blocks_of(value, key);
    if (blocks.empty()) reader.fail(path + "." + key, "expected [first, last) or a list of such ranges, each of two whole numbers");
    const auto& stored = file.tensor(tensor).shape;
    if ((key == std::string("rows")) != (stored.size() == 2))
        reader.fail(path + "." + key, fmt::format("blocks are of the rows of a 2-D tensor or the values of a 1-D one; {} has {} dimensions", tensor, stored.size()));
    TensorSlice slice = slice_of(value, path, reader);
    const bool transpose = slice.transpose;
    slice.transpose = false;
    NumericArray out;
    for (const auto& block : blocks) {
        (key == std::string("rows") ? slice.rows : slice.cols) = block;
        // The shape alone (checked against the tensor) when only the shape is asked.
        NumericArray part = shape_only ? NumericArray{file.shape(tensor, slice), {}} : file.read(tensor, slice);
        if (out.shape.empty()) out.shape = part.shape;
        else out.shape[0] += part.shape[0];
        out.data.insert(out.data.end(), part.data.begin(), part.data.end());
    }
    if (transpose && shape_only && out.shape.size() == 2) std::swap(out.shape[0], out.shape[1]);
    if (transpose && !shape_only && out.shape.size() == 2) {
        NumericArray turned{{out.shape[1], out.shape[0]}, std::vector<double>(out.data.size())};
        for (std::size_t i = 0; i < out.shape[0]; ++i)
            for (std::size_t j = 0; j < out.shape[1]; ++j) turned.data[j * out.shape[0] + i] = out.data[i * out.shape[1] + j];
        return turned;
    }
    return out;
}

namespace {

// An array file's own error (it names the file and the tensor) at the JSON path that names the file.
template <typename Read>
auto at_path(const std::string& path, const JsonReader& reader, Read read) {
    try {
        return read();
    } catch (const JsonPathError&) {
        throw;
    } catch (const InputError& e) {
        reader.fail(path, e.marked());
    }
}

}  // namespace

std::vector<std::size_t> ArraySource::shape(const nlohmann::json& value, const std::string& path, const JsonReader& reader) {
    check_keys(value, path, reader);
    return at_path(path, reader, [&] {
        if (value.contains("npy")) return npy_shape(resolve(reader.string(value["npy"], path + ".npy")));
        const auto& file = safetensors(reader.string(value["safetensors"], path + ".safetensors"));
        const std::string tensor = reader.string(value["tensor"], path + ".tensor");
        if (blocks_of(value, "rows") || blocks_of(value, "cols")) return read_blocks(file, tensor, value, path, reader, true).shape;
        return file.shape(tensor, slice_of(value, path, reader));
    });
}

NumericArray ArraySource::read(const nlohmann::json& value, const std::string& path, const JsonReader& reader) {
    check_keys(value, path, reader);
    NumericArray array = at_path(path, reader, [&] {
        if (value.contains("npy")) return read_npy(resolve(reader.string(value["npy"], path + ".npy")));
        const auto& file = safetensors(reader.string(value["safetensors"], path + ".safetensors"));
        const std::string tensor = reader.string(value["tensor"], path + ".tensor");
        if (blocks_of(value, "rows") || blocks_of(value, "cols")) return read_blocks(file, tensor, value, path, reader, false);
        return file.read(tensor, slice_of(value, path, reader));
    });
    const auto bad = std::find_if(array.data.begin(), array.data.end(), [](double x) { return !std::isfinite(x); });
    if (bad != array.data.end() && nonfinite_) {
        // The cell as a JSON path would name it: [i][j] (or [b][i][j], or [j]) in row-major order.
        std::size_t k = static_cast<std::size_t>(bad - array.data.begin());
        std::string index;
        for (std::size_t d = array.shape.size(); d-- > 0;) {
            index = fmt::format("[{}]", k % array.shape[d]) + index;
            k /= array.shape[d];
        }
        const std::string file = value.contains("npy") ? value["npy"].get<std::string>()
                                                       : fmt::format("tensor '{}' of {}", value["tensor"].get<std::string>(), value["safetensors"].get<std::string>());
        nonfinite_(fmt::format("{}{} ({})", path, index, file), *bad);
    }
    return array;
}

}  // namespace attn_trace
