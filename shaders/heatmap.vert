#version 330 core
// One textured quad per heatmap, in ImGui's pixel coordinates.
layout(location = 0) in vec2 a_pos;  // pixels, origin top-left
layout(location = 1) in vec2 a_uv;   // (0,0) = row 0, column 0
uniform mat4 u_proj;
out vec2 v_uv;
void main() {
  v_uv = a_uv;
  gl_Position = u_proj * vec4(a_pos, 0.0, 1.0);
}
