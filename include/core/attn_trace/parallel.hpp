#pragma once
// One way to run work on several threads. An exception thrown on a worker thread
// (std::bad_alloc, an InputError) would otherwise call std::terminate, an abort
// with no message; here the first one is kept and rethrown on the calling thread
// once every worker has stopped, so the CLI reports it like any other.
#include <cstddef>
#include <functional>

namespace attn_trace {

// Runs work(item, worker) for item = 0 … count−1 on `threads` workers (the calling
// thread is worker 0); items go to whichever worker is free next. After a worker
// throws, no new items start.
void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t, int)>& work);

}  // namespace attn_trace
