#include "attn_trace/sdpa_command.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

// Heads [h0, h0 + count) of sequence b of a (batch, heads, rows, cols) array, side by side:
// (rows, count · cols), head h in columns (h − h0) · cols …, as AttentionCall reads them.
Matrix heads_side_by_side(const double* data, std::size_t b, std::size_t heads, std::size_t h0, std::size_t count, std::size_t rows, std::size_t cols) {
    Matrix side(rows, count * cols);
    for (std::size_t h = 0; h < count; ++h) {
        const double* head = data + ((b * heads + h0 + h) * rows) * cols;
        for (std::size_t i = 0; i < rows; ++i) std::copy(head + i * cols, head + (i + 1) * cols, side.row(i) + h * cols);
    }
    return side;
}

}  // namespace

void sdpa_command(const SdpaRequest& r, double* out) {
    if (r.heads == 0 || r.kv_heads == 0 || r.heads % r.kv_heads != 0)
        throw InputError(fmt::format("{} query heads cannot share {} key/value heads: the query heads must be a multiple of them", r.heads, r.kv_heads));
    if (r.mask && r.is_causal) throw InputError("give attn_mask or is_causal=True, not both (as PyTorch)");
    const auto backend = make_backend(r.backend);
    const std::size_t group = r.heads / r.kv_heads;
    // A mask that differs between heads is applied one head at a time; otherwise every
    // head of a sequence goes in one call, the kernel's threads over heads and row blocks.
    const std::size_t per_call = r.mask && r.mask_heads > 1 ? 1 : r.heads;
    KeyMask mask;
    if (r.is_causal) {
        mask.first_key.assign(r.L, 0);
        mask.end_key.resize(r.L);
        for (std::size_t i = 0; i < r.L; ++i) mask.end_key[i] = std::min(i + 1, r.S);
    }
    for (std::size_t b = 0; b < r.batch; ++b)
        for (std::size_t h0 = 0; h0 < r.heads; h0 += per_call) {
            const std::size_t kv0 = h0 / group, kv_count = per_call == r.heads ? r.kv_heads : 1;
            const Matrix q = heads_side_by_side(r.query, b, r.heads, h0, per_call, r.L, r.E);
            const Matrix k = heads_side_by_side(r.key, b, r.kv_heads, kv0, kv_count, r.S, r.E);
            const Matrix v = heads_side_by_side(r.value, b, r.kv_heads, kv0, kv_count, r.S, r.Ev);
            if (r.mask) {
                const double* slice = r.mask + ((r.mask_batch == 1 ? 0 : b) * r.mask_heads + (r.mask_heads == 1 ? 0 : h0)) * r.L * r.S;
                mask.dense = Matrix(r.L, r.S, std::vector<double>(slice, slice + r.L * r.S));
            }
            AttentionCall call;
            call.q = &q;
            call.k = &k;
            call.v = &v;
            call.d_k = r.E;
            call.d_v = r.Ev;
            call.heads = static_cast<int>(per_call);
            call.kv_heads = static_cast<int>(kv_count);
            call.scale = r.scale;
            call.mask = r.mask || r.is_causal ? &mask : nullptr;
            call.dtype = r.dtype;
            call.threads = r.threads > 0 ? r.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            const AttentionResult result = attend(*backend, Operation::fused_attention, call);
            for (std::size_t h = 0; h < per_call; ++h) {
                double* target = out + ((b * r.heads + h0 + h) * r.L) * r.Ev;
                for (std::size_t i = 0; i < r.L; ++i) std::copy(result.out.row(i) + h * r.Ev, result.out.row(i) + (h + 1) * r.Ev, target + i * r.Ev);
            }
        }
}

}  // namespace attn_trace
