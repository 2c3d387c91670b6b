#!/usr/bin/env python3
"""Compiles the documentation's C++ examples: the README's and the guides' (docs/*.md).

A fenced ```cpp block is compiled when the line before it marks it:

    <!-- doc-test: NAME -->              compiled and linked against sluice
    <!-- doc-test: NAME run ARGS... -->  also run by the `doc_snippets` test, with ARGS
                                         (paths relative to the repository root)

A block is a whole file as a user would write it: includes, declarations and usually an
`int main`. This script writes them all into ONE translation unit (one compile of sluice.h,
seconds instead of minutes): each block in a namespace of its own, its #include lines moved to
the top (<sluice/X> becomes "X", the in-tree path), `main` renamed `Main`, and a `main` that runs
the blocks marked `run`, or the one named on its command line. #line directives keep compiler
errors pointing at the Markdown file and line.

It also checks the files' relative links, [text](file.md#anchor): the file must exist and the
anchor must be one of its headings (as GitHub makes them), so that a moved section fails here.

docs/CMakeLists.txt runs it when a Markdown file changes and builds `doc_snippets`; ctest runs it.

Usage: doc_snippets.py --out FILE.cc MARKDOWN...
"""
import argparse
import os
import re
import sys

MARK = re.compile(r'^<!--\s*doc-test:\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+run((?:\s+\S+)*))?\s*-->\s*$')
MAIN = re.compile(r'^int\s+main\s*\(\s*(\)?)')


def blocks(path):
    """Yields (name, run_args or None, first line number, lines) for each marked block."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() not in ('```cpp', '```c++'):
            sys.exit(f'{path}:{i + 1}: a doc-test mark must stand right before a ```cpp block')
        start = i + 2
        end = start
        while end < len(lines) and lines[end].strip() != '```':
            end += 1
        if end == len(lines):
            sys.exit(f'{path}:{i + 2}: the ```cpp block never ends')
        run = m.group(2).split() if m.group(2) is not None else None
        yield m.group(1), run, start + 1, lines[start:end]
        i = end + 1


def without_code(text):
    """The Markdown text without its fenced blocks and code spans."""
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)
    return re.sub(r'`[^`\n]*`', '', text)


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')


def check_links(paths):
    """Exits naming each relative link whose file or heading is missing."""
    headings = {}
    def anchors_of(path):
        if path not in headings:
            with open(path, encoding='utf-8') as f:
                text = re.sub(r'^```.*?^```', '', f.read(), flags=re.S | re.M)
            headings[path] = {anchor(h) for h in re.findall(r'^#+ (.*)$', text, flags=re.M)}
        return headings[path]
    broken = []
    for path in paths:
        with open(path, encoding='utf-8') as f:
            text = without_code(f.read())
        for link in re.findall(r'\]\(([^)\s]+)\)', text):
            if re.match(r'^[a-z]+:', link):
                continue  # http:, mailto:
            file, _, fragment = link.partition('#')
            target = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(target):
                broken.append(f'{path}: link to {link}: no file {target}')
            elif fragment and target.endswith('.md') and fragment not in anchors_of(target):
                broken.append(f'{path}: link to {link}: {target} has no heading #{fragment}')
    if broken:
        sys.exit('\n'.join(broken))


def c_string(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', required=True)
    parser.add_argument('markdown', nargs='+')
    args = parser.parse_args()
    check_links(args.markdown)

    includes, bodies, table, seen = [], [], [], {}
    for path in args.markdown:
        for name, run, first_line, lines in blocks(path):
            if name in seen:
                sys.exit(f'{path}:{first_line - 1}: doc-test {name} is already the name of a '
                         f'block in {seen[name]}')
            seen[name] = path
            takes_args = None
            body = []
            for line in lines:
                include = re.match(r'^\s*#include\s+(<[^>]+>|"[^"]+")', line)
                if include:
                    header = re.sub(r'^<sluice/(.*)>$', r'"\1"', include.group(1))
                    if header not in includes:
                        includes.append(header)
                    body.append('')  # keeps the line numbers
                    continue
                m = MAIN.match(line)
                if m:
                    takes_args = not m.group(1)
                    line = MAIN.sub(lambda mm: 'int Main(' + mm.group(1), line, count=1)
                body.append(line)
            bodies.append(f'namespace doc_{name} {{\n#line {first_line} '
                          f'{c_string(os.path.abspath(path))}\n' + '\n'.join(body) +
                          f'\n}}  // namespace doc_{name}\n')
            if takes_args is None:
                call = 'nullptr'
            elif takes_args:
                call = f'[](int argc, char** argv) {{ return doc_{name}::Main(argc, argv); }}'
            else:
                call = f'[](int, char**) {{ return doc_{name}::Main(); }}'
            run_args = '{' + ', '.join(c_string(a) for a in (run or [])) + '}'
            table.append(f'    {{{c_string(name)}, {c_string(os.path.relpath(path))}, {call}, '
                         f'{"true" if run is not None else "false"}, {run_args}}},')
            if run is not None and takes_args is None:
                sys.exit(f'{path}:{first_line}: doc-test {name} is marked run but has no main')

    out = ['// Generated by tools/doc_snippets.py from the documentation\'s ```cpp blocks: do not',
           '// edit; edit the Markdown file each block names.',
           '#include <cstdio>', '#include <cstring>', '#include <string>', '#include <vector>']
    out += [f'#include {h}' for h in includes]
    out += ['', *bodies, '#line 1 "doc_snippets.cc (generated)"', 'namespace {',
            'struct Snippet {',
            '  const char* name;',
            '  const char* file;',
            '  int (*main)(int, char**);',
            '  bool run;',
            '  std::vector<std::string> args;',
            '};',
            'const std::vector<Snippet>& Snippets() {',
            '  static const std::vector<Snippet> kSnippets = {',
            *table,
            '  };',
            '  return kSnippets;',
            '}',
            'int RunSnippet(const Snippet& s, std::vector<std::string> args) {',
            '  args.insert(args.begin(), s.name);',
            '  std::vector<char*> argv;',
            '  for (std::string& a : args) argv.push_back(a.data());',
            '  argv.push_back(nullptr);',
            '  std::printf("== %s (%s)\\n", s.name, s.file);',
            '  std::fflush(stdout);',
            '  const int rc = s.main(static_cast<int>(args.size()), argv.data());',
            '  if (rc != 0) std::printf("== %s failed with exit status %d\\n", s.name, rc);',
            '  return rc;',
            '}',
            '}  // namespace',
            '',
            '// doc_snippets: runs every block marked `run`, with its arguments.',
            '// doc_snippets NAME [ARGS...]: runs that block with ARGS. --list: names every block.',
            'int main(int argc, char** argv) {',
            '  if (argc > 1 && std::strcmp(argv[1], "--list") == 0) {',
            '    for (const Snippet& s : Snippets()) {',
            '      std::printf("%s  %s%s\\n", s.name, s.file,',
            '                  s.main == nullptr ? " (compiled only)" : s.run ? " (run)" : "");',
            '    }',
            '    return 0;',
            '  }',
            '  if (argc > 1) {',
            '    for (const Snippet& s : Snippets()) {',
            '      if (std::strcmp(s.name, argv[1]) != 0) continue;',
            '      if (s.main == nullptr) {',
            '        std::fprintf(stderr, "%s has no main\\n", s.name);',
            '        return 2;',
            '      }',
            '      return RunSnippet(s, std::vector<std::string>(argv + 2, argv + argc));',
            '    }',
            '    std::fprintf(stderr, "no doc-test block named %s (try --list)\\n", argv[1]);',
            '    return 2;',
            '  }',
            '  int failed = 0;',
            '  for (const Snippet& s : Snippets()) {',
            '    if (s.run && RunSnippet(s, s.args) != 0) ++failed;',
            '  }',
            '  std::printf("== %d doc-test blocks failed\\n", failed);',
            '  return failed == 0 ? 0 : 1;',
            '}', '']
    text = '\n'.join(out)
    # Written only when it changes, so that an edit elsewhere in a guide recompiles nothing.
    try:
        with open(args.out, encoding='utf-8') as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(args.out, 'w', encoding='utf-8') as f:
        f.write(text)


if __name__ == '__main__':
    main()
