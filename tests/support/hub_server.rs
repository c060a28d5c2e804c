//! A local stand-in for the Hugging Face hub: a real HTTP server on 127.0.0.1 serving
//! `tests/fixtures/hub/` under the hub's dataset URL layout, with the hub's headers:
//!
//! - `train.csv` files behave like LFS files: the resolve URL answers `302` with
//!   `X-Linked-Etag` (sha256) and `X-Linked-Size`, and `Location` points at `/cdn/<sha256>`,
//!   which serves the bytes (as the hub's CDN does);
//! - other files behave like small git files: `200` with `ETag` = git blob sha1.
//!
//! The checksums come from `tests/fixtures/hub/checksums.txt`, written with `sha256sum` and
//! `git hash-object` — not from geneb's own hashing, so the test checks geneb against them.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const REPO: &str = "darlednik/geneb-tasks";
pub const REVISION: &str = "4edd705be573e48c585c2cf79dc320f9f43c7b04";
/// A model repo: the tiny NT-v2 checkpoint of tests/fixtures/models/nt_v2, served under the
/// model URL layout (`/{repo}/resolve/{rev}/{file}`), its weights as an LFS file.
pub const MODEL_REPO: &str = "geneb-fixtures/nt-v2-tiny";
const MODEL_DIR: &str = "../models/nt_v2/";
/// A sharded model repo: tests/fixtures/models/llama_sharded_bf16's bf16 shards and their index.
pub const SHARDED_MODEL_REPO: &str = "geneb-fixtures/llama-sharded-bf16";
const SHARDED_MODEL_DIR: &str = "../models/llama_sharded_bf16/";

pub struct HubServer {
    pub endpoint: String,
    /// `METHOD path` of every request served, in order.
    pub requests: Arc<Mutex<Vec<String>>>,
}

struct Entry {
    path: PathBuf,
    sha256: String,
    git_sha1: String,
}

pub fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hub")
}

/// Serves the fixtures until the test process ends. `tamper` names a repository path whose
/// bytes are served with one byte changed (a broken transfer), headers untouched.
pub fn serve(tamper: Option<&'static str>) -> HubServer {
    let root = fixture_root();
    let manifest = std::fs::read_to_string(root.join("checksums.txt")).expect("checksums.txt");
    let mut files = HashMap::new();
    for line in manifest.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        files.insert(
            fields[0].to_string(),
            Entry {
                path: root.join(fields[0]),
                sha256: fields[1].to_string(),
                git_sha1: fields[2].to_string(),
            },
        );
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            handle(stream, &files, tamper, &log);
        }
    });
    HubServer { endpoint, requests }
}

/// An endpoint where nothing listens: the hub is unreachable.
pub fn dead_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    format!("http://{}", listener.local_addr().unwrap())
}

fn handle(
    mut stream: TcpStream,
    files: &HashMap<String, Entry>,
    tamper: Option<&str>,
    log: &Mutex<Vec<String>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header.trim().is_empty() => break,
            Ok(_) => {}
        }
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    log.lock().unwrap().push(format!("{method} {target}"));
    // Any revision serves the same files: a branch name behaves like the pinned commit.
    let repo_file = |repo_prefix: &str, dir: &str| {
        target
            .strip_prefix(repo_prefix)
            .and_then(|rest| rest.split_once('/'))
            .map(|(_revision, file)| format!("{dir}{file}"))
    };
    let key = repo_file(&format!("/datasets/{REPO}/resolve/"), "")
        .or_else(|| repo_file(&format!("/{MODEL_REPO}/resolve/"), MODEL_DIR))
        .or_else(|| {
            repo_file(
                &format!("/{SHARDED_MODEL_REPO}/resolve/"),
                SHARDED_MODEL_DIR,
            )
        });
    let (status, headers, body): (&str, Vec<(String, String)>, Vec<u8>) =
        if let Some(sha) = target.strip_prefix("/cdn/") {
            match files.values().find(|e| e.sha256 == sha) {
                Some(entry) => {
                    let mut bytes = std::fs::read(&entry.path).unwrap();
                    let repo_path = entry.path.strip_prefix(fixture_root()).unwrap();
                    if tamper == repo_path.to_str() {
                        bytes[0] ^= 1;
                    }
                    ("200 OK", vec![], bytes)
                }
                None => ("404 Not Found", vec![], b"not found".to_vec()),
            }
        } else if let Some((key, entry)) = key.as_ref().and_then(|k| files.get(k).map(|e| (k, e))) {
            let bytes = std::fs::read(&entry.path).unwrap();
            let name = entry.path.file_name().unwrap().to_string_lossy();
            if name == "train.csv" || name.ends_with(".safetensors") {
                let headers = vec![
                    ("X-Linked-Etag".into(), format!("\"{}\"", entry.sha256)),
                    ("X-Linked-Size".into(), bytes.len().to_string()),
                    ("ETag".into(), "\"not-the-content-hash\"".into()),
                    ("Location".into(), format!("/cdn/{}", entry.sha256)),
                ];
                ("302 Found", headers, Vec::new())
            } else {
                let mut bytes = bytes;
                if tamper == Some(key.as_str()) {
                    bytes[0] ^= 1;
                }
                let headers = vec![("ETag".into(), format!("\"{}\"", entry.git_sha1))];
                ("200 OK", headers, bytes)
            }
        } else {
            (
                "404 Not Found",
                vec![("X-Error-Code".into(), "EntryNotFound".into())],
                b"Entry not found".to_vec(),
            )
        };
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    if method != "HEAD" {
        let _ = stream.write_all(&body);
    }
    let _ = stream.flush();
}
