// `bench`: the implementations of attention timed on identical inputs.
//   naive  the whole (n, m) score matrix (OpenBLAS), split in one row block per
//          thread, softmax over full rows, then P V: what a straightforward
//          program does (src/backend/cpu/naive_attention.cpp).
//   fast   the tiled online-softmax kernel (src/backend/cpu/fast_attention.cpp).
//   cuda   the backend's fused GPU kernel (float32), one head at a time, timed
//          with its host-device copies; "unavailable" without a CUDA build or GPU.
#include "attn_trace/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/fast_attention.hpp"
#include "attn_trace/naive_attention.hpp"
#include "attn_trace/random.hpp"

namespace attn_trace {

namespace {

template <typename T>
std::vector<T> random_normal(std::size_t count, std::uint64_t seed) {
    PortableRandom generator(seed);
    std::vector<T> out(count);
    for (auto& x : out) x = static_cast<T>(generator.normal());
    return out;
}

template <typename T>
void write_raw(const std::string& dir, const std::string& name, const std::vector<T>& values) {
    const std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary);
    if (!out || !out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T))))
        throw InputError(fmt::format("--dump: cannot write {}", path));
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

template <typename T>
class BenchRunner {
public:
    BenchRunner(const BenchConfig& config, const BenchProgress& progress) : c_(config), progress_(progress) {}

    std::vector<BenchResult> run() {
        std::vector<BenchResult> results;
        for (std::size_t s = 0; s < c_.lengths.size(); ++s) run_setting(s, results);
        return results;
    }

private:
    void run_setting(std::size_t setting, std::vector<BenchResult>& results) {
        const std::size_t n = c_.lengths[setting], width = static_cast<std::size_t>(c_.heads) * c_.d_k;
        const std::vector<T> q = random_normal<T>(n * width, c_.seed), k = random_normal<T>(n * width, c_.seed + 1),
                             v = random_normal<T>(n * width, c_.seed + 2);
        if (!c_.dump_dir.empty()) {
            write_raw(c_.dump_dir, fmt::format("n{}_q.bin", n), q);
            write_raw(c_.dump_dir, fmt::format("n{}_k.bin", n), k);
            write_raw(c_.dump_dir, fmt::format("n{}_v.bin", n), v);
        }
        FastMask causal;
        if (c_.causal) {  // query i reads keys 0 … i
            causal.first_key.assign(n, 0);
            for (std::size_t i = 0; i < n; ++i) causal.end_key.push_back(i + 1);
        }
        FastAttentionInput<T> input;
        input.q = q.data();
        input.k = k.data();
        input.v = v.data();
        input.q_stride = input.k_stride = input.v_stride = width;
        input.n = input.m = n;
        input.d_k = input.d_v = c_.d_k;
        input.heads = input.kv_heads = c_.heads;
        input.scale = 1.0 / std::sqrt(static_cast<double>(c_.d_k));
        input.mask = c_.causal ? &causal : nullptr;

        std::vector<T> reference;  // the output of the first implementation that ran
        std::string reference_impl;
        for (const auto& impl : c_.impls) {
            BenchResult result;
            result.n = result.m = n;
            result.impl = impl;
            std::vector<T> out(n * width);
            const std::string unavailable = impl == "cuda" ? cuda_unavailable_reason() : "";
            if (!unavailable.empty()) {
                result.status = "unavailable";
                result.reason = unavailable;
            } else if (impl == "naive" && static_cast<double>(n) * static_cast<double>(n) * sizeof(T) > c_.naive_budget_bytes) {
                result.status = "skipped";
                result.reason = fmt::format("one (n, m) score matrix would take {:.1f} GiB, over the {:.0f} GiB budget",
                                            static_cast<double>(n) * static_cast<double>(n) * sizeof(T) / (1 << 30), c_.naive_budget_bytes / (1 << 30));
            } else {
                time_impl(setting, input, impl, out, result);
                if (!c_.dump_dir.empty()) write_raw(c_.dump_dir, fmt::format("n{}_out_{}.bin", n, impl), out);
                if (reference.empty()) {
                    reference = std::move(out);
                    reference_impl = impl;
                } else {
                    double worst = 0;
                    for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(out[i]) - reference[i]));
                    result.max_abs_diff = worst;
                    result.compared_with = reference_impl;
                }
            }
            results.push_back(std::move(result));
        }
    }

    FastAttentionSettings fast_settings() const {
        FastAttentionSettings settings;
        settings.threads = c_.threads;
        if (c_.block_q) settings.block_q = c_.block_q;
        if (c_.block_k) settings.block_k = c_.block_k;
        return settings;
    }

    // Why the cuda implementation cannot run here, or "" when it can.
    std::string cuda_unavailable_reason() {
        if (!std::is_same_v<T, float>) return "the CUDA fused kernel is float32 (--dtype f32)";
        try {
            gpu_ = make_backend("cuda");
        } catch (const BackendUnavailable& error) {
            return error.what();
        }
        return "";
    }

    void time_impl(std::size_t setting, const FastAttentionInput<T>& input, const std::string& impl, std::vector<T>& out, BenchResult& result) {
        if (impl == "cuda") {
            time_runs(setting, input, impl, result, [&] { run_cuda(input, out); });
            result.score_bytes = 0;  // the kernel keeps one score per thread in registers
            return;
        }
        const FastAttentionOutput<T> output{out.data(), nullptr, nullptr, T(0)};
        if (impl == "naive") {
            time_runs(setting, input, impl, result, [&] { result.score_bytes = naive_attention(input, output, c_.threads).score_bytes_held; });
            return;
        }
        const FastAttentionSettings settings = fast_settings();
        time_runs(setting, input, impl, result, [&] { result.score_bytes = fast_attention(input, output, settings).score_bytes_held; });
    }

    // Each head through the GPU backend's fused kernel; out (n, heads·d_v) as the CPU kernels write it.
    void run_cuda(const FastAttentionInput<T>& input, std::vector<T>& out) {
        const long causal_offset = c_.causal ? 0 : -1;
        const auto heads = static_cast<std::size_t>(input.heads);
        for (std::size_t h = 0; h < heads; ++h) {
            auto head_of = [&](const T* data, std::size_t rows, std::size_t stride, std::size_t width) {
                Matrix m(rows, width);
                for (std::size_t i = 0; i < rows; ++i)
                    for (std::size_t j = 0; j < width; ++j) m(i, j) = static_cast<double>(data[i * stride + h * width + j]);
                return m;
            };
            const Matrix o = *gpu_->fused_attention(head_of(input.q, input.n, input.q_stride, input.d_k), head_of(input.k, input.m, input.k_stride, input.d_k),
                                                    head_of(input.v, input.m, input.v_stride, input.d_v), input.scale, causal_offset);
            for (std::size_t i = 0; i < input.n; ++i)
                for (std::size_t j = 0; j < input.d_v; ++j) out[i * heads * input.d_v + h * input.d_v + j] = static_cast<T>(o(i, j));
        }
    }

    // Warm-up runs, then timed repeats of `once`: median, min–max and GFLOP/s.
    template <typename Once>
    void time_runs(std::size_t setting, const FastAttentionInput<T>& input, const std::string& impl, BenchResult& result, Once once) {
        const int runs = c_.warmup + c_.repeats;
        for (int run = 0; run < runs; ++run) {
            if (progress_) progress_(setting, c_.lengths.size(), impl, run + 1, runs);
            const auto start = std::chrono::steady_clock::now();
            once();
            const auto stop = std::chrono::steady_clock::now();
            if (run >= c_.warmup) result.times_ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
        }
        result.median_ms = median(result.times_ms);
        result.min_ms = *std::min_element(result.times_ms.begin(), result.times_ms.end());
        result.max_ms = *std::max_element(result.times_ms.begin(), result.times_ms.end());
        result.gflops = attention_flops(input.n, input.m, input.d_k, input.heads, c_.causal) / (result.median_ms * 1e6);
    }

    const BenchConfig& c_;
    const BenchProgress& progress_;
    std::unique_ptr<Backend> gpu_;
};

}  // namespace

double attention_flops(std::size_t n, std::size_t m, std::size_t d_k, int heads, bool causal) {
    // Q Kᵀ and P V: 2·n·m·d_k each, per head; a causal mask leaves about half.
    const double full = 4.0 * static_cast<double>(n) * static_cast<double>(m) * static_cast<double>(d_k) * heads;
    return causal ? full / 2 : full;
}

std::vector<BenchResult> run_bench(const BenchConfig& config, const BenchProgress& progress) {
    return config.dtype == Dtype::f32 ? BenchRunner<float>(config, progress).run() : BenchRunner<double>(config, progress).run();
}

}  // namespace attn_trace
