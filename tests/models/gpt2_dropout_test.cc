// models::Gpt2's dropouts (models/gpt2/gpt2.h, models/gpt2/hf_config.h):
// config.json's attn_pdrop, embd_pdrop and resid_pdrop read, 0.1 when
// absent (transformers' GPT2Config) and refused by name out of range;
// carried by the metadata, a file without them reading as 0; in the graph
// at GPT2Model's places with their own probabilities; inert in evaluation
// runs (the logits are those of the same weights without dropout), each
// one alone active in a training run, on the fused and the composed
// attention; and the gradient of a training run against finite
// differences.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/hf_checkpoint.h"
#include "models/gpt2/hf_config.h"
#include "nlohmann/json.hpp"
#include "ops/loss.h"
#include "tests/autodiff/support/gradcheck.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::HfGpt2Tiny;
using ::dagrad::testing::SameBits;
using ::dagrad::testing::MaxAbsDifference;

using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr nn::AttentionPath kPaths[] = {nn::AttentionPath::kFused, nn::AttentionPath::kComposed};

const HfGpt2Files& TinyFiles() {
  static const HfGpt2Files* files = new HfGpt2Files(ReadHfGpt2(HfGpt2Tiny()).value());
  return *files;
}

// Dropouts: the fixture's config with the three dropouts and `path`.
Gpt2Config Dropouts(double attn, double embd, double resid,
                    nn::AttentionPath path = nn::AttentionPath::kFused) {
  Gpt2Config c = TinyFiles().config;
  c.attn_pdrop = attn;
  c.embd_pdrop = embd;
  c.resid_pdrop = resid;
  c.attention = path;
  return c;
}

// FixtureLogits: the logits of the fixture's weights in the Gpt2 of
// `config` on fixed tokens (2, 16), in a training run (step 1) or not.
Tensor FixtureLogits(const Gpt2Config& config, bool training) {
  Graph g;
  absl::StatusOr<Gpt2> model = Gpt2::Create(g, config);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return Tensor();
  Value ids = g.Input("ids", DType::kInt64, {2, 16});
  Value logits = model->Logits(ids);
  Executor exec(g);
  EXPECT_TRUE(AssignVariables(exec, model->parameters(), TinyFiles().weights, "weights").ok());
  auto plan = exec.Compile({logits});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return Tensor();
  absl::StatusOr<std::vector<Tensor>> out =
      exec.Run(**plan, {{ids, testing::RandomInts({2, 16}, 5, 0, config.vocab)}},
               {.training = training, .step = 1});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

TEST(Gpt2Dropout, ConfigJsonGivesTheDropoutsOrTransformersDefaults) {
  json config = json::parse(ReadFile(HfGpt2Tiny() + "/config.json").value());
  config.update({{"attn_pdrop", 0.05}, {"embd_pdrop", 0.2}, {"resid_pdrop", 0.3}});
  ASSERT_OK_AND_ASSIGN(Gpt2Config c, ParseHfGpt2Config(config.dump(), "c.json"));
  EXPECT_EQ(c.attn_pdrop, 0.05);
  EXPECT_EQ(c.embd_pdrop, 0.2);
  EXPECT_EQ(c.resid_pdrop, 0.3);
  for (const char* field : {"attn_pdrop", "embd_pdrop", "resid_pdrop"}) config.erase(field);
  ASSERT_OK_AND_ASSIGN(Gpt2Config d, ParseHfGpt2Config(config.dump(), "c.json"));
  EXPECT_EQ(d.attn_pdrop, 0.1);
  EXPECT_EQ(d.embd_pdrop, 0.1);
  EXPECT_EQ(d.resid_pdrop, 0.1);
}

TEST(Gpt2Dropout, OutOfRangeOrMalformedDropoutsAreRefusedByName) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"attn_pdrop", 1.0}}, "c.json: field 'attn_pdrop' is out of range: dropout must be in"},
      {{{"embd_pdrop", -0.1}}, "c.json: field 'embd_pdrop' is out of range: dropout must be in"},
      {{{"resid_pdrop", 0.9999}}, "field 'resid_pdrop' is out of range: dropout must be at most"},
      {{{"attn_pdrop", "0.1"}}, "c.json: field 'attn_pdrop' is not a number: \"0.1\""},
      {{{"resid_pdrop", nullptr}}, "c.json: field 'resid_pdrop' is not a number: null"},
  };
  for (const auto& [change, want] : cases) {
    json config = json::parse(ReadFile(HfGpt2Tiny() + "/config.json").value());
    config.update(change);
    EXPECT_STATUS(ParseHfGpt2Config(config.dump(), "c.json").status(),
                  absl::StatusCode::kInvalidArgument, want);
  }
}

// Numbers six digits do not hold come back whole (MetadataNumber).
TEST(Gpt2Dropout, MetadataKeepsEveryDigit) {
  Gpt2Config c = Dropouts(0.1234567891, 0.2, 1.0 / 3);
  c.layer_norm_epsilon = 1.234567891e-5;
  ASSERT_OK_AND_ASSIGN(Gpt2Config back, Gpt2Config::FromMetadata(c.ToMetadata()));
  EXPECT_EQ(back.attn_pdrop, c.attn_pdrop);
  EXPECT_EQ(back.resid_pdrop, c.resid_pdrop);
  EXPECT_EQ(back.layer_norm_epsilon, c.layer_norm_epsilon);
}

TEST(Gpt2Dropout, MetadataCarriesTheDropoutsAndAnOlderFileReadsAsNone) {
  std::map<std::string, std::string> m = Dropouts(0.05, 0.2, 0.3).ToMetadata();
  EXPECT_EQ(m["attn_pdrop"], "0.05");
  ASSERT_OK_AND_ASSIGN(Gpt2Config back, Gpt2Config::FromMetadata(m));
  EXPECT_EQ(back.attn_pdrop, 0.05);
  EXPECT_EQ(back.embd_pdrop, 0.2);
  EXPECT_EQ(back.resid_pdrop, 0.3);
  m["resid_pdrop"] = "lots";
  EXPECT_STATUS(Gpt2Config::FromMetadata(m).status(), absl::StatusCode::kInvalidArgument,
                "'resid_pdrop' is not a number: 'lots'");
  m["resid_pdrop"] = "1.5";
  EXPECT_STATUS(Gpt2Config::FromMetadata(m).status(), absl::StatusCode::kInvalidArgument,
                "field 'resid_pdrop' is out of range");
  // A model file dagrad wrote before Gpt2 had dropouts: trained without.
  SafetensorsFile old = TinyFiles().weights;
  old.metadata = m;
  for (const char* key : {"attn_pdrop", "embd_pdrop", "resid_pdrop"}) old.metadata.erase(key);
  ASSERT_OK_AND_ASSIGN(Gpt2Config before, Gpt2Config::FromCheckpoint(old, "old.safetensors"));
  EXPECT_EQ(before.attn_pdrop, 0.0);
  EXPECT_EQ(before.embd_pdrop, 0.0);
  EXPECT_EQ(before.resid_pdrop, 0.0);
}

// In an evaluation run every dropout is the identity: the logits of a model
// with dropouts are, bit for bit, those of the same weights without.
TEST(Gpt2Dropout, EvaluationLogitsAreThoseWithoutDropout) {
  for (nn::AttentionPath path : kPaths) {
    SCOPED_TRACE(static_cast<int>(path));
    const Tensor without = FixtureLogits(Dropouts(0, 0, 0, path), false);
    EXPECT_TRUE(SameBits(FixtureLogits(Dropouts(0.1, 0.2, 0.3, path), false), without));
    EXPECT_TRUE(SameBits(FixtureLogits(Dropouts(0, 0, 0, path), true), without));
  }
}

// Each dropout alone changes a training run's logits: each is wired.
TEST(Gpt2Dropout, EachDropoutAloneActsInATrainingRun) {
  for (nn::AttentionPath path : kPaths) {
    const Tensor eval = FixtureLogits(Dropouts(0, 0, 0, path), false);
    for (const Gpt2Config& alone : {Dropouts(0.3, 0, 0, path), Dropouts(0, 0.3, 0, path),
                                    Dropouts(0, 0, 0.3, path)}) {
      SCOPED_TRACE(absl::StrCat(static_cast<int>(path), " ", alone.attn_pdrop, " ",
                                alone.embd_pdrop, " ", alone.resid_pdrop));
      EXPECT_GT(MaxAbsDifference(FixtureLogits(alone, true), eval), 1e-2);
      EXPECT_TRUE(SameBits(FixtureLogits(alone, false), eval));
    }
  }
}

// A dropout node of the forward graph: its path, p and what it drops.
struct DropoutNode {
  std::string path;
  double p;
  const Node* input;
};

std::vector<DropoutNode> ForwardDropouts(const Graph& g) {
  std::vector<DropoutNode> found;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.op == nullptr || n.op->name != "dropout" || n.role != NodeRole::kForward) continue;
    found.push_back({n.path(), n.attrs.GetFloat("p"), &g.node(n.inputs[0])});
  }
  return found;
}

// InputsOf: the paths of n's inputs.
std::vector<std::string> InputsOf(const Graph& g, const Node& n) {
  std::vector<std::string> paths;
  for (NodeId id : n.inputs) paths.push_back(g.node(id).path());
  return paths;
}

// GPT2Model's places: drop on wte + wpe (embd_pdrop); per block the
// attention weights' (attn_pdrop: the fused op's attribute, or a dropout
// of the softmax), and resid_pdrop on attn.c_proj's and mlp.c_proj's
// outputs (x·W + b, before the residual sum).
TEST(Gpt2Dropout, GraphHoldsTheDropoutsAtTransformersPlaces) {
  for (nn::AttentionPath path : kPaths) {
    SCOPED_TRACE(static_cast<int>(path));
    Graph g;
    ASSERT_OK_AND_ASSIGN(Gpt2 model, Gpt2::Create(g, Dropouts(0.1, 0.2, 0.3, path)));
    model.Logits(g.Input("ids", DType::kInt64, {2, 8}));
    ASSERT_OK(g.status());
    std::vector<std::string> resid, weights;
    int embd = 0, fused = 0;
    for (const DropoutNode& d : ForwardDropouts(g)) {
      if (d.p == 0.2) {
        ++embd;
        EXPECT_EQ(d.path, "transformer/drop/dropout");
        EXPECT_EQ(d.input->op->name, "add");
      } else if (d.p == 0.3) {
        EXPECT_EQ(d.input->op->name, "add");
        for (const std::string& in : InputsOf(g, *d.input)) {
          if (absl::EndsWith(in, "bias")) resid.push_back(in);
        }
      } else {
        EXPECT_EQ(d.p, 0.1);
        EXPECT_EQ(d.input->op->name, "softmax");
        weights.push_back(d.path);
      }
    }
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      const Node& n = g.node(id);
      if (n.op == nullptr || n.op->name != "attention") continue;
      EXPECT_EQ(n.attrs.GetFloat("dropout"), 0.1);
      ++fused;
    }
    EXPECT_EQ(embd, 1);
    EXPECT_EQ(resid, (std::vector<std::string>{
                         "transformer/h/0/attn/c_proj/bias", "transformer/h/0/mlp/c_proj/bias",
                         "transformer/h/1/attn/c_proj/bias", "transformer/h/1/mlp/c_proj/bias"}));
    const bool is_fused = path == nn::AttentionPath::kFused;
    EXPECT_EQ(fused, is_fused ? 2 : 0);
    EXPECT_EQ(weights.size(), is_fused ? 0u : 2u);
  }
}

// The gradient of a training run (its masks fixed by the seed and step)
// against finite differences, on both attention paths.
TEST(Gpt2Dropout, GradcheckOfATrainingRunFloat64) {
  for (nn::AttentionPath path : kPaths) {
    SCOPED_TRACE(static_cast<int>(path));
    ASSERT_OK(testing::GradCheck(
        [path](testing::CaseBuilder& b) {
          auto model = Gpt2::Create(
              b.graph(), {.vocab = 7, .positions = 4, .dim = 6, .heads = 3, .layers = 2,
                          .inner = 5, .attn_pdrop = 0.2, .embd_pdrop = 0.3, .resid_pdrop = 0.25,
                          .dtype = DType::kFloat64, .attention = path});
          if (!model.ok()) return b.Out(b.graph().Error(model.status()));
          Value tokens = b.Input("tokens", DType::kInt64, {2, 4}, 0, 7);
          Value targets = b.Input("targets", DType::kInt64, {2, 4}, 0, 7);
          b.Out(CrossEntropy(model->Logits(tokens), targets));
        },
        {}, /*training=*/true, /*seed=*/3));
  }
}

}  // namespace
}  // namespace dagrad::models
