// The window's fonts and style: the font atlas (DejaVu, the installed fonts merged for the
// characters it lacks, the aliases of characters beyond U+FFFF) built again when a frame is
// about to draw a character it lacks or the settings change its size; the ImGui style.
#include <imgui.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "embedded.hpp"
#include "figure/text.hpp"

namespace mhaviz::gui {
namespace {

// Each alias of a character beyond U+FFFF (wide_chars.hpp) as that character: a rectangle of
// the atlas for each face, drawn by the figures' text rasteriser once the atlas is built.
struct AliasGlyph {
  int rect;
  std::string text;
  bool mono;
};

std::vector<AliasGlyph> add_alias_glyphs(AppState& s, float px) {
  WindowUi& w = s.ui.window;
  std::vector<AliasGlyph> aliases;
  const int line = static_cast<int>(std::ceil(px * 1.3f));  // the descent below a line of px
  for (std::size_t i = 0; i < w.wide.chars().size(); ++i) {
    std::string text;
    append_utf8(text, w.wide.chars()[i]);
    for (const bool mono : {false, true}) {
      const float advance = figure::text_width(text, px, mono);
      const int width = std::max(1, static_cast<int>(std::ceil(advance)) + 1);
      const auto id = static_cast<ImWchar>(0xFDD0 + i);
      aliases.push_back(
          {ImGui::GetIO().Fonts->AddCustomRectFontGlyph(mono ? w.font_mono : w.font_ui, id, width, line, advance), text,
           mono});
    }
  }
  w.aliases_built = w.wide.chars().size();
  return aliases;
}

// White with the glyph's coverage as alpha, as the atlas's own glyphs are (the text colour tints it).
void draw_alias_glyphs(const std::vector<AliasGlyph>& aliases, float px) {
  if (aliases.empty()) return;
  ImFontAtlas& atlas = *ImGui::GetIO().Fonts;
  unsigned char* pixels = nullptr;
  int tex_w = 0, tex_h = 0;
  atlas.GetTexDataAsRGBA32(&pixels, &tex_w, &tex_h);
  for (const AliasGlyph& a : aliases) {
    const ImFontAtlasCustomRect* r = atlas.GetCustomRectByIndex(a.rect);
    std::vector<std::uint8_t> cov(static_cast<std::size_t>(r->Width) * r->Height, 0);
    figure::draw_text_coverage(cov, r->Width, r->Height, 0.0f, std::round(figure::text_ascent(px, a.mono)), a.text, px,
                               a.mono);
    for (int y = 0; y < r->Height; ++y)
      for (int x = 0; x < r->Width; ++x) {
        unsigned char* p = pixels + (static_cast<std::size_t>(r->Y + y) * tex_w + r->X + x) * 4;
        p[0] = p[1] = p[2] = 255;
        p[3] = cov[static_cast<std::size_t>(y) * r->Width + x];
      }
  }
}

}  // namespace

void build_fonts(AppState& s, bool recreate_texture) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  const float px = std::round(s.settings.font_size * s.settings.ui_scale);
  // The ranges are read when the atlas is built: they live in the state until the next build.
  WindowUi& w = s.ui.window;
  w.glyph_plan = w.glyphs.plan();
  const auto add = [&](std::string_view bytes, int number, const GlyphRanges& ranges, bool merge) {
    ImFontConfig cfg;
    cfg.FontDataOwnedByAtlas = false;  // embedded in the binary, or kept by figure::fallback_font
    cfg.OversampleH = 2;
    cfg.FontNo = number;
    cfg.MergeMode = merge;
    return io.Fonts->AddFontFromMemoryTTF(const_cast<char*>(bytes.data()), static_cast<int>(bytes.size()), px, &cfg,
                                          ranges.data());
  };
  w.font_ui = add(embedded_font("DejaVuSans.ttf"), 0, w.glyph_plan.sans, false);
  for (const GlyphPlan::Merged& m : w.glyph_plan.sans_fallbacks) add(m.file.bytes, m.file.number, m.ranges, true);
  w.font_mono = add(embedded_font("DejaVuSansMono.ttf"), 0, w.glyph_plan.mono, false);
  for (const GlyphPlan::Merged& m : w.glyph_plan.mono_fallbacks) add(m.file.bytes, m.file.number, m.ranges, true);
  const std::vector<AliasGlyph> aliases = add_alias_glyphs(s, px);
  io.Fonts->Build();
  draw_alias_glyphs(aliases, px);
  if (recreate_texture) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
  s.ui.window.fonts_dirty = false;
}

void apply_style(AppState& s) {
  ImGuiStyle style;
  if (s.settings.dark) {
    ImGui::StyleColorsDark(&style);
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.09f, 0.10f, 1.0f);
    style.Colors[ImGuiCol_ChildBg] = ImVec4(0.09f, 0.09f, 0.10f, 1.0f);
  } else {
    ImGui::StyleColorsLight(&style);
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0.96f, 0.96f, 0.96f, 1.0f);
    style.Colors[ImGuiCol_FrameBg] = ImVec4(0.84f, 0.86f, 0.89f, 1.0f);
    style.Colors[ImGuiCol_FrameBgHovered] = ImVec4(0.76f, 0.82f, 0.90f, 1.0f);
    style.Colors[ImGuiCol_PlotHistogram] = ImVec4(0.85f, 0.35f, 0.0f, 1.0f);
  }
  style.WindowRounding = 0.0f;
  style.FrameRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.WindowBorderSize = 0.0f;
  style.ChildBorderSize = 1.0f;
  style.FramePadding = ImVec2(6.0f, 4.0f);
  style.ItemSpacing = ImVec2(8.0f, 5.0f);
  style.GrabMinSize = 12.0f;
  style.ScaleAllSizes(s.settings.ui_scale);
  ImGui::GetStyle() = style;
  s.renderer.dark = s.settings.dark;
  s.ui.window.style_dirty = false;
}

// What a frame may draw that the user or a model made: the typed texts, the tokens, the
// next-token rows, paths (the menus' recent files and models too), the status line (figures
// note their own text as they draw it, canvas.cpp). A character new to the atlas, or a new
// alias (wide_chars.hpp), builds it again before the frame.
void note_frame_glyphs(AppState& s) {
  if (s.ui.window.wide.chars().size() != s.ui.window.aliases_built) s.ui.window.fonts_dirty = true;
  for (const std::string& t : s.doc.session.tokens) want_glyphs(s, t);
  const ModelUi& m = s.gpt;
  for (const std::string* t : std::initializer_list<const std::string*>{
           &s.ui.edit.token_text, &s.doc.path, &m.text, &m.path, &m.corrupt_text, &m.sweep_target, &m.sweep_vs,
           &m.lens_token, &m.open_edit, &m.error, &m.tokens.error, &s.ui.dialog.path, &s.ui.dialog.error,
           &s.ui.dialog.browse_dir, &s.ui.status.text, &s.ui.capture.dir_edit, &s.train.text_path,
           &s.train.tokenizer_dir})
    want_glyphs(s, *t);
  for (const FileRow& r : s.ui.dialog.browse_rows) want_glyphs(s, r.label);
  for (const auto* list : {&s.settings.recent, &s.settings.recent_models})
    for (const std::string& p : *list) want_glyphs(s, p);
  want_glyphs(s, s.settings.capture_dir);
  // The capture folder's default, the settings' hint while they are open: a localised pictures
  // folder (~/Изображения/mhaviz).
  if (s.ui.capture.settings_open) want_glyphs(s, capture_folder(s));
  want_glyphs(s, s.doc.origin);
  want_glyphs(s, s.ui.capture.last);
  for (const std::string& t : m.tokens.tokens) want_glyphs(s, t);
  if (m.view) {
    for (const std::string& t : m.view->token_strings) want_glyphs(s, t);
    for (const NextRow& r : m.view->next) want_glyphs(s, r.token);
  }
}

}  // namespace mhaviz::gui
