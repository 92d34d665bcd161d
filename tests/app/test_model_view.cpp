// The model view as the app shows it (app/gui/logic/model_view.hpp, figure/model_figure.cpp), no
// window: the text box's tokens (GPT-2's, the leading space visible, <|endoftext|> first on
// request, the worker's errors for the same text); the figure laid out to fill its canvas
// with every column and row labelled, a readable score under every thumbnail and the selected
// head large from the trace's own weights; the view derived off the drawing thread, which is
// the figure `mhaviz render --view model` and the captures draw; next-token percentages.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/gpt_test_util.hpp"
#include "figure/gpt_figures.hpp"
#include "figure/text.hpp"
#include "mhaviz/hf_interventions.hpp"
#include "mhaviz/safetensors.hpp"
#include "model_sweep.hpp"
#include "model_view.hpp"
#include "text_clear.hpp"

namespace mhaviz::gui {
namespace {

// UTF-8 of a code point below 0x800 (all GPT-2's byte characters are).
std::string utf8(int cp) {
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

// GPT-2's 256 byte tokens (printable bytes as themselves, the others from U+0100 on, in
// GPT-2's order), the merge "Ġ a" and the special token.
Tokenizer tiny() {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
  std::vector<int> cs = bs;
  for (int b = 0, n = 0; b < 256; ++b) {
    if (std::find(bs.begin(), bs.end(), b) != bs.end()) continue;
    bs.push_back(b);
    cs.push_back(256 + n++);
  }
  std::string vocab = "{";
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const std::string ch = cs[i] == '"' ? "\\\"" : cs[i] == '\\' ? "\\\\" : utf8(cs[i]);
    vocab += "\"" + ch + "\": " + std::to_string(i) + ", ";
  }
  vocab +=
      "\"\xC4\xA0"
      "a\": 256, \"<|endoftext|>\": 257}";
  return Tokenizer::from_strings(vocab, "#version: 0.2\n\xC4\xA0 a\n", "tiny");
}

TEST(ModelViewText, ShowsTokensWithTheLeadingSpaceVisible) {
  const Tokenizer tok = tiny();
  const TextTokens t = tokenize_for_display(tok, "ab a", {}, 16);
  ASSERT_EQ(t.tokens.size(), 3u);
  EXPECT_EQ(t.tokens[0], "a");
  EXPECT_EQ(t.tokens[1], "b");
  EXPECT_EQ(t.tokens[2],
            "\xE2\x90\xA3"
            "a");  // ␣a: one token, its space shown
  EXPECT_EQ(t.error, "");
}

TEST(ModelViewText, PrependsEndOfTextWhenAsked) {
  const Tokenizer tok = tiny();
  const TextTokens t = tokenize_for_display(tok, "a", {SpecialFirst::EndOfText}, 16);
  ASSERT_EQ(t.tokens.size(), 2u);
  EXPECT_EQ(t.tokens[0], "<|endoftext|>");
}

TEST(ModelViewText, ErrorsNameTheFieldAndBothLengths) {
  const Tokenizer tok = tiny();
  EXPECT_EQ(tokenize_for_display(tok, "", {}, 16).error, "text: empty; type at least one token");
  const TextTokens t = tokenize_for_display(tok, "ab ab ab", {}, 4);
  EXPECT_EQ(t.tokens.size(), 6u);  // still shown: the teacher sees what is too long
  EXPECT_EQ(t.error, "text: 6 tokens is longer than the model's context of 4");
  EXPECT_EQ(tokenize_for_display(tok, "ab ab", {}, 4).error, "");
}

TEST(ModelViewText, HeadLabelsAreLayerDotHead) {
  EXPECT_EQ(head_label(0, 12), "0.0");
  EXPECT_EQ(head_label(61, 12), "5.1");
  EXPECT_EQ(head_label(143, 12), "11.11");
}

// [SECTION] Next-token percentages
TEST(ModelViewNext, PercentagesKeepTwoSignificantDigits) {
  EXPECT_EQ(percent_texts({0.5f, 0.0314f, 0.0003f, 3e-9f, 0.0f}),
            (std::vector<std::string>{"50.0%", "3.14%", "0.030%", "3.0e-07%", "0%"}));
  // Two that would print alike get the digits that tell them apart.
  const std::vector<std::string> t = percent_texts({0.000312f, 0.000314f});
  EXPECT_NE(t[0], t[1]);
  EXPECT_EQ(t[0], "0.0312%");
}

// [SECTION] The figure
// A model view of L x H heads over T tokens: weights from a fixed generator (each row a
// softmax, masked cells 0), scores when asked.
struct SyntheticView {
  std::vector<std::vector<float>> w;
  figure::ModelView mv;
  SyntheticView(int L, int H, int T, bool scored) {
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> u(0.0f, 4.0f);
    for (int k = 0; k < L * H; ++k) {
      std::vector<float> m(static_cast<std::size_t>(T) * static_cast<std::size_t>(T), 0.0f);
      for (int i = 0; i < T; ++i) {
        float sum = 0;
        for (int j = 0; j <= i; ++j) sum += m[static_cast<std::size_t>(i * T + j)] = std::exp(u(gen));
        for (int j = 0; j <= i; ++j) m[static_cast<std::size_t>(i * T + j)] /= sum;
      }
      w.push_back(std::move(m));
    }
    mv.n_layer = L, mv.n_head = H, mv.tokens = T;
    for (const auto& m : w) mv.weights.push_back(m.data());
    for (int i = 0; i < T; ++i) mv.token_names.push_back("tok" + std::to_string(i));
    mv.title = "Every layer x head";
    if (scored) {
      mv.pattern = "previous-token";
      for (int k = 0; k < L * H; ++k) mv.scores.push_back(static_cast<float>(k % 97) / 97.0f);
    }
  }
};

figure::Options screen(float w, float h) {
  figure::Options o;
  o.canvas = {w, h};
  o.type = figure::Typography::for_font(18.0f);
  o.dark = true;
  o.caption = false;
  return o;
}

std::vector<const figure::Prim*> texts(const figure::Figure& f, const std::string& cls) {
  std::vector<const figure::Prim*> out;
  for (const figure::Prim& p : f.prims)
    if (p.kind == figure::Prim::Kind::Text && p.cls == cls) out.push_back(&p);
  return out;
}

// GPT-2 small's 12 x 12 heads with a detector and a head selected, on the canvases the app
// has at 1920 x 1080 and 1280 x 800 and render's default: every column and row labelled,
// every score printed at the figure's small size (never shrunk to fit), the top five and the
// selection framed, every thumbnail and the large head a hit, all within the canvas.
TEST(ModelFigure, LabelsEveryHeadAndScoresEveryThumbnailOnEveryCanvas) {
  SyntheticView v(12, 12, 44, true);
  v.mv.selected_layer = 5, v.mv.selected_head = 1;
  for (const auto& [w, h] : {std::pair{1475.0f, 870.0f}, {835.0f, 590.0f}, {1280.0f, 720.0f}}) {
    const figure::Options o = screen(w, h);
    const figure::Figure f = figure::build_model_figure(v.mv, o);
    SCOPED_TRACE(std::to_string(static_cast<int>(w)) + "x" + std::to_string(static_cast<int>(h)));
    std::set<std::string> labels;
    for (const figure::Prim* p : texts(f, "label")) labels.insert(p->text);
    for (int k = 0; k < 12; ++k) {
      EXPECT_TRUE(labels.count("H" + std::to_string(k)) || labels.count(std::to_string(k))) << "column " << k;
      EXPECT_TRUE(labels.count("L" + std::to_string(k))) << "row " << k;
    }
    const auto scores = texts(f, "score");
    ASSERT_EQ(scores.size(), 144u);
    for (const figure::Prim* p : scores) EXPECT_EQ(p->size, o.type.small) << p->text;
    int top = 0, selected = 0;
    for (const figure::Prim& p : f.prims) top += p.cls == "top", selected += p.cls == "selected";
    EXPECT_EQ(selected, 1);
    EXPECT_GE(top, 4);  // the top five, one of them perhaps the selected head
    for (int l = 0; l < 12; ++l)
      for (int hd = 0; hd < 12; ++hd)
        EXPECT_NE(f.hit("thumb_" + std::to_string(l) + "_" + std::to_string(hd)), nullptr);
    const figure::Hit* big = f.hit("model_big");
    ASSERT_NE(big, nullptr);
    EXPECT_GT(big->x0, f.hit("thumb_0_11")->x1);  // beside the grid
    EXPECT_LE(f.width, static_cast<int>(w));
    EXPECT_LE(f.height, static_cast<int>(h));
  }
}

// Whatever the model, selection and detector, the figure stays within the app's canvases
// (24 layers with a detector's score lines need 720 pixels of height, 26 a few more: below,
// the last rows are beyond the canvas).
TEST(ModelFigure, StaysWithinItsCanvas) {
  // The last three as Qwen3-0.6B (16 query heads sharing 8 K/V heads) and Gemma 3 1B (4
  // sharing 1, a window on five of six layers) draw them: groups and sliding labels.
  for (const auto& [L, H, T, G, W] : {std::tuple{3, 4, 14, 0, 0},
                                      {12, 12, 44, 0, 0},
                                      {12, 12, 300, 0, 0},
                                      {2, 4, 6, 0, 0},
                                      {24, 16, 64, 0, 0},
                                      {24, 16, 64, 8, 0},
                                      {26, 4, 64, 1, 512}})
    for (const bool scored : {false, true}) {
      SyntheticView v(L, H, T, scored);
      v.mv.kv_heads = G;
      if (W > 0)
        for (int l = 0; l < L; ++l) v.mv.windows.push_back(l % 6 == 5 ? 0 : W);
      for (const bool selected : {false, true}) {
        v.mv.selected_layer = selected ? L - 1 : -1, v.mv.selected_head = selected ? H - 1 : -1;
        for (const auto& [w, h] :
             {std::pair{1475.0f, 870.0f}, {835.0f, 590.0f}, {1280.0f, 720.0f}, {1860.0f, 930.0f}}) {
          if (L > 12 && scored && h < (L > 24 ? 800.0f : 720.0f)) continue;
          const figure::Figure f = figure::build_model_figure(v.mv, screen(w, h));
          EXPECT_LE(f.width, static_cast<int>(w)) << L << "x" << H << " T " << T << " at " << w << "x" << h;
          EXPECT_LE(f.height, static_cast<int>(h)) << L << "x" << H << " T " << T << " at " << w << "x" << h;
        }
      }
    }
}

// The large head's title line ("Head 1.2  rows: queries, columns: keys") never runs into the
// colour bar's title, also where the head is short of height and narrower than its title
// (a wide, low canvas): the bar moves right of it, or the line is cut where there is no room.
TEST(ModelFigure, TheLargeHeadsTitleKeepsClearOfTheColourBar) {
  for (const auto& [L, H, T] : {std::tuple{3, 4, 15}, {12, 12, 44}, {2, 4, 6}}) {
    SyntheticView v(L, H, T, true);
    v.mv.selected_layer = 1, v.mv.selected_head = 2;
    for (const auto& [w, h] : {std::pair{1400.0f, 300.0f},
                               {1400.0f, 380.0f},
                               {900.0f, 260.0f},
                               {835.0f, 590.0f},
                               {1475.0f, 870.0f},
                               {600.0f, 400.0f}}) {
      const figure::Options o = screen(w, h);
      const figure::Figure f = figure::build_model_figure(v.mv, o);
      SCOPED_TRACE(std::to_string(L) + "x" + std::to_string(H) + " T " + std::to_string(T) + " at " +
                   std::to_string(static_cast<int>(w)) + "x" + std::to_string(static_cast<int>(h)));
      const figure::Prim* head = nullptr;
      const figure::Prim* bar = nullptr;
      for (const figure::Prim* p : texts(f, "subtitle"))
        if (p->text.rfind("rows", 0) == 0) head = p;
      for (const figure::Prim* p : texts(f, "colorbar-title")) bar = p;
      ASSERT_NE(head, nullptr);
      ASSERT_NE(bar, nullptr);
      const float head_right = head->x0 + figure::text_width(head->text, head->size);
      const bool same_band = std::fabs(head->y0 - bar->y0) < head->size + bar->size;
      EXPECT_TRUE(!same_band || head_right + 4.0f <= bar->x0)
          << "'" << head->text << "' ends at " << head_right << ", the bar's title begins at " << bar->x0;
      EXPECT_LE(f.width, static_cast<int>(w));
    }
  }
}

// Without a head selected the grid fills the canvas (its larger side within a few per cent).
TEST(ModelFigure, TheGridFillsItsCanvas) {
  SyntheticView v(3, 4, 14, false);
  const figure::Options o = screen(1475.0f, 870.0f);
  const figure::Figure f = figure::build_model_figure(v.mv, o);
  EXPECT_TRUE(f.width >= 0.9f * o.canvas.width || f.height >= 0.9f * o.canvas.height) << f.width << "x" << f.height;
  EXPECT_LE(f.width, 1475);
  EXPECT_LE(f.height, 870);
  EXPECT_EQ(f.heatmaps.size(), 12u);
  EXPECT_EQ(f.hit("model_big"), nullptr);
}

// The large head is the trace's (T, T) weights of that head, masked cells hidden, its token
// labels, numbers in its cells when they fit; on the thumbnails' colour scale.
TEST(ModelFigure, TheLargeHeadIsItsOwnWeights) {
  SyntheticView v(3, 4, 6, false);
  v.mv.selected_layer = 2, v.mv.selected_head = 3;
  const figure::Figure f = figure::build_model_figure(v.mv, screen(1475.0f, 870.0f));
  ASSERT_EQ(f.heatmaps.size(), 13u);
  const figure::HeatmapInfo& h = f.heatmaps.back();
  ASSERT_EQ(h.rows, 6);
  const std::vector<float>& w = v.w[2 * 4 + 3];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      const std::size_t k = static_cast<std::size_t>(i * 6 + j);
      if (j > i)
        EXPECT_TRUE(h.hidden(k));
      else
        EXPECT_EQ(h.values[k], w[k]);
    }
  EXPECT_EQ(h.row_names, v.mv.token_names);
  EXPECT_EQ(h.scale.vmax, f.heatmaps.front().scale.vmax);  // the thumbnails' colour scale
  EXPECT_EQ(h.scale.vmin, f.heatmaps.front().scale.vmin);
  EXPECT_EQ(texts(f, "value").size(), 21u);  // the 21 visible cells of 6 tokens, numbered
}

// A Qwen/Gemma-shaped view: query heads drawn in groups under "K/V g" brackets, a wider gap
// between groups than within; sliding layers labelled on a band, the keys outside their
// window hatched as the window's (thumbnails and the large head), the legend saying so; the
// subtitle naming the architecture.
// The model view's text stays readable on the canvases of a 1024 × 768 window up to a
// projector's: GPT-2 small's 12 × 12, Qwen3-0.6B's 28 × 16 grouped in 8, a Gemma-3-like model
// with sliding layers; with and without a head shown large and detector scores.
TEST(ModelFigure, TextNeitherOverlapsNorLeavesTheCanvas) {
  struct Shape {
    const char* name;
    int layers, heads, kv_heads;
    std::vector<int> windows;
  };
  for (const Shape& sh : {Shape{"gpt2", 12, 12, 12, {}}, Shape{"qwen3", 28, 16, 8, {}},
                          Shape{"gemma3", 6, 4, 1, {512, 512, 512, 512, 512, 0}}}) {
    SyntheticView v(sh.layers, sh.heads, 12, true);
    v.mv.kv_heads = sh.kv_heads;
    v.mv.windows = sh.windows;
    v.mv.model_parts = {
        sh.name, std::to_string(sh.layers) + " layers",
        std::to_string(sh.heads) + " query heads sharing " + std::to_string(sh.kv_heads) + " K/V heads"};
    for (const int selected : {-1, 1})
      for (const figure::Canvas& c : {figure::Canvas{595, 560}, figure::Canvas{835, 590}, figure::Canvas{1475, 870}}) {
        v.mv.selected_layer = selected, v.mv.selected_head = selected;
        figure_checks::expect_text_clear(
            figure::build_model_figure(v.mv, screen(c.width, c.height)), c.width,
            std::string(sh.name) + (selected >= 0 ? ", head 1.1 large" : "") + " on " + std::to_string(c.width));
      }
  }
}

// A 1024 × 768 window's canvas (595 × 560) and many heads: the large head's cells keep a quarter
// of the width or more (28 × 16 scored heads left them a sliver: the scores' columns go, its
// title gives its own score), and without a head large 28 rows close up so thumbnails get 8 pixels or more
// (8-pixel gaps between 28 rows left them 4), labels on every other row.
TEST(ModelFigure, ManyHeadsOnASmallCanvasLeaveTheLargeHeadRoom) {
  const float w = 595.0f, h = 560.0f;
  for (const auto& [L, H, kv, scored] :
       {std::tuple{28, 16, 8, true}, {28, 16, 8, false}, {12, 12, 12, true}, {12, 12, 12, false}}) {
    SyntheticView v(L, H, 36, scored);
    v.mv.kv_heads = kv;
    SCOPED_TRACE(std::to_string(L) + "x" + std::to_string(H) + (scored ? " scored" : ""));
    v.mv.selected_layer = 5, v.mv.selected_head = 3;
    const figure::Figure f = figure::build_model_figure(v.mv, screen(w, h));
    const figure::Hit& big = *f.hit("model_big");
    EXPECT_GE(big.x1 - big.x0, 0.25f * w);
    EXPECT_LE(f.hit("thumb_0_" + std::to_string(H - 1))->x1, big.x0);  // beside it, not under
    bool scores_shown = false;
    for (const figure::Prim& p : f.prims) scores_shown = scores_shown || p.cls == "score";
    const auto title = texts(f, "head-title");
    ASSERT_EQ(title.size(), 1u);
    EXPECT_EQ(title[0]->text.find("score") != std::string::npos, scored && !scores_shown) << title[0]->text;
    v.mv.selected_layer = v.mv.selected_head = -1;
    const figure::Figure all = figure::build_model_figure(v.mv, screen(w, h));
    const figure::Hit& t0 = *all.hit("thumb_0_0");
    if (!scored) {
      EXPECT_GE(t0.x1 - t0.x0, 8.0f);
    }
    int row_labels = 0;
    for (const figure::Prim* p : texts(all, "label")) row_labels += p->text[0] == 'L';
    EXPECT_GE(row_labels, L / 2);
  }
}

TEST(ModelFigure, GroupsHeadsByKvHeadAndMarksSlidingLayers) {
  SyntheticView v(3, 4, 10, false);
  v.mv.kv_heads = 2;
  v.mv.windows = {4, 4, 0};
  v.mv.model_parts = {"gemma3_text", "3 layers", "4 query heads sharing 2 K/V heads"};
  v.mv.selected_layer = 1, v.mv.selected_head = 2;
  const figure::Figure f = figure::build_model_figure(v.mv, screen(1475.0f, 870.0f));
  std::vector<std::string> kv;
  for (const figure::Prim* p : texts(f, "kv-label")) kv.push_back(p->text);
  EXPECT_EQ(kv, (std::vector<std::string>{"K/V 0", "K/V 1"}));
  const auto sliding = texts(f, "sliding");
  ASSERT_EQ(sliding.size(), 2u);
  EXPECT_EQ(sliding[0]->text, "sliding W = 4");
  EXPECT_LT(sliding[0]->y0, f.hit("thumb_1_0")->y0);  // on layer 0's row, then layer 1's
  EXPECT_GT(sliding[1]->y0, f.hit("thumb_1_0")->y0);
  int bands = 0;
  for (const figure::Prim& p : f.prims) bands += p.cls == "sliding-band";
  EXPECT_EQ(bands, 2);
  const float within = f.hit("thumb_0_1")->x0 - f.hit("thumb_0_0")->x1;
  const float between = f.hit("thumb_0_2")->x0 - f.hit("thumb_0_1")->x1;
  EXPECT_GT(between, within + 10.0f);
  // Query 9 of layer 0 sees keys 6..9: keys 0..5 are the window's, 6..9 visible.
  ASSERT_EQ(f.heatmaps.size(), 13u);
  const figure::HeatmapInfo& t0 = f.heatmaps[0];
  ASSERT_EQ(t0.rows, 10);
  EXPECT_TRUE(t0.windowed(9 * 10 + 5));
  EXPECT_FALSE(t0.hidden(9 * 10 + 6));
  EXPECT_FALSE(t0.windowed(2 * 10 + 5));  // above the diagonal: the causal mask's
  EXPECT_TRUE(t0.hidden(2 * 10 + 5));
  for (std::size_t k = 0; k < 100; ++k) EXPECT_FALSE(f.heatmaps[8].windowed(k)) << k;  // layer 2: full
  const figure::HeatmapInfo& big = f.heatmaps.back();
  EXPECT_TRUE(big.windowed(9 * 10 + 5));
  EXPECT_FALSE(big.hidden(9 * 10 + 6));
  bool legend = false, subtitle = false;
  for (const figure::Prim& p : f.prims) {
    legend = legend || p.text.find("outside the sliding window") != std::string::npos;
    subtitle =
        subtitle || (p.cls == "subtitle" && p.text.find("4 query heads sharing 2 K/V heads") != std::string::npos);
  }
  EXPECT_TRUE(legend);
  EXPECT_TRUE(subtitle);
  // Without groups or windows none of it is drawn (GPT-2's view is unchanged).
  SyntheticView g(3, 4, 10, false);
  const figure::Figure plain = figure::build_model_figure(g.mv, screen(1475.0f, 870.0f));
  EXPECT_TRUE(texts(plain, "kv-label").empty());
  EXPECT_TRUE(texts(plain, "sliding").empty());
  EXPECT_THROW(
      {
        g.mv.kv_heads = 3;
        (void)figure::build_model_figure(g.mv, screen(800.0f, 600.0f));
      },
      std::invalid_argument);
}

// Thumbnails pooled beforehand (the app pools off its drawing thread) give the very figure
// the builder pools itself (render's path), for the pooling the canvas calls for.
TEST(ModelFigure, PooledBeforehandIsTheSameFigure) {
  SyntheticView v(12, 12, 300, true);
  v.mv.selected_layer = 0, v.mv.selected_head = 0;
  figure::Options o = screen(835.0f, 590.0f);
  o.log_scale = true;
  const int f = figure::model_pool_factor(v.mv, o);
  EXPECT_GT(f, 1);
  const figure::ModelThumbnails t = figure::model_thumbnails(v.mv, f, o.colormap, o.log_scale);
  figure::ModelView pooled = v.mv;
  pooled.thumbs = &t;
  const figure::Figure a = figure::build_model_figure(v.mv, o), b = figure::build_model_figure(pooled, o);
  EXPECT_EQ(a.heatmaps.front().rows, (300 + f - 1) / f);
  EXPECT_EQ(figure::prims_json(a, true), figure::prims_json(b, true));
}

// [SECTION] The view derived from a forward
struct Forward {
  std::shared_ptr<const GptWorker::Result> r;
  explicit Forward(const std::string& text) {
    auto res = std::make_shared<GptWorker::Result>();
    auto tok = std::make_shared<Tokenizer>(tiny());
    GptConfig c;
    c.n_layer = 2, c.n_head = 3, c.n_embd = 24, c.n_ctx = 32, c.vocab_size = tok->vocab_size();
    auto m = std::make_shared<GptModel>(test::random_gpt(c, true, 5));
    prepare_gpt_forward(*m);
    res->trace = std::make_shared<GptTrace>(gpt_forward(*m, tok->encode(text)));
    res->loaded = {m, nullptr, tok, "tiny-model", model_facts(*m)};
    res->generation = 1;
    r = res;
  }
};

TEST(ModelViewDerive, TheScreenFigureIsTheCapturesAndRendersFigure) {
  const Forward fw("ab a ba ab");
  ModelViewKey key;
  key.generation = 1;
  key.pattern = 0;  // previous-token
  key.layer = 1, key.head = 2;
  key.fig = screen(1000.0f, 700.0f);
  const auto d = derive_model_view(fw.r, key, nullptr);
  const GptTrace& tr = *fw.r->trace;
  EXPECT_EQ(d->tokens, tr.tokens());
  ASSERT_NE(d->figure.hit("model_big"), nullptr);
  EXPECT_EQ(d->top.size(), 5u);
  // render --view model 1.2 --detector previous-token: the same figure from the same forward.
  figure::ModelView mv =
      figure::gpt_model_view(*fw.r->loaded.model, tr, *fw.r->loaded.tokenizer, "tiny-model", kHeadPatterns[0]);
  mv.selected_layer = 1, mv.selected_head = 2;
  EXPECT_EQ(figure::prims_json(d->figure, true), figure::prims_json(figure::build_model_figure(mv, key.fig), true));
  // A capture: the screen's figure in the light theme with a caption.
  figure::Options cap = key.fig;
  cap.dark = false, cap.caption = true;
  EXPECT_EQ(figure::prims_json(model_figure_for(*d, cap), true),
            figure::prims_json(figure::build_model_figure(mv, cap), true));
  // Next tokens: log-probabilities and the percentages printed.
  ASSERT_EQ(d->next.size(), 5u);
  for (const NextRow& n : d->next) EXPECT_DOUBLE_EQ(n.logp, std::log(static_cast<double>(n.p)));
  EXPECT_EQ(d->next_shown.size(), 5u);
}

// A new selection on the same forward reuses the scores and thumbnails already computed.
TEST(ModelViewDerive, ANewSelectionReusesTheScoresAndThumbnails) {
  const Forward fw("ab a ba ab");
  ModelViewKey key;
  key.generation = 1;
  key.pattern = 0;
  key.fig = screen(1400.0f, 900.0f);
  const auto a = derive_model_view(fw.r, key, nullptr);
  EXPECT_EQ(a->figure.hit("model_big"), nullptr);
  key.layer = 0, key.head = 1;
  const auto b = derive_model_view(fw.r, key, a);
  ASSERT_NE(b->figure.hit("model_big"), nullptr);
  EXPECT_EQ(b->view.scores, a->view.scores);
  EXPECT_EQ(b->thumbs.pooled, a->thumbs.pooled);
  EXPECT_EQ(b->next_shown, a->next_shown);
}

// Heads ablated with a modifier-click: the view is the ablated run's (what gpt_forward_intervened
// gives), each ablated thumbnail crossed out on screen and in a capture alike, the next tokens
// with their clean probabilities beside, the loss of both runs; the same run is reused when
// only the selection changes.
TEST(ModelViewDerive, AnAblatedRunIsShownWithTheCleanRunsNumbersBeside) {
  const Forward fw("ab a ba ab");
  const GptModel& m = *fw.r->loaded.model;
  ModelViewKey key;
  key.generation = 1;
  key.fig = screen(1000.0f, 700.0f);
  const auto clean = derive_model_view(fw.r, key, nullptr);
  EXPECT_TRUE(std::isnan(clean->loss));
  key.ablate = {{0, 1}, {0, 2}};
  key.ablation_mode = AblationMode::Mean;
  const auto d = derive_model_view(fw.r, key, clean);
  ASSERT_NE(d->ablated, nullptr);
  Intervention iv;
  iv.ablate = key.ablate;
  iv.mode = AblationMode::Mean;
  const GptTrace want = gpt_forward_intervened(m, *fw.r->trace, iv);
  const std::size_t TT = static_cast<std::size_t>(d->tokens) * static_cast<std::size_t>(d->tokens);
  const float* l1h0 = d->view.weights[3];  // layer 1, head 0: changed by the ablation below it
  EXPECT_TRUE(std::equal(l1h0, l1h0 + TT, want.layers[1].weights.data.begin()));
  EXPECT_FALSE(std::equal(l1h0, l1h0 + TT, fw.r->trace->layers[1].weights.data.begin()));
  const NextToken nt = next_token(m, want, d->tokens - 1, 5), base = next_token(m, *fw.r->trace, d->tokens - 1, 0);
  ASSERT_EQ(d->next.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(d->next[i].id, nt.top[i].id);
    EXPECT_EQ(d->next[i].p, nt.top[i].p);
    EXPECT_EQ(d->next[i].clean_p, base.probs[static_cast<std::size_t>(nt.top[i].id)]);
  }
  EXPECT_DOUBLE_EQ(d->loss, text_loss(m, want));
  EXPECT_DOUBLE_EQ(d->clean_loss, text_loss(m, *fw.r->trace));
  EXPECT_NE(d->loss, d->clean_loss);
  int crosses = 0;
  for (const figure::Prim& p : d->figure.prims) crosses += p.cls == "ablated";
  EXPECT_EQ(crosses, 4);  // two lines over each of the two heads
  figure::Options cap = key.fig;
  cap.dark = false, cap.caption = true;
  figure::ModelView mv = figure::gpt_model_view(m, want, *fw.r->loaded.tokenizer, "tiny-model", std::nullopt);
  mv.ablated = {1, 2};
  EXPECT_EQ(figure::prims_json(model_figure_for(*d, cap), true),
            figure::prims_json(figure::build_model_figure(mv, cap), true));
  key.layer = 1, key.head = 0;
  const auto e = derive_model_view(fw.r, key, d);
  EXPECT_EQ(e->ablated, d->ablated);  // a new selection: the same ablated run
}

// The loss on the text: mean −log p of each next token, from the model's own logits.
TEST(ModelViewDerive, TheTextLossIsTheMeanNegativeLogProbabilityOfEachNextToken) {
  const Forward fw("ab a ba ab");
  const GptModel& m = *fw.r->loaded.model;
  const GptTrace& tr = *fw.r->trace;
  double sum = 0;
  for (int i = 0; i + 1 < tr.tokens(); ++i)
    sum -= std::log(static_cast<double>(next_token(m, tr, i, 0).probs[static_cast<std::size_t>(tr.ids[i + 1])]));
  EXPECT_NEAR(text_loss(m, tr), sum / (tr.tokens() - 1), 1e-6);
}

// Norm-weighted: the thumbnails and the large head are α·‖f(x)‖, the detector still scores α.
TEST(ModelViewDerive, NormWeightedShowsTheWeightTimesTheValueNorm) {
  const Forward fw("ab a ba ab");
  const GptModel& m = *fw.r->loaded.model;
  ModelViewKey key;
  key.generation = 1;
  key.pattern = 0;
  key.norm_weighted = true;
  key.fig = screen(1000.0f, 700.0f);
  const auto d = derive_model_view(fw.r, key, nullptr);
  const std::size_t TT = static_cast<std::size_t>(d->tokens) * static_cast<std::size_t>(d->tokens);
  for (int l = 0; l < d->n_layer; ++l) {
    const Tensor nw = norm_weighted_attention(m, *fw.r->trace, l);
    for (int h = 0; h < d->n_head; ++h) {
      const float* w = d->view.weights[static_cast<std::size_t>(l * d->n_head + h)];
      EXPECT_TRUE(std::equal(w, w + TT, nw.data.begin() + static_cast<std::ptrdiff_t>(h * TT)));
    }
  }
  EXPECT_NE(d->view.title.find("Norm-weighted"), std::string::npos);
  // The colour bar names what it measures: α·‖f(x)‖, not a weight.
  const auto bar_title = [](const figure::Figure& f) {
    for (const figure::Prim& p : f.prims)
      if (p.cls == "colorbar-title") return p.text;
    return std::string("(no colour bar title)");
  };
  EXPECT_EQ(bar_title(d->figure).rfind("\xCE\xB1\xC2\xB7\xE2\x80\x96"
                                       "f(x)\xE2\x80\x96",
                                       0),
            0u)
      << bar_title(d->figure);
  key.norm_weighted = false;
  const auto plain = derive_model_view(fw.r, key, d);
  EXPECT_EQ(plain->view.scores, d->view.scores);
  EXPECT_EQ(plain->view.weights[0], fw.r->trace->layers[0].weights.data.data());
  EXPECT_EQ(bar_title(plain->figure).rfind("weight", 0), 0u) << bar_title(plain->figure);
}

}  // namespace
}  // namespace mhaviz::gui

// [SECTION] The ablation sweep, off the drawing thread
namespace mhaviz::gui {
namespace {

TEST(ModelSweep, TheTargetIsTheTextsLastTokenOrOneTyped) {
  const Tokenizer tok = tiny();
  const std::vector<int> ids = tok.encode("ab a ba ab");
  // None typed: the last token, judged from the position before it.
  SweepTarget t = sweep_target(tok, ids, "", "");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.ids, std::vector<int>(ids.begin(), ids.end() - 1));
  EXPECT_EQ(t.metric.target, ids.back());
  EXPECT_EQ(t.metric.vs, -1);
  // Typed: at the whole text's last position, with vs a logit difference.
  t = sweep_target(tok, ids, " a", "b");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.ids, ids);
  EXPECT_EQ(t.metric.target, tok.encode(" a", false).front());
  EXPECT_EQ(t.metric.vs, tok.encode("b", false).front());
  EXPECT_EQ(sweep_target(tok, ids, "ab", "").error, "target: 'ab' is 2 tokens, not one token of the vocabulary");
  EXPECT_EQ(sweep_target(tok, ids, "a", "").error, "");
  EXPECT_EQ(sweep_target(tok, ids, "", "ba").error, "vs: 'ba' is 2 tokens, not one token of the vocabulary");
  EXPECT_NE(sweep_target(tok, tok.encode("a"), "", "").error.find("target: the text is one token"), std::string::npos);
}

TEST(ModelSweep, TheJobsGridIsTheCoresSweepAndRendersFigure) {
  const Forward fw("ab a ba ab");
  const GptModel& m = *fw.r->loaded.model;
  const Tokenizer& tok = *fw.r->loaded.tokenizer;
  for (const bool typed : {false, true}) {
    SweepTarget t = sweep_target(tok, fw.r->trace->ids, typed ? " a" : "", typed ? "b" : "");
    ASSERT_EQ(t.error, "");
    SweepJob job(fw.r, t, AblationMode::Mean);
    EXPECT_EQ(job.total(), 6);
    const auto d = job.take();
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(job.done(), 6);
    const GptTrace clean = gpt_forward(m, t.ids);
    const auto want = ablation_sweep(m, clean, t.metric, AblationMode::Mean);
    ASSERT_TRUE(want.has_value());
    EXPECT_EQ((d->grid.rows), 2);
    EXPECT_EQ(d->grid.values, want->values) << "typed " << typed;
    EXPECT_EQ(d->grid.clean, want->clean);
    // render --view sweep's figure of the same tokens and target.
    const figure::Options o = screen(900.0f, 600.0f);
    const figure::GridView v = figure::sweep_view(m, *want, tok, t.metric, AblationMode::Mean,
                                                  figure::display_tokens(tok, t.ids), "tiny-model");
    EXPECT_EQ(figure::prims_json(figure::build_grid_figure(d->view, o), true),
              figure::prims_json(figure::build_grid_figure(v, o), true));
  }
}

TEST(ModelSweep, CancelStopsTheSweepAndGivesNoGrid) {
  const Forward fw("ab a ba ab");
  const SweepTarget t = sweep_target(*fw.r->loaded.tokenizer, fw.r->trace->ids, "", "");
  std::atomic<SweepJob*> self{nullptr};
  std::atomic<int> runs{0};
  // Cancel as a click would, after the second head's run.
  SweepJob job(fw.r, t, AblationMode::Zero, [&](int done) {
    runs = done;
    while (self.load() == nullptr) {
    }
    if (done == 2) self.load()->cancel();
  });
  self = &job;
  EXPECT_EQ(job.take(), nullptr);
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(job.done(), 2);
  EXPECT_TRUE(job.cancelling());
}

}  // namespace
}  // namespace mhaviz::gui

// [SECTION] The logit lens, derived with the view
namespace mhaviz::gui {
namespace {

TEST(ModelViewDerive, TheLensIsRendersTableOfTheRunShown) {
  const Forward fw("ab a ba ab");
  const GptModel& m = *fw.r->loaded.model;
  const Tokenizer& tok = *fw.r->loaded.tokenizer;
  ModelViewKey key;
  key.generation = 1;
  key.fig = screen(1000.0f, 700.0f);
  const auto plain = derive_model_view(fw.r, key, nullptr);
  EXPECT_EQ(plain->lens, nullptr);
  key.lens = true;
  const auto d = derive_model_view(fw.r, key, plain);
  ASSERT_NE(d->lens, nullptr);
  const std::vector<std::string> tokens = figure::display_tokens(tok, fw.r->trace->ids);
  const figure::GridView want = figure::lens_view(m, logit_lens(m, *fw.r->trace, 1), tok, tokens, "tiny-model");
  EXPECT_EQ(figure::prims_json(figure::build_grid_figure(*d->lens, key.fig), true),
            figure::prims_json(figure::build_grid_figure(want, key.fig), true));
  EXPECT_EQ(d->lens->values, want.values);
  // A new selection keeps it; heads ablated give the ablated run's lens.
  key.layer = 0, key.head = 1;
  EXPECT_EQ(derive_model_view(fw.r, key, d)->lens, d->lens);
  key.ablate = {{0, 0}};
  const auto a = derive_model_view(fw.r, key, d);
  ASSERT_NE(a->lens, nullptr);
  Intervention iv;
  iv.ablate = key.ablate;
  const GptTrace ablated = gpt_forward_intervened(m, *fw.r->trace, iv);
  EXPECT_EQ(a->lens->values, figure::lens_view(m, logit_lens(m, ablated, 1), tok, tokens, "tiny-model").values);
  EXPECT_NE(a->lens->values, want.values);
}

}  // namespace
}  // namespace mhaviz::gui

// [SECTION] Activation patching, the same job
namespace mhaviz::gui {
namespace {

TEST(ModelSweep, PatchingNeedsEquallyManyTokensAndGivesTheCoresGrid) {
  const Forward fw("ab a ba ab");
  const GptModel& m = *fw.r->loaded.model;
  const Tokenizer& tok = *fw.r->loaded.tokenizer;
  const std::vector<int>& ids = fw.r->trace->ids;
  EXPECT_EQ(patch_target(tok, ids, tok.encode("ab a ba"), "", "").error,
            "corrupted text: " + std::to_string(tok.encode("ab a ba").size()) + " tokens, the text has " +
                std::to_string(ids.size()) + " (patching needs equally many)");
  const std::vector<int> corrupt = tok.encode("ab a bb ab");
  ASSERT_EQ(corrupt.size(), ids.size());
  for (const bool typed : {false, true}) {
    const SweepTarget t = patch_target(tok, ids, corrupt, typed ? " a" : "", typed ? "b" : "");
    ASSERT_EQ(t.error, "");
    EXPECT_EQ(t.corrupt.size(), t.ids.size());
    SweepJob job(fw.r, t, AblationMode::Zero);
    const auto d = job.take();
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(d->patching());
    const auto want = patch_sweep(m, gpt_forward(m, t.ids), gpt_forward(m, t.corrupt), t.metric, PatchPer::Head);
    ASSERT_TRUE(want.has_value());
    EXPECT_EQ(d->grid.values, want->values) << "typed " << typed;
    const figure::Options o = screen(900.0f, 600.0f);
    const figure::GridView v =
        figure::patch_view(m, *want, tok, t.metric, PatchPer::Head, figure::display_tokens(tok, t.ids),
                           figure::display_tokens(tok, t.corrupt), "tiny-model");
    EXPECT_EQ(figure::prims_json(figure::build_grid_figure(d->view, o), true),
              figure::prims_json(figure::build_grid_figure(v, o), true));
  }
}

// Per layer × position: one run per layer and position (the progress counts them), the core's
// (L, T) grid, the figure `render --view patch --per layer-position` draws.
// The job and its grid keep the text they were run on (a grid of another text is dropped).
TEST(ModelSweep, PatchingPerLayerAndPositionGivesTheCoresGrid) {
  const Forward fw("ab a ba ab");
  const GptModel& m = *fw.r->loaded.model;
  const Tokenizer& tok = *fw.r->loaded.tokenizer;
  const std::vector<int>& ids = fw.r->trace->ids;
  const SweepTarget t = patch_target(tok, ids, tok.encode("ab a bb ab"), " a", "b", PatchPer::LayerPosition);
  ASSERT_EQ(t.error, "");
  EXPECT_EQ(t.per, PatchPer::LayerPosition);
  std::atomic<int> runs{0};
  SweepJob job(fw.r, t, AblationMode::Zero, [&](int done) { runs = done; });
  const int T = static_cast<int>(ids.size());
  EXPECT_TRUE(job.per_position());
  EXPECT_EQ(job.total(), 2 * T);
  EXPECT_EQ(job.text_ids(), ids);
  const auto d = job.take();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(runs.load(), 2 * T);
  EXPECT_TRUE(d->per_position());
  EXPECT_EQ(d->text_ids, ids);
  const GptTrace clean = gpt_forward(m, t.ids), corrupt = gpt_forward(m, t.corrupt);
  const auto want = patch_sweep(m, clean, corrupt, t.metric, PatchPer::LayerPosition);
  ASSERT_TRUE(want.has_value());
  EXPECT_EQ((std::pair{d->grid.rows, d->grid.cols}), (std::pair{2, T}));
  EXPECT_EQ(d->grid.values, want->values);
  // The residual after the last layer at the last position is all the head reads: restored.
  EXPECT_EQ(d->grid.at(1, T - 1), 1.0f);
  const figure::Options o = screen(900.0f, 600.0f);
  const figure::GridView v =
      figure::patch_view(m, *want, tok, t.metric, PatchPer::LayerPosition, figure::display_tokens(tok, t.ids),
                         figure::display_tokens(tok, t.corrupt), "tiny-model");
  EXPECT_EQ(figure::prims_json(figure::build_grid_figure(d->view, o), true),
            figure::prims_json(figure::build_grid_figure(v, o), true));
}

// The lens's rank of a typed token at a clicked position: the core's rank and probability
// after each layer, printed beside the table (render --view lens --target --position's figure).
TEST(ModelViewDerive, TheLensRanksAChosenTokenAfterEachLayer) {
  const Forward fw("ab a ba ab");
  const GptModel& m = *fw.r->loaded.model;
  const Tokenizer& tok = *fw.r->loaded.tokenizer;
  const GptTrace& tr = *fw.r->trace;
  ModelViewKey key;
  key.generation = 1;
  key.fig = screen(1000.0f, 700.0f);
  key.lens = true;
  key.lens_target = tok.encode(" a", false).front();
  key.lens_position = 2;
  const auto d = derive_model_view(fw.r, key, nullptr);
  ASSERT_NE(d->lens, nullptr);
  const LogitLens lens = logit_lens(m, tr, 1, key.lens_target);
  EXPECT_EQ(d->lens_position, 2);
  ASSERT_EQ(d->lens_rank.size(), 2u);
  for (int l = 0; l < 2; ++l) {
    const std::size_t at = static_cast<std::size_t>(l * tr.tokens() + 2);
    EXPECT_EQ(d->lens_rank[static_cast<std::size_t>(l)], lens.rank[at]);
    EXPECT_EQ(d->lens_p[static_cast<std::size_t>(l)], lens.target_p[at]);
    EXPECT_EQ(d->lens->side_text[static_cast<std::size_t>(l)], figure::rank_text(lens.rank[at], lens.target_p[at]));
  }
  EXPECT_EQ(d->lens->marked_col, 2);
  const figure::GridView want = figure::lens_view(m, lens, tok, figure::display_tokens(tok, tr.ids), "tiny-model", 2);
  const figure::Figure f = figure::build_grid_figure(*d->lens, key.fig);
  EXPECT_EQ(figure::prims_json(f, true), figure::prims_json(figure::build_grid_figure(want, key.fig), true));
  // The side column lies right of the table and left of the colour bar, inside the canvas.
  float grid_right = 0, side_left = 1e9f, bar_left = 1e9f;
  for (const figure::Prim& p : f.prims) {
    if (p.cls == "side-text") side_left = std::min(side_left, p.x0);
    if (p.cls == "colorbar-title") bar_left = std::min(bar_left, p.x0);
  }
  grid_right = f.heatmaps[0].x0 + f.heatmaps[0].cell * static_cast<float>(f.heatmaps[0].cols);
  EXPECT_LT(grid_right, side_left);
  EXPECT_LT(side_left, bar_left);
  EXPECT_LE(f.width, static_cast<int>(key.fig.canvas.width));
  // No position given: the last; a position past the text: clamped to the last.
  key.lens_position = -1;
  EXPECT_EQ(derive_model_view(fw.r, key, d)->lens_position, tr.tokens() - 1);
  key.lens_position = 99;
  EXPECT_EQ(derive_model_view(fw.r, key, d)->lens_position, tr.tokens() - 1);
  // No token: no side column.
  key.lens_target = -1;
  const auto plain = derive_model_view(fw.r, key, d);
  EXPECT_TRUE(plain->lens->side_text.empty());
  EXPECT_TRUE(plain->lens_rank.empty());
}

}  // namespace
}  // namespace mhaviz::gui

// [SECTION] A Qwen3-shaped model in the view: its interventions as the core computes them
namespace mhaviz::gui {
namespace {

// A tied Qwen3 of 2 layers, 4 query heads sharing 2 K/V heads of 8, random weights, written
// as a Hugging Face folder (config.json, model.safetensors) and loaded as the app loads it.
struct HfForward {
  std::shared_ptr<const GptWorker::Result> r;
  explicit HfForward(const std::string& text) {
    auto tok = std::make_shared<Tokenizer>(tiny());
    const int C = 32, H = 4, G = 2, hd = 8, I = 48, L = 2, V = tok->vocab_size();
    const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "mhaviz-view-qwen3";
    std::filesystem::create_directories(dir);
    {
      std::ofstream cfg(dir / "config.json");
      cfg << R"({"model_type": "qwen3", "hidden_size": )" << C << R"(, "num_hidden_layers": )" << L
          << R"(, "num_attention_heads": )" << H << R"(, "num_key_value_heads": )" << G << R"(, "head_dim": )" << hd
          << R"(, "intermediate_size": )" << I << R"(, "vocab_size": )" << V
          << R"(, "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
              "tie_word_embeddings": true})";
    }
    std::mt19937 gen(11);
    std::normal_distribution<float> n(0.0f, 0.3f);
    std::vector<std::vector<float>> store;
    std::vector<StWriteTensor> ts;
    auto add = [&](const std::string& name, std::vector<std::int64_t> shape, bool ones) {
      std::int64_t numel = 1;
      for (const std::int64_t d : shape) numel *= d;
      std::vector<float> v(static_cast<std::size_t>(numel));
      for (float& x : v) x = ones ? 1.0f + 0.1f * n(gen) : n(gen);
      store.push_back(std::move(v));
      ts.push_back({name, std::move(shape), nullptr});
    };
    add("model.embed_tokens.weight", {V, C}, false);
    for (int l = 0; l < L; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      add(p + "input_layernorm.weight", {C}, true);
      add(p + "self_attn.q_proj.weight", {H * hd, C}, false);
      add(p + "self_attn.k_proj.weight", {G * hd, C}, false);
      add(p + "self_attn.v_proj.weight", {G * hd, C}, false);
      add(p + "self_attn.o_proj.weight", {C, H * hd}, false);
      add(p + "self_attn.q_norm.weight", {hd}, true);
      add(p + "self_attn.k_norm.weight", {hd}, true);
      add(p + "post_attention_layernorm.weight", {C}, true);
      add(p + "mlp.gate_proj.weight", {I, C}, false);
      add(p + "mlp.up_proj.weight", {I, C}, false);
      add(p + "mlp.down_proj.weight", {C, I}, false);
    }
    add("model.norm.weight", {C}, true);
    for (std::size_t i = 0; i < ts.size(); ++i) ts[i].data = store[i].data();
    write_safetensors_f32(dir / "model.safetensors", ts);
    auto m = std::make_shared<HfModel>(load_hf_model(dir));
    auto res = std::make_shared<GptWorker::Result>();
    res->hf_trace = std::make_shared<HfTrace>(hf_forward(*m, tok->encode(text)));
    res->loaded = {nullptr, m, tok, "tiny-qwen3", model_facts(*m)};
    res->generation = 1;
    r = res;
  }
};

TEST(HfModelView, AnAblatedRunIsTheCoresWithTheCleanRunsNumbersBeside) {
  const HfForward fw("ab a ba ab");
  const HfModel& m = *fw.r->loaded.hf;
  ModelViewKey key;
  key.generation = 1;
  key.fig = screen(1000.0f, 700.0f);
  const auto clean = derive_model_view(fw.r, key, nullptr);
  EXPECT_TRUE(std::isnan(clean->loss));
  key.ablate = {{0, 1}, {0, 2}};
  key.ablation_mode = AblationMode::Mean;
  const auto d = derive_model_view(fw.r, key, clean);
  ASSERT_NE(d->hf_ablated, nullptr);
  EXPECT_TRUE(d->has_ablation());
  HfIntervention iv;
  iv.ablate = key.ablate;
  iv.mode = AblationMode::Mean;
  const HfTrace want = hf_forward_intervened(m, *fw.r->hf_trace, iv);
  const std::size_t TT = static_cast<std::size_t>(d->tokens) * static_cast<std::size_t>(d->tokens);
  const float* l1h0 = d->view.weights[4];  // layer 1, head 0: changed by the ablation below it
  EXPECT_TRUE(std::equal(l1h0, l1h0 + TT, want.layers[1].weights.data.begin()));
  EXPECT_FALSE(std::equal(l1h0, l1h0 + TT, fw.r->hf_trace->layers[1].weights.data.begin()));
  const NextToken nt = next_token_from_logits(want.logits_last.data, 5),
                  base = next_token_from_logits(fw.r->hf_trace->logits_last.data, 0);
  ASSERT_EQ(d->next.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(d->next[i].id, nt.top[i].id);
    EXPECT_EQ(d->next[i].p, nt.top[i].p);
    EXPECT_EQ(d->next[i].clean_p, base.probs[static_cast<std::size_t>(nt.top[i].id)]);
  }
  EXPECT_DOUBLE_EQ(d->loss, text_loss(m, want));
  EXPECT_DOUBLE_EQ(d->clean_loss, text_loss(m, *fw.r->hf_trace));
  EXPECT_NE(d->loss, d->clean_loss);
  int crosses = 0;
  for (const figure::Prim& p : d->figure.prims) crosses += p.cls == "ablated";
  EXPECT_EQ(crosses, 4);  // two lines over each of the two heads
}

TEST(HfModelView, NormWeightedTheLensAndTheSweepAreTheCores) {
  const HfForward fw("ab a ba ab");
  const HfModel& m = *fw.r->loaded.hf;
  const Tokenizer& tok = *fw.r->loaded.tokenizer;
  const HfTrace& tr = *fw.r->hf_trace;
  ModelViewKey key;
  key.generation = 1;
  key.fig = screen(1000.0f, 700.0f);
  key.norm_weighted = true;
  key.lens = true;
  key.lens_target = tok.encode(" a", false).front();
  const auto d = derive_model_view(fw.r, key, nullptr);
  const std::size_t TT = static_cast<std::size_t>(d->tokens) * static_cast<std::size_t>(d->tokens);
  for (int l = 0; l < 2; ++l) {
    const Tensor nw = norm_weighted_attention(m, tr, l);
    for (int h = 0; h < 4; ++h)
      EXPECT_TRUE(std::equal(nw.data.begin() + static_cast<std::ptrdiff_t>(h * TT),
                             nw.data.begin() + static_cast<std::ptrdiff_t>((h + 1) * TT),
                             d->view.weights[static_cast<std::size_t>(l * 4 + h)]))
          << l << "." << h;
  }
  ASSERT_NE(d->lens, nullptr);
  const LogitLens lens = logit_lens(m, tr, 1, key.lens_target);
  EXPECT_EQ(
      d->lens->values,
      figure::lens_view(m, lens, tok, figure::display_tokens(tok, tr.ids), "tiny-qwen3", d->lens_position).values);
  EXPECT_EQ(d->lens_position, tr.tokens() - 1);
  const SweepTarget t = sweep_target(tok, tr.ids, "", "");
  ASSERT_EQ(t.error, "");
  SweepJob job(fw.r, t, AblationMode::Zero);
  EXPECT_EQ(job.total(), 8);
  const auto s = job.take();
  ASSERT_NE(s, nullptr);
  const auto want = ablation_sweep(m, hf_forward(m, t.ids), t.metric, AblationMode::Zero);
  ASSERT_TRUE(want.has_value());
  EXPECT_EQ(s->grid.values, want->values);
}

}  // namespace
}  // namespace mhaviz::gui
