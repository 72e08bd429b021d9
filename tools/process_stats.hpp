// What the tools report about their own process: CPU time (to tell a busy machine from
// a slow kernel: CPU time over wall time) and peak resident memory.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

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

// Resident set size of this process now, in bytes (0 if /proc is unavailable).
inline double current_rss_bytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return double(resident) * double(sysconf(_SC_PAGESIZE));
}

}  // namespace headwise::tools
