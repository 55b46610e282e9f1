//! Tests of the renderer: line mode, screen mode, memory.

use super::*;

/// What a capture keeps.
const HEAD: Keep = Keep { head: 51_204 };
const BOTH: Keep = HEAD;

#[track_caller]
fn shows(raw: &str, expected: &str) {
    assert_eq!(render(raw.as_bytes(), HEAD).head, expected, "{raw:?}");
}

#[test]
fn terminal_rules() {
    shows("\x1b[31mred\x1b[0m\n", "red\n");
    shows("\x1b[1;32mbold green\x1b[m plain\n", "bold green plain\n");
    shows("a\r\nb\r\n", "a\nb\n");
    shows("10%\r20%\r100%\ndone\n", "100%\ndone\n");
    shows("downloading 10%\rok\x1b[K\n", "ok\n");
    shows("long line here\rshort\n", "shortline here\n");
    shows("b\x08bo\x08ol\x08ld\x08d\n", "bold\n");
    shows("_\x08X_\x08Y\n", "XY\n");
    shows("a\tb\n", "a\tb\n");
    shows(
        "\x1b]8;;https://example.com\x1b\\link text\x1b]8;;\x1b\\\n",
        "link text\n",
    );
    shows("\x1b]0;window title\x07after\n", "after\n");
    shows("abc\x1b[2Kxy\n", "   xy\n");
    shows("no newline at end", "no newline at end");
    shows("progress\r", "progress");
    shows("é\rx\n", "x\n");
    shows("bell\x07 stays\n", "bell\x07 stays\n");
}

#[test]
fn sequences_and_redraws_split_across_reads() {
    let raw = "\x1b[31mred\x1b[0m 10%\r\x1b[32m100%\x1b[0m\nnext\n".as_bytes();
    let whole = render(raw, BOTH);
    for at in 1..raw.len() {
        let mut renderer = Renderer::new(BOTH);
        renderer.push(&raw[..at]);
        renderer.push(&raw[at..]);
        assert_eq!(renderer.finish(), whole, "split at {at}");
        assert_eq!(renderer.take_lines(), whole.head);
    }
    assert_eq!(whole.head, "100%10%\nnext\n");
}

#[test]
fn a_progress_bar_redrawn_20000_times_is_one_line() {
    let mut renderer = Renderer::new(HEAD);
    for n in 0..20_000 {
        renderer.push(format!("\r[{:<10}] {n:>5}/20000", "#".repeat(n % 11)).as_bytes());
    }
    renderer.push(b"\nafter\n");
    let rendered = renderer.finish();
    assert_eq!(rendered.head, "[#         ] 19999/20000\nafter\n");
    assert_eq!((rendered.lines, rendered.newlines), (2, 2));
}

#[test]
fn a_line_that_never_ends_stays_bounded() {
    let mut renderer = Renderer::new(BOTH);
    for _ in 0..1000 {
        renderer.push(&[b'x'; 1000]);
    }
    assert!(renderer.lines.cells.len() <= BOTH.head);
    let rendered = renderer.finish();
    assert_eq!(rendered.head.len(), BOTH.head);
    assert_eq!(rendered.lines, 1);
}

#[test]
fn finished_lines_are_handed_over_as_they_end() {
    let text: String = (0..10_000)
        .map(|n| format!("\x1b[1mline\x1b[0m {n}\n"))
        .collect();
    let mut renderer = Renderer::new(BOTH);
    let mut lines = String::new();
    for chunk in text.as_bytes().chunks(1000) {
        renderer.push(chunk);
        lines.push_str(&renderer.take_lines());
    }
    renderer.push(b"last\rLAST, no newline");
    let rendered = renderer.finish();
    lines.push_str(&renderer.take_lines());
    let expected: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
    assert_eq!(lines, format!("{expected}LAST, no newline"));
    assert_eq!(rendered.lines, 10_001);
    assert_eq!(rendered.bytes, lines.len() as u64);
}

mod screen_tests {
    use super::*;

    const KEEP: Keep = Keep { head: 51_204 };

    #[track_caller]
    fn shows(raw: &str, expected: &str) {
        let mut renderer = Renderer::new(KEEP);
        renderer.push(raw.as_bytes());
        let rendered = renderer.finish();
        let lines = renderer.take_lines();
        assert_eq!(rendered.head, expected, "{raw:?}");
        assert_eq!(lines, expected, "{raw:?}");
        // Byte by byte, the same.
        let mut renderer = Renderer::new(KEEP);
        for b in raw.as_bytes() {
            renderer.push(std::slice::from_ref(b));
        }
        assert_eq!(renderer.finish().head, expected, "{raw:?} byte by byte");
    }

    #[test]
    fn columns_are_a_terminals() {
        shows("你好\rx\n", "x 好\n");
        shows("你好\r\x1b[2Cx\n", "你x \n");
        shows("a\tb\rxyz\n", "xyz     b\n");
        shows("ab\tc\n", "ab\tc\n");
        shows("e\u{301}\rx\n", "x\n");
        shows("e\u{301}x\n", "e\u{301}x\n");
        shows("\x1b[0mabc\x7f\n", "abc\x7f\n");
        shows("\x1b[0mc1\u{85}\n", "c1\u{85}\n");
        shows("\x1b[0mpage\x0c\n", "page\x0c\n");
        shows("abcdef\r\x1b[2@\n", "  abcdef\n");
        shows("abcdef\r\x1b[2P\n", "cdef\n");
        shows("abcdef\r\x1b[2X\n", "  cdef\n");
    }

    #[test]
    fn the_final_overwrite_of_a_very_long_line_is_kept() {
        let mut raw = "x".repeat(200_000);
        raw.push_str("\rdone\n");
        let rendered = render(raw.as_bytes(), KEEP);
        assert!(rendered.head.starts_with("donexxx"));
        assert_eq!(rendered.lines, 1);
    }

    #[test]
    fn nested_progress_bars_show_their_final_state() {
        // tqdm's nested bars: the inner bar on the line below, redrawn with \r and
        // cursor up.
        let mut raw = String::from("start\n");
        for epoch in 0..3 {
            for step in 0..=100 {
                raw.push_str(&format!("\repochs {epoch}/3\n\r  step {step:>3}/100\x1b[A"));
            }
        }
        raw.push_str("\repochs 3/3\n\r  step done\x1b[K\ndone\n");
        shows(&raw, "start\nepochs 3/3\n  step done\ndone\n");
    }

    #[test]
    fn docker_pull_redraws_lines_above() {
        let mut raw = String::from("Pulling from library/app\n");
        let layers = ["a1", "b2", "c3"];
        for layer in layers {
            raw.push_str(&format!("{layer}: Pulling fs layer\n"));
        }
        for pct in (0..=100).step_by(10) {
            raw.push_str(&format!("\x1b[{}A", layers.len()));
            for layer in layers {
                raw.push_str(&format!("\x1b[2K\r{layer}: Downloading {pct}%\n"));
            }
        }
        raw.push_str("\x1b[3A");
        for layer in layers {
            raw.push_str(&format!("\x1b[2K\r{layer}: Pull complete\n"));
        }
        raw.push_str("Status: Downloaded newer image\n");
        shows(
            &raw,
            "Pulling from library/app\na1: Pull complete\nb2: Pull complete\nc3: Pull \
             complete\nStatus: Downloaded newer image\n",
        );
    }

    #[test]
    fn a_scroll_region_keeps_a_progress_line_at_the_bottom() {
        // apt: lines scroll in a region above a progress line drawn at the bottom.
        let mut raw = String::from("\x1b7\x1b[0;49r\x1b8\x1b[1A\n");
        for n in 0..80 {
            raw.push_str(&format!("Unpacking pkg{n} ...\n"));
            raw.push_str(&format!(
                "\x1b7\x1b[50;0f\x1b[42mProgress: [{n:>3}%]\x1b[49m\x1b8"
            ));
        }
        // At the end: the region reset, the progress line erased.
        raw.push_str("\x1b7\x1b[r\x1b[50;1H\x1b[2K\x1b8");
        let rendered = render(raw.as_bytes(), KEEP);
        assert!(
            rendered.head.contains("Unpacking pkg79 ..."),
            "{:?}",
            &rendered.head[rendered.head.len().saturating_sub(300)..]
        );
        assert!(!rendered.head.contains("\x1b"));
        assert!(!rendered.head.contains("Progress"), "{}", rendered.head);
    }

    #[test]
    fn lines_after_a_screen_keep_their_raw_numbers() {
        let mut raw = String::new();
        raw.push_str("line 1\nbar\n");
        for n in 0..50 {
            raw.push_str(&format!("\x1b[1A\x1b[2Kbar {n}\n"));
        }
        for n in 3..=300 {
            raw.push_str(&format!("line {n}\n"));
        }
        raw.push_str("error: at the end\n");
        let mut renderer = Renderer::new(KEEP);
        renderer.push(raw.as_bytes());
        let rendered = renderer.finish();
        let text = renderer.take_lines();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "line 1");
        assert_eq!(lines[1], "bar 49");
        assert_eq!(lines[2], "line 3");
        let error = lines.iter().position(|l| l.starts_with("error")).unwrap() as u64 + 1;
        let raw_lines: Vec<&str> = raw.lines().collect();
        let at = rendered.raw_line(error);
        assert_eq!(raw_lines[at as usize - 1], "error: at the end");
        assert_eq!(rendered.raw_line(1), 1);
        // Memory: back in line mode, no screen.
        assert!(renderer.screen.is_none());
    }
}

mod memory_tests {
    use super::*;

    #[test]
    fn lines_not_yet_final_stay_within_their_bytes() {
        let mut renderer = Renderer::new(Keep { head: 51_204 });
        let line = format!("\x1b[1m{}\n", "ж".repeat(25_000));
        for _ in 0..60 {
            renderer.push(line.as_bytes());
            assert!(renderer.lines.pending_bytes <= PENDING_BYTES + 50_000);
            assert_eq!(
                renderer.lines.pending_bytes,
                renderer
                    .lines
                    .pending
                    .iter()
                    .map(|(t, _)| t.len())
                    .sum::<usize>()
            );
        }
        let rendered = renderer.finish();
        assert_eq!(rendered.lines, 60);
    }
}
