// Converts the double given as argv[1] to int64, for ctest
// sanitize_float_cast_overflow: in a DAGRAD_SANITIZE build, 1e300 must be
// reported as out of int64's range (GCC's -fsanitize=undefined alone lets
// it pass; CMakeLists.txt adds float-cast-overflow).

#include <cstdint>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  // Read at run time, so that the compiler cannot fold the conversion.
  const double value = std::strtod(argc > 1 ? argv[1] : "0", nullptr);
  std::printf("%lld\n", static_cast<long long>(static_cast<int64_t>(value)));
  return 0;
}
