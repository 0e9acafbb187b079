// engine/io/checkpoint.h
//
// Checkpoints: variable values moved between an Executor and safetensors
// files, by name. A variable's checkpoint name is its graph path with '/'
// replaced by '.', so a model built with PyTorch's module names as scopes
// saves PyTorch state_dict names and loads PyTorch's files unchanged:
//
//   scope "encoder/layers/0/self_attn", name "in_proj_weight"
//     -> "encoder.layers.0.self_attn.in_proj_weight"
//
//   DAGRAD_RETURN_IF_ERROR(SaveVariables(exec, g.Parameters(), {{"dim", "64"}}, path));
//   DAGRAD_ASSIGN_OR_RETURN(auto metadata, LoadVariables(exec, g.Parameters(), path));
//
// Loading is all-or-nothing: the whole checkpoint is checked against the
// variables (names, dtypes, shapes) before any variable is assigned, so a
// checkpoint that does not fit leaves the executor's values as they were.
// Values are converted only where that is exact: a BF16 or F16 tensor
// loads into a float32 or float64 variable too (a bfloat16 checkpoint into
// float32 parameters), widened. Nothing is rounded: a float64 tensor does
// not load into a float32 variable, nor a float32 one into a bfloat16
// variable. Saving writes each variable in its own dtype, so a bfloat16
// variable is saved as BF16; the checksums cover the bytes as stored.
//
// Integrity: the checkpoints dagrad writes carry CRC-32C checksums in their
// metadata, under kChecksumKey: "<header> <tensor 1> <tensor 2> ...", each
// 8 lower-case hex digits. The first covers what the header says (every
// tensor's name, dtype and shape, and every other metadata entry), then one
// per tensor, in name order, covers its data bytes. Reading verifies them,
// so a file damaged on disk or in transit is refused, naming the tensor,
// instead of loading wrong values; other readers (PyTorch's safetensors)
// see one more metadata string and ignore it.
//
// dagrad's own files must carry the checksums: one without kChecksumKey is
// damaged (a damaged byte in the key's name must not turn verification
// off). A file is dagrad's own when its reader takes nothing else (a
// training checkpoint for --resume: ReadCheckpointOptions), or when its
// metadata has a key beginning "dagrad." or a value of the checksum list's
// form (8 hex digits for the header and each tensor: a checksum key whose
// name was damaged). Files of other writers, without any of these, load
// unverified: PyTorch's state_dicts, and the reference models' files
// (tools/reference), which carry the config keys (dim, layers, ...) too.

#ifndef DAGRAD_ENGINE_IO_CHECKPOINT_H_
#define DAGRAD_ENGINE_IO_CHECKPOINT_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"

namespace dagrad {

// The metadata key of the checksums (see the top of this file).
inline constexpr char kChecksumKey[] = "dagrad.crc32c";

// CheckpointName returns the node's path with '/' replaced by '.'.
//   CheckpointName(w.node());   // "encoder.layers.0.linear1.weight"
std::string CheckpointName(const Node& node);

// LoadOptions controls how a checkpoint must match the variables.
struct LoadOptions {
  // strict: every variable must be in the checkpoint and every tensor of the
  // checkpoint must be a variable (PyTorch's load_state_dict(strict=True)).
  // Not strict: missing variables keep their values and unexpected tensors
  // are ignored. Either way a tensor whose shape differs from its
  // variable's, or whose dtype does not load into it (see above), is an
  // error.
  bool strict = true;
  // from_metadata: for variables of the model that the checkpoint's
  // metadata describes, that config ("dim=16, layers=1, ..."): messages then
  // say that the metadata does not account for an unexpected tensor.
  std::string from_metadata;
};

// ReadCheckpointOptions says what a reader accepts.
struct ReadCheckpointOptions {
  // require_checksums: the file must be one dagrad wrote, with its
  // checksums (a training checkpoint); one without them is damaged.
  bool require_checksums = false;
};

// CollectVariables returns the current values of `variables` (initialising
// any not yet materialised), each under its checkpoint name.
//
// Errors: InvalidArgument for a Value that is not a variable of the
// executor's graph, a variable listed twice, or two variables whose paths
// map to one checkpoint name ("a/b.c" and "a.b/c" both give "a.b.c").
//
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, CollectVariables(exec, g.Variables()));
absl::StatusOr<SafetensorsFile> CollectVariables(Executor& executor,
                                                 absl::Span<const Value> variables);

// AssignVariables sets `variables` from the tensors of `file` with their
// checkpoint names, all or none. `source` names the checkpoint in messages.
//
// Errors: those of CollectVariables for the `variables` argument;
// InvalidArgument when the file does not match, listing every problem: the
// missing and unexpected names (when strict) and each mismatch, as in
// "encoder.layers.0.linear1.weight: checkpoint has float32 (64, 32), model
// expects float32 (128, 32)"; ResourceExhausted when widening a 16-bit
// tensor runs out of memory. Nothing is assigned then. Internal when the
// device fails to take a value after all was validated (the variables may
// then be partly loaded; that is a device fault, not a checkpoint's).
//
//   // setup: Checkpoint
//   DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, g.Parameters(), file, "pretrained"));
absl::Status AssignVariables(Executor& executor, absl::Span<const Value> variables,
                             const SafetensorsFile& file, absl::string_view source,
                             const LoadOptions& options = {});

// MatchVariables checks, assigning nothing, that `file` fits `variables`
// as AssignVariables would load it: every tensor the dtype and shape of
// its variable and, when strict, the file's tensor names exactly the
// variables' checkpoint names. Every reader of a checkpoint goes through
// it (AssignVariables does; the models' FromCheckpoint check a file
// against the model its metadata describes, before anything is built).
//
// Errors: those of AssignVariables, but for a Value of another graph than
// the first one's; nothing about the device.
//
//   // setup: Checkpoint
//   DAGRAD_RETURN_IF_ERROR(MatchVariables(g.Parameters(), file, "'pretrained'",
//                                         {.from_metadata = "dim=64"}));
absl::Status MatchVariables(absl::Span<const Value> variables, const SafetensorsFile& file,
                            absl::string_view source, const LoadOptions& options = {});

// WriteCheckpoint adds the checksums to `file`'s metadata and writes it to
// `path` atomically (WriteSafetensors), keeping the file it replaces when
// `options` say so.
//
// Errors: InvalidArgument when the metadata already has kChecksumKey;
// those of SerializeSafetensors and WriteFileAtomically (nothing is
// written then).
//
//   // setup: Checkpoint
//   DAGRAD_RETURN_IF_ERROR(WriteCheckpoint("ckpt.safetensors", std::move(file)));
absl::Status WriteCheckpoint(const std::string& path, SafetensorsFile file,
                             const AtomicWriteOptions& options = {});

// ReadCheckpoint reads the safetensors file at `path` and verifies its
// checksums, which dagrad's own files must have (see the top of this
// file); the returned metadata no longer holds kChecksumKey.
//
// Errors: those of ReadFile (NotFound, PermissionDenied, ...); DataLoss for
// a damaged file: one that does not parse (truncated, overwritten: the
// InvalidArgument of ParseSafetensors becomes DataLoss), whose header or
// tensor data fails its checksum ("damaged checkpoint 'c.safetensors':
// tensor 'w': ..."), or one of dagrad's without checksums; Unimplemented
// for a dtype dagrad lacks.
//
//   // setup: Checkpoint
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ReadCheckpoint("ckpt.safetensors"));
//   DAGRAD_ASSIGN_OR_RETURN(f, ReadCheckpoint("ckpt.safetensors", {.require_checksums = true}));
absl::StatusOr<SafetensorsFile> ReadCheckpoint(const std::string& path,
                                               const ReadCheckpointOptions& options = {});

// ParseCheckpoint is ReadCheckpoint of a whole file held in `bytes`, which
// messages call "safetensors data" (as ParseSafetensors does): for a
// checkpoint that comes other than as a file, and for tests that check
// thousands of damaged copies.
//
//   // setup: Checkpoint
//   DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile("ckpt.safetensors"));
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ParseCheckpoint(bytes));
absl::StatusOr<SafetensorsFile> ParseCheckpoint(absl::string_view bytes,
                                                const ReadCheckpointOptions& options = {});

// SaveVariables writes `variables` and `metadata` to the checkpoint at
// `path` with WriteCheckpoint: atomically, so on any error the previous
// file is left as it was, and with checksums.
//
// Errors: those of CollectVariables and WriteCheckpoint (NotFound for a
// missing directory, ...); nothing is written then.
//
//   DAGRAD_RETURN_IF_ERROR(SaveVariables(exec, g.Parameters(),
//                                        {{"step", absl::StrCat(step)}}, "ckpt.safetensors"));
absl::Status SaveVariables(Executor& executor, absl::Span<const Value> variables,
                           const std::map<std::string, std::string>& metadata,
                           const std::string& path, const AtomicWriteOptions& options = {});

// LoadVariables reads the checkpoint at `path` (ReadCheckpoint) into
// `variables` (all or none, see AssignVariables) and returns its metadata.
//
// Errors: those of ReadCheckpoint (NotFound, DataLoss for a damaged file,
// Unimplemented for an unsupported dtype) and of AssignVariables
// (InvalidArgument for a file that does not fit the variables).
//
//   // setup: Checkpoint
//   DAGRAD_ASSIGN_OR_RETURN(auto metadata, LoadVariables(exec, g.Parameters(), path));
//   int dim = std::stoi(metadata.at("dim"));
absl::StatusOr<std::map<std::string, std::string>> LoadVariables(
    Executor& executor, absl::Span<const Value> variables, const std::string& path,
    const LoadOptions& options = {});

// RequireFinite returns FailedPrecondition naming the first tensor of
// `file` (in order) that holds a NaN or +-Inf, with the element's index and
// value, so that a diverged run is never saved over a good checkpoint.
// Integer and bool tensors are always finite.
//
//   // setup: Checkpoint
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, CollectVariables(exec, vars));
//   DAGRAD_RETURN_IF_ERROR(RequireFinite(f));
//   DAGRAD_RETURN_IF_ERROR(WriteSafetensors(path, f));
absl::Status RequireFinite(const SafetensorsFile& file);

// MetadataNumber writes `x` for a checkpoint's metadata so that it reads
// back (absl::SimpleAtod) as exactly `x`: as absl::StrCat writes it (six
// significant digits) when that is exact, so that files written before
// compare equal, and otherwise with the fewest digits that are (at most 17).
//
//   std::string lr = MetadataNumber(3e-4);          // "0.0003"
//   std::string third = MetadataNumber(1.0 / 3);    // "0.3333333333333333"
std::string MetadataNumber(double x);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_IO_CHECKPOINT_H_
