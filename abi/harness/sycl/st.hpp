// st.hpp: what the SYCL test programs share (see abi/harness/src/lib.rs).
// Each program prints "not ok ..." per failed check and "ok <program>" at the
// end, exits 0 when every check held, and 77 after "skip: <why>" when the
// device lacks what it needs.
#pragma once
#include <sycl/sycl.hpp>
#include <sycl/ext/oneapi/experimental/graph.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace st {
inline int failures = 0;

#define ST_CHECK(cond, ...)                                                  \
  do {                                                                       \
    if (!(cond)) {                                                           \
      ++st::failures;                                                        \
      std::printf("not ok %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      std::printf(__VA_ARGS__);                                              \
      std::printf("\n");                                                     \
      std::fflush(stdout);                                                   \
    }                                                                        \
  } while (0)

// Runs the program's body, turning an exception into a failure.
template <class F> int run(const char *program, F body) {
  try {
    body();
  } catch (const sycl::exception &e) {
    ++failures;
    std::printf("not ok %s: sycl::exception: %s\n", program, e.what());
  }
  if (failures == 0) {
    std::printf("ok %s\n", program);
    return 0;
  }
  std::printf("not ok %s: %d checks failed\n", program, failures);
  return 1;
}

[[noreturn]] inline void skip(const std::string &why) {
  std::printf("skip: %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(77);
}
} // namespace st
