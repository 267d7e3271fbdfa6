// `bench`: the implementations timed on identical inputs.
// Each implementation is one operation of one backend, reached through attend():
//   naive  cpu, unfused attention: the whole (n, m) score matrix (OpenBLAS), split
//          in one row block per thread, softmax over full rows, then P V: what a
//          straightforward program does (src/backend/cpu/naive_attention.cpp).
//   fast   cpu, fused attention: the tiled online-softmax kernel (fast_attention.cpp);
//          for decode settings the decode kernel (decode_attention.cpp, flash-decoding);
//          for backward settings the fused backward (flash_backward.cpp), its forward
//          included, judged by grad_q's rows (grad_reference.hpp).
//   cuda   cuda, fused attention (float32), one launch per head, timed with its
//          host-device copies; "unavailable" without a CUDA build or GPU.
// Every output is judged against the CPU reference pipeline (pipeline_full_rows)
// on a few rows, never against another implementation. The roofs (roofline.hpp) are
// measured first, before any setting's inputs take memory.
#include "attn_trace/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "attn_trace/backend.hpp"
#include "attn_trace/compare.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/roofline.hpp"
#include "attn_trace/size_text.hpp"
#include "attn_trace/tolerances.hpp"
#include "grad_reference.hpp"

namespace attn_trace {

namespace {

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// The implementations bench knows, each an operation of a backend.
struct Implementation {
    const char* backend;
    Operation op;
};
Implementation implementation(const std::string& impl, BenchMode mode) {
    if (impl == "naive") return {"cpu", Operation::unfused_attention};
    if (mode == BenchMode::backward) return {impl == "fast" ? "cpu" : "cuda", Operation::fused_attention_backward};
    if (impl == "fast") return {"cpu", mode == BenchMode::decode ? Operation::decode_attention : Operation::fused_attention};
    if (impl == "cuda") return {"cuda", Operation::fused_attention};
    throw InputError(fmt::format("unknown implementation '{}': expected naive, fast or cuda", impl));
}

// The rows the CPU reference computes for every setting: the first, middle and
// last `reference_rows` queries (the causal mask reads few keys at the start and
// all at the end). pipeline_full_rows in plain loops costs O(rows · n · d), so
// the judge stays affordable at n = 65 536.
constexpr std::size_t reference_rows = 8;
std::vector<QueryRows> reference_blocks(std::size_t n) {
    if (n <= 3 * reference_rows) return {{0, n}};
    return {{0, reference_rows}, {n / 2 - reference_rows / 2, reference_rows}, {n - reference_rows, reference_rows}};
}

class BenchRunner {
public:
    BenchRunner(const BenchConfig& config, const BenchProgress& progress) : c_(config), progress_(progress) {}

    BenchRun run() {
        if (c_.heads % c_.kv_head_count() != 0)
            throw InputError(fmt::format("⟦heads⟧ {} is not a multiple of ⟦kv_heads⟧ {}: each KV head serves the same number of query heads",
                                         c_.heads, c_.kv_head_count()));
        settings_ = bench_settings(c_);
        const bool decoding = std::any_of(settings_.begin(), settings_.end(), [](const BenchSetting& s) { return s.mode == BenchMode::decode; });
        if (decoding && c_.causal) throw InputError("⟦causal⟧ has no meaning for a decode step (⟦cache⟧): its one query reads every cached key");
        if (c_.backward && std::find(c_.impls.begin(), c_.impls.end(), "naive") != c_.impls.end())
            throw InputError("⟦grad⟧ times the fused backward (fast, or cuda where it has one): there is no unfused backward kernel to time as naive");
        refuse_over_budget();
        BenchRun run;
        if (c_.measure_roofs) run.roofs = measure_roofs(c_.threads);
        for (std::size_t s = 0; s < settings_.size(); ++s) run_setting(s, run);
        return run;
    }

private:
    // Before anything is measured or allocated: the first setting and implementation whose
    // estimate (bench_memory) passes the budget stops the run, with the estimate's parts.
    // An implementation that will only be reported unavailable (no such backend here, or it
    // has no such operation) or skipped (naive past its score budget) holds only the
    // setting's inputs, which are drawn when another implementation of the setting runs.
    void refuse_over_budget() const {
        for (const BenchSetting& setting : settings_)
            for (const auto& impl : c_.impls) {
                const bool decoding = setting.mode == BenchMode::decode;
                BenchMemory memory = bench_memory(c_, setting, impl);
                if (!runs(impl, setting)) memory = BenchMemory{memory.inputs, 0, 0, 0};
                if (memory.total() <= c_.memory_budget_bytes) continue;
                throw InputError(fmt::format(
                    "the {} setting {} = {} with {} would hold about {} (inputs {}, the kernel's buffers {}, results {}, reference rows {}); "
                    "the limit is {} (⟦max_memory⟧): lower {}, ⟦heads⟧, ⟦kv_heads⟧ or ⟦dk⟧{}, or raise ⟦max_memory⟧",
                    bench_mode_name(setting.mode), decoding ? "T" : "n", setting.length, impl, size_text(memory.total()), size_text(memory.inputs),
                    size_text(memory.kernel), size_text(memory.results), size_text(memory.reference), size_text(c_.memory_budget_bytes),
                    decoding ? "⟦cache⟧" : "⟦n⟧", setting.mode == BenchMode::backward ? " (or ⟦threads⟧, ⟦block_q⟧ and ⟦block_k⟧)" : ""));
            }
    }

    // Whether `impl` will compute `setting`, as far as is known before its inputs exist.
    bool runs(const std::string& impl, const BenchSetting& setting) const {
        if (impl == "naive" && naive_score_bytes(c_, setting.queries(), setting.length) > c_.naive_budget_bytes)
            return false;
        const Implementation which = implementation(impl, setting.mode);
        std::string why;
        try {
            return make_backend(which.backend)->supports(which.op, nullptr, why);
        } catch (const BackendUnavailable&) {
            return false;
        }
    }

    bool decode() const { return mode_ == BenchMode::decode; }
    bool backward() const { return mode_ == BenchMode::backward; }

    // Q, K, V as `attn-trace random` draws them (in float32 for --dtype f32, so
    // every implementation and the reference read the same numbers), and a
    // problem holding them for the reference. Decode: one query row over `length` cached rows.
    Problem setting_problem(std::size_t length) const {
        const std::size_t n = decode() ? 1 : length;
        auto normal_matrix = [&](std::uint64_t seed, std::size_t rows, int heads) {
            Matrix x(rows, static_cast<std::size_t>(heads) * c_.d_k);
            PortableRandom generator(seed);
            draw(generator, RandomDraw{}, x.data());
            if (c_.dtype == Dtype::f32)
                for (double& value : x.data()) value = static_cast<float>(value);
            return x;
        };
        Problem p;
        p.file = decode() ? fmt::format("bench decode T = {}", length) : fmt::format("bench n = {}", n);
        p.Q = normal_matrix(c_.seed, n, c_.heads);
        p.K = normal_matrix(c_.seed + 1, length, c_.kv_head_count());
        p.V = normal_matrix(c_.seed + 2, length, c_.kv_head_count());
        p.heads = c_.heads;
        p.kv_heads = c_.kv_head_count();
        p.n = n;
        p.m = length;
        p.d_k = p.d_v = c_.d_k;
        p.empty_rows = EmptyRows::zero;
        if (c_.causal) p.masks.push_back(parse_mask_string("causal", "bench"));
        return p;
    }

    template <typename T>
    void dump(const std::string& name, const Matrix& x) const {
        const std::vector<T> values(x.data().begin(), x.data().end());
        const std::string path = c_.dump_dir + "/" + name;
        std::ofstream out(path, std::ios::binary);
        if (!out || !out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T))))
            throw InputError(fmt::format("cannot write the dump file {}", path));
    }
    void dump(const std::string& name, const Matrix& x) const {
        if (c_.dtype == Dtype::f32) dump<float>(name, x);
        else dump<double>(name, x);
    }

    // The dump files' prefix: n1024_ (forward), decode32768_ (decode), grad1024_ (backward).
    std::string dump_prefix(std::size_t length) const { return fmt::format("{}{}_", decode() ? "decode" : backward() ? "grad" : "n", length); }

    // The backward's upstream gradient: (n, H·d_v) from the generator with seed + 3, in float32 for f32.
    Matrix upstream(std::size_t n) const {
        Matrix d(n, static_cast<std::size_t>(c_.heads) * c_.d_k);
        PortableRandom generator(c_.seed + 3);
        draw(generator, RandomDraw{}, d.data());
        if (c_.dtype == Dtype::f32)
            for (double& value : d.data()) value = static_cast<float>(value);
        return d;
    }

    // One timed backward: grad_q judged on the reference rows (grad_reference.hpp).
    void time_backward(std::size_t setting, const Problem& p, const Backend& backend, const AttentionCall& call, BenchResult& result) {
        const Matrix d_out = upstream(p.n);
        AttentionGradients g;
        time_runs(setting, result.impl, result, [&] { g = attend_backward(backend, call, d_out); });
        result.score_bytes = g.stats.score_bytes_held;
        if (!c_.dump_dir.empty()) {
            dump(dump_prefix(p.n) + "do.bin", d_out);
            for (const auto& [name, x] : {std::pair{"grad_q", &g.grad_q}, {"grad_k", &g.grad_k}, {"grad_v", &g.grad_v}})
                dump(dump_prefix(p.n) + fmt::format("{}_{}.bin", name, result.impl), *x);
        }
        std::vector<std::pair<QueryRows, Matrix>> reference;
        for (const QueryRows rows : reference_blocks(p.n)) reference.emplace_back(rows, reference_grad_q_rows(p, RunOptions{c_.dtype, "cpu"}, d_out, rows));
        judge(g.grad_q, reference, result, "cpu reference grad_q");
    }

    // The row of `impl` at `setting`, marked unavailable or skipped when it will not run (call:
    // the setting's inputs, or null before they are drawn); `backend` gets the backend that will.
    BenchResult result_row(const std::string& impl, const BenchSetting& setting, const AttentionCall* call, std::unique_ptr<Backend>& backend) const {
        const std::size_t n = setting.queries(), length = setting.length;
        BenchResult result;
        result.mode = setting.mode;
        result.n = n;
        result.m = length;
        result.impl = impl;
        result.work = bench_work(c_, setting.mode, length);
        const Implementation which = implementation(impl, setting.mode);
        std::string why;
        try {
            backend = make_backend(which.backend);
        } catch (const BackendUnavailable& error) {
            why = error.marked();  // the caller words its settings
        }
        if (backend && !backend->supports(which.op, call, why)) why = fmt::format("the {} backend: {}", backend->name(), why);
        if (!why.empty()) {
            result.status = "unavailable";
            result.reason = why;
        } else if (which.op == Operation::unfused_attention && naive_score_bytes(c_, n, length) > c_.naive_budget_bytes) {
            result.status = "skipped";
            result.reason = fmt::format("one (n, m) score matrix would take {}, over the {} budget", size_text(naive_score_bytes(c_, n, length)),
                                        size_text(c_.naive_budget_bytes, ByteUnit::GiB));
        }
        return result;
    }

    void run_setting(std::size_t setting, BenchRun& run) {
        mode_ = settings_[setting].mode;
        const std::size_t length = settings_[setting].length;
        // Nothing to time (every implementation unavailable or skipped): said without drawing
        // the inputs, which at n = 1 048 576 took 16 s and 1.5 GB for one line of "unavailable".
        const auto will_run = [&](const std::string& impl) { return runs(impl, settings_[setting]); };
        if (c_.dump_dir.empty() && std::none_of(c_.impls.begin(), c_.impls.end(), will_run)) {
            for (const auto& impl : c_.impls) {
                std::unique_ptr<Backend> backend;
                run.results.push_back(result_row(impl, settings_[setting], nullptr, backend));
            }
            return;
        }
        const Problem p = setting_problem(length);
        const std::size_t n = p.n;
        if (!c_.dump_dir.empty()) {
            dump(dump_prefix(length) + "q.bin", *p.Q);
            dump(dump_prefix(length) + "k.bin", *p.K);
            dump(dump_prefix(length) + "v.bin", *p.V);
        }
        // The decode kernel reads a float cache as it is: rounding the doubles on every
        // call would add the cache's own traffic to what is measured.
        std::vector<float> q32, k32, v32;
        if (decode() && c_.dtype == Dtype::f32) {
            q32.assign(p.Q->data().begin(), p.Q->data().end());
            k32.assign(p.K->data().begin(), p.K->data().end());
            v32.assign(p.V->data().begin(), p.V->data().end());
        }
        KeyMask causal;
        if (c_.causal) {  // query i reads keys 0 … i (run() refuses it for decode steps)
            causal.first_key.assign(n, 0);
            for (std::size_t i = 0; i < n; ++i) causal.end_key.push_back(i + 1);
        }
        AttentionCall call;
        call.q = &*p.Q;
        call.k = &*p.K;
        call.v = &*p.V;
        call.d_k = call.d_v = c_.d_k;
        call.heads = c_.heads;
        call.kv_heads = c_.kv_head_count();
        if (!q32.empty()) {
            call.q_f32 = q32.data();
            call.k_f32 = k32.data();
            call.v_f32 = v32.data();
        }
        call.scale = p.scale_factor();
        call.mask = c_.causal ? &causal : nullptr;
        call.dtype = c_.dtype;
        call.threads = c_.threads;
        call.block_q = c_.block_q;
        call.block_k = c_.block_k;

        std::vector<std::pair<QueryRows, Matrix>> reference;  // computed once, on the first implementation that ran
        for (const auto& impl : c_.impls) {
            std::unique_ptr<Backend> backend;
            BenchResult result = result_row(impl, settings_[setting], &call, backend);
            const Operation op = implementation(impl, mode_).op;
            if (result.status != "ok") {
                run.results.push_back(std::move(result));
                continue;
            }
            if (backward()) {
                time_backward(setting, p, *backend, call, result);
                if (run.roofs) result.roofline = place_on_roofline(result.work.flops, result.work.bytes, result.gflops, *run.roofs, c_.dtype);
            } else {
                AttentionResult out;
                time_runs(setting, impl, result, [&] { out = attend(*backend, op, call); });
                result.score_bytes = out.stats.score_bytes_held;
                if (!c_.dump_dir.empty()) dump(dump_prefix(length) + fmt::format("out_{}.bin", impl), out.out);
                if (reference.empty()) reference = reference_outputs(p);
                judge(out.out, reference, result);
                if (run.roofs) result.roofline = place_on_roofline(result.work.flops, result.work.bytes, result.gflops, *run.roofs, c_.dtype);
                result.cache_gb_per_s = result.work.cache_bytes / (result.median_ms * 1e6);
            }
            run.results.push_back(std::move(result));
        }
    }

    // The CPU reference pipeline on reference_blocks: out (or concat) rows, as pipeline_full computes them.
    std::vector<std::pair<QueryRows, Matrix>> reference_outputs(const Problem& p) const {
        std::vector<std::pair<QueryRows, Matrix>> outputs;
        for (const QueryRows rows : reference_blocks(p.n)) {
            const Trace trace = pipeline_full_rows(p, RunOptions{c_.dtype, "cpu"}, 0, rows);
            const Step* out = c_.heads > 1 ? trace.find(StepName::concat, std::nullopt, std::nullopt, std::nullopt, std::nullopt)
                                           : trace.find(StepName::out, 0, std::nullopt, std::nullopt, std::nullopt);
            outputs.emplace_back(rows, out->values);
        }
        return outputs;
    }

    // The largest difference from the reference over its rows (compare_matrices: the one judge).
    static void judge(const Matrix& out, const std::vector<std::pair<QueryRows, Matrix>>& reference, BenchResult& result,
                      const char* judged_by = "cpu reference") {
        double worst = 0;
        std::size_t rows = 0;
        for (const auto& [block, want] : reference) {
            const Matrix got = block_rows(out, block);
            worst = std::max(worst, compare_matrices(got, want, tolerances::same_math_f32).max_error);
            rows += block.count;
        }
        result.max_abs_diff = worst;
        result.compared_with = fmt::format("{} ({} row{})", judged_by, rows, rows == 1 ? "" : "s");
    }

    static Matrix block_rows(const Matrix& x, QueryRows rows) {
        Matrix out(rows.count, x.cols());
        for (std::size_t i = 0; i < rows.count; ++i) std::copy(x.row(rows.first + i), x.row(rows.first + i) + x.cols(), out.row(i));
        return out;
    }

    // Warm-up runs, then timed repeats of `once`: median, min–max and GFLOP/s.
    template <typename Once>
    void time_runs(std::size_t setting, const std::string& impl, BenchResult& result, Once once) {
        const int runs = c_.warmup + c_.repeats;
        for (int run = 0; run < runs; ++run) {
            if (progress_) progress_(setting, settings_.size(), impl, run + 1, runs);
            const auto start = std::chrono::steady_clock::now();
            once();
            const auto stop = std::chrono::steady_clock::now();
            if (run >= c_.warmup) result.times_ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
        }
        result.median_ms = median(result.times_ms);
        result.min_ms = *std::min_element(result.times_ms.begin(), result.times_ms.end());
        result.max_ms = *std::max_element(result.times_ms.begin(), result.times_ms.end());
        result.gflops = result.work.flops / (result.median_ms * 1e6);
    }

    const BenchConfig& c_;
    const BenchProgress& progress_;
    std::vector<BenchSetting> settings_;
    BenchMode mode_ = BenchMode::forward;  // the setting's running now
};

}  // namespace

double attention_flops(std::size_t n, std::size_t m, std::size_t d_k, int heads, bool causal) {
    // Q Kᵀ and P V: 2·n·m·d_k each, per head; a causal mask leaves about half.
    const double full = 4.0 * static_cast<double>(n) * static_cast<double>(m) * static_cast<double>(d_k) * heads;
    return causal ? full / 2 : full;
}

std::string bench_mode_name(BenchMode mode) {
    switch (mode) {
        case BenchMode::decode: return "decode";
        case BenchMode::backward: return "backward";
        case BenchMode::forward: break;
    }
    return "forward";
}

std::vector<BenchSetting> bench_settings(const BenchConfig& c) {
    std::vector<BenchSetting> settings;
    for (const std::size_t n : c.lengths) settings.push_back({c.backward ? BenchMode::backward : BenchMode::forward, n});
    for (const std::size_t t : c.cache_lengths) settings.push_back({BenchMode::decode, t});
    return settings;
}

BenchWork bench_work(const BenchConfig& c, BenchMode mode, std::size_t length) {
    const double element = c.dtype == Dtype::f64 ? 8 : 4;
    const double heads = c.heads, kv_heads = c.kv_head_count(), d = static_cast<double>(c.d_k), t = static_cast<double>(length);
    BenchWork work;
    switch (mode) {
        case BenchMode::forward:  // Q and out (n, H·d), K and V (n, H_kv·d)
            work.flops = attention_flops(length, length, c.d_k, c.heads, c.causal);
            work.bytes = (2 * t * heads * d + 2 * t * kv_heads * d) * element;
            break;
        case BenchMode::backward:
            // The timed run is the forward (4·n·m·d_k per head) and the backward's five products
            // (10·n·m·d_k: S again, dV, dP, dK, dQ), half of each when causal. Q, dO, out and dQ
            // (n, H·d); K, V, dK and dV (n, H_kv·d).
            work.flops = attention_flops(length, length, c.d_k, c.heads, c.causal) * 14 / 4;
            work.bytes = (4 * t * heads * d + 4 * t * kv_heads * d) * element;
            break;
        case BenchMode::decode:  // q and out (H·d), the cache (T, H_kv·(d_k + d_v))
            work.flops = attention_flops(1, length, c.d_k, c.heads, false);
            work.cache_bytes = 2 * t * kv_heads * d * element;
            work.bytes = work.cache_bytes + 2 * heads * d * element;
            break;
    }
    return work;
}

BenchRun run_bench(const BenchConfig& config, const BenchProgress& progress) {
    return BenchRunner(config, progress).run();
}

}  // namespace attn_trace
