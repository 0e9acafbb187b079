// models/gpt2/hf_export.h
//
// WriteHfGpt2: a dagrad model file of models::Gpt2 (what ReadHfGpt2 reads,
// or what a trainer's SaveModel writes for it) written back as a Hugging
// Face GPT-2 directory, which GPT2LMHeadModel.from_pretrained(dir) loads:
//
// config.json in transformers' GPT2Config keys, sorted and indented as
// save_pretrained writes them; model.safetensors, the parameters under HF's
// names and layouts (Conv1D weights (in, out)), float32, the tied head not
// stored, metadata {"format": "pt"}; and vocab.json and merges.txt, copied
// from the tokenizer's directory.
//
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile m, ReadCheckpoint("runs/x/model.safetensors"));
//   DAGRAD_RETURN_IF_ERROR(WriteHfGpt2(m, "runs/x/model.safetensors", "gpt2", "gpt2-tuned"));

#ifndef DAGRAD_MODELS_GPT2_HF_EXPORT_H_
#define DAGRAD_MODELS_GPT2_HF_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/io/safetensors.h"
#include "models/gpt2/hf_config.h"

namespace dagrad::models {

// HfGpt2ConfigJson returns config.json's text for `config`: its sizes and
// options under GPT2Config's names, model_type gpt2, architectures
// ["GPT2LMHeadModel"], n_inner null for 4 n_embd, the config's dropouts
// (attn_pdrop, embd_pdrop, resid_pdrop: those dagrad trained with, so a
// further fine-tune in transformers goes on as dagrad's did; a model file
// written before Gpt2 had dropouts reads as 0.0 each), tie_word_embeddings
// true, and
// bos_token_id = eos_token_id = `end_of_text` (null when it is < 0: a
// vocabulary without "<|endoftext|>").
std::string HfGpt2ConfigJson(const Gpt2Config& config, int64_t end_of_text);

// WriteHfGpt2 writes `model` (named `model_path` in messages) to `out_dir`,
// creating it when missing, the four files as one (WriteFilesAtomically: a
// failure while writing leaves an earlier export there as it was).
// Errors: InvalidArgument naming model_path for a file that is not a gpt2
// model (its metadata's 'model' field, a missing or malformed config key,
// a missing, extra or misshapen tensor: Gpt2Config::FromCheckpoint);
// Gpt2Tokenizer::LoadDirectory's errors naming tokenizer_dir's vocab.json
// or merges.txt (NotFound for a missing file); InvalidArgument when the
// tokenizer has more tokens than the model's vocab_size, and when out_dir is
// tokenizer_dir or holds model_path (it would replace them); the errno's code
// naming out_dir or the file that cannot be written.
absl::Status WriteHfGpt2(const SafetensorsFile& model, absl::string_view model_path,
                         absl::string_view tokenizer_dir, absl::string_view out_dir);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT2_HF_EXPORT_H_
