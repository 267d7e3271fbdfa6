// The .npy and safetensors readers
// (docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint): files numpy and the
// safetensors library wrote (tests/arrays/, values.json holds what numpy reads back),
// bytes built here for every dtype and layout, and every malformed form refused with a
// message naming the file (and tensor).
#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "arrays/scalar_widening.hpp"
#include "attn_trace/array_files.hpp"
#include "attn_trace/attention_parts.hpp"
#include "attn_trace/dtype.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"

using namespace attn_trace;

namespace {

const std::string arrays_dir = std::string(ATTN_TRACE_SOURCE_DIR) + "/tests/arrays/";

// A .npy file: magic, version, header length, the dict literal padded to 64, data.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
    std::string header = dict;
    const std::size_t prefix = major == 1 ? 10 : 12;
    while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
    const std::size_t n = header.size();
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>((n >> 8) & 0xff);
    if (major > 1) out += std::string(2, '\0');
    return out + header + data;
}

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// A safetensors file: 8-byte length, the JSON header, the data.
std::string safetensors(const std::string& header, const std::string& data) {
    std::string out;
    for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
}

void refused(const std::function<void()>& read, const std::string& words) {
    try {
        read();
        FAIL("accepted; expected an error containing: " << words);
    } catch (const InputError& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find(words) != std::string::npos);
        CHECK(e.exit_code() == 2);
    }
}

}  // namespace

TEST_CASE("every fixture numpy and safetensors wrote reads as numpy reads it, exactly", "[arrays]") {
    std::ifstream in(arrays_dir + "values.json");
    const auto values = nlohmann::json::parse(in);
    REQUIRE(values.size() >= 12);
    const SafetensorsFile small = SafetensorsFile::open(arrays_dir + "small.safetensors");
    for (const auto& [name, want] : values.items()) {
        INFO(name);
        const auto colon = name.find(':');
        const NumericArray got = colon == std::string::npos ? read_npy(arrays_dir + name) : small.read(name.substr(colon + 1));
        CHECK(got.shape == want["shape"].get<std::vector<std::size_t>>());
        const auto data = want["data"].get<std::vector<double>>();
        REQUIRE(got.data.size() == data.size());
        for (std::size_t k = 0; k < data.size(); ++k) CHECK(got.data[k] == data[k]);  // bit for bit: widening is exact
        if (colon == std::string::npos) CHECK(npy_shape(arrays_dir + name) == got.shape);
    }
}

TEST_CASE("f16 and bf16 widen exactly, including subnormals, infinities and NaN", "[arrays]") {
    CHECK(half_to_double(0x3C00) == 1.0);
    CHECK(half_to_double(0xC000) == -2.0);
    CHECK(half_to_double(0x7BFF) == 65504.0);
    CHECK(half_to_double(0x0001) == std::ldexp(1.0, -24));
    CHECK(half_to_double(0x03FF) == std::ldexp(1023.0, -24));
    CHECK(half_to_double(0x3555) == (1 + 0x155 / 1024.0) / 4);  // 0.333251953125, the half nearest 1/3
    CHECK(half_to_double(0x7C00) == std::numeric_limits<double>::infinity());
    CHECK(half_to_double(0xFC00) == -std::numeric_limits<double>::infinity());
    CHECK(std::isnan(half_to_double(0x7E00)));
    CHECK(std::signbit(half_to_double(0x8000)));
    const unsigned char one_bf16[2] = {0x80, 0x3F}, third_bf16[2] = {0xAB, 0x3E};
    CHECK(widen_scalar(one_bf16, ScalarKind::bf16, false) == 1.0);
    CHECK(widen_scalar(third_bf16, ScalarKind::bf16, false) == 0.333984375);
}

TEST_CASE("npy: C and Fortran order, big-endian, versions 1 to 3", "[arrays]") {
    const std::vector<double> c = {1, 2, 3, 4, 5, 6};
    const auto a = parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", bytes_of(c)), "c.npy");
    CHECK(a.shape == std::vector<std::size_t>{2, 3});
    CHECK(a.data == c);
    // Fortran order stores columns: 1 4 2 5 3 6 is the matrix [[1, 2, 3], [4, 5, 6]].
    const auto f = parse_npy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", bytes_of(std::vector<float>{1, 4, 2, 5, 3, 6}), 3),
                             "f.npy");
    CHECK(f.data == c);
    std::string big = bytes_of(std::vector<std::int32_t>{7});
    std::reverse(big.begin(), big.end());
    CHECK(parse_npy(npy("{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }", big, 2), "b.npy").data == std::vector<double>{7});
}

TEST_CASE("npy: every malformed file is refused with what is wrong", "[arrays][errors]") {
    const std::string good_dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
    const std::string data = bytes_of(std::vector<double>{1, 2});
    refused([&] { parse_npy("\x93NUMPX" + npy(good_dict, data).substr(6), "x.npy"); }, "x.npy: not a valid .npy file: it does not start with the magic");
    refused([&] { parse_npy(npy(good_dict, data, 4), "x.npy"); }, "version 4.0 (attn-trace reads versions 1 to 3)");
    refused([&] { parse_npy(npy(good_dict, data).substr(0, 40), "x.npy"); }, "the header length 118 runs past the end of the file");
    refused([&] { parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", data), "x.npy"); },
            "the shape (3,) needs 24 bytes of data, the file has 16");
    refused([&] { parse_npy(npy("{'descr': '<u2', 'fortran_order': False, 'shape': (8,), }", data), "x.npy"); }, "unsupported .npy dtype '<u2'");
    refused([&] { parse_npy(npy("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,), }", data), "x.npy"); }, "fortran_order must be True or False");
    refused([&] { parse_npy(npy("{'descr': '<f8', 'shape': (2,), }", data), "x.npy"); }, "the header needs descr, fortran_order and shape");
    refused([&] { parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", bytes_of(std::vector<double>{1})), "x.npy"); }, "a scalar");
    refused([&] { parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 2), }", data), "x.npy"); }, "4 dimensions");
    refused([&] { parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}", data), "x.npy"); }, "unknown header key 'extra'");
    refused([&] { parse_npy(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", bytes_of(std::vector<std::int64_t>{(1LL << 53) + 1})), "x.npy"); },
            "beyond 2^53");
    refused([&] { read_npy(arrays_dir + "no_such.npy"); }, "no_such.npy: cannot open the .npy file");
}

TEST_CASE("safetensors: slices, transpose and every malformed header refused", "[arrays][errors]") {
    const std::string data = bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6}) + bytes_of(std::vector<double>{7, 8});
    const std::string header = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "b": {"dtype": "F64", "shape": [2], "data_offsets": [24, 40]},
        "__metadata__": {"format": "pt"}})";
    const SafetensorsFile file = SafetensorsFile::parse(safetensors(header, data), "m.safetensors");
    CHECK(file.read("w").data == std::vector<double>{1, 2, 3, 4, 5, 6});
    CHECK(file.read("w", {std::array<std::size_t, 2>{1, 2}, std::array<std::size_t, 2>{0, 2}, false}).data == std::vector<double>{4, 5});
    const NumericArray t = file.read("w", {std::nullopt, std::array<std::size_t, 2>{1, 3}, true});
    CHECK(t.shape == std::vector<std::size_t>{2, 2});
    CHECK(t.data == std::vector<double>{2, 5, 3, 6});
    CHECK(file.read("b", {std::nullopt, std::array<std::size_t, 2>{1, 2}, false}).data == std::vector<double>{8});

    refused([&] { file.read("ww"); }, "m.safetensors: no tensor 'ww' (2 tensors; the nearest: 'w', 'b')");
    refused([&] { file.read("w", {std::array<std::size_t, 2>{1, 3}, std::nullopt, false}); }, "tensor 'w' [2, 3]: rows [1, 3) is not a non-empty range");
    refused([&] { file.read("b", {std::array<std::size_t, 2>{0, 1}, std::nullopt, false}); }, "rows and transpose need a 2-D tensor");
    const auto parse = [](const std::string& h, const std::string& d) { SafetensorsFile::parse(safetensors(h, d), "bad.safetensors"); };
    refused([&] { parse("{\"w\": ", data); }, "bad.safetensors: not a valid safetensors file: its header is not JSON");
    refused([&] { SafetensorsFile::parse(safetensors(header, data).substr(0, 30), "bad.safetensors"); }, "the header length");
    refused([&] { SafetensorsFile::parse("abc", "bad.safetensors"); }, "3 bytes, shorter than the 8-byte header length");
    refused([&] { parse(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 400]}})", data); },
            "tensor 'w': data_offsets [0, 400] lie outside the file's 40 bytes of data");
    refused([&] { parse(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "v": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}})", data); },
            "tensors 'w' and 'v' overlap");
    refused([&] { parse(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 24]}})", data); }, "shape [2, 2] of F32 needs 16 bytes");
    refused([&] { parse(R"({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}})", data); }, "unknown dtype \"Q4\"");
    refused([&] { parse(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", data); },
            "bad.safetensors: not a valid safetensors file: its header names tensor 'w' twice");
    const SafetensorsFile ints = SafetensorsFile::parse(safetensors(R"({"i": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}})", data), "i.safetensors");
    refused([&] { ints.read("i"); }, "tensor 'i' has dtype I64: attn-trace reads F64, F32, F16 and BF16");
    refused([&] { SafetensorsFile::open(arrays_dir + "missing.safetensors"); }, "missing.safetensors: cannot open the safetensors file");
}

TEST_CASE("problem files read matrices from .npy and safetensors, paths relative to the problem", "[arrays]") {
    // A problem file in tests/arrays/ names its files by their own names.
    const Problem p = parse_problem(R"({"Q": {"npy": "f8_c.npy"}, "K": {"npy": "f8_v2.npy"},
        "V": {"safetensors": "small.safetensors", "tensor": "w32", "cols": [0, 2]}})", arrays_dir + "problem.json");
    CHECK(p.n == 3);
    CHECK(p.d_v == 2);
    CHECK(p.V.value()(2, 1) == static_cast<double>(static_cast<float>(p.Q.value()(2, 1))));  // w32 is f8_c in f32
    refused([&] { parse_problem(R"({"Q": {"npy": "f8_c.npy", "mmap": true}, "K": [[1]], "V": [[1]]})", arrays_dir + "p.json"); },
            "p.json: $.Q.mmap: unknown key \"mmap\" beside \"npy\"");
    refused([&] { parse_problem(R"({"Q": {"safetensors": "small.safetensors"}, "K": [[1]], "V": [[1]]})", arrays_dir + "p.json"); },
            "$.Q: needs \"tensor\"");
    refused([&] { parse_problem(R"({"Q": {"safetensors": "small.safetensors", "tensor": "w65"}, "K": [[1]], "V": [[1]]})", arrays_dir + "p.json"); },
            "p.json: $.Q: " + arrays_dir + "small.safetensors: no tensor 'w65' (5 tensors; the nearest: 'w64'");
    refused([&] { parse_problem(R"({"Q": {"npy": "f8_c.npy"}, "K": {"npy": "i4_vector.npy"}, "V": [[1]]})", arrays_dir + "p.json"); }, "$.K");
}

TEST_CASE("bf16 and f16 tensors keep their exact values in a run of their type, and round between the half types", "[arrays][half]") {
    // No detour through a rounding that would change them (docs/PROBLEM.md#dtype-half-precision)
    const Problem p = parse_problem(R"({"Q": {"safetensors": "small.safetensors", "tensor": "wbf16"}, "K": {"safetensors": "small.safetensors", "tensor": "w16"},
        "V": [[1], [2], [3]]})", arrays_dir + "problem.json");
    const auto in_bf16 = stored_in(p, Dtype::bf16), in_f16 = stored_in(p, Dtype::f16);
    REQUIRE(in_bf16);
    REQUIRE(in_f16);
    CHECK(in_bf16->Q->data() == p.Q->data());  // bf16 weights in a bf16 run: exact
    CHECK(in_f16->K->data() == p.K->data());   // f16 weights in an f16 run: exact
    for (std::size_t k = 0; k < p.Q->data().size(); ++k) CHECK(in_f16->Q->data()[k] == round_to(Dtype::f16, p.Q->data()[k]));
    // bf16's 8 significant bits fit f16's 11 inside f16's range; outside it they do not:
    // 100352 (a bf16 number) overflows f16, and 2^-30 falls below its subnormals to 0.
    const Problem wide = parse_problem(R"({"Q": [[100352, 9.313225746154785e-10]], "K": [[1, 1]], "V": [[1]]})", "wide.json");
    const auto wide_f16 = stored_in(wide, Dtype::f16);
    CHECK(std::isinf((*wide_f16->Q)(0, 0)));
    CHECK((*wide_f16->Q)(0, 1) == 0);
    CHECK(stored_in(wide, Dtype::bf16)->Q->data() == wide.Q->data());
}

TEST_CASE("array files: products of extents never wrap, empty tensors overlap nothing, separators are required", "[arrays][errors]") {
    // 2^32 × 2^32 wraps to 0 in 64 bits: refused before any product is trusted.
    refused([&] { SafetensorsFile::parse(safetensors(R"({"w": {"dtype": "F64", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", ""), "o.safetensors"); },
            "tensor 'w': shape [4294967296, 4294967296] holds more than 2^40 values");
    refused([&] { parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""), "o.npy"); },
            "the shape (4294967296, 4294967296) holds more than 2^40 values");
    const std::string one = bytes_of(std::vector<float>{1.5f, -2.25f});
    const SafetensorsFile with_empty = SafetensorsFile::parse(
        safetensors(R"({"a": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]}, "z": {"dtype": "F32", "shape": [0, 2], "data_offsets": [0, 0]}})", one), "e.safetensors");
    CHECK(with_empty.read("a").data == std::vector<double>{1.5, -2.25});
    refused([&] { with_empty.read("z"); }, "the tensor is empty");
    refused([&] { parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1 2), }", bytes_of(std::vector<double>{1, 2})), "s.npy"); },
            "expected ',' or ')' in the header");
    refused([&] { parse_npy(std::string("\x93NUMPY\x02\x00\x01", 9), "t.npy"); }, "t.npy: not a valid .npy file: the file ends inside its header (9 bytes)");
    const SafetensorsFile ints = SafetensorsFile::parse(safetensors(R"({"i": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]}})", one), "i.safetensors");
    refused([&] { ints.shape("i"); }, "tensor 'i' has dtype I32");
}

TEST_CASE("a NaN or infinity in an array file is refused like one in the JSON, naming the file and the cell", "[arrays][errors]") {
    const std::string dir = std::filesystem::temp_directory_path() / "attn_trace_nonfinite";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/nan.npy", std::ios::binary)
        << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", bytes_of(std::vector<double>{1, 2, 3, std::nan("")}));
    const std::string text = R"({"Q": {"npy": "nan.npy"}, "K": [[1, 0], [0, 1]], "V": [[1], [2]]})";
    refused([&] { parse_problem(text, dir + "/p.json"); }, "p.json: $.Q[1][1] (nan.npy): nan in an input: inputs must be finite");
    const Problem allowed = parse_problem(text, dir + "/p.json", true);
    CHECK(allowed.first_nonfinite == "$.Q[1][1] (nan.npy) is nan");
    // A 0-D tensor where a checkpoint expects its packed Q | K | V: an error, not a crash.
    std::ofstream(dir + "/zero_d.safetensors", std::ios::binary)
        << safetensors(R"({"h.0.attn.c_attn.weight": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]}})", bytes_of(std::vector<double>{3}));
    refused([&] { parse_problem(R"({"X": [[1, 2]], "heads": 1, "checkpoint": {"safetensors": "zero_d.safetensors", "family": "gpt2"}})", dir + "/c.json"); },
            "zero_d.safetensors: h.0.attn.c_attn.weight: a packed Q, K, V tensor of 0 dimensions (expected 1 or 2)");
}
