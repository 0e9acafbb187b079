// models/plot/plots.h
//
// The pictures of a training run, as SVG text (drawn with models/plot/svg.h;
// `dagrad train` writes them as loss.svg, attention.svg and
// positional_encoding.svg):
//
//   // setup: Plots
//   std::string curves = plot::LossCurves(fit.rows);   // models::FitResult's rows
//   DAGRAD_ASSIGN_OR_RETURN(std::string heads,
//                           plot::AttentionHeatmaps(weights, {"a", "b", "c"}, "attention"));
//   DAGRAD_ASSIGN_OR_RETURN(std::string table, plot::PositionalEncoding(32, 16));

#ifndef DAGRAD_MODELS_PLOT_PLOTS_H_
#define DAGRAD_MODELS_PLOT_PLOTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tensor.h"
#include "models/run_directory.h"

namespace dagrad::plot {

// LossCurves draws the training and held-out loss and token accuracy of
// metrics rows (metrics.csv's) against the step.
std::string LossCurves(const std::vector<models::MetricsRow>& rows);

// AttentionHeatmaps draws attention weights, per layer a float32 (H, L, L)
// tensor (row: query, column: key), as a grid: a row of H heads per layer,
// each labelled by `labels` (L of them, or none). InvalidArgument, naming
// the layer, for a tensor of another dtype or shape, or labels not L.
absl::StatusOr<std::string> AttentionHeatmaps(const std::vector<Tensor>& weights,
                                              const std::vector<std::string>& labels,
                                              const std::string& title);

// PositionalEncoding draws the sinusoidal table P (max_len, dim)
// (models/nn/positional_encoding.h) as a heatmap, and columns 6 to 9 as
// curves, as d2l plots them; the executor's errors.
absl::StatusOr<std::string> PositionalEncoding(int64_t max_len, int64_t dim);

}  // namespace dagrad::plot

#endif  // DAGRAD_MODELS_PLOT_PLOTS_H_
