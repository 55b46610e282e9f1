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
fn librechat_example_has_the_seed_block() {
    let yaml = read("librechat.example.yaml");
    for line in [
        "mcpServers:",
        "  forge-bash:",
        "    type: stdio",
        "    title: \"Forge Bash\"",
        "    command: /usr/local/bin/forge-bash",
        "    timeout: 330000",
        "    initTimeout: 30000",
        "    serverInstructions: |",
        "      Bash execution in /workspace. Supports chains (| && || ;).",
        "      rm is blocked — use uvilo-trash instead. All commands are audit-logged.",
    ] {
        assert!(yaml.lines().any(|l| l == line), "missing line {line:?}");
    }
    // The instructions in the example are the server's own, for the default workdir.
    assert_eq!(
        forge_bash::server::instructions("/workspace"),
        "Bash execution in /workspace. Supports chains (| && || ;).\n\
         rm is blocked — use uvilo-trash instead. All commands are audit-logged."
    );
}
