// png_pixels PNG: the image's pixels as a binary PPM (P6: "P6\nW H\n255\n", then 8-bit RGB
// rows top to bottom) on stdout, decoded by stb_image. The GUI tests read screenshots and
// captures through it (guitest.read_png): undoing PNG's filters in a Python loop over every
// byte took most of their time. Alpha is dropped (the tests compare colours). Exit status 1
// with one line on stderr when the file cannot be read or decoded.
#include <stb_image.h>

#include <cstdio>
#include <memory>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: png_pixels PNG\n");
    return 1;
  }
  int width = 0, height = 0, channels = 0;
  const std::unique_ptr<unsigned char, void (*)(void*)> pixels(stbi_load(argv[1], &width, &height, &channels, 3),
                                                               stbi_image_free);
  if (!pixels) {
    std::fprintf(stderr, "png_pixels: %s: %s\n", argv[1], stbi_failure_reason());
    return 1;
  }
  const auto bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3;
  std::printf("P6\n%d %d\n255\n", width, height);
  if (std::fwrite(pixels.get(), 1, bytes, stdout) != bytes || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "png_pixels: %s: the pixels could not be written\n", argv[1]);
    return 1;
  }
  return 0;
}
