#version 330 core
// Colormap a GL_R32F texture of values (one texel per cell).
// Masked cells hold -inf (as PyTorch holds them) and are drawn hatched with two
// neutral greys, never a colour of the scale.
in vec2 v_uv;
out vec4 frag;

uniform sampler2D u_values;
uniform float u_vmin;
uniform float u_vmax;
// Colormaps: one row of 256 RGBA8 entries per map (built on the CPU from the same
// anchors the app uses for text contrast and capture sidecars); exact texel fetch.
uniform sampler2D u_lut;
uniform int u_lut_row;
uniform vec3 u_hatch_a;
uniform vec3 u_hatch_b;
uniform vec3 u_window_a;   // cells outside a sliding window hold +inf: the same stripes in blue-greys
uniform vec3 u_window_b;
uniform vec3 u_origin;     // the figure's top-left (x, y from the top) and the framebuffer's height, in pixels
uniform vec2 u_cells;      // columns, rows
uniform vec2 u_size_px;    // quad size in framebuffer pixels
uniform vec3 u_grid_color;
uniform float u_grid;      // gap between cells in framebuffer pixels (0: none), right and bottom of each cell
uniform float u_log;       // 1.0: logarithmic scale from u_vmin > 0 to u_vmax (weights)

vec3 colormap(float t) {
  int i = int(clamp(t, 0.0, 1.0) * 255.0 + 0.5);
  return texelFetch(u_lut, ivec2(i, u_lut_row), 0).rgb;
}

void main() {
  float v = texture(u_values, v_uv).r;
  vec3 c;
  if (isinf(v) || isnan(v) || v < -1e30) {
    // 45-degree stripes, a 6 px period, counted from the figure's top-left downwards as the
    // CPU figures count their pixels, so a capture's stripes fall where the screen's do.
    float px = floor(gl_FragCoord.x) - u_origin.x;
    float py = floor(u_origin.z - gl_FragCoord.y) - u_origin.y;
    float s = mod(px + py, 6.0);
    bool window = isinf(v) && v > 0.0;
    c = s < 3.0 ? (window ? u_window_b : u_hatch_b) : (window ? u_window_a : u_hatch_a);
  } else {
    float t;
    if (u_log > 0.5) {
      t = v <= u_vmin ? 0.0 : (log(v) - log(u_vmin)) / (log(u_vmax) - log(u_vmin));
    } else {
      float range = u_vmax - u_vmin;
      t = range > 0.0 ? (v - u_vmin) / range : 0.5;
    }
    c = colormap(t);
  }
  if (u_grid > 0.0) {
    vec2 cell_px = u_size_px / u_cells;
    vec2 f = fract(v_uv * u_cells) * cell_px;
    if (f.x >= cell_px.x - u_grid || f.y >= cell_px.y - u_grid) c = u_grid_color;
  }
  frag = vec4(c, 1.0);
}
