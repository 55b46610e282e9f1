#!/usr/bin/env python3
"""Ground truth for the corpus: what the model must see of each logged run.

Called by generate.sh. `sanitize` rewrites a case's logs in place (temporary paths
and registry hosts become neutral ones). Every other subcommand writes NAME.truth:

    command<TAB>the command that was run
    exit<TAB>its exit code
    verdict<TAB>the runner's closing line, as a terminal shows it
    item<TAB>something the model must see: a failing test's name, an error's file:line,
             the missing package

taken from the tool's machine-readable form of the run where it has one (libtest and
rustc JSON, JUnit XML (pytest, node --test, ctest, bats, cargo nextest, maven's
surefire), jest/vitest JSON, `go test -json`, gcc's JSON diagnostics, `tsc --pretty
false`, `npm --json`, the JSON of ruff, mypy, pylint, shellcheck, eslint, mocha and
rspec, the result objects of unittest and minitest, Robot Framework's xUnit XML, the
JSON of stylelint and luacheck's plain format, the JSON of bandit, sqlfluff and
htmlhint, perlcritic's own line format, isort's Python API on the same files;
RuboCop's, staticcheck's and busted's JSON, the YAML clang-tidy exports, behave's
JUnit XML and Checkstyle's XML; the JSON of phpcs and markdownlint, the JUnit XML of
deno, nose2 and pytest under tox, ava's TAP, the warnings file of sphinx-build; `go vet
-json` and a jasmine reporter's list of failing specs; the JSON of hadolint, cfn-lint and
Spectral, cucumber-js's JUnit XML, esbuild's JavaScript API, JSHint's checkstyle XML,
codespell's own line format on an unwritten copy; EUnit's surefire XML, Nim's unittest
JUnit XML, ansible-lint's SARIF, prettier's and vulture's APIs on the same files and an
ExUnit formatter's list of failed tests; cpplint's and Catch2's JUnit XML,
flawfinder's CSV, googletest's JSON, gcc's JSON diagnostics under -fanalyzer, bashate's
Python API, and the lists `gofmt -l` and `rustfmt --check -l` give of the same tree;
node-tap's JUnit reporter, tape's TAP, the JSON of Biome, oxlint and remark, ESLint's
results through standard's API and c8's json-summary report; the Python APIs of pycodestyle, pyflakes, yapf and
interrogate on the same files, coverage's JSON report with pytest's JUnit XML, radon's
JSON, djLint's SARIF and docformatter's own list of files; ghc's -ddump-json messages,
the JUnit XML of ant's junit task; webpack's stats JSON, knip's JSON, nox's JSON
report with the JUnit XML of pytest in its sessions, and the JavaScript APIs of
rollup, vite and @babel/core; scan-build's SARIF, dialyzer's Erlang API and chktex's
own format of its messages; proselint's and check-jsonschema's JSON, green's JUnit
XML, and the Python APIs of doc8, rstcheck, gitlint, trial's runner and autopep8 on the
same files; QUnit's events through a required collector, the JSON of html-validate,
textlint and dependency-cruiser, and the JavaScript APIs of dart-sass, less,
@commitlint/lint and Ajv; doxygen's warning log, testthat's own results of the same
tests and the logs SRFI-64's runner writes; the JSON of semgrep, pylama, pyrefly and deptry, ty's GitLab
report, the JUnit XML of zope.testrunner and of pytest running hypothesis's properties,
and darglint's findings through flake8's parsable format or its own message template; the JSON of solhint, CSSLint's checkstyle XML, mocha's JSON
with nyc's json-summary report, svelte-check's machine-verbose output, `tsc --pretty
false` for TypeDoc, and the JavaScript APIs of alex, stylus and pug-lint; cspell's JSON
reporter, the JSON of madge, type-coverage, xo and jscpd, node --test's JUnit reporter
in each npm workspace, and CoffeeScript's API on each file alone; the Erlang
compiler's API for erlc, plunit's own records of failed tests, splint's CSV report and
xmlstarlet's list of invalid files; the result object of Django's
DiscoverRunner, reuse's JSON report, and the Python APIs of cmakelang, pyupgrade,
pymarkdown and mdformat; lizard's CSV, the subunit stream of stestr's run, the JSON of
typos, secretlint and markuplint, and the JUnit XML of @hapi/lab; Boost.Test's JUnit
report, the XML logs of check, cmocka and CUnit's automated mode, gcc's JSON diagnostics
of each file ninja builds and appstreamcli's YAML report; gdc's JSON diagnostics, Ruby's
compiler and Lua's loadfile on each file, rackunit's hooks around the same test modules
and Octave's test function on each file), and from the log itself or the
project's design where it has none (pip, ld, Test::More's diagnostics, `php -l`,
black, CMake, xmllint, shfmt, ward, Ruby's test-unit, mkdocs, the Erlang and OCaml
compilers' errors, alcotest, uvu, tape's uncaught error, tap's coverage table; gfortran, nasm, `perl -c` and javac, each file compiled alone;
shunit2 and tcltest; pre-commit; the sanitizers' reports written apart, Free
Pascal's errors and HTML Tidy's, each file alone, checkbashisms on each script alone;
Verilator's, iverilog's, GHDL's and msgfmt's errors, each file alone, and the failing
checks of the Verilog and VHDL testbenches, each run alone; JSDoc's ERROR lines of a run
that only dumps its doclets; GNAT's, sparse's, tcc's and
cobc's errors, each file alone, and jing's place of the error, each invalid file alone; taplo, each file alone; pydoclint, each
module alone; valac's errors and mandoc's (`-W error`), each file alone; the OCaml
compilers', gplc's (its pl2wam), SBCL's and mcs's errors, each file alone).
Every verdict and item
is checked to be in the log as a
terminal shows it.
"""

import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78NOMDEH]")
HOSTS = re.compile(r"https?://[^/\s'\"]*(npmjs|pypi|pythonhosted|crates\.io|golang\.org|golang\.google)[^/\s'\"]*")


def shown_lines(text):
    """The lines as a terminal shows them, roughly: escapes removed, a CR overwrites."""
    out = []
    for raw in text.split("\n"):
        raw = ESCAPE.sub("", raw)
        line = ""
        for part in raw.split("\r"):
            line = part + line[len(part):]
        out.append(line)
    return out


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def sanitize(args):
    work = os.path.realpath(args.work)
    for path in args.files:
        with open(path, "rb") as f:
            data = f.read()
        for old in {args.work, work}:
            data = data.replace(old.encode(), b"/home/dev/work")
        if args.venv:  # a virtualenv the tool runs from, outside the work dir
            data = data.replace(os.path.realpath(args.venv).encode(), b"/home/dev/.venv")
        data = HOSTS.sub("https://registry.example", data.decode("utf-8", "surrogateescape"))
        with open(path, "wb") as f:
            f.write(data.encode("utf-8", "surrogateescape"))


def find_verdict(lines, args):
    if args.verdict_prefix:
        hits = [l.strip() for l in lines if l.strip().startswith(args.verdict_prefix)]
    elif args.verdict_regex:
        rx = re.compile(args.verdict_regex)
        hits = [l.strip() for l in lines if rx.search(l)]
    else:
        return None
    if not hits:
        sys.exit(f"{args.name}: no verdict line matches")
    return hits[-1]


def libtest(args):
    items = []
    for line in open(args.source):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "test" and event.get("event") == "failed":
            items.append(event["name"])
            m = re.search(r"panicked at ([^:\s]+:\d+)", event.get("stdout", ""))
            if m:
                items.append(m.group(1))
    return items


def rustc_json(args):
    items = []
    for line in open(args.source):
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-message":
            continue
        m = msg["message"]
        if m["level"] != args.level:
            continue
        for span in m["spans"]:
            if span["is_primary"]:
                items.append(f"{span['file_name']}:{span['line_start']}")
    return items


def junit(args):
    items = []
    if os.path.isdir(args.source):  # one report per test class (maven's surefire)
        sources = sorted(os.path.join(args.source, f) for f in os.listdir(args.source)
                         if f.startswith("TEST-") and f.endswith(".xml"))
    else:
        sources = [args.source]
    cases = [case for source in sources for case in ET.parse(source).getroot().iter("testcase")]
    for case in cases:
        for kind in ("failure", "error"):
            node = case.find(kind)
            if node is None:
                continue
            text = node.text or ""
            if case.get("name") and case.get("classname"):
                items.append(case.get("name"))
            m = re.search(r"E\s+(\w+Error: .*)", text)
            if m and kind == "error":
                items.append(m.group(1).strip())
            m = re.search(r"panicked at ([^:\s]+:\d+)", text)
            if m:
                items.append(m.group(1))
            frame = rf"at {re.escape(case.get('classname') or '')}\.{re.escape(case.get('name') or '')}\("
            m = re.search(frame + r"(\w+\.java:\d+)\)", text)
            if m:
                items.append(m.group(1))
            locations = re.findall(r"^(\S+\.py):(\d+): ", text, re.M)
            if locations:
                items.append(f"{locations[-1][0]}:{locations[-1][1]}")
    return items


def pyexc(args):
    exc = json.load(open(args.source))
    return [exc["exception"], f'{os.path.basename(exc["file"])}", line {exc["line"]}']


def jest(args):
    items = []
    report = json.load(open(args.source))
    for result in report["testResults"]:
        for test in result["assertionResults"]:
            if test["status"] != "failed":
                continue
            items.append(test["title"])
            text = "\n".join(test.get("failureMessages") or [])
            for path, line in re.findall(r"\(?(/[^\s():]+|src/[^\s():]+):(\d+):\d+\)?", text):
                if "node_modules" in path:
                    continue
                items.append(f"{os.path.basename(path)}:{line}")
                break
    return items


def tsc(args):
    items = []
    for line in open(args.source):
        m = re.match(r"^(\S+)\((\d+),(\d+)\): error TS\d+", line)
        if m:
            file, row, col = m.groups()
            items.append(f"{file}:{row}:{col}" if args.pretty else f"{file}({row},{col})")
    return items


def npm(args):
    report = json.load(open(args.source))
    error = report["error"]
    name = re.search(r"/([^/\s]+) - Not found", error["summary"])
    return [error["code"]] + ([name.group(1)] if name else [])


def pip(args, lines):
    items = []
    for line in lines:
        s = line.strip()
        if s.startswith("ERROR: ") and "ResolutionImpossible" not in s and "No matching" not in s:
            items.append(s)
        if re.match(r"^\S+ [\d.]+ depends on ", s):
            items.append(s)
    return items


def gcc_json(args):
    items = []
    for line in open(args.source):
        if not line.startswith("["):
            continue
        for diag in json.loads(line):
            if diag["kind"] == "error":
                caret = diag["locations"][0]["caret"]
                items.append(f"{caret['file']}:{caret['line']}")
    return items


def ld(args, lines):
    return sorted({m.group(0) for l in lines for m in [re.search(r"undefined reference to `[^']+'", l)] if m})


def gotest(args):
    items, failed, outputs = [], [], {}
    for line in open(args.source):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        test = event.get("Test")
        if not test:
            continue
        if event["Action"] == "output":
            outputs.setdefault(test, []).append(event["Output"])
        if event["Action"] == "fail":
            failed.append(test)
    for test in failed:
        items.append(test)
        text = "".join(outputs.get(test, []))
        m = re.search(r"(\w+_test\.go:\d+)", text)
        if m:
            items.append(m.group(1))
        m = re.search(r"^(panic: .*?)( \[recovered\])?$", text, re.M)
        if m:
            items.append(m.group(1))
            frames = re.findall(r"/(\w+\.go:\d+)", text)
            own = [f for f in frames if not f.startswith(("testing.go", "panic.go", "asm_"))]
            if own:
                items.append(own[0])
    return items


def tap_diag(args, lines):
    """Test::More's diagnostics of each failed test: `#   Failed test 'name'`."""
    return [m.group(1) for l in lines for m in [re.search(r"#\s+Failed test '([^']+)'", l)] if m]


def names(args):
    return json.load(open(args.source))


def ruff(args):
    return [f"{os.path.basename(d['filename'])}:{d['location']['row']}:{d['location']['column']}"
            for d in json.load(open(args.source))]


def mypy(args):
    items = []
    for line in open(args.source):
        d = json.loads(line)
        if d["severity"] == "error":
            items.append(f"{d['file']}:{d['line']}")
    return items


def pylint(args):
    return [f"{d['path']}:{d['line']}:{d['column']}" for d in json.load(open(args.source))
            if d["type"] in ("error", "warning")]


def shellcheck(args):
    return [f"In {d['file']} line {d['line']}:" for d in json.load(open(args.source))]


def eslint(args):
    return [m["message"].rstrip(".") for f in json.load(open(args.source)) for m in f["messages"]
            if m["severity"] == 2]


def mocha(args):
    return [t["title"] for t in json.load(open(args.source))["failures"]]


def rspec(args):
    items = []
    for e in json.load(open(args.source))["examples"]:
        if e["status"] == "failed":
            items.append(e["description"])
            items.append(f"{e['file_path']}:{e['line_number']}")
    return items


def eunit(args):
    """EUnit's surefire reports: each failing test as the console names it
    (`module: name`), and the line of the test module where it failed."""
    items = []
    for source in sorted(os.listdir(args.source)):
        for case in ET.parse(os.path.join(args.source, source)).getroot().iter("testcase"):
            node = case.find("failure")
            if node is None:
                node = case.find("error")
            if node is None:
                continue
            module, _, name = case.get("name").partition(" ")
            items.append(f"{module.split(':')[0]}: {name}")
            m = re.search(r"(test/\w+\.erl, line \d+)\)", node.text or "")
            if m:
                items.append(m.group(1))
    return items


def nim(args):
    """std/unittest's JUnit report: each failing test as the console marks it, and the
    place of its failed check (`file.nim(line, column)`)."""
    items = []
    suites = ET.parse(args.source).getroot().iter("testsuite")
    cases = [c for s in suites if args.suite in (None, s.get("name")) for c in s.iter("testcase")]
    for case in cases:
        for node in case.findall("failure") + case.findall("error"):
            items.append(f"[FAILED] {case.get('name')}")
            m = re.search(r"(\w+\.nim\(\d+, \d+\))", node.get("message") or "")
            if m:
                items.append(m.group(1))
    return items


def main():
    if sys.argv[1] == "sanitize":
        p = argparse.ArgumentParser()
        p.add_argument("cmd")
        p.add_argument("files", nargs="+")
        p.add_argument("--work", required=True)
        p.add_argument("--venv")
        sanitize(p.parse_args())
        return
    p = argparse.ArgumentParser()
    p.add_argument("kind")
    p.add_argument("source", nargs="?")
    p.add_argument("--name", required=True)
    p.add_argument("--logs", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--exit", required=True, type=int)
    p.add_argument("--command", required=True)
    p.add_argument("--verdict-prefix")
    p.add_argument("--verdict-regex")
    p.add_argument("--pretty", action="store_true")
    p.add_argument("--level", default="error")
    p.add_argument("--suite")
    p.add_argument("--item", action="append", default=[])
    args = p.parse_args()
    if args.source and os.path.isfile(args.source):
        sanitize(argparse.Namespace(work=args.work, venv=None, files=[args.source]))
    base = os.path.join(args.logs, args.name)
    lines = shown_lines(read(base + ".out")) + shown_lines(read(base + ".err"))
    kinds = {
        "libtest": libtest, "rustc-json": rustc_json, "junit": junit, "pyexc": pyexc,
        "jest": jest, "tsc": tsc, "npm": npm, "gcc-json": gcc_json, "gotest": gotest,
        "plain": lambda a: [],
        "pip": lambda a: pip(a, lines), "ld": lambda a: ld(a, lines),
        "tap-diag": lambda a: tap_diag(a, lines), "names": names, "ruff": ruff,
        "mypy": mypy, "pylint": pylint, "shellcheck": shellcheck, "eslint": eslint,
        "mocha": mocha, "rspec": rspec, "eunit": eunit, "nim": nim,
    }
    items = []
    for item in kinds[args.kind](args) + args.item:
        if item not in items:
            items.append(item)
    verdict = find_verdict(lines, args)
    text = "\n".join(lines)
    for thing in items + ([verdict] if verdict else []):
        if thing not in text:
            sys.exit(f"{args.name}: {thing!r} is not in the log")
    if args.exit != 0 and not items:
        sys.exit(f"{args.name}: a failing run with no item")
    with open(base + ".truth", "w") as out:
        out.write(f"command\t{args.command}\nexit\t{args.exit}\n")
        if verdict:
            out.write(f"verdict\t{verdict}\n")
        for item in items:
            out.write(f"item\t{item}\n")
    print(f"{args.name}: exit {args.exit}, {len(items)} items, verdict {verdict!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
