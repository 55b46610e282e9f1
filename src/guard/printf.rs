//! What `echo` and `printf` print, from their literal arguments: escapes decoded
//! and `%s` filled, near enough to read the output as a script.

/// `echo [-neE]… ARGS`: `-e` decodes escapes (the last of `-e`/`-E` wins).
pub(super) fn echo(args: &[&str]) -> String {
    let mut escapes = false;
    let mut k = 0;
    while let Some(flags) = args.get(k).and_then(|a| a.strip_prefix('-')) {
        if flags.is_empty() || !flags.chars().all(|c| matches!(c, 'n' | 'e' | 'E')) {
            break;
        }
        for c in flags.chars() {
            escapes = match c {
                'e' => true,
                'E' => false,
                _ => escapes,
            };
        }
        k += 1;
    }
    let text = args[k..].join(" ");
    if escapes { unescape(&text, true) } else { text }
}

/// `printf FORMAT ARGS`: the format, escapes decoded, with each conversion given the
/// next argument, as often as arguments remain.
pub(super) fn printf(args: &[&str]) -> String {
    let args = match args.first() {
        Some(&"--") => &args[1..],
        _ => args,
    };
    let Some((format, values)) = args.split_first() else {
        return String::new();
    };
    let mut out = String::new();
    let mut next = 0;
    loop {
        let before = next;
        fill(format, values, &mut next, &mut out);
        if next == before || next >= values.len() {
            break;
        }
    }
    out
}

/// One pass of a format: escapes decoded, conversions filled from `values`.
fn fill(format: &str, values: &[&str], next: &mut usize, out: &mut String) {
    let mut chars = format.chars().peekable();
    let mut literal = String::new();
    while let Some(c) = chars.next() {
        if c != '%' {
            literal.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            literal.push('%');
            continue;
        }
        out.push_str(&unescape(&std::mem::take(&mut literal), false));
        // Flags, width and precision, up to the conversion.
        let mut conversion = None;
        for c in chars.by_ref() {
            if c.is_ascii_alphabetic() {
                conversion = Some(c);
                break;
            }
        }
        let value = values.get(*next).copied().unwrap_or("");
        *next += 1;
        match conversion {
            Some('b') => out.push_str(&unescape(value, true)),
            _ => out.push_str(value),
        }
    }
    out.push_str(&unescape(&literal, false));
}

/// Decodes backslash escapes as `echo -e` (`zero_octal`: `\0NNN`) or a printf format
/// (`\NNN`) does: `\n`, `\t`, `\xHH`, `\uHHHH`, octal; `\c` ends the output.
pub(super) fn unescape(text: &str, zero_octal: bool) -> String {
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut k = 0;
    while let Some(&c) = chars.get(k) {
        k += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = chars.get(k) else {
            out.push('\\');
            break;
        };
        k += 1;
        if e == 'c' {
            return out;
        }
        let simple = simple_escape(e);
        if let Some(simple) = simple {
            out.push(simple);
            continue;
        }
        let (radix, max, skip) = match e {
            'x' => (16, 2, 0),
            'u' => (16, 4, 0),
            'U' => (16, 8, 0),
            '0' if zero_octal => (8, 3, 0),
            '0'..='7' if !zero_octal => (8, 3, 1),
            _ => {
                out.push('\\');
                out.push(e);
                continue;
            }
        };
        // For `\NNN` the digit just read is the first of the number.
        let start = k - skip;
        let digits: String = chars[start..]
            .iter()
            .take(max)
            .take_while(|c| c.is_digit(radix))
            .collect();
        k = start + digits.len();
        match u32::from_str_radix(&digits, radix)
            .ok()
            .and_then(char::from_u32)
        {
            Some(decoded) => out.push(decoded),
            None if digits.is_empty() && e == '0' => out.push('\0'),
            None => {
                out.push('\\');
                out.push(e);
            }
        }
    }
    out
}

/// The one-letter escapes: `\n`, `\t`, …
fn simple_escape(e: char) -> Option<char> {
    Some(match e {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        'a' => '\x07',
        'b' => '\x08',
        'e' | 'E' => '\x1b',
        'f' => '\x0c',
        'v' => '\x0b',
        '\\' => '\\',
        _ => return None,
    })
}
