#include "mla_reader.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn_trace/matrix.hpp"

namespace attn_trace {

using nlohmann::json;

Mla read_mla(const json& value, const std::string& path, const JsonReader& reader, std::size_t d_model, std::size_t d_src, int heads,
             std::size_t q_width) {
    static const std::vector<std::string> keys = {"W_DKV", "W_UK", "W_UV", "W_DQ", "W_UQ", "rope_dims", "W_QR", "W_KR", "c_q_norm", "c_kv_norm"};
    if (!value.is_object()) reader.fail(path, "expected an object with W_DKV, W_UK, W_UV (and W_DQ, W_UQ, rope_dims, W_QR, W_KR), found " + describe_json(value));
    for (const auto& [key, item] : value.items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            const auto near = nearest_word(key, keys);
            reader.fail(path + "." + key, "unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
        }
    const auto at = [&](const char* key) { return path + "." + key; };
    const std::size_t H = static_cast<std::size_t>(heads);
    // Every shape first, then the numbers (a random matrix is made only once its shape fits).
    const auto shape = [&](const char* key) {
        const auto s = reader.declared_shape(value[key], at(key), 2);
        return std::pair{s[0], s[1]};
    };
    const auto disagree = [&](const char* a, std::pair<std::size_t, std::size_t> sa, const char* b, std::pair<std::size_t, std::size_t> sb,
                              const std::string& why) {
        reader.fail(at(b), fmt::format("{} is {} and {} is {}: {}", a, shape_string(sa.first, sa.second), b, shape_string(sb.first, sb.second), why));
    };
    for (const char* key : {"W_DKV", "W_UK", "W_UV"})
        if (!value.contains(key)) reader.fail(path, fmt::format("needs {} (MLA's keys and values come from the latent c_kv = X W_DKV)", key));
    const auto dkv = shape("W_DKV"), uk = shape("W_UK"), uv = shape("W_UV");
    if (dkv.first != d_src)
        reader.fail(at("W_DKV"), fmt::format("the keys' source rows have {} columns so W_DKV needs {} rows, found {}", d_src, d_src, dkv.first));
    Mla mla;
    mla.d_c = dkv.second;
    if (uk.first != mla.d_c) disagree("W_DKV", dkv, "W_UK", uk, fmt::format("c_kv has d_c = {} columns so W_UK needs {} rows", mla.d_c, mla.d_c));
    if (uv.first != mla.d_c) disagree("W_DKV", dkv, "W_UV", uv, fmt::format("c_kv has d_c = {} columns so W_UV needs {} rows", mla.d_c, mla.d_c));
    if (uk.second % H != 0) reader.fail(at("W_UK"), fmt::format("{} key columns do not split into {} heads", uk.second, H));
    if (uv.second % H != 0) reader.fail(at("W_UV"), fmt::format("{} value columns do not split into {} heads", uv.second, H));
    mla.d_content = uk.second / H;
    std::size_t q_input = d_model;  // what W_QR reads: c_q with query compression, else X
    if (value.contains("W_DQ") != value.contains("W_UQ"))
        reader.fail(path, fmt::format("W_DQ and W_UQ go together (c_q = X W_DQ, q = c_q W_UQ): {} is missing", value.contains("W_DQ") ? "W_UQ" : "W_DQ"));
    if (value.contains("W_DQ")) {
        const auto dq = shape("W_DQ"), uq = shape("W_UQ");
        if (dq.first != d_model) reader.fail(at("W_DQ"), fmt::format("X has {} columns so W_DQ needs {} rows, found {}", d_model, d_model, dq.first));
        if (uq.first != dq.second) disagree("W_DQ", dq, "W_UQ", uq, fmt::format("c_q has d_cq = {} columns so W_UQ needs {} rows", dq.second, dq.second));
        if (uq.second != uk.second)
            disagree("W_UK", uk, "W_UQ", uq, fmt::format("queries and keys need the same width: W_UQ needs {} columns", uk.second));
        mla.d_cq = q_input = dq.second;
    } else if (q_width == 0) {
        reader.fail(path, "the queries need W_Q (q = X W_Q) or mla.W_DQ with mla.W_UQ (q = X W_DQ W_UQ)");
    } else if (q_width != uk.second) {
        reader.fail("$.W_Q", fmt::format("W_UK has {} columns ({} heads × d_k {}) so W_Q needs {} columns, found {}", uk.second, H, mla.d_content, uk.second,
                                         q_width));
    }
    if (value.contains("rope_dims")) {
        const long d_r = reader.whole_number(value["rope_dims"], at("rope_dims"), 0, 1L << 20);
        if (d_r % 2 != 0) reader.fail(at("rope_dims"), fmt::format("RoPE turns pairs of dimensions, so rope_dims must be even, found {}", d_r));
        mla.d_r = static_cast<std::size_t>(d_r);
    }
    if (mla.d_r == 0) {
        for (const char* key : {"W_QR", "W_KR"})
            if (value.contains(key)) reader.fail(at(key), fmt::format("{} is the decoupled RoPE part: it needs rope_dims (its width d_r)", key));
    } else {
        for (const char* key : {"W_QR", "W_KR"})
            if (!value.contains(key)) reader.fail(path, fmt::format("rope_dims {} needs W_QR and W_KR (the decoupled RoPE query and key): {} is missing", mla.d_r, key));
        const auto qr = shape("W_QR"), kr = shape("W_KR");
        if (qr.first != q_input)
            reader.fail(at("W_QR"), fmt::format("W_QR reads {} ({} columns) so it needs {} rows, found {}", mla.d_cq ? "c_q" : "X", q_input, q_input, qr.first));
        if (qr.second != H * mla.d_r)
            reader.fail(at("W_QR"), fmt::format("{} heads × rope_dims {} make {} columns, found {}", H, mla.d_r, H * mla.d_r, qr.second));
        if (kr.first != d_src) reader.fail(at("W_KR"), fmt::format("the keys' source rows have {} columns so W_KR needs {} rows, found {}", d_src, d_src, kr.first));
        if (kr.second != mla.d_r) reader.fail(at("W_KR"), fmt::format("k_rope is shared by every head: W_KR needs rope_dims = {} columns, found {}", mla.d_r, kr.second));
        mla.W_QR = reader.matrix(value["W_QR"], at("W_QR"));
        mla.W_KR = reader.matrix(value["W_KR"], at("W_KR"));
    }
    mla.W_DKV = reader.matrix(value["W_DKV"], at("W_DKV"));
    mla.W_UK = reader.matrix(value["W_UK"], at("W_UK"));
    mla.W_UV = reader.matrix(value["W_UV"], at("W_UV"));
    if (mla.d_cq) {
        mla.W_DQ = reader.matrix(value["W_DQ"], at("W_DQ"));
        mla.W_UQ = reader.matrix(value["W_UQ"], at("W_UQ"));
    }
    // {"weight": [d values], "eps": 1e-6}: an RMSNorm of the latent before it is expanded.
    const auto norm = [&](const char* key, std::size_t width, const char* latent) -> std::optional<Mla::LatentNorm> {
        if (!value.contains(key)) return std::nullopt;
        const auto& item = value[key];
        if (!item.is_object() || !item.contains("weight"))
            reader.fail(at(key), fmt::format("expected {{\"weight\": [...], \"eps\": 1e-6}}, the RMSNorm of {}, found {}", latent, describe_json(item)));
        for (const auto& [k, v] : item.items())
            if (k != "weight" && k != "eps") reader.fail(at(key) + "." + k, "unknown key: a latent norm has \"weight\" and \"eps\"");
        Mla::LatentNorm n;
        n.weight = reader.vector(item["weight"], at(key) + ".weight");
        if (n.weight.size() != width)
            reader.fail(at(key) + ".weight", fmt::format("{} has {} columns so the norm needs {} weights, found {}", latent, width, width, n.weight.size()));
        if (item.contains("eps")) {
            n.eps = reader.number(item["eps"], at(key) + ".eps");
            if (!(n.eps > 0)) reader.fail(at(key) + ".eps", "expected a number > 0");
        }
        return n;
    };
    if (value.contains("c_q_norm") && !mla.d_cq) reader.fail(at("c_q_norm"), "normalises c_q = X W_DQ: it needs W_DQ and W_UQ");
    mla.c_q_norm = norm("c_q_norm", mla.d_cq, "c_q");
    mla.c_kv_norm = norm("c_kv_norm", mla.d_c, "c_kv");
    return mla;
}

}  // namespace attn_trace
