// Limits of headwise that callers can see, stated once.
#pragma once

namespace headwise {

// The most OpenMP threads any call accepts. More would only oversubscribe the machine,
// and libgomp runs out of stack long before 100,000 threads; larger requests are
// refused (the command line and the C API) or clamped (Session::set_threads).
constexpr int kMaxThreads = 1024;

}  // namespace headwise
