#include "attn_trace/dtype.hpp"

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {

std::string dtype_name(Dtype dtype) { return dtype == Dtype::f32 ? "f32" : "f64"; }

Dtype parse_dtype(const std::string& text, const std::string& where) {
    if (text == "f64") return Dtype::f64;
    if (text == "f32") return Dtype::f32;
    throw InputError(fmt::format("{}: expected \"f64\" or \"f32\", found \"{}\"", where, text));
}

}  // namespace attn_trace
