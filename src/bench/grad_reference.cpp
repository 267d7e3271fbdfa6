// grad_q rows for bench --grad's judge: see grad_reference.hpp.
#include "grad_reference.hpp"

#include <vector>

namespace attn_trace {

Matrix reference_grad_q_rows(const Problem& p, const RunOptions& options, const Matrix& d_out, QueryRows rows) {
    const Trace trace = pipeline_full_rows(p, options, 0, rows);
    Matrix grad_q(rows.count, static_cast<std::size_t>(p.heads) * p.d_k, 0.0);
    for (int h = 0; h < p.heads; ++h) {
        const Step* weights = trace.find(StepName::weights, h, std::nullopt, std::nullopt, std::nullopt);
        const std::size_t g = static_cast<std::size_t>(kv_head_of(p, h)), hs = static_cast<std::size_t>(h);
        for (std::size_t r = 0; r < rows.count; ++r) {
            std::vector<double> upstream(p.m);  // g_ij
            double delta = 0;
            for (std::size_t j = 0; j < p.m; ++j) {
                for (std::size_t c = 0; c < p.d_v; ++c) upstream[j] += d_out(rows.first + r, hs * p.d_v + c) * (*p.V)(j, g * p.d_v + c);
                delta += weights->values(r, j) * upstream[j];
            }
            for (std::size_t j = 0; j < p.m; ++j) {
                const double ds = p.scale_factor() * weights->values(r, j) * (upstream[j] - delta);
                for (std::size_t c = 0; c < p.d_k; ++c) grad_q(r, hs * p.d_k + c) += ds * (*p.K)(j, g * p.d_k + c);
            }
        }
    }
    return grad_q;
}

}  // namespace attn_trace
