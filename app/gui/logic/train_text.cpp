// The Train view's text task (see train_text.hpp).
#include "train_text.hpp"

#include <filesystem>

#include "mhaviz/tokenizer.hpp"
#include "mhaviz/train.hpp"

namespace mhaviz::gui {
namespace {

// The trainer speaks the command line's options; the view's controls are named without "--".
std::string without_dashes(std::string s) {
  for (std::size_t at = s.find("--"); at != std::string::npos; at = s.find("--", at)) s.erase(at, 2);
  return s;
}

}  // namespace

TextCheck check_train_text(const std::string& path, const std::string& tokenizer, int context, int batch) {
  TextCheck c;
  c.characters = tokenizer.empty();
  if (path.empty()) {
    c.error = "text: choose a text file";
    return c;
  }
  try {
    const train::TaskData d = train::text_task(path, tokenizer, context, batch);
    c.tokens = static_cast<std::int64_t>(d.text.size());
    c.vocab = d.vocab_size;
  } catch (const std::exception& e) {
    c.error = without_dashes(e.what());
  }
  return c;
}

bool has_tokenizer_files(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path f(folder);
  return !folder.empty() && ((fs::is_regular_file(f / "vocab.json", ec) && fs::is_regular_file(f / "merges.txt", ec)) ||
                             fs::is_regular_file(f / "tokenizer.json", ec));
}

std::vector<std::string> task_token_names(const train::TaskData& data, const std::vector<std::int32_t>& ids) {
  std::vector<std::string> out;
  if (data.kind == train::TaskKind::Text && !data.chars.empty()) {
    for (const std::int32_t id : ids) {
      const std::string& ch = data.chars[static_cast<std::size_t>(id)];
      out.push_back(ch == " " ? "\xE2\x90\xA3" : ch == "\n" ? "\\n" : ch == "\t" ? "\\t" : ch == "\r" ? "\\r" : ch);
    }
  } else if (data.kind == train::TaskKind::Text && !data.tokenizer_path.empty()) {
    const Tokenizer tok = Tokenizer::from_folder(data.tokenizer_path);
    for (const std::int32_t id : ids) out.push_back(tok.display_token(id));
  } else {
    for (const std::int32_t id : ids) out.push_back(std::to_string(id));
  }
  return out;
}

}  // namespace mhaviz::gui
