#pragma once
// The permutation experiment (docs/FAMILY.md#the-permutation-experiment, `attn-trace
// permute`): run a problem and the same problem with its token rows shuffled by P, and
// show out(P·X) beside P·out(X). Attention without positions treats its input as a set:
// the two are equal to rounding, unless something ties a token to its place (a causal,
// window or sparse mask, RoPE at fixed positions, ALiBi, a padding or per-position mask)
// — the trace names each such thing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

struct PermuteOptions {
    std::vector<std::size_t> perm;  // row i of the permuted input is row perm[i] of the original
    bool source = false;            // permute the source rows of cross-attention instead of the queries
};

// "2,0,1" -> {2, 0, 1}, checked to be a permutation of 0 … count − 1 (InputError
// naming ⟦perm⟧ and the repeated, missing or out-of-range index otherwise).
std::vector<std::size_t> parse_permutation(const std::string& text, std::size_t count);
// A uniformly drawn permutation of 0 … count − 1 (Fisher–Yates, the portable generator).
std::vector<std::size_t> random_permutation(std::size_t count, std::uint64_t seed);

// The rows the experiment permutes: n queries, or with `source` the m source rows.
// Throws InputError for `source` on self-attention.
std::size_t permuted_rows(const Problem& problem, bool source);

// The problem with its rows permuted: X (each sequence), or Q, K and V given
// directly, with tokens and explicit positions; with `source`, X_source (or K and
// V) with source_tokens and source_positions. Masks and lengths stay put.
Problem permuted_problem(const Problem& problem, const PermuteOptions& permute);

// What ties rows to their places in this problem ("a causal mask", "RoPE at the
// default positions", ...): empty when the theory says the outputs only move (or,
// with `source`, do not move at all).
std::vector<std::string> symmetry_breakers(const Problem& problem, bool source);

// Steps out, out_of_permuted and (queries only) permuted_out, per head and for
// the layer's output (final, or concat); the number max_abs_diff_equivariance
// (max_abs_diff_invariance with `source`); a "permutation" note with the verdict.
Trace permutation_trace(const Problem& problem, const RunOptions& options, const PermuteOptions& permute);

}  // namespace attn_trace
