use serde_json::Value;

fn read(path: &str) -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/").to_owned() + path).unwrap()
}

/// The fenced code blocks of `text` in `language`, in order.
fn blocks<'a>(text: &'a str, language: &str) -> Vec<&'a str> {
    text.split(&format!("```{language}\n"))
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect()
}

/// The README's LibreChat registration.
fn readme_librechat_block(readme: &str) -> &str {
    blocks(readme, "yaml")
        .first()
        .copied()
        .expect("the README's LibreChat block")
}

#[test]
fn readme_registration_blocks_are_valid_json_for_the_binary() {
    let readme = read("README.md");
    let blocks = blocks(&readme, "json");
    assert_eq!(blocks.len(), 2, "Claude Code and Claude Desktop");
    for block in blocks {
        let config: Value = serde_json::from_str(block).unwrap_or_else(|e| panic!("{e}: {block}"));
        let server = &config["mcpServers"]["forge-bash"];
        assert!(server["command"].as_str().unwrap().ends_with("/forge-bash"));
        assert_eq!(server["args"][0], "--workdir");
    }
}

#[test]
fn librechat_example_has_the_seed_block_and_keeps_secrets_out() {
    let yaml = read("librechat.example.yaml");
    for line in [
        "mcpServers:",
        "  forge-bash:",
        "    type: stdio",
        "    title: \"Forge Bash\"",
        "    command: /usr/local/bin/forge-bash",
        "    timeout: 330000",
        "    initTimeout: 30000",
        "    serverInstructions: true",
    ] {
        assert!(yaml.lines().any(|l| l == line), "missing line {line:?}");
    }
    let readme = read("README.md");
    let block = readme_librechat_block(&readme);
    for text in [&yaml, &block.to_owned()] {
        let list = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("FORGE_BASH_ENV_EXCLUDE: "))
            .expect("an exclude list")
            .trim_matches('"');
        let filter = forge_bash::environ::Filter {
            include: vec![],
            exclude: list.split(',').map(str::to_owned).collect(),
        };
        for secret in [
            "JWT_SECRET",
            "JWT_REFRESH_SECRET",
            "CREDS_KEY",
            "CREDS_IV",
            "MONGO_URI",
            "MEILI_MASTER_KEY",
            "SESSION_SECRET",
            "OPENID_CLIENT_SECRET",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
        ] {
            assert!(!filter.allows(secret), "{secret} is let through");
        }
        assert!(filter.allows("PATH") && filter.allows("HOME"));
    }
    // The instructions LibreChat takes with `serverInstructions: true`.
    assert_eq!(
        forge_bash::server::instructions("/workspace"),
        "Bash execution in /workspace. Supports chains (| && || ;).\n\
         rm is blocked — use uvilo-trash instead. All commands are audit-logged."
    );
}

#[test]
fn readme_is_short() {
    let size = read("README.md").len();
    assert!(size <= 10 * 1024, "README.md is {size} bytes, over 10 KB");
}

/// Every relative link of README.md and docs/*.md names a file of the repository, and
/// a `#anchor` names a heading of that file.
#[test]
fn relative_links_point_at_files_and_headings() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = root.canonicalize().unwrap();
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    assert!(pages.len() > 1, "docs/ holds the manual's pages");
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let file = file
                .canonicalize()
                .unwrap_or_else(|_| panic!("{}: {target} names no file", page.display()));
            assert!(
                file.starts_with(&root),
                "{}: {target} is outside the repository",
                page.display()
            );
            if !anchor.is_empty() {
                let headings = anchors(&std::fs::read_to_string(&file).unwrap());
                assert!(
                    headings.iter().any(|h| h == anchor),
                    "{}: {target}: no such heading; there are {headings:?}",
                    page.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} links found");
}

/// The lines of `markdown` outside fenced code blocks.
fn outside_fences(markdown: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// `text` with its code spans (a run of backticks up to the next run of the same length)
/// dropped.
fn without_code_spans(text: &str) -> String {
    let mut kept = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        kept.push_str(&rest[..open]);
        let ticks = rest[open..].chars().take_while(|&c| c == '`').count();
        let body = &rest[open + ticks..];
        let mut search = 0;
        let close = loop {
            let Some(k) = body[search..].find('`') else {
                break None;
            };
            let at = search + k;
            let run = body[at..].chars().take_while(|&c| c == '`').count();
            if run == ticks {
                break Some(at + run);
            }
            search = at + run;
        };
        match close {
            Some(end) => rest = &body[end..],
            None => {
                kept.push_str(&rest[open..open + ticks]);
                rest = body;
            }
        }
    }
    kept.push_str(rest);
    kept
}

/// The targets of the inline links `[text](target)` outside code.
fn links(markdown: &str) -> Vec<String> {
    let prose = without_code_spans(&outside_fences(markdown).join("\n"));
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(k) = rest.find("](") {
        rest = &rest[k + 2..];
        let end = rest.find(')').expect("a link's closing parenthesis");
        targets.push(rest[..end].to_owned());
        rest = &rest[end..];
    }
    targets
}

/// The anchors GitHub gives the headings of `markdown`: the text lowercased, spaces
/// made `-`, punctuation but `-` and `_` removed; a repeated anchor gets `-1`, `-2`….
fn anchors(markdown: &str) -> Vec<String> {
    let mut anchors: Vec<String> = Vec::new();
    for line in outside_fences(markdown) {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let mut anchor = slug.clone();
        let mut n = 0;
        while anchors.contains(&anchor) {
            n += 1;
            anchor = format!("{slug}-{n}");
        }
        anchors.push(anchor);
    }
    anchors
}

#[test]
fn the_per_user_librechat_registration_serves_once_substituted() {
    let readme = read("README.md");
    let block = readme_librechat_block(&readme);
    // The args as LibreChat hands them over, the placeholder substituted.
    let args = block
        .split("args: [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("an args list");
    let words: Vec<String> = args
        .split(',')
        .map(|w| w.trim().trim_matches('"').to_owned())
        .collect();
    for word in ["--create-workdir", "--sandbox", "443,80"] {
        assert!(
            words.iter().any(|w| w == word) || args.contains(word),
            "{word}"
        );
    }
    let argv = |user: &str| {
        let mut argv = vec!["forge-bash".to_owned()];
        let joined = args.replace("{{LIBRECHAT_USER_ID}}", user);
        let mut rest = joined.as_str();
        while let Some(start) = rest.find('"') {
            let end = rest[start + 1..].find('"').unwrap() + start + 1;
            argv.push(rest[start + 1..end].to_owned());
            rest = &rest[end + 1..];
        }
        argv
    };
    let config = forge_bash::config::Config::try_parse_from(argv("alice")).unwrap();
    assert!(config.check_paths().is_ok());
    // Root or not (the sandbox is on), it starts; `{user}` is the user's.
    assert!(config.check_safety(0).is_ok() && config.check_safety(1000).is_ok());
    assert_eq!(config.user.as_deref(), Some("alice"));
    let config = config.for_user("alice");
    assert_eq!(config.workdir, std::path::Path::new("/workspace/alice"));
    assert_eq!(
        config.state_dir,
        std::path::Path::new("/tmp/forge-bash/alice")
    );
    assert!(config.create_workdir);
    // Left unsubstituted, the placeholder refuses start-up.
    let raw = forge_bash::config::Config::try_parse_from(argv("{{LIBRECHAT_USER_ID}}")).unwrap();
    assert!(raw.check_paths().is_err() || raw.check_safety(0).is_err());
    // Instructions as a string: per-user servers are not inspected at start-up.
    assert!(
        block
            .lines()
            .any(|l| l.trim_start().starts_with("serverInstructions: \""))
    );
    let yaml = read("librechat.example.yaml");
    assert!(yaml.contains(
        "#    args: [\"--user\", \"{{LIBRECHAT_USER_ID}}\", \"--workdir\", \"/workspace/{user}\""
    ));
}

/// docs/http.md shows deploy/'s files as they are, their comments aside.
#[test]
fn the_http_page_shows_the_deploy_files() {
    let page = read("docs/http.md");
    let blocks = blocks(&page, "yaml");
    for file in [
        "deploy/docker-compose.override.yml",
        "deploy/librechat.yaml",
    ] {
        let text = read(file);
        let bare: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            .trim_start()
            .to_owned();
        assert!(
            blocks.iter().any(|b| b.trim() == bare.trim()),
            "docs/http.md does not show {file} as it is:\n{bare}"
        );
    }
}
