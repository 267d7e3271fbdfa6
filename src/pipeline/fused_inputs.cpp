// One sequence in the fused kernels' form: see fused_inputs.hpp.
#include "fused_inputs.hpp"

#include <algorithm>

#include "pipeline_base.hpp"

namespace attn_trace {

namespace {

// x (rows, heads·d) -> every head's columns turned by RoPE.
Matrix rotate_heads(const Matrix& x, int heads, std::size_t d, const Rope& rope, const std::vector<double>& positions, Dtype dtype) {
    Matrix out(x.rows(), x.cols());
    for (int h = 0; h < heads; ++h) {
        const std::size_t first = static_cast<std::size_t>(h) * d;
        const Matrix rotated = apply_rope(x.columns(first, d), rope, positions, dtype);
        for (std::size_t i = 0; i < x.rows(); ++i) std::copy(rotated.row(i), rotated.row(i) + d, out.row(i) + first);
    }
    return out;
}

// The masks of one batch element in the kernels' form (see KeyMask): causal,
// window and `lengths` become each row's key range; key_valid a key flag; the
// dense specs their (n, m) sum via build_mask; ALiBi its slopes; sparse patterns
// go as they are (the kernel asks them tile by tile). Null when nothing is masked.
std::optional<KeyMask> key_mask(const Problem& p, std::size_t batch) {
    KeyMask mask;
    const std::size_t key_length = p.lengths.empty() ? p.m : p.lengths[batch];
    bool ranged = key_length < p.m;
    std::vector<MaskSpec> dense_specs;
    for (const auto& spec : p.masks) {
        if (spec.is_key_range()) ranged = true;
        if (spec.needs_shape()) dense_specs.push_back(spec);
        if (spec.kind == MaskSpec::Kind::sparse) mask.patterns.push_back(spec.sparse);
        if (spec.kind == MaskSpec::Kind::key_valid) {
            mask.key_valid.resize(p.m, 1);
            for (std::size_t j = 0; j < p.m; ++j) mask.key_valid[j] = mask.key_valid[j] && spec.key_valid[j];
        }
    }
    if (ranged) {
        mask.first_key.resize(p.n);
        mask.end_key.resize(p.n);
        for (std::size_t i = 0; i < p.n; ++i) {
            long first = 0, end = static_cast<long>(key_length);
            for (const auto& spec : p.masks) {
                if (!spec.is_key_range()) continue;
                const KeyRange range = key_range(spec, i, p.n, p.m);
                first = std::max(first, range.first);
                end = std::min(end, range.end);
            }
            first = std::clamp(first, 0L, static_cast<long>(p.m));
            mask.first_key[i] = static_cast<std::size_t>(first);
            mask.end_key[i] = static_cast<std::size_t>(std::clamp(end, first, static_cast<long>(p.m)));
        }
    }
    if (!dense_specs.empty()) mask.dense = build_mask(dense_specs, p.n, p.m, p.m, 0.0);
    if (p.alibi_slopes) mask.alibi_slopes = *p.alibi_slopes;
    if (!ranged && !mask.has_elementwise()) return std::nullopt;
    return mask;
}

}  // namespace

FusedInputs::FusedInputs(const Problem& p, std::size_t batch, const Backend& backend, Dtype dtype) {
    // Q, K, V given in the file are read where they are: project() would copy
    // them, and at n = 65536 a copy of three (n, 64) double matrices is 96 MB.
    if (p.from_tokens()) projected_ = project(p, batch, backend, dtype);
    const Matrix& q_given = p.from_tokens() ? projected_.q : *p.Q;
    const Matrix& k_given = p.from_tokens() ? projected_.k : *p.K;
    if (p.rope) {
        q_rotated_ = rotate_heads(q_given, p.heads, p.d_k, *p.rope, query_positions(p), dtype);
        k_rotated_ = rotate_heads(k_given, p.kv_heads, p.d_k, *p.rope, key_positions(p), dtype);
    }
    mask_ = key_mask(p, batch);
    call.q = p.rope ? &q_rotated_ : &q_given;
    call.k = p.rope ? &k_rotated_ : &k_given;
    call.v = p.from_tokens() ? &projected_.v : &*p.V;
    call.d_k = p.d_k;
    call.d_v = p.d_v;
    call.heads = p.heads;
    call.kv_heads = p.kv_heads;
    call.scale = p.scale_factor();
    call.softcap = p.softcap;
    call.mask = mask_ ? &*mask_ : nullptr;
    call.dtype = dtype;
    call.empty_rows_nan = p.empty_rows == EmptyRows::nan;
}

}  // namespace attn_trace
