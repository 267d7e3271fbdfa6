// Fuzz target 4: `explain`'s input: a target as the user writes it on the first
// line ("scores[0,2]", "weights[1]"), then a problem. A small problem that loads
// is explained from run's trace, decode's step t = the row, and tiled's tile
// (the row's block, key tile 0), in every format.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn_trace/errors.hpp"
#include "attn_trace/explain.hpp"
#include "attn_trace/problem.hpp"
#include "fuzz_limits.hpp"

namespace {

using namespace attn_trace;

ExplainTarget parse_target(const std::string& spec) {
    return spec.find(',') != std::string::npos ? parse_cell_spec(spec) : parse_row_spec(spec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::size_t newline = text.find('\n');
    if (newline == std::string::npos) return 0;
    try {
        const ExplainTarget target = parse_target(text.substr(0, newline));
        const std::string problem_text = text.substr(newline + 1);
        const Problem problem = parse_problem(problem_text, "fuzz.json", fuzz::allow_nonfinite(problem_text));
        if (!fuzz::small_enough(problem)) return 0;
        ExplainSource decode_step, tile;
        decode_step.t = target.row;
        tile.tile = std::array<std::size_t, 2>{target.row / tile.tiled.block_q, 0};
        for (Format format : formats_of(for_explain))
            for (const ExplainSource& source : {ExplainSource{}, decode_step, tile}) {
                try {
                    (void)explain_problem(problem, RunOptions{}, target, ExplainOptions{0, 0, 4, format}, source);
                } catch (const Error&) {
                }
            }
    } catch (const Error&) {
    }
    return 0;
}
