// Every op declares how ONNX export writes it (OpDef::onnx, engine/op.h),
// and the ONNX layer's exporters agree with the declarations: an op with no
// declaration, a kOnnxExporter op without an exporter, or an exporter list
// entry (ops/onnx/export_ops.h) naming no op or an op not marked
// kOnnxExporter each fail here, naming the op.

#ifdef DAGRAD_HAVE_ONNX

#include <string>

#include "engine/op.h"
#include "gtest/gtest.h"
#include "ops/onnx/export_ops.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

using onnx_export::FindOnnxExporter;
using onnx_export::OnnxExporterList;

TEST(OnnxCoverage, EveryOpHasAnExporterOrSaysWhyNot) {
  for (const OpDef* op : AllOps()) {
    const std::string name(op->name);
    switch (op->onnx.kind) {
      case OnnxKind::kUndeclared:
        ADD_FAILURE() << "op '" << name << "' declares no ONNX form: set its OpDef's .onnx to "
                      << "OnnxTwin(\"Op\"), kOnnxExporter or NoOnnx(\"why\")";
        break;
      case OnnxKind::kTwin:
        EXPECT_FALSE(op->onnx.text.empty()) << "op '" << name << "' names no ONNX twin";
        break;
      case OnnxKind::kExporter:
        EXPECT_NE(FindOnnxExporter(*op), nullptr)
            << "op '" << name << "' is kOnnxExporter, but no list of export_ops.h has it";
        break;
      case OnnxKind::kNone:
        EXPECT_FALSE(op->onnx.text.empty()) << "op '" << name << "' has no ONNX form; say why";
        break;
    }
  }
}

TEST(OnnxCoverage, EveryExporterIsOfAnOpMarkedForIt) {
  for (const OnnxExporterList& list : {onnx_export::ElementwiseExporters(),
                                       onnx_export::ShapeExporters(), onnx_export::NnExporters()}) {
    for (const auto& [name, exporter] : list) {
      const OpDef* op = FindOp(name);
      ASSERT_NE(op, nullptr) << "an exporter is listed for '" << name << "', which is no op";
      EXPECT_EQ(op->onnx.kind, OnnxKind::kExporter)
          << "an exporter is listed for '" << name << "', whose OpDef does not say kOnnxExporter";
      EXPECT_EQ(FindOnnxExporter(*op), exporter) << name;
    }
  }
}

}  // namespace
}  // namespace dagrad

#endif  // DAGRAD_HAVE_ONNX
