// tests/support/gpt_fixtures.h
//
// What the GPT tests share (gpt_test.cc, generator_test.cc,
// gpt_text_test.cc, cli_gpt_test.cc): the reference's goldens
// (tools/goldens/gpt.py), the relative error they are compared by, and
// small text corpora written to files.

#ifndef DAGRAD_TESTS_SUPPORT_GPT_FIXTURES_H_
#define DAGRAD_TESTS_SUPPORT_GPT_FIXTURES_H_

#include <string>

#include "engine/io/safetensors.h"
#include "engine/tensor.h"

namespace dagrad::testing {

// GptGoldens is tests/data/goldens/gpt/ (model.safetensors,
// input.safetensors, expected.safetensors), with the trailing slash.
std::string GptGoldens();

// HfGpt2Tiny is tests/data/hf_gpt2_tiny: a tiny GPT-2 in Hugging Face's own
// files, with transformers' outputs (its README.md says which file is what).
std::string HfGpt2Tiny();

// HfGpt2TinyWeights is HfGpt2Tiny()'s model.safetensors, read.
SafetensorsFile HfGpt2TinyWeights();

// TextCorpus is `repeats` times two pangram lines (90 bytes).
std::string TextCorpus(int repeats);

// WriteBytes writes `bytes` to `path` as they are.
void WriteBytes(const std::string& path, const std::string& bytes);

// WriteCorpus writes TextCorpus(repeats) to a fresh directory named `name`
// and returns the file's path.
std::string WriteCorpus(const std::string& name, int repeats);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_GPT_FIXTURES_H_
