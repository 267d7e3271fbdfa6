#include "report_error.hpp"

#include <new>
#include <ostream>

#include "attn_trace/cli_words.hpp"

namespace attn_trace::cli {

int report_error(std::exception_ptr error, std::ostream& out) {
    constexpr const char* internal = "attn-trace: internal error (a bug in attn-trace; please report it with the command and the file): ";
    try {
        std::rethrow_exception(error);
    } catch (const Error& e) {
        out << "attn-trace: error: " << cli_message(e) << "\n";
        return e.exit_code();
    } catch (const std::bad_alloc&) {
        out << "attn-trace: error: out of memory (the problem is too large for this machine; --max-memory sets the budget)\n";
        return 2;
    } catch (const std::exception& e) {
        out << internal << e.what() << "\n";
        return 4;
    } catch (...) {
        out << internal << "an exception of unknown type\n";
        return 4;
    }
}

}  // namespace attn_trace::cli
