// NumPy's .npy format (versions 1–3): "\x93NUMPY", a version, a header length, a
// Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// and the raw data. Read strictly: anything else is an error naming the file.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "attn_trace/array_files.hpp"
#include "attn_trace/errors.hpp"
#include "extents.hpp"
#include "mapped_file.hpp"
#include "scalar_widening.hpp"

namespace attn_trace {

namespace {

struct NpyHeader {
    ScalarKind kind = ScalarKind::f64;
    bool big_endian = false, fortran_order = false;
    std::vector<std::size_t> shape;
    std::size_t data_start = 0;
};

// The header's dict literal, parsed by hand: it is Python, not JSON.
class DictLiteral {
public:
    DictLiteral(std::string_view text, const std::string& file) : text_(text), file_(file) {}

    NpyHeader parse() {
        NpyHeader header;
        bool descr = false, order = false, shape = false;
        expect('{');
        while (peek() != '}') {
            const std::string key = quoted();
            expect(':');
            if (key == "descr") {
                read_descr(quoted(), header);
                descr = true;
            } else if (key == "fortran_order") {
                header.fortran_order = boolean();
                order = true;
            } else if (key == "shape") {
                header.shape = tuple();
                shape = true;
            } else {
                fail(fmt::format("unknown header key '{}' (a .npy header has descr, fortran_order and shape)", key));
            }
            separator('}');
        }
        ++at_;
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n')) ++at_;
        if (at_ != text_.size()) fail("text after the header's closing }");
        if (!descr || !order || !shape) fail("the header needs descr, fortran_order and shape");
        return header;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { throw InputError(fmt::format("{}: not a valid .npy file: {}", file_, what)); }
    char peek() {
        while (at_ < text_.size() && text_[at_] == ' ') ++at_;
        if (at_ >= text_.size()) fail("the header ends early");
        return text_[at_];
    }
    // After an item: a comma, or the closing bracket right away (as Python requires).
    void separator(char closing) {
        if (peek() == ',') ++at_;
        else if (peek() != closing) fail(fmt::format("expected ',' or '{}' in the header at character {}", closing, at_));
    }
    void expect(char c) {
        if (peek() != c) fail(fmt::format("expected '{}' in the header at character {}", c, at_));
        ++at_;
    }
    std::string quoted() {
        const char q = peek();
        if (q != '\'' && q != '"') fail(fmt::format("expected a quoted key or string at character {}", at_));
        const std::size_t end = text_.find(q, at_ + 1);
        if (end == std::string_view::npos) fail("an unterminated string in the header");
        std::string out(text_.substr(at_ + 1, end - at_ - 1));
        at_ = end + 1;
        return out;
    }
    bool boolean() {
        peek();
        for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
            if (text_.substr(at_, std::strlen(word)) == word) {
                at_ += std::strlen(word);
                return value;
            }
        fail("fortran_order must be True or False");
    }
    std::vector<std::size_t> tuple() {
        expect('(');
        std::vector<std::size_t> out;
        while (peek() != ')') {
            std::size_t value = 0, digits = 0;
            while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
                if (value > (std::size_t{1} << 40)) fail("a shape extent too large");
                value = value * 10 + static_cast<std::size_t>(text_[at_++] - '0');
                ++digits;
            }
            if (digits == 0) fail(fmt::format("expected a whole number in the shape at character {}", at_));
            out.push_back(value);
            separator(')');
        }
        ++at_;
        return out;
    }
    void read_descr(const std::string& descr, NpyHeader& header) const {
        static const std::vector<std::pair<std::string, ScalarKind>> kinds = {
            {"f8", ScalarKind::f64}, {"f4", ScalarKind::f32}, {"f2", ScalarKind::f16}, {"i4", ScalarKind::i32}, {"i8", ScalarKind::i64}};
        const auto kind = descr.size() == 3 ? std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == descr.substr(1); })
                                            : kinds.end();
        if (kind == kinds.end() || (descr[0] != '<' && descr[0] != '>' && descr[0] != '='))
            throw InputError(fmt::format("{}: unsupported .npy dtype '{}': attn-trace reads float64, float32, float16, int32 and int64 "
                                         "('<f8', '<f4', '<f2', '<i4', '<i8', or '>' for big-endian)",
                                         file_, descr));
        header.kind = kind->second;
        header.big_endian = descr[0] == '>';
    }

    std::string_view text_;
    const std::string& file_;
    std::size_t at_ = 0;
};

NpyHeader read_header(std::string_view bytes, const std::string& file) {
    const auto fail = [&](const std::string& what) { throw InputError(fmt::format("{}: not a valid .npy file: {}", file, what)); };
    if (bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6).substr(0, std::min<std::size_t>(6, bytes.size())) || bytes.empty())
        fail("it does not start with the magic \\x93NUMPY");
    if (bytes.size() < 10) fail(fmt::format("the file ends inside its header ({} bytes)", bytes.size()));
    const unsigned major = static_cast<unsigned char>(bytes[6]);
    if (major < 1 || major > 3) fail(fmt::format("version {}.{} (attn-trace reads versions 1 to 3)", major, static_cast<unsigned char>(bytes[7])));
    const auto byte = [&](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(bytes[i])); };
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    if (bytes.size() < 8 + length_bytes) fail("the file ends inside the header length");
    std::size_t length = 0;
    for (std::size_t i = 0; i < length_bytes; ++i) length |= byte(8 + i) << (8 * i);
    const std::size_t start = 8 + length_bytes;
    if (length > bytes.size() - start) fail(fmt::format("the header length {} runs past the end of the file ({} bytes)", length, bytes.size()));
    NpyHeader header = DictLiteral(bytes.substr(start, length), file).parse();
    header.data_start = start + length;
    if (header.shape.empty()) fail("a scalar (shape ()): a matrix or vector has 1 to 3 dimensions");
    if (header.shape.size() > 3) fail(fmt::format("{} dimensions: attn-trace reads 1 to 3", header.shape.size()));
    if (std::find(header.shape.begin(), header.shape.end(), 0) != header.shape.end()) fail("an empty array (an extent of 0)");
    return header;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
    std::string out = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + (shape.size() == 1 ? ",)" : ")");
}

// The number of values the header promises, refused unless the file holds exactly their
// bytes: a short file is named as short before its shape is set beside the problem's.
std::size_t checked_count(const NpyHeader& header, std::string_view bytes, const std::string& file) {
    const auto counted = count_within(header.shape, std::size_t{1} << 40);
    if (!counted) throw InputError(fmt::format("{}: not a valid .npy file: the shape {} holds more than 2^40 values", file, shape_text(header.shape)));
    const std::size_t count = *counted, size = scalar_bytes(header.kind), data = bytes.size() - header.data_start;
    if (count * size != data)
        throw InputError(fmt::format("{}: not a valid .npy file: the shape {} needs {} bytes of data, the file has {}{}", file, shape_text(header.shape),
                                     count * size, data, count * size > data ? " (the file is cut short)" : ""));
    return count;
}

}  // namespace

NumericArray parse_npy(std::string_view bytes, const std::string& file) {
    const NpyHeader header = read_header(bytes, file);
    const std::size_t count = checked_count(header, bytes, file), size = scalar_bytes(header.kind);
    if (count > max_array_values)
        throw InputError(fmt::format("{}: {} values: more than the {} a problem's matrix may hold", file, count, max_array_values));
    NumericArray out{header.shape, std::vector<double>(count)};
    const auto* raw = reinterpret_cast<const unsigned char*>(bytes.data()) + header.data_start;
    const std::size_t rows = header.shape[0], cols = header.shape.size() > 1 ? header.shape[1] : 1, depth = header.shape.size() > 2 ? header.shape[2] : 1;
    for (std::size_t k = 0; k < count; ++k) {
        // Fortran order stores the first index fastest: element k is (i, j, l) with i = k % rows, …
        std::size_t row_major = k;
        if (header.fortran_order) {
            const std::size_t i = k % rows, j = (k / rows) % cols, l = k / (rows * cols);
            row_major = (i * cols + j) * depth + l;
        }
        const unsigned char* p = raw + k * size;
        if (header.kind == ScalarKind::i64) {
            std::int64_t x;
            unsigned char b[8];
            std::copy(p, p + 8, b);
            if (header.big_endian) std::reverse(b, b + 8);
            std::memcpy(&x, b, 8);
            if (x > (std::int64_t{1} << 53) || x < -(std::int64_t{1} << 53))
                throw InputError(fmt::format("{}: int64 value {} (element {}) is beyond 2^53: not exact as a double", file, x, k));
        }
        out.data[row_major] = widen_scalar(p, header.kind, header.big_endian);
    }
    return out;
}

NumericArray read_npy(const std::string& path) {
    const MappedFile file = map_file(path, ".npy file");
    return parse_npy(file.bytes, path);
}

std::vector<std::size_t> npy_shape(const std::string& path) {
    const MappedFile file = map_file(path, ".npy file");
    const NpyHeader header = read_header(file.bytes, path);
    checked_count(header, file.bytes, path);
    return header.shape;
}

}  // namespace attn_trace
