// Undo and redo of the document (app/gui/logic/history.hpp): steps, names, coalescing of a drag,
// lesson switches, the 200-step floor, and rows shared between steps.
#include <gtest/gtest.h>

#include "history.hpp"

namespace mhaviz::gui {
namespace {

DocState doc(const char* name) { return DocState{lesson(name), "", std::string("lesson ") + name}; }

TEST(History, UndoesAndRedoesEachNamedEdit) {
  History h;
  DocState d = doc("seed003-wrapper");
  h.reset(d);
  EXPECT_FALSE(h.can_undo());
  EXPECT_EQ(h.undo_label(), "");
  const std::uint64_t base = h.current_id();

  d.session.model.d_out = 4;
  h.record(d, "change d_out");
  h.seal();
  d.session.embeddings[0][0] = 0.5f;
  h.record(d, "change Your x0");
  h.seal();
  EXPECT_EQ(h.undo_steps(), 2u);
  EXPECT_EQ(h.undo_label(), "change Your x0");

  DocState back = h.undo();
  EXPECT_FLOAT_EQ(back.session.embeddings[0][0], lesson("seed003-wrapper").embeddings[0][0]);
  EXPECT_EQ(back.session.model.d_out, 4);
  EXPECT_EQ(h.undo_label(), "change d_out");
  EXPECT_EQ(h.redo_label(), "change Your x0");
  back = h.undo();
  EXPECT_EQ(back.session.model.d_out, 2);
  EXPECT_EQ(h.current_id(), base);  // the very state it started from
  EXPECT_FALSE(h.can_undo());

  back = h.redo();
  EXPECT_EQ(back.session.model.d_out, 4);
  back = h.redo();
  EXPECT_FLOAT_EQ(back.session.embeddings[0][0], 0.5f);
  EXPECT_FALSE(h.can_redo());

  // A new edit after an undo drops what could have been redone.
  h.undo();
  d = h.current();
  d.session.batch = 3;
  h.record(d, "change batch");
  EXPECT_FALSE(h.can_redo());
  EXPECT_EQ(h.undo_label(), "change batch");
}

TEST(History, ADragIsOneStep) {
  History h;
  DocState d = doc("seed003-wrapper");
  h.reset(d);
  for (int v : {3, 4, 5, 6, 7, 8}) {  // one drag of the slider: the widget is held throughout
    d.session.model.d_out = v;
    h.record(d, "change d_out");
  }
  h.seal();  // released
  EXPECT_EQ(h.undo_steps(), 1u);
  EXPECT_EQ(h.current().session.model.d_out, 8);
  EXPECT_EQ(h.undo().session.model.d_out, 2);

  // Two drags of the same slider are two steps; another label while held is another step.
  h.redo();
  d.session.model.d_out = 16;
  h.record(d, "change d_out");
  h.seal();
  EXPECT_EQ(h.undo_steps(), 2u);
  d.session.model.dropout = 0.1;
  h.record(d, "change dropout");
  d.session.batch = 2;
  h.record(d, "change batch");
  EXPECT_EQ(h.undo_steps(), 4u);
}

TEST(History, ARefusedEntryIsDroppedWhole) {
  History h;
  DocState d = doc("seed003-wrapper");
  h.reset(d);
  const float before = d.session.embeddings[0][0];
  d.session.embeddings[0][0] = 1.0f;  // "1" of "1e9", typed into the cell
  h.record(d, "change Your x0");
  EXPECT_FALSE(h.drop_open_step("change d_out"));  // another edit's step stays
  EXPECT_TRUE(h.drop_open_step("change Your x0"));
  EXPECT_FLOAT_EQ(h.current().session.embeddings[0][0], before);
  EXPECT_FALSE(h.can_undo());
  EXPECT_FALSE(h.can_redo());
  // A step already closed (the field was left) is not the entry in progress.
  d.session.embeddings[0][0] = 2.0f;
  h.record(d, "change Your x0");
  h.seal();
  EXPECT_FALSE(h.drop_open_step("change Your x0"));
  EXPECT_FLOAT_EQ(h.current().session.embeddings[0][0], 2.0f);
}

TEST(History, LessonSwitchesAreStepsAndNeverMerge) {
  History h;
  h.reset(doc("seed003-wrapper"));
  DocState other = doc("gpt2-small-256");
  h.record(other, "open lesson gpt2-small-256", true);
  h.record(other, "open lesson gpt2-small-256", true);  // the same lesson again: its own step
  EXPECT_EQ(h.undo_steps(), 2u);
  h.undo();
  const DocState back = h.undo();
  EXPECT_EQ(back.origin, "lesson seed003-wrapper");
  EXPECT_EQ(back.session.num_tokens(), 6);

  // A save renames every state of the document it belongs to, not the one before it.
  h.redo();
  h.rename("/tmp/gpt2.json", "/tmp/gpt2.json");
  EXPECT_EQ(h.current().path, "/tmp/gpt2.json");
  EXPECT_EQ(h.undo().path, "");
}

TEST(History, KeepsAtLeast200StepsOfALargeLessonAndSharesUnchangedRows) {
  History h;  // the app's defaults
  DocState d = doc("gpt2-small-256");  // 256 x 768
  h.reset(d);
  const std::size_t table = 256u * 768u * sizeof(float);
  for (int i = 0; i < 300; ++i) {
    d.session.embeddings[static_cast<std::size_t>(i % 256)][0] += 0.01f;
    h.record(d, "edit " + std::to_string(i));
  }
  EXPECT_EQ(h.undo_steps(), 300u);
  // One changed row per step, not a whole table: the base table plus 300 rows (and the
  // token texts, which every step keeps).
  std::size_t text = 0;
  for (const auto& t : d.session.tokens) text += t.size();
  EXPECT_LE(h.bytes(), table + 300u * 768u * sizeof(float) + 301u * text);
  for (int i = 0; i < 300; ++i) h.undo();
  EXPECT_EQ(h.current().session.embeddings, lesson("gpt2-small-256").embeddings);
  for (int i = 0; i < 300; ++i) h.redo();
  EXPECT_EQ(h.current().session.embeddings, d.session.embeddings);
}

TEST(History, DropsTheOldestStepsPastItsLimits) {
  History h(200, std::size_t{1} << 30);
  DocState d = doc("seed003-wrapper");
  h.reset(d);
  for (int i = 1; i <= 250; ++i) {
    d.session.model.seed = static_cast<std::uint64_t>(i);
    h.record(d, "change seed");
    h.seal();
  }
  EXPECT_EQ(h.undo_steps(), 200u);
  DocState back;
  while (h.can_undo()) back = h.undo();
  EXPECT_EQ(back.session.model.seed, 50u);  // the 50 oldest went

  // By bytes: every step replaces the whole table; the limit holds the newest few.
  const std::size_t row = 768u * sizeof(float);
  History small(1000, 256u * row * 3);
  DocState g = doc("gpt2-small-256");
  small.reset(g);
  for (int i = 0; i < 10; ++i) {
    for (auto& r : g.session.embeddings) r[0] += 1.0f;
    small.record(g, "change all");
    small.seal();
  }
  EXPECT_LE(small.bytes(), 256u * row * 3);
  EXPECT_GE(small.undo_steps(), 1u);
  EXPECT_EQ(small.current().session.embeddings, g.session.embeddings);
}

}  // namespace
}  // namespace mhaviz::gui
