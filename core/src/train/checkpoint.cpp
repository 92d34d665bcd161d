// The files of a training run (trainer.hpp): the model under the book's names, config.json, the
// optimizer state for --resume, and the tokenizer files of a text tokenized with GPT-2's.
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mhaviz/safetensors.hpp"
#include "mhaviz/session.hpp"  // write_file_atomic
#include "mhaviz/trainer.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace mhaviz::train {
namespace {

constexpr const char* kStateFormat = "mhaviz-train-state";

// [SECTION] settings as JSON

json settings_json(const TrainSettings& s) {
  const GptTrainConfig& c = s.model;
  return {{"task", task_name(s.task)},
          {"text", s.text_path},
          {"tokenizer", s.tokenizer_path},
          {"vocab_size", c.vocab_size},
          {"context_length", c.context_length},
          {"emb_dim", c.emb_dim},
          {"n_heads", c.n_heads},
          {"n_layers", c.n_layers},
          {"attn_only", c.attn_only},
          {"qkv_bias", c.qkv_bias},
          {"batch", s.batch},
          {"lr", s.lr},
          {"weight_decay", s.weight_decay},
          {"betas", {0.9, 0.999}},
          {"eps", 1e-8},
          {"seed", s.seed}};
}

TrainSettings settings_from(const json& j, const std::string& file) {
  try {
    TrainSettings s;
    if (!parse_task(j.at("task").get<std::string>(), s.task))
      throw TrainError(file + ": unknown task " + j.at("task").dump());
    s.text_path = j.at("text").get<std::string>();
    s.tokenizer_path = j.at("tokenizer").get<std::string>();
    GptTrainConfig& c = s.model;
    c.vocab_size = j.at("vocab_size").get<int>();
    c.context_length = j.at("context_length").get<int>();
    c.emb_dim = j.at("emb_dim").get<int>();
    c.n_heads = j.at("n_heads").get<int>();
    c.n_layers = j.at("n_layers").get<int>();
    c.attn_only = j.at("attn_only").get<bool>();
    c.qkv_bias = j.at("qkv_bias").get<bool>();
    s.batch = j.at("batch").get<int>();
    s.lr = j.at("lr").get<double>();
    s.weight_decay = j.at("weight_decay").get<double>();
    s.seed = j.at("seed").get<std::uint64_t>();
    return s;
  } catch (const json::exception& e) {
    throw TrainError(file + ": the run's settings are not readable (" + e.what() + ")");
  }
}

// The book's config.json (what load_gpt reads) and the attention-only switch.
json model_config_json(const TrainSettings& s, const TaskData& data) {
  const GptTrainConfig& c = s.model;
  json j = {{"vocab_size", c.vocab_size}, {"context_length", c.context_length},
            {"emb_dim", c.emb_dim},       {"n_heads", c.n_heads},
            {"n_layers", c.n_layers},     {"drop_rate", 0.0},
            {"qkv_bias", c.qkv_bias},     {"attn_only", c.attn_only}};
  if (!data.chars.empty()) j["char_vocab"] = data.chars;
  return j;
}

// [SECTION] writing

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) throw TrainError("--tokenizer: cannot read '" + p.string() + "': " + std::strerror(errno));
  return ss.str();
}

// The tokenizer's files beside the model, unless they are there already.
void copy_tokenizer(const std::string& folder, const fs::path& to) {
  std::error_code ec;
  if (fs::equivalent(folder, to, ec)) return;
  const bool json_form = fs::exists(fs::path(folder) / "tokenizer.json", ec);
  for (const char* name :
       json_form ? std::vector<const char*>{"tokenizer.json"} : std::vector<const char*>{"vocab.json", "merges.txt"})
    write_file_atomic((to / name).string(), slurp(fs::path(folder) / name));
}

std::vector<StWriteTensor> tensors_of(const std::vector<ParamTensor>& layout, const std::vector<float>& values,
                                      const std::string& prefix) {
  std::vector<StWriteTensor> out;
  for (const ParamTensor& t : layout) out.push_back({prefix + t.name, t.shape, values.data() + t.offset});
  return out;
}

// [SECTION] reading

// A file of the run opened, its failure one line naming it.
SafetensorsFile open_run_file(const fs::path& p, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(p, ec)) throw TrainError("--resume: '" + p.string() + "' is missing (" + what + ")");
  try {
    return SafetensorsFile::open(p);
  } catch (const LoadError& e) {
    throw TrainError(std::string("--resume: ") + e.what());
  }
}

std::string metadata(const SafetensorsFile& f, const std::string& key) {
  const auto it = f.metadata().find(key);
  if (it == f.metadata().end()) throw TrainError("--resume: " + f.label() + " has no \"" + key + "\" in its metadata");
  return it->second;
}

// Every tensor of the layout, with its shape, into values (prefix + name).
void read_tensors(const SafetensorsFile& f, const std::vector<ParamTensor>& layout, const std::string& prefix,
                  std::vector<float>& values) {
  values.assign(static_cast<std::size_t>(layout.back().offset + layout.back().numel()), 0.0f);
  for (const ParamTensor& t : layout) {
    const StTensor* st = f.find(prefix + t.name);
    if (!st)
      throw TrainError("--resume: " + f.label() + " has no tensor " + prefix + t.name +
                       " (the run's settings need it)");
    if (st->shape != t.shape)
      throw TrainError("--resume: " + f.label() + ": tensor " + prefix + t.name + " has shape " +
                       shape_list_string(st->shape) + ", the run's settings need " + shape_list_string(t.shape));
    try {
      f.read(*st, values.data() + t.offset);
    } catch (const LoadError& e) {
      throw TrainError(std::string("--resume: ") + e.what());
    }
  }
}

// config.json beside the model must describe the run's model.
void check_config(const fs::path& file, const json& expected) {
  std::error_code ec;
  if (!fs::exists(file, ec)) throw TrainError("--resume: '" + file.string() + "' is missing (the model's config.json)");
  const json j = json::parse(slurp(file), nullptr, false);
  if (!j.is_object()) throw TrainError("--resume: '" + file.string() + "' is not a JSON object");
  for (const auto& [key, value] : expected.items())
    if (key != "char_vocab" && (!j.contains(key) || j[key] != value))
      throw TrainError("--resume: " + file.string() + ": " + key + " is " +
                       (j.contains(key) ? j[key].dump() : "missing") + ", the run's settings say " + value.dump());
}

}  // namespace

void Trainer::save(const fs::path& model_file) const {
  if (model_file.extension() != ".safetensors")
    throw TrainError("-o: '" + model_file.string() + "' does not end in .safetensors");
  const fs::path folder = model_file.has_parent_path() ? model_file.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw TrainError("-o: '" + folder.string() + "' is not a folder");
  if (fs::is_directory(model_file, ec)) throw TrainError("-o: '" + model_file.string() + "' is a folder");
  const std::string step = std::to_string(opt_.step);
  try {
    // The state first and the model last: a resume checks that both hold the same step.
    const std::vector<float> zeros(opt_.exp_avg.empty() ? model_.params.size() : 0, 0.0f);
    std::vector<StWriteTensor> state =
        tensors_of(model_.layout, opt_.exp_avg.empty() ? zeros : opt_.exp_avg, "exp_avg.");
    const std::vector<StWriteTensor> sq =
        tensors_of(model_.layout, opt_.exp_avg.empty() ? zeros : opt_.exp_avg_sq, "exp_avg_sq.");
    state.insert(state.end(), sq.begin(), sq.end());
    write_safetensors_f32(optimizer_state_path(model_file), state,
                          {{"format", kStateFormat},
                           {"version", "1"},
                           {"step", step},
                           {"settings", settings_json(settings_).dump()},
                           {"text_hash", std::to_string(data_.text_hash)}});
    write_file_atomic((folder / "config.json").string(), model_config_json(settings_, data_).dump(2) + "\n");
    if (!settings_.tokenizer_path.empty()) copy_tokenizer(settings_.tokenizer_path, folder);
    write_safetensors_f32(model_file, tensors_of(model_.layout, model_.params, ""), {{"format", "pt"}, {"step", step}});
  } catch (const TrainError&) {
    throw;
  } catch (const std::exception& e) {
    throw TrainError("-o: cannot write '" + model_file.string() + "': " + e.what());
  }
}

Trainer Trainer::resume(const fs::path& model_file) {
  const fs::path state_file = optimizer_state_path(model_file);
  const SafetensorsFile state = open_run_file(state_file, "the optimizer state mhaviz train writes beside the model");
  const SafetensorsFile model = open_run_file(model_file, "the model to resume");
  if (metadata(state, "format") != kStateFormat)
    throw TrainError("--resume: " + state.label() + " is not a training state (format \"" + metadata(state, "format") +
                     "\")");
  const json sj = json::parse(metadata(state, "settings"), nullptr, false);
  if (!sj.is_object()) throw TrainError("--resume: " + state.label() + ": its settings are not JSON");
  Trainer t;
  t.settings_ = settings_from(sj, state.label());
  const std::string step = metadata(state, "step");
  if (metadata(model, "step") != step)
    throw TrainError("--resume: " + model.label() + " is at step " + metadata(model, "step") + " but " + state.label() +
                     " at step " + step + " (written by different runs)");
  t.data_ = t.settings_.task == TaskKind::Text
                ? text_task(t.settings_.text_path, t.settings_.tokenizer_path, t.settings_.model.context_length,
                            t.settings_.batch)
                : synthetic_task(t.settings_.task, t.settings_.model.vocab_size, t.settings_.model.context_length);
  if (std::to_string(t.data_.text_hash) != metadata(state, "text_hash"))
    throw TrainError("text: '" + t.settings_.text_path + "' has changed since the run began (its tokens differ)");
  validate_settings(t.settings_);
  const fs::path folder = model_file.has_parent_path() ? model_file.parent_path() : fs::path(".");
  check_config(folder / "config.json", model_config_json(t.settings_, t.data_));
  t.model_.config = t.settings_.model;
  t.model_.layout = parameter_layout(t.settings_.model);
  read_tensors(model, t.model_.layout, "", t.model_.params);
  t.ready();
  try {
    t.opt_.step = std::stoll(step);
  } catch (const std::exception&) {
    throw TrainError("--resume: " + state.label() + ": step \"" + step + "\" is not a number");
  }
  if (t.opt_.step > 0) {  // at step 0 torch has no state yet; neither do we
    read_tensors(state, t.model_.layout, "exp_avg.", t.opt_.exp_avg);
    read_tensors(state, t.model_.layout, "exp_avg_sq.", t.opt_.exp_avg_sq);
  }
  return t;
}

}  // namespace mhaviz::train
