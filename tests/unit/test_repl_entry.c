/* When codecell repl calls an entry whole (src/cli/repl_entry.c): Ruby's blocks, brackets,
 * strings, heredocs and the words that only look like keywords; Python's brackets, strings and
 * blocks. */
#include "check.h"
#include "repl_entry.h"

struct entry_case {
        const char *code;
        enum repl_entry want;
};

static const struct entry_case ruby[] = {
        {"def f(x)\n", ENTRY_OPEN},
        {"def f(x)\n  x * 2\nend\n", ENTRY_WHOLE},
        {"def double(y) = y * 2\n", ENTRY_WHOLE},
        {"def x=(v)\n", ENTRY_OPEN},
        {"def self.make\n", ENTRY_OPEN},
        {"x = 41\n", ENTRY_WHOLE},
        {"[1, 2].each do |x|\n", ENTRY_OPEN},
        {"[1, 2].each do |x| p x end\n", ENTRY_WHOLE},
        {"[1, 2].map { |x|\n", ENTRY_OPEN},
        {"return 1 if x\n", ENTRY_WHOLE},
        {"puts 1 unless x\n", ENTRY_WHOLE},
        {"x = if y\n", ENTRY_OPEN},
        {"if y\n  1\nelsif z\n  2\nelse\n  3\nend\n", ENTRY_WHOLE},
        {"while x < 3 do\n", ENTRY_OPEN},
        {"while x < 3 do x += 1 end\n", ENTRY_WHOLE},
        {"x += 1 while x < 3\n", ENTRY_WHOLE},
        {"for i in 1..3 do\n  p i\nend\n", ENTRY_WHOLE},
        {"begin\n  1\nrescue => e\n  2\nend\n", ENTRY_WHOLE},
        {"class Foo\n", ENTRY_OPEN},
        {"class << self\n", ENTRY_OPEN},
        {"module M; end\n", ENTRY_WHOLE},
        {"case x\nwhen 1 then :a\nend\n", ENTRY_WHOLE},
        {"puts \"end #{\"{\"} def\"\n", ENTRY_WHOLE},
        {"\"unterminated\n", ENTRY_OPEN},
        {"'it''s'\n", ENTRY_WHOLE},
        {"s = <<~EOS\n  def\n", ENTRY_OPEN},
        {"s = <<~EOS\n  def\n  EOS\n", ENTRY_WHOLE},
        {"s = <<-'EOS' + \"x\"\n  end\n  EOS\n", ENTRY_WHOLE},
        {"a << b\n", ENTRY_WHOLE},
        {"x.class\n", ENTRY_WHOLE},
        {"x.end\n", ENTRY_WHOLE},
        {"h = {if: 1, end: 2}\n", ENTRY_WHOLE},
        {"a = :end\n", ENTRY_WHOLE},
        {"%w[def if]\n", ENTRY_WHOLE},
        {"%w[def\n", ENTRY_OPEN},
        {"x = 1 +\n", ENTRY_OPEN},
        {"x = 1 +\n  2\n", ENTRY_WHOLE},
        {"x = [1,\n", ENTRY_OPEN},
        {"y = x.end? ? 1 : 2\n", ENTRY_WHOLE},
        {"defined?(x)\n", ENTRY_WHOLE},
        {"x = 5 / 2\n", ENTRY_WHOLE},
        {"x = a.map { |v| v /2 }\n", ENTRY_WHOLE},
        {"r = /end do/\n", ENTRY_WHOLE},
        {"# def f\n", ENTRY_WHOLE},
        {"=begin\ndef\n=end\n", ENTRY_WHOLE},
        {"=begin\ndef\n", ENTRY_OPEN},
        {"end\n", ENTRY_WHOLE}, /* a stray end is for Ruby to refuse */
        {"", ENTRY_WHOLE},
};

static const struct entry_case python[] = {
        {"def double(y):\n", ENTRY_BLOCK},
        {"def double(y):\n    return y * 2\n", ENTRY_BLOCK},
        {"x = 41\n", ENTRY_WHOLE},
        {"print('hi')\n", ENTRY_WHOLE},
        {"x = [1,\n", ENTRY_OPEN},
        {"x = [1,\n 2]\n", ENTRY_WHOLE},
        {"def f(a,\n", ENTRY_OPEN},
        {"def f(a,\n      b):\n", ENTRY_BLOCK},
        {"s = \"\"\"abc\n", ENTRY_OPEN},
        {"s = \"\"\"abc\n\ndef\"\"\"\n", ENTRY_WHOLE},
        {"if x:  # a comment\n", ENTRY_BLOCK},
        {"@decorator\n", ENTRY_BLOCK},
        {"d = {'a': 1}\n", ENTRY_WHOLE},
        {"f(':')\n", ENTRY_WHOLE},
        {"x = 'a#b'\n", ENTRY_WHOLE},
        {"x = 1  # ends with a colon:\n", ENTRY_WHOLE},
        {"lambda: 1\n", ENTRY_WHOLE},
        {"", ENTRY_WHOLE},
};

static void each(const char *language, const struct entry_case *cases, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                enum repl_entry got = repl_entry_state(language, cases[i].code);
                if (got != cases[i].want) {
                        fprintf(stderr, "%s: %d, not %d, for:\n%s\n", language, got, cases[i].want,
                                cases[i].code);
                        check_failures++;
                }
        }
}

int main(void)
{
        each("ruby", ruby, sizeof(ruby) / sizeof(ruby[0]));
        each("python", python, sizeof(python) / sizeof(python[0]));
        CHECK(repl_entry_state("cobol", "def f(\n") == ENTRY_WHOLE);
        CHECK_DONE();
}
