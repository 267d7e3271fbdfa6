#pragma once
// What the binding's files share (docs/PYTHON.md): a problem's source and overrides as
// the package passes them, and the names of formats and maths styles checked as the
// CLI checks them.
#include <cstdint>
#include <optional>
#include <string>

#include <nanobind/nanobind.h>

#include "attn_trace/format_table.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/trace_commands.hpp"

namespace attn_trace {

ProblemSource source_of(const std::optional<std::string>& path, const std::optional<std::string>& text, const std::string& label, bool allow_nonfinite,
                        const ModelInMemory* model = nullptr);
// A format the commands in `commands` write (format_table.hpp), else InputError.
Format format_of(const std::string& name, unsigned commands);
MathStyle math_of(const std::string& name);
Problem problem_of(const std::optional<std::string>& path, const std::optional<std::string>& text, const std::string& label, bool allow_nonfinite,
                   const std::optional<std::string>& mask, const std::optional<std::string>& scale, const std::optional<std::string>& empty_rows,
                   const std::optional<std::string>& dtype, std::optional<bool> train, const ModelInMemory* model = nullptr);

template <class Request>
Request request_of(const std::string& backend, std::uint64_t max_memory) {
    Request request;
    request.backend = backend;
    request.budget.memory = max_memory;
    return request;
}

// The binding of the commands whose result is a report: cost, variance, precision,
// random, and a problem loaded once (report_bindings.cpp).
void bind_reports(nanobind::module_& m);

}  // namespace attn_trace

// The arguments every trace command takes: where the problem comes from and what replaces its settings.
#define ATTN_TRACE_PROBLEM_ARGS                                                                                                                    \
    const std::optional<std::string>&path, const std::optional<std::string>&text, const std::string &label, bool allow_nonfinite,                \
        const std::optional<std::string>&mask, const std::optional<std::string>&scale, const std::optional<std::string>&empty_rows,              \
        const std::optional<std::string>&dtype, std::optional<bool> train, const std::string &backend, std::uint64_t max_memory,                 \
        const ModelInMemory *model

#define ATTN_TRACE_PROBLEM_NAMES                                                                                                                  \
    "path"_a = nb::none(), "text"_a = nb::none(), "label"_a = "<problem>", "allow_nonfinite"_a = false, "mask"_a = nb::none(), "scale"_a = nb::none(), \
    "empty_rows"_a = nb::none(), "dtype"_a = nb::none(), "train"_a = nb::none(), "backend"_a = "cpu", "max_memory"_a = Budget{}.memory,          \
    "model"_a = nb::none()
#define ATTN_TRACE_PROBLEM problem_of(path, text, label, allow_nonfinite, mask, scale, empty_rows, dtype, train, model)

