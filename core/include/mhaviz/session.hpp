// Session files (tokens, embeddings, model config), validation with one-line
// errors, built-in lessons, and token-derived embeddings.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mhaviz/model.hpp"
#include "mhaviz/tensor.hpp"
#include "mhaviz/trace.hpp"

namespace mhaviz {

// Documented limits (README "Session format"). Past them a session is refused.
struct Limits {
  static constexpr int kMaxTokens = 4096;
  static constexpr int kMaxDim = 8192;        // d_in, d_out, num_heads * head_dim
  static constexpr int kMaxHeads = 256;
  static constexpr int kMaxBatch = 64;
  static constexpr int kMaxContext = 65536;
  static constexpr int kMaxTokenBytes = 256;
  static constexpr double kMaxAbsValue = 1e6;  // embedding values
  static constexpr std::int64_t kMaxMemoryBytes = std::int64_t{2} << 30;  // estimated forward memory
  static constexpr std::int64_t kMaxFileBytes = std::int64_t{256} << 20;
  static constexpr int kMaxJsonDepth = 64;
  static constexpr double kMaxRopeBase = 1e9;  // model.rope_base: real models use 1e4 to 1e6
};

// A one-line, user-facing error that names the field and the value.
class SessionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The colormaps a session's view may name (the figure library's, which app_tests holds equal).
inline constexpr std::string_view kColormapNames[] = {"viridis", "cividis", "magma", "diverging"};
inline constexpr std::string_view kWalkPaneNames[] = {"q", "k", "v", "all"};  // SessionView::walk_pane
inline constexpr int kMaxWalkSteps = 64;  // view.walk_step bound (the app clamps to its own step list)

// What the app showed when the session was saved (session version 2, the optional "view"
// object): the document opens as it was left. Every field is optional in the file.
struct SessionView {
  Stage stage = Stage::Weights;
  int head = 0;          // [0, num_heads): the selected head
  int batch = 0;         // [0, batch): the batch item shown
  bool enlarged = false;       // only the selected head, large
  bool log_scale = false;      // logarithmic colour scale for weights
  bool shared_scale = true;    // one value range for every head
  std::string colormap = "viridis";  // one of kColormapNames
  bool walkthrough = false;    // the walkthrough shown instead of the heatmaps
  int walk_step = 0;           // [0, kMaxWalkSteps)
  bool walk_mistake = false;   // its "common mistake" merge
  bool walk_compare = false;   // its "Compare variants" tab
  int walk_pane = 0;           // its Q | K | V panes shown: 0 q, 1 k, 2 v, 3 all ("q", "k", "v", "all")
  bool walk_numbers = true;    // its numbers in cells (when they fit)
  bool walk_weights = true;    // its Wᵀ drawn in the projection step
  bool operator==(const SessionView&) const = default;
};

struct Session {
  std::vector<std::string> tokens;
  std::vector<std::vector<float>> embeddings;  // tokens.size() rows of d_in
  int batch = 1;
  ModelConfig model;
  std::optional<SessionView> view;  // written as version 2; absent in version 1 files

  int d_in() const { return embeddings.empty() ? 0 : static_cast<int>(embeddings.front().size()); }
  int num_tokens() const { return static_cast<int>(tokens.size()); }
  // (batch, T, d_in): the sequence stacked batch times, as the seeds do with torch.stack.
  Tensor input_tensor() const;
};

// Estimated peak bytes of a forward with its Trace (parameters + every kept intermediate).
std::int64_t estimate_memory_bytes(const ModelConfig& c, int d_in, int tokens, int batch);

// The one check of dropout's range, [0, 1) (1 would scale kept weights by 1/0): session
// files, `mhaviz bench --dropout` and the app's slider all reach it through validate_model.
// Throws SessionError "model.dropout: P is outside [0, 1)".
void check_dropout(double p);

// One field's checks, shared by the parser, validate_session and the app's editors (so that
// an editor refuses exactly what a session file may not hold). Throw SessionError naming field.
void check_token(std::string_view token, const std::string& field);      // 1 to kMaxTokenBytes bytes
// finite, |value| <= kMaxAbsValue; shown: the value as the user wrote it (default: %g of value)
void check_embedding_value(double value, const std::string& field, std::string_view shown = {});

// Throws SessionError on the first problem found.
void validate_model(const ModelConfig& c, int d_in, int tokens, int batch);
void validate_session(const Session& s);

// Parses and validates. Throws SessionError ("model.d_out: ..." style messages). A relative
// model.weights path is read from base_dir (empty: the working directory).
Session parse_session(std::string_view json_text, const std::filesystem::path& base_dir = {});
// A session file that parse_session refuses, made valid where that is possible without
// guessing: values clamped to the limits (non-finite ones set to 0), tokens cut to the byte
// limit (whole UTF-8 characters) or dropped when empty, rows trimmed or padded with the
// token's own vector, sizes clamped, num_heads set to a divisor of d_out, context_length
// raised to the token count, unknown fields dropped. `repairs` lists each change in the
// parser's one-line style ("embeddings[0][0]: 1e+09 clamped to 1e+06"). Throws SessionError
// when the text is not a JSON object or the result still fails validation.
struct Recovered {
  Session session;
  std::vector<std::string> repairs;
};
Recovered recover_session(std::string_view json_text, const std::filesystem::path& base_dir = {});

// Pretty, round-trips exactly; model.weights is written as the absolute path it was read from.
std::string session_to_json(const Session& s);

// A chapter-3 module's parameters from a safetensors file (F32, F16 or BF16; names as
// `mhaviz dump` prints them). Throws SessionError "model.weights: <file>: <problem>".
std::shared_ptr<const ParameterFile> load_parameter_file(const std::filesystem::path& path);

// A session from a path, "-" (standard input) or a built-in lesson name. A relative
// model.weights is read beside the session file.
Session load_session(const std::string& path_or_lesson);

// Atomic write: a temporary file in the same directory, then rename over path.
// Throws SessionError ("output: cannot write '...': reason"); never leaves a partial file.
void write_file_atomic(const std::string& path, std::string_view contents);
std::string read_file(const std::string& path);  // throws SessionError naming the path

struct LessonInfo {
  std::string name;
  std::string description;
};
// The built-in lessons, the default ("seed003-wrapper") first.
const std::vector<LessonInfo>& lessons();
bool is_lesson(std::string_view name);
Session lesson(std::string_view name);  // throws SessionError for unknown names
inline constexpr std::string_view kDefaultLesson = "seed003-wrapper";

// A deterministic embedding for a token: the same text always gives the same
// vector (as an embedding lookup would), values in [-1, 1] with two decimals.
std::vector<float> token_embedding(std::string_view token, int d_in);
// Tokens split on whitespace.
std::vector<std::string> split_tokens(std::string_view text);

}  // namespace mhaviz
