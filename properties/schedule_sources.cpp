// Every built-in coefficient schedule against the source it cites.
//
// fixtures/schedules/emerging_optimizers_muon_utils.py holds Emerging-Optimizers' coefficient
// table and its iteration-mode rule verbatim. This file parses that Python text with a tokenizer
// of its own (nothing shared with lib/src/coeffs.cpp) and checks, for every set it ships: that a
// built-in schedule carries it under its name, triple for triple and bit for bit (the decimal
// text is read by strtod, as the compiler reads the C++ literals), that the built-in steps beyond
// the last triple follow its mode (cycle or repeat_last) for three times the set's length, that
// the record's cited line range starts at the set's entry, that the record says "safety factor
// applied" exactly where the source's comment says so, and "fixed steps" exactly where the source
// refuses other step counts. A typo in a coefficient, a wrong
// mode or a wrong citation fails here.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nsv/coeffs.hpp"

namespace nsv::checks {
namespace {

const std::filesystem::path kFixture =
    std::filesystem::path(NSV_FIXTURES_DIR) / "schedules" / "emerging_optimizers_muon_utils.py";

// The fixture's lines keyed by their line number in the source file ("# nsverify: source line N"
// starts a block whose first line is line N).
std::map<int, std::string> source_lines() {
  std::ifstream in(kFixture);
  if (!in) throw std::runtime_error("cannot open " + kFixture.string());
  std::map<int, std::string> lines;
  const std::string marker = "# nsverify: source line ";
  int next = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(marker, 0) == 0)
      next = std::stoi(line.substr(marker.size()));
    else if (next > 0)
      lines[next++] = line;
  }
  return lines;
}

// Tokens of a Python expression: string literals (without quotes), numbers (their text),
// single punctuation characters; comments dropped.
struct Token {
  enum Kind { string, number, punct } kind;
  std::string text;
};

std::vector<Token> tokenize(const std::string& text) {
  std::vector<Token> out;
  for (std::size_t i = 0; i < text.size();) {
    const char ch = text[i];
    if (ch == '#') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      ++i;
    } else if (ch == '"') {
      const std::size_t end = text.find('"', i + 1);
      out.push_back({Token::string, text.substr(i + 1, end - i - 1)});
      i = end + 1;
    } else if (std::isdigit(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') {
      std::size_t j = i + 1;
      while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.' || text[j] == 'e'))
        ++j;
      out.push_back({Token::number, text.substr(i, j - i)});
      i = j;
    } else {
      out.push_back({Token::punct, std::string(1, ch)});
      ++i;
    }
  }
  return out;
}

// A recursive-descent reader of the table's grammar:
//   table  := '{' (string ':' list (',')?)* '}'
//   list   := term ('+' term)*
//   term   := '[' (tuple (',')?)* ']' ('*' number)?
//   tuple  := '(' number ',' number ',' number ')'
class TableReader {
 public:
  explicit TableReader(std::vector<Token> t) : t_(std::move(t)) {}

  std::map<std::string, std::vector<Coeffs>> table() {
    expect("{");
    std::map<std::string, std::vector<Coeffs>> sets;
    while (!at("}")) {
      const std::string name = take(Token::string);
      expect(":");
      sets[name] = list();
      if (at(",")) ++pos_;
    }
    return sets;
  }

 private:
  std::vector<Coeffs> list() {
    std::vector<Coeffs> all = term();
    while (at("+")) {
      ++pos_;
      const std::vector<Coeffs> more = term();
      all.insert(all.end(), more.begin(), more.end());
    }
    return all;
  }
  std::vector<Coeffs> term() {
    expect("[");
    std::vector<Coeffs> one;
    while (!at("]")) {
      one.push_back(tuple());
      if (at(",")) ++pos_;
    }
    expect("]");
    if (!at("*")) return one;
    ++pos_;
    const int times = std::stoi(take(Token::number));
    std::vector<Coeffs> repeated;
    for (int i = 0; i < times; ++i) repeated.insert(repeated.end(), one.begin(), one.end());
    return repeated;
  }
  Coeffs tuple() {
    expect("(");
    const double a = number();
    expect(",");
    const double b = number();
    expect(",");
    const double c = number();
    expect(")");
    return {a, b, c};
  }
  double number() { return std::strtod(take(Token::number).c_str(), nullptr); }
  bool at(const std::string& p) const { return pos_ < t_.size() && t_[pos_].kind == Token::punct && t_[pos_].text == p; }
  void expect(const std::string& p) {
    if (!at(p)) throw std::runtime_error(kFixture.string() + ": expected '" + p + "' at token " + std::to_string(pos_));
    ++pos_;
  }
  std::string take(Token::Kind kind) {
    if (pos_ >= t_.size() || t_[pos_].kind != kind)
      throw std::runtime_error(kFixture.string() + ": unexpected token " + std::to_string(pos_));
    return t_[pos_++].text;
  }

  std::vector<Token> t_;
  std::size_t pos_ = 0;
};

struct Source {
  std::map<int, std::string> lines;
  std::map<std::string, std::vector<Coeffs>> sets;
  std::vector<std::string> repeat_last_types;
  std::map<std::string, int> first_line;  // each set's entry line
  std::map<std::string, bool> fixed_length;  // sets run at exactly their length (others refused)
};

Source read_source() {
  Source s;
  s.lines = source_lines();
  std::string table;
  bool in_table = false;
  for (const auto& [number, line] : s.lines) {
    if (line.rfind("_COEFFICIENT_SETS = {", 0) == 0) in_table = true;
    if (in_table) table += (table.empty() ? line.substr(line.find('{')) : line) + "\n";
    if (in_table && line == "}") in_table = false;
    if (const auto q = line.find("    \""); q == 0 && line.find("\":") != std::string::npos)
      s.first_line[line.substr(5, line.find('"', 5) - 5)] = number;
    // `if coefficient_type == "NAME" and steps != len(coefficient_sets):` raises ValueError
    const std::string opener = "if coefficient_type == \"";
    if (const auto at = line.find(opener); at != std::string::npos && line.find("steps != len(coefficient_sets)") != std::string::npos) {
      const auto name = at + opener.size();
      s.fixed_length[line.substr(name, line.find('"', name) - name)] = true;
    }
    if (line.find("repeat_last_types = (") != std::string::npos)
      for (const Token& t : tokenize(line.substr(line.find('('))))
        if (t.kind == Token::string) s.repeat_last_types.push_back(t.text);
  }
  s.sets = TableReader(tokenize(table)).table();
  return s;
}

const Source& source() {
  static const Source s = read_source();
  return s;
}

// Emerging-Optimizers' get_coefficient_iterator, as its docstring and code state.
Coeffs eo_triple(const std::vector<Coeffs>& set, bool repeat_last, int step) {
  const auto n = static_cast<int>(set.size());
  return set[static_cast<std::size_t>(repeat_last ? std::min(step, n - 1) : step % n)];
}

bool same_bits(const Coeffs& x, const Coeffs& y) { return x.a == y.a && x.b == y.b && x.c == y.c; }

}  // namespace

BOOST_AUTO_TEST_SUITE(schedule_sources)

BOOST_AUTO_TEST_CASE(the_fixture_holds_every_set_and_the_mode_rule) {
  const Source& s = source();
  BOOST_TEST_MESSAGE("Emerging-Optimizers ships " << s.sets.size() << " sets");
  BOOST_CHECK_EQUAL(s.sets.size(), 7u);  // simple, quintic, polar_express, cans, aol, deepseekv4, cubic5
  BOOST_CHECK_EQUAL(s.repeat_last_types.size(), 3u);
  BOOST_CHECK_EQUAL(s.fixed_length.size(), 1u);  // cubic5
  const std::string mode_line = s.lines.at(240);
  BOOST_CHECK(mode_line.find("\"repeat_last\" if coefficient_type in repeat_last_types else \"cycle\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_set_is_built_in_with_its_numbers_and_mode) {
  for (const auto& [name, set] : source().sets) {
    BOOST_TEST_CONTEXT("Emerging-Optimizers set " << name) {
      const CoeffSchedule built = builtin_schedule(name);  // throws when a set is missing
      BOOST_REQUIRE_EQUAL(built.triples.size(), set.size());
      const auto& rl = source().repeat_last_types;
      const bool repeat_last = std::find(rl.begin(), rl.end(), name) != rl.end();
      for (int step = 0; step < 3 * static_cast<int>(set.size()); ++step) {
        const Coeffs want = eo_triple(set, repeat_last, step), got = built.at_step(step);
        BOOST_CHECK_MESSAGE(same_bits(got, want), "step " << step << ": built-in " << std::hexfloat << got.a << ' '
                                                           << got.b << ' ' << got.c << ", source " << want.a << ' '
                                                           << want.b << ' ' << want.c);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(every_record_cites_the_lines_and_safety_factor_of_its_set) {
  const Source& s = source();
  for (const std::string& name : builtin_schedule_names()) {
    BOOST_TEST_CONTEXT("built-in schedule " << name) {
      const ScheduleSource src = builtin_schedule_source(name);
      BOOST_CHECK_EQUAL(src.commit, "fd7729267109a8848709e9406bf19e53e970c3f4");
      BOOST_CHECK_EQUAL(src.file, "emerging_optimizers/orthogonalized_optimizers/muon_utils.py");
      const int first = std::stoi(std::string(src.lines)), last = std::stoi(std::string(src.lines.substr(src.lines.find('-') + 1)));
      // `you` has no name there: it cites the quintic numbers' lines
      const std::string set = src.emerging_optimizers_name.empty() ? "quintic" : std::string(src.emerging_optimizers_name);
      std::string cited;
      for (int l = first; l <= last; ++l) cited += s.lines.at(l) + "\n";
      if (!src.emerging_optimizers_name.empty()) BOOST_CHECK_EQUAL(s.first_line.at(set), first);
      std::size_t tuples = 0;
      for (const Token& t : tokenize(cited)) tuples += t.kind == Token::punct && t.text == "(";
      BOOST_CHECK_GE(tuples, 1u);  // the cited lines hold the numbers
      BOOST_CHECK_EQUAL(src.safety_factor_applied, cited.find("safety factor") != std::string::npos);
      const bool fixed = !src.emerging_optimizers_name.empty() && s.fixed_length.count(set);
      BOOST_CHECK_EQUAL(src.fixed_steps, fixed ? static_cast<int>(s.sets.at(set).size()) : 0);
      BOOST_CHECK(same_bits(builtin_schedule(name).triples.front(), s.sets.at(set).front()));
    }
  }
}

BOOST_AUTO_TEST_CASE(you_is_the_quintic_numbers_repeating_the_last_triple) {
  const std::vector<Coeffs>& quintic = source().sets.at("quintic");
  const CoeffSchedule you = builtin_schedule("you");
  for (int step = 0; step < 15; ++step) BOOST_CHECK(same_bits(you.at_step(step), eo_triple(quintic, true, step)));
  // and so differs from Megatron's quintic (cycling) from step 6 on: a negative control
  BOOST_CHECK(!same_bits(you.at_step(5), builtin_schedule("quintic").at_step(5)));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv::checks
