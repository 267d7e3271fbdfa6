// The tensor-core fused attention kernel (FlashAttention-2's loop order with
// WMMA): each block holds 64 query rows of one head, each of its 4 warps 16 rows;
// per 64-key tile S = Q Kᵀ (16-bit inputs, float32 accumulators), the online
// softmax in float32 by lane pairs (one row each, half its keys), P rounded to the
// input type, O += P V with O kept in shared memory in float32 (WMMA fragments'
// element layout is opaque, so the per-row rescale of O is done there). The tiles
// and roundings are those of tensor_core_tiling.hpp and of its CPU emulation.
// No fmt in this file: nvcc cannot evaluate fmt's compile-time format checks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <vector>

#include "attn_trace/online_softmax.hpp"
#include "backend_cuda.hpp"
#include "device_memory.hpp"
#include "tensor_core_tiling.hpp"

namespace attn_trace {

namespace {

using namespace nvcuda;
using tensor_cores::block_rows;
using tensor_cores::rows_per_warp;
using tensor_cores::tile_keys;

template <typename In>
__host__ __device__ In to_input(float x);
template <>
__host__ __device__ __half to_input<__half>(float x) { return __float2half_rn(x); }
template <>
__host__ __device__ __nv_bfloat16 to_input<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

struct TensorCoreArguments {
    const void *q, *k, *v;      // In, row-major: (n, q_cols), (m, k_cols), (m, v_cols)
    int q_cols, k_cols, v_cols;
    float* out;                 // (n, heads · D)
    float *row_max, *row_sum;   // (heads, n)
    const int *first_key, *end_key;  // (n) each
    int n, m, group;
    float scale, empty_value;
};

// Shared memory of one block: Q (Br × D), K and V tiles (Bc × D), S (Br × Bc,
// float), P (Br × Bc), O (Br × D, float), m and ℓ (Br each, float).
template <typename In, int D>
constexpr std::size_t shared_bytes() {
    return sizeof(In) * (block_rows * D + 2 * tile_keys * D + block_rows * tile_keys) + sizeof(float) * (block_rows * tile_keys + block_rows * D + 2 * block_rows);
}

using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// acc += A B for one warp, in Steps products of 16 × 16 × 16: A is 16 rows, row-major
// with leading dimension lda, its step s at a + 16·s; B is 16 columns in BLayout with
// leading dimension ldb, its step s at b + s·b_step. Both products of a tile (Q Kᵀ and
// P V) are this, with K read as Kᵀ (column-major).
template <int Steps, typename In, typename BLayout>
__device__ void multiply_accumulate(Accumulator& acc, const In* a, int lda, const In* b, int b_step, int ldb) {
    for (int step = 0; step < Steps; ++step) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, In, wmma::row_major> a_fragment;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, In, BLayout> b_fragment;
        wmma::load_matrix_sync(a_fragment, a + step * 16, lda);
        wmma::load_matrix_sync(b_fragment, b + step * b_step, ldb);
        wmma::mma_sync(acc, a_fragment, b_fragment, acc);
    }
}

template <typename In, int D>
__global__ void __launch_bounds__(tensor_cores::warps * 32) tensor_core_attention(TensorCoreArguments a) {
    extern __shared__ __align__(128) unsigned char shared[];
    In* q_s = reinterpret_cast<In*>(shared);
    In* k_s = q_s + block_rows * D;
    In* v_s = k_s + tile_keys * D;
    float* s_s = reinterpret_cast<float*>(v_s + tile_keys * D);
    In* p_s = reinterpret_cast<In*>(s_s + block_rows * tile_keys);
    float* o_s = reinterpret_cast<float*>(p_s + block_rows * tile_keys);
    float* m_s = o_s + block_rows * D;
    float* l_s = m_s + block_rows;
    const In* Q = static_cast<const In*>(a.q);
    const In* K = static_cast<const In*>(a.k);
    const In* V = static_cast<const In*>(a.v);
    const int h = blockIdx.y, g = h / a.group;
    const int row0 = blockIdx.x * block_rows, rows = min(block_rows, a.n - row0);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    for (int t = threadIdx.x; t < block_rows * D; t += blockDim.x) {
        const int r = t / D, c = t % D;
        q_s[t] = r < rows ? Q[static_cast<long>(row0 + r) * a.q_cols + h * D + c] : to_input<In>(0.0f);
        o_s[t] = 0.0f;
    }
    for (int r = threadIdx.x; r < block_rows; r += blockDim.x) {
        m_s[r] = -INFINITY;
        l_s[r] = 0.0f;
    }
    __syncthreads();

    const tensor_cores::KeySpan span = tensor_cores::block_keys(a.first_key, a.end_key, row0, rows, a.m);
    for (int tile = tensor_cores::first_tile(span); tile < tensor_cores::end_tile(span); ++tile) {
        const int j0 = tile * tile_keys;
        for (int t = threadIdx.x; t < tile_keys * D; t += blockDim.x) {
            const int j = j0 + t / D, c = t % D;
            k_s[t] = j < a.m ? K[static_cast<long>(j) * a.k_cols + g * D + c] : to_input<In>(0.0f);
            v_s[t] = j < a.m ? V[static_cast<long>(j) * a.v_cols + g * D + c] : to_input<In>(0.0f);
        }
        __syncthreads();

        // S_w = Q_w K_tᵀ: K stored [key][d] is Kᵀ column-major.
        for (int nf = 0; nf < tile_keys / 16; ++nf) {
            Accumulator acc;
            wmma::fill_fragment(acc, 0.0f);
            multiply_accumulate<D / 16, In, wmma::col_major>(acc, q_s + warp * rows_per_warp * D, D, k_s + nf * 16 * D, 16, D);
            wmma::store_matrix_sync(s_s + warp * rows_per_warp * tile_keys + nf * 16, acc, tile_keys, wmma::mem_row_major);
        }
        __syncwarp();

        // The online softmax (online_softmax.hpp): lanes 2r and 2r + 1 take row r of the
        // warp, half its keys each.
        {
            const int r = warp * rows_per_warp + lane / 2, half = lane % 2, i = row0 + r;
            const int first = i < a.n ? a.first_key[i] : 0, end = i < a.n ? a.end_key[i] : 0;
            float* s_row = s_s + r * tile_keys;
            float tile_max = -INFINITY;
            for (int c = half * (tile_keys / 2); c < (half + 1) * (tile_keys / 2); ++c) {
                const int j = j0 + c;
                const float z = j < first || j >= end ? -INFINITY : s_row[c] * a.scale;
                s_row[c] = z;
                tile_max = online_softmax::raised_max(tile_max, z);
            }
            tile_max = online_softmax::raised_max(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
            const float m_old = m_s[r], m_new = online_softmax::raised_max(m_old, tile_max);
            float sum = 0.0f;
            for (int c = half * (tile_keys / 2); c < (half + 1) * (tile_keys / 2); ++c) {
                const float p = online_softmax::weight(s_row[c], m_new);
                sum += p;
                p_s[r * tile_keys + c] = to_input<In>(p);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            const float rescale = online_softmax::rescale(m_old, m_new);
            for (int c = half * (D / 2); c < (half + 1) * (D / 2); ++c) o_s[r * D + c] *= rescale;
            __syncwarp();
            if (half == 0) {
                l_s[r] = online_softmax::rescaled_sum(l_s[r], rescale, sum);
                m_s[r] = m_new;
            }
        }
        __syncwarp();

        // O_w += P_w V_t
        for (int nf = 0; nf < D / 16; ++nf) {
            Accumulator acc;
            wmma::load_matrix_sync(acc, o_s + warp * rows_per_warp * D + nf * 16, D, wmma::mem_row_major);
            multiply_accumulate<tile_keys / 16, In, wmma::row_major>(acc, p_s + warp * rows_per_warp * tile_keys, tile_keys, v_s + nf * 16, 16 * D, D);
            wmma::store_matrix_sync(o_s + warp * rows_per_warp * D + nf * 16, acc, D, wmma::mem_row_major);
        }
        __syncthreads();  // before the next tile's K and V overwrite these
    }

    for (int t = threadIdx.x; t < rows * D; t += blockDim.x) {
        const int r = t / D, c = t % D;
        const float l = l_s[r];
        a.out[static_cast<long>(row0 + r) * (gridDim.y * D) + h * D + c] = l > 0.0f ? o_s[t] / l : a.empty_value;
    }
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        a.row_max[static_cast<long>(h) * a.n + row0 + r] = m_s[r];
        a.row_sum[static_cast<long>(h) * a.n + row0 + r] = l_s[r];
    }
}

template <typename In>
std::vector<In> rounded(const Matrix& m) {
    std::vector<In> out(m.data().size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = to_input<In>(static_cast<float>(m.data()[i]));
    return out;
}

template <typename In, int D>
AttentionResult run(const AttentionCall& call) {
    const int n = static_cast<int>(call.n()), m = static_cast<int>(call.m()), heads = call.heads;
    const DeviceCall<In> device(call, rounded<In>);
    const TensorCoreArguments a{device.q.get(), device.k.get(), device.v.get(), static_cast<int>(call.q->cols()), static_cast<int>(call.k->cols()),
                                static_cast<int>(call.v->cols()), device.out.get(), device.row_max.get(), device.row_sum.get(), device.first_key.get(),
                                device.end_key.get(), n, m, heads / call.kv_heads, static_cast<float>(call.scale), call.empty_rows_nan ? NAN : 0.0f};
    constexpr std::size_t bytes = shared_bytes<In, D>();
    check_cuda(cudaFuncSetAttribute(tensor_core_attention<In, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)), "cudaFuncSetAttribute");
    const dim3 grid(static_cast<unsigned>((n + block_rows - 1) / block_rows), static_cast<unsigned>(heads));
    tensor_core_attention<In, D><<<grid, tensor_cores::warps * 32, bytes>>>(a);
    check_cuda(cudaGetLastError(), "tensor_core_attention launch");
    check_cuda(cudaDeviceSynchronize(), "tensor_core_attention");
    AttentionResult result = device.result();
    result.stats.block_q = block_rows;
    result.stats.block_k = tile_keys;
    result.stats.workers = 1;
    return result;
}

}  // namespace

AttentionResult CudaBackend::tensor_core_attention(const AttentionCall& call) const {
    if (call.half == HalfType::fp16) return call.d_k == 64 ? run<__half, 64>(call) : run<__half, 128>(call);
    return call.d_k == 64 ? run<__nv_bfloat16, 64>(call) : run<__nv_bfloat16, 128>(call);
}

}  // namespace attn_trace
