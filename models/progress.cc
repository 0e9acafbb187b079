#include "models/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"

namespace dagrad::models {

ProgressPrinter::ProgressPrinter(int64_t steps) : steps_(steps), tty_(isatty(STDOUT_FILENO)) {}

ProgressPrinter::~ProgressPrinter() { EndBar(); }

void ProgressPrinter::EndBar() {
  if (!bar_drawn_) return;
  std::printf("\n");
  std::fflush(stdout);
  bar_drawn_ = false;
}

void ProgressPrinter::Print(int64_t step, double loss, double accuracy, bool line) {
  const double rate = steps_per_second_;
  const std::string stats = absl::StrFormat("step %d/%d  loss %.4f  acc %.3f  %.1f steps/s  %.0fs left",
                                            step, steps_, loss, accuracy, rate,
                                            rate > 0 ? (steps_ - step) / rate : 0);
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = steps_ > 0 ? static_cast<int>(kWidth * step / steps_) : kWidth;
    std::printf("\r[%s%s] %s   ", std::string(filled, '#').c_str(),
                std::string(kWidth - filled, '.').c_str(), stats.c_str());
    std::fflush(stdout);
    bar_drawn_ = true;
  } else if (line) {
    // Flushed: a log file (a batch job's output) shows each line as it
    // comes, and keeps it when the process is killed.
    std::printf("%s\n", stats.c_str());
    std::fflush(stdout);
  }
}

FitOptions ProgressPrinter::Attach(FitOptions options) {
  if (!options.writer) return options;
  options.on_step = [this, then = std::move(options.on_step)](const FitProgress& p) {
    if (then) then(p);
    steps_per_second_ = p.steps_per_second;
    Print(p.step.step, p.step.loss, p.step.accuracy, /*line=*/false);
  };
  options.on_row = [this, then = std::move(options.on_row)](const MetricsRow& row) {
    if (then) then(row);
    Print(row.step, row.loss, row.train_accuracy, /*line=*/true);
  };
  options.on_resume = [this, then = std::move(options.on_resume)](const FitResume& r) {
    if (then) then(r);
    if (!r.warning.empty()) std::cerr << r.warning << "\n";
    std::cout << "resumed from " << r.path << " at step " << r.step << std::endl;
    if (r.step < steps_) return;
    std::cout << "checkpoint is at step " << r.step << " of " << steps_
              << ": nothing to train (the run is complete); writing its outputs again\n";
  };
  return options;
}

}  // namespace dagrad::models
