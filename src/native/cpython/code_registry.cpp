#define Py_BUILD_CORE 1
#include "code_registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "compat/interpreter.hpp"

namespace spyglass::cpython {

namespace {

// Encodes a str as UTF-8 by reading its code points in place. It allocates no Python
// object, so it cannot trigger a garbage collection, and with it a re-entrant code death,
// while the registry is being updated. Lone surrogates become U+FFFD.
std::string to_utf8(PyObject* s) {
  std::string out;
  if (s == nullptr || !PyUnicode_Check(s) || !compat::unicode_is_ready(s)) return out;
  const int kind = PyUnicode_KIND(s);
  const void* data = PyUnicode_DATA(s);
  const Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

std::string absolute(std::string path) {
  // Modules imported through a relative sys.path entry carry relative file names; the
  // profile keys files by absolute path. Pseudo-files like <string> stay as they are.
  if (path.empty() || path[0] == '/' || path[0] == '<') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  std::string base(cwd);
  if (path.rfind("./", 0) == 0) path.erase(0, 2);
  return base + "/" + path;
}

}  // namespace

uint32_t CodeRegistry::id_for(PyCodeObject* code) {
  auto [it, inserted] = live_.emplace(code, static_cast<uint32_t>(infos_.size()));
  if (inserted) {
    infos_.emplace_back();
    resolved_.push_back(false);
    retired_.push_back(0);
  }
  return it->second;
}

int32_t CodeRegistry::line_for(uint32_t id, PyCodeObject* code, int32_t instr_offset) {
  const uint64_t key = (static_cast<uint64_t>(id) << 32) | static_cast<uint32_t>(instr_offset);
  auto it = lines_.find(key);
  if (it != lines_.end()) return it->second;
  // A pure read of the code's line table: safe without the GIL while the code is alive.
  int32_t line = instr_offset < 0 ? code->co_firstlineno : PyCode_Addr2Line(code, instr_offset);
  // An instruction with no line of its own (-1), or a module's first, RESUME, which 3.11 on
  // put on line 0: the one instant a module's frame is on no line of its file.
  if (line <= 0) line = code->co_firstlineno;
  lines_.emplace(key, line);
  return line;
}

void CodeRegistry::resolve(uint32_t id, PyCodeObject* code) {
  if (resolved_[id]) return;
  CodeInfo& info = infos_[id];
  info.file = absolute(to_utf8(code->co_filename));
  if (info.file.empty()) info.file = "<unknown>";
  info.name = to_utf8(compat::qualified_name(code));
  info.first_lineno = code->co_firstlineno;
  resolved_[id] = true;
}

void CodeRegistry::retire(PyCodeObject* code) {
  auto it = live_.find(code);
  if (it == live_.end()) return;
  resolve(it->second, code);
  retired_[it->second] = 1;
  live_.erase(it);
}

void CodeRegistry::resolve_all() {
  for (const auto& [code, id] : live_) resolve(id, code);
}

void CodeRegistry::clear() {
  live_.clear();
  infos_.clear();
  resolved_.clear();
  retired_.clear();
  lines_.clear();
  std::fill(frames_.begin(), frames_.end(), FrameSlot{});
}

}  // namespace spyglass::cpython
