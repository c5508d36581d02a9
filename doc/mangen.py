#!/usr/bin/env python3
"""One source for each command's --help and its man page (doc/README.md).

    mangen.py header OUT.h SOURCE...        the --help texts as C strings
    mangen.py man OUT SOURCE VERSION        the troff page of SOURCE
    mangen.py help SOURCE                   the --help text of SOURCE, on stdout

A source (doc/*.txt) is a header of `.key value` lines, then sections:

    .name simpletrace-print         the page's name
    .section 1                      its manual section
    .summary print a trace ...      the NAME line's description
    .help print                     the C string st__help_print (no .help: a man-only page)
    .column 25                      where list text starts in --help (default 25)

    == SYNOPSIS                     one line per form ("usage: " in --help)
    == DESCRIPTION                  paragraphs; lines indented 2+ are kept as written
    == OPTIONS (list)               "TERM" at column 0, its text indented 4, lines
                                    indented 6+ kept as written
    == EXIT STATUS                  text, "Exit status: " in --help
    == EXAMPLES (man)               only in the man page

A `(list)` section shows in --help as "options:" (its title in lower case)
then "  TERM   text" rows; any other section but DESCRIPTION as "Title: text".
Both outputs come from the same parsed form, word for word: the test
(doc/check_man.py) compares the two. Lines starting with '#' are comments.
Nothing here depends on anything but python3's standard library.
"""
import re
import sys
import textwrap

WIDTH = 80          # --help lines
TERM_COL = 25       # where a list row's text starts in --help


class Section:
    def __init__(self, title, flags):
        self.title = title
        self.man_only = 'man' in flags
        self.is_list = 'list' in flags
        self.groups = []   # text: paragraphs, each [('para'|'literal', [lines])]
        self.entries = []  # list: [(term, groups)]


class Page:
    def __init__(self, path):
        self.path = path
        self.meta = {}
        self.sections = []


def fail(path, lineno, msg):
    sys.exit('%s:%d: %s' % (path, lineno, msg))


def add_line(groups, line):
    """Adds a source line to groups: None (a blank line) ends a paragraph; 2+ spaces make it literal."""
    if line is None:
        if groups and groups[-1]:
            groups.append([])
        return
    if not groups:
        groups.append([])
    kind = 'literal' if line.startswith('  ') else 'para'
    text = line if kind == 'literal' else line.strip()
    group = groups[-1]
    if group and group[-1][0] == kind:
        group[-1][1].append(text)
    else:
        group.append((kind, [text]))


def parse(path):
    page = Page(path)
    sec = None
    for lineno, raw in enumerate(open(path, encoding='utf-8').read().split('\n'), 1):
        line = raw.rstrip()
        if line.startswith('#'):
            continue
        if sec is None and line.startswith('.'):
            key, _, value = line[1:].partition(' ')
            page.meta[key] = value.strip()
            continue
        m = re.match(r'^== ([A-Z][A-Z ]*[A-Z])(?: \(([a-z, ]+)\))?$', line)
        if m:
            sec = Section(m.group(1), [f.strip() for f in (m.group(2) or '').split(',')])
            page.sections.append(sec)
            continue
        if sec is None:
            if line:
                fail(path, lineno, 'text before the first section')
            continue
        if not sec.is_list:
            add_line(sec.groups, line if line else None)
        elif not line:
            if sec.entries:
                add_line(sec.entries[-1][1], None)
        elif not line.startswith(' '):
            sec.entries.append((line, []))
        elif not sec.entries:
            fail(path, lineno, 'list text before its first term')
        elif line.startswith('    '):
            add_line(sec.entries[-1][1], line[4:])
        else:
            fail(path, lineno, 'list text is indented 4 (6 or more: kept as written)')
    for key in ('name', 'section', 'summary'):
        if key not in page.meta:
            fail(path, 1, 'no .%s line' % key)
    for s in page.sections:
        s.groups = [g for g in s.groups if g]
        s.entries = [(t, [g for g in gs if g]) for t, gs in s.entries]
        if not s.is_list and not s.groups:
            fail(path, 1, 'section %s is empty' % s.title)
    return page


# --- --help --------------------------------------------------------------------------

def wrap(lines, width):
    return textwrap.wrap(' '.join(lines), width=width, break_long_words=False, break_on_hyphens=False) or ['']


def help_group(group, indent):
    """The lines of one paragraph at indent: text wrapped, literal lines as written."""
    out = []
    for kind, lines in group:
        if kind == 'literal':
            out += [' ' * indent + l for l in lines]
        else:
            out += [' ' * indent + l for l in wrap(lines, WIDTH - indent)]
    return out


def help_text(page):
    col = int(page.meta.get('column', TERM_COL))
    out = []
    for sec in page.sections:
        if sec.man_only:
            continue
        if out:
            out.append('')
        if sec.title == 'SYNOPSIS':
            forms = [l for g in sec.groups for _, lines in g for l in lines]
            out += ['usage: ' + forms[0]] + ['       ' + f for f in forms[1:]]
        elif sec.is_list:
            out.append(sec.title.lower() + ':')
            for term, groups in sec.entries:
                text = [l for g in groups for l in help_group(g, col)]
                head = '  ' + term
                if text and len(head) < col - 1 and text[0][col] != ' ':
                    out += [head.ljust(col) + text[0][col:]] + text[1:]
                else:
                    out += [head] + text
        else:
            # DESCRIPTION unlabelled; any other section "Title: " before its first paragraph.
            label = '' if sec.title == 'DESCRIPTION' else sec.title.capitalize() + ': '
            for i, g in enumerate(sec.groups):
                if i:
                    out.append('')
                if i == 0 and label and g[0][0] == 'para':
                    g = [('para', [label + g[0][1][0]] + g[0][1][1:])] + g[1:]
                elif i == 0 and label:
                    out.append(label.rstrip())
                out += help_group(g, 0)
    return '\n'.join(out) + '\n'


def c_string(text):
    out = []
    for line in text.split('\n')[:-1]:
        out.append('    "%s\\n"' % line.replace('\\', '\\\\').replace('"', '\\"'))
    return '\n'.join(out)


def write_header(out_path, sources):
    parts = ['/* Generated by doc/mangen.py from the doc/ sources: the --help texts of the simpletrace command. Do not edit. */',
             '#ifndef ST_CLI_HELP_TEXTS_H', '#define ST_CLI_HELP_TEXTS_H', '',
             '/* A page may be longer than the 4095 bytes ISO C promises; GCC and Clang take any length. */',
             '#pragma GCC diagnostic ignored "-Woverlength-strings"', '']
    for src in sources:
        page = parse(src)
        if 'help' not in page.meta:
            continue
        parts.append('/* %s(%s): %s */' % (page.meta['name'], page.meta['section'], page.meta['summary']))
        parts.append('static const char st__help_%s[] =\n%s;\n' % (page.meta['help'], c_string(help_text(page))))
    parts.append('#endif')
    open(out_path, 'w', encoding='utf-8').write('\n'.join(parts) + '\n')


# --- troff ----------------------------------------------------------------------------

def esc(text):
    """Text for troff: backslashes and minus signs escaped (a plain '-' would print as a hyphen)."""
    return text.replace('\\', '\\e').replace('-', '\\-')


def text_line(text):
    t = esc(text)
    return '\\&' + t if t.startswith(('.', "'")) else t


def arg(text):
    return '"%s"' % esc(text).replace('"', '\\(dq')


def man_group(group):
    """One paragraph: text lines filled, literal lines in no-fill mode (which breaks the line before)."""
    out = []
    for kind, lines in group:
        if kind == 'literal':
            out += ['.nf'] + [text_line(l) for l in lines] + ['.fi']
        else:
            out += [text_line(l) for l in lines]
    return out


def man_page(page, version, source_name):
    name, section = page.meta['name'], page.meta['section']
    out = ['.\\" Generated by doc/mangen.py from doc/%s: do not edit.' % source_name,
           '.TH %s %s "" %s "simpletrace manual"' % (arg(name.upper()), arg(section), arg('simpletrace ' + version)),
           '.nh', '.ad l',
           '.SH NAME', text_line('%s - %s' % (name, page.meta['summary']))]
    for sec in page.sections:
        out.append('.SH ' + arg(sec.title))
        if sec.title == 'SYNOPSIS':
            out += ['.nf'] + [text_line(l) for g in sec.groups for _, lines in g for l in lines] + ['.fi']
        elif sec.is_list:
            for term, groups in sec.entries:
                out += ['.TP', '.B ' + arg(term)]
                for i, g in enumerate(groups):
                    out += (['.IP'] if i else []) + man_group(g)
        else:
            for i, g in enumerate(sec.groups):
                out += (['.PP'] if i else []) + man_group(g)
    return '\n'.join(out) + '\n'


def main(argv):
    if len(argv) >= 3 and argv[1] == 'header':
        write_header(argv[2], argv[3:])
    elif len(argv) == 5 and argv[1] == 'man':
        src = argv[3]
        open(argv[2], 'w', encoding='utf-8').write(man_page(parse(src), argv[4], src.rsplit('/', 1)[-1]))
    elif len(argv) == 3 and argv[1] == 'help':
        sys.stdout.write(help_text(parse(argv[2])))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
