#!/usr/bin/env python3
"""Checks the man pages against --help and the code (a TAP test, doc/meson.build).

    check_man.py SIMPLETRACE SOURCE_ROOT PAGE=SOURCE...

For each page built from its source (doc/*.txt, by doc/mangen.py):
  - groff renders it without a warning (-ww), and so does `man --warnings -l`;
  - for a command's page: `simpletrace [CMD] --help` prints exactly the text
    the source gives, and the words of the page's SYNOPSIS to its last help
    section, as man renders them, are the words of that --help output (its
    "usage:", "options:" and "Exit status:" labels aside), in order;
  - simpletrace(3) names every public st_ function of include/simpletrace/
    and every key of the runtime's configuration tables (src/runtime), so a
    new function or key cannot go undocumented;
  - README, pages, --help texts and public headers name no release after
    the one `simpletrace --version` says.
Needs groff and man (Debian: groff-base, man-db); without them it fails
saying so.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mangen  # noqa: E402

count = failed = 0
ENV = dict(os.environ, LC_ALL='C.UTF-8', MANWIDTH='80', MANPAGER='cat', PAGER='cat', MAN_KEEP_FORMATTING='')


def ok(cond, what, detail=''):
    global count, failed
    count += 1
    if not cond:
        failed += 1
    print('%sok %d - %s' % ('' if cond else 'not ', count, what))
    if not cond and detail:
        for line in str(detail).splitlines()[:40]:
            print('#   ' + line)
    return cond


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def rendered_sections(page):
    """The page as man text: [(TITLE, [lines])], without the header and footer lines."""
    rc, out, err = run(['groff', '-man', '-Tascii', '-P-c', '-P-b', '-P-u', page])
    lines = out.split('\n')
    body = [l for l in lines[1:] if l.strip()][:-1]  # the first line is the header, the last the footer
    sections = []
    for line in body:
        if re.match(r'^[A-Z][A-Z ]*[A-Z]$', line):
            sections.append((line, []))
        elif sections:
            sections[-1][1].append(line)
    return sections


def help_words(text, page):
    """The words of --help output, without the labels that stand for the man page's headings."""
    labels = {}
    for sec in page.sections:
        if sec.is_list:
            labels[sec.title.lower() + ':'] = ''
        elif sec.title not in ('SYNOPSIS', 'DESCRIPTION'):
            labels[sec.title.capitalize() + ': '] = ''
    words = []
    for line in text.split('\n'):
        if line.startswith('usage: '):
            line = line[len('usage: '):]
        for label in labels:
            if line == label or line == label.rstrip():
                line = ''
            elif line.startswith(label) and label.endswith(' '):
                line = line[len(label):]
        words += line.split()
    return words


def check_help(exe, page_path, page):
    name = page.meta['help']
    argv = [exe, '--help'] if name == 'main' else [exe, name, '--help']
    rc, out, err = run(argv)
    want = mangen.help_text(page)
    ok(rc == 0 and out == want, '%s: `%s` prints the text of %s' % (page.meta['name'], ' '.join(argv[1:]),
                                                                 os.path.basename(page.path)),
       'got:\n%s\nwant:\n%s' % (out, want))
    helped = [s.title for s in page.sections if not s.man_only]
    man = [w for title, lines in rendered_sections(page_path) if title in helped for l in lines for w in l.split()]
    got = help_words(out, page)
    first = next((i for i, (a, b) in enumerate(zip(man, got)) if a != b), min(len(man), len(got)))
    ok(man == got and len(got) > 20,
       '%s: the man page says what --help says, word for word (%d words)' % (page.meta['name'], len(got)),
       'first difference at word %d: man %r, --help %r' % (first, man[first:first + 8], got[first:first + 8]))


def check_renders(page_path, name):
    if not shutil.which('groff') or not shutil.which('man'):
        ok(False, '%s: groff and man are installed (Debian: groff-base, man-db)' % name)
        return False
    rc, out, err = run(['groff', '-man', '-ww', '-z', page_path])
    ok(rc == 0 and not err, '%s: groff -man -ww renders it without a warning' % name, err)
    rc, out, err = run(['man', '--warnings', '-l', page_path])
    ok(rc == 0 and not err and 'NAME' in out and name in out,
       '%s: man --warnings -l renders it without a warning' % name, err or out[:400])
    return True


def public_functions(root):
    names = set()
    inc = os.path.join(root, 'include', 'simpletrace')
    for f in sorted(os.listdir(inc)):
        if f.endswith('.h'):
            text = open(os.path.join(inc, f), encoding='utf-8').read()
            names |= set(re.findall(r'ST_API[^;(]*?\b(st_(?!_)[a-z0-9_]+)\s*\(', text))
    return names


def config_keys(root):
    keys = set()
    for dirpath, _, files in os.walk(os.path.join(root, 'src', 'runtime')):
        for f in files:
            if f.endswith('.c'):
                text = open(os.path.join(dirpath, f), encoding='utf-8').read()
                keys |= set(re.findall(r'\{"([a-z][a-z-]*)", (?:true|false), ', text))
    return keys


def check_api_page(root, source):
    text = open(source, encoding='utf-8').read()
    funcs = public_functions(root)
    missing = sorted(f for f in funcs if not re.search(r'\b%s\b' % f, text))
    ok(len(funcs) > 40 and not missing, 'simpletrace(3) names every public function (%d)' % len(funcs),
       'missing: ' + ', '.join(missing))
    keys = config_keys(root)
    terms = set(re.findall(r'^\[?([a-z][a-z-]*)\]?=', text, re.M))
    missing = sorted(k for k in keys if k not in terms)
    ok(len(keys) >= 12 and not missing, 'simpletrace(3) describes every configuration key (%d)' % len(keys),
       'missing: ' + ', '.join(missing))


def check_releases(exe, root):
    """No text promises a release after the one `simpletrace --version` says ("since 0.3" in 0.2.0)."""
    rc, out, err = run([exe, '--version'])
    m = re.search(r'(\d+)\.(\d+)', out)
    current = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    texts = [os.path.join(root, 'README.md'), os.path.join(root, 'src', 'python', 'simpletrace', '__init__.py')]
    for d in ('doc', os.path.join('include', 'simpletrace'), os.path.join('src', 'cli')):
        texts += [os.path.join(root, d, f) for f in sorted(os.listdir(os.path.join(root, d)))
                  if f.endswith(('.txt', '.h', '.c'))]
    later = []
    for path in texts:
        for n, line in enumerate(open(path, encoding='utf-8'), 1):
            for word, major, minor in re.findall(r'\b(since|before|in|release) (\d+)\.(\d+)\b', line, re.I):
                if (int(major), int(minor)) > current:
                    later.append('%s:%d: %s' % (os.path.relpath(path, root), n, line.strip()))
    ok(m and not later, 'README, man pages, --help and headers name no release after %s (%d files)'
       % (out.strip(), len(texts)), '\n'.join(later))


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    exe, root = argv[1], argv[2]
    for arg in argv[3:]:
        page_path, source = arg.split('=', 1)
        page = mangen.parse(source)
        name = '%s(%s)' % (page.meta['name'], page.meta['section'])
        if not check_renders(page_path, page.meta['name']):
            continue
        if 'help' in page.meta:
            check_help(exe, page_path, page)
        if page.meta['section'] == '3':
            check_api_page(root, source)
        ok(os.path.basename(page_path) == '%s.%s' % (page.meta['name'], page.meta['section']),
           '%s: installed as %s' % (name, os.path.basename(page_path)))
    check_releases(exe, root)
    print('1..%d' % count)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
