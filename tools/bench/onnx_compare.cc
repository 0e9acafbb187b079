// The toy transformer's inference in dagrad, for tools/bench/onnx_compare.sh
// to set against ONNX Runtime on the same model exported by `dagrad export`.
//
//   ./build/tools/onnx_compare --out_dir=DIR [--batch=32] [--seq=32]
//       [--threads=1] [--repeat=50] [--profile=1]
//
// Builds the toy transformer at its default size (vocab 16, seq_len 32,
// dim 128, 4 heads, 2 layers, ffn 512) with its random initial values,
// writes them as DIR/model.safetensors (a checkpoint `dagrad export` reads)
// and random tokens and lengths (batch, seq) as DIR/input.safetensors, runs
// the logits once to warm up and `repeat` times more, writes the logits as
// DIR/dagrad_logits.safetensors and prints "dagrad_ms_median=<ms>";
// --profile=1 also prints the time by op (ExecutorOptions::profile).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/blames_input.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/toy/transformer.h"
#include "ops/cpu/cpu_runtime.h"

namespace dagrad {
namespace {

// Inputs returns tokens in [0, vocab) and lengths in [1, seq], seeded.
absl::StatusOr<SafetensorsFile> Inputs(int64_t batch, int64_t seq, int64_t vocab) {
  std::vector<int64_t> tokens(batch * seq), lengths(batch);
  uint64_t state = 12345;
  auto next = [&state](int64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(n));
  };
  for (int64_t& t : tokens) t = next(vocab);
  for (int64_t& l : lengths) l = 1 + next(seq);
  SafetensorsFile f;
  DAGRAD_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector(Shape({batch, seq}), tokens));
  DAGRAD_ASSIGN_OR_RETURN(Tensor l, Tensor::FromVector(Shape({batch}), lengths));
  f.tensors = {{"tokens", t}, {"lengths", l}};
  return f;
}

absl::Status Run(const std::map<std::string, std::string>& flags) {
  for (const auto& [name, value] : flags) {
    if (name != "out_dir" && name != "batch" && name != "seq" && name != "repeat" &&
        name != "threads" && name != "profile") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag --", name, " (--out_dir, --batch, --seq, --repeat, --threads, --profile)"));
    }
  }
  absl::Status bad;
  auto flag = [&](const char* name, int64_t fallback, int64_t lowest = 1) {
    auto it = flags.find(name);
    int64_t v = fallback;
    if (it != flags.end() && (!absl::SimpleAtoi(it->second, &v) || v < lowest)) {
      bad = absl::InvalidArgumentError(
          absl::StrCat("--", name, " must be an integer >= ", lowest, ", got '", it->second, "'"));
    }
    return v;
  };
  const std::string dir = flags.count("out_dir") ? flags.at("out_dir") : "";
  if (dir.empty()) return absl::InvalidArgumentError("--out_dir is required");
  const int64_t batch = flag("batch", 32), seq = flag("seq", 32), repeat = flag("repeat", 50);
  const int64_t threads = flag("threads", 1);
  const bool profile = flag("profile", 0, 0) != 0;
  DAGRAD_RETURN_IF_ERROR(bad);
  DAGRAD_RETURN_IF_ERROR(ConfigureCpu());
  DAGRAD_RETURN_IF_ERROR(SetNumThreads(static_cast<int>(threads)));
  const models::ToyConfig config;
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(models::ToyTransformer model, models::ToyTransformer::Create(g, config));
  Value tokens = g.Input("tokens", DType::kInt64, {batch, seq});
  Value lengths = g.Input("lengths", DType::kInt64, {batch});
  Value logits = model(tokens, lengths).logits;
  DAGRAD_RETURN_IF_ERROR(g.status());
  Executor exec(g, ExecutorOptions{.profile = profile});
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, CollectVariables(exec, model.parameters()));
  ckpt.metadata = config.ToMetadata();
  DAGRAD_RETURN_IF_ERROR(WriteCheckpoint(dir + "/model.safetensors", ckpt));
  DAGRAD_ASSIGN_OR_RETURN(const SafetensorsFile in, Inputs(batch, seq, config.vocab));
  DAGRAD_RETURN_IF_ERROR(WriteSafetensors(dir + "/input.safetensors", in));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({logits}));
  const Feeds feeds = {{tokens, in.tensors[0].second}, {lengths, in.tensors[1].second}};
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, exec.Run(*plan, feeds));
  std::vector<double> ms;
  for (int64_t i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    DAGRAD_ASSIGN_OR_RETURN(out, exec.Run(*plan, feeds));
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("dagrad_ms_median=%.4f runs=%lld threads=%d\n", ms.empty() ? 0 : ms[ms.size() / 2],
              static_cast<long long>(repeat), NumThreads());
  if (profile) std::printf("%s", plan->profile().ToString().c_str());
  SafetensorsFile result;
  result.tensors.push_back({"logits", out[0]});
  return WriteSafetensors(dir + "/dagrad_logits.safetensors", result);
}

}  // namespace
}  // namespace dagrad

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const char* eq = std::strchr(argv[i], '=');
    if (std::strncmp(argv[i], "--", 2) != 0 || eq == nullptr) {
      std::fprintf(stderr, "onnx_compare: unexpected argument '%s' (--name=value)\n", argv[i]);
      return 2;
    }
    flags[std::string(argv[i] + 2, eq - argv[i] - 2)] = eq + 1;
  }
  if (absl::Status st = dagrad::Run(flags); !st.ok()) {
    std::fprintf(stderr, "onnx_compare: %s\n", std::string(st.message()).c_str());
    return dagrad::BlamesInput(st) ? 2 : 1;  // 2: a flag or file the user gave, as the CLI
  }
  return 0;
}
