// The one way a kernel is chosen. Every op keeps its variants in one list, an .inc file
// with one line per variant, best ISA first (elementwise.inc, kv_convert.inc,
// attention.inc, linear.inc); the op's .cpp turns the lines into an array of entries,
// each with an `isa` member, and hands it out as a KernelList. Plans (graph/plan.cpp),
// tests and benchmarks all pick from those lists with select(): the best entry whose ISA
// the requested one covers (scalar < avx2 < avx512) and that accepts the problem. Which
// ISA is requested is decided once, when a plan is built (kernels::active_isa() at that
// moment); a running plan calls through the pointers it stored and never looks again.
#pragma once

#include <cstddef>

#include "kernels/dispatch.hpp"

namespace headwise::kernels {

template <class Entry>
struct KernelList {
  const Entry* first = nullptr;
  size_t count = 0;
  const Entry* begin() const { return first; }
  const Entry* end() const { return first + count; }
};

template <class Entry, size_t N>
constexpr KernelList<Entry> kernel_list(const Entry (&entries)[N]) {
  return {entries, N};
}

// True when code for `entry_isa` runs where `isa` is allowed.
constexpr bool covers(Isa isa, Isa entry_isa) { return int(entry_isa) <= int(isa); }

// The first (best) entry of `list` whose ISA `isa` covers and that `accepts`; null when
// there is none.
template <class Entry, class Accepts>
const Entry* select(KernelList<Entry> list, Isa isa, Accepts accepts) {
  for (const Entry& e : list)
    if (covers(isa, e.isa) && accepts(e)) return &e;
  return nullptr;
}

template <class Entry>
const Entry* select(KernelList<Entry> list, Isa isa) {
  return select(list, isa, [](const Entry&) { return true; });
}

}  // namespace headwise::kernels
