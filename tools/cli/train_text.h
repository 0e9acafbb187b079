// tools/cli/train_text.h
//
// `dagrad train --task=text --data=FILE`: a GPT trained byte-level on a text
// file (train_text.cc says what it writes).

#ifndef DAGRAD_TOOLS_CLI_TRAIN_TEXT_H_
#define DAGRAD_TOOLS_CLI_TRAIN_TEXT_H_

#include "tools/cli/command.h"
#include "tools/cli/train_run.h"

namespace dagrad::cli {

// RunTextTrain runs `cmd` (the train command) with --task=text and the
// shared training flags (RunTraining) as a rank of `job`, data parallel
// with `parallel` when the job has several ranks; the exit code.
int RunTextTrain(const Command& cmd, const models::RunConfig& run, const DataParallelOptions& parallel,
                 Job& job);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_TRAIN_TEXT_H_
