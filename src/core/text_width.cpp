#include "attn_trace/text_width.hpp"

#include <algorithm>
#include <cwchar>
#include <cstdint>
#include <initializer_list>

#include <fmt/format.h>

#include <locale.h>  // newlocale, uselocale (POSIX 2008)

namespace attn_trace {

namespace {

// glibc's mbrtowc and wcwidth read LC_CTYPE, and the program's locale stays "C" (its
// numbers read the same in every locale). So the text is read under a UTF-8 locale of
// its own, made once and set for the calling thread only while it reads. Null where
// no such locale is installed (Debian's libc-bin always has C.UTF-8).
locale_t utf8_locale() {
    static const locale_t locale = [] {
        for (const char* name : {"C.UTF-8", "en_US.UTF-8"})
            if (const locale_t found = newlocale(LC_CTYPE_MASK, name, locale_t{})) return found;
        return locale_t{};
    }();
    return locale;
}

class ThreadLocale {
public:
    explicit ThreadLocale(locale_t locale) : previous_(locale ? uselocale(locale) : locale_t{}) {}
    ~ThreadLocale() {
        if (previous_) uselocale(previous_);
    }
    ThreadLocale(const ThreadLocale&) = delete;
    ThreadLocale& operator=(const ThreadLocale&) = delete;

private:
    locale_t previous_;
};

// Calls visit(character, columns, start, bytes) for each character of `text` in turn,
// until it returns false. A byte that does not start valid UTF-8 is one character
// U+FFFD, as a terminal shows it. Without a UTF-8 locale every non-ASCII character is
// U+FFFD one column wide: code points are counted, as before there were widths.
template <class Visit>
void for_each_character(const std::string& text, Visit visit) {
    const locale_t utf8 = utf8_locale();
    const ThreadLocale scope(utf8);
    std::mbstate_t state{};
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t left = text.size() - i;
        wchar_t c = 0;
        std::size_t bytes = 0;
        if (!utf8) {
            const auto lead = static_cast<unsigned char>(text[i]);
            c = lead < 0x80 ? static_cast<wchar_t>(lead) : L'\uFFFD';
            bytes = std::min(utf8_length(lead), left);
        } else {
            bytes = std::mbrtowc(&c, text.data() + i, left, &state);
            if (bytes == 0) bytes = 1;  // an embedded NUL
            if (bytes > left) c = L'\uFFFD', bytes = 1, state = std::mbstate_t{};  // (size_t) −1 or −2: not UTF-8
        }
        const int columns = wcwidth(c);  // −1: a control character, or one the C library does not know
        if (!visit(static_cast<char32_t>(c), columns < 0 ? std::size_t{1} : static_cast<std::size_t>(columns), i, bytes)) return;
        i += bytes;
    }
}

bool printable_ascii(const std::string& text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7F; });
}

}  // namespace

std::size_t display_width(const std::string& text) {
    if (printable_ascii(text)) return text.size();  // numbers: every cell of every table
    std::size_t width = 0;
    for_each_character(text, [&](char32_t, std::size_t columns, std::size_t, std::size_t) {
        width += columns;
        return true;
    });
    return width;
}

std::string fit_width(const std::string& text, std::size_t width) {
    if (display_width(text) <= width) return text;
    if (width == 0) return "";
    std::size_t used = 0, end = 0;
    for_each_character(text, [&](char32_t, std::size_t columns, std::size_t start, std::size_t bytes) {
        if (used + columns > width - 1) return false;  // one column is the "…"'s
        used += columns;
        end = start + bytes;
        return true;
    });
    return text.substr(0, end) + "…";
}

std::string visible_text(const std::string& text) {
    std::string out;
    bool changed = false;
    for_each_character(text, [&](char32_t c, std::size_t, std::size_t start, std::size_t bytes) {
        const bool control = c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029;
        changed = changed || control;
        if (!control) out.append(text, start, bytes);
        else if (c == U'\n') out += "\\n";
        else if (c == U'\t') out += "\\t";
        else if (c == U'\r') out += "\\r";
        else out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(c));
        return true;
    });
    return changed ? out : text;  // the bytes as given, invalid UTF-8 included, when nothing was escaped
}

}  // namespace attn_trace
