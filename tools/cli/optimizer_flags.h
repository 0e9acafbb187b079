// tools/cli/optimizer_flags.h
//
// `dagrad train`'s optimizer and learning-rate flags: --optimizer, --beta1,
// --beta2, --eps, --weight_decay, --clip (OptimizerOptions,
// ops/autodiff/optimizer.h) and --lr_decay, --final_lr_fraction (the
// schedule after --warmup, LrSchedule). Their ranges are checked where the
// config is (ValidateOptimizerOptions, models::RunConfig::Validate), naming the flag.
//
//   DAGRAD_ASSIGN_OR_RETURN(OptimizerOptions o, OptimizerFromFlags());  // o.beta2 = --beta2

#ifndef DAGRAD_TOOLS_CLI_OPTIMIZER_FLAGS_H_
#define DAGRAD_TOOLS_CLI_OPTIMIZER_FLAGS_H_

#include "absl/status/statusor.h"
#include "ops/autodiff/optimizer.h"

namespace dagrad::cli {

// OptimizerFromFlags returns the options the flags set (precision left at
// its default): InvalidArgument for an unknown --optimizer, or for --beta1,
// --beta2 or --eps given with --optimizer=sgd, which keeps no moments.
absl::StatusOr<OptimizerOptions> OptimizerFromFlags();

// LrDecayFromFlags returns --lr_decay: InvalidArgument naming the flag
// when it is not cosine, linear or constant.
absl::StatusOr<LrDecay> LrDecayFromFlags();

// FinalLrFractionFlag returns --final_lr_fraction (its range is the
// config's: [0, 1]).
double FinalLrFractionFlag();

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_OPTIMIZER_FLAGS_H_
