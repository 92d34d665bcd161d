// Heatmaps as GL_R32F textures drawn by shaders/heatmap.{vert,frag} from an ImGui draw
// callback: one quad and one draw call per head, the colormap applied per fragment.
#include <GL/gl.h>
#include <GL/glext.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "app_state.hpp"
#include "embedded.hpp"

namespace mhaviz::gui {
namespace {

// [SECTION] Shader program
GLuint compile(GLenum type, std::string_view src, std::string& error) {
  GLuint sh = glCreateShader(type);
  const char* p = src.data();
  const GLint len = static_cast<GLint>(src.size());
  glShaderSource(sh, 1, &p, &len);
  glCompileShader(sh);
  GLint ok = 0;
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[1024] = {};
    glGetShaderInfoLog(sh, sizeof log, nullptr, log);
    error = std::string("shader compile failed: ") + log;
    glDeleteShader(sh);
    return 0;
  }
  return sh;
}

// [SECTION] Draw callback
void draw_callback(const ImDrawList*, const ImDrawCmd* cmd) {
  const auto* d = static_cast<const HeatmapDraw*>(cmd->UserCallbackData);
  const Renderer& r = *d->renderer;
  // Scissor from the command's clip rectangle (ImGui's convention, framebuffer pixels).
  const float cx0 = (cmd->ClipRect.x - r.display_x) * r.fb_scale_x;
  const float cy0 = (cmd->ClipRect.y - r.display_y) * r.fb_scale_y;
  const float cx1 = (cmd->ClipRect.z - r.display_x) * r.fb_scale_x;
  const float cy1 = (cmd->ClipRect.w - r.display_y) * r.fb_scale_y;
  if (cx1 <= cx0 || cy1 <= cy0) return;
  const float fb_h = r.display_h * r.fb_scale_y;
  glEnable(GL_SCISSOR_TEST);
  glScissor(static_cast<GLint>(cx0), static_cast<GLint>(fb_h - cy1), static_cast<GLsizei>(cx1 - cx0),
            static_cast<GLsizei>(cy1 - cy0));

  glUseProgram(r.program);
  glUniformMatrix4fv(r.loc_proj, 1, GL_FALSE, r.proj);
  glUniform1i(r.loc_values, 0);
  glUniform1f(r.loc_vmin, d->vmin);
  glUniform1f(r.loc_vmax, d->vmax);
  glUniform1i(r.loc_lut, 1);
  glUniform1i(r.loc_lut_row, static_cast<GLint>(d->colormap));
  // The figure's colours: its masked hatch, and its background between cells.
  const auto rgb = [](GLint loc, figure::Color c) { glUniform3f(loc, c.r / 255.0f, c.g / 255.0f, c.b / 255.0f); };
  rgb(r.loc_hatch_a, d->hatch_a);
  rgb(r.loc_hatch_b, d->hatch_b);
  rgb(r.loc_window_a, d->window_a);
  rgb(r.loc_window_b, d->window_b);
  // The stripes' phase: framebuffer pixels from the figure's top-left, downwards, as the capture counts them.
  glUniform3f(r.loc_origin, std::floor((d->origin_x - r.display_x) * r.fb_scale_x),
              std::floor((d->origin_y - r.display_y) * r.fb_scale_y), fb_h);
  rgb(r.loc_grid_color, d->gap_color);
  glUniform2f(r.loc_cells, static_cast<float>(d->cols), static_cast<float>(d->rows));
  glUniform2f(r.loc_size, (d->x1 - d->x0) * r.fb_scale_x, (d->y1 - d->y0) * r.fb_scale_y);
  glUniform1f(r.loc_grid, d->gap * r.fb_scale_x);
  glUniform1f(r.loc_log, d->log_scale ? 1.0f : 0.0f);

  const float v[] = {d->x0, d->y0, 0, 0, d->x1, d->y0, 1, 0, d->x0, d->y1, 0, 1,
                     d->x1, d->y0, 1, 0, d->x1, d->y1, 1, 1, d->x0, d->y1, 0, 1};
  glBindVertexArray(r.vao);
  glBindBuffer(GL_ARRAY_BUFFER, r.vbo);
  glBufferSubData(GL_ARRAY_BUFFER, 0, sizeof v, v);
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, r.lut);
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, d->tex);
  glDrawArrays(GL_TRIANGLES, 0, 6);
}

}  // namespace

void upload_texture(HeadTexture& t, int w, int h, const float* data) {
  if (t.tex == 0) glGenTextures(1, &t.tex);
  glBindTexture(GL_TEXTURE_2D, t.tex);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  if (t.width != w || t.height != h) {
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, w, h, 0, GL_RED, GL_FLOAT, data);
    t.width = w;
    t.height = h;
  } else {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RED, GL_FLOAT, data);
  }
}

bool renderer_init(Renderer& r, std::string& error) {
  GLuint vs = compile(GL_VERTEX_SHADER, embedded_shader("heatmap.vert"), error);
  if (!vs) return false;
  GLuint fs = compile(GL_FRAGMENT_SHADER, embedded_shader("heatmap.frag"), error);
  if (!fs) return false;
  r.program = glCreateProgram();
  glAttachShader(r.program, vs);
  glAttachShader(r.program, fs);
  glLinkProgram(r.program);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = 0;
  glGetProgramiv(r.program, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[1024] = {};
    glGetProgramInfoLog(r.program, sizeof log, nullptr, log);
    error = std::string("shader link failed: ") + log;
    return false;
  }
  r.loc_proj = glGetUniformLocation(r.program, "u_proj");
  r.loc_values = glGetUniformLocation(r.program, "u_values");
  r.loc_vmin = glGetUniformLocation(r.program, "u_vmin");
  r.loc_vmax = glGetUniformLocation(r.program, "u_vmax");
  r.loc_lut = glGetUniformLocation(r.program, "u_lut");
  r.loc_lut_row = glGetUniformLocation(r.program, "u_lut_row");
  r.loc_hatch_a = glGetUniformLocation(r.program, "u_hatch_a");
  r.loc_hatch_b = glGetUniformLocation(r.program, "u_hatch_b");
  r.loc_window_a = glGetUniformLocation(r.program, "u_window_a");
  r.loc_window_b = glGetUniformLocation(r.program, "u_window_b");
  r.loc_origin = glGetUniformLocation(r.program, "u_origin");
  r.loc_cells = glGetUniformLocation(r.program, "u_cells");
  r.loc_size = glGetUniformLocation(r.program, "u_size_px");
  r.loc_grid_color = glGetUniformLocation(r.program, "u_grid_color");
  r.loc_grid = glGetUniformLocation(r.program, "u_grid");
  r.loc_log = glGetUniformLocation(r.program, "u_log");

  glGenVertexArrays(1, &r.vao);
  glGenBuffers(1, &r.vbo);
  glBindVertexArray(r.vao);
  glBindBuffer(GL_ARRAY_BUFFER, r.vbo);
  glBufferData(GL_ARRAY_BUFFER, 24 * sizeof(float), nullptr, GL_DYNAMIC_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float), nullptr);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, 4 * sizeof(float),
                        reinterpret_cast<const void*>(2 * sizeof(float)));
  glBindVertexArray(0);

  // Colormap table: row k = colormap k, 256 entries, the values colormap_lut() gives.
  std::vector<unsigned char> lut;
  for (int k = 0; k < kColormapCount; ++k) {
    for (int i = 0; i < 256; ++i) {
      const auto c = colormap_lut(static_cast<Colormap>(k), i);
      lut.insert(lut.end(), {c[0], c[1], c[2], 255});
    }
  }
  glGenTextures(1, &r.lut);
  glBindTexture(GL_TEXTURE_2D, r.lut);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, 256, kColormapCount, 0, GL_RGBA, GL_UNSIGNED_BYTE, lut.data());
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);

  // The colorbar: one column of 256 values from 1 (top) to 0 (bottom), drawn with vmin 0, vmax 1.
  std::vector<float> ramp(256);
  for (int i = 0; i < 256; ++i) ramp[static_cast<std::size_t>(i)] = 1.0f - static_cast<float>(i) / 255.0f;
  upload_texture(r.colorbar, 1, 256, ramp.data());
  r.colorbar.values = ramp;
  return true;
}

void delete_texture(HeadTexture& t) {
  if (t.tex) glDeleteTextures(1, &t.tex);
  t = HeadTexture{};
}

void renderer_shutdown(Renderer& r) {
  for (ScreenFigure* f :
       {&r.lesson, &r.walk, &r.compare, &r.variants, &r.shapes, &r.model, &r.model_grid, &r.train, &r.kv})
    for (HeadTexture& t : f->textures) delete_texture(t);
  if (r.colorbar.tex) glDeleteTextures(1, &r.colorbar.tex);
  if (r.lut) glDeleteTextures(1, &r.lut);
  if (r.vbo) glDeleteBuffers(1, &r.vbo);
  if (r.vao) glDeleteVertexArrays(1, &r.vao);
  if (r.program) glDeleteProgram(r.program);
  r = Renderer{};
}

void renderer_begin_frame(Renderer& r) {
  const ImDrawData* dd = ImGui::GetDrawData();
  if (!dd) return;
  r.display_x = dd->DisplayPos.x;
  r.display_y = dd->DisplayPos.y;
  r.display_w = dd->DisplaySize.x;
  r.display_h = dd->DisplaySize.y;
  r.fb_scale_x = dd->FramebufferScale.x;
  r.fb_scale_y = dd->FramebufferScale.y;
  const float L = r.display_x, R = r.display_x + r.display_w, T = r.display_y, B = r.display_y + r.display_h;
  const float m[16] = {2.0f / (R - L), 0, 0, 0, 0, 2.0f / (T - B), 0, 0, 0, 0, -1, 0,
                       (R + L) / (L - R), (T + B) / (B - T), 0, 1};
  std::memcpy(r.proj, m, sizeof m);
}

void draw_heatmap_quad(AppState& s, const HeatmapDraw& d) {
  Renderer& r = s.renderer;
  r.draws.push_back(d);
  r.draws.back().renderer = &r;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddCallback(draw_callback, &r.draws.back());
  dl->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

}  // namespace mhaviz::gui
