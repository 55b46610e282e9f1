//! The deployment files, as far as a test can take them without a Docker daemon: the
//! Dockerfile's build stage builds what its run stage copies, and the run stage's
//! entrypoint, environment and user, with LibreChat's registration from `deploy/`,
//! serve two users over HTTP (paths under a temporary root instead of `/workspace`
//! and `/var/lib/forge-bash`, 127.0.0.1 instead of 0.0.0.0). The image itself is not
//! built here.

use std::path::Path;
use std::process::Command;

use crate::support::http::HttpServer;
use crate::support::{BIN, landlock_here};

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The Dockerfile's instructions, continuation lines joined.
fn instructions() -> Vec<(String, String)> {
    let text = read("Dockerfile").replace("\\\n", " ");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (word, rest) = l.split_once(' ').unwrap_or((l, ""));
            (word.to_owned(), rest.trim().to_owned())
        })
        .collect()
}

/// `KEY: value` (quotes removed) of the first line of `text` whose key is `key`.
fn yaml_value(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key}"))
        .trim_matches('"')
        .to_owned()
}

#[test]
fn the_build_stage_builds_what_the_run_stage_copies() {
    let steps = instructions();
    let froms: Vec<&String> = steps
        .iter()
        .filter(|(w, _)| w == "FROM")
        .map(|(_, r)| r)
        .collect();
    assert_eq!(froms.len(), 2, "a build stage and a run stage");
    assert!(froms[0].starts_with("rust:") && froms[0].ends_with(" AS build"));
    assert!(
        froms[1].starts_with("debian:"),
        "a Debian base: {}",
        froms[1]
    );
    let run: Vec<&String> = steps
        .iter()
        .filter(|(w, _)| w == "RUN")
        .map(|(_, r)| r)
        .collect();
    assert_eq!(run[0], "cargo build --release --locked --bin forge-bash");
    let copy = steps
        .iter()
        .find(|(w, r)| w == "COPY" && r.starts_with("--from=build"))
        .map(|(_, r)| r.clone())
        .unwrap();
    assert_eq!(
        copy,
        "--from=build /src/target/release/forge-bash /usr/local/bin/forge-bash"
    );
    assert!(steps.contains(&("WORKDIR".into(), "/src".into())));
    // The build context leaves out what is large and local.
    let ignore = read(".dockerignore");
    for entry in ["target", ".git", "**/node_modules"] {
        assert!(ignore.lines().any(|l| l == entry), "{entry}");
    }
    // Cargo.lock is in the repository: `--locked` builds what the tests built.
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("Cargo.lock")
            .is_file()
    );
    let lock = Command::new("git")
        .args(["ls-files", "--error-unmatch", "Cargo.lock"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Ok(lock) = lock {
        assert!(
            lock.status.success() || !lock.stderr.is_empty(),
            "Cargo.lock is committed"
        );
    }
}

#[test]
fn the_run_stage_serves_librechat_users_as_its_files_say() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the image's server runs as root");
        return;
    }
    if !landlock_here(3) {
        return;
    }
    let steps = instructions();
    let entrypoint: Vec<String> = steps
        .iter()
        .find(|(w, _)| w == "ENTRYPOINT")
        .map(|(_, r)| serde_json::from_str(r).unwrap())
        .unwrap();
    assert_eq!(entrypoint.last().unwrap(), "/usr/local/bin/forge-bash");
    // Root, which gives each user's commands a uid of their own.
    assert!(
        steps.iter().all(|(w, _)| w != "USER"),
        "the server runs as root"
    );
    let env: Vec<(String, String)> = steps
        .iter()
        .filter(|(w, _)| w == "ENV")
        .flat_map(|(_, r)| r.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let compose = read("deploy/docker-compose.override.yml");
    let librechat = read("deploy/librechat.yaml");
    let url = yaml_value(&librechat, "url");
    let host = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap();
    assert_eq!(url, format!("http://{host}/mcp"));
    let service = host.split(':').next().unwrap();
    assert!(
        compose.contains(&format!("\n  {service}:\n")),
        "compose names {service}"
    );
    assert_eq!(
        yaml_value(&compose, "FORGE_BASH_HTTP_ALLOWED_HOST"),
        service
    );
    assert!(
        librechat.contains(&format!("- \"http://{host}\"")),
        "allowedDomains"
    );
    assert_eq!(
        yaml_value(&compose, "FORGE_BASH_HTTP_TOKEN"),
        "${FORGE_BASH_TOKEN}"
    );
    assert_eq!(
        yaml_value(&librechat, "Authorization"),
        "Bearer ${FORGE_BASH_TOKEN}"
    );
    assert_eq!(yaml_value(&librechat, "X-User-ID"), "{{LIBRECHAT_USER_ID}}");

    // The run stage, here: the image's paths under a root of the test's own, mode
    // 0711 as the Dockerfile makes them.
    let root = tempfile::tempdir().unwrap();
    let base = root.path().display().to_string();
    let at = |path: &str| format!("{base}{path}");
    use std::os::unix::fs::PermissionsExt;
    let pass = std::fs::Permissions::from_mode(0o711);
    for dir in [
        "",
        "/workspace",
        "/var/lib/forge-bash",
        "/var/lib/forge-bash/state",
    ] {
        std::fs::create_dir_all(at(dir)).unwrap();
        std::fs::set_permissions(at(dir), pass.clone()).unwrap();
    }
    // tini, when it is here as in the image; the binary just built for the image's.
    let tini = Path::new(&entrypoint[0]).exists();
    let mut command = if tini {
        let mut tini = Command::new(&entrypoint[0]);
        tini.args(&entrypoint[1..entrypoint.len() - 1]).arg(BIN);
        tini
    } else {
        eprintln!("tini is not installed: the server runs without it");
        Command::new(BIN)
    };
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin");
    for (key, value) in &env {
        let value = value
            .replace("0.0.0.0:8080", "127.0.0.1:0")
            .replace("/workspace", &at("/workspace"))
            .replace("/var/lib/forge-bash", &at("/var/lib/forge-bash"));
        command.env(key, value);
    }
    command.env("FORGE_BASH_HTTP_TOKEN", crate::support::http::TOKEN);
    // The image's uid file (under the test's root, above); a range of the test's own.
    assert!(env.iter().any(|(k, _)| k == "FORGE_BASH_USER_UIDS_FILE"));
    command.env("FORGE_BASH_USER_UIDS", crate::support::uid_range());
    let server = HttpServer::spawn(command, root);

    // Two LibreChat users, as LibreChat sends them: the url's Host, the token, the id.
    let users = ["65f1c0ffee0123456789abcd", "65f1c0ffee0123456789abce"];
    let mut clients = Vec::new();
    for user in users {
        let mut client = server.client(Some(user));
        client.host = Some(host.to_owned());
        assert_eq!(client.initialize().status, 200, "{}", server.stderr());
        clients.push(client);
    }
    let mine = format!("{}/{}", at("/workspace"), users[0]);
    let answer = clients[0].run("pwd; id -u; echo note > note");
    let lines: Vec<&str> = answer.lines().collect();
    assert_eq!(lines[0], mine, "{answer}");
    let uid: u32 = lines[1].parse().expect(&answer);
    let other: u32 = clients[1]
        .run("id -u")
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(uid != 0 && other != 0 && uid != other, "{uid} {other}");
    let theirs = clients[1].run(&format!("cat {mine}/note"));
    assert!(theirs.contains("Permission denied"), "{theirs}");
    // Tini's environment (PID 1 of the container) is root's: out of their reach.
    if tini {
        let tini_pid = server.pid();
        let answer = clients[1].run(&format!("cat /proc/{tini_pid}/environ"));
        assert!(answer.contains("Permission denied"), "{answer}");
    }
}
