// Hugging Face's safetensors: an 8-byte little-endian header length N, N bytes of
// JSON {"NAME": {"dtype": "F32", "shape": [r, c], "data_offsets": [begin, end]},
// "__metadata__": {...}}, then the data. The header is checked whole on opening;
// a tensor's bytes are read only when it is asked for.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/array_files.hpp"
#include "attn_trace/errors.hpp"
#include "json/json_reader.hpp"
#include "extents.hpp"
#include "mapped_file.hpp"
#include "scalar_widening.hpp"

namespace attn_trace {

namespace {

// Item sizes of the dtypes the format defines: an entry of any of them is valid,
// though attn-trace reads only the floating-point ones.
std::size_t dtype_bytes(const std::string& dtype) {
    static const std::vector<std::pair<std::string, std::size_t>> sizes = {
        {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1}, {"U64", 8}, {"U32", 4},
        {"U16", 2}, {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    const auto it = std::find_if(sizes.begin(), sizes.end(), [&](const auto& s) { return s.first == dtype; });
    return it == sizes.end() ? 0 : it->second;
}

std::optional<ScalarKind> readable(const std::string& dtype) {
    if (dtype == "F64") return ScalarKind::f64;
    if (dtype == "F32") return ScalarKind::f32;
    if (dtype == "F16") return ScalarKind::f16;
    if (dtype == "BF16") return ScalarKind::bf16;
    return std::nullopt;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

}  // namespace

SafetensorsFile::SafetensorsFile(std::string file, std::shared_ptr<const void> owner, std::string_view bytes)
    : file_(std::move(file)), owner_(std::move(owner)), bytes_(bytes) {
    read_header();
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
    MappedFile mapped = map_file(path, "safetensors file");
    return SafetensorsFile(path, std::move(mapped.owner), mapped.bytes);
}

SafetensorsFile SafetensorsFile::parse(std::string bytes, const std::string& file) {
    auto owned = std::make_shared<const std::string>(std::move(bytes));
    const std::string_view view(*owned);
    return SafetensorsFile(file, std::move(owned), view);
}

void SafetensorsFile::read_header() {
    const auto fail = [&](const std::string& what) { throw InputError(fmt::format("{}: not a valid safetensors file: {}", file_, what)); };
    if (bytes_.size() < 8) fail(fmt::format("{} bytes, shorter than the 8-byte header length", bytes_.size()));
    std::uint64_t length = 0;
    for (int i = 0; i < 8; ++i) length |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes_[static_cast<std::size_t>(i)])) << (8 * i);
    if (length > bytes_.size() - 8) fail(fmt::format("the header length {} runs past the end of the file ({} bytes)", length, bytes_.size()));
    const std::string_view text = bytes_.substr(8, static_cast<std::size_t>(length));
    data_ = bytes_.substr(8 + static_cast<std::size_t>(length));
    // A tensor named twice would silently be read as its last entry: the parser's
    // callback sees every top-level key as it comes, before the object keeps one.
    std::vector<std::string> names;
    std::string twice;
    const auto on_key = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string()) {
            const auto& name = parsed.get_ref<const std::string&>();
            if (twice.empty() && std::find(names.begin(), names.end(), name) != names.end()) twice = name;
            names.push_back(name);
        }
        return true;
    };
    const nlohmann::json header = nlohmann::json::parse(text.begin(), text.end(), on_key, false);
    if (header.is_discarded()) fail("its header is not JSON");
    if (!twice.empty()) fail(fmt::format("its header names tensor '{}' twice", twice));
    if (!header.is_object()) fail("its header is not a JSON object of tensors");
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();  // (not a structured binding: clang 14 cannot capture one)
        const nlohmann::json& entry = it.value();
        if (name == "__metadata__") continue;
        const auto bad = [&](const std::string& what) { fail(fmt::format("tensor '{}': {}", name, what)); };
        if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
            bad("expected {\"dtype\", \"shape\", \"data_offsets\"}");
        Tensor t;
        t.name = name;
        if (!entry["dtype"].is_string()) bad("dtype is not a string");
        t.dtype = entry["dtype"].get<std::string>();
        const std::size_t item = dtype_bytes(t.dtype);
        if (item == 0) bad(fmt::format("unknown dtype \"{}\"", t.dtype));
        const auto& shape = entry["shape"];
        if (!shape.is_array() || shape.size() > 8) bad("shape is not a list of up to 8 whole numbers");
        for (const auto& extent : shape) {
            if (!extent.is_number_unsigned() || extent.get<std::uint64_t>() > (std::uint64_t{1} << 40)) bad("shape is not a list of whole numbers");
            t.shape.push_back(extent.get<std::size_t>());
        }
        const auto counted = count_within(t.shape, std::size_t{1} << 40);
        if (!counted) bad(fmt::format("shape {} holds more than 2^40 values", shape_text(t.shape)));
        const std::size_t count = *counted;
        const auto& offsets = entry["data_offsets"];
        if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
            bad("data_offsets is not [begin, end]");
        const std::uint64_t begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
        if (begin > end || end > data_.size())
            bad(fmt::format("data_offsets [{}, {}] lie outside the file's {} bytes of data", begin, end, data_.size()));
        t.begin = static_cast<std::size_t>(begin);
        t.end = static_cast<std::size_t>(end);
        if (t.end - t.begin != count * item)
            bad(fmt::format("shape {} of {} needs {} bytes, data_offsets [{}, {}] hold {}", shape_text(t.shape), t.dtype, count * item, begin, end,
                            end - begin));
        tensors_.push_back(std::move(t));
    }
    std::vector<const Tensor*> by_offset;
    for (const auto& t : tensors_)
        if (t.end > t.begin) by_offset.push_back(&t);  // an empty tensor occupies no bytes: it overlaps nothing
    std::sort(by_offset.begin(), by_offset.end(), [](const Tensor* a, const Tensor* b) { return a->begin < b->begin; });
    for (std::size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i]->begin < by_offset[i - 1]->end)
            fail(fmt::format("tensors '{}' and '{}' overlap (bytes {}…{} and {}…{})", by_offset[i - 1]->name, by_offset[i]->name, by_offset[i - 1]->begin,
                             by_offset[i - 1]->end, by_offset[i]->begin, by_offset[i]->end));
}

const SafetensorsFile::Tensor* SafetensorsFile::find(const std::string& name) const {
    const auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const Tensor& t) { return t.name == name; });
    return it == tensors_.end() ? nullptr : &*it;
}

const SafetensorsFile::Tensor& SafetensorsFile::tensor(const std::string& name) const {
    if (const Tensor* t = find(name)) return *t;
    std::vector<std::string> names;
    for (const auto& t : tensors_) names.push_back(t.name);
    const auto near = nearest_words(name, names, 3);
    std::string listed;
    for (const auto& n : near) listed += (listed.empty() ? "" : ", ") + ("'" + n + "'");
    throw InputError(fmt::format("{}: no tensor '{}' ({} tensors; the nearest: {})", file_, name, tensors_.size(), listed.empty() ? "none" : listed));
}

std::vector<std::size_t> SafetensorsFile::shape(const std::string& name, const TensorSlice& slice) const {
    const Tensor& t = tensor(name);
    const auto fail = [&](const std::string& what) { throw InputError(fmt::format("{}: tensor '{}' {}: {}", file_, name, shape_text(t.shape), what)); };
    if (!readable(t.dtype)) throw InputError(fmt::format("{}: tensor '{}' has dtype {}: attn-trace reads F64, F32, F16 and BF16", file_, name, t.dtype));
    if (t.shape.empty() || t.shape.size() > 3) fail("attn-trace reads tensors of 1 to 3 dimensions");
    if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) fail("the tensor is empty");
    if ((slice.rows || slice.transpose) && t.shape.size() != 2) fail("rows and transpose need a 2-D tensor (a 1-D one is sliced by cols)");
    if (slice.cols && t.shape.size() == 3) fail("a 3-D tensor is read whole");
    std::vector<std::size_t> out = t.shape;
    const auto cut = [&](const std::optional<std::array<std::size_t, 2>>& range, std::size_t& extent, const char* what) {
        if (!range) return;
        const auto [first, last] = *range;
        if (first >= last || last > extent)
            fail(fmt::format("{} [{}, {}) is not a non-empty range inside its {} {}", what, first, last, extent, what));
        extent = last - first;
    };
    if (out.size() == 1) cut(slice.cols, out[0], "cols");
    if (out.size() == 2) {
        cut(slice.rows, out[0], "rows");
        cut(slice.cols, out[1], "cols");
        if (slice.transpose) std::swap(out[0], out[1]);
    }
    if (!count_within(out, max_array_values)) fail(fmt::format("more than the {} values a problem's matrix may hold", max_array_values));
    return out;
}

NumericArray SafetensorsFile::read(const std::string& name, const TensorSlice& slice) const {
    const Tensor& t = tensor(name);
    NumericArray out{shape(name, slice), {}};  // checks the dtype, the rank, the slice and the size
    const auto kind = readable(t.dtype);
    const std::size_t size = scalar_bytes(*kind);
    const auto* raw = reinterpret_cast<const unsigned char*>(data_.data()) + t.begin;
    if (t.shape.size() != 2) {  // 1-D (maybe sliced) or 3-D whole
        const std::size_t first = t.shape.size() == 1 && slice.cols ? (*slice.cols)[0] : 0;
        const std::size_t count = element_count(out.shape);
        out.data.reserve(count);
        for (std::size_t k = 0; k < count; ++k) out.data.push_back(widen_scalar(raw + (first + k) * size, *kind, false));
        return out;
    }
    const std::size_t cols = t.shape[1];
    const std::size_t r0 = slice.rows ? (*slice.rows)[0] : 0, r1 = slice.rows ? (*slice.rows)[1] : t.shape[0];
    const std::size_t c0 = slice.cols ? (*slice.cols)[0] : 0, c1 = slice.cols ? (*slice.cols)[1] : cols;
    out.data.resize((r1 - r0) * (c1 - c0));
    for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t c = c0; c < c1; ++c) {
            const double x = widen_scalar(raw + (r * cols + c) * size, *kind, false);
            const std::size_t i = r - r0, j = c - c0;
            out.data[slice.transpose ? j * (r1 - r0) + i : i * (c1 - c0) + j] = x;
        }
    return out;
}

}  // namespace attn_trace
