// GPT-2's tokenizer (models/gpt/tokenizer.h) encoding 1 MB of text, one
// thread (the tokenizer has none of its own).
//
//   ./build/tools/tokenizer_bench DIR FILE [FILE ...]
//
// DIR holds vocab.json and merges.txt (tests/data/hf_gpt2_tiny/, or a real
// GPT-2's). Cases, each 1 MB (2^20 bytes):
//   encode/english    the FILEs (English prose: README.md, CONTRIBUTING.md)
//                     repeated to 1 MB, so words repeat as in English
//   encode/unique     words of random letters that never repeat, with
//                     spaces and punctuation: the per-call word cache helps
//                     nothing
//   decode/english    the ids of encode/english back to bytes
// bytes_per_second is of the text.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/io/file_io.h"
#include "models/gpt/tokenizer.h"

namespace dagrad {
namespace {

constexpr size_t kBytes = size_t{1} << 20;

std::string Repeated(const std::string& text) {
  std::string out;
  while (out.size() < kBytes) out += text;
  out.resize(kBytes);
  return out;
}

std::string UniqueWords() {
  std::mt19937 rng(1);
  std::string out;
  while (out.size() < kBytes) {
    out += ' ';
    const int n = 3 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) out += static_cast<char>('a' + rng() % 26);
    if (rng() % 8 == 0) out += ".,;'"[rng() % 4];
  }
  out.resize(kBytes);
  return out;
}

void Register(const models::Gpt2Tokenizer& tokenizer, const std::string& english) {
  const std::string unique = UniqueWords();
  const auto encode = [&tokenizer](benchmark::State& state, const std::string& text) {
    for (auto _ : state) benchmark::DoNotOptimize(tokenizer.Encode(text));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  };
  benchmark::RegisterBenchmark("encode/english", encode, english)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("encode/unique", encode, unique)->Unit(benchmark::kMillisecond);
  const std::vector<int64_t> ids = tokenizer.Encode(english);
  benchmark::RegisterBenchmark("decode/english", [&tokenizer, ids](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(tokenizer.Decode(ids));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
  })->Unit(benchmark::kMillisecond);
}

int Main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokenizer_bench DIR FILE [FILE ...]\n");
    return 2;
  }
  absl::StatusOr<models::Gpt2Tokenizer> tokenizer = models::Gpt2Tokenizer::LoadDirectory(argv[1]);
  std::string english;
  for (int i = 2; tokenizer.ok() && i < argc; ++i) {
    absl::StatusOr<std::string> text = ReadFile(argv[i]);
    if (!text.ok()) tokenizer = text.status();
    if (text.ok()) english += *text;
  }
  if (!tokenizer.ok() || english.empty()) {
    std::fprintf(stderr, "tokenizer_bench: %s\n",
                 tokenizer.ok() ? "the text files are empty"
                                : std::string(tokenizer.status().message()).c_str());
    return 2;
  }
  Register(*tokenizer, Repeated(english));
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}

}  // namespace
}  // namespace dagrad

int main(int argc, char** argv) { return dagrad::Main(argc, argv); }
