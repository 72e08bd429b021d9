// What the tools report about their own process: CPU time (to tell a busy machine from
// a slow kernel: CPU time over wall time) and peak resident memory.
#pragma once

#include <sys/resource.h>

namespace headwise::tools {

// User + system CPU seconds of this process so far (all threads).
inline double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + t.tv_usec * 1e-6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// Peak resident set size of this process, in bytes.
inline double peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) * 1024.0;  // Linux reports KiB
}

}  // namespace headwise::tools
