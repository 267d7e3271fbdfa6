// attn_trace._core: the Python front's binding over the commands layer
// (docs/PYTHON.md). Thin on purpose: a request in, the commands layer's result out, and
// the result's steps as arrays. What Python adds (problems from dicts and arrays, the
// PyTorch layout, notebooks) lives in python/attn_trace/.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <new>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "attn_trace/check_command.hpp"
#include "attn_trace/cli_words.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/exercise.hpp"
#include "attn_trace/explain.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/sdpa_command.hpp"
#include "attn_trace/format_table.hpp"
#include "attn_trace/trace_commands.hpp"
#include "attn_trace/version.hpp"
#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace attn_trace {

ProblemSource source_of(const std::optional<std::string>& path, const std::optional<std::string>& text, const std::string& label, bool allow_nonfinite,
                        const ModelInMemory* model) {
    if (path.has_value() == text.has_value()) throw InputError("a problem is a path or JSON text: give one");
    ProblemSource source{.path = path.value_or(""), .text = text, .label = label, .allow_nonfinite = allow_nonfinite, .model = model};
    return source;
}

Format format_of(const std::string& name, unsigned commands) {
    const auto format = find_format(name);
    if (!format || !accepts(commands, *format))
        throw InputError(fmt::format("⟦format⟧ {}: expected one of {}", name, fmt::join(formats_of(commands), ", ")));
    return *format;
}

MathStyle math_of(const std::string& name) {
    const auto& names = math_style_names();
    const auto found = std::find(names.begin(), names.end(), name);
    if (found == names.end()) throw InputError(fmt::format("⟦math⟧ {}: expected one of {}", name, fmt::join(names, ", ")));
    return static_cast<MathStyle>(found - names.begin());
}

Problem problem_of(const std::optional<std::string>& path, const std::optional<std::string>& text, const std::string& label, bool allow_nonfinite,
                   const std::optional<std::string>& mask, const std::optional<std::string>& scale, const std::optional<std::string>& empty_rows,
                   const std::optional<std::string>& dtype, std::optional<bool> train, const ModelInMemory* model) {
    return load_with_overrides(source_of(path, text, label, allow_nonfinite, model), ProblemOverrides{mask, scale, empty_rows, dtype, train});
}

namespace {

// Every error reaches Python as the package's own class for its exit code, with the CLI's
// message: ProblemError (2), BackendUnavailable (3), InternalError (4).
void raise_as(const char* name, const std::string& message) {
    nb::object error_class = nb::module_::import_("attn_trace._errors").attr(name);
    PyErr_SetString(error_class.ptr(), message.c_str());
}

void translate_errors(const std::exception_ptr& error, void*) {
    try {
        std::rethrow_exception(error);
    } catch (const Error& e) {
        raise_as(e.exit_code() == 3 ? "BackendUnavailable" : e.exit_code() == 2 ? "ProblemError" : "InternalError", cli_message(e));
    } catch (const std::bad_alloc&) {
        raise_as("ProblemError", "out of memory (the problem is too large for this machine; max_memory sets the budget)");
    }
}

// A step's values as a float64 array of its own (the trace may go before the array does).
nb::ndarray<nb::numpy, double, nb::ndim<2>> values_of(const Matrix& values) {
    auto* copy = new std::vector<double>(values.data());
    nb::capsule owner(copy, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
    return nb::ndarray<nb::numpy, double, nb::ndim<2>>(copy->data(), {values.rows(), values.cols()}, owner);
}

OutputRequest output_of(const std::string& format, const std::vector<std::string>& steps, std::optional<int> head, std::optional<int> batch, int precision,
                        bool full, bool heatmap, const std::optional<std::string>& math, bool color, std::uint64_t max_output) {
    OutputRequest o;
    o.format = format_of(format, for_trace);
    o.steps = steps;
    o.head = head;
    o.batch = batch;
    o.precision = precision;
    o.full = full;
    o.heatmap = heatmap;
    o.color = color;
    if (math) o.math = math_of(*math);
    o.budget.output = max_output;
    return o;
}

void bind_result(nb::module_& m) {
    nb::class_<Step>(m, "Step")
        .def_prop_ro("name", [](const Step& s) { return shown_name(s); })
        .def_prop_ro("step", [](const Step& s) { return step_name(s.name); })
        .def_prop_ro("symbol", [](const Step& s) { return std::string(step_symbol(s.name)); })
        .def_ro("formula", &Step::formula)
        .def_ro("head", &Step::head)
        .def_ro("batch", &Step::batch)
        .def_ro("t", &Step::t)
        .def_ro("tile", &Step::tile)
        .def_ro("row_labels", &Step::row_labels)
        .def_ro("column_labels", &Step::column_labels)
        .def_prop_ro("shape", [](const Step& s) { return std::array<std::size_t, 2>{s.values.rows(), s.values.cols()}; })
        .def_prop_ro("values", [](const Step& s) { return values_of(s.values); }, nb::rv_policy::move);
    nb::class_<TraceResult>(m, "TraceResult")
        .def_prop_ro("command", [](const TraceResult& r) { return r.trace.command; })
        .def_prop_ro("steps", [](const TraceResult& r) { return r.trace.steps; }, nb::rv_policy::copy)
        .def_prop_ro("notes", [](const TraceResult& r) {
            std::vector<std::string> notes;
            for (const Note& note : r.trace.notes) notes.push_back(note_text(note));
            return notes;
        })
        .def_prop_ro("batch", [](const TraceResult& r) { return r.problem.batch; })
        .def_prop_ro("heads", [](const TraceResult& r) { return r.problem.heads; })
        .def_prop_ro("kv_heads", [](const TraceResult& r) { return r.problem.kv_heads; })
        .def_prop_ro("n", [](const TraceResult& r) { return r.problem.n; })
        .def_prop_ro("m", [](const TraceResult& r) { return r.problem.m; })
        .def_prop_ro("lengths", [](const TraceResult& r) { return r.problem.lengths; })
        .def_prop_ro("dtype", [](const TraceResult& r) { return dtype_name(r.run.dtype); })
        .def_prop_ro("tokens", [](const TraceResult& r) { return r.problem.tokens; })
        .def(
            "render",
            [](const TraceResult& r, const std::string& format, const std::vector<std::string>& steps, std::optional<int> head, std::optional<int> batch,
               int precision, bool full, bool heatmap, const std::optional<std::string>& math, bool color, std::uint64_t max_output, bool standalone) {
                OutputRequest output = output_of(format, steps, head, batch, precision, full, heatmap, math, color, max_output);
                output.standalone = standalone;
                return render_trace_output(r, output);
            },
            "format"_a = "text", "steps"_a = std::vector<std::string>{}, "head"_a = nb::none(), "batch"_a = nb::none(), "precision"_a = 4, "full"_a = false,
            "heatmap"_a = false, "math"_a = nb::none(), "color"_a = false, "max_output"_a = Budget{}.output, "standalone"_a = false)
        .def(
            "svg",
            [](const TraceResult& r, const std::vector<std::string>& steps, std::optional<int> head, std::optional<int> batch) {
                return render_trace_svg(r, output_of("text", steps, head, batch, 4, false, false, std::nullopt, false, Budget{}.output));
            },
            "steps"_a = std::vector<std::string>{}, "head"_a = nb::none(), "batch"_a = nb::none());
}

void bind_check(nb::module_& m) {
    nb::class_<CheckReport>(m, "CheckReport")
        .def_prop_ro("passed", &CheckReport::passed)
        .def_prop_ro("failed", &CheckReport::failed)
        .def_prop_ro("exit_code", &CheckReport::exit_code)
        .def_prop_ro("text", [](const CheckReport& r) {
            std::string text;
            for (const CheckedFile& file : r.files) text += render_checked_file(file);
            return text + render_check_closing(r);
        })
        .def_prop_ro("files", [](const CheckReport& r) {
            nb::list files;
            for (const CheckedFile& f : r.files) {
                nb::dict file;
                file["file"] = f.file;
                file["error"] = f.error.empty() ? nb::object(nb::none()) : nb::cast(cli_words(f.error));
                nb::list failures;
                if (f.result)
                    for (const StepCheck& step : f.result->steps)
                        if (!step.passed()) {
                            nb::dict failure;
                            failure["step"] = step.label;
                            failure["found"] = step.found;
                            failure["failed"] = step.comparison.failed;
                            failure["compared"] = step.comparison.compared;
                            failure["max_error"] = step.comparison.max_error;
                            failures.append(failure);
                        }
                file["passed"] = f.result && f.result->passed();
                file["failures"] = failures;
                std::vector<std::string> notes;
                if (f.result)
                    for (const std::string& note : f.result->notes) notes.push_back(cli_words(note));
                file["notes"] = notes;
                files.append(file);
            }
            return files;
        });
}

using Array4 = nb::ndarray<const double, nb::ndim<4>, nb::c_contig, nb::device::cpu>;

void bind_sdpa(nb::module_& m) {
    m.def(
        "sdpa",
        [](Array4 query, Array4 key, Array4 value, std::optional<Array4> mask, bool is_causal, double scale, const std::string& dtype, int threads) {
            SdpaRequest r;
            r.batch = query.shape(0);
            r.heads = query.shape(1);
            r.L = query.shape(2);
            r.E = query.shape(3);
            r.kv_heads = key.shape(1);
            r.S = key.shape(2);
            r.Ev = value.shape(3);
            if (key.shape(0) != r.batch || value.shape(0) != r.batch || value.shape(1) != r.kv_heads || value.shape(2) != r.S || key.shape(3) != r.E)
                throw InputError(fmt::format("query (B, H, L, E) = ({}, {}, {}, {}), key ({}, {}, {}, {}) and value ({}, {}, {}, {}) do not fit", r.batch, r.heads,
                                             r.L, r.E, key.shape(0), key.shape(1), key.shape(2), key.shape(3), value.shape(0), value.shape(1),
                                             value.shape(2), value.shape(3)));
            r.query = query.data();
            r.key = key.data();
            r.value = value.data();
            if (mask) {
                r.mask = mask->data();
                r.mask_batch = mask->shape(0);
                r.mask_heads = mask->shape(1);
            }
            r.is_causal = is_causal;
            r.scale = scale;
            r.dtype = dtype == "f64" ? Dtype::f64 : Dtype::f32;
            r.threads = threads;
            auto* out = new std::vector<double>(r.batch * r.heads * r.L * r.Ev);
            nb::capsule owner(out, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
            {
                nb::gil_scoped_release release;
                sdpa_command(r, out->data());
            }
            return nb::ndarray<nb::numpy, double, nb::ndim<4>>(out->data(), {r.batch, r.heads, r.L, r.Ev}, owner);
        },
        "query"_a, "key"_a, "value"_a, "mask"_a = nb::none(), "is_causal"_a = false, "scale"_a, "dtype"_a = "f32", "threads"_a = 0);
}

void bind_commands(nb::module_& m) {
    const auto release = nb::call_guard<nb::gil_scoped_release>();
    m.def(
        "run",
        [](ATTN_TRACE_PROBLEM_ARGS, bool fast, const std::string& pitfall) {
            auto request = request_of<RunRequest>(backend, max_memory);
            request.fast = fast;
            request.pitfall = pitfall;
            return run_command(ATTN_TRACE_PROBLEM, request);
        },
        ATTN_TRACE_PROBLEM_NAMES, "fast"_a = false, "pitfall"_a = "", release);
    m.def(
        "decode",
        [](ATTN_TRACE_PROBLEM_ARGS, std::size_t prefill, std::optional<int> layers, std::optional<double> bytes, std::optional<std::size_t> tokens) {
            auto request = request_of<DecodeRequest>(backend, max_memory);
            request.decode.prefill = prefill;
            request.decode.layers = layers;
            if (bytes) request.decode.bytes = *bytes;
            if (tokens) request.decode.tokens = *tokens;
            return decode_command(ATTN_TRACE_PROBLEM, request);
        },
        ATTN_TRACE_PROBLEM_NAMES, "prefill"_a = 0, "layers"_a = nb::none(), "bytes"_a = nb::none(), "tokens"_a = nb::none(), release);
    m.def(
        "tiled",
        [](ATTN_TRACE_PROBLEM_ARGS, std::size_t block_q, std::size_t block_k) {
            auto request = request_of<TiledRequest>(backend, max_memory);
            if (block_q == 0 || block_k == 0) throw InputError("⟦block_q⟧ and ⟦block_k⟧: a block holds at least 1 row or key");
            request.tiled = TiledOptions{block_q, block_k};
            return tiled_command(ATTN_TRACE_PROBLEM, request);
        },
        ATTN_TRACE_PROBLEM_NAMES, "block_q"_a = TiledOptions{}.block_q, "block_k"_a = TiledOptions{}.block_k, release);
    m.def(
        "grad",
        [](ATTN_TRACE_PROBLEM_ARGS, const std::string& d_out, std::optional<std::size_t> row, bool tiled, bool fast, std::optional<std::size_t> block_q,
           std::optional<std::size_t> block_k, bool page) {
            auto request = request_of<GradRequest>(backend, max_memory);
            request.grad.d_out = d_out;
            request.grad.row = row;
            const TiledOptions tiles{block_q.value_or(TiledOptions{}.block_q), block_k.value_or(TiledOptions{}.block_k)};
            if (tiles.block_q == 0 || tiles.block_k == 0) throw InputError("⟦block_q⟧ and ⟦block_k⟧: a block holds at least 1 row or key");
            if (tiled) request.grad.tiled = tiles;
            if (fast) {
                request.grad.fast = FastPathOptions{};
                if (block_q) request.grad.fast->block_q = *block_q;
                if (block_k) request.grad.fast->block_k = *block_k;
            }
            request.page = page;
            return grad_command(ATTN_TRACE_PROBLEM, request);
        },
        ATTN_TRACE_PROBLEM_NAMES, "d_out"_a = "", "row"_a = nb::none(), "tiled"_a = false, "fast"_a = false, "block_q"_a = nb::none(),
        "block_k"_a = nb::none(), "page"_a = true, release);
    m.def(
        "permute",
        [](ATTN_TRACE_PROBLEM_ARGS, const std::string& perm, std::uint64_t seed, bool source) {
            auto request = request_of<PermuteRequest>(backend, max_memory);
            request.perm = perm;
            request.seed = seed;
            request.source = source;
            return permute_command(ATTN_TRACE_PROBLEM, request);
        },
        ATTN_TRACE_PROBLEM_NAMES, "perm"_a = "", "seed"_a = 0, "source"_a = false, release);
    m.def(
        "check",
        [](const std::vector<std::string>& files, const std::string& golden, const std::optional<std::string>& mask, const std::optional<std::string>& scale,
           const std::optional<std::string>& empty_rows, const std::optional<std::string>& dtype, const std::string& backend, std::optional<double> atol,
           std::optional<double> rtol, std::size_t block_q, std::size_t block_k, std::size_t prefill, bool allow_nonfinite, std::uint64_t max_memory,
           std::optional<int> decimals) {
            if (decimals && (*decimals < 0 || *decimals > 15)) throw InputError(fmt::format("⟦decimals⟧ {}: expected a whole number from 0 to 15", *decimals));
            CheckRequest request;
            request.files = files;
            request.golden = golden;
            CheckOptions& options = request.options;
            options.overrides = ProblemOverrides{mask, scale, empty_rows, dtype, std::nullopt};
            options.atol = atol;
            options.rtol = rtol;
            options.decimals = decimals;
            if (block_q == 0 || block_k == 0) throw InputError("⟦block_q⟧ and ⟦block_k⟧: a block holds at least 1 row or key");
            options.tiled = TiledOptions{block_q, block_k};
            options.decode.prefill = prefill;
            options.run.backend = backend;
            request.allow_nonfinite = allow_nonfinite;
            request.budget.memory = max_memory;
            return check_command(request);
        },
        "files"_a, "golden"_a = "", "mask"_a = nb::none(), "scale"_a = nb::none(), "empty_rows"_a = nb::none(), "dtype"_a = nb::none(), "backend"_a = "cpu",
        "atol"_a = nb::none(), "rtol"_a = nb::none(), "block_q"_a = TiledOptions{}.block_q, "block_k"_a = TiledOptions{}.block_k, "prefill"_a = 0,
        "allow_nonfinite"_a = false, "max_memory"_a = Budget{}.memory, "decimals"_a = nb::none(), release);
    m.def(
        "exercise",
        [](const std::vector<std::string>& topics, std::uint64_t seed, std::size_t count, const std::string& part, const std::string& format,
           const std::optional<std::string>& math, bool standalone) {
            if (count == 0) throw InputError("⟦count⟧ 0: a sheet holds at least 1 exercise");
            const Format chosen = format_of(format, for_exercise);
            if (math && chosen != Format::markdown)
                throw InputError(fmt::format("⟦math⟧ {} sets how Markdown writes maths: it needs ⟦format⟧ markdown, not {}", *math, chosen));
            require_standalone_format(chosen, standalone);  // before anything is computed
            return written_document(write_worksheet(Worksheet{topics, seed, count, exercise_part(part), math ? math_of(*math) : MathStyle::dollars}, chosen),
                                    chosen, standalone);
        },
        "topics"_a, "seed"_a = 0, "count"_a = 1, "part"_a = "both", "format"_a = "markdown", "math"_a = nb::none(), "standalone"_a = false, release);
    m.def(
        "explain",
        [](ATTN_TRACE_PROBLEM_ARGS, const std::optional<std::string>& cell, const std::optional<std::string>& row, const std::string& format, int head,
           int batch, int precision, const std::optional<std::string>& math, std::optional<std::size_t> t,
           std::optional<std::array<std::size_t, 2>> tile, std::size_t prefill, std::size_t block_q, std::size_t block_k, bool standalone) {
            if (cell.has_value() == row.has_value()) throw InputError("explain needs one ⟦cell⟧ STEP[i,j] or one ⟦row⟧ STEP[i], e.g. cell=\"scores[0,2]\"");
            auto request = request_of<ExplainRequest>(backend, max_memory);
            request.target = cell ? parse_cell_spec(*cell) : parse_row_spec(*row);
            request.options = ExplainOptions{head, batch, precision, format_of(format, for_explain), math ? math_of(*math) : MathStyle::dollars};
            if (t) request.source.t = *t;
            if (tile) request.source.tile = *tile;
            request.source.decode.prefill = prefill;
            request.source.tiled = TiledOptions{block_q, block_k};
            if (block_q == 0 || block_k == 0) throw InputError("⟦block_q⟧ and ⟦block_k⟧: a block holds at least 1 row or key");
            require_standalone_format(request.options.format, standalone);  // before anything is computed
            return written_document(explain_command(ATTN_TRACE_PROBLEM, request), request.options.format, standalone);
        },
        ATTN_TRACE_PROBLEM_NAMES, "cell"_a = nb::none(), "row"_a = nb::none(), "format"_a = "text", "head"_a = 0, "batch"_a = 0, "precision"_a = 4,
        "math"_a = nb::none(), "t"_a = nb::none(), "tile"_a = nb::none(), "prefill"_a = 0, "block_q"_a = TiledOptions{}.block_q,
        "block_k"_a = TiledOptions{}.block_k, "standalone"_a = false, release);
    // A report's text in a format as a whole document (Report.render(standalone=True)).
    m.def(
        "written_document", [](const std::string& text, const std::string& format, bool standalone) {
            return written_document(text, format_of(format, for_trace), standalone);
        },
        "text"_a, "format"_a, "standalone"_a);
}

}  // namespace

}  // namespace attn_trace

NB_MODULE(_core, m) {
    m.doc() = "attn-trace's commands layer (docs/PYTHON.md); use the package attn_trace, not this module";
    m.attr("version") = attn_trace::version;
    nb::register_exception_translator(attn_trace::translate_errors);
    attn_trace::bind_result(m);
    attn_trace::bind_check(m);
    attn_trace::bind_sdpa(m);
    attn_trace::bind_commands(m);
    attn_trace::bind_reports(m);
}
