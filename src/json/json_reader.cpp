#include "json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/size_text.hpp"

namespace attn_trace {

using nlohmann::json;

namespace {

std::string join_shape(const std::vector<std::size_t>& shape) {
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + ")";
}

}  // namespace

std::string describe_json(const json& value) {
    switch (value.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return value.get<bool>() ? "true" : "false";
        case json::value_t::string: return fmt::format("the string \"{}\"", value.get<std::string>());
        case json::value_t::array: return fmt::format("an array of {} item{}", value.size(), value.size() == 1 ? "" : "s");
        case json::value_t::object: return "an object";
        default: return fmt::format("the number {}", value.dump());
    }
}

void JsonReader::fail(const std::string& path, const std::string& what) const {
    throw JsonPathError(file_, path, what);
}

double JsonReader::number(const json& value, const std::string& path) const {
    if (value.is_number()) return value.get<double>();
    if (value.is_string()) {
        const auto text = value.get<std::string>();
        if (text == "inf" || text == "+inf") return std::numeric_limits<double>::infinity();
        // "−inf" with U+2212, the minus sign of typeset text (pasted from a PDF), is "-inf".
        if (text == "-inf" || text == "\u2212inf") return -std::numeric_limits<double>::infinity();
        if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail(path, "expected a number (or \"inf\", \"-inf\", \"nan\"), found " + describe_json(value));
}

long JsonReader::whole_number(const json& value, const std::string& path, long min, long max) const {
    if (!value.is_number() || (value.is_number_float() && std::floor(value.get<double>()) != value.get<double>()))
        fail(path, "expected a whole number, found " + describe_json(value));
    // An integer is compared as one (a seed of 2^53 + 1 stays itself, which a double would
    // round); a float such as 3.0 through double, below ±2^63 so that the cast is defined.
    const bool inside = value.is_number_unsigned() ? max >= 0 && value.get<std::uint64_t>() <= static_cast<std::uint64_t>(max) && static_cast<long>(value.get<std::uint64_t>()) >= min
                        : value.is_number_integer() ? value.get<std::int64_t>() >= min && value.get<std::int64_t>() <= max
                                                    : value.get<double>() >= static_cast<double>(min) && value.get<double>() <= static_cast<double>(max) &&
                                                          std::fabs(value.get<double>()) < 0x1p63;
    if (!inside) fail(path, fmt::format("expected a whole number from {} to {}, found {}", min, max, value.dump()));
    return value.is_number_integer() ? value.get<long>() : static_cast<long>(value.get<double>());
}

std::string JsonReader::string(const json& value, const std::string& path) const {
    if (!value.is_string()) fail(path, "expected a string, found " + describe_json(value));
    return value.get<std::string>();
}

bool JsonReader::boolean(const json& value, const std::string& path) const {
    if (value.is_boolean()) return value.get<bool>();
    if (value.is_number_integer() && (value.get<long>() == 0 || value.get<long>() == 1)) return value.get<long>() == 1;
    fail(path, "expected true or false (or 1 / 0), found " + describe_json(value));
}

std::vector<std::string> JsonReader::strings(const json& value, const std::string& path) const {
    if (!value.is_array()) fail(path, "expected an array of strings, found " + describe_json(value));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < value.size(); ++i) {
        const auto& item = value[i];
        if (item.is_string()) out.push_back(item.get<std::string>());
        else if (item.is_number()) out.push_back(item.dump());  // token ids are fine as labels
        else fail(fmt::format("{}[{}]", path, i), "expected a string, found " + describe_json(item));
    }
    return out;
}

NumericArray JsonReader::array(const json& value, const std::string& path) const {
    if (value.is_array()) return nested(value, path);
    if (in_a_file(value)) {
        if (!files_.read) fail(path, "a matrix in a file (npy, safetensors) is read only inside a problem file");
        return files_.read(value, path);
    }
    if (value.is_object() && value.contains("random")) return random(value, path);
    if (value.is_object() && value.contains("shape")) return shaped(value, path);
    fail(path, "expected a matrix (nested arrays, {\"shape\": [...], \"data\": [...]}, {\"random\": {...}}, {\"npy\": FILE} or {\"safetensors\": FILE, \"tensor\": NAME}), found " +
                   describe_json(value));
}

std::vector<std::size_t> JsonReader::declared_shape(const json& value, const std::string& path) const {
    if (in_a_file(value) && files_.shape) return files_.shape(value, path);
    if (value.is_array()) {
        // Read along the first item at every depth; nested() checks every other item against it.
        std::vector<std::size_t> extents;
        const json* probe = &value;
        std::string probe_path = path;
        while (probe->is_array()) {
            if (probe->empty()) fail(probe_path, "expected a non-empty array, found an empty one");
            extents.push_back(probe->size());
            probe = &(*probe)[0];
            probe_path += "[0]";
        }
        if (extents.size() > 3) fail(path, fmt::format("expected at most 3 dimensions, found {}", extents.size()));
        return extents;
    }
    if (value.is_object() && value.contains("random") && value["random"].is_object() && value["random"].contains("shape"))
        return shape(value["random"]["shape"], path + ".random.shape");
    if (value.is_object() && !value.contains("random") && value.contains("shape")) return shape(value["shape"], path + ".shape");
    // Malformed: random()/shaped()/array() say how, before making anything.
    return array(value, path).shape;
}

std::vector<std::size_t> JsonReader::declared_shape(const json& value, const std::string& path, std::size_t rank) const {
    auto shape = declared_shape(value, path);
    if (shape.size() != rank)
        fail(path, fmt::format("expected a {} ({} dimension{}), found {} dimension{} {}", rank == 1 ? "vector" : "matrix", rank, rank == 1 ? "" : "s",
                               shape.size(), shape.size() == 1 ? "" : "s", join_shape(shape)));
    return shape;
}

NumericArray JsonReader::nested(const json& value, const std::string& path) const {
    NumericArray out;
    out.shape = declared_shape(value, path);
    std::size_t total = 1;
    for (auto extent : out.shape) total *= extent;
    out.data.reserve(total);
    // Walk every item, checking that each sub-array has the expected length.
    auto walk = [&](auto&& self, const json& node, const std::string& at, std::size_t depth) -> void {
        if (depth == out.shape.size()) {
            out.data.push_back(number(node, at));
            return;
        }
        if (!node.is_array())
            fail(at, fmt::format("expected an array of {} items (row {} of a {} array), found {}", out.shape[depth],
                                 depth, join_shape(out.shape), describe_json(node)));
        if (node.size() != out.shape[depth])
            fail(at, fmt::format("ragged array: expected {} items like the first, found {}", out.shape[depth], node.size()));
        for (std::size_t i = 0; i < node.size(); ++i) self(self, node[i], fmt::format("{}[{}]", at, i), depth + 1);
    };
    walk(walk, value, path, 0);
    return out;
}

std::vector<std::size_t> JsonReader::shape(const json& value, const std::string& path) const {
    if (!value.is_array() || value.empty() || value.size() > 3) fail(path, "expected 1 to 3 whole numbers, found " + describe_json(value));
    std::vector<std::size_t> extents;
    double total = 1;
    for (std::size_t i = 0; i < value.size(); ++i) {
        extents.push_back(static_cast<std::size_t>(whole_number(value[i], fmt::format("{}[{}]", path, i), 1, 1L << 32)));
        total *= static_cast<double>(extents.back());
    }
    // Refused before anything is allocated.
    if (total > static_cast<double>(max_array_values))
        fail(path, fmt::format("{} values would need more than {}; the limit is {} values", join_shape(extents),
                               size_text(static_cast<double>(max_array_values) * 8, ByteUnit::GiB), max_array_values));
    return extents;
}

std::size_t element_count(const std::vector<std::size_t>& shape) {
    std::size_t total = 1;
    for (auto extent : shape) total *= extent;
    return total;
}

NumericArray JsonReader::shaped(const json& value, const std::string& path) const {
    NumericArray out;
    out.shape = shape(value["shape"], path + ".shape");
    const std::size_t total = element_count(out.shape);
    for (const auto& [key, item] : value.items())
        if (key != "shape" && key != "data") fail(path + "." + key, "unknown key: a shaped matrix has only \"shape\" and \"data\"");
    if (!value.contains("data")) fail(path, "a matrix with \"shape\" needs \"data\" (the values, row-major)");
    const auto& data = value["data"];
    if (!data.is_array()) fail(path + ".data", "expected a flat array of numbers, found " + describe_json(data));
    if (data.size() != total)
        fail(path + ".data", fmt::format("shape {} needs {} values, found {}", join_shape(out.shape), total, data.size()));
    out.data.reserve(total);
    for (std::size_t i = 0; i < data.size(); ++i) out.data.push_back(number(data[i], fmt::format("{}.data[{}]", path, i)));
    return out;
}

NumericArray JsonReader::random(const json& value, const std::string& path) const {
    const std::string at = path + ".random";
    const auto& spec = value["random"];
    if (value.size() != 1) fail(path, "a random matrix is {\"random\": {...}} with nothing beside it");
    if (!spec.is_object()) fail(at, "expected an object {\"shape\": [r, c], \"seed\": 1, \"dist\": \"normal\"}, found " + describe_json(spec));
    static const std::vector<std::string> known = {"shape", "seed", "dist", "mean", "std", "low", "high"};
    for (const auto& [key, item] : spec.items())
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            const auto near = nearest_word(key, known);
            fail(at + "." + key, "unknown key" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
        }
    if (!spec.contains("shape")) fail(at, "needs \"shape\", e.g. [8192, 64]");
    NumericArray out;
    out.shape = shape(spec["shape"], at + ".shape");
    const std::size_t total = element_count(out.shape);
    const std::uint64_t seed = spec.contains("seed") ? static_cast<std::uint64_t>(whole_number(spec["seed"], at + ".seed", 0, std::numeric_limits<long>::max())) : 0;
    const std::string dist = spec.contains("dist") ? string(spec["dist"], at + ".dist") : "normal";
    // The parameters must be finite: a "nan" mean would fill the matrix with NaN past
    // the non-finite-input check.
    auto option = [&](const char* key, double fallback) {
        if (!spec.contains(key)) return fallback;
        const double x = number(spec[key], at + "." + key);
        if (!std::isfinite(x)) fail(at + "." + key, "expected a finite number, found " + describe_json(spec[key]));
        return x;
    };
    // Each parameter is checked before the numbers are made.
    RandomDraw how;
    if (!parse_dist(dist, how.dist)) fail(at + ".dist", "expected \"normal\", \"uniform\" or \"integers\", found " + describe_json(spec["dist"]));
    if (how.dist == RandomDraw::Dist::normal) {
        how.mean = option("mean", 0.0);
        how.std = option("std", 1.0);
    } else if (how.dist == RandomDraw::Dist::uniform) {
        how.low = option("low", 0.0);
        how.high = option("high", 1.0);
        if (!(how.low < how.high)) fail(at, fmt::format("uniform needs low < high, found low {} and high {}", how.low, how.high));
    } else {
        const long low = spec.contains("low") ? whole_number(spec["low"], at + ".low", -1000000, 1000000) : -4;
        const long high = spec.contains("high") ? whole_number(spec["high"], at + ".high", -1000000, 1000000) : 4;
        if (low > high) fail(at, fmt::format("integers needs low <= high, found low {} and high {}", low, high));
        how = integers_draw(low, high);
    }
    out.data.resize(total);
    PortableRandom generator(seed);
    draw(generator, how, out.data);
    return out;
}

Matrix JsonReader::matrix(const json& value, const std::string& path) const {
    declared_shape(value, path, 2);
    auto array_value = array(value, path);
    return Matrix(array_value.shape[0], array_value.shape[1], std::move(array_value.data));
}

std::vector<double> JsonReader::vector(const json& value, const std::string& path) const {
    declared_shape(value, path, 1);
    return array(value, path).data;
}

}  // namespace attn_trace
