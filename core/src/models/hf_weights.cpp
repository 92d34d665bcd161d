// HfWeights (hf_weights.hpp): the single file, or the index and its shards, opened and
// cross-checked in full before anything is read.
#include "mhaviz/hf_weights.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace mhaviz {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";
constexpr std::uintmax_t kMaxIndexBytes = 64u << 20;  // a 1000-shard index of a large model is a few MB

std::string name_of(std::string_view s) {
  std::string out = "\"";
  for (const char c : s.substr(0, 120)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return out + (s.size() > 120 ? "...\"" : "\"");
}

json read_index(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw LoadError(path.string() + ": cannot read its size (" + ec.message() + ")");
  if (size > kMaxIndexBytes)
    throw LoadError(path.string() + ": " + std::to_string(size) + " bytes is over the limit of " +
                    std::to_string(kMaxIndexBytes));
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) throw LoadError(path.string() + ": cannot be read");
  const std::string text = ss.str();
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    std::string what = e.what();
    const auto pos = what.find("] ");
    throw LoadError(path.string() + ": not valid JSON (" + (pos == std::string::npos ? what : what.substr(pos + 2)) +
                    ")");
  }
}

// A shard's name as the index gives it: a path inside the folder (no "..", not absolute).
bool inside_folder(const std::string& name) {
  if (name.empty()) return false;
  const fs::path p(name);
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

}  // namespace

HfWeights::HfWeights(HfWeights&&) noexcept = default;
HfWeights& HfWeights::operator=(HfWeights&&) noexcept = default;
HfWeights::~HfWeights() = default;

const HfTensor* HfWeights::find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const HfTensor& HfWeights::at(std::string_view name) const {
  if (const HfTensor* t = find(name)) return *t;
  throw LoadError(label_ + ": no tensor " + name_of(name));
}

HfWeights HfWeights::open(const fs::path& folder) {
  HfWeights w;
  w.label_ = folder.string();
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw LoadError(folder.string() + ": not a folder");
  // 1. One file: every tensor in it.
  if (fs::exists(folder / kSingle, ec)) {
    w.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(folder / kSingle)));
    for (const StTensor& t : w.files_.back()->tensors())
      w.tensors_.emplace(t.name, HfTensor{w.files_.back().get(), &t});
    return w;
  }
  const fs::path index_path = folder / kIndex;
  if (!fs::exists(index_path, ec)) throw LoadError(folder.string() + ": no " + kSingle + " and no " + kIndex);
  w.sharded_ = true;
  const std::string index_label = index_path.string();

  // 2. The index: tensor name -> shard file, every shard inside the folder.
  const json index = read_index(index_path);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw LoadError(index_label + ": has no \"weight_map\" object");
  const json& map = index["weight_map"];
  if (map.empty()) throw LoadError(index_label + ": weight_map is empty");
  std::map<std::string, std::size_t> shard_of_file;        // shard name -> index into files_
  std::map<std::string, std::size_t, std::less<>> placed;  // tensor name -> index into files_
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it.value().is_string())
      throw LoadError(index_label + ": weight_map[" + name_of(it.key()) + "] is " + it.value().dump() +
                      ", not a file name");
    const std::string shard = it.value().get<std::string>();
    if (!inside_folder(shard))
      throw LoadError(index_label + ": weight_map[" + name_of(it.key()) + "] is " + name_of(shard) +
                      ", which points outside the folder");
    auto [pos, fresh] = shard_of_file.emplace(shard, w.files_.size());
    if (fresh) {
      const fs::path path = folder / shard;
      if (!fs::is_regular_file(path, ec))
        throw LoadError(index_label + ": shard " + name_of(shard) + " (holding " + name_of(it.key()) +
                        ") does not exist");
      w.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(path)));
    }
    placed.emplace(it.key(), pos->second);
  }

  // 3. Each tensor where the index says, and nowhere else.
  for (const auto& [name, file] : placed) {
    const SafetensorsFile& f = *w.files_[file];
    const StTensor* t = f.find(name);
    if (!t) throw LoadError(index_label + ": puts " + name_of(name) + " in " + f.label() + ", which does not hold it");
    w.tensors_.emplace(name, HfTensor{&f, t});
  }
  for (const auto& file : w.files_)
    for (const StTensor& t : file->tensors()) {
      const auto it = placed.find(t.name);
      if (it == placed.end())
        throw LoadError(file->label() + ": holds " + name_of(t.name) + ", which " + kIndex + " does not name");
      if (w.files_[it->second].get() != file.get())
        throw LoadError(name_of(t.name) + " is in two shards: " + file->label() + " and " +
                        w.files_[it->second]->label());
    }
  return w;
}

}  // namespace mhaviz
