#pragma once
namespace attn_trace {
inline constexpr const char* version = "0.1.0";
}
