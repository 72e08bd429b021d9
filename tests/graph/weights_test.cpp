// Weights I/O (graph/weights.hpp): f16/bf16 decoding against a table of known bit
// patterns; MappedFile edge cases; safetensors write → read round trips, every header
// validation error (each message must name the file and the tensor or field), and a
// cross-check in both directions with an independent numpy-only writer/reader; llama2.c
// checkpoints checked against raw reads of the real models at offsets the test
// computes itself, plus synthetic and damaged checkpoints.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/weights.hpp"
#include "tests/test_files.hpp"
#include "tests/status_assert.hpp"

namespace headwise::graph {
namespace {

namespace fs = std::filesystem;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = char(v >> (8 * i));
  return s;
}

// A safetensors file: length prefix, header text as given, then `data` zero bytes.
std::string safetensors_bytes(const std::string& header, size_t data) {
  return le64(header.size()) + header + std::string(data, '\0');
}

template <typename T>
TensorView view_of(const std::string& name, DType t, std::vector<int64_t> shape,
                   const std::vector<T>& v) {
  TensorView tv;
  tv.name = name;
  tv.dtype = t;
  tv.shape = std::move(shape);
  tv.data = reinterpret_cast<const uint8_t*>(v.data());
  tv.nbytes = v.size() * sizeof(T);
  return tv;
}

std::vector<float> decode(const TensorView& t) {
  std::vector<float> out(size_t(t.numel()));
  to_f32(t.dtype, t.data, out.size(), out.data());
  return out;
}

// A fresh directory per test, removed afterwards.
class WeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::path(::testing::TempDir()) / "headwise_weights_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << tmpl;
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  size_t entries() const {
    return size_t(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  std::string dir_;
};

// --- dtype helpers and conversions -------------------------------------------------

TEST(DTypeTest, NamesSizesAndShapes) {
  EXPECT_STREQ(dtype_name(DType::f32), "F32");
  EXPECT_STREQ(dtype_name(DType::f16), "F16");
  EXPECT_STREQ(dtype_name(DType::bf16), "BF16");
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  TensorView t;
  t.shape = {512, 64};
  EXPECT_EQ(t.numel(), 512 * 64);
  EXPECT_EQ(t.shape_str(), "[512, 64]");
  t.shape = {};  // a scalar
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.shape_str(), "[]");
  t.shape = {3, 0, 7};
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.shape_str(), "[3, 0, 7]");
}

struct BitCase {
  uint16_t in;
  float want;  // compared bit for bit, so -0 and NaN payloads count
};

// Expected values are written as decimal or hex-float literals, not derived from bits.
TEST(ToF32Test, F16KnownBitPatternsAreExact) {
  const uint32_t qnan = 0x7fc00000u;
  const BitCase cases[] = {
      {0x0000, 0.0f},           {0x8000, -0.0f},          {0x3c00, 1.0f},
      {0xbc00, -1.0f},          {0x3800, 0.5f},           {0xc000, -2.0f},
      {0x4248, 3.140625f},      {0x3555, 0.333251953125f}, {0x7bff, 65504.0f},
      {0xfbff, -65504.0f},      {0x0400, 0x1p-14f},       {0x0001, 0x1p-24f},
      {0x8001, -0x1p-24f},      {0x0200, 0x1p-15f},       {0x03ff, 0x1.ff8p-15f},
      {0x0155, 341 * 0x1p-24f}, {0x7c00, INFINITY},       {0xfc00, -INFINITY},
  };
  for (const BitCase& c : cases) {
    float got = 0;
    to_f32(DType::f16, reinterpret_cast<const uint8_t*>(&c.in), 1, &got);
    EXPECT_EQ(bits_of(got), bits_of(c.want)) << std::hex << "f16 0x" << c.in << " → " << got;
  }
  // NaNs keep sign and payload: quiet, signalling (lowest payload bit), negative.
  const std::pair<uint16_t, uint32_t> nans[] = {
      {0x7e00, qnan}, {0x7c01, 0x7f802000u}, {0xfe00, 0xffc00000u}, {0x7fff, 0x7fffe000u}};
  for (auto [in, want] : nans) {
    float got = 0;
    to_f32(DType::f16, reinterpret_cast<const uint8_t*>(&in), 1, &got);
    EXPECT_TRUE(std::isnan(got)) << std::hex << in;
    EXPECT_EQ(bits_of(got), want) << std::hex << "f16 0x" << in;
  }
}

TEST(ToF32Test, Bf16KnownBitPatternsAreExact) {
  const BitCase cases[] = {
      {0x0000, 0.0f},          {0x8000, -0.0f},          {0x3f80, 1.0f},
      {0xbf80, -1.0f},         {0x4049, 3.140625f},      {0x7f7f, 0x1.fep127f},
      {0x0080, 0x1p-126f},     {0x0001, 0x1p-133f},      {0x8008, -0x1p-130f},
      {0x7f80, INFINITY},      {0xff80, -INFINITY},      {0x4780, 65536.0f},
  };
  for (const BitCase& c : cases) {
    float got = 0;
    to_f32(DType::bf16, reinterpret_cast<const uint8_t*>(&c.in), 1, &got);
    EXPECT_EQ(bits_of(got), bits_of(c.want)) << std::hex << "bf16 0x" << c.in << " → " << got;
  }
  const uint16_t nan_in[2] = {0x7fc0, 0xff81};
  float got[2];
  to_f32(DType::bf16, reinterpret_cast<const uint8_t*>(nan_in), 2, got);
  EXPECT_EQ(bits_of(got[0]), 0x7fc00000u);
  EXPECT_EQ(bits_of(got[1]), 0xff810000u);
}

TEST(ToF32Test, ReadsUnalignedSourcesOfEveryDType) {
  // Views into a foreign safetensors file may start at any byte.
  const float f[3] = {1.5f, -0.0f, 0x1p-149f};
  const uint16_t h[3] = {0x3c00, 0x0001, 0xfc00};
  const uint16_t b[3] = {0x3f80, 0x0001, 0xff80};
  const float want_h[3] = {1.0f, 0x1p-24f, -INFINITY};
  const float want_b[3] = {1.0f, 0x1p-133f, -INFINITY};
  uint8_t buf[1 + sizeof f];
  float got[3];
  std::memcpy(buf + 1, f, sizeof f);
  to_f32(DType::f32, buf + 1, 3, got);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bits_of(got[i]), bits_of(f[i])) << i;
  std::memcpy(buf + 1, h, sizeof h);
  to_f32(DType::f16, buf + 1, 3, got);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bits_of(got[i]), bits_of(want_h[i])) << i;
  std::memcpy(buf + 1, b, sizeof b);
  to_f32(DType::bf16, buf + 1, 3, got);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bits_of(got[i]), bits_of(want_b[i])) << i;
}

// --- MappedFile ------------------------------------------------------------------

TEST_F(WeightsTest, MappedFileMapsContentAndEmptyFiles) {
  spit(path("five"), "hello");
  std::unique_ptr<MappedFile> m;
  HW_ASSERT_OK(MappedFile::open(path("five"), &m));
  ASSERT_EQ(m->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), 5), "hello");
  EXPECT_EQ(m->path(), path("five"));

  spit(path("empty"), "");
  Status s = MappedFile::open(path("empty"), &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m->size(), 0u);
}

// release_resident() drops the whole pages of a range inside a live mapping from this
// process's resident memory, and the bytes read afterwards are still the file's; it
// leaves heap memory (whose contents MADV_DONTNEED would zero), ranges reaching past a
// mapping and unmapped addresses alone.
TEST_F(WeightsTest, MappedFileReleasesResidentPagesAndKeepsTheBytes) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE)), n = 64 * page;
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = char(i * 131 % 251);
  spit(path("pages"), bytes);
  std::unique_ptr<MappedFile> m;
  HW_ASSERT_OK(MappedFile::open(path("pages"), &m));
  ASSERT_EQ(m->size(), n);
  unsigned sum = 0;
  for (size_t i = 0; i < n; i += page) sum += m->data()[i];  // fault every page in
  EXPECT_NE(sum, 0u);
  ASSERT_EQ(test::resident_bytes_of_mapping(m->data()), int64_t(n));

  // 10 bytes into page 0 to 10 bytes into page 40: pages 1..39 are whole inside it.
  EXPECT_EQ(MappedFile::release_resident(m->data() + 10, 40 * page), 39 * page);
  EXPECT_EQ(test::resident_bytes_of_mapping(m->data()), int64_t(n - 39 * page));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), n), bytes);  // faulted back in

  EXPECT_EQ(MappedFile::release_resident(m->data() + page, n), 0u) << "past the mapping's end";
  EXPECT_EQ(MappedFile::release_resident(m->data() + 10, page - 20), 0u) << "no whole page";
  EXPECT_EQ(MappedFile::release_resident(nullptr, n), 0u);

  std::vector<uint8_t> heap(bytes.begin(), bytes.end());
  EXPECT_EQ(MappedFile::release_resident(heap.data(), heap.size()), 0u) << "heap memory";
  EXPECT_EQ(std::string(heap.begin(), heap.end()), bytes);

  const uint8_t* gone = m->data();
  m.reset();
  EXPECT_EQ(MappedFile::release_resident(gone, page), 0u) << "an unmapped file";
}

TEST_F(WeightsTest, MappedFileMissingIsNotFoundAndDirectoryIsIoError) {
  std::unique_ptr<MappedFile> m;
  Status s = MappedFile::open(path("absent.bin"), &m);
  EXPECT_EQ(s.code(), StatusCode::not_found);
  EXPECT_NE(s.message().find(path("absent.bin")), std::string::npos) << s.message();
  EXPECT_EQ(m, nullptr);

  s = MappedFile::open(dir_, &m);
  EXPECT_EQ(s.code(), StatusCode::io_error);
  EXPECT_NE(s.message().find(dir_), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("directory"), std::string::npos) << s.message();
}

TEST_F(WeightsTest, MappedFileUnreadableIsIoError) {
  spit(path("locked"), "secret");
  ASSERT_EQ(::chmod(path("locked").c_str(), 0), 0);
  if (::access(path("locked").c_str(), R_OK) == 0)
    GTEST_SKIP() << "running with privileges that read a mode-000 file (root)";
  std::unique_ptr<MappedFile> m;
  Status s = MappedFile::open(path("locked"), &m);
  EXPECT_EQ(s.code(), StatusCode::io_error);
  EXPECT_NE(s.message().find(path("locked")), std::string::npos) << s.message();
}

// --- safetensors: write → read ---------------------------------------------------

TEST_F(WeightsTest, SafetensorsRoundTripKeepsOrderBytesAlignmentAndMetadata) {
  const std::vector<float> a = {1.5f, -2.25f, 0.0f, 1024.0f, 3.0f, -0.125f};
  const std::vector<uint16_t> h = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x3555};  // 10 bytes
  const std::vector<uint16_t> b = {0x3f80, 0xbfc0, 0x4049, 0x0080, 0x7f80, 0xff80};
  const std::vector<float> scalar = {42.0f};
  const std::vector<float> none;
  // The names sort differently from the write order, and the empty tensor shares its
  // offset with the next one: the reader must still give back the write order.
  const std::vector<TensorView> in = {
      view_of("z.f32", DType::f32, {2, 3}, a), view_of("y.f16", DType::f16, {5}, h),
      view_of("x.empty", DType::f32, {0, 5}, none), view_of("w.bf16", DType::bf16, {3, 2}, b),
      view_of("v.scalar", DType::f32, {}, scalar)};
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "h\xc3\xa9llo"}};
  const std::string p = path("round.safetensors");
  Status s = write_safetensors(p, in, meta);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(entries(), 1u) << "the temporary file must be gone";

  // The raw layout: header length a multiple of 8, header padded with spaces.
  const std::string raw = slurp(p);
  uint64_t hlen = 0;
  std::memcpy(&hlen, raw.data(), 8);
  EXPECT_EQ(hlen % 8, 0u);
  const std::string header = raw.substr(8, hlen);
  const size_t close = header.rfind('}');
  ASSERT_NE(close, std::string::npos);
  EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << header;
  EXPECT_LT(header.size() - close - 1, 8u) << "more padding than alignment needs";

  std::unique_ptr<SafetensorsFile> f;
  s = SafetensorsFile::open(p, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f->path(), p);
  EXPECT_EQ(f->metadata(), meta);
  ASSERT_EQ(f->tensors().size(), in.size());
  const uint8_t* prev_end = nullptr;
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorView& t = f->tensors()[i];
    SCOPED_TRACE(in[i].name);
    EXPECT_EQ(t.name, in[i].name);
    EXPECT_EQ(t.dtype, in[i].dtype);
    EXPECT_EQ(t.shape, in[i].shape);
    ASSERT_EQ(t.nbytes, in[i].nbytes);
    if (t.nbytes) {
      EXPECT_EQ(std::memcmp(t.data, in[i].data, t.nbytes), 0);
    }
    // The mapping is page aligned, so an aligned address means an aligned offset.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 8, 0u);
    if (prev_end) {
      EXPECT_LT(t.data - prev_end, 8) << "gap larger than alignment";
    }
    prev_end = t.data + t.nbytes;
    EXPECT_EQ(f->find(t.name), &t);
  }
  // Offsets: 24 bytes, 10 bytes, empty, 12 bytes, 4 bytes, each start rounded up to 8;
  // the file ends where the last tensor does.
  const std::vector<ptrdiff_t> want_at = {0, 24, 40, 40, 56};
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(f->tensors()[i].data - f->tensors()[0].data, want_at[i]) << in[i].name;
  EXPECT_EQ(raw.size(), 8 + hlen + 60);
  EXPECT_EQ(f->find("absent"), nullptr);
  EXPECT_EQ(decode(*f->find("y.f16")),
            (std::vector<float>{1.0f, -2.0f, 0x1p-24f, 65504.0f, 0.333251953125f}));
  const std::vector<float> wb = decode(*f->find("w.bf16"));
  EXPECT_EQ(std::vector<float>(wb.begin(), wb.begin() + 4),
            (std::vector<float>{1.0f, -1.5f, 3.140625f, 0x1p-126f}));
  EXPECT_EQ(wb[4], INFINITY);
  EXPECT_EQ(wb[5], -INFINITY);
  EXPECT_EQ(decode(*f->find("v.scalar")), scalar);
}

TEST_F(WeightsTest, SafetensorsRewriteReplacesTheFileAndEmptyListWorks) {
  const std::string p = path("model.safetensors");
  const std::vector<float> one = {1, 2, 3}, two = {7};
  HW_ASSERT_OK(write_safetensors(p, {view_of("t", DType::f32, {3}, one)}));
  HW_ASSERT_OK(write_safetensors(p, {view_of("u", DType::f32, {1}, two)}, {{"k", "v"}}));
  EXPECT_EQ(entries(), 1u);
  std::unique_ptr<SafetensorsFile> f;
  HW_ASSERT_OK(SafetensorsFile::open(p, &f));
  ASSERT_EQ(f->tensors().size(), 1u);
  EXPECT_EQ(f->find("t"), nullptr);
  EXPECT_EQ(decode(*f->find("u")), two);
  EXPECT_EQ(f->metadata().at("k"), "v");

  HW_ASSERT_OK(write_safetensors(p, {}));
  Status s = SafetensorsFile::open(p, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_TRUE(f->metadata().empty());
}

TEST_F(WeightsTest, SafetensorsWriteRejectsBadTensorsAndPathsNamingThem) {
  const std::vector<float> v = {1, 2, 3, 4};
  const std::string p = path("out.safetensors");
  struct Bad {
    std::vector<TensorView> tensors;
    const char* names;
  };
  TensorView short_bytes = view_of("blk.0.short", DType::f32, {5}, v);  // 16 bytes, needs 20
  TensorView negative = view_of("blk.0.neg", DType::f32, {-4}, v);
  TensorView null_data = view_of("blk.0.null", DType::f32, {4}, v);
  null_data.data = nullptr;
  const Bad bads[] = {
      {{short_bytes}, "blk.0.short"},
      {{negative}, "blk.0.neg"},
      {{null_data}, "blk.0.null"},
      {{view_of("blk.0.twice", DType::f32, {4}, v), view_of("blk.0.twice", DType::f16, {8}, v)},
       "blk.0.twice"},
      {{view_of("__metadata__", DType::f32, {4}, v)}, "__metadata__"},
      {{view_of("bad\xff" "utf8", DType::f32, {4}, v)}, "UTF-8"},
  };
  for (const Bad& b : bads) {
    Status s = write_safetensors(p, b.tensors);
    EXPECT_EQ(s.code(), StatusCode::invalid_argument) << b.names << ": " << s.message();
    EXPECT_NE(s.message().find(p), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(b.names), std::string::npos) << s.message();
  }
  EXPECT_EQ(entries(), 0u) << "nothing may be written for a rejected call";

  const std::vector<TensorView> ok = {view_of("t", DType::f32, {4}, v)};
  const std::string no_dir = path("no/such/dir/x.safetensors");
  Status s = write_safetensors(no_dir, ok);
  EXPECT_EQ(s.code(), StatusCode::io_error);
  EXPECT_NE(s.message().find(no_dir), std::string::npos) << s.message();

  // Renaming onto a directory fails after the data is written: the temporary file
  // must be removed again.
  fs::create_directory(path("taken"));
  s = write_safetensors(path("taken"), ok);
  EXPECT_EQ(s.code(), StatusCode::io_error);
  EXPECT_NE(s.message().find(path("taken")), std::string::npos) << s.message();
  EXPECT_EQ(entries(), 1u) << "a temporary file was left behind";
}

// --- safetensors: validation -----------------------------------------------------

struct BadHeader {
  const char* label;
  std::string header;
  size_t data;        // zero bytes after the header
  StatusCode code;
  const char* names;  // the tensor or field the message must name
  const char* says;   // the words that say which rule failed
};

void PrintTo(const BadHeader& c, std::ostream* os) { *os << c.label << ": " << c.header; }

class SafetensorsValidation : public WeightsTest,
                              public ::testing::WithParamInterface<BadHeader> {};

TEST_P(SafetensorsValidation, RejectsNamingFileAndTensor) {
  const BadHeader& c = GetParam();
  const std::string p = path(std::string(c.label) + ".safetensors");
  spit(p, safetensors_bytes(c.header, c.data));
  std::unique_ptr<SafetensorsFile> f;
  Status s = SafetensorsFile::open(p, &f);
  EXPECT_EQ(s.code(), c.code) << s.message();
  EXPECT_NE(s.message().find(p), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(c.names), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
  EXPECT_EQ(f, nullptr);
}

// A valid neighbour first, so a message naming the wrong tensor fails the test.
std::string with_good(const std::string& bad_entry) {
  return R"({"a.good":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"t.bad":)" + bad_entry +
         "}";
}
std::string bad_entry(const char* dtype, const char* shape, const char* offsets) {
  std::string e = "{";
  if (dtype) e += std::string(R"("dtype":)") + dtype + ",";
  if (shape) e += std::string(R"("shape":)") + shape + ",";
  if (offsets) e += std::string(R"("data_offsets":)") + offsets + ",";
  e.back() = '}';
  return with_good(e);
}

const auto F = StatusCode::format_error;
const auto U = StatusCode::unsupported;
const char* const T = "'t.bad'";
const char* const kNotInts = "is not a list of non-negative integers";
const char* const kNotPair = "is not two non-negative integers";
INSTANTIATE_TEST_SUITE_P(
    Weights, SafetensorsValidation,
    ::testing::Values(
        BadHeader{"entry_number", with_good("5"), 16, F, T, "not an object"},
        BadHeader{"entry_array", with_good("[1,2]"), 16, F, T, "not an object"},
        BadHeader{"dtype_missing", bad_entry(nullptr, "[2]", "[8,16]"), 16, F, T,
                  "missing 'dtype'"},
        BadHeader{"dtype_number", bad_entry("4", "[2]", "[8,16]"), 16, F, T, "not a string"},
        BadHeader{"dtype_unknown", bad_entry(R"("F99")", "[2]", "[8,16]"), 16, U, T, "'F99'"},
        BadHeader{"dtype_unsupported", bad_entry(R"("I64")", "[2]", "[8,16]"), 16, U, T,
                  "'I64' is not supported"},
        BadHeader{"shape_missing", bad_entry(R"("F32")", nullptr, "[8,16]"), 16, F, T,
                  "missing 'shape'"},
        BadHeader{"shape_number", bad_entry(R"("F32")", "2", "[8,16]"), 16, F, T,
                  "'shape' is not an array"},
        BadHeader{"shape_negative", bad_entry(R"("F32")", "[-1,-2]", "[8,16]"), 16, F, T,
                  kNotInts},
        BadHeader{"shape_fraction", bad_entry(R"("F32")", "[2.0]", "[8,16]"), 16, F, T, kNotInts},
        BadHeader{"shape_string", bad_entry(R"("F32")", R"(["2"])", "[8,16]"), 16, F, T,
                  kNotInts},
        BadHeader{"shape_beyond_int64", bad_entry(R"("F32")", "[9223372036854775808]", "[8,8]"),
                  16, F, T, kNotInts},
        BadHeader{"shape_overflow", bad_entry(R"("F32")", "[4294967296,4294967296]", "[8,8]"),
                  16, F, T, "overflows"},
        BadHeader{"offsets_missing", bad_entry(R"("F32")", "[2]", nullptr), 16, F, T,
                  "missing 'data_offsets'"},
        BadHeader{"offsets_one", bad_entry(R"("F32")", "[2]", "[8]"), 16, F, T, kNotPair},
        BadHeader{"offsets_three", bad_entry(R"("F32")", "[2]", "[8,16,24]"), 24, F, T, kNotPair},
        BadHeader{"offsets_object", bad_entry(R"("F32")", "[2]", R"({"a":8})"), 16, F, T,
                  kNotPair},
        BadHeader{"offsets_negative", bad_entry(R"("F32")", "[2]", "[-8,0]"), 16, F, T, kNotPair},
        BadHeader{"offsets_fraction", bad_entry(R"("F32")", "[2]", "[8,16.0]"), 16, F, T,
                  kNotPair},
        BadHeader{"begin_after_end", bad_entry(R"("F32")", "[0]", "[16,8]"), 16, F, T,
                  "begin 16 > end 8"},
        BadHeader{"end_beyond_data", bad_entry(R"("F32")", "[2]", "[8,16]"), 15, F, T,
                  "end 16 is beyond the data section of 15 bytes"},
        BadHeader{"size_mismatch", bad_entry(R"("F16")", "[2]", "[8,16]"), 16, F, T,
                  "span 8 bytes but shape [2] of F16 needs 4"},
        BadHeader{"metadata_number", R"({"__metadata__":5})", 0, F, "__metadata__",
                  "not an object"},
        BadHeader{"metadata_value", R"({"__metadata__":{"fine":"x","epoch":3}})", 0, F,
                  "__metadata__", "'epoch' is not a string"},
        BadHeader{"header_not_json", R"({"t.bad":{"dtype":"F32",)", 0, F, "header",
                  "malformed JSON"},
        BadHeader{"header_not_object", R"([1,2,3])", 0, F, "header", "not an object"},
        BadHeader{"header_empty", "", 0, F, "header", "malformed JSON"}),
    [](const ::testing::TestParamInfo<BadHeader>& i) { return std::string(i.param.label); });

TEST_F(WeightsTest, SafetensorsHeaderLengthErrors) {
  std::unique_ptr<SafetensorsFile> f;
  const std::pair<std::string, std::string> files[] = {
      {"empty", ""},
      {"seven_bytes", std::string(7, '\0')},
      {"length_past_end", le64(100) + R"({"t":{}})"},
      {"length_huge", le64(~uint64_t(0)) + "{}"},
  };
  for (const auto& [name, bytes] : files) {
    const std::string p = path(name + ".safetensors");
    spit(p, bytes);
    Status s = SafetensorsFile::open(p, &f);
    EXPECT_EQ(s.code(), StatusCode::format_error) << name << ": " << s.message();
    EXPECT_NE(s.message().find(p), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("header length"), std::string::npos) << s.message();
  }
  Status s = SafetensorsFile::open(path("absent.safetensors"), &f);
  EXPECT_EQ(s.code(), StatusCode::not_found);
  EXPECT_NE(s.message().find(path("absent.safetensors")), std::string::npos) << s.message();
}

TEST_F(WeightsTest, SafetensorsOverlappingTensorsAreAllowed) {
  // Two names for the same bytes and a third that straddles them; the format allows it.
  const std::string header =
      R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("c":{"dtype":"F16","shape":[4],"data_offsets":[4,12]}})";
  std::string bytes = safetensors_bytes(header, 12);
  const float vals[3] = {1.0f, 2.0f, -3.0f};
  std::memcpy(&bytes[8 + header.size()], vals, sizeof vals);
  spit(path("overlap.safetensors"), bytes);
  std::unique_ptr<SafetensorsFile> f;
  Status s = SafetensorsFile::open(path("overlap.safetensors"), &f);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "a");  // same range: by name
  EXPECT_EQ(f->tensors()[1].name, "b");
  EXPECT_EQ(f->tensors()[2].name, "c");
  EXPECT_EQ(f->find("a")->data, f->find("b")->data);
  EXPECT_EQ(f->find("c")->data, f->find("a")->data + 4);
  EXPECT_EQ(decode(*f->find("b")), (std::vector<float>{1.0f, 2.0f}));
}

// --- safetensors: independent numpy writer and reader ----------------------------

bool python_has_numpy() {
  return std::system(HEADWISE_PYTHON " -c \"import numpy\" >/dev/null 2>&1") == 0;
}

// Runs `script` with HEADWISE_PYTHON; returns the exit code, output in *out.
int run_python(const std::string& script_path, const std::string& script,
               const std::string& arg, std::string* out) {
  spit(script_path, script);
  const std::string cmd =
      std::string(HEADWISE_PYTHON) + " '" + script_path + "' '" + arg + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Lays tensors out back to back with no alignment and pads the header to 3 mod 8, so
// the C++ reader meets unaligned data.
const char* kNumpyWriter = R"PY(
import json, struct, sys
import numpy as np
f32 = (np.arange(12, dtype=np.float32) * np.float32(0.25) - np.float32(1.5)).reshape(3, 4)
f16 = np.array([-0.25, 0.5, 65504.0, 2.0**-24, 2.0**-14, -0.0, np.inf], dtype=np.float16)
wide = np.array([1.0, -2.5, 3.140625, 2.0**100, -2.0**-130], dtype=np.float32)
bf16 = (wide.view(np.uint32) >> 16).astype(np.uint16).reshape(5, 1)
assert np.array_equal((bf16.ravel().astype(np.uint32) << 16).view(np.float32), wide)
header, blobs, pos = {"__metadata__": {"writer": "numpy-only"}}, [], 0
for name, dt, arr in [("w.f32", "F32", f32.astype("<f4")), ("w.f16", "F16", f16.astype("<f2")),
                      ("w.bf16", "BF16", bf16.astype("<u2"))]:
    b = arr.tobytes()
    header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [pos, pos + len(b)]}
    blobs.append(b)
    pos += len(b)
h = json.dumps(header).encode()
while len(h) % 8 != 3:
    h += b" "
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
)PY";

TEST_F(WeightsTest, SafetensorsReadsFileFromIndependentNumpyWriter) {
  if (!python_has_numpy()) GTEST_SKIP() << HEADWISE_PYTHON << " cannot import numpy";
  const std::string p = path("numpy.safetensors");
  std::string log;
  ASSERT_EQ(run_python(path("writer.py"), kNumpyWriter, p, &log), 0) << log;

  std::unique_ptr<SafetensorsFile> f;
  Status s = SafetensorsFile::open(p, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f->metadata(), (std::map<std::string, std::string>{{"writer", "numpy-only"}}));
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "w.f32");
  EXPECT_EQ(f->tensors()[1].name, "w.f16");
  EXPECT_EQ(f->tensors()[2].name, "w.bf16");

  const TensorView* t = f->find("w.f32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_NE(reinterpret_cast<uintptr_t>(t->data) % 4, 0u) << "meant to be unaligned";
  std::vector<float> want(12);
  for (int i = 0; i < 12; ++i) want[i] = i * 0.25f - 1.5f;
  EXPECT_EQ(decode(*t), want);

  t = f->find("w.f16");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, DType::f16);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{7}));
  const std::vector<float> h = decode(*t);
  const float want_h[7] = {-0.25f, 0.5f, 65504.0f, 0x1p-24f, 0x1p-14f, -0.0f, INFINITY};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(bits_of(h[i]), bits_of(want_h[i])) << i;

  t = f->find("w.bf16");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, DType::bf16);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{5, 1}));
  const std::vector<float> b = decode(*t);
  const float want_b[5] = {1.0f, -2.5f, 3.140625f, 0x1p100f, -0x1p-130f};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bits_of(b[i]), bits_of(want_b[i])) << i;
}

// Checks the C++ writer's file from scratch: alignment, padding, offsets, values.
const char* kNumpyReader = R"PY(
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
assert n % 8 == 0, n
text = raw[8:8 + n].decode()
assert text.rstrip(" ").endswith("}") and len(text) - len(text.rstrip(" ")) < 8, repr(text)
header = json.loads(text)
data = raw[8 + n:]
assert header.pop("__metadata__") == {"a": "b", "c": "d"}, header
want = {"x": ("F32", [2, 2], [1.5, -2.25, 1024.0, 0.5]),
        "y": ("F16", [3], [1.0, -2.5, 2.0**-24]),
        "z": ("BF16", [2], [3.140625, -1.0])}
assert list(header) == ["x", "y", "z"], list(header)
end_prev = 0
for name, (dt, shape, vals) in want.items():
    e = header[name]
    b, en = e["data_offsets"]
    assert e["dtype"] == dt and e["shape"] == shape, (name, e)
    assert b % 8 == 0 and 0 <= b - end_prev < 8 and en <= len(data), (name, b, en)
    end_prev = en
    buf = data[b:en]
    if dt == "F32":
        got = np.frombuffer(buf, "<f4")
    elif dt == "F16":
        got = np.frombuffer(buf, "<f2").astype(np.float32)
    else:
        got = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(got, np.array(vals, np.float32)), (name, got)
assert end_prev == len(data), (end_prev, len(data))
print("OK")
)PY";

TEST_F(WeightsTest, SafetensorsWrittenFileReadsInIndependentNumpyReader) {
  if (!python_has_numpy()) GTEST_SKIP() << HEADWISE_PYTHON << " cannot import numpy";
  const std::vector<float> x = {1.5f, -2.25f, 1024.0f, 0.5f};
  const std::vector<uint16_t> y = {0x3c00, 0xc100, 0x0001};
  const std::vector<uint16_t> z = {0x4049, 0xbf80};
  const std::string p = path("cpp.safetensors");
  const std::vector<TensorView> in = {view_of("x", DType::f32, {2, 2}, x),
                                      view_of("y", DType::f16, {3}, y),
                                      view_of("z", DType::bf16, {2}, z)};
  Status s = write_safetensors(p, in, {{"a", "b"}, {"c", "d"}});
  ASSERT_TRUE(s.ok()) << s.message();
  std::string log;
  EXPECT_EQ(run_python(path("reader.py"), kNumpyReader, p, &log), 0) << log;
  EXPECT_EQ(log, "OK\n");
}

// --- llama2.c checkpoints --------------------------------------------------------

std::string models_dir() { return std::string(HEADWISE_SHARED_DIR) + "/models"; }

#define HW_REQUIRE_MODELS()                                                         \
  do {                                                                              \
    if (!fs::is_directory(models_dir())) GTEST_SKIP() << models_dir() << " absent"; \
  } while (0)

struct Model {
  const char* file;  // under models_dir()
  int dim, hidden, layers, heads, kv_heads, vocab, seq;
};

// The configurations as documented in ../shared/models/README.md.
const Model kModels[] = {
    {"stories260K/stories260K.bin", 64, 172, 5, 8, 4, 512, 512},
    {"aidreams260K/aidreams260K.bin", 64, 172, 4, 4, 4, 512, 128},
};

float raw_float(const std::string& raw, size_t offset) {
  float f;
  std::memcpy(&f, raw.data() + offset, 4);
  return f;
}

class RealCheckpoint : public ::testing::TestWithParam<Model> {};

TEST_P(RealCheckpoint, ConfigNamesShapesAndBytesMatchARawRead) {
  HW_REQUIRE_MODELS();
  const Model m = GetParam();
  const std::string p = models_dir() + "/" + m.file;
  std::unique_ptr<Llama2cCheckpoint> ck;
  Status s = Llama2cCheckpoint::open(p, &ck);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ck->path(), p);
  const Llama2cConfig& c = ck->config();
  EXPECT_EQ(c.dim, m.dim);
  EXPECT_EQ(c.hidden_dim, m.hidden);
  EXPECT_EQ(c.n_layers, m.layers);
  EXPECT_EQ(c.n_heads, m.heads);
  EXPECT_EQ(c.n_kv_heads, m.kv_heads);
  EXPECT_EQ(c.vocab_size, m.vocab);
  EXPECT_EQ(c.seq_len, m.seq);
  EXPECT_TRUE(c.shared_classifier);
  EXPECT_EQ(c.head_size(), m.dim / m.heads);
  EXPECT_EQ(c.kv_dim(), m.dim / m.heads * m.kv_heads);

  // The expected layout, written out independently: (name, rows, cols) in file order,
  // per-layer kinds as one [layers][rows][cols] array each.
  const std::string raw = slurp(p);
  const int64_t D = m.dim, H = m.hidden, KV = m.dim / m.heads * m.kv_heads, V = m.vocab;
  struct Kind {
    std::string name;
    int64_t rows, cols;  // cols 0: a vector of `rows`
    bool per_layer;
  };
  const Kind kinds[] = {
      {"tok_embeddings.weight", V, D, false}, {"attention_norm.weight", D, 0, true},
      {"attention.wq.weight", D, D, true},    {"attention.wk.weight", KV, D, true},
      {"attention.wv.weight", KV, D, true},   {"attention.wo.weight", D, D, true},
      {"ffn_norm.weight", D, 0, true},        {"feed_forward.w1.weight", H, D, true},
      {"feed_forward.w2.weight", D, H, true}, {"feed_forward.w3.weight", H, D, true},
      {"norm.weight", D, 0, false},
  };
  size_t offset = 28, index = 0;
  for (const Kind& k : kinds) {
    for (int l = 0; l < (k.per_layer ? m.layers : 1); ++l, ++index) {
      const std::string name = k.per_layer ? "layers." + std::to_string(l) + "." + k.name : k.name;
      const std::vector<int64_t> shape =
          k.cols ? std::vector<int64_t>{k.rows, k.cols} : std::vector<int64_t>{k.rows};
      const size_t bytes = size_t(k.rows * (k.cols ? k.cols : 1)) * 4;
      SCOPED_TRACE(name);
      ASSERT_LT(index, ck->tensors().size());
      const TensorView& t = ck->tensors()[index];
      EXPECT_EQ(t.name, name);
      EXPECT_EQ(t.dtype, DType::f32);
      EXPECT_EQ(t.shape, shape);
      ASSERT_EQ(t.nbytes, bytes);
      ASSERT_LE(offset + bytes, raw.size());
      EXPECT_EQ(std::memcmp(t.data, raw.data() + offset, bytes), 0);
      EXPECT_EQ(ck->find(name), &t);
      offset += bytes;
    }
  }
  EXPECT_EQ(ck->tensors().size(), index) << "unexpected extra tensors";
  EXPECT_EQ(ck->find("output.weight"), nullptr) << "shared classifier has no output.weight";
  // What follows norm.weight is exactly the two RoPE tables.
  EXPECT_EQ(raw.size() - offset, size_t(2 * m.seq * (m.dim / m.heads) / 2 * 4));

  // Spot values located from the other end of the file: norm.weight sits right before
  // the RoPE tables, the last w3 row right before norm.weight.
  const size_t norm_at = raw.size() - size_t(m.seq * (m.dim / m.heads)) * 4 - size_t(D) * 4;
  std::vector<float> norm(static_cast<size_t>(D));
  to_f32(DType::f32, ck->find("norm.weight")->data, norm.size(), norm.data());
  for (size_t i : {size_t(0), size_t(D / 2), size_t(D - 1)})
    EXPECT_EQ(bits_of(norm[i]), bits_of(raw_float(raw, norm_at + 4 * i))) << i;
  const TensorView* w3 =
      ck->find("layers." + std::to_string(m.layers - 1) + ".feed_forward.w3.weight");
  ASSERT_NE(w3, nullptr);
  float last;
  std::memcpy(&last, w3->data + w3->nbytes - 4, 4);
  EXPECT_EQ(bits_of(last), bits_of(raw_float(raw, norm_at - 4)));
  // A trained model: the embedding is not all zeros (the views are real data).
  std::vector<float> emb(static_cast<size_t>(D));
  to_f32(DType::f32, ck->find("tok_embeddings.weight")->data, emb.size(), emb.data());
  EXPECT_NE(std::count(emb.begin(), emb.end(), 0.0f), D);
}

TEST_P(RealCheckpoint, TruncatedOrOversizedCopyNamesExpectedAndActualSize) {
  HW_REQUIRE_MODELS();
  const std::string raw = slurp(models_dir() + "/" + GetParam().file);
  ASSERT_GT(raw.size(), 28u);
  std::string tmpl = (fs::path(::testing::TempDir()) / "headwise_ck_XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::pair<const char*, std::string> copies[] = {
      {"truncated.bin", raw.substr(0, raw.size() - 4)},
      {"short_by_one.bin", raw.substr(0, raw.size() - 1)},
      {"oversized.bin", raw + std::string(4, '\0')},
      {"header_only.bin", raw.substr(0, 28)},
  };
  for (const auto& [name, bytes] : copies) {
    const std::string p = tmpl + "/" + name;
    spit(p, bytes);
    std::unique_ptr<Llama2cCheckpoint> ck;
    Status s = Llama2cCheckpoint::open(p, &ck);
    EXPECT_EQ(s.code(), StatusCode::format_error) << name << ": " << s.message();
    EXPECT_NE(s.message().find(p), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(std::to_string(raw.size())), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(std::to_string(bytes.size())), std::string::npos) << s.message();
    EXPECT_EQ(ck, nullptr);
  }
  std::error_code ec;
  fs::remove_all(tmpl, ec);
}

INSTANTIATE_TEST_SUITE_P(Weights, RealCheckpoint, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<Model>& i) {
                           const std::string file = i.param.file;
                           return file.substr(0, file.find('/'));
                         });

// A checkpoint whose float k holds the value k, so every view shows where it starts.
std::string synthetic_checkpoint(const int32_t header[7], size_t floats) {
  std::string bytes(reinterpret_cast<const char*>(header), 28);
  for (size_t k = 0; k < floats; ++k) {
    const float f = float(k);
    bytes.append(reinterpret_cast<const char*>(&f), 4);
  }
  return bytes;
}

TEST_F(WeightsTest, Llama2cUnsharedClassifierFollowsTheRopeTables) {
  // dim 8, hidden 12, 2 layers, 2 heads, 1 kv head (head 4, kv_dim 4), vocab -10, seq 6
  const int32_t header[7] = {8, 12, 2, 2, 1, -10, 6};
  const size_t emb = 10 * 8, rms = 2 * 8, wq = 2 * 64, wk = 2 * 4 * 8, ffn = 2 * 12 * 8,
               rope = 6 * 4 / 2;
  const size_t before_rope = emb + rms + wq + 2 * wk + wq + rms + 3 * ffn + 8;
  const size_t total = before_rope + 2 * rope + 10 * 8;
  const std::string p = path("unshared.bin");
  spit(p, synthetic_checkpoint(header, total));

  std::unique_ptr<Llama2cCheckpoint> ck;
  Status s = Llama2cCheckpoint::open(p, &ck);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(ck->config().shared_classifier);
  EXPECT_EQ(ck->config().vocab_size, 10);
  EXPECT_EQ(ck->config().kv_dim(), 4);
  EXPECT_EQ(ck->tensors().size(), size_t(2 + 9 * 2 + 1));
  auto first = [&](const std::string& name) {
    const TensorView* t = ck->find(name);
    float f = -1;
    if (t) std::memcpy(&f, t->data, 4);
    return f;
  };
  EXPECT_EQ(first("tok_embeddings.weight"), 0.0f);
  EXPECT_EQ(first("layers.0.attention_norm.weight"), float(emb));
  EXPECT_EQ(first("layers.1.attention_norm.weight"), float(emb + 8));
  EXPECT_EQ(first("layers.1.attention.wk.weight"), float(emb + rms + wq + wk / 2));
  EXPECT_EQ(first("layers.0.feed_forward.w2.weight"),
            float(emb + rms + 2 * wq + 2 * wk + rms + ffn));
  EXPECT_EQ(first("norm.weight"), float(before_rope - 8));
  EXPECT_EQ(first("output.weight"), float(before_rope + 2 * rope));
  const TensorView* out = ck->find("output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->shape, (std::vector<int64_t>{10, 8}));
  EXPECT_EQ(ck->find("layers.0.attention.wk.weight")->shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(ck->find("layers.1.feed_forward.w2.weight")->shape, (std::vector<int64_t>{8, 12}));
  float last;
  std::memcpy(&last, out->data + out->nbytes - 4, 4);
  EXPECT_EQ(last, float(total - 1));

  // The same weights claiming a shared classifier are 80 floats too long.
  const int32_t shared[7] = {8, 12, 2, 2, 1, 10, 6};
  spit(p, synthetic_checkpoint(shared, total));
  s = Llama2cCheckpoint::open(p, &ck);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find(std::to_string(28 + 4 * (total - 80))), std::string::npos)
      << s.message();
}

TEST_F(WeightsTest, Llama2cBadHeaderFieldsAreNamed) {
  struct Bad {
    int32_t header[7];
    const char* says;  // the field and the rule it breaks, as the message words it
  };
  const Bad bads[] = {
      {{0, 12, 2, 2, 1, 10, 6}, "dim = 0 must be positive"},
      {{8, -12, 2, 2, 1, 10, 6}, "hidden_dim = -12 must be positive"},
      {{8, 12, 0, 2, 1, 10, 6}, "n_layers = 0 must be positive"},
      {{8, 12, 2, 0, 1, 10, 6}, "n_heads = 0 must be positive"},
      {{8, 12, 2, 2, -1, 10, 6}, "n_kv_heads = -1 must be positive"},
      {{8, 12, 2, 2, 1, 0, 6}, "vocab_size = 0 must be non-zero"},
      {{8, 12, 2, 2, 1, INT32_MIN, 6}, "vocab_size = -2147483648 must be non-zero"},
      {{8, 12, 2, 2, 1, 10, 0}, "seq_len = 0 must be positive"},
      {{8, 12, 2, 3, 1, 10, 6}, "dim = 8 is not a multiple of n_heads = 3"},
      {{8, 12, 2, 4, 3, 10, 6}, "n_heads = 4 is not a multiple of n_kv_heads = 3"},
  };
  int i = 0;
  for (const Bad& b : bads) {
    const std::string p = path("bad_" + std::to_string(i++) + ".bin");
    spit(p, synthetic_checkpoint(b.header, 64));
    std::unique_ptr<Llama2cCheckpoint> ck;
    Status s = Llama2cCheckpoint::open(p, &ck);
    EXPECT_EQ(s.code(), StatusCode::format_error) << b.says << ": " << s.message();
    EXPECT_NE(s.message().find(p), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(b.says), std::string::npos) << s.message();
  }

  // Huge fields: the implied size overflows 64 bits and must not wrap to a match.
  const int32_t huge[7] = {INT32_MAX, INT32_MAX, INT32_MAX, 1, 1, 1, 1};
  spit(path("huge.bin"), synthetic_checkpoint(huge, 0));
  std::unique_ptr<Llama2cCheckpoint> ck;
  Status s = Llama2cCheckpoint::open(path("huge.bin"), &ck);
  EXPECT_EQ(s.code(), StatusCode::format_error) << s.message();
  EXPECT_NE(s.message().find(path("huge.bin")), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("2^64"), std::string::npos) << s.message();

  spit(path("tiny.bin"), "llama");
  s = Llama2cCheckpoint::open(path("tiny.bin"), &ck);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find(path("tiny.bin")), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("header"), std::string::npos) << s.message();

  s = Llama2cCheckpoint::open(path("absent.bin"), &ck);
  EXPECT_EQ(s.code(), StatusCode::not_found);
  EXPECT_NE(s.message().find(path("absent.bin")), std::string::npos) << s.message();
  EXPECT_EQ(ck, nullptr);
}

}  // namespace
}  // namespace headwise::graph
