//! The parser's tables: which simple commands it gives, with which words, in which
//! order. It knows nothing of rm, and neither do these tests.
//!
//! Each command is written as its words (after quote removal, expansions taken as
//! empty). Keywords stay words of the command they stand before (`{ a` is one
//! command); the judge passes them. Commands come as bash completes them: a
//! substitution's before the command it stands in.

use std::ops::ControlFlow;

use super::redirect::Heredoc;
use super::word::{escaped_in_pattern, plain_in_word};
use super::{Command, MAX_DEPTH, Parsed, Parser, Visitor, Word, is_assignment, parse};

/// Records every command; stops at a command named `stop`. `print ARGS` prints its
/// arguments to a pipe.
#[derive(Default)]
struct Record {
    words: Vec<Vec<String>>,
    stdin: Vec<Option<String>>,
    depth: Vec<usize>,
    source: Vec<String>,
    last: Vec<Word>,
    /// Functions defined (`f?`), and in effect (`f`, once the definition ends).
    functions: Vec<String>,
}

impl Visitor for Record {
    fn command(&mut self, command: &Command<'_>) -> ControlFlow<()> {
        let words: Vec<String> = command.words.iter().map(|w| w.text.clone()).collect();
        let stop = words.first().is_some_and(|w| w == "stop");
        self.words.push(words);
        self.stdin.push(command.stdin.map(str::to_owned));
        self.depth.push(command.depth);
        self.source.push(command.source());
        self.last = command.words.to_vec();
        if stop {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn function(&mut self, name: &str) {
        self.functions.push(format!("{name}?"));
    }

    fn function_in_effect(&mut self, name: &str) {
        self.functions.push(name.to_owned());
    }

    fn printed(&mut self, words: &[Word], _stdin: Option<&str>) -> Option<String> {
        let (name, args) = words.split_first()?;
        let args: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
        (name.text == "print").then(|| args.join(" "))
    }
}

fn visit(text: &str) -> (Record, Parsed) {
    let mut record = Record::default();
    let parsed = parse(text, 0, &mut record);
    (record, parsed)
}

/// Each text gives these commands, as words, in this order.
#[track_caller]
fn table(rows: &[(&str, &[&[&str]])]) {
    for (text, expected) in rows {
        let (record, parsed) = visit(text);
        assert_eq!(record.words, *expected, "commands of {text:?}");
        assert!(!parsed.stopped && !parsed.too_deep, "{text:?}: {parsed:?}");
    }
}

#[test]
fn lists_and_pipelines() {
    table(&[
        ("a | b; c", &[&["a"], &["b"], &["c"]]),
        (
            "a && b || c & d |& e",
            &[&["a"], &["b"], &["c"], &["d"], &["e"]],
        ),
        ("a x\nb y\n\nc", &[&["a", "x"], &["b", "y"], &["c"]]),
        ("a;b;;c", &[&["a"], &["b"], &["c"]]),
        ("a \\\n x", &[&["a", "x"]]),
        ("FOO=1 a", &[&["FOO=1", "a"]]),
        ("! a", &[&["!", "a"]]),
        ("", &[]),
        ("  ;  ", &[]),
    ]);
}

#[test]
fn comments() {
    table(&[
        ("a # b; c", &[&["a"]]),
        ("# a\nb", &[&["b"]]),
        ("a#b c", &[&["a#b", "c"]]),
        ("a '#' \"#\" \\#", &[&["a", "#", "#", "#"]]),
        ("a # $(b)\nc", &[&["a"], &["c"]]),
    ]);
}

#[test]
fn quotes_and_escapes() {
    table(&[
        ("a 'b c' \"d e\"", &[&["a", "b c", "d e"]]),
        ("'a;b' \"c|d\" e\\;f", &[&["a;b", "c|d", "e;f"]]),
        ("a \"b\\\"c\" 'd\\'", &[&["a", "b\"c", "d\\"]]),
        ("$'a\\x62\\143\\u0064' $\"e\"", &[&["abcd", "e"]]),
        ("r\\\nm x", &[&["rm", "x"]]),
        ("a \"unterminated; b", &[&["a", "unterminated; b"]]),
    ]);
}

#[test]
fn heredoc_bodies_are_data() {
    table(&[
        ("cat <<EOF\nrm x\nEOF\nb", &[&["cat"], &["b"]]),
        ("cat <<-EOF\n\trm x\n\tEOF\nb", &[&["cat"], &["b"]]),
        ("cat <<'EOF'\n$(a)\nEOF\nb", &[&["cat"], &["b"]]),
        ("cat <<\"EOF\"\n$(a)\nEOF", &[&["cat"]]),
        ("cat <<\\EOF\n$(a)\nEOF", &[&["cat"]]),
        ("cat <<E\"OF\"\n`a`\nEOF", &[&["cat"]]),
        ("cat <<A <<B\na\nA\nb\nB\nc", &[&["cat"], &["c"]]),
        ("cat <<EOF\nrm x", &[&["cat"]]),
        // Unquoted, the substitutions of the body run before the command.
        ("cat <<EOF\n$(a) `b`\nEOF", &[&["a"], &["b"], &["cat"]]),
        ("cat <<EOF\n${x:-$(a)}\nEOF\nb", &[&["a"], &["cat"], &["b"]]),
        // A command with a heredoc is complete once its body is read.
        ("cat <<EOF; b\nrm x\nEOF", &[&["b"], &["cat"]]),
        ("cat <<EOF | b\nx\nEOF", &[&["b"], &["cat"]]),
        ("x=$(cat <<EOF\nhi\nEOF\n); b", &[&["cat"], &["x="], &["b"]]),
    ]);
}

#[test]
fn heredocs_and_here_strings_are_stdin() {
    for (text, stdin) in [
        ("cat <<EOF\nrm x\nEOF", "rm x\n"),
        ("cat <<-EOF\n\trm x\n\t\ty\n\tEOF", "rm x\ny\n"),
        ("cat <<'EOF'\n$(a)\nEOF", "$(a)\n"),
        ("cat <<A <<B\na\nA\nb\nB", "b\n"),
        ("cat <<EOF\nunterminated", "unterminated\n"),
        ("cat <<< 'a b'", "a b"),
        ("cat <<<$x", ""),
        ("print a b | cat", "a b"),
        ("print a b | cat <<< c", "c"),
    ] {
        let (record, _) = visit(text);
        let last = record.stdin.last().cloned().flatten();
        assert_eq!(last.as_deref(), Some(stdin), "stdin in {text:?}");
    }
    for text in ["cat", "print a || cat", "print a; cat", "print a | b | cat"] {
        let (record, _) = visit(text);
        assert_eq!(record.stdin.last(), Some(&None), "no stdin in {text:?}");
    }
}

/// A compound piped on writes what its own commands print, in order; not what a
/// substitution in them prints, nor a compound not piped.
#[test]
fn compounds_print_what_their_commands_print() {
    for (text, stdin) in [
        ("{ print a; } | cat", "a"),
        ("(print a) | cat", "a"),
        ("{ print a; print b; } | cat", "ab"),
        ("if x; then print a; fi | cat", "a"),
        ("for i in 1; do print a; done | cat", "a"),
        ("while x; do print a; done | cat", "a"),
        ("{ { print a; }; print b; } | cat", "ab"),
        ("(print a; (print b)) | cat", "ab"),
        ("{ print $(print a) b; } | cat", " b"),
        ("{ print a; } 2> /dev/null | cat", "a"),
    ] {
        let (record, _) = visit(text);
        let last = record.stdin.last().cloned().flatten();
        assert_eq!(last.as_deref(), Some(stdin), "stdin in {text:?}");
    }
    for text in ["{ print a; }; cat", "(print a); cat", "{ print a; } && cat"] {
        let (record, _) = visit(text);
        assert_eq!(record.stdin.last(), Some(&None), "no stdin in {text:?}");
    }
}

/// A word is moved and recycled for every word of every command: a field more that
/// makes it larger than 96 bytes made the bench's chain of 128 KB slower by a
/// quarter to a factor of four.
#[test]
fn a_word_stays_small() {
    assert!(std::mem::size_of::<Word>() <= 96);
}

#[test]
fn arithmetic_is_data() {
    table(&[
        ("(( a << 2 ))", &[]),
        ("(( a << 2 )) && b", &[&["b"]]),
        ("(( $(b) ))", &[&["b"]]),
        ("echo $(( 1 << 2 ))", &[&["echo", ""]]),
        ("echo $(( `a` + $(b) ))", &[&["a"], &["b"], &["echo", ""]]),
        ("echo $[ 1 << 2 ]", &[&["echo", ""]]),
        ("a[1<<2]=x b", &[&["a=x", "b"]]),
        ("a[$(b)]=x", &[&["b"], &["a=x"]]),
        ("let 'x = 1 << 2'; b", &[&["let", "x = 1 << 2"], &["b"]]),
        // `$((` that does not close with `))` is a subshell in a substitution.
        ("echo $((a) )", &[&["a"], &["echo", ""]]),
        (
            "for (( i = 0; i << 2; i++ )); do c; done",
            &[&["for"], &["do", "c"], &["done"]],
        ),
    ]);
}

#[test]
fn case_patterns_are_data_and_items_are_commands() {
    table(&[
        (
            "case $v in a|rm) b;; (c) d;; esac; e",
            &[&["b"], &["d"], &["e"]],
        ),
        (
            "case x in x) a;& y) b;;& *) c;; esac",
            &[&["a"], &["b"], &["c"]],
        ),
        (
            "case x in\n  rm) a ;;\n  *) b ;;\nesac\nc",
            &[&["a"], &["b"], &["c"]],
        ),
        ("case $(a) in $(b)) c;; esac", &[&["a"], &["b"], &["c"]]),
        ("case x in x) a; b;; esac", &[&["a"], &["b"]]),
        ("case x in x) ;; esac; a", &[&["a"]]),
        (
            "echo case x in x) a;; esac",
            &[&["echo", "case", "x", "in", "x"], &["a"], &["esac"]],
        ),
        ("x=$(case x in x) a;; esac) b", &[&["a"], &["x=", "b"]]),
    ]);
}

#[test]
fn function_bodies_are_commands() {
    table(&[
        // A definition's name is no command.
        ("f() { a; }", &[&["{", "a"], &["}"]]),
        ("f() ( a )", &[&["a"]]),
        ("f () { a; }; f", &[&["{", "a"], &["}"], &["f"]]),
        (
            "function g { a; }; g",
            &[&["function", "g", "{", "a"], &["}"], &["g"]],
        ),
        ("function g() { a; }", &[&["{", "a"], &["}"]]),
        ("coproc c { a; }", &[&["coproc", "c", "{", "a"], &["}"]]),
    ]);
}

#[test]
fn substitutions_nest() {
    table(&[
        ("echo $(a $(b))", &[&["b"], &["a", ""], &["echo", ""]]),
        ("echo `a \\`b\\``", &[&["b"], &["a", ""], &["echo", ""]]),
        (
            "echo \"$(a)\" '$(b)' \"`c`\"",
            &[&["a"], &["c"], &["echo", "", "$(b)", ""]],
        ),
        (
            "echo ${v:-$(a)} ${x/a/$(b)}",
            &[&["a"], &["b"], &["echo", "", ""]],
        ),
        ("echo ${v:-a b} ${#x}", &[&["echo", "a b", ""]]),
        // A process substitution is a word, or part of one.
        ("diff <(a) >(b)", &[&["a"], &["b"], &["diff", "", ""]]),
        ("x=<(a) b", &[&["a"], &["x=", "b"]]),
        ("tee > >(a) b", &[&["a"], &["tee", "b"]]),
        ("b < <(a)", &[&["a"], &["b"]]),
        ("echo $( (a) )", &[&["a"], &["echo", ""]]),
        ("x=$(a) b", &[&["a"], &["x=", "b"]]),
        ("echo $(a", &[&["a"], &["echo", ""]]),
        ("echo `a", &[&["a"], &["echo", ""]]),
    ]);
}

#[test]
fn subshells_groups_and_compounds() {
    table(&[
        ("(a; b) | c", &[&["a"], &["b"], &["c"]]),
        ("{ a; b; }", &[&["{", "a"], &["b"], &["}"]]),
        (
            "if a; then b; else c; fi",
            &[&["if", "a"], &["then", "b"], &["else", "c"], &["fi"]],
        ),
        (
            "while a; do b; done",
            &[&["while", "a"], &["do", "b"], &["done"]],
        ),
        (
            "for x in a b; do c $x; done",
            &[&["for", "x", "in", "a", "b"], &["do", "c", ""], &["done"]],
        ),
        ("[[ $(a) == rm ]] && b", &[&["a"], &["b"]]),
        ("[[ a < b && ( c > d || e ) ]]; f", &[&["f"]]),
        ("x=(a $(b)) c", &[&["b"], &["x=(", "c"]]),
        ("arr=(rm x); b", &[&["arr=("], &["b"]]),
    ]);
}

#[test]
fn redirections_belong_to_their_command() {
    table(&[
        ("a >out 2>&1 <in", &[&["a"]]),
        ("a &>log b", &[&["a", "b"]]),
        ("a 3>&1 {fd}>x b", &[&["a", "b"]]),
        ("a > $(b)", &[&["b"], &["a"]]),
        (">log a", &[&["a"]]),
        ("a 2>", &[&["a"]]),
    ]);
    for (text, source) in [
        ("x; a >out 2>&1 <in; y", "a >out 2>&1 <in"),
        (">log a", ">log a"),
        ("cat <<< 'a b'", "cat <<< 'a b'"),
        ("echo a; sudo rm -rf x && ls", "sudo rm -rf x"),
    ] {
        let (record, _) = visit(text);
        assert!(
            record.source.iter().any(|s| s == source),
            "{text:?}: {:?}",
            record.source
        );
    }
}

#[test]
fn words_say_how_they_were_written() {
    let word = |text: &str| {
        let (record, _) = visit(text);
        record.last.into_iter().next().expect(text)
    };
    for text in ["rm", "a/rm"] {
        let w = word(text);
        assert!(
            w.is_plain() && !w.may_vanish() && !w.is_computed(),
            "{text:?}"
        );
    }
    for (text, literal) in [
        ("'rm'", "rm"),
        ("\\rm", "rm"),
        ("r\"m\"", "rm"),
        ("$'\\x72m'", "rm"),
    ] {
        let w = word(text);
        assert_eq!(w.text, literal);
        assert!(
            !w.is_plain() && !w.may_vanish() && !w.is_computed(),
            "{text:?}"
        );
    }
    for text in ["$x", "${x}", "\"$@\"", "$(a)", "`a`"] {
        let w = word(text);
        assert!(w.may_vanish() && w.is_computed(), "{text:?} may be no word");
    }
    for text in ["\"$x\"", "\"$(a)\""] {
        let w = word(text);
        assert!(!w.may_vanish() && w.is_computed(), "{text:?} is one word");
    }
    let empty = word("\"\"");
    assert!(empty.text.is_empty() && !empty.may_vanish() && !empty.is_computed());
    assert!(!word("$(( 1 ))").may_vanish());
    assert_eq!(word("${v:-rm}").text, "rm");
    assert_eq!(word("${v#rm}").text, "");
    assert_eq!(word("r${x}m").before_split(), Some("r"));
    assert_eq!(word("\"r${x}\"m").before_split(), None);
    let glob = word("/usr/bin/r[m]");
    assert!(glob.glob && !glob.brace && glob.pattern() == "/usr/bin/r[m]");
    let quoted = word("'r*'");
    assert!(!quoted.glob && quoted.pattern() == "r\\*");
    assert!(word("{rm,x}").brace);
}

#[test]
fn assignments() {
    for text in ["a=1", "a=", "_a1=x", "a+=1", "a[1]=x", "a[$i]+=x"] {
        assert!(is_assignment(text), "{text:?}");
    }
    for text in ["a", "=x", "1a=x", "a-b=1", "a[1=x", "$a=1", "a b=1"] {
        assert!(!is_assignment(text), "{text:?}");
    }
}

/// A heredoc body copied at once is the body read a line at a time, and the parse
/// goes on from the same place: random texts of lines, joins and tabs, each
/// delimiter quoted and not.
#[test]
fn heredoc_bodies_at_once_as_by_lines() {
    let alphabet = ['a', 'E', '\n', '\\', '\t'];
    let mut seed = 0x0123_4567_89ab_cdef_u64;
    let mut record = Record::default();
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 12) as usize;
        let text: Vec<char> = (0..len)
            .map(|k| alphabet[((seed >> (8 + 4 * k)) % alphabet.len() as u64) as usize])
            .collect();
        for (delimiter, quoted) in [("E", false), ("E", true), ("", false), ("aE", true)] {
            let doc = Heredoc::new(delimiter, false, quoted);
            let mut at_once = Parser::new(text.clone(), 0, &mut record);
            let Some(body) = at_once.plain_heredoc_body(&doc) else {
                continue;
            };
            let end = at_once.i;
            let mut by_lines = Parser::new(text.clone(), 0, &mut record);
            let expected = by_lines.heredoc_lines(&doc);
            assert_eq!(body, expected, "{text:?} until {delimiter:?}");
            assert_eq!(end, by_lines.i, "{text:?} until {delimiter:?}");
        }
    }
}

/// The parser's sets of characters hold what they name, and nothing else.
#[test]
fn character_sets() {
    for c in (0..=0x2ff)
        .filter_map(char::from_u32)
        .chain(['€', '\u{10ffff}'])
    {
        let pattern = matches!(
            c,
            '*' | '?' | '[' | ']' | '{' | '}' | ',' | '\\' | '(' | ')' | '|' | '@' | '+' | '!'
        );
        assert_eq!(escaped_in_pattern(c), pattern, "{c:?}");
        let special = matches!(
            c,
            ' ' | '\t'
                | '\n'
                | ';'
                | '&'
                | '|'
                | '<'
                | '>'
                | '('
                | ')'
                | '['
                | '\\'
                | '\''
                | '"'
                | '$'
                | '`'
        );
        assert_eq!(plain_in_word(c), !special, "{c:?}");
    }
}

/// `is_assignment` reads a word once; it says what the definition says: the text
/// before the first `=`, less one `+`, less a subscript `[…]` that ends it, is a name.
#[test]
fn assignments_as_defined() {
    let by_definition = |word: &str| {
        let Some(eq) = word.find('=') else {
            return false;
        };
        let name = word[..eq].strip_suffix('+').unwrap_or(&word[..eq]);
        let name = match name.find('[') {
            Some(bracket) if name.ends_with(']') => &name[..bracket],
            _ => name,
        };
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let alphabet = ['a', '_', '1', '=', '+', '[', ']', '-', 'é'];
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..100_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 8) as usize;
        let word: String = (0..len)
            .map(|k| alphabet[((seed >> (8 + 5 * k)) % alphabet.len() as u64) as usize])
            .collect();
        assert_eq!(is_assignment(&word), by_definition(&word), "{word:?}");
    }
}

#[test]
fn each_level_of_nesting_is_deeper() {
    let (record, _) = visit("a $(b `c`)");
    assert_eq!(record.words, [vec!["c"], vec!["b", ""], vec!["a", ""]]);
    let (c, b, a) = (record.depth[0], record.depth[1], record.depth[2]);
    assert!(a == 0 && b > a && c > b, "{:?}", record.depth);
    let (record, _) = visit_at("a", 7);
    assert_eq!(record.depth, [7]);
}

fn visit_at(text: &str, depth: usize) -> (Record, Parsed) {
    let mut record = Record::default();
    let parsed = parse(text, depth, &mut record);
    (record, parsed)
}

#[test]
fn too_deep_is_said_not_overflowed() {
    let deep = format!("a {}", "$(".repeat(10_000));
    let (_, parsed) = visit(&deep);
    assert!(parsed.too_deep);
    let (record, parsed) = visit_at("a", MAX_DEPTH + 1);
    assert!(parsed.too_deep && record.words.is_empty());
    let (_, parsed) = visit("a $(b $(c $(d)))");
    assert!(!parsed.too_deep);
}

/// What scans that found no balancing `)` or `]` learnt answers later scans as a
/// fresh scan would: random texts of brackets, quotes and escapes, every start
/// asked in turn, forwards and backwards.
#[test]
fn unclosed_scans_answer_as_fresh_ones() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = ['(', ')', '[', ']', '\'', '"', '\\', 'a', '$'];
    let mut record = Record::default();
    for _ in 0..3000 {
        let len = (next() % 24) as usize;
        let text: Vec<char> = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        for (open, close) in [('(', ')'), ('[', ']')] {
            let fresh: Vec<_> = (0..=len)
                .map(|from| Parser::new(text.clone(), 0, &mut record).matching(from, open, close))
                .collect();
            let mut forwards = Parser::new(text.clone(), 0, &mut record);
            let asked: Vec<_> = (0..=len)
                .map(|from| forwards.matching(from, open, close))
                .collect();
            assert_eq!(asked, fresh, "{text:?} from each start, for {open}");
            let mut backwards = Parser::new(text.clone(), 0, &mut record);
            let mut asked: Vec<_> = (0..=len)
                .rev()
                .map(|from| backwards.matching(from, open, close))
                .collect();
            asked.reverse();
            assert_eq!(
                asked, fresh,
                "{text:?} from each start backwards, for {open}"
            );
        }
    }
}

#[test]
fn the_visitor_can_stop_the_parse() {
    for (text, seen) in [
        ("a; stop; b", &[&["a"][..], &["stop"]][..]),
        ("a $(stop) $(b); c", &[&["stop"]]),
        ("a `stop`; b", &[&["stop"]]),
        ("cat <<EOF; b\n$(stop)\nEOF\nc", &[&["b"], &["stop"]]),
    ] {
        let (record, parsed) = visit(text);
        assert_eq!(record.words, seen, "{text:?}");
        assert!(parsed.stopped, "{text:?}");
    }
}

#[test]
fn process_substitutions_keep_what_they_print() {
    let fed = |text: &str| {
        let (record, _) = visit(text);
        record
            .last
            .iter()
            .map(|w| w.fed.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(fed("b <(print a) x"), [None, Some("a".into()), None]);
    assert_eq!(
        fed("b --f=<(print a)<(print c)"),
        [None, Some("a\nc".into())]
    );
    assert_eq!(fed("b >(print a) <(c)"), [None, None, None]);
}

#[test]
fn extended_globs_are_part_of_words() {
    table(&[
        ("/bin/@(a|b)c x", &[&["/bin/@(a|b)c", "x"]]),
        ("a+(b) ?(c)*(d) x!(e)", &[&["a+(b)", "?(c)*(d)", "x!(e)"]]),
        ("e @(a $(b) 'c|d')", &[&["b"], &["e", "@(a  c|d)"]]),
        // `!` that starts a word is the keyword; `@()` is no group.
        ("!(a)", &[&["!"], &["a"]]),
        ("case x in @(a|b)) c;; esac", &[&["c"]]),
        ("[[ x == @(a) ]]; c", &[&["c"]]),
    ]);
    let (record, _) = visit("a@(b|c)");
    assert!(record.last[0].glob);
}

#[test]
fn definitions_say_whether_they_take_effect() {
    for (text, expected) in [
        (
            "f() { :; }; g() (:)\nh() { :; }",
            &["f?", "f", "g?", "g", "h?", "h"][..],
        ),
        ("a; f() { :; } && b", &["f?", "f"]),
        ("f() { :; } || b", &["f?", "f"]),
        ("a && f() { :; }", &["f?"]),
        ("a || f() { :; }; g() { :; }", &["f?", "g?", "g"]),
        ("a |\nf() { :; }", &["f?"]),
        ("if a; then\nf() { :; }\nfi; g() { :; }", &["f?", "g?", "g"]),
        // After a keyword on its line, the name is read as a command's.
        ("{ f() { :; }; }", &[]),
        ("{\nf() { :; }; }", &["f?"]),
        ("(f() { :; })", &["f?"]),
        ("a `f() { :; }`; b", &["f?"]),
        ("a $(f() { :; }); b", &["f?"]),
        ("case a in a) f() { :; };; esac", &["f?"]),
        ("for a in b; do\nf() { :; }; done", &["f?"]),
        ("f() { :; } | a", &["f?"]),
        ("f() { :; } & a", &["f?"]),
        ("f() {\ng() { :; }; } | a", &["f?", "g?"]),
        ("f() { a | b; }; c & d", &["f?", "f"]),
        ("f() { a; }\n", &["f?", "f"]),
        ("f() ( a ) > log; b", &["f?", "f"]),
        // The bodies of `function NAME {` and `coproc NAME {` close compounds of their own.
        (
            "if a; then function g { :; }; coproc c { :; }\nf() { :; }; fi",
            &["f?"],
        ),
    ] {
        let (record, _) = visit(text);
        assert_eq!(record.functions, expected, "{text:?}");
    }
}
