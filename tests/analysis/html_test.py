#!/usr/bin/env python3
"""latency --html and compare --html opened in Debian's Chromium, headless (issue 23, "Tests").

For each page (latency of one run, with a span name holding HTML's special characters; latency --by=kind;
compare of two runs):
  - self-contained: no URL, no src/href/url()/@import, a Content-Security-Policy of default-src 'none';
  - loaded by chromium --headless --dump-dom: no console message at all (errors, and the CSP's
    refusals, are console messages; two control pages show that such a message is seen), the page's
    script ran (the foot says how many histograms and bars it found);
  - one histogram per span of the JSON written by the same command, named as the JSON names it (the
    browser's reading of the escaped names);
  - each histogram's bars (per run for compare) equal the JSON's histogram bands (lo_ns, count), bars
    with a count drawn with a height and empty ones flat;
  - a screenshot of each page kept in the build directory (ARTIFACTS) as a test artifact.
Without chromium the test fails saying so (CI installs it: scripts/deps.sh).

argv: SIMPLETRACE SPANS_PROG SPANS_EVENTS CHROMIUM ARTIFACTS
"""
import html.parser
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
from tap import done, ok, run  # noqa: E402

ST, PROG, EVENTS, CHROMIUM, ARTIFACTS = sys.argv[1:6]
KEYED = 'req_submit:req_complete=request@req'
ODD = 'req_submit:req_complete=<b>&"it\'s"@req'


class Body(html.parser.HTMLParser):
    """The body's data-rendered attribute and the text of #rendered, from the DOM chromium dumped."""

    def __init__(self):
        super().__init__()
        self.rendered, self.foot, self._in_foot = None, '', False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'body':
            self.rendered = a.get('data-rendered')
        self._in_foot = a.get('id') == 'rendered'

    def handle_data(self, data):
        if self._in_foot:
            self.foot += data

    def handle_endtag(self, tag):
        self._in_foot = False


def chromium(tmp, page, *extra):
    """Runs chromium headless on page: (exit status, stdout, the console lines of stderr)."""
    argv = [CHROMIUM, '--headless', '--disable-gpu', '--no-sandbox', '--enable-logging=stderr', '--v=0',
            '--user-data-dir=' + os.path.join(tmp, 'profile'), '--no-first-run'] + list(extra) + ['file://' + page]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    console = [line for line in r.stderr.splitlines() if ':CONSOLE' in line or 'Uncaught' in line]
    return r.returncode, r.stdout, console


def self_contained(what, text):
    bad = re.findall(r'(?i)(?:https?:|ftp:|//[a-z0-9.-]+\.[a-z]{2,}|\bsrc\s*=|\bhref\s*=|url\s*\(|@import)', text)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="default-src \'none\';[^"]*">', text)
    ok(text.startswith('<!DOCTYPE html>') and not bad and csp, what + ': self-contained (no URL, CSP default-src none)',
       'found %s, csp %s' % (bad[:5], bool(csp)))


def bands(hist):
    return {b['lo_ns']: b['count'] for b in hist if b['count']}


def check_page(tmp, what, page, doc, runs):
    """Loads page in chromium and holds its histograms to the JSON doc (runs: the JSON keys of each run's span
    figures, [None] for latency whose spans are the figures)."""
    with open(page) as f:
        self_contained(what, f.read())
    status, dom, console = chromium(tmp, page, '--dump-dom')
    ok(status == 0 and not console, what + ': chromium loads it without a console message', '\n'.join(console[:10]))
    body = Body()
    body.feed(dom)
    if not ok(body.rendered is not None, what + ': the page\'s script ran', dom[-2000:]):
        return
    hists = json.loads(body.rendered)
    nbars = sum(len(h['bars']) for h in hists)
    ok(body.foot == '%d histograms, %d bars' % (len(hists), nbars), what + ': the foot says %r' % body.foot)
    want = [(s['name'], s['group'] or '') for s in doc['spans']]
    got = [(h['span'], h['group']) for h in hists]
    ok(got == want, what + ': one histogram per span, %d, named as the JSON' % len(want),
       'got  %s\nwant %s' % (got, want))
    problems = []
    for h, s in zip(hists, doc['spans']):
        for key in runs:
            fig = s[key] if key else s
            label = key or 'run'
            bars = [b for b in h['bars'] if b['run'] == label]
            got_bands = {b['lo_ns']: b['count'] for b in bars if b['count']}
            if got_bands != bands(fig['histogram']):
                problems.append('%s %s: bars %s, json %s' % (s['name'], label, got_bands, bands(fig['histogram'])))
            if sum(b['count'] for b in bars) != fig['count']:
                problems.append('%s %s: bars sum to %d, count %d' % (s['name'], label, sum(b['count'] for b in bars),
                                                                     fig['count']))
            flat = [b for b in bars if (b['count'] > 0) != (b['height'] > 0)]
            if flat:
                problems.append('%s %s: bars drawn wrong: %s' % (s['name'], label, flat[:3]))
        if len(runs) == 2 and len({b['lo_ns'] for b in h['bars'] if b['run'] == 'base'} ^
                                  {b['lo_ns'] for b in h['bars'] if b['run'] == 'new'}):
            problems.append('%s: the runs\' bars are not side by side in the same bands' % s['name'])
    ok(not problems and hists, what + ': every bar\'s count is the JSON\'s histogram band, drawn to scale',
       '\n'.join(problems[:10]))
    shot = os.path.join(ARTIFACTS, 'analysis-html-%s.png' % re.sub(r'\W+', '-', what))
    if os.path.exists(shot):
        os.unlink(shot)
    status, _, console = chromium(tmp, page, '--screenshot=' + shot, '--window-size=1280,1600', '--hide-scrollbars')
    with open(shot, 'rb') if os.path.exists(shot) else open(os.devnull, 'rb') as f:
        png = f.read()
    ok(status == 0 and png.startswith(b'\x89PNG\r\n\x1a\n') and len(png) > 10000 and not console,
       what + ': screenshot kept as %s (%d bytes)' % (shot, len(png)), '\n'.join(console))


def controls(tmp):
    """Pages that do log to the console: the check above would see it."""
    for name, body in (('error', '<p>x</p><script>undefined_function();</script>'),
                       ('network', '<img alt="" src="http://example.invalid/x.png">')):
        page = os.path.join(tmp, 'control-%s.html' % name)
        with open(page, 'w') as f:
            f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" '
                    'content="default-src \'none\'; script-src \'unsafe-inline\'"></head><body>%s</body></html>' % body)
        _, _, console = chromium(tmp, page, '--dump-dom')
        ok(console, 'control page (%s): its console message is seen' % name)


def spans_prog(path, *args):
    env = dict(os.environ, SIMPLETRACE='enable=*,file=%s,clock=monotonic' % path)
    r = subprocess.run([PROG] + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=180)
    ok(r.returncode == 0, 'spans_prog ' + ' '.join(args), r.stderr)


def main():
    if not CHROMIUM or not os.access(CHROMIUM, os.X_OK):
        ok(False, 'chromium is installed (Debian package chromium; scripts/deps.sh check installs it)')
        return done()
    os.makedirs(ARTIFACTS, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix='st-html-') as tmp:
        base, new = os.path.join(tmp, 'base.trace'), os.path.join(tmp, 'new.trace')
        spans_prog(base, '--count=120', '--base-us=400', '--seed=5')
        spans_prog(new, '--count=150', '--base-us=400', '--seed=6', '--shift-pct=40')
        controls(tmp)
        for what, args in (('latency', ['--pair=' + ODD]), ('latency-by', ['--pair=' + KEYED, '--by=kind'])):
            page = os.path.join(tmp, what + '.html')
            r = run(ST, 'latency', '--format=json', '--html=' + page, *args, base)
            ok(r.returncode == 0 and r.stderr == '', what + ': exit 0 silently', r.stderr)
            check_page(tmp, what, page, json.loads(r.stdout), [None])
        page = os.path.join(tmp, 'compare.html')
        r = run(ST, 'compare', '--format=json', '--html=' + page, '--pair=' + KEYED, base, new)
        ok(r.returncode == 0 and r.stderr == '', 'compare: exit 0 silently', r.stderr)
        check_page(tmp, 'compare', page, json.loads(r.stdout), ['base', 'new'])
        # The page is put in place whole: a failed write leaves none.
        r = run(ST, 'compare', '--html=' + os.path.join(tmp, 'no-such-dir', 'x.html'), base, new)
        ok(r.returncode == 1 and 'cannot create' in r.stderr and not os.path.exists(os.path.join(tmp, 'no-such-dir')),
           'compare --html into a missing directory: exit 1, nothing written', r.stderr)
        r = run(ST, 'latency', '--html=' + base, base)
        ok(r.returncode == 2 and 'refusing to overwrite' in r.stderr, 'latency --html=TRACE: refused', r.stderr)
    return done()


sys.exit(main())
