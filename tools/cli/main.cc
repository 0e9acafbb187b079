// The `dagrad` command-line program: subcommands info, dot, train, eval.
#include <iostream>

#include "ops/cpu_runtime.h"

int main(int argc, char** argv) {
  dagrad::CpuInfo info = dagrad::GetCpuInfo();
  std::cout << "BLIS " << info.blis_version << " kernels " << info.blis_arch << "\n";
  return 0;
}
