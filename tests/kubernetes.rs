//! The Kubernetes base in deploy/kubernetes/, as far as a test can take it without a
//! cluster: every file parses, and what the manifests tell the binary is the binary's
//! own: the environment variables `--help` names, the ports its addresses give, the
//! probe paths it answers, a termination grace above its drain, the token's Secret
//! mounted 0400 where the token file variable points, volumes shared read-write-many.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::support::BIN;
use crate::support::http::{HttpServer, get};

const BASE: &str = "deploy/kubernetes";

/// Every document of every file the kustomization lists, and the kustomization.
fn manifests() -> (Value, Vec<Value>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(BASE);
    let parse = |file: &str| -> Vec<Value> {
        let text = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("{BASE}/{file}: {e}"));
        serde_yaml_ng::Deserializer::from_str(&text)
            .map(|document| {
                Value::deserialize(document).unwrap_or_else(|e| panic!("{BASE}/{file}: {e}"))
            })
            .collect()
    };
    let kustomization = parse("kustomization.yaml").remove(0);
    assert_eq!(kustomization["kind"], "Kustomization");
    let files = kustomization["resources"].as_array().expect("resources");
    let mut documents = Vec::new();
    for file in files {
        documents.extend(parse(file.as_str().unwrap()));
    }
    // Nothing in the directory that the base leaves out.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            name == "kustomization.yaml" || files.iter().any(|f| f == name.as_str()),
            "{BASE}/{name} is not in the kustomization's resources"
        );
    }
    (kustomization, documents)
}

fn of_kind<'a>(documents: &'a [Value], kind: &str) -> Vec<&'a Value> {
    documents.iter().filter(|d| d["kind"] == kind).collect()
}

/// The port of `addr` (`ADDR:PORT`).
fn port_of(addr: &str) -> u64 {
    let addr: std::net::SocketAddr = addr.parse().unwrap_or_else(|e| panic!("{addr}: {e}"));
    u64::from(addr.port())
}

#[test]
fn the_kubernetes_base_speaks_the_binarys_language() {
    let (kustomization, documents) = manifests();
    let help = std::process::Command::new(BIN)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();

    let deployments = of_kind(&documents, "Deployment");
    assert_eq!(deployments.len(), 1, "one Deployment");
    let pod = &deployments[0]["spec"]["template"]["spec"];
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
    let image = container["image"].as_str().unwrap();
    assert!(
        kustomization["images"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"] == image),
        "the kustomization sets the image {image}"
    );

    // The environment: the binary's variables, by the names --help gives.
    let env: Vec<(String, String)> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_owned();
            (name, e["value"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    let var = |name: &str| -> &str {
        env.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {name} in the Deployment"))
    };
    for (name, _) in &env {
        if name.starts_with("FORGE_BASH_") {
            assert!(
                help.contains(&format!("[env: {name}=")),
                "{name} is not a variable of the binary's"
            );
        }
    }
    // The token is never a value in a manifest: a file from the Secret.
    assert!(env.iter().all(|(n, _)| n != "FORGE_BASH_HTTP_TOKEN"));
    for arg in container["args"].as_array().into_iter().flatten() {
        let arg = arg.as_str().unwrap();
        if let Some(flag) = arg.strip_prefix("--") {
            let flag = flag.split('=').next().unwrap();
            assert!(help.contains(&format!("--{flag} ")), "--{flag}");
        }
    }

    // Ports: what the addresses give, by name.
    let ports = container["ports"].as_array().unwrap();
    let port = |name: &str| -> u64 {
        ports
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["containerPort"].as_u64())
            .unwrap_or_else(|| panic!("no container port {name}"))
    };
    assert_eq!(port("http"), port_of(var("FORGE_BASH_HTTP")));
    assert_eq!(port("metrics"), port_of(var("FORGE_BASH_METRICS")));

    // Probes on the service's port, at the paths the binary answers (below).
    let probe = |kind: &str| -> (String, String) {
        let get = &container[kind]["httpGet"];
        let path = get["path"].as_str().unwrap_or_else(|| panic!("{kind}"));
        (
            path.to_owned(),
            get["port"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let (live, live_port) = probe("livenessProbe");
    let (ready, ready_port) = probe("readinessProbe");
    assert_eq!((live.as_str(), live_port.as_str()), ("/healthz", "http"));
    assert_eq!((ready.as_str(), ready_port.as_str()), ("/readyz", "http"));

    // The drain ends before the kubelet's SIGKILL.
    let grace: u64 = var("FORGE_BASH_SHUTDOWN_GRACE_SECS").parse().unwrap();
    let termination = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        termination >= grace + 5,
        "{termination} s for a {grace} s drain"
    );

    // Requests and limits of both.
    for bound in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            assert!(
                !container["resources"][bound][resource].is_null(),
                "resources.{bound}.{resource}"
            );
        }
    }

    // Volumes: where each path points, and what backs it.
    let mounts = container["volumeMounts"].as_array().unwrap();
    let volumes = pod["volumes"].as_array().unwrap();
    let volume_of = |path: &str| -> (&Value, &Value) {
        let mount = mounts
            .iter()
            .filter(|m| path.starts_with(m["mountPath"].as_str().unwrap()))
            .max_by_key(|m| m["mountPath"].as_str().unwrap().len())
            .unwrap_or_else(|| panic!("{path} is on no volume"));
        let volume = volumes.iter().find(|v| v["name"] == mount["name"]).unwrap();
        (mount, volume)
    };
    let (token_mount, token) = volume_of(var("FORGE_BASH_HTTP_TOKEN_FILE"));
    assert_eq!(token_mount["readOnly"], true);
    assert_eq!(token["secret"]["defaultMode"], 0o400);
    let item = &token["secret"]["items"][0];
    assert_eq!(
        format!(
            "{}/{}",
            token_mount["mountPath"].as_str().unwrap(),
            item["path"].as_str().unwrap()
        ),
        var("FORGE_BASH_HTTP_TOKEN_FILE")
    );
    let claims = of_kind(&documents, "PersistentVolumeClaim");
    for path in [
        var("FORGE_BASH_WORKDIR"),
        var("FORGE_BASH_STATE_DIR"),
        var("FORGE_BASH_USER_UIDS_FILE"),
    ] {
        let (_, volume) = volume_of(path);
        let name = &volume["persistentVolumeClaim"]["claimName"];
        let claim = claims
            .iter()
            .find(|c| c["metadata"]["name"] == *name)
            .unwrap_or_else(|| panic!("{path}: no claim {name}"));
        assert!(
            claim["spec"]["accessModes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m == "ReadWriteMany"),
            "{path}: every replica shares it"
        );
    }

    // The Service: the container's ports by name; the Ingress: the Service's, hashing
    // the user, for the host the server allows.
    let services = of_kind(&documents, "Service");
    let service = services[0];
    let service_ports = service["spec"]["ports"].as_array().unwrap();
    for name in ["http", "metrics"] {
        let found = service_ports.iter().find(|p| p["name"] == name).unwrap();
        assert_eq!(found["targetPort"], name);
    }
    let ingresses = of_kind(&documents, "Ingress");
    let ingress = ingresses[0];
    let annotations = &ingress["metadata"]["annotations"];
    assert_eq!(
        annotations["nginx.ingress.kubernetes.io/upstream-hash-by"],
        "$http_x_user_id"
    );
    let read_timeout: u64 = annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(read_timeout > 300, "above the tool's default timeout");
    let rule = &ingress["spec"]["rules"][0];
    let host = rule["host"].as_str().unwrap();
    assert!(
        var("FORGE_BASH_HTTP_ALLOWED_HOST")
            .split(',')
            .any(|h| h == host),
        "the server allows the Ingress's host {host}"
    );
    let path = &rule["http"]["paths"][0];
    assert_eq!(path["path"], "/mcp");
    assert_eq!(
        path["backend"]["service"]["name"],
        service["metadata"]["name"]
    );
    assert_eq!(path["backend"]["service"]["port"]["name"], "http");

    // The binary answers the probes' paths without a token, and the metrics port's.
    let server = HttpServer::start(&["--metrics", "127.0.0.1:0"]);
    for path in [&live, &ready] {
        let reply = get(server.addr, path, &[]);
        assert_eq!(reply.status, 200, "{path}: {reply:?}");
    }
    let metrics: std::net::SocketAddr = server
        .stderr()
        .split("metrics=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
        .unwrap();
    assert_eq!(get(metrics, "/metrics", &[]).status, 200);
}
