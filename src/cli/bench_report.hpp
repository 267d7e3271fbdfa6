#pragma once
// The bench's results as a table for people, JSON, CSV, or an SVG chart of time
// against n on log-log axes.
#include <string>
#include <vector>

#include "attn_trace/bench.hpp"

namespace attn_trace::cli {

std::string bench_text(const BenchConfig& config, const std::vector<BenchResult>& results);
std::string bench_json(const BenchConfig& config, const std::vector<BenchResult>& results);
std::string bench_csv(const BenchConfig& config, const std::vector<BenchResult>& results);
std::string bench_svg(const BenchConfig& config, const std::vector<BenchResult>& results);

}  // namespace attn_trace::cli
