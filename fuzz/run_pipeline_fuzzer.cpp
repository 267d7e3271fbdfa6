// Fuzz target 2: the whole `run` pipeline on what the loader accepts. A problem
// that loads and is small (fuzz_limits.hpp) goes through the full trace in f64
// and f32, decode, tiled, the fast path, and every renderer; each may refuse it
// with an attn_trace::Error (an option it does not support), nothing else.
// It is differential too: where the full trace (f64) and another path both accept a
// problem, their `out` of every head and sequence must agree to rounding (decode's
// against the full trace with the causal mask it implies), or the input is a finding:
// the full trace is the judge of every other path (docs/RELIABILITY.md#fuzzing).
// Each input also draws a mask option over the problem's own masks, as a command's
// ⟦mask⟧ replaces them (docs/PROBLEM.md#masks): with the model problems of
// fuzz/seeds/run_pipeline, the class of fault that `--mask none` on a model directory's
// problem once was (an internal error) is found by the fuzzer.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "attn_trace/compare.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/problem_overrides.hpp"
#include "attn_trace/render.hpp"
#include "fuzz_limits.hpp"

namespace {

using namespace attn_trace;

// Runs one pipeline; a refusal (InputError and kin) is an answer, not a finding.
template <typename Pipeline>
void attempt(Pipeline&& pipeline) {
    try {
        pipeline();
    } catch (const Error&) {
    }
}

// The largest finite magnitude among a trace's steps of one name (every head).
double largest(const Trace& trace, StepName name) {
    double most = 0;
    for (const Step& step : trace.steps)
        if (step.name == name)
            for (double x : step.values.data())
                if (std::isfinite(x)) most = std::max(most, std::fabs(x));
    return most;
}

// Every `out` of the full trace (no t, no tile) against the other path's of the same
// head and sequence. The tolerance follows the numbers: the paths sum in other orders,
// so a score may move by a few ulps of the largest |q|·|k| products, which moves a
// weight by as much and an output by that times the largest |v| — far below what a
// mask, a scale or a head taken wrongly changes.
void require_same_outputs(const Trace& full, const Trace& other, const char* path) {
    const Step* q = full.find(StepName::q, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
    const double products = largest(full, StepName::q) * largest(full, StepName::k) * static_cast<double>(q ? q->values.cols() : 1);
    const double scores = std::max({largest(full, StepName::scores), largest(full, StepName::masked), products});
    const double atol = 1e-9 * (1 + largest(full, StepName::v) + largest(full, StepName::out)) * (1 + scores);
    for (const Step& want : full.steps) {
        if (want.name != StepName::out || want.t || want.tile) continue;
        const Step* got = other.find(StepName::out, want.head, want.batch, std::nullopt, std::nullopt);
        if (!got) continue;  // a path that keeps another set of steps
        const Comparison c = compare_matrices(got->values, want.values, {atol, 1e-9});
        if (!c.passed()) {
            std::fprintf(stderr, "%s differs from the full trace: out head %d batch %d [%zu, %zu]: want %.17g, got %.17g (atol %g)\n", path,
                         want.head.value_or(0), want.batch.value_or(0), c.worst_row, c.worst_col, c.worst_want, c.worst_got, atol);
            std::abort();
        }
    }
}

void render_all(const Trace& trace) {
    RenderOptions options;
    options.full = true;
    for (Format format : formats_of(for_trace)) attempt([&] { (void)render(trace, format, options); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Problem problem;
    try {
        problem = parse_problem(text, "fuzz.json", fuzz::allow_nonfinite(text));
    } catch (const Error&) {
        return 0;
    }
    if (!fuzz::small_enough(problem)) return 0;
    // The mask option comes from the input's length, so that a saved input replays the same way.
    static const char* const mask_options[] = {nullptr, "none", "causal", "window:2", R"(["causal", {"window": {"left": 1, "right": 0}}])"};
    if (const char* mask = mask_options[size / 12 % 5]) {
        ProblemOverrides overrides;
        overrides.mask = mask;
        try {
            apply_overrides(problem, overrides);
        } catch (const Error&) {
            return 0;
        }
    }
    // The block sizes come from the input's length, so that a saved input replays the same way.
    const TiledOptions tiled{1 + size % 3, 1 + size / 3 % 4};
    for (const Dtype dtype : {Dtype::f64, Dtype::f32}) {
        const RunOptions run{dtype, "cpu"};
        std::optional<Trace> full;
        attempt([&] {
            full = pipeline_full(problem, run);
            render_all(*full);
        });
        // The judge's verdict is taken in f64 only: f32 paths differ from each other by
        // f32 rounding, which a fixed tolerance cannot tell from a wrong mask.
        const auto judge = [&](const Trace& other, const char* path) {
            if (full && dtype == Dtype::f64) require_same_outputs(*full, other, path);
        };
        attempt([&] {
            const Trace decode = pipeline_decode(problem, run, DecodeOptions{});
            // Decoding is causal by construction (the cache holds only the past): its
            // judge is the full trace with the causal-bottom-right mask added.
            if (dtype == Dtype::f64) {
                Problem causal = problem;
                causal.masks.push_back(parse_mask_string("causal-bottom-right", "fuzz"));
                require_same_outputs(pipeline_full(causal, run), decode, "decode");
            }
            render_all(decode);
        });
        attempt([&] {
            const Trace tiles = pipeline_tiled(problem, run, tiled);
            judge(tiles, "tiled");
            render_all(tiles);
        });
        attempt([&] {
            const Trace fast = pipeline_fast(problem, run, FastPathOptions{2, tiled.block_q, tiled.block_k, "fuzz"});
            judge(fast, "the fast path");
            render_all(fast);
        });
    }
    return 0;
}
