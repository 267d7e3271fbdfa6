#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>
#include <stdexcept>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_html.hpp"

namespace attn_trace {

std::vector<const Step*> selected_steps(const Trace& trace, const RenderOptions& options) {
    std::vector<const Step*> out;
    for (const auto& step : trace.steps) {
        if (!options.steps.empty() && std::find(options.steps.begin(), options.steps.end(), step.name) == options.steps.end()) continue;
        if (options.head && step.head && *step.head != *options.head) continue;
        if (options.batch && step.batch && *step.batch != *options.batch) continue;
        out.push_back(&step);
    }
    return out;
}

std::string render(const Trace& trace, Format format, const RenderOptions& options) {
    switch (format) {
        case Format::text: return render_text(trace, options);
        case Format::json: return render_json(trace, options);
        case Format::markdown: return render_markdown(trace, options);
        case Format::latex: return render_latex(trace, options);
        case Format::csv: return render_csv(trace, options);
        case Format::html: return render_html(trace, options);
    }
    throw std::logic_error("render: a Format outside the table");
}

std::string format_trace_number(double x) {
    if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9007199254740992.0) return fmt::format("{}", static_cast<long long>(x));
    return fmt::format("{:.6g}", x);
}

std::string format_number(double x, int precision) {
    if (!std::isfinite(x)) return nonfinite_name(x);
    if (x == 0.0) return "0";  // exact zeros (blocked weights) stay visibly exact
    // Past 10^10 fixed notation only lengthens the column (1e200 is 201 digits): the exponent says it.
    if (std::fabs(x) >= 1e10) return fmt::format("{:.{}e}", x, std::max(1, precision - 2));
    std::string text = fmt::format("{:.{}f}", x, precision);
    if (text.find_first_not_of("-0.") == std::string::npos) return fmt::format("{:.{}e}", x, std::max(1, precision - 2));  // tiny, not zero
    return text;
}

std::string format_rounded(double x, int precision) {
    if (!std::isfinite(x)) return format_number(x, precision);
    std::string text = fmt::format("{:.{}f}", x, precision);
    if (text.find('.') != std::string::npos) {
        text.erase(text.find_last_not_of('0') + 1);
        if (text.back() == '.') text.pop_back();
    }
    return text == "-0" ? "0" : text;  // a tiny negative rounds to 0, not "-0"
}

std::string latex_text(const std::string& text) {
    static const std::vector<std::pair<std::string, std::string>> replacements = {
        {"\\", "\\textbackslash{}"}, {"_", "\\_"}, {"&", "\\&"}, {"%", "\\%"}, {"#", "\\#"}, {"$", "\\$"}, {"{", "\\{"},
        {"}", "\\}"}, {"~", "\\textasciitilde{}"}, {"^", "\\textasciicircum{}"}, {"ᵀ", "$^\\top$"}, {"·", "$\\cdot$"},
        {"√", "$\\surd$"}, {"−", "$-$"}, {"…", "\\dots{}"}, {"Σ", "$\\Sigma$"}, {"∞", "$\\infty$"}, {"×", "$\\times$"},
        {"≤", "$\\le$"}, {"≥", "$\\ge$"}, {"⌊", "$\\lfloor$"}, {"⌋", "$\\rfloor$"}, {"→", "$\\to$"},
        {"ℓ", "$\\ell$"}, {"²", "$^2$"}, {"³", "$^3$"}, {"⁴", "$^4$"}, {"⁶", "$^6$"}, {"⁰", "$^0$"}, {"₂", "$_2$"},
        {"§", "\\S{}"}, {"‖", "$\\|$"}, {"–", "--"}, {"—", "---"}, {"≠", "$\\ne$"}, {"≈", "$\\approx$"}, {"⊙", "$\\odot$"},
        {"∝", "$\\propto$"}, {"⇔", "$\\Leftrightarrow$"}, {"←", "$\\leftarrow$"}, {"θ", "$\\theta$"}, {"½", "$\\frac12$"},
        {"°", "$^\\circ$"}, {"⊗", "$\\otimes$"}, {"<", "\\textless{}"}, {">", "\\textgreater{}"}, {"|", "\\textbar{}"}};
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        // Typewriter quotes as TeX's curly ones: " and ' open after a space or a bracket
        // (`` and `), else close ('' and '); a plain " would print as a closing quote.
        if (text[i] == '"' || text[i] == '\'') {
            const bool opening = i == 0 || std::string(" ([{").find(text[i - 1]) != std::string::npos;
            out += text[i] == '"' ? (opening ? "``" : "''") : (opening ? "`" : "'");
            ++i;
            continue;
        }
        const auto match = std::find_if(replacements.begin(), replacements.end(),
                                        [&](const auto& r) { return text.compare(i, r.first.size(), r.first) == 0; });
        if (match == replacements.end()) {
            // Any other non-ASCII character (a token label in another script) would stop
            // pdflatex with inputenc's "not set up for use with LaTeX": write it as '?'
            // and skip its UTF-8 continuation bytes, so the document always compiles.
            const auto byte = static_cast<unsigned char>(text[i++]);
            if (byte < 0x80) {
                out += static_cast<char>(byte);
                continue;
            }
            out += '?';
            while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
        } else {
            out += match->second;
            i += match->first.size();
        }
    }
    return out;
}

namespace {

// The LaTeX of one Unicode symbol the formulas use, in math mode ("" when unknown).
std::string math_symbol(const std::string& symbol) {
    static const std::vector<std::pair<std::string, std::string>> symbols = {
        {"ᵀ", "^{\\top}"}, {"·", "\\cdot "}, {"−", "-"}, {"…", "\\dots "}, {"×", "\\times "}, {"Σ", "\\Sigma"}, {"∞", "\\infty "},
        {"≤", "\\le "}, {"≥", "\\ge "}, {"ℓ", "\\ell "}, {"⌊", "\\lfloor "}, {"⌋", "\\rfloor "}, {"→", "\\to "}, {"θ", "\\theta "},
        {"²", "^{2}"}, {"≠", "\\ne "}, {"≈", "\\approx "}, {"⊙", "\\odot "}, {"‖", "\\|"}, {"̃", ""}};
    for (const auto& [from, to] : symbols)
        if (from == symbol) return to;
    return "?";
}

// Whether a formula so far ends with a name or a closing bracket (Q, V_j, Kᵀ, ℓ, (…)),
// not an operator (−, ·, =): a space after it separates two factors.
bool ends_with_name(const std::string& text) {
    if (text.empty()) return false;
    for (const char* name_like : {"ᵀ", "ℓ", "∞", "θ", "²", "…"})
        if (text.size() >= std::strlen(name_like) && text.compare(text.size() - std::strlen(name_like), std::string::npos, name_like) == 0) return true;
    const auto last = static_cast<unsigned char>(text.back());
    return std::isalnum(last) || last == ')' || last == ']';
}

std::size_t utf8_length(unsigned char lead) { return lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1; }

// Math-mode LaTeX of a formula: one-letter names in italics, longer ones upright
// (\mathrm{exp}), x_word → x_{\mathrm{word}}, ^(…) → ^{…}, √x → \sqrt{x}, spaces kept.
std::string math_of(const std::string& text) {
    std::string out;
    auto name = [](const std::string& word) {
        if (word == "inf") return std::string("\\infty ");
        return word.size() == 1 ? word : "\\mathrm{" + latex_text(word) + "}";
    };
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (std::isalpha(static_cast<unsigned char>(c))) {
            std::size_t end = i;
            while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
            // row_max, max_abs_diff_vs_full: a name of several letters takes a part of
            // two or more letters after an underscore along (m_new is m with a
            // subscript, max_j is max with one).
            auto part_end = [&](std::size_t underscore) {
                std::size_t k = underscore + 1;
                while (k < text.size() && std::isalnum(static_cast<unsigned char>(text[k]))) ++k;
                return k;
            };
            if (end - i >= 2)
                while (end < text.size() && text[end] == '_' && part_end(end) - end > 2) end = part_end(end);
            // A step's name is one word, one-letter parts and all (grad_q_rot, grad_W_Q).
            std::size_t whole = i;
            while (whole < text.size() && (std::isalnum(static_cast<unsigned char>(text[whole])) || text[whole] == '_')) ++whole;
            if (whole > end && find_step(text.substr(i, whole - i))) end = whole;
            out += name(text.substr(i, end - i));
            i = end;
        } else if ((c == '_' || c == '^') && i + 1 < text.size()) {
            std::size_t end = i + 1;
            std::string inner;
            if (text[end] == '(') {  // ^(…) up to the matching parenthesis
                int depth = 0;
                for (; end < text.size(); ++end) {
                    depth += text[end] == '(' ? 1 : text[end] == ')' ? -1 : 0;
                    if (depth == 0) break;
                }
                inner = math_of(text.substr(i + 2, end - i - 2));
                ++end;
            } else {
                while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end]))) ++end;
                const std::string word = text.substr(i + 1, end - i - 1);
                // Index letters stay italic (S_ij); a word is upright (m_old, V_cache).
                inner = word.size() > 2 && !std::isdigit(static_cast<unsigned char>(word[0])) ? "\\mathrm{" + word + "}" : word;
            }
            out += fmt::format("{}{{{}}}", c, inner);
            i = end;
        } else if (text.compare(i, 3, "√") == 0) {  // √d_k → \sqrt{d_k}
            std::size_t end = i + 3;
            while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
            out += "\\sqrt{" + math_of(text.substr(i + 3, end - i - 3)) + "}";
            i = end;
        } else if (static_cast<unsigned char>(c) >= 0x80) {
            const std::size_t length = utf8_length(static_cast<unsigned char>(c));
            out += math_symbol(text.substr(i, length));
            i += length;
        } else {
            static const std::string escaped = "{}%#&$";
            // TeX spaces operators itself and breaks a formula only at them: a space
            // is written only between two names that would otherwise run together.
            auto joins = [&](std::size_t k) { return k < text.size() && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '(' || text[k] == '['); };
            if (c == ' ') out += ends_with_name(text.substr(0, i)) && joins(i + 1) ? "\\," : "";
            else if (escaped.find(c) != std::string::npos) out += std::string("\\") + c;
            else if (c == '~') out += "\\sim ";
            else if (c == '\\') out += "\\backslash ";
            else out += c;
            ++i;
        }
    }
    return out;
}

// Where the words begin in "u / ℓ after the last tile": the first of two plain
// words of three or more letters in a row ("after the"), or npos.
std::size_t prose_start(const std::string& text) {
    auto word_end = [&](std::size_t i) {
        std::size_t end = i;
        while (end < text.size() && std::isalpha(static_cast<unsigned char>(text[end]))) ++end;
        return end;
    };
    auto plain_word = [&](std::size_t i) {
        const std::size_t end = word_end(i);
        return end - i >= 3 && (end == text.size() || text[end] == ' ' || text[end] == ',');
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i > 0 && text[i - 1] != ' ') continue;
        if (!plain_word(i)) continue;
        const std::size_t next = word_end(i) + 1;
        if (next < text.size() && text[next - 1] == ' ' && plain_word(next)) return i;
    }
    return std::string::npos;
}

}  // namespace

FormulaParts split_formula(const std::string& formula) {
    std::string math = formula, remark;
    // A closing remark in parentheses with words in it: "(queries 0…1, keys 2…3)".
    if (!math.empty() && math.back() == ')') {
        int depth = 0;
        for (std::size_t i = math.size(); i-- > 0;) {
            depth += math[i] == ')' ? 1 : math[i] == '(' ? -1 : 0;
            if (depth == 0) {
                // The remark may be the whole formula: x is "(the input, one row per token)".
                if ((i == 0 || math[i - 1] == ' ') && math.find(' ', i) != std::string::npos) {
                    remark = math.substr(i);
                    math = i == 0 ? "" : math.substr(0, i - 1);
                }
                break;
            }
        }
    }
    if (const std::size_t words = prose_start(math); words != std::string::npos) {
        remark = math.substr(words) + (remark.empty() ? "" : " " + remark);
        math = words == 0 ? "" : math.substr(0, words - 1);
    }
    return {math.empty() ? "" : math_of(math), remark};
}

std::string latex_formula(const std::string& formula) {
    const FormulaParts parts = split_formula(formula);
    std::string out = parts.math.empty() ? "" : "$" + parts.math + "$";
    if (!parts.remark.empty()) out += (out.empty() ? "" : " ") + latex_text(parts.remark);
    return out;
}

namespace {

bool is_operator(const std::string& word) {
    static const std::vector<std::string> operators = {"+", "-", "=", "/", "·", "×", "−", "<=", ">="};
    return std::find(operators.begin(), operators.end(), word) != operators.end();
}

// A word of formula rather than of English: e^(z, ℓ_old, Σ_j, θ_1, 1/√2.
bool is_formula_word(const std::string& word) {
    // A name such as row_max or empty_rows is a word of the text, not x with a subscript.
    static const std::regex identifier("[a-z]{2,}(_[a-z0-9]+)+");
    if (std::regex_match(word, identifier)) return false;
    if (word.find_first_of("^_=") != std::string::npos) return true;
    for (const char* symbol : {"·", "Σ", "ℓ", "θ", "∞", "−", "√", "ᵀ"})
        if (word.find(symbol) != std::string::npos) return true;
    return false;
}

}  // namespace

namespace {

// A word split into its formula and the punctuation of the sentence around it:
// "(e^(-inf)" → "(" + "e^(-inf)", "m_new)," → "m_new" + "),".
struct ProseWord {
    std::string lead, core, tail;
};

ProseWord split_punctuation(const std::string& word) {
    ProseWord w{"", word, ""};
    auto count = [&](char c) { return std::count(w.core.begin(), w.core.end(), c); };
    while (!w.core.empty() && (std::string(",;:").find(w.core.back()) != std::string::npos || (w.core.back() == ')' && count(')') > count('(')))) {
        w.tail.insert(w.tail.begin(), w.core.back());
        w.core.pop_back();
    }
    while (!w.core.empty() && w.core.front() == '(' && count('(') > count(')')) {
        w.lead += '(';
        w.core.erase(w.core.begin());
    }
    return w;
}

}  // namespace

std::string latex_prose(const std::string& text) {
    std::vector<ProseWord> words;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t space = std::min(text.find(' ', start), text.size());
        words.push_back(split_punctuation(text.substr(start, space - start)));
        start = space + 1;
    }
    // Which words are mathematics: formula words, operators, the words beside an
    // operator ("rescale" in "= rescale ·"), and what an exponent's bracket holds
    // ("e^(z - max)").
    std::vector<bool> math(words.size(), false);
    int depth = 0;
    for (std::size_t k = 0; k < words.size(); ++k) {
        ProseWord& w = words[k];
        math[k] = !w.core.empty() && (depth > 0 || is_formula_word(w.core) || is_operator(w.core));
        for (std::size_t c = 0; c < w.core.size(); ++c) {
            if (w.core[c] == '(' && c > 0 && (w.core[c - 1] == '^' || w.core[c - 1] == '_')) ++depth;
            else if (w.core[c] == ')' && depth > 0) --depth;
        }
        // "m_new)," closes an exponent's bracket: that ")" belongs to the formula.
        while (depth > 0 && !w.tail.empty() && w.tail.front() == ')') {
            w.core += ')';
            w.tail.erase(w.tail.begin());
            --depth;
        }
    }
    for (std::size_t k = 0; k < words.size(); ++k) {
        const bool beside_operator = (k > 0 && is_operator(words[k - 1].core) && words[k - 1].tail.empty() && words[k].lead.empty()) ||
                                     (k + 1 < words.size() && is_operator(words[k + 1].core) && words[k].tail.empty() && words[k + 1].lead.empty());
        if (!words[k].core.empty() && beside_operator) math[k] = true;
    }
    std::string out;
    auto add = [&](const std::string& piece) { out += (out.empty() ? "" : " ") + piece; };
    for (std::size_t k = 0; k < words.size();) {
        if (!math[k]) {
            add(latex_text(words[k].lead + words[k].core + words[k].tail));
            ++k;
            continue;
        }
        // A formula runs over math words until one ends in punctuation or the next opens a bracket.
        const std::string lead = words[k].lead;
        std::string formula = words[k].core;
        while (words[k].tail.empty() && k + 1 < words.size() && math[k + 1] && words[k + 1].lead.empty()) formula += " " + words[++k].core;
        add(latex_text(lead) + "$" + math_of(formula) + "$" + latex_text(words[k].tail));
        ++k;
    }
    return out;
}

std::string markdown_text(const std::string& text) {
    static const std::string special = "\\`*_[]<>|~$";
    std::string out;
    for (char c : text) {
        if (special.find(c) != std::string::npos) out += '\\';
        out += c;
    }
    return out;
}

}  // namespace attn_trace
