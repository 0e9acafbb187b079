#include "engine/cuda/cublas_api.h"

#include <dlfcn.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dagrad {
namespace {

absl::StatusOr<const CublasApi*> Load() {
  const std::string soname = absl::StrCat("libcublas.so.", CUBLAS_VER_MAJOR);
  std::vector<std::string> tried;
  void* lib = nullptr;
  for (const std::string& path : {soname, absl::StrCat(DAGRAD_CUDA_LIBRARY_DIR, "/", soname)}) {
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* why = dlerror();
    tried.push_back(absl::StrCat(path, " (", why ? why : "unknown error", ")"));
  }
  if (lib == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot load cuBLAS: ", absl::StrJoin(tried, "; ")));
  }
  auto* api = new CublasApi();
  std::vector<std::string> missing;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (fn == nullptr) missing.push_back(name);
  };
  bind(api->create, "cublasCreate_v2");
  bind(api->destroy, "cublasDestroy_v2");
  bind(api->set_stream, "cublasSetStream_v2");
  bind(api->set_workspace, "cublasSetWorkspace_v2");
  bind(api->set_math_mode, "cublasSetMathMode");
  bind(api->set_pointer_mode, "cublasSetPointerMode_v2");
  bind(api->status_name, "cublasGetStatusName");
  bind(api->status_string, "cublasGetStatusString");
  bind(api->sgemm, "cublasSgemm_v2_64");
  bind(api->dgemm, "cublasDgemm_v2_64");
  bind(api->sgemm_strided_batched, "cublasSgemmStridedBatched_64");
  bind(api->dgemm_strided_batched, "cublasDgemmStridedBatched_64");
  bind(api->sgemm_batched, "cublasSgemmBatched_64");
  bind(api->dgemm_batched, "cublasDgemmBatched_64");
  bind(api->gemm_ex, "cublasGemmEx_64");
  bind(api->gemm_strided_batched_ex, "cublasGemmStridedBatchedEx_64");
  bind(api->gemm_batched_ex, "cublasGemmBatchedEx_64");
  if (!missing.empty()) {
    delete api;
    dlclose(lib);
    return absl::UnavailableError(absl::StrCat("cuBLAS (", soname, ") lacks ",
                                               absl::StrJoin(missing, ", ")));
  }
  // The library stays loaded for the life of the process.
  return api;
}

}  // namespace

absl::StatusOr<const CublasApi*> LoadCublas() {
  static const absl::StatusOr<const CublasApi*>* const api =
      new absl::StatusOr<const CublasApi*>(Load());
  return *api;
}

}  // namespace dagrad
