//! The hub fetcher against a real HTTP server on 127.0.0.1 with the hub's URL layout and
//! headers: download and verification (LFS redirect and small files), progress, the cache used
//! with the server gone, corrupted-cache detection, a broken transfer, and the 404 message.
#![cfg(feature = "hub")]

#[path = "support/hub_server.rs"]
mod hub_server;

use geneb::hub::{CacheState, Hub, HubFile, Progress};
use hub_server::{REPO, REVISION, dead_endpoint, fixture_root, serve};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn task_file(path: &str) -> HubFile {
    HubFile::dataset(REPO, REVISION, path)
}

fn fixture_bytes(path: &str) -> Vec<u8> {
    std::fs::read(fixture_root().join(path)).unwrap()
}

#[test]
fn downloads_verify_and_the_cache_works_without_the_server() {
    let server = serve(None);
    let cache = scratch("hub-download");
    let hub = Hub::new(&server.endpoint, cache.clone(), false);
    let lfs = task_file("tasks/deep4mc_E.coli_4mC/train.csv");
    let small = task_file("tasks/deep4mc_E.coli_4mC/test.csv");

    // The LFS-style file: HEAD answers a redirect with the sha256 and the size.
    let remote = hub.remote(&lfs).unwrap();
    let size = fixture_bytes(&lfs.path).len() as u64;
    assert_eq!(remote.size, Some(size));
    assert_eq!(
        remote.download_url,
        format!(
            "{}/cdn/{}",
            server.endpoint, "1382ef92ade4e81fb6bd75f8c2d95b5be2abdaaa7792a54580111d7fcc4971bb"
        )
    );
    let mut seen: Vec<Progress> = Vec::new();
    let path = hub.download(&lfs, &remote, &mut |p| seen.push(p)).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), fixture_bytes(&lfs.path));
    assert_eq!(
        path,
        cache
            .join("hub/datasets")
            .join(REPO)
            .join(REVISION)
            .join(&lfs.path)
    );
    let last = seen.last().unwrap();
    assert_eq!((last.done, last.total), (size, Some(size)));

    // The small file: a plain 200 with the git blob sha1 as ETag, through `fetch`.
    let path = hub.fetch(&small, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), fixture_bytes(&small.path));
    assert!(matches!(
        hub.cache_state(&small),
        CacheState::Verified { .. }
    ));

    // Server gone: a commit-pinned file comes from the cache, with or without --offline.
    let before = server.requests.lock().unwrap().len();
    for offline in [false, true] {
        let gone = Hub::new(&dead_endpoint(), cache.clone(), offline);
        assert_eq!(gone.fetch(&lfs, &mut |_| {}).unwrap(), hub.cache_path(&lfs));
        assert_eq!(
            gone.fetch(&small, &mut |_| {}).unwrap(),
            hub.cache_path(&small)
        );
    }
    let offline = Hub::new(&server.endpoint, cache.clone(), true);
    offline.fetch(&lfs, &mut |_| {}).unwrap();
    assert_eq!(
        server.requests.lock().unwrap().len(),
        before,
        "cache hits ask nobody"
    );

    // Not cached and offline / unreachable: a clear message.
    let other = task_file("tasks/iDHS-EL_DNase_I/train.csv");
    let err = offline.fetch(&other, &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("--offline forbids"), "{err}");
    let gone = Hub::new(&dead_endpoint(), cache, false);
    let err = gone.fetch(&other, &mut |_| {}).unwrap_err().to_string();
    assert!(
        err.contains("cannot download") && err.contains("network"),
        "{err}"
    );
}

#[test]
fn a_corrupted_cache_is_detected_and_repaired_online() {
    let server = serve(None);
    let cache = scratch("hub-corrupt");
    let hub = Hub::new(&server.endpoint, cache.clone(), false);
    let file = task_file("tasks/iDHS-EL_DNase_I/train.csv");
    let path = hub.fetch(&file, &mut |_| {}).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] = b'N';
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        hub.cache_state(&file),
        CacheState::Corrupted { .. }
    ));

    let gone = Hub::new(&dead_endpoint(), cache.clone(), true);
    let err = gone.fetch(&file, &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("corrupted"), "{err}");

    // Online, the bad copy is replaced by a verified download.
    hub.fetch(&file, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), fixture_bytes(&file.path));
    assert!(matches!(
        hub.cache_state(&file),
        CacheState::Verified { .. }
    ));
}

#[test]
fn a_broken_transfer_is_rejected_and_nothing_is_cached() {
    for path in [
        "tasks/iDHS-EL_DNase_I/train.csv", // LFS: checked against X-Linked-Etag (sha256)
        "tasks/iDHS-EL_DNase_I/test.csv",  // small: checked against ETag (git blob sha1)
    ] {
        let server = serve(Some(path));
        let cache = scratch("hub-tamper");
        let hub = Hub::new(&server.endpoint, cache, false);
        let file = task_file(path);
        let err = hub.fetch(&file, &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("does not match its checksum"), "{err}");
        assert_eq!(hub.cache_state(&file), CacheState::Missing);
    }
}

#[test]
fn a_missing_file_says_so() {
    let server = serve(None);
    let hub = Hub::new(&server.endpoint, scratch("hub-404"), false);
    let err = hub
        .fetch(&task_file("tasks/no_such_task/train.csv"), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no such file") && err.contains("404") && err.contains(REVISION),
        "{err}"
    );
}

#[test]
fn a_branch_revision_asks_the_hub_first_and_falls_back_to_the_cache() {
    let server = serve(None);
    let cache = scratch("hub-branch");
    let hub = Hub::new(&server.endpoint, cache.clone(), false);
    let file = HubFile::dataset(REPO, "main", "tasks/deep4mc_E.coli_4mC/test.csv");
    hub.fetch(&file, &mut |_| {}).unwrap();
    // A branch can move: even with a verified copy, the hub is asked again (HEAD), but the
    // same checksum means no second download.
    let before = server.requests.lock().unwrap().len();
    hub.fetch(&file, &mut |_| {}).unwrap();
    let asked: Vec<String> = server.requests.lock().unwrap()[before..].to_vec();
    assert!(
        !asked.is_empty() && asked.iter().all(|r| r.starts_with("HEAD ")),
        "{asked:?}"
    );
    // The network down (not --offline): the cached copy is used.
    let gone = Hub::new(&dead_endpoint(), cache, false);
    assert_eq!(
        gone.fetch(&file, &mut |_| {}).unwrap(),
        hub.cache_path(&file)
    );
}
