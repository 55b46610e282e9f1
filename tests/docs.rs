use serde_json::Value;

fn read(path: &str) -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/").to_owned() + path).unwrap()
}

#[test]
fn readme_registration_blocks_are_valid_json_for_the_binary() {
    let readme = read("README.md");
    let blocks: Vec<&str> = readme
        .split("```json\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
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
    let block = readme
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README's LibreChat block");
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
