// LaTeX, CSV and NPY writers: exact text for known matrices, NPY header and data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "mhaviz/export.hpp"
#include "test_util.hpp"

namespace mhaviz {
namespace {

TEST(Export, LatexMatchesSeedFourLayout) {
  const float x[6] = {1.0f, 2.0f, 3.0f, 6.0f, -0.00001f, -std::numeric_limits<float>::infinity()};
  EXPECT_EQ(to_latex(x, 2, 3, 1),
            "\\begin{bmatrix} \n"
            "1.0 & 2.0 & 3.0 \\\\ \n"
            "6.0 & 0.0 & -\\infty \n"
            "\\end{bmatrix}\n");
  const float w[2] = {0.63231f, -0.23664f};
  EXPECT_EQ(to_latex(w, 1, 2), "\\begin{bmatrix} \n0.6323 & -0.2366 \n\\end{bmatrix}\n");
}

TEST(Export, CsvRowsWithNineDigits) {
  const float x[4] = {0.5f, -0.451920271f, -std::numeric_limits<float>::infinity(), 1e-8f};
  EXPECT_EQ(to_csv(x, 2, 2), "0.5,-0.451920271\n-inf,9.99999994e-09\n");
}

TEST(Export, NpyHeaderShapeAndData) {
  const Session s = lesson("seed003-wrapper");
  const Trace t = forward(build_model(s.model, s.d_in()), s.input_tensor());
  const std::string npy = to_npy(t.output);
  ASSERT_GE(npy.size(), 10u);
  EXPECT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t hlen = static_cast<unsigned char>(npy[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(npy[9])) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  const std::string header = npy.substr(10, hlen);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 6, 4), }", 0), 0u) << header;
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(npy.size(), 10 + hlen + t.output.data.size() * 4);
  std::vector<float> back(t.output.data.size());
  std::memcpy(back.data(), npy.data() + 10 + hlen, back.size() * 4);
  EXPECT_EQ(back, t.output.data);
  Tensor v({5});
  EXPECT_NE(to_npy(v).find("'shape': (5,), }"), std::string::npos);
}

TEST(Export, StageTensorsAndSelection) {
  const Session s = lesson("seed003-wrapper");
  const Model m = build_model(s.model, s.d_in());
  const Trace t = forward(m, s.input_tensor());
  const Tensor masked = stage_tensor(t, Stage::Masked);
  ASSERT_EQ(masked.shape, (Shape{2, 2, 6, 6}));
  const Tensor one = select_matrix(masked, {1, 1}, "attn_scores_masked");
  ASSERT_EQ(one.shape, (Shape{6, 6}));
  EXPECT_EQ(one.data, t.stage_matrix(Stage::Masked, 1, 1));
  EXPECT_THROW(select_matrix(masked, {0}, "x"), SessionError);
  EXPECT_THROW(select_matrix(masked, {0, 2}, "x"), SessionError);
  bool have_masked = false;
  for (const auto& nt : exportable_tensors(m, t)) have_masked = have_masked || nt.name == "attn_scores_masked";
  EXPECT_TRUE(have_masked);
}

}  // namespace
}  // namespace mhaviz
