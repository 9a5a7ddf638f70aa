// Compiling DWARF call frame information (.eh_frame) into register + offset rows. Runs on
// the collector's upkeep thread only; reads the loaded objects' own mapped `.eh_frame`, which the
// loader keeps for as long as the object is loaded.
#include <algorithm>
#include <cstring>
#include <new>
#include <unordered_map>

#include "../unwind_tables.hpp"

namespace spyglass::platform {

namespace {

// DWARF register numbers on x86-64.
constexpr uint64_t kRegFp = 6;
constexpr uint64_t kRegSp = 7;

// A bounded reader: every read past the end sets `bad` and yields zero.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool bad = false;

  bool more() const { return p < end && !bad; }
  template <typename T>
  T fixed() {
    if (bad || static_cast<size_t>(end - p) < sizeof(T)) {
      bad = true;
      return T{};
    }
    T v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  uint8_t u8() { return fixed<uint8_t>(); }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = u8();
      if (bad) return 0;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    bad = true;
    return 0;
  }
  int64_t sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    do {
      b = u8();
      if (bad) return 0;
      v |= static_cast<int64_t>(b & 0x7f) << shift;
      shift += 7;
    } while ((b & 0x80) != 0 && shift < 64);
    if (shift < 64 && (b & 0x40) != 0) v |= -(int64_t{1} << shift);
    return v;
  }
  // A pointer in the DW_EH_PE encoding `enc`; `datarel` is the base of datarel pointers.
  uintptr_t pointer(uint8_t enc, uintptr_t datarel = 0) {
    if (enc == 0xff) return 0;  // DW_EH_PE_omit
    const auto here = reinterpret_cast<uintptr_t>(p);
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00:
        v = fixed<uint64_t>();
        break;
      case 0x01:
        v = uleb();
        break;
      case 0x02:
        v = fixed<uint16_t>();
        break;
      case 0x03:
        v = fixed<uint32_t>();
        break;
      case 0x04:
        v = fixed<uint64_t>();
        break;
      case 0x09:
        v = static_cast<uint64_t>(sleb());
        break;
      case 0x0a:
        v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int16_t>()));
        break;
      case 0x0b:
        v = static_cast<uint64_t>(static_cast<int64_t>(fixed<int32_t>()));
        break;
      case 0x0c:
        v = static_cast<uint64_t>(fixed<int64_t>());
        break;
      default:
        bad = true;
        return 0;
    }
    switch (enc & 0x70) {
      case 0x00:
        break;
      case 0x10:
        v += here;
        break;  // pcrel
      case 0x30:
        v += datarel;
        break;  // datarel
      default:
        bad = true;
        return 0;  // textrel, funcrel, aligned: not met in .eh_frame
    }
    return static_cast<uintptr_t>(v);
  }
};

struct State {
  CfaRule rule = CfaRule::kUnknown;
  int64_t cfa_offset = 0;
  int64_t fp_offset = 0;  // 0: unchanged
  bool fp_unknown = false;
  bool ra_ok = true;  // the return address is at CFA - 8

  CfiRow row(uintptr_t at) const {
    CfiRow r;
    r.begin = at;
    const bool fits = cfa_offset >= INT32_MIN && cfa_offset <= INT32_MAX &&
                      fp_offset >= INT16_MIN && fp_offset <= INT16_MAX;
    if (!fits || fp_unknown || !ra_ok) return r;
    r.rule = rule;
    r.cfa_offset = static_cast<int32_t>(cfa_offset);
    r.fp_offset = static_cast<int16_t>(fp_offset);
    return r;
  }
};

// Runs one instruction list. `initial` is the CIE's state (for DW_CFA_restore); rows are
// appended as the location advances. False on an instruction it cannot read.
bool run(const CfiProgram& prog, const uint8_t* code, size_t size, State* st, const State& initial,
         uintptr_t* loc, CfiRows* rows) {
  Reader r{code, code + size};
  std::vector<State> remembered;
  auto advance = [&](uint64_t delta) {
    const uintptr_t next = *loc + delta * prog.code_align;
    if (next > *loc && rows != nullptr) rows->push_back(st->row(*loc));
    *loc = next;
  };
  auto set_reg = [&](uint64_t reg, bool known, int64_t offset) {
    if (reg == kRegFp) {
      st->fp_unknown = !known;
      st->fp_offset = known ? offset : 0;
    } else if (reg == prog.return_register) {
      st->ra_ok = known && offset == -8;
    }
  };
  auto restore = [&](uint64_t reg) {
    if (reg == kRegFp) {
      st->fp_offset = initial.fp_offset;
      st->fp_unknown = initial.fp_unknown;
    } else if (reg == prog.return_register) {
      st->ra_ok = initial.ra_ok;
    }
  };
  auto def_cfa = [&](uint64_t reg, int64_t offset) {
    st->rule = reg == kRegSp ? CfaRule::kSp : reg == kRegFp ? CfaRule::kFp : CfaRule::kUnknown;
    st->cfa_offset = offset;
  };
  const auto data = [&](int64_t factored) { return factored * prog.data_align; };
  while (r.more()) {
    const uint8_t op = r.u8();
    const uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1:
        advance(low);
        continue;  // advance_loc
      case 2:
        set_reg(low, true, data(static_cast<int64_t>(r.uleb())));
        continue;  // offset
      case 3:
        restore(low);
        continue;  // restore
      default:
        break;
    }
    switch (op) {
      case 0x00:
        break;  // nop
      case 0x01:
        *loc = r.pointer(0x00);
        break;  // set_loc (absptr)
      case 0x02:
        advance(r.u8());
        break;  // advance_loc1
      case 0x03:
        advance(r.fixed<uint16_t>());
        break;  // advance_loc2
      case 0x04:
        advance(r.fixed<uint32_t>());
        break;      // advance_loc4
      case 0x05: {  // offset_extended
        const uint64_t reg = r.uleb();
        set_reg(reg, true, data(static_cast<int64_t>(r.uleb())));
        break;
      }
      case 0x06:
        restore(r.uleb());
        break;  // restore_extended
      case 0x07:
        set_reg(r.uleb(), false, 0);
        break;      // undefined
      case 0x08: {  // same_value
        const uint64_t reg = r.uleb();
        if (reg == kRegFp) {
          st->fp_offset = 0;
          st->fp_unknown = false;
        } else if (reg == prog.return_register) {
          st->ra_ok = false;
        }
        break;
      }
      case 0x09: {  // register: a value kept in another register, which we do not track
        const uint64_t reg = r.uleb();
        (void)r.uleb();
        set_reg(reg, false, 0);
        break;
      }
      case 0x0a:
        remembered.push_back(*st);
        break;    // remember_state
      case 0x0b:  // restore_state
        if (remembered.empty()) return false;
        *st = remembered.back();
        remembered.pop_back();
        break;
      case 0x0c: {  // def_cfa
        const uint64_t reg = r.uleb();
        def_cfa(reg, static_cast<int64_t>(r.uleb()));
        break;
      }
      case 0x0d:
        def_cfa(r.uleb(), st->cfa_offset);
        break;  // def_cfa_register
      case 0x0e:
        st->cfa_offset = static_cast<int64_t>(r.uleb());
        break;      // def_cfa_offset
      case 0x0f: {  // def_cfa_expression
        r.p += std::min<uint64_t>(r.uleb(), static_cast<uint64_t>(r.end - r.p));
        st->rule = CfaRule::kUnknown;
        break;
      }
      case 0x10:    // expression
      case 0x16: {  // val_expression
        const uint64_t reg = r.uleb();
        r.p += std::min<uint64_t>(r.uleb(), static_cast<uint64_t>(r.end - r.p));
        set_reg(reg, false, 0);
        break;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = r.uleb();
        set_reg(reg, true, data(r.sleb()));
        break;
      }
      case 0x12: {  // def_cfa_sf
        const uint64_t reg = r.uleb();
        def_cfa(reg, data(r.sleb()));
        break;
      }
      case 0x13:
        st->cfa_offset = data(r.sleb());
        break;      // def_cfa_offset_sf
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = r.uleb();
        if (op == 0x14) {
          (void)r.uleb();
        } else {
          (void)r.sleb();
        }
        set_reg(reg, false, 0);
        break;
      }
      case 0x2e:
        (void)r.uleb();
        break;      // GNU_args_size
      case 0x2f: {  // GNU_negative_offset_extended
        const uint64_t reg = r.uleb();
        set_reg(reg, true, -data(static_cast<int64_t>(r.uleb())));
        break;
      }
      default:
        return false;
    }
  }
  return !r.bad;
}

struct Cie {
  bool ok = false;
  CfiProgram base;  // code/data alignment, return register, initial instructions
  uint8_t fde_encoding = 0x00;
  bool has_augmentation_data = false;
};

// A length-prefixed record at `p`: its contents' bounds, or false.
bool record(const uint8_t* p, const uint8_t** body, const uint8_t** end) {
  uint32_t len32 = 0;
  std::memcpy(&len32, p, 4);
  if (len32 == 0) return false;
  if (len32 == 0xffffffffu) {
    uint64_t len64 = 0;
    std::memcpy(&len64, p + 4, 8);
    *body = p + 12;
    *end = *body + len64;
  } else {
    *body = p + 4;
    *end = *body + len32;
  }
  return true;
}

Cie parse_cie(const uint8_t* at) {
  Cie cie;
  const uint8_t* body = nullptr;
  const uint8_t* end = nullptr;
  if (!record(at, &body, &end)) return cie;
  Reader r{body, end};
  if (r.fixed<uint32_t>() != 0) return cie;  // not a CIE
  const uint8_t version = r.u8();
  const char* aug = reinterpret_cast<const char*>(r.p);
  const size_t aug_len = strnlen(aug, static_cast<size_t>(r.end - r.p));
  r.p += aug_len + 1;
  if (aug_len >= 2 && aug[0] == 'e' && aug[1] == 'h') (void)r.fixed<uint64_t>();
  cie.base.code_align = r.uleb();
  cie.base.data_align = r.sleb();
  cie.base.return_register = version == 1 ? r.u8() : r.uleb();
  if (aug_len > 0 && aug[0] == 'z') {
    const uint64_t len = r.uleb();
    const uint8_t* after = r.p + len;
    for (size_t i = 1; i < aug_len && !r.bad; ++i) {
      switch (aug[i]) {
        case 'R':
          cie.fde_encoding = r.u8();
          break;
        case 'P': {
          const uint8_t enc = r.u8();
          (void)r.pointer(enc & 0x7f);
          break;
        }
        case 'L':
          (void)r.u8();
          break;
        case 'S':
        case 'B':
          break;
        default:
          r.bad = true;
          break;
      }
    }
    r.p = after;
    cie.has_augmentation_data = true;
  }
  if (r.bad || r.p > end) return cie;
  cie.base.cie_instructions = r.p;
  cie.base.cie_size = static_cast<size_t>(end - r.p);
  cie.ok = true;
  return cie;
}

}  // namespace

bool compile_cfi(const CfiProgram& program, CfiRows* rows) {
  State st;
  uintptr_t loc = program.pc_begin;
  if (!run(program, program.cie_instructions, program.cie_size, &st, st, &loc, nullptr)) {
    return false;
  }
  const State initial = st;
  loc = program.pc_begin;
  // Appended in place (a function has a handful of rows, a library thousands of
  // functions), and taken back if the program cannot be read to its end.
  const size_t before = rows->size();
  if (!run(program, program.fde_instructions, program.fde_size, &st, initial, &loc, rows)) {
    rows->resize(before);
    return false;
  }
  if (loc < program.pc_end) rows->push_back(st.row(loc));
  rows->push_back(CfiRow{program.pc_end, 0, 0, CfaRule::kNoInfo});
  return true;
}

CfiRows compile_loaded_eh_frame(const uint8_t* hdr, const std::atomic<bool>* cancel) {
  CfiRows rows;
  if (hdr == nullptr || hdr[0] != 1) return rows;
  const uint8_t frame_enc = hdr[1];
  const uint8_t count_enc = hdr[2];
  const uint8_t table_enc = hdr[3];
  Reader r{hdr + 4, hdr + 4 + 64};
  (void)r.pointer(frame_enc);
  const uint64_t count = r.pointer(count_enc);
  // The binary search table: (initial location, FDE address) pairs, datarel from the header.
  if (r.bad || table_enc != 0x3b || count == 0 || count > (1u << 24)) return rows;
  const auto base = reinterpret_cast<uintptr_t>(hdr);
  const uint8_t* table = r.p;
  std::unordered_map<const uint8_t*, Cie> cies;
  // Room for more rows a function than any object has: pages of it never written are never
  // resident (page_allocator.hpp), and the rows are never copied as they grow. Refused
  // (a limit on the address space), the object goes without a table: this runs inside
  // the loader's iteration, which an exception must not leave.
  try {
    rows.reserve(std::min<uint64_t>(count, uint64_t{1} << 20) * 16);
  } catch (const std::bad_alloc&) {
    return {};
  }
  constexpr uint64_t kCancelCheckEvery = 256;
  for (uint64_t i = 0; i < count; ++i) {
    if (cancel != nullptr && i % kCancelCheckEvery == 0 &&
        cancel->load(std::memory_order_relaxed)) {
      return {};
    }
    int32_t fde_rel = 0;
    std::memcpy(&fde_rel, table + i * 8 + 4, 4);
    const auto* fde = reinterpret_cast<const uint8_t*>(base + static_cast<intptr_t>(fde_rel));
    const uint8_t* body = nullptr;
    const uint8_t* end = nullptr;
    if (!record(fde, &body, &end)) continue;
    Reader f{body, end};
    const uint32_t cie_delta = f.fixed<uint32_t>();
    if (cie_delta == 0) continue;
    const uint8_t* cie_at = body - cie_delta;
    auto it = cies.find(cie_at);
    if (it == cies.end()) it = cies.emplace(cie_at, parse_cie(cie_at)).first;
    const Cie& cie = it->second;
    if (!cie.ok) continue;
    CfiProgram prog = cie.base;
    prog.pc_begin = f.pointer(cie.fde_encoding);
    prog.pc_end = prog.pc_begin + f.pointer(cie.fde_encoding & 0x0f);
    if (cie.has_augmentation_data) f.p += f.uleb();
    if (f.bad || f.p > end || prog.pc_end <= prog.pc_begin) continue;
    prog.fde_instructions = f.p;
    prog.fde_size = static_cast<size_t>(end - f.p);
    try {
      (void)compile_cfi(prog, &rows);
    } catch (const std::bad_alloc&) {
      return {};
    }
  }
  // Sorted by address; at one address a function's first row wins over the previous
  // function's closing kNoInfo row. The header's table lists functions by address, so the
  // rows come sorted unless functions overlap: the sort is then skipped.
  const auto by_address = [](const CfiRow& a, const CfiRow& b) { return a.begin < b.begin; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_address)) {
    std::stable_sort(rows.begin(), rows.end(), by_address);
  }
  // Compacted in place, before the one copy that fits them to their size.
  size_t kept = 0;
  for (const CfiRow& row : rows) {
    if (kept > 0 && rows[kept - 1].begin == row.begin) {
      const auto has_rule = [](const CfiRow& candidate) {
        return candidate.rule == CfaRule::kSp || candidate.rule == CfaRule::kFp;
      };
      if (has_rule(row) || !has_rule(rows[kept - 1])) rows[kept - 1] = row;
      continue;
    }
    if (kept > 0 && rows[kept - 1].rule == row.rule &&
        rows[kept - 1].cfa_offset == row.cfa_offset && rows[kept - 1].fp_offset == row.fp_offset) {
      continue;  // the same rule goes on
    }
    rows[kept++] = row;
  }
  rows.resize(kept);
  try {
    rows.shrink_to_fit();  // a copy of the rows kept, the reserve given back
  } catch (const std::bad_alloc&) {
    // kept as they are: the unwritten part of the reserve is not resident
  }
  return rows;
}

}  // namespace spyglass::platform
