// engine/checkpoint.h
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
// Values are never converted: a float64 tensor does not load into a float32
// variable.

#ifndef DAGRAD_ENGINE_CHECKPOINT_H_
#define DAGRAD_ENGINE_CHECKPOINT_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/safetensors.h"

namespace dagrad {

// CheckpointName returns the node's path with '/' replaced by '.'.
//   CheckpointName(w.node());   // "encoder.layers.0.linear1.weight"
std::string CheckpointName(const Node& node);

// LoadOptions controls how a checkpoint must match the variables.
struct LoadOptions {
  // strict: every variable must be in the checkpoint and every tensor of the
  // checkpoint must be a variable (PyTorch's load_state_dict(strict=True)).
  // Not strict: missing variables keep their values and unexpected tensors
  // are ignored. Either way a tensor whose dtype or shape differs from its
  // variable's is an error.
  bool strict = true;
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
// expects float32 (128, 32)". Nothing is assigned then. Internal when the
// device fails to take a value after all was validated (the variables may
// then be partly loaded; that is a device fault, not a checkpoint's).
//
//   DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, g.Parameters(), file, "pretrained"));
absl::Status AssignVariables(Executor& executor, absl::Span<const Value> variables,
                             const SafetensorsFile& file, absl::string_view source,
                             const LoadOptions& options = {});

// SaveVariables writes `variables` and `metadata` to the safetensors file
// at `path`, atomically (WriteSafetensors): on any error the previous file
// is left as it was.
//
// Errors: those of CollectVariables and WriteSafetensors (NotFound for a
// missing directory, ...); nothing is written then.
//
//   DAGRAD_RETURN_IF_ERROR(SaveVariables(exec, g.Parameters(),
//                                        {{"step", absl::StrCat(step)}}, "ckpt.safetensors"));
absl::Status SaveVariables(Executor& executor, absl::Span<const Value> variables,
                           const std::map<std::string, std::string>& metadata,
                           const std::string& path);

// LoadVariables reads the safetensors file at `path` into `variables` (all
// or none, see AssignVariables) and returns the file's metadata.
//
// Errors: those of ReadSafetensors (NotFound, InvalidArgument for a
// malformed file, Unimplemented for an unsupported dtype) and of
// AssignVariables.
//
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
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, CollectVariables(exec, vars));
//   DAGRAD_RETURN_IF_ERROR(RequireFinite(f));
//   DAGRAD_RETURN_IF_ERROR(WriteSafetensors(path, f));
absl::Status RequireFinite(const SafetensorsFile& file);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_CHECKPOINT_H_
