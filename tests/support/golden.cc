#include "tests/support/golden.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// ParsedFile is golden file `file`, read and parsed once per process: the
// golden tests load hundreds of cases from a dozen files (mha.json alone is
// 1.9 MB), and reparsing a file per case was most of their time.
absl::StatusOr<const nlohmann::json*> ParsedFile(const std::string& file) {
  static std::mutex mu;
  static auto* const parsed = new std::map<std::string, nlohmann::json>;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = parsed->find(file); it != parsed->end()) return &it->second;
  const std::string path = absl::StrCat(DAGRAD_TEST_DATA_DIR, "/goldens/", file, ".json");
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open golden file ", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::DataLossError(absl::StrCat("invalid JSON in ", path));
  return &parsed->emplace(file, std::move(j)).first->second;
}

double ParseFloat(const nlohmann::json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? std::numeric_limits<double>::infinity()
                      : -std::numeric_limits<double>::infinity();
  }
  return v.get<double>();
}

absl::StatusOr<Tensor> ParseTensor(const nlohmann::json& j) {
  const auto dtype = DTypeFromName(j.at("dtype").get<std::string>());
  if (!dtype) return absl::InvalidArgumentError("golden tensor with unknown dtype");
  std::vector<int64_t> dims = j.at("shape").get<std::vector<int64_t>>();
  auto t = Tensor::Zeros(*dtype, Shape(dims));
  if (!t.ok()) return t.status();
  const nlohmann::json& data = j.at("data");
  if (static_cast<int64_t>(data.size()) != t->num_elements()) {
    return absl::InvalidArgumentError("golden tensor data does not match its shape");
  }
  for (int64_t i = 0; i < t->num_elements(); ++i) {
    switch (*dtype) {
      case DType::kFloat32: t->data<float>()[i] = static_cast<float>(ParseFloat(data[i])); break;
      case DType::kFloat64: t->data<double>()[i] = ParseFloat(data[i]); break;
      case DType::kInt32: t->data<int32_t>()[i] = data[i].get<int32_t>(); break;
      case DType::kInt64: t->data<int64_t>()[i] = data[i].get<int64_t>(); break;
      case DType::kBool: t->data<bool>()[i] = data[i].get<int>() != 0; break;
      // The generators write 16-bit values widened, so these are exact.
      case DType::kBFloat16: t->data<BFloat16>()[i] = DoubleToBFloat16(ParseFloat(data[i])); break;
      case DType::kFloat16: t->data<Float16>()[i] = DoubleToFloat16(ParseFloat(data[i])); break;
    }
  }
  return t;
}

}  // namespace

absl::StatusOr<GoldenCase> LoadGolden(const std::string& file, const std::string& name) {
  DAGRAD_ASSIGN_OR_RETURN(const nlohmann::json* j, ParsedFile(file));
  const auto cases = j->find("cases");
  if (cases == j->end() || !cases->contains(name)) {
    return absl::NotFoundError(absl::StrCat("golden file ", file, " has no case ", name));
  }
  const nlohmann::json& c = cases->at(name);
  GoldenCase out;
  for (const char* part : {"inputs", "outputs"}) {
    auto& dst = std::string(part) == "inputs" ? out.inputs : out.outputs;
    for (const auto& [key, value] : c.at(part).items()) {
      auto t = ParseTensor(value);
      if (!t.ok()) return t.status();
      dst[key] = *t;
    }
  }
  out.attrs = c.value("attrs", nlohmann::json::object());
  return out;
}

absl::StatusOr<std::vector<std::string>> GoldenCaseNames(const std::string& file) {
  DAGRAD_ASSIGN_OR_RETURN(const nlohmann::json* j, ParsedFile(file));
  std::vector<std::string> names;
  const auto cases = j->find("cases");
  if (cases == j->end()) return names;
  for (const auto& [key, value] : cases->items()) names.push_back(key);
  return names;
}

void ExpectParity(const Tensor& got, const Tensor& want, const std::string& what) {
  double scale = 0;
  for (double v : AsDoubles(want)) scale = std::max(scale, std::abs(v));
  ExpectAllClose(got, AsDoubles(want), 1e-5, 2e-6 * scale, what);
}

}  // namespace dagrad::testing
