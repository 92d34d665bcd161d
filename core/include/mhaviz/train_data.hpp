// What the trainer learns from: the induction task, the copy task, or the user's text, as a
// deterministic stream of batches (a function of the seed and the step alone, so a resumed run
// draws what an uninterrupted one would), and the fixed probe the head detectors read.
//
//   induction  every sequence holds a segment of random tokens and, later, one copy of it, at
//              random offsets and of a random length from 4 to 16 (to ⌊(T + 1) / 2⌋ in a short
//              context); lengths 5, 9 and 13 are never trained, only probed, so a model that
//              solves the copy by position rather than by induction shows it. All other tokens
//              are filler, and no token occurs twice in a sequence except through the copy (a
//              filler that repeats by chance would be a second, unpredictable "copy").
//   copy       a random half (tokens drawn with replacement) and the same half again: a sanity
//              task any model with attention learns.
//   text       windows of T + 1 consecutive tokens at random offsets of the user's text, split
//              into characters or into GPT-2's tokens (vocab.json + merges.txt or
//              tokenizer.json, tokenizer.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mhaviz::train {

enum class TaskKind { Induction, Copy, Text };
std::string_view task_name(TaskKind k);  // "induction", "copy", "text"
bool parse_task(std::string_view name, TaskKind& out);

// The induction task's segment lengths at a context of T tokens (sequences of T + 1).
struct SegmentLengths {
  std::vector<int> trained, held_out;
};
SegmentLengths induction_lengths(int context_length);
// Smallest context and vocabulary the induction task can fill (every held-out length needs a
// trained one around it; every token of a sequence but the copy distinct).
inline constexpr int kInductionMinContext = 11;
int induction_min_vocab(int context_length);

struct TaskData {
  TaskKind kind = TaskKind::Induction;
  int vocab_size = 64;
  // text: the whole text as ids; where it came from (absolute paths); an FNV-1a hash of the
  // ids (a resumed run checks that its text is the same); by characters, the character of
  // each id (UTF-8), else empty.
  std::vector<std::int32_t> text;
  std::string text_path, tokenizer_path;
  std::uint64_t text_hash = 0;
  std::vector<std::string> chars;
};

// induction or copy over ids [0, vocab_size). Throws TrainError when the context or the
// vocabulary is too small for the task.
TaskData synthetic_task(TaskKind kind, int vocab_size, int context_length);
// The user's text: by characters when tokenizer_folder is empty, else GPT-2's tokenizer from
// that folder. Throws TrainError (naming "text" or "--tokenizer" and the file) when the file is
// unreadable, empty, binary (a NUL byte, or not UTF-8), or too short for one batch of B
// different sequences of T + 1 tokens.
TaskData text_task(const std::string& path, const std::string& tokenizer_folder, int context_length, int batch);

// Which target a position predicts, for the loss on the two halves: kFirst, a token of the
// segment's first occurrence after its first token; kRepeat, the same in the copy (what
// induction can predict); kOther, anything else (filler, text).
enum Role : std::uint8_t { kOther = 0, kFirst = 1, kRepeat = 2 };

struct Batch {
  int B = 0, T = 0;
  std::vector<std::int32_t> tokens;  // (B, T + 1): inputs [:, :-1], targets [:, 1:]
  std::vector<std::uint8_t> roles;   // (B, T): the role of position t's target, token t + 1
};

// The batch of step `step` (1, 2, …) of a run seeded with `seed`: B sequences of T + 1 tokens.
void make_batch(const TaskData& data, std::uint64_t seed, std::int64_t step, int B, int T, Batch& out);
// The probe the detectors read, the same for every seed: induction, 8 sequences of each
// held-out length; copy and text, 16 random halves repeated over the whole vocabulary.
Batch make_probe(const TaskData& data, int T);

}  // namespace mhaviz::train
