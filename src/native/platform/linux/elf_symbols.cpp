// Reading function symbols from an ELF file on disk (the half of native_symbols.hpp that
// knows the file format).
#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "../fault_guard.hpp"
#include "../native_symbols.hpp"

namespace spyglass::platform {

namespace {

// A read-only mapping of a whole file, unmapped when it goes.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const unsigned char*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  // An image already in memory (a copy of the vDSO), read in place, never unmapped.
  MappedFile(const void* image, size_t size)
      : data_(static_cast<const unsigned char*>(image)), size_(size), owned_(false) {}
  ~MappedFile() {
    if (data_ != nullptr && owned_) munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // `count` objects of T at `offset`, or null when they are not all inside the file.
  template <typename T>
  const T* at(uint64_t offset, uint64_t count = 1) const {
    if (data_ == nullptr || offset > size_ || count > (size_ - offset) / sizeof(T)) return nullptr;
    return reinterpret_cast<const T*>(data_ + offset);
  }
  size_t size() const { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  bool owned_ = true;
};

bool is_function(const Elf64_Sym& s) {
  const unsigned type = ELF64_ST_TYPE(s.st_info);
  return (type == STT_FUNC || type == STT_GNU_IFUNC) && s.st_shndx != SHN_UNDEF && s.st_value != 0;
}

// Of several names for one address (aliases), the one a reader knows: global before weak
// before local, then the shortest (libc's "__GI_memcpy" loses to "memcpy").
int rank(const Elf64_Sym& s) {
  switch (ELF64_ST_BIND(s.st_info)) {
    case STB_GLOBAL:
      return 0;
    case STB_WEAK:
      return 1;
    default:
      return 2;
  }
}

void read_table(const MappedFile& file, const Elf64_Shdr& table, const Elf64_Shdr* sections,
                uint16_t section_count, std::vector<ElfSymbol>* out) {
  if (table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= section_count) return;
  const Elf64_Shdr& strings = sections[table.sh_link];
  const auto* syms = file.at<Elf64_Sym>(table.sh_offset, table.sh_size / sizeof(Elf64_Sym));
  const char* names = file.at<char>(strings.sh_offset, strings.sh_size);
  if (syms == nullptr || names == nullptr) return;
  // Sorted as plain records, the names made only for the symbols kept: libpython has tens
  // of thousands, and sorting them with their strings cost a short process milliseconds.
  struct Found {
    uint64_t value;
    uint64_t size;
    uint32_t name;  // offset in the string table
    uint32_t length;
    int rank;
  };
  std::vector<Found> found;
  for (uint64_t i = 0; i < table.sh_size / sizeof(Elf64_Sym); ++i) {
    const Elf64_Sym& s = syms[i];
    if (!is_function(s) || s.st_name >= strings.sh_size) continue;
    const size_t length = strnlen(names + s.st_name, strings.sh_size - s.st_name);
    if (length == 0 || length > UINT32_MAX) continue;
    found.push_back(
        Found{s.st_value, s.st_size, s.st_name, static_cast<uint32_t>(length), rank(s)});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.value != b.value) return a.value < b.value;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.length < b.length;
  });
  for (const Found& f : found) {
    if (!out->empty() && out->back().value == f.value) continue;
    out->push_back(ElfSymbol{f.value, f.size, std::string(names + f.name, f.length)});
  }
}

// A value of the unwind index's pointer encodings (DWARF DW_EH_PE_*) we read: the size of
// its format, 0 for one we do not read.
size_t encoded_size(uint8_t encoding) {
  switch (encoding & 0x0f) {
    case 0x03:  // udata4
    case 0x0b:  // sdata4
      return 4;
    case 0x00:  // absptr
    case 0x04:  // udata8
    case 0x0c:  // sdata8
      return 8;
    default:
      return 0;
  }
}

constexpr uint8_t kDatarelSdata4 = 0x3b;  // what linkers write for the index's table

}  // namespace

std::vector<uint64_t> read_function_starts(const std::string& path) {
  std::vector<uint64_t> out;
  const MappedFile file(path);
  const auto* eh = file.at<Elf64_Ehdr>(0);
  if (eh == nullptr || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr)) {
    return out;
  }
  // The program header, not the section: it survives any stripping.
  const auto* phdrs = file.at<Elf64_Phdr>(eh->e_phoff, eh->e_phnum);
  if (phdrs == nullptr) return out;
  const Elf64_Phdr* index = nullptr;
  for (uint16_t i = 0; i < eh->e_phnum; ++i) {
    if (phdrs[i].p_type == PT_GNU_EH_FRAME) index = &phdrs[i];
  }
  if (index == nullptr) return out;
  const auto* head = file.at<uint8_t>(index->p_offset, 4);
  if (head == nullptr || head[0] != 1 || head[3] != kDatarelSdata4) return out;
  const size_t frame_ptr = encoded_size(head[1]);
  const size_t count_size = encoded_size(head[2]);
  if (frame_ptr == 0 || count_size == 0) return out;
  const uint64_t count_at = index->p_offset + 4 + frame_ptr;
  uint64_t count = 0;
  const auto* raw_count = file.at<uint8_t>(count_at, count_size);
  if (raw_count == nullptr) return out;
  std::memcpy(&count, raw_count, count_size);  // little-endian: x86-64 and aarch64 Linux
  const auto* table = file.at<int32_t>(count_at + count_size, count * 2);
  if (table == nullptr) return out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    // Each entry: (function start, its unwind entry), relative to the index itself.
    out.push_back(index->p_vaddr + static_cast<uint64_t>(static_cast<int64_t>(table[2 * i])));
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The CRC-32 that .gnu_debuglink records of its debug file (the zlib/IEEE polynomial).
uint32_t crc32_of(const unsigned char* data, size_t size) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

const Elf64_Ehdr* elf_header(const MappedFile& file) {
  const auto* eh = file.at<Elf64_Ehdr>(0);
  if (eh == nullptr || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr)) {
    return nullptr;
  }
  return eh;
}

const Elf64_Shdr* section_named(const MappedFile& file, const Elf64_Ehdr& eh,
                                const Elf64_Shdr* sections, const char* name) {
  if (eh.e_shstrndx >= eh.e_shnum) return nullptr;
  const Elf64_Shdr& names = sections[eh.e_shstrndx];
  const char* text = file.at<char>(names.sh_offset, names.sh_size);
  if (text == nullptr) return nullptr;
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    const uint32_t at = sections[i].sh_name;
    if (at < names.sh_size && strncmp(text + at, name, names.sh_size - at) == 0) {
      return &sections[i];
    }
  }
  return nullptr;
}

bool readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

// Where a stripped object's separate debug file is, by its build id or its .gnu_debuglink,
// in the places gdb and the distributions use; "" when none is installed.
std::string debug_file_for(const MappedFile& file, const Elf64_Ehdr& eh, const Elf64_Shdr* sections,
                           const std::string& path) {
  if (const Elf64_Shdr* note = section_named(file, eh, sections, ".note.gnu.build-id")) {
    const auto* head = file.at<uint32_t>(note->sh_offset, 3);  // namesz, descsz, type
    if (head != nullptr && head[0] == 4 && head[2] == NT_GNU_BUILD_ID && head[1] >= 2) {
      const auto* id = file.at<unsigned char>(note->sh_offset + 12 + 4, head[1]);
      if (id != nullptr) {
        static const char* hex = "0123456789abcdef";
        std::string name = "/usr/lib/debug/.build-id/";
        for (uint32_t i = 0; i < head[1]; ++i) {
          if (i == 1) name += '/';
          name += hex[id[i] >> 4];
          name += hex[id[i] & 15];
        }
        name += ".debug";
        if (readable(name)) return name;
      }
    }
  }
  const Elf64_Shdr* link = section_named(file, eh, sections, ".gnu_debuglink");
  if (link == nullptr || link->sh_size < 8) return {};
  const char* text = file.at<char>(link->sh_offset, link->sh_size);
  if (text == nullptr) return {};
  const size_t length = strnlen(text, link->sh_size);
  const std::string name(text, length);
  const uint64_t crc_at = link->sh_offset + ((length + 4) & ~uint64_t{3});
  const auto* crc = file.at<uint32_t>(crc_at);
  if (name.empty() || name.find('/') != std::string::npos || crc == nullptr) return {};
  char real[PATH_MAX];
  const std::string resolved = realpath(path.c_str(), real) != nullptr ? real : path;
  const size_t slash = resolved.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : resolved.substr(0, slash);
  for (const std::string& candidate :
       {dir + "/" + name, dir + "/.debug/" + name, "/usr/lib/debug" + dir + "/" + name}) {
    if (candidate == resolved || !readable(candidate)) continue;
    const MappedFile debug(candidate);
    const auto* bytes = debug.at<unsigned char>(0, debug.size());
    if (bytes != nullptr && crc32_of(bytes, debug.size()) == *crc) return candidate;
  }
  return {};
}

std::vector<ElfSymbol> read_tables(const MappedFile& file, const Elf64_Ehdr& eh,
                                   const Elf64_Shdr* sections, bool symtab_only,
                                   bool* from_symtab) {
  std::vector<ElfSymbol> out;
  for (uint32_t want : {SHT_SYMTAB, SHT_DYNSYM}) {
    if (symtab_only && want == SHT_DYNSYM) break;
    for (uint16_t i = 0; i < eh.e_shnum; ++i) {
      if (sections[i].sh_type == want) read_table(file, sections[i], sections, eh.e_shnum, &out);
    }
    if (!out.empty()) {
      if (from_symtab != nullptr) *from_symtab = want == SHT_SYMTAB;
      break;
    }
  }
  return out;
}

// The stubs of the procedure linkage table, through which an object calls functions of
// other objects (and, in a library built without -fno-semantic-interposition, its own
// exported ones): "name@plt" for each, as perf names them. No symbol covers them, and the
// one just below (_init, which has no size) took their time: 1 to 3 % of libpython's.
void add_plt_stubs(const MappedFile& file, const Elf64_Ehdr& eh, const Elf64_Shdr* sections,
                   std::vector<ElfSymbol>* out) {
  const Elf64_Shdr* relocs = section_named(file, eh, sections, ".rela.plt");
  const Elf64_Shdr* dynsym =
      relocs != nullptr && relocs->sh_link < eh.e_shnum ? &sections[relocs->sh_link] : nullptr;
  const Elf64_Rela* rela = nullptr;
  const Elf64_Sym* syms = nullptr;
  const char* names = nullptr;
  uint64_t rela_count = 0;
  uint64_t sym_count = 0;
  uint64_t names_size = 0;
  if (dynsym != nullptr && relocs->sh_entsize == sizeof(Elf64_Rela) &&
      dynsym->sh_entsize == sizeof(Elf64_Sym) && dynsym->sh_link < eh.e_shnum) {
    rela_count = relocs->sh_size / sizeof(Elf64_Rela);
    sym_count = dynsym->sh_size / sizeof(Elf64_Sym);
    const Elf64_Shdr& strings = sections[dynsym->sh_link];
    rela = file.at<Elf64_Rela>(relocs->sh_offset, rela_count);
    syms = file.at<Elf64_Sym>(dynsym->sh_offset, sym_count);
    names = file.at<char>(strings.sh_offset, strings.sh_size);
    names_size = strings.sh_size;
  }
  // The k-th relocation's stub: in .plt.sec where there is one (IBT), else in .plt after
  // its first entry (which calls the resolver).
  const Elf64_Shdr* second = section_named(file, eh, sections, ".plt.sec");
  const Elf64_Shdr* plt = section_named(file, eh, sections, ".plt");
  const Elf64_Shdr* stubs = second != nullptr ? second : plt;
  const uint64_t first = second != nullptr ? 0 : 1;
  constexpr uint64_t kStub = 16;
  std::vector<ElfSymbol> added;
  // x86-64's layout: a 16-byte first entry and 16-byte stubs (AArch64's differ, and with
  // BTI vary): elsewhere the table is named whole.
  if (eh.e_machine == EM_X86_64 && stubs != nullptr && rela != nullptr && syms != nullptr &&
      names != nullptr) {
    for (uint64_t k = 0; k < rela_count; ++k) {
      const uint64_t at = stubs->sh_addr + (k + first) * kStub;
      if (at + kStub > stubs->sh_addr + stubs->sh_size) break;
      const uint64_t index = ELF64_R_SYM(rela[k].r_info);
      if (index == 0 || index >= sym_count || syms[index].st_name >= names_size) continue;
      const char* name = names + syms[index].st_name;
      const size_t length = strnlen(name, names_size - syms[index].st_name);
      if (length == 0) continue;
      added.push_back(ElfSymbol{at, kStub, std::string(name, length) + "@plt"});
    }
  }
  // What is left of each table: one name for all of it.
  for (const char* name : {".plt", ".plt.sec", ".plt.got"}) {
    if (const Elf64_Shdr* s = section_named(file, eh, sections, name)) {
      if (s->sh_size != 0 && (s->sh_flags & SHF_EXECINSTR)) {
        added.push_back(ElfSymbol{s->sh_addr, s->sh_size, "[plt]"});
      }
    }
  }
  if (added.empty()) return;
  // A stub's own entry comes before its section's at the same address (the first stub of
  // .plt.sec): sorted by address, then by size, the smaller first.
  out->insert(out->end(), added.begin(), added.end());
  std::stable_sort(out->begin(), out->end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    return a.value != b.value ? a.value < b.value : a.size < b.size;
  });
  out->erase(std::unique(out->begin(), out->end(),
                         [](const ElfSymbol& a, const ElfSymbol& b) { return a.value == b.value; }),
             out->end());
}

}  // namespace

std::vector<ElfSymbol> read_elf_functions(const std::string& path, bool* from_symtab) {
  if (from_symtab != nullptr) *from_symtab = false;
  const MappedFile file(path);
  const Elf64_Ehdr* eh = elf_header(file);
  if (eh == nullptr) return {};
  const auto* sections = file.at<Elf64_Shdr>(eh->e_shoff, eh->e_shnum);
  if (sections == nullptr) return {};
  bool full = false;
  std::vector<ElfSymbol> out = read_tables(file, *eh, sections, false, &full);
  if (!full) {
    // Stripped: the full table may be in a separate debug file, at the same addresses.
    const std::string debug_path = debug_file_for(file, *eh, sections, path);
    if (!debug_path.empty()) {
      const MappedFile debug(debug_path);
      const Elf64_Ehdr* deh = elf_header(debug);
      const auto* dsections =
          deh != nullptr ? debug.at<Elf64_Shdr>(deh->e_shoff, deh->e_shnum) : nullptr;
      if (dsections != nullptr) {
        std::vector<ElfSymbol> found = read_tables(debug, *deh, dsections, true, &full);
        if (!found.empty()) out = std::move(found);
      }
    }
  }
  add_plt_stubs(file, *eh, sections, &out);
  if (from_symtab != nullptr) *from_symtab = full;
  return out;
}

std::vector<ElfSymbol> read_vdso_functions() {
  // The kernel's vDSO has no file: its ELF image, section headers last, is copied from
  // where it is mapped. Its size is not in the header; the end of the section header table
  // bounds every section of it. Copied, not read in place: were the section headers not
  // mapped (a kernel that leaves them out), the copy fails where a read would fault.
  const auto base = static_cast<uintptr_t>(getauxval(AT_SYSINFO_EHDR));
  if (base == 0) return {};
  const pid_t self = getpid();
  Elf64_Ehdr copy{};
  if (!read_own_memory(self, reinterpret_cast<const void*>(base), &copy, sizeof(copy))) return {};
  const MappedFile header(&copy, sizeof(copy));
  const Elf64_Ehdr* eh = elf_header(header);
  if (eh == nullptr) return {};
  const uint64_t size = eh->e_shoff + uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr);
  if (size > (uint64_t{1} << 20)) return {};  // not a vDSO as we know them
  std::vector<unsigned char> bytes(size);
  if (!read_own_memory(self, reinterpret_cast<const void*>(base), bytes.data(), size)) return {};
  const MappedFile image(bytes.data(), size);
  const auto* sections = image.at<Elf64_Shdr>(eh->e_shoff, eh->e_shnum);
  if (sections == nullptr) return {};
  return read_tables(image, *eh, sections, false, nullptr);
}

const ElfSymbol* nearest_symbol(const std::vector<ElfSymbol>& symbols, uint64_t relative) {
  auto it = std::upper_bound(symbols.begin(), symbols.end(), relative,
                             [](uint64_t v, const ElfSymbol& s) { return v < s.value; });
  if (it == symbols.begin()) return nullptr;
  --it;
  // A sized symbol ends where it says; hand-written assembly often has no size, and then
  // the nearest symbol below is the best guess there is.
  if (it->size != 0 && relative >= it->value + it->size) return nullptr;
  return &*it;
}

std::string demangle(const std::string& symbol) {
  if (symbol.size() < 2 || symbol[0] != '_' || symbol[1] != 'Z') return symbol;
  int status = 0;
  char* plain = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  if (plain == nullptr || status != 0) {
    std::free(plain);
    return symbol;
  }
  std::string out(plain);
  std::free(plain);
  return out;
}

}  // namespace spyglass::platform
