//! Files from the Hugging Face hub, natively: resolve URLs, a verified cache, downloads with
//! byte progress. Used for the GENEB task tables (datasets) and meant for model weights too.
//! The browser build has no HTTP client: the page fetches in JS.
//!
//! - URL: `{endpoint}/{repo}/resolve/{revision}/{path}` (models) and
//!   `{endpoint}/datasets/{repo}/resolve/{revision}/{path}` (datasets); the endpoint is
//!   `GENEB_HF_ENDPOINT`, else <https://huggingface.co>.
//! - Cache: `{cache}/hub/{models|datasets}/{owner}/{name}/{revision}/{path}`, where `{cache}` is
//!   `GENEB_CACHE`, else `$XDG_CACHE_HOME/geneb`, else `~/.cache/geneb`. Beside each file,
//!   `{file}.checksum` holds the checksum it was verified against.
//! - Verification: the hub sends `X-Linked-Etag` (sha256 of the content) for LFS files and an
//!   `ETag` (git blob sha1) for small files; a download must hash to it before it is renamed
//!   into the cache, and a cached file is re-hashed each time it is used.
//! - A revision that is a commit hash never changes, so a verified cached file is used without
//!   asking the network. For a branch name the hub is asked first (HEAD): the cached copy is kept
//!   while its checksum matches, and it is the fallback when the network fails.

pub mod official;

use crate::digest::hex;
use crate::{Error, Result};
use sha1::Digest as _;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// A stalled connection fails instead of hanging; large files may take long, so no total limit.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const READ_CHUNK: usize = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoKind {
    Model,
    Dataset,
}

/// One file of one repository at one revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubFile {
    pub kind: RepoKind,
    /// `owner/name`.
    pub repo: String,
    /// A commit hash (immutable, preferred) or a branch/tag name.
    pub revision: String,
    /// Path inside the repository, `/`-separated.
    pub path: String,
}

/// What the hub says about a file before it is downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    /// Bytes, when the server states it (`X-Linked-Size` or `Content-Length`).
    pub size: Option<u64>,
    pub checksum: Checksum,
    /// Where the bytes come from (the resolve URL, or the CDN it redirects to).
    pub download_url: String,
}

/// The checksum the hub publishes for a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// sha256 of the content (LFS files, `X-Linked-Etag`).
    Sha256(String),
    /// git blob sha1: sha1 of `blob {len}\0{content}` (small files, `ETag`).
    GitBlobSha1(String),
}

/// Where a file can be had, from [`Hub::locate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    Cached { path: PathBuf, size: u64 },
    Remote(RemoteFile),
}

/// Bytes done so far and the total, when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub done: u64,
    pub total: Option<u64>,
}

/// Where a file stands locally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheState {
    /// In the cache and it still hashes to its checksum.
    Verified {
        path: PathBuf,
        size: u64,
    },
    /// In the cache but its bytes no longer match its checksum.
    Corrupted {
        path: PathBuf,
    },
    Missing,
}

impl HubFile {
    pub fn dataset(repo: &str, revision: &str, path: &str) -> HubFile {
        HubFile {
            kind: RepoKind::Dataset,
            repo: repo.to_string(),
            revision: revision.to_string(),
            path: path.to_string(),
        }
    }

    pub fn model(repo: &str, revision: &str, path: &str) -> HubFile {
        HubFile {
            kind: RepoKind::Model,
            ..HubFile::dataset(repo, revision, path)
        }
    }

    pub fn resolve_url(&self, endpoint: &str) -> String {
        let prefix = match self.kind {
            RepoKind::Model => "",
            RepoKind::Dataset => "datasets/",
        };
        format!(
            "{}/{prefix}{}/resolve/{}/{}",
            endpoint.trim_end_matches('/'),
            self.repo,
            self.revision,
            self.path
        )
    }

    /// "file `p` of dataset `r` at revision `v`", for messages.
    pub fn describe(&self) -> String {
        let kind = match self.kind {
            RepoKind::Model => "model",
            RepoKind::Dataset => "dataset",
        };
        format!(
            "`{}` of {kind} {} at revision {}",
            self.path, self.repo, self.revision
        )
    }

    fn is_commit(&self) -> bool {
        self.revision.len() == 40 && self.revision.bytes().all(|b| b.is_ascii_hexdigit())
    }

    /// Rejects names that would escape the cache folder or need URL escaping.
    fn check(&self) -> Result<()> {
        let safe = |part: &str| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        };
        let repo_ok = self.repo.split('/').count() == 2 && self.repo.split('/').all(safe);
        if !repo_ok || !safe(&self.revision) || !self.path.split('/').all(safe) {
            return Err(Error::new(format!(
                "cannot fetch {}: repository, revision and path may hold only letters, digits, '.', '_', '-' (and '/' between parts)",
                self.describe()
            )));
        }
        Ok(())
    }

    fn cache_path(&self, cache_dir: &Path) -> PathBuf {
        let kind = match self.kind {
            RepoKind::Model => "models",
            RepoKind::Dataset => "datasets",
        };
        let mut path = cache_dir.join("hub").join(kind);
        path.extend(self.repo.split('/'));
        path.push(&self.revision);
        path.extend(self.path.split('/'));
        path
    }
}

impl Checksum {
    /// From `X-Linked-Etag` / `ETag` values: quotes and a weak `W/` prefix removed; 64 hex
    /// digits are a sha256, 40 a git blob sha1.
    fn from_etag(etag: &str) -> Option<Checksum> {
        let value = etag.trim().trim_start_matches("W/").trim_matches('"');
        if !value.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let value = value.to_ascii_lowercase();
        match value.len() {
            64 => Some(Checksum::Sha256(value)),
            40 => Some(Checksum::GitBlobSha1(value)),
            _ => None,
        }
    }

    /// `sha256:<hex>` / `git-sha1:<hex>`, as stored beside cached files.
    fn to_record(&self) -> String {
        match self {
            Checksum::Sha256(hex) => format!("sha256:{hex}"),
            Checksum::GitBlobSha1(hex) => format!("git-sha1:{hex}"),
        }
    }

    fn from_record(text: &str) -> Option<Checksum> {
        match text.trim().split_once(':')? {
            ("sha256", hex) => Some(Checksum::Sha256(hex.to_string())),
            ("git-sha1", hex) => Some(Checksum::GitBlobSha1(hex.to_string())),
            _ => None,
        }
    }

    /// Whether the file at `path` hashes to this checksum.
    fn matches_file(&self, path: &Path) -> std::io::Result<bool> {
        let mut file = fs::File::open(path)?;
        let len = file.metadata()?.len();
        let mut buffer = vec![0; READ_CHUNK];
        let digest = match self {
            Checksum::Sha256(_) => {
                let mut hasher = sha2::Sha256::new();
                hash_reader(&mut file, &mut buffer, |chunk| hasher.update(chunk))?;
                hex(&hasher.finalize())
            }
            Checksum::GitBlobSha1(_) => {
                let mut hasher = sha1::Sha1::new();
                hasher.update(format!("blob {len}\0").as_bytes());
                hash_reader(&mut file, &mut buffer, |chunk| hasher.update(chunk))?;
                hex(&hasher.finalize())
            }
        };
        let (Checksum::Sha256(expected) | Checksum::GitBlobSha1(expected)) = self;
        Ok(digest == *expected)
    }
}

fn hash_reader(
    reader: &mut impl Read,
    buffer: &mut [u8],
    mut update: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    loop {
        let n = reader.read(buffer)?;
        if n == 0 {
            return Ok(());
        }
        update(&buffer[..n]);
    }
}

fn checksum_record_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".checksum");
    PathBuf::from(name)
}

/// The hub endpoint and the cache folder to use.
#[derive(Debug)]
pub struct Hub {
    endpoint: String,
    cache_dir: PathBuf,
    /// Never touch the network; only verified cached files are available.
    offline: bool,
    agent: ureq::Agent,
}

/// geneb's cache folder (hub downloads, embeddings): `GENEB_CACHE`, else
/// `$XDG_CACHE_HOME/geneb`, else `~/.cache/geneb`.
pub fn cache_root() -> Result<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("GENEB_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|dir| dir.join("geneb")))
        .or_else(|| var("HOME").map(|home| home.join(".cache").join("geneb")))
        .ok_or_else(|| {
            Error::new(
                "no cache folder: set GENEB_CACHE (or XDG_CACHE_HOME or HOME) to a writable folder",
            )
        })
}

impl Hub {
    pub fn new(endpoint: &str, cache_dir: PathBuf, offline: bool) -> Hub {
        let config = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT_TIMEOUT))
            // Status codes are turned into messages here, with the file they are about.
            .http_status_as_error(false)
            .build();
        Hub {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            cache_dir,
            offline,
            agent: config.into(),
        }
    }

    /// Endpoint from `GENEB_HF_ENDPOINT`, cache from `GENEB_CACHE` / `XDG_CACHE_HOME` / `HOME`.
    pub fn from_env(offline: bool) -> Result<Hub> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let endpoint = var("GENEB_HF_ENDPOINT")
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let cache_dir = cache_root()?;
        Ok(Hub::new(&endpoint, cache_dir, offline))
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// Where `file` lives (or would live) in the cache.
    pub fn cache_path(&self, file: &HubFile) -> PathBuf {
        file.cache_path(&self.cache_dir)
    }

    fn recorded_checksum(&self, path: &Path) -> Option<Checksum> {
        let record = fs::read_to_string(checksum_record_path(path)).ok()?;
        Checksum::from_record(&record)
    }

    /// Whether `file` is cached, re-hashing it against its recorded checksum.
    pub fn cache_state(&self, file: &HubFile) -> CacheState {
        let path = self.cache_path(file);
        let Ok(size) = fs::metadata(&path).map(|m| m.len()) else {
            return CacheState::Missing;
        };
        match self.recorded_checksum(&path) {
            Some(checksum) if checksum.matches_file(&path).unwrap_or(false) => {
                CacheState::Verified { path, size }
            }
            _ => CacheState::Corrupted { path },
        }
    }

    /// Asks the hub (HEAD, no download) for the size, checksum and download location of `file`.
    /// Relative redirects (renamed repositories) are followed; a redirect elsewhere (the LFS
    /// CDN) ends the walk, because its response carries the LFS headers.
    pub fn remote(&self, file: &HubFile) -> Result<RemoteFile> {
        self.remote_if_exists(file)?.ok_or_else(|| {
            Error::new(format!(
                "no such file: {} (the hub answered 404 Not Found); check the id and the revision",
                file.describe()
            ))
        })
    }

    /// Like [`Hub::remote`], but a file the hub does not have is `None` rather than an error
    /// (a model repo has some tokenizer files and not others).
    pub fn remote_if_exists(&self, file: &HubFile) -> Result<Option<RemoteFile>> {
        file.check()?;
        if self.offline {
            return Err(Error::new(format!(
                "{} is not in the cache ({}) and --offline forbids downloading it",
                file.describe(),
                self.cache_dir.display()
            )));
        }
        let mut url = file.resolve_url(&self.endpoint);
        for _ in 0..5 {
            let response = self
                .agent
                .head(&url)
                .config()
                .max_redirects(0)
                .build()
                .call()
                .map_err(|e| self.network_error(file, &e))?;
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let status = response.status().as_u16();
            let location = header("location");
            let linked_etag = header("x-linked-etag");
            if (300..400).contains(&status) && linked_etag.is_none() {
                let target = location.as_deref().ok_or_else(|| {
                    Error::new(format!("{url}: redirect without a Location header"))
                })?;
                if target.starts_with('/') {
                    url = absolute(&url, target);
                    continue;
                }
            }
            if status == 404 {
                return Ok(None);
            }
            if status == 401 || status == 403 {
                return Err(Error::new(format!(
                    "{url} answered {status}: {} is private or gated, and geneb sends no access token; download it yourself and give the local path",
                    file.describe()
                )));
            }
            if !(200..400).contains(&status) {
                return Err(Error::new(format!(
                    "{url} answered HTTP {status} for {}; try again later",
                    file.describe()
                )));
            }
            let etag = linked_etag.or_else(|| header("etag"));
            let checksum = etag.as_deref().and_then(Checksum::from_etag).ok_or_else(|| {
                Error::new(format!(
                    "{url} gave no usable checksum (X-Linked-Etag or ETag with a sha256 or git sha1) for {}, so the download cannot be verified",
                    file.describe()
                ))
            })?;
            let size = header("x-linked-size")
                .or_else(|| header("content-length"))
                .and_then(|v| v.trim().parse().ok());
            let download_url = match location {
                Some(target) if (300..400).contains(&status) => absolute(&url, &target),
                _ => url.clone(),
            };
            return Ok(Some(RemoteFile {
                size,
                checksum,
                download_url,
            }));
        }
        Err(Error::new(format!(
            "{}: too many redirects from {}",
            file.describe(),
            self.endpoint
        )))
    }

    /// Downloads `remote` (from [`Hub::remote`]) into the cache: streamed to a temporary file,
    /// hashed, then renamed into place, so the cache never holds a partial or wrong file.
    pub fn download(
        &self,
        file: &HubFile,
        remote: &RemoteFile,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<PathBuf> {
        file.check()?;
        let path = self.cache_path(file);
        let folder = path.parent().unwrap_or(&self.cache_dir);
        let write_error = |p: &Path, e: std::io::Error| {
            Error::in_file(
                p.display().to_string(),
                format!("cannot write to the cache: {e}; set GENEB_CACHE to a writable folder"),
            )
        };
        fs::create_dir_all(folder).map_err(|e| write_error(folder, e))?;
        let mut response = self
            .agent
            .get(&remote.download_url)
            .call()
            .map_err(|e| self.network_error(file, &e))?;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(Error::new(format!(
                "{} answered HTTP {status} while downloading {}; try again later",
                remote.download_url,
                file.describe()
            )));
        }
        let total = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .or(remote.size);
        let partial = folder.join(format!(
            ".{}.partial-{}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            std::process::id()
        ));
        let copied = (|| -> std::result::Result<(), (bool, std::io::Error)> {
            let mut out = fs::File::create(&partial).map_err(|e| (true, e))?;
            let mut body = response.body_mut().as_reader();
            let mut buffer = vec![0; READ_CHUNK];
            let mut done = 0u64;
            on_progress(Progress { done, total });
            loop {
                let n = body.read(&mut buffer).map_err(|e| (false, e))?;
                if n == 0 {
                    break;
                }
                out.write_all(&buffer[..n]).map_err(|e| (true, e))?;
                done += n as u64;
                on_progress(Progress { done, total });
            }
            out.sync_all().map_err(|e| (true, e))
        })();
        let cleanup = |error: Error| {
            let _ = fs::remove_file(&partial);
            error
        };
        copied.map_err(|(local, e)| {
            cleanup(if local {
                write_error(&partial, e)
            } else {
                Error::new(format!(
                    "the download of {} broke off: {e}; run again to retry",
                    file.describe()
                ))
            })
        })?;
        let matches = remote
            .checksum
            .matches_file(&partial)
            .map_err(|e| cleanup(write_error(&partial, e)))?;
        if !matches {
            return Err(cleanup(Error::new(format!(
                "the download of {} from {} does not match its checksum {}; nothing was cached, run again to retry",
                file.describe(),
                remote.download_url,
                remote.checksum.to_record()
            ))));
        }
        let record = checksum_record_path(&path);
        fs::write(&record, remote.checksum.to_record())
            .map_err(|e| cleanup(write_error(&record, e)))?;
        fs::rename(&partial, &path).map_err(|e| cleanup(write_error(&path, e)))?;
        Ok(path)
    }

    /// Where `file` can be had: a verified cached copy, or the hub (with its size and checksum,
    /// so a caller can say what will be downloaded before it starts). A cached copy of a
    /// commit-pinned file is used without the network; otherwise the hub is asked, and the
    /// cache is the fallback when the network fails.
    pub fn locate(&self, file: &HubFile) -> Result<Located> {
        file.check()?;
        let cached = self.cache_state(file);
        if let CacheState::Verified { path, size } = &cached
            && (file.is_commit() || self.offline)
        {
            return Ok(Located::Cached {
                path: path.clone(),
                size: *size,
            });
        }
        match self.remote(file) {
            Ok(remote) => match cached {
                // The branch still points at the bytes we have.
                CacheState::Verified { path, size }
                    if self.recorded_checksum(&path).as_ref() == Some(&remote.checksum) =>
                {
                    Ok(Located::Cached { path, size })
                }
                _ => Ok(Located::Remote(remote)),
            },
            Err(err) => match cached {
                CacheState::Verified { path, size } => Ok(Located::Cached { path, size }),
                CacheState::Corrupted { path } => Err(Error::in_file(
                    path.display().to_string(),
                    format!(
                        "the cached copy is corrupted (it no longer matches its checksum) and it cannot be downloaded again: {err}"
                    ),
                )),
                CacheState::Missing => Err(err),
            },
        }
    }

    /// The local path of `file`, downloading it when needed (see [`Hub::locate`]).
    pub fn fetch(&self, file: &HubFile, on_progress: &mut dyn FnMut(Progress)) -> Result<PathBuf> {
        match self.locate(file)? {
            Located::Cached { path, .. } => Ok(path),
            Located::Remote(remote) => self.download(file, &remote, on_progress),
        }
    }

    /// The size of a cached copy, without re-hashing it (for listings); `None` if not cached.
    pub fn cached_size(&self, file: &HubFile) -> Option<u64> {
        let path = self.cache_path(file);
        checksum_record_path(&path).is_file().then_some(())?;
        fs::metadata(&path).ok().map(|m| m.len())
    }

    fn network_error(&self, file: &HubFile, err: &ureq::Error) -> Error {
        Error::new(format!(
            "cannot download {} from {}: {err}. Check the network connection (or set GENEB_HF_ENDPOINT to a reachable mirror); with the files already cached, --offline works without a network",
            file.describe(),
            self.endpoint
        ))
    }
}

/// A redirect target as a full URL: a host-relative `Location` gets `base`'s scheme and host.
fn absolute(base: &str, location: &str) -> String {
    if !location.starts_with('/') {
        return location.to_string();
    }
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let origin = match base[after_scheme..].find('/') {
        Some(i) => &base[..after_scheme + i],
        None => base,
    };
    format!("{origin}{location}")
}

/// Every model repo in the cache (`owner/name` → revisions) whose config.json and weights are
/// there, for listings: nothing is re-hashed or fetched.
pub fn cached_models(hub: &Hub) -> std::collections::BTreeMap<String, Vec<String>> {
    let probe = hub.cache_path(&HubFile::model("o/n", "_", MODEL_CONFIG));
    // <cache>/hub/models/o/n/_/config.json → <cache>/hub/models
    let Some(models_dir) = probe.ancestors().nth(4) else {
        return Default::default();
    };
    let dirs = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                e.ok()
                    .filter(|e| e.path().is_dir())?
                    .file_name()
                    .into_string()
                    .ok()
            })
            .collect();
        names.sort();
        names
    };
    let mut out = std::collections::BTreeMap::new();
    for owner in dirs(models_dir) {
        for name in dirs(&models_dir.join(&owner)) {
            let repo = format!("{owner}/{name}");
            let revisions: Vec<String> = dirs(&models_dir.join(&owner).join(&name))
                .into_iter()
                .filter(|rev| {
                    let cached =
                        |path: &str| hub.cached_size(&HubFile::model(&repo, rev, path)).is_some();
                    let index = crate::checkpoint::safetensors::INDEX;
                    cached(MODEL_CONFIG)
                        && (MODEL_WEIGHTS.iter().any(|w| cached(w)) || cached(index))
                })
                .collect();
            if !revisions.is_empty() {
                out.insert(repo, revisions);
            }
        }
    }
    out
}

/// The files geneb reads from a model repo: config.json and the weights are required, the
/// tokenizer files are taken where the repo has them.
const MODEL_CONFIG: &str = "config.json";
const MODEL_TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
];
const MODEL_WEIGHTS: [&str; 2] = ["model.safetensors", "pytorch_model.bin"];

/// A model repo's files at a revision, from the verified cache or downloaded into it: the
/// native side of `hf:owner/name@rev`. `on_file` hears each file before it is fetched, with
/// its size when the hub says it, so the caller can say what is coming.
pub fn fetch_model_files(
    hub: &Hub,
    repo: &str,
    revision: &str,
    on_file: &mut dyn FnMut(&HubFile, Option<u64>),
    on_progress: &mut dyn FnMut(Progress),
) -> Result<crate::checkpoint::ModelFiles> {
    let mut files = crate::checkpoint::ModelFiles::new(format!("{repo}@{revision}"));
    let mut get =
        |files: &mut crate::checkpoint::ModelFiles, path: &str, required: bool| -> Result<bool> {
            let file = HubFile::model(repo, revision, path);
            let local = match hub.cache_state(&file) {
                CacheState::Verified { path, .. } if file.is_commit() || hub.offline => Some(path),
                _ if hub.offline => None,
                cached => match hub.remote_if_exists(&file) {
                    Ok(None) => None,
                    Ok(Some(_)) => match hub.locate(&file)? {
                        Located::Cached { path, .. } => Some(path),
                        Located::Remote(remote) => {
                            on_file(&file, remote.size);
                            Some(hub.download(&file, &remote, on_progress)?)
                        }
                    },
                    // The network failed: a verified copy from an earlier run still serves, and an
                    // optional file that run did not cache is one the repo does not have (config.json
                    // comes first, so a model never fetched fails on it with the network error).
                    Err(err) => match cached {
                        CacheState::Verified { path, .. } => Some(path),
                        _ if !required => None,
                        _ => return Err(err),
                    },
                },
            };
            let Some(local) = local else {
                return if required {
                    Err(Error::new(format!(
                        "{} is not on the hub{}; is '{repo}' a model repo with config.json and \
                     model.safetensors or pytorch_model.bin?",
                        file.describe(),
                        if hub.offline {
                            " cache (--offline)"
                        } else {
                            ""
                        }
                    )))
                } else {
                    Ok(false)
                };
            };
            let file = crate::checkpoint::source::LocalFile::open(&local).map_err(|e| {
                Error::in_file(local.display().to_string(), format!("cannot read: {e}"))
            })?;
            files.insert_source(path, Box::new(file))?;
            Ok(true)
        };
    get(&mut files, MODEL_CONFIG, true)?;
    for name in MODEL_TOKENIZER_FILES {
        get(&mut files, name, false)?;
    }
    // As transformers looks for them: one safetensors file, a sharded one's index and every
    // shard it names (names outside the repo's folder refused before any is fetched), the
    // PyTorch file.
    let index = crate::checkpoint::safetensors::INDEX;
    if !get(&mut files, MODEL_WEIGHTS[0], false)? {
        if get(&mut files, index, false)? {
            let source = format!("{repo}@{revision}/{index}");
            let bytes = files.get(index).unwrap_or_default().to_vec();
            for shard in crate::checkpoint::safetensors::shard_names(&source, &bytes)? {
                get(&mut files, &shard, true)?;
            }
        } else {
            get(&mut files, MODEL_WEIGHTS[1], true)?;
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_urls_follow_the_hub_layout() {
        let dataset = HubFile::dataset("darlednik/geneb-tasks", "abc", "tasks/x/train.csv");
        assert_eq!(
            dataset.resolve_url("https://huggingface.co/"),
            "https://huggingface.co/datasets/darlednik/geneb-tasks/resolve/abc/tasks/x/train.csv"
        );
        let model = HubFile::model("owner/model", "main", "model.safetensors");
        assert_eq!(
            model.resolve_url("http://127.0.0.1:9"),
            "http://127.0.0.1:9/owner/model/resolve/main/model.safetensors"
        );
        assert!(
            HubFile::dataset("a/b", "main", "../../etc/passwd")
                .check()
                .is_err()
        );
        assert_eq!(absolute("http://h:1/a/b", "/c"), "http://h:1/c");
        assert_eq!(absolute("http://h:1/a/b", "https://cdn/x"), "https://cdn/x");
    }

    #[test]
    fn etags_become_checksums() {
        let sha = "a".repeat(64);
        assert_eq!(
            Checksum::from_etag(&format!("\"{sha}\"")),
            Some(Checksum::Sha256(sha))
        );
        let blob = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            Checksum::from_etag(&format!("W/\"{blob}\"")),
            Some(Checksum::GitBlobSha1(blob.to_string()))
        );
        assert_eq!(Checksum::from_etag("\"xyz\""), None);
    }
}
