// Exercises: a topic's plan → the problem file → the pipelines' trace → `expect`
// and the worked answer. The answer is the trace itself, rendered, plus `explain`
// for the arithmetic of a row, so it cannot disagree with `attn-trace check`.
#include "attn_trace/exercise.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "attn_trace/check.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/nearest_word.hpp"
#include "attn_trace/number_text.hpp"
#include "attn_trace/problem_file.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/render_table.hpp"
#include "exercise_plan.hpp"

namespace attn_trace {

namespace {

// An exercise runs in its problem's dtype (f64 unless a topic, as precision does, says otherwise).
RunOptions run_options_of(const Problem& problem) { return RunOptions{problem.dtype.value_or(Dtype::f64)}; }

}  // namespace

Trace unscaled_trace(const Problem& problem) {
    Problem unscaled = problem;
    unscaled.scale.kind = Scale::Kind::none;
    return pipeline_full(unscaled, run_options_of(problem));
}

namespace {

// Expected values are written with 4 decimals: readable, and within check's
// default atol of 1e-4 (the rounding error is at most 5e-5).
constexpr int expect_decimals = 4;

// FNV-1a: a topic's own random stream, the same on every platform (std::hash is not).
std::uint64_t topic_seed(const std::string& topic, std::uint64_t seed) {
    std::uint64_t hash = 14695981039346656037ull;
    for (unsigned char c : topic) hash = (hash ^ c) * 1099511628211ull;
    return hash ^ (seed * 0x9E3779B97F4A7C15ull);
}

nlohmann::ordered_json rounded_json(const Matrix& m) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < m.rows(); ++i) {
        nlohmann::ordered_json row = nlohmann::ordered_json::array();
        for (std::size_t j = 0; j < m.cols(); ++j) {
            const double x = m(i, j);
            if (!std::isfinite(x)) row.push_back(nonfinite_name(x));
            else row.push_back(std::stod(format_rounded(x, expect_decimals)));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

nlohmann::ordered_json expectations(const Trace& trace, const std::vector<StepName>& names) {
    nlohmann::ordered_json expect = nlohmann::ordered_json::array();
    for (const auto& step : trace.steps) {
        if (std::find(names.begin(), names.end(), step.name) == names.end()) continue;
        nlohmann::ordered_json entry = {{"name", step_name(step.name)}};
        if (step.head) entry["head"] = *step.head;
        if (step.t) entry["t"] = *step.t;
        if (step.tile) entry["tile"] = {(*step.tile)[0], (*step.tile)[1]};
        entry["data"] = rounded_json(step.values);
        expect.push_back(std::move(entry));
    }
    return expect;
}

// A given matrix as a step; `first_column` names where a head's block starts.
Step given_step(const std::string& name, const nlohmann::ordered_json& value, std::size_t first_column, std::size_t columns) {
    Step step;
    step.name = StepName::given;
    step.label = name;
    step.formula = "given";
    step.values = Matrix(value.size(), columns);
    for (std::size_t i = 0; i < value.size(); ++i)
        for (std::size_t j = 0; j < columns; ++j) step.values(i, j) = value[i][first_column + j].get<double>();
    return step;
}

// How many heads lie side by side in a given matrix's columns (1 when it is not per head).
int heads_in(const std::string& key, const Problem& problem) {
    if (key == "Q") return problem.heads;
    if (key == "K" || key == "V") return problem.kv_heads;
    return 1;
}

// The matrices the problem gives, as steps, so the worksheet renderers can show them:
// a matrix holding several heads side by side is split into one block per head, so
// that every block is narrow enough to print whole. A member's matrices (mla's W_DKV,
// W_UK, W_UV) are given too, as their tasks read them (docs/COMMANDS.md#exercise).
void add_given_matrices(Trace& given, const nlohmann::ordered_json& object, const Problem& problem, const std::string& member) {
    const auto& keys = problem.source_tokens.empty() ? problem.tokens : problem.source_tokens;
    for (const auto& [key, value] : object.items()) {
        if (value.is_object()) add_given_matrices(given, value, problem, key);
        if (!value.is_array() || value.empty() || !value[0].is_array()) continue;
        const int heads = member.empty() ? heads_in(key, problem) : 1;
        const std::size_t width = value[0].size() / static_cast<std::size_t>(heads);
        for (int h = 0; h < heads; ++h) {
            Step step = given_step(key, value, static_cast<std::size_t>(h) * width, width);
            if (!member.empty()) step.formula = fmt::format("given ({}.{})", member, key);  // where the problem file holds it
            if (heads > 1) {
                step.head = h;
                step.formula = fmt::format("given, columns {}–{}", static_cast<std::size_t>(h) * width, static_cast<std::size_t>(h + 1) * width - 1);
                // The columns keep their numbers in the whole matrix, as the problem file has them.
                for (std::size_t j = 0; j < width; ++j) step.column_labels.push_back(std::to_string(static_cast<std::size_t>(h) * width + j));
            }
            if (member.empty() && (key == "Q" || key == "X")) step.row_labels = problem.tokens;
            if (member.empty() && (key == "K" || key == "V")) step.row_labels = keys;
            given.steps.push_back(std::move(step));
        }
    }
}

Trace given_matrices(const nlohmann::ordered_json& file, const Problem& problem) {
    Trace given;
    given.command = "exercise";
    given.problem.title = problem.title;
    add_given_matrices(given, file, problem, "");
    return given;
}

// One exercise of a sheet, computed: its plan, its problem file with `expect` filled
// in, the trace the answer shows and the full trace the arithmetic is explained on.
struct Exercise {
    std::size_t number = 1;  // its place on the sheet, from 1
    std::string topic;
    std::uint64_t seed = 0;
    ExercisePlan plan;
    nlohmann::ordered_json file;
    Problem problem;
    Trace trace, full;

    std::string title() const { return fmt::format("Exercise {}: {} (topic {}, seed {})", number, plan.title, topic, seed); }
};

// The worksheet's pieces in one format: markdown, latex, text or html. Prose goes through
// markdown_text / latex_text, so labels such as <pad> survive and pdflatex never
// meets raw Unicode; matrices go through the trace renderers, always whole.
class ExerciseWriter {
public:
    // `hide_answers`: on a page, each part of an answer waits behind a "Show" button
    // (a sheet of both parts); an answer key shows its answers. `math`: how Markdown
    // writes the mathematics.
    ExerciseWriter(Format format, bool hide_answers, MathStyle math) : format_(format), hide_answers_(page() && hide_answers), math_(math) {}

    // The heading, the question, every given matrix and the numbered tasks: all a
    // student works from, and nothing of the answer.
    std::string questions(const Exercise& e) const {
        std::string out = heading_of(e);
        out += paragraph(e.plan.question + " " + describe(e.problem));
        out += paragraph("Given:") + steps(given_matrices(e.file, e.problem), {});
        std::vector<std::string> tasks;
        for (const ExerciseTask& task : e.plan.tasks) tasks.push_back(task.text);
        return out + paragraph("Compute:") + list(tasks) + paragraph(answer_rule);
    }

    // How answers are written and checked (docs/COMMANDS.md#exercise): the key's numbers are
    // rounded to 4 decimals, and check's decimals setting reads a sheet's answers so.
    static constexpr const char* answer_rule =
        "Write each number to 4 decimals. Keep every digit while you work and round only what you write: a value worked out from "
        "rounded values can be off in its last decimal. To check your answers, put them as the expect entries of this exercise's "
        "JSON and run attn-trace check on it with 4 decimals.";

    // The key, task by task under the question's numbers (docs/COMMANDS.md#exercise): the
    // steps that answer the task, the arithmetic of a row or cell, and its sentences.
    std::string answers(const Exercise& e) const {
        std::string out = heading(2, "Answer");
        for (std::size_t k = 0; k < e.plan.tasks.size(); ++k) {
            const ExerciseTask& task = e.plan.tasks[k];
            out += open_answer(fmt::format("the answer to task {}", k + 1)) + heading(3, fmt::format("Task {}: {}", k + 1, task.text));
            out += steps_answering(e, task.steps);
            if (task.unscaled_weights) out += unscaled_weights(e);
            for (const auto& worked : task.worked) out += arithmetic(e, worked);
            for (const auto& note : task.notes) out += paragraph(note);
            if (task.computed_notes)
                for (const auto& note : task.computed_notes(e.problem, e.trace)) out += paragraph(note);
            if (!task.preformatted.empty()) out += preformatted(task.preformatted);
            out += close_answer();
        }
        return out;
    }

    std::string heading_of(const Exercise& e) const { return heading(1, e.title()); }

    // The sheet as it is printed: a page of its own in html, the pieces as they are elsewhere.
    std::string document(const std::string& title, const std::string& body) const {
        if (format_ == Format::latex) return latex_ragged_prose(body);
        if (page()) return html_page(title, "sheet", "<main>\n" + body + "</main>\n");
        // Each heading opens with the blank line that parts it from what comes before; the
        // sheet's first has nothing before it, and starts on the first line, as the
        // transcript of docs/COMMANDS.md#exercise shows.
        return !body.empty() && body.front() == '\n' ? body.substr(1) : body;
    }

private:
    bool page() const { return format_ == Format::html; }

    // The steps named, from the exercise's own trace where it has them, else from the full
    // run's (a grad exercise's forward weights, which its backward trace does not hold).
    std::string steps_answering(const Exercise& e, const std::vector<StepName>& names) const {
        std::vector<StepName> own, full;
        for (StepName name : names)
            (std::any_of(e.trace.steps.begin(), e.trace.steps.end(), [name](const Step& s) { return s.name == name; }) ? own : full).push_back(name);
        return (own.empty() ? "" : steps(e.trace, own)) + (full.empty() ? "" : steps(e.full, full));
    }

    // The weights with s = 1: the softmax reads S itself, and the heading says softmax(S), not softmax(S_s).
    std::string unscaled_weights(const Exercise& e) const {
        Trace trace = unscaled_trace(e.problem);
        for (Step& step : trace.steps)
            for (auto at = step.formula.find("S_s"); at != std::string::npos; at = step.formula.find("S_s", at)) step.formula.replace(at, 3, "S");
        return paragraph("Without the scale (s = 1), the weights would be:") + steps(trace, {StepName::weights});
    }

    // explain's arithmetic of one row or cell; a gradient cell from the backward trace, which explain_problem computes.
    std::string arithmetic(const Exercise& e, const WorkedArithmetic& worked) const {
        const bool is_row = worked.spec.find(',') == std::string::npos;
        const ExplainTarget target = is_row ? parse_row_spec(worked.spec) : parse_cell_spec(worked.spec);
        const ExplainOptions options{worked.head, 0, 4, page() ? Format::text : format_, math_};  // a page shows the text in a <pre>
        const std::string text = is_gradient(target.step) ? explain_problem(e.problem, run_options_of(e.problem), target, options) : explain(e.full, e.problem, target, options);
        return page() ? "<pre>" + html_escape(text) + "</pre>\n" : "\n" + text + "\n";
    }
    // json is the problem file, written without a writer; write_exercise refuses csv.
    [[noreturn]] void unwritten() const { throw std::logic_error(fmt::format("an exercise is not a {} document", format_)); }
    std::string text(const std::string& s) const {
        switch (format_) {
            case Format::text: return s;
            case Format::markdown: return markdown_text(s);
            case Format::latex: return latex_prose(s);
            case Format::html: return html_escape(s);
            case Format::json:
            case Format::csv: break;
        }
        unwritten();
    }
    // A page of both parts hides each part of the answer until its reader asks; a
    // document on paper (or in a terminal), and an answer key, shows it.
    std::string open_answer(const std::string& what) const {
        return hide_answers_ ? "<details class=\"answer\">\n<summary>Show " + what + "</summary>\n" : "";
    }
    std::string close_answer() const { return hide_answers_ ? "</details>\n" : ""; }
    // Level 1 an exercise, 2 its answer, 3 a task of the answer.
    std::string heading(int level, const std::string& s) const {
        switch (format_) {
            case Format::text: return level == 3 ? fmt::format("\n{}\n", s) : fmt::format("\n{}\n{}\n", s, std::string(display_width(s), level == 1 ? '=' : '-'));
            case Format::markdown: return fmt::format("\n{} {}\n", std::string(static_cast<std::size_t>(level), '#'), text(s));
            case Format::latex: return fmt::format("\n\\{}{{{}}}\n", level == 1 ? "section*" : level == 2 ? "subsection*" : "subsubsection*", text(s));
            case Format::html: return fmt::format("<h{}>{}</h{}>\n", level, text(s), level);
            case Format::json:
            case Format::csv: break;
        }
        unwritten();
    }
    std::string paragraph(const std::string& s) const { return page() ? "<p>" + text(s) + "</p>\n" : "\n" + text(s) + "\n"; }
    std::string list(const std::vector<std::string>& items) const {
        std::string out;
        switch (format_) {
            case Format::text:
            case Format::markdown:
                out = "\n";
                for (std::size_t k = 0; k < items.size(); ++k) out += fmt::format("{}. {}\n", k + 1, text(items[k]));
                return out;
            case Format::latex:
                out = "\\begin{enumerate}\n";
                for (const auto& item : items) out += "\\item " + text(item) + "\n";
                return out + "\\end{enumerate}\n";
            case Format::html:
                out = "<ol>\n";
                for (const auto& item : items) out += "<li>" + text(item) + "</li>\n";
                return out + "</ol>\n";
            case Format::json:
            case Format::csv: break;
        }
        unwritten();
    }
    std::string steps(const Trace& trace, const std::vector<StepName>& names) const {
        RenderOptions options;
        options.steps = names;
        options.header = false;
        options.full = true;  // an exercise with a "…" in it cannot be solved or checked
        options.math = math_;
        std::string out;
        switch (format_) {
            case Format::text:
                for (const Step* step : selected_steps(trace, options)) out += "\n" + render_step_text(*step, options);
                return out;
            case Format::markdown: return render_markdown(trace, options);
            // A smaller font and narrower column gaps, so that a whole (3, 8) matrix of
            // 4-decimal numbers (cost's concat) fits the page.
            case Format::latex: return "{\\small\\setlength{\\arraycolsep}{3pt}\n" + render_latex(trace, options) + "\\par}\n";
            case Format::html: return html_step_sections(trace, options, nullptr);
            case Format::json:
            case Format::csv: break;
        }
        unwritten();
    }
    // A block of aligned text (cost's tables). LaTeX's verbatim cannot hold the
    // Unicode of those tables, so there each line is typewriter text through latex_text,
    // its leading indentation kept as fixed space, long lines wrapping ragged.
    std::string preformatted(const std::string& block) const {
        switch (format_) {
            case Format::text: return "\n" + block;
            case Format::markdown: return "\n```\n" + block + "```\n";
            case Format::html: return "<pre>" + html_escape(block) + "</pre>\n";
            case Format::latex: break;
            case Format::json:
            case Format::csv: unwritten();
        }
        std::string out = "\n{\\small\\ttfamily\\raggedright\\noindent\n";
        std::size_t start = 0;
        for (std::size_t end = block.find('\n'); end != std::string::npos; start = end + 1, end = block.find('\n', start)) {
            const std::string line = block.substr(start, end - start);
            const std::size_t indent = line.find_first_not_of(' ');
            if (indent == std::string::npos) {
                out += "\\medskip\n";
                continue;
            }
            out += fmt::format("\\hspace*{{{}em}}{}\\\\\n", indent * 0.5, latex_text(line.substr(indent)));
        }
        return out + "}\n";
    }
    static std::string describe(const Problem& p) {
        return fmt::format("(n = {} queries, m = {} keys, {} head{}{}, d_k = {}, d_v = {}, indices 0-based.)", p.n, p.m, p.heads, p.heads == 1 ? "" : "s",
                           p.kv_heads != p.heads ? fmt::format(" sharing {} KV heads", p.kv_heads) : "", p.d_k, p.d_v);
    }

    Format format_;
    bool hide_answers_;
    MathStyle math_;
};

}  // namespace

const std::vector<std::string>& exercise_topics() {
    static const std::vector<std::string> topics = {"scores", "softmax", "causal", "padding", "multihead", "gqa", "kv-cache", "tiled", "scale", "cost",
                                                    "sparse", "mla", "dropout", "permutation", "grad", "precision"};
    return topics;
}

const std::vector<Format>& exercise_formats() {
    static const std::vector<Format> formats = {Format::markdown, Format::latex, Format::text, Format::json, Format::html};
    return formats;
}

namespace {

// Exercise `number` of a sheet: its topic's plan for the seed, the problem file, the trace.
Exercise make_exercise(std::size_t number, const std::string& topic, std::uint64_t seed) {
    HandNumbers numbers(topic_seed(topic, seed));
    Exercise e{number, topic, seed, plan_exercise(topic, numbers), {}, {}, {}, {}};
    e.file = {{"title", fmt::format("exercise {} (seed {}): {}", topic, seed, e.plan.title)}};
    for (const auto& [key, value] : e.plan.problem.items()) e.file[key] = value;
    e.problem = parse_problem(e.file.dump(), fmt::format("exercise {} seed {}", topic, seed));
    e.trace = compute_trace(e.plan.pipeline, e.problem, run_options_of(e.problem));
    e.file["expect"] = expectations(e.trace, e.plan.expect_steps);
    e.full = e.plan.pipeline == "run" ? e.trace : pipeline_full(e.problem, run_options_of(e.problem));
    for (std::size_t k = 0; k < e.plan.tasks.size(); ++k)
        if (!e.plan.tasks[k].answered()) throw std::logic_error(fmt::format("exercise {}: task {} has no answer in the key", topic, k + 1));
    return e;
}

// The problem files: one object for one exercise, an array of them for a sheet of several;
// a sheet of questions leaves `expect` out, so it gives nothing away.
std::string json_sheet(const std::vector<Exercise>& exercises, ExercisePart part) {
    std::vector<std::string> files;
    for (const Exercise& e : exercises) {
        nlohmann::ordered_json file = e.file;
        if (part == ExercisePart::questions) file.erase("expect");
        files.push_back(problem_file_text(file));
    }
    if (files.size() == 1) return files.front();
    for (std::string& file : files) file.pop_back();  // its closing newline; the array's separators follow
    return fmt::format("[\n{}\n]\n", fmt::join(files, ",\n"));
}

// A page's title: the exercise's own for one, the numbers and topics for several, and which part.
std::string sheet_title(const Worksheet& sheet, const std::vector<Exercise>& exercises) {
    std::string title = exercises.size() == 1 ? exercises.front().title()
                                              : fmt::format("Exercises 1–{}: {} (seeds {}–{})", exercises.size(), fmt::join(sheet.topics, ", "), sheet.seed,
                                                            exercises.back().seed);
    if (sheet.part != ExercisePart::both) title += fmt::format(" — {}", exercise_part_names()[static_cast<std::size_t>(sheet.part)]);
    return title;
}

}  // namespace

const std::vector<std::string>& exercise_part_names() {
    static const std::vector<std::string> names = {"questions", "answers", "both"};
    return names;
}

ExercisePart exercise_part(const std::string& name) {
    const auto& names = exercise_part_names();
    const auto at = std::find(names.begin(), names.end(), name);
    if (at == names.end()) throw InputError(fmt::format("⟦part⟧ '{}'{}: expected one of {}", name, did_you_mean(name, names), fmt::join(names, ", ")));
    return static_cast<ExercisePart>(at - names.begin());
}

std::string write_worksheet(const Worksheet& sheet, Format format) {
    if (!accepts(for_exercise, format))
        throw InputError(fmt::format("⟦format⟧ '{}': exercises are written as {}", format, fmt::join(exercise_formats(), ", ")));
    if (sheet.topics.empty()) throw InputError(fmt::format("⟦topic⟧: name at least one of {}", fmt::join(exercise_topics(), ", ")));
    if (sheet.count == 0) throw InputError("⟦count⟧ 0: a sheet holds at least 1 exercise");
    std::vector<Exercise> exercises;
    for (std::size_t k = 0; k < sheet.count; ++k) exercises.push_back(make_exercise(k + 1, sheet.topics[k % sheet.topics.size()], sheet.seed + k));
    if (format == Format::json) return json_sheet(exercises, sheet.part);
    const ExerciseWriter writer(format, sheet.part == ExercisePart::both, sheet.math);
    std::string body;
    for (const Exercise& e : exercises) {
        if (sheet.part != ExercisePart::answers) body += writer.questions(e);
        if (sheet.part == ExercisePart::answers) body += writer.heading_of(e);
        if (sheet.part != ExercisePart::questions) body += writer.answers(e);
    }
    return writer.document(sheet_title(sheet, exercises), body);
}

std::string write_exercise(const std::string& topic, std::uint64_t seed, Format format, ExercisePart part, MathStyle math) {
    return write_worksheet({{topic}, seed, 1, part, math}, format);
}

}  // namespace attn_trace
