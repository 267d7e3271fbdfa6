#include "attn_trace/parallel.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attn_trace {

void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t, int)>& work) {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr first_error;
    std::mutex error_mutex;
    auto worker = [&](int id) {
        try {
            for (std::size_t item = next++; item < count && !failed; item = next++) work(item, id);
        } catch (...) {
            const std::lock_guard lock(error_mutex);
            if (!first_error) first_error = std::current_exception();
            failed = true;
        }
    };
    {
        std::vector<std::jthread> helpers;
        for (int id = 1; id < threads; ++id) helpers.emplace_back(worker, id);
        worker(0);
    }  // the jthreads join here
    if (first_error) std::rethrow_exception(first_error);
}

}  // namespace attn_trace
