// The reading half of engine/io/safetensors.h (and the dtype table both
// halves share); writing is in safetensors_write.cc.

#include "engine/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "nlohmann/json.hpp"

namespace dagrad {
namespace {

// The format is little-endian; dagrad copies bytes straight into tensors.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

using json = nlohmann::json;

struct FormatDType {
  absl::string_view name;
  DType dtype;
};
constexpr FormatDType kSupported[] = {{"F32", DType::kFloat32},  {"F64", DType::kFloat64},
                                      {"I32", DType::kInt32},    {"I64", DType::kInt64},
                                      {"BOOL", DType::kBool},    {"BF16", DType::kBFloat16},
                                      {"F16", DType::kFloat16}};
// Valid safetensors dtypes that dagrad has no type for: Unimplemented, not a
// malformed file.
constexpr absl::string_view kUnsupported[] = {
    "U8", "I8", "U16", "I16", "U32", "U64", "C64",
    "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4"};

// Context prefixes messages with what is being read and which tensor.
struct Context {
  absl::string_view source;

  absl::Status Invalid(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", message));
  }
  absl::Status Invalid(absl::string_view tensor, absl::string_view message) const {
    return Invalid(absl::StrCat("tensor ", QuotedText(tensor), ": ", message));
  }
};

// JsonTypeName says what a JSON value is, for "is a string, not an array".
std::string JsonTypeName(const json& v) {
  if (v.is_number_float()) return "a non-integer number";
  if (v.is_number()) return "an integer";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  return "null";
}

// Limits on the header's shape. A safetensors header nests three deep and
// its longest arrays are shapes; without these a 100 MB header of "[[[[..."
// or "[1,1,1,..." costs gigabytes to parse (and deep values recursion to
// print).
constexpr size_t kMaxHeaderDepth = 16;
constexpr size_t kMaxHeaderArrayLength = 1024;

// HeaderError ends HeaderWalk's pass over the header; caught in
// ParseHeaderJson and never seen outside this file.
struct HeaderError {
  std::string message;
};

// HeaderWalk is a SAX pass over the header (nlohmann's json_sax interface),
// before it is parsed into a json, that throws a HeaderError at a key seen
// twice in one object, an array longer than kMaxHeaderArrayLength or
// nesting deeper than kMaxHeaderDepth. A pass of its own: the parser that
// takes a callback walks the whole enclosing object at each object's end,
// so a header of 40,000 tensors took minutes.
class HeaderWalk {
 public:
  bool null() { return Value(); }
  bool boolean(bool) { return Value(); }
  bool number_integer(json::number_integer_t) { return Value(); }
  bool number_unsigned(json::number_unsigned_t) { return Value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return Value(); }
  bool string(json::string_t&) { return Value(); }
  bool binary(json::binary_t&) { return Value(); }
  bool start_object(std::size_t) { return Open(/*is_array=*/false); }
  bool start_array(std::size_t) { return Open(/*is_array=*/true); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(json::string_t& key) {
    Frame& f = frames_.back();
    f.last_key = key;
    if (!f.keys.insert(f.last_key).second) {
      throw HeaderError{
          absl::StrCat("header has the key ", QuotedText(f.last_key), " twice", Where())};
    }
    return true;
  }
  // Not JSON: the parse into a json that follows says where and why.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  bool Value() {
    CountElement();
    return true;
  }
  bool Open(bool is_array) {
    CountElement();
    frames_.emplace_back();
    frames_.back().is_array = is_array;
    if (frames_.size() > kMaxHeaderDepth) {
      throw HeaderError{
          absl::StrCat("header nests deeper than ", kMaxHeaderDepth, " levels", Where())};
    }
    return true;
  }
  bool Close() {
    frames_.pop_back();
    return true;
  }

  struct Frame {
    bool is_array = false;
    size_t length = 0;
    std::set<std::string> keys;
    std::string last_key;
  };

  // Where names the keys that lead to the current object or array.
  std::string Where() const {
    std::vector<std::string> keys;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) keys.push_back(QuotedText(frames_[i].last_key));
    return keys.empty() ? std::string() : absl::StrCat(" (in ", absl::StrJoin(keys, "/"), ")");
  }

  void CountElement() {
    if (frames_.empty() || !frames_.back().is_array) return;
    if (++frames_.back().length > kMaxHeaderArrayLength) {
      throw HeaderError{absl::StrCat("header has an array longer than ", kMaxHeaderArrayLength,
                                     " elements", Where())};
    }
  }

  std::vector<Frame> frames_;
};

// ParseHeaderJson parses the header, rejecting duplicate keys at any depth:
// nlohmann keeps the last of two equal keys silently, and a file whose
// tensor table says two things must not be read as either one.
absl::StatusOr<json> ParseHeaderJson(const Context& ctx, absl::string_view text) {
  json header;
  try {
    HeaderWalk walk;
    json::sax_parse(text.begin(), text.end(), &walk);
    header = json::parse(text.begin(), text.end());
  } catch (const HeaderError& e) {
    return ctx.Invalid(e.message);
  } catch (const json::parse_error& e) {
    // e.byte counts from 1; the header starts at file byte 8.
    return ctx.Invalid(absl::StrCat("header is not valid JSON (near file byte ", e.byte + 7,
                                    "): ", JsonErrorText(e.what())));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(ctx.source, ": out of memory parsing a header of ", text.size(), " bytes"));
  } catch (const std::exception& e) {
    return ctx.Invalid(absl::StrCat("cannot parse the header: ", JsonErrorText(e.what())));
  }
  if (!header.is_object()) {
    return ctx.Invalid(absl::StrCat("header is ", JsonTypeName(header), ", not an object"));
  }
  return header;
}

// Brief prints a JSON value for a message: in full when it is a scalar or a
// short flat array, else only its type (values are bounded, see above, but
// a message should stay one readable line).
std::string Brief(const json& v) {
  bool flat = !v.is_object() && (!v.is_array() || v.size() <= 8);
  if (v.is_array()) {
    for (const json& x : v) flat = flat && x.is_primitive();
  }
  if (!flat) return JsonTypeName(v);
  return PrintableText(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

// Entry is one tensor's header record, validated against the buffer.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

// NonNegativeInt reads a JSON integer in [0, max], or says what is wrong.
absl::StatusOr<uint64_t> NonNegativeInt(const json& v, uint64_t max) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= max) return u;
    return absl::InvalidArgumentError(absl::StrCat(u, " is too large"));
  }
  if (v.is_number_integer()) {  // signed: negative, or written "-0"
    const int64_t i = v.get<int64_t>();
    if (i == 0) return 0;
    return absl::InvalidArgumentError(absl::StrCat(i, " is negative"));
  }
  if (v.is_number_float()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Brief(v), " is not an integer"));
  }
  return absl::InvalidArgumentError(absl::StrCat("is ", JsonTypeName(v), ", not an integer"));
}

absl::StatusOr<const json*> Field(const Context& ctx, const std::string& name,
                                  const json& entry, const char* field) {
  auto it = entry.find(field);
  if (it == entry.end()) {
    return ctx.Invalid(name, absl::StrCat("missing \"", field, "\""));
  }
  return &*it;
}

// ParseDType reads an entry's "dtype": one dagrad reads, or Unimplemented
// for a safetensors dtype it does not.
absl::StatusOr<const FormatDType*> ParseDType(const Context& ctx, const std::string& name,
                                              const json& entry) {
  DAGRAD_ASSIGN_OR_RETURN(const json* dtype, Field(ctx, name, entry, "dtype"));
  if (!dtype->is_string()) {
    return ctx.Invalid(name, absl::StrCat("\"dtype\" is ", JsonTypeName(*dtype), ", not a string"));
  }
  const std::string& dtype_name = dtype->get_ref<const std::string&>();
  auto supported = std::find_if(std::begin(kSupported), std::end(kSupported),
                                [&](const FormatDType& d) { return d.name == dtype_name; });
  if (supported == std::end(kSupported)) {
    const bool known = std::find(std::begin(kUnsupported), std::end(kUnsupported),
                                 dtype_name) != std::end(kUnsupported);
    const std::string message = absl::StrCat(
        "tensor ", QuotedText(name), ": dtype ", QuotedText(dtype_name),
        known ? " is not supported by dagrad" : " is not a safetensors dtype",
        " (dagrad reads F32, F64, I32, I64, BOOL, BF16 and F16)");
    return known ? absl::UnimplementedError(absl::StrCat(ctx.source, ": ", message))
                 : ctx.Invalid(message);
  }
  return &*supported;
}

// ParseShape reads an entry's "shape", each dimension >= 0, the product
// within int64.
absl::StatusOr<Shape> ParseShape(const Context& ctx, const std::string& name, const json& entry) {
  DAGRAD_ASSIGN_OR_RETURN(const json* shape, Field(ctx, name, entry, "shape"));
  if (!shape->is_array()) {
    return ctx.Invalid(name, absl::StrCat("\"shape\" is ", JsonTypeName(*shape), ", not an array"));
  }
  Dims dims;
  for (size_t i = 0; i < shape->size(); ++i) {
    auto d = NonNegativeInt((*shape)[i], std::numeric_limits<int64_t>::max());
    if (!d.ok()) {
      return ctx.Invalid(name, absl::StrCat("\"shape\" ", Brief(*shape), ": dimension ", i, " ",
                                            d.status().message()));
    }
    dims.push_back(static_cast<int64_t>(*d));
  }
  auto numel = ValidateDims(dims);
  if (!numel.ok()) {
    return ctx.Invalid(name, absl::StrCat("\"shape\": ", numel.status().message()));
  }
  return Shape(dims);
}

// ParseOffsets reads an entry's "data_offsets" [begin, end] into e.
absl::Status ParseOffsets(const Context& ctx, const std::string& name, const json& entry,
                          Entry& e) {
  DAGRAD_ASSIGN_OR_RETURN(const json* offsets, Field(ctx, name, entry, "data_offsets"));
  if (!offsets->is_array() || offsets->size() != 2) {
    return ctx.Invalid(name, absl::StrCat("\"data_offsets\" must be [begin, end], got ",
                                          Brief(*offsets)));
  }
  for (int i = 0; i < 2; ++i) {
    auto o = NonNegativeInt((*offsets)[i], std::numeric_limits<uint64_t>::max());
    if (!o.ok()) {
      return ctx.Invalid(name, absl::StrCat("\"data_offsets\" ", Brief(*offsets), ": ",
                                            i == 0 ? "begin " : "end ", o.status().message()));
    }
    (i == 0 ? e.begin : e.end) = *o;
  }
  return absl::OkStatus();
}

absl::StatusOr<Entry> ParseEntry(const Context& ctx, const std::string& name,
                                 const json& entry, uint64_t buffer_size) {
  if (!entry.is_object()) {
    return ctx.Invalid(name, absl::StrCat("entry is ", JsonTypeName(entry), ", not an object"));
  }
  Entry e;
  e.name = name;
  DAGRAD_ASSIGN_OR_RETURN(const FormatDType* dtype, ParseDType(ctx, name, entry));
  e.dtype = dtype->dtype;
  DAGRAD_ASSIGN_OR_RETURN(e.shape, ParseShape(ctx, name, entry));
  DAGRAD_RETURN_IF_ERROR(ParseOffsets(ctx, name, entry, e));
  const std::string range = absl::StrCat("data_offsets [", e.begin, ", ", e.end, "]");
  if (e.begin > e.end) {
    return ctx.Invalid(name, absl::StrCat(range, ": begin is after end"));
  }
  if (e.end > buffer_size) {
    return ctx.Invalid(name, absl::StrCat(range, " extend past the data buffer of ", buffer_size,
                                          " bytes"));
  }
  const uint64_t count = static_cast<uint64_t>(e.shape.num_elements()), size = SizeOf(e.dtype);
  const uint64_t length = e.end - e.begin;
  if (length % size != 0 || length / size != count) {
    const bool fits = count <= std::numeric_limits<uint64_t>::max() / size;
    return ctx.Invalid(name, absl::StrCat(range, " hold ", length, " bytes, but ", dtype->name,
                                          " ", e.shape.ToString(), " needs ",
                                          fits ? absl::StrCat(count * size) : "more than 2^64"));
  }
  return e;
}

// CheckTiling requires the tensors to cover the data buffer exactly, as the
// reference implementation does: bytes no tensor owns could carry anything.
absl::Status CheckTiling(const Context& ctx, std::vector<const Entry*> entries,
                         uint64_t buffer_size) {
  // Empty tensors own no bytes; their offsets were checked against the buffer.
  std::erase_if(entries, [](const Entry* e) { return e->begin == e->end; });
  std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
    return std::tie(a->begin, a->end, a->name) < std::tie(b->begin, b->end, b->name);
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : entries) {
    if (e->begin < covered) {
      return ctx.Invalid(e->name, absl::StrCat("data_offsets [", e->begin, ", ", e->end,
                                               "] overlap tensor ", QuotedText(previous->name),
                                               " at [", previous->begin, ", ", previous->end, "]"));
    }
    if (e->begin > covered) {
      return ctx.Invalid(absl::StrCat("data buffer bytes [", covered, ", ", e->begin,
                                      ") belong to no tensor (a hole before tensor ",
                                      QuotedText(e->name), ")"));
    }
    covered = e->end;
    previous = e;
  }
  if (covered != buffer_size) {
    return ctx.Invalid(absl::StrCat("data buffer bytes [", covered, ", ", buffer_size,
                                    ") belong to no tensor (trailing bytes)"));
  }
  return absl::OkStatus();
}

absl::Status ParseMetadata(const Context& ctx, const json& meta,
                           std::map<std::string, std::string>& out) {
  if (!meta.is_object()) {
    return ctx.Invalid(absl::StrCat("\"__metadata__\" is ", JsonTypeName(meta),
                                    ", not an object of strings"));
  }
  for (const auto& [key, value] : meta.items()) {
    if (!value.is_string()) {
      return ctx.Invalid(absl::StrCat("\"__metadata__\" value of ", QuotedText(key), " is ",
                                      JsonTypeName(value), ", not a string"));
    }
    out[key] = value.get<std::string>();
  }
  return absl::OkStatus();
}

// HeaderLength reads the 8-byte header length at the start of `bytes`,
// refusing a length above the limit.
absl::StatusOr<uint64_t> HeaderLength(const Context& ctx, absl::string_view bytes) {
  if (bytes.size() < 8) {
    return ctx.Invalid(absl::StrCat("file is ", bytes.size(),
                                    " bytes, too short for the 8-byte header length"));
  }
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > kMaxSafetensorsHeaderBytes) {
    return ctx.Invalid(absl::StrCat("header length ", header_size, " exceeds the limit of ",
                                    kMaxSafetensorsHeaderBytes, " bytes"));
  }
  return header_size;
}

// ParseHeader parses the JSON header of a file whose first bytes are
// `bytes` (the whole file, or its first 8 + header length bytes).
absl::StatusOr<json> ParseHeader(const Context& ctx, absl::string_view bytes) {
  DAGRAD_ASSIGN_OR_RETURN(const uint64_t header_size, HeaderLength(ctx, bytes));
  if (header_size > bytes.size() - 8) {
    return ctx.Invalid(absl::StrCat("header length ", header_size, " runs past the end of the ",
                                    bytes.size(), "-byte file (truncated?)"));
  }
  const absl::string_view text = bytes.substr(8, header_size);
  if (text.empty() || text[0] != '{') {
    return ctx.Invalid("header does not begin with '{'");
  }
  return ParseHeaderJson(ctx, text);
}

absl::StatusOr<SafetensorsFile> Parse(absl::string_view bytes, absl::string_view source) {
  const Context ctx{source};
  DAGRAD_ASSIGN_OR_RETURN(json header, ParseHeader(ctx, bytes));
  DAGRAD_ASSIGN_OR_RETURN(const uint64_t header_size, HeaderLength(ctx, bytes));

  const absl::string_view buffer = bytes.substr(8 + header_size);
  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [name, entry] : header.items()) {
    if (name == kSafetensorsMetadataKey) {
      DAGRAD_RETURN_IF_ERROR(ParseMetadata(ctx, entry, file.metadata));
      continue;
    }
    DAGRAD_ASSIGN_OR_RETURN(Entry e, ParseEntry(ctx, name, entry, buffer.size()));
    entries.push_back(std::move(e));
  }
  std::vector<const Entry*> pointers;
  for (const Entry& e : entries) pointers.push_back(&e);
  DAGRAD_RETURN_IF_ERROR(CheckTiling(ctx, std::move(pointers), buffer.size()));

  for (const Entry& e : entries) {  // in name order: the header is a sorted map
    const absl::string_view data = buffer.substr(e.begin, e.end - e.begin);
    if (e.dtype == DType::kBool) {
      // Any byte but 0 and 1 in a C++ bool is undefined behaviour.
      for (size_t i = 0; i < data.size(); ++i) {
        if (static_cast<uint8_t>(data[i]) > 1) {
          return ctx.Invalid(e.name, absl::StrCat("BOOL element ", i, " (file byte ",
                                                  8 + header_size + e.begin + i, ") is ",
                                                  static_cast<int>(static_cast<uint8_t>(data[i])),
                                                  ", not 0 or 1"));
        }
      }
    }
    auto t = Tensor::Zeros(e.dtype, e.shape);
    if (!t.ok()) {
      return absl::Status(t.status().code(), absl::StrCat(source, ": tensor ", QuotedText(e.name),
                                                          ": ", t.status().message()));
    }
    if (!data.empty()) std::memcpy(t->raw_data(), data.data(), data.size());
    file.tensors.emplace_back(e.name, *std::move(t));
  }
  return file;
}

}  // namespace

const Tensor* SafetensorsFile::Find(absl::string_view name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

absl::string_view SafetensorsDTypeName(DType dtype) {
  for (const FormatDType& d : kSupported) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

absl::StatusOr<SafetensorsFile> ParseSafetensors(absl::string_view bytes) {
  return Parse(bytes, "safetensors data");
}

absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return Parse(bytes, absl::StrCat("'", path, "'"));
}

absl::StatusOr<std::map<std::string, std::string>> ReadSafetensorsMetadata(
    const std::string& path) {
  const std::string source = absl::StrCat("'", path, "'");
  const Context ctx{source};
  DAGRAD_ASSIGN_OR_RETURN(const std::string length, ReadFilePrefix(path, 8));
  DAGRAD_ASSIGN_OR_RETURN(const uint64_t header_size, HeaderLength(ctx, length));
  DAGRAD_ASSIGN_OR_RETURN(const std::string head, ReadFilePrefix(path, 8 + header_size));
  DAGRAD_ASSIGN_OR_RETURN(const json header, ParseHeader(ctx, head));
  std::map<std::string, std::string> metadata;
  if (auto meta = header.find(kSafetensorsMetadataKey); meta != header.end()) {
    DAGRAD_RETURN_IF_ERROR(ParseMetadata(ctx, *meta, metadata));
  }
  return metadata;
}

}  // namespace dagrad
