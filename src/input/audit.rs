//! The leak audit of one task: which test rows a probe could score by remembering training rows
//! rather than by reading them, and how far a memorising baseline gets.
//!
//! Definitions (exact, so anyone can recompute them; `tests/oracle/make_audit_fixtures.py` does):
//!
//! - Sequences as the readers normalise them (upper case, `U` → `T`, IUPAC codes → `N`).
//! - K(x): the distinct canonical 21-mers of x (the smaller, in A < C < G < T order, of the
//!   k-mer and its reverse complement) over the windows of x made of A, C, G and T only.
//! - A 21-mer is *informative* when at most 64 training sequences (rows) hold it; one no
//!   training row holds is informative too.
//! - Containment of a test row t: c(t) = max over training rows s of
//!   |informative K(t) ∩ K(s)| / |informative K(t)|, 0 when t has no informative 21-mer.
//! - An *exact copy* equals a training sequence; a *reverse-complement copy* equals a training
//!   sequence's reverse complement and is not exact; a *near copy* has c(t) ≥ 0.5 and is
//!   neither. The three together are the *leaked* test rows.
//! - The *nearest-neighbour baseline* gives t the label of the training row sharing the most
//!   informative 21-mers with it (ties: the first in the training split's order, which is file
//!   order for tasks that come split), or, when none shares one, the majority training label
//!   (ties: the first in sorted label order); its MCC over the test rows is reported.
//!
//! The index holds only informative 21-mers' holders (at most 64 rows each), so 10⁶
//! near-identical sequences cost their distinct 21-mers, not their length; what it holds is
//! charged to the memory budget as it grows. Test rows are audited in parallel and put back in
//! order, so the audit does not depend on the thread count.

use crate::budget::Meter;
use crate::task::{Dataset, TaskData};
use crate::{Result, metrics};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The k-mer length.
pub const K: usize = 21;
/// A 21-mer held by more training rows than this is a repeat, not evidence of a copy.
pub const MAX_HOLDERS: usize = 64;
/// The containment from which a test row is a near copy.
pub const NEAR_COPY: f64 = 0.5;

/// seqleak's thresholds (its defaults): a share of near copies from 1 % warns, from 10 % fails;
/// of exact (and reverse-complement) copies from 0.5 % warns, from 5 % fails.
pub const NEAR_WARN: f64 = 0.01;
pub const NEAR_FAIL: f64 = 0.10;
pub const EXACT_WARN: f64 = 0.005;
pub const EXACT_FAIL: f64 = 0.05;
/// A nearest-neighbour MCC from here warns: remembering training rows alone already scores
/// this well, so a probe's score may say as much about the split as about the model.
pub const NEAREST_NEIGHBOUR_WARN: f64 = 0.5;

/// The audit of one task, as `geneb audit --json` prints it and a result records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAudit {
    pub task: String,
    /// Training and test rows.
    pub train: usize,
    pub test: usize,
    pub exact_copies: usize,
    pub reverse_complement_copies: usize,
    pub near_copies: usize,
    /// 0-based positions among the test rows, in the test split's order.
    pub leaked_test_rows: Vec<usize>,
    pub nearest_neighbour_mcc: f64,
    /// Distinct training sequences that occur with more than one label.
    pub conflicting_training_duplicates: usize,
    /// Test rows with no informative 21-mer (shorter than 21 nt, N-rich, or only repeats):
    /// the audit cannot see a near copy among them.
    pub test_rows_without_informative_kmers: usize,
    /// `ok`, `warn` or `fail` by the thresholds above.
    pub verdict: Verdict,
    /// Why the verdict is not `ok`, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Warn,
    Fail,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

/// `geneb audit --json`: the definitions' constants, the thresholds, and every task's audit.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub k: usize,
    pub max_training_holders: usize,
    pub near_copy_containment: f64,
    pub thresholds: Thresholds,
    pub tasks: Vec<TaskAudit>,
}

/// The shares (of test rows) and the MCC from which a task warns or fails.
#[derive(Debug, Clone, Serialize)]
pub struct Thresholds {
    pub exact_warn: f64,
    pub exact_fail: f64,
    pub near_warn: f64,
    pub near_fail: f64,
    pub nearest_neighbour_mcc_warn: f64,
}

impl Report {
    pub fn of(tasks: Vec<TaskAudit>) -> Report {
        Report {
            k: K,
            max_training_holders: MAX_HOLDERS,
            near_copy_containment: NEAR_COPY,
            thresholds: Thresholds {
                exact_warn: EXACT_WARN,
                exact_fail: EXACT_FAIL,
                near_warn: NEAR_WARN,
                near_fail: NEAR_FAIL,
                nearest_neighbour_mcc_warn: NEAREST_NEIGHBOUR_WARN,
            },
            tasks,
        }
    }
}

impl TaskAudit {
    /// A k-fold task's audit from its folds' (in fold order): counts summed, leaked rows one
    /// fold after the other (as the result's evidence concatenates the folds' test rows),
    /// training rows and the nearest-neighbour MCC the mean over folds.
    pub fn of_folds(id: &str, folds: &[TaskAudit]) -> TaskAudit {
        let n = folds.len().max(1);
        let mut leaked = Vec::new();
        let mut offset = 0;
        for fold in folds {
            leaked.extend(fold.leaked_test_rows.iter().map(|r| r + offset));
            offset += fold.test;
        }
        let sum = |get: fn(&TaskAudit) -> usize| folds.iter().map(get).sum::<usize>();
        let mut audit = TaskAudit {
            task: id.to_string(),
            train: sum(|f| f.train) / n,
            test: sum(|f| f.test),
            exact_copies: sum(|f| f.exact_copies),
            reverse_complement_copies: sum(|f| f.reverse_complement_copies),
            near_copies: sum(|f| f.near_copies),
            leaked_test_rows: leaked,
            nearest_neighbour_mcc: folds.iter().map(|f| f.nearest_neighbour_mcc).sum::<f64>()
                / n as f64,
            conflicting_training_duplicates: folds
                .iter()
                .map(|f| f.conflicting_training_duplicates)
                .max()
                .unwrap_or(0),
            test_rows_without_informative_kmers: sum(|f| f.test_rows_without_informative_kmers),
            verdict: Verdict::Ok,
            flags: Vec::new(),
        };
        audit.judge();
        audit
    }

    /// Sets the verdict and its flags from the counts.
    fn judge(&mut self) {
        self.flags = flags(self);
        self.verdict = verdict(self);
    }

    /// The share of test rows that leaked.
    pub fn leak_share(&self) -> f64 {
        self.leaked_test_rows.len() as f64 / self.test.max(1) as f64
    }
}

/// How one test row relates to the training rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leak {
    Exact,
    ReverseComplement,
    Near,
}

/// One test row's findings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowFinding {
    pub leak: Option<Leak>,
    /// The nearest-neighbour baseline's label index.
    pub nearest_label: usize,
    /// Whether the row has an informative 21-mer.
    pub informative: bool,
}

/// The audit of every task, in order.
pub fn audit_tasks(tasks: &[TaskData]) -> Result<Vec<TaskAudit>> {
    tasks.iter().map(audit_task).collect()
}

/// The audit of one task.
pub fn audit_task(task: &TaskData) -> Result<TaskAudit> {
    let findings = audit_rows(&task.task.id, &task.data)?;
    Ok(summarise(&task.task.id, &task.data, &findings))
}

/// Each test row's findings, in test order.
pub fn audit_rows(id: &str, data: &Dataset) -> Result<Vec<RowFinding>> {
    let train = &data.train.sequences;
    let mut meter = Meter::new(&format!("task {id}"), "the audit's 21-mer index");
    let index = Index::build(train, &mut meter)?;
    let training: HashSet<&str> = train.iter().map(String::as_str).collect();
    let majority = majority_label(&data.train.y, data.labels.len());
    Ok(data
        .test
        .sequences
        .par_iter()
        .map(|t| {
            let shared = index.shared(t);
            let containment = match shared.informative {
                0 => 0.0,
                n => shared.best.map_or(0, |(_, count)| count) as f64 / n as f64,
            };
            let leak = if training.contains(t.as_str()) {
                Some(Leak::Exact)
            } else if training.contains(reverse_complement(t).as_str()) {
                Some(Leak::ReverseComplement)
            } else if containment >= NEAR_COPY {
                Some(Leak::Near)
            } else {
                None
            };
            RowFinding {
                leak,
                nearest_label: shared
                    .best
                    .map_or(majority, |(row, _)| data.train.y[row as usize]),
                informative: shared.informative > 0,
            }
        })
        .collect())
}

/// The cluster of each row of a table (named by its first row, 1-based), rows linked when
/// they are equal, one is the other's reverse complement, or either shares at least half of its
/// informative 21-mers with the other; informative here means held by at most 64 rows of the
/// table. `source` names the table in a budget error.
pub fn similarity_clusters(sequences: &[String], source: &str) -> Result<Vec<String>> {
    let mut meter = Meter::new(source, "the similarity split's 21-mer index");
    let index = Index::build(sequences, &mut meter)?;
    let mut first_of: HashMap<&str, u32> = HashMap::new();
    for (row, s) in sequences.iter().enumerate() {
        first_of.entry(s.as_str()).or_insert(row as u32);
    }
    let links: Vec<Vec<u32>> = sequences
        .par_iter()
        .enumerate()
        .map(|(row, s)| {
            let shared = index.shared_except(s, Some(row as u32));
            let near = shared
                .rows
                .iter()
                .filter(|&&(_, n)| n as f64 >= NEAR_COPY * shared.informative as f64)
                .map(|&(other, _)| other);
            let copies = [s.clone(), reverse_complement(s)]
                .into_iter()
                .filter_map(|x| first_of.get(x.as_str()).copied());
            near.chain(copies).collect()
        })
        .collect();
    let mut parent: Vec<u32> = (0..sequences.len() as u32).collect();
    fn root(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            let up = parent[parent[x as usize] as usize];
            parent[x as usize] = up;
            x = up;
        }
        x
    }
    for (row, linked) in links.iter().enumerate() {
        for &other in linked {
            let (a, b) = (root(&mut parent, row as u32), root(&mut parent, other));
            // The smaller row is the root, so a cluster is named by its first row.
            let (low, high) = (a.min(b), a.max(b));
            parent[high as usize] = low;
        }
    }
    Ok((0..sequences.len() as u32)
        .map(|row| format!("cluster of row {}", root(&mut parent, row) + 1))
        .collect())
}

/// The label with the most training rows; ties go to the first in sorted label order.
fn majority_label(y: &[usize], n_labels: usize) -> usize {
    let mut counts = vec![0usize; n_labels];
    y.iter().for_each(|&c| counts[c] += 1);
    // max_by_key keeps the last maximum: walk backwards so the first one wins.
    (0..n_labels)
        .rev()
        .max_by_key(|&c| counts[c])
        .unwrap_or_default()
}

/// The audit of a task from its test rows' findings ([`audit_rows`]).
pub fn summarise(id: &str, data: &Dataset, findings: &[RowFinding]) -> TaskAudit {
    let count = |kind: Leak| findings.iter().filter(|f| f.leak == Some(kind)).count();
    let predicted: Vec<usize> = findings.iter().map(|f| f.nearest_label).collect();
    let mut audit = TaskAudit {
        task: id.to_string(),
        train: data.train.len(),
        test: data.test.len(),
        exact_copies: count(Leak::Exact),
        reverse_complement_copies: count(Leak::ReverseComplement),
        near_copies: count(Leak::Near),
        leaked_test_rows: (0..findings.len())
            .filter(|&r| findings[r].leak.is_some())
            .collect(),
        nearest_neighbour_mcc: metrics::score(&data.test.y, &predicted).mcc,
        conflicting_training_duplicates: conflicting_duplicates(data),
        test_rows_without_informative_kmers: findings.iter().filter(|f| !f.informative).count(),
        verdict: Verdict::Ok,
        flags: Vec::new(),
    };
    audit.judge();
    audit
}

/// Shares of exact (with reverse-complement) and near copies among the test rows.
fn shares(audit: &TaskAudit) -> (f64, f64) {
    let test = audit.test.max(1) as f64;
    (
        (audit.exact_copies + audit.reverse_complement_copies) as f64 / test,
        audit.near_copies as f64 / test,
    )
}

fn verdict(audit: &TaskAudit) -> Verdict {
    let (exact, near) = shares(audit);
    if exact >= EXACT_FAIL || near >= NEAR_FAIL {
        Verdict::Fail
    } else if exact >= EXACT_WARN
        || near >= NEAR_WARN
        || audit.nearest_neighbour_mcc >= NEAREST_NEIGHBOUR_WARN
    {
        Verdict::Warn
    } else {
        Verdict::Ok
    }
}

fn flags(audit: &TaskAudit) -> Vec<String> {
    let (exact, near) = shares(audit);
    let level = |share: f64, warn: f64, fail: f64| {
        if share >= fail {
            Some(("fail", fail))
        } else if share >= warn {
            Some(("warn", warn))
        } else {
            None
        }
    };
    let mut out = Vec::new();
    if let Some((what, at)) = level(exact, EXACT_WARN, EXACT_FAIL) {
        out.push(format!(
            "{what}: {:.1} % of the test rows are exact or reverse-complement copies of \
             training rows ({what} from {} %)",
            exact * 100.0,
            at * 100.0
        ));
    }
    if let Some((what, at)) = level(near, NEAR_WARN, NEAR_FAIL) {
        out.push(format!(
            "{what}: {:.1} % of the test rows are near copies of training rows ({what} from \
             {} %)",
            near * 100.0,
            at * 100.0
        ));
    }
    if audit.nearest_neighbour_mcc >= NEAREST_NEIGHBOUR_WARN {
        out.push(format!(
            "warn: the nearest-neighbour baseline already scores MCC {:.3} (warn from {})",
            audit.nearest_neighbour_mcc, NEAREST_NEIGHBOUR_WARN
        ));
    }
    out
}

/// Distinct training sequences that occur with more than one label.
fn conflicting_duplicates(data: &Dataset) -> usize {
    let mut label_of: HashMap<&str, Option<usize>> = HashMap::new();
    for (s, &y) in data.train.sequences.iter().zip(&data.train.y) {
        label_of
            .entry(s.as_str())
            .and_modify(|seen| {
                if *seen != Some(y) {
                    *seen = None;
                }
            })
            .or_insert(Some(y));
    }
    label_of.values().filter(|l| l.is_none()).count()
}

/// The reverse complement of a normalised sequence (`N` stays `N`).
pub fn reverse_complement(sequence: &str) -> String {
    sequence
        .bytes()
        .rev()
        .map(|b| match b {
            b'A' => 'T',
            b'C' => 'G',
            b'G' => 'C',
            b'T' => 'A',
            _ => 'N',
        })
        .collect()
}

/// 2-bit codes, A < C < G < T, so packed k-mers compare as the strings do; 4 is not a base.
const fn code(base: u8) -> u64 {
    match base {
        b'A' => 0,
        b'C' => 1,
        b'G' => 2,
        b'T' => 3,
        _ => 4,
    }
}

const MASK: u64 = (1 << (2 * K)) - 1;

/// The distinct canonical 21-mers of `sequence`, sorted, into `out` (cleared first).
pub fn canonical_kmers(sequence: &str, out: &mut Vec<u64>) {
    out.clear();
    let (mut forward, mut reverse, mut run) = (0u64, 0u64, 0usize);
    for &base in sequence.as_bytes() {
        let c = code(base);
        if c == 4 {
            run = 0;
            continue;
        }
        forward = ((forward << 2) | c) & MASK;
        reverse = (reverse >> 2) | ((3 - c) << (2 * (K - 1)));
        run += 1;
        if run >= K {
            out.push(forward.min(reverse));
        }
    }
    out.sort_unstable();
    out.dedup();
}

/// murmur3's 64-bit finaliser: packed k-mers' low bits are the last bases alone.
#[derive(Default)]
struct KmerHasher(u64);

impl Hasher for KmerHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

type KmerMap<V> = HashMap<u64, V, BuildHasherDefault<KmerHasher>>;

/// Marks a 21-mer held by more than `MAX_HOLDERS` rows.
const REPEAT: u32 = u32::MAX;

/// Rows per parallel batch while the index is built.
const BUILD_BATCH: usize = 4096;

/// Which rows hold each informative 21-mer of a set of sequences.
pub struct Index {
    /// 21-mer → (start in `holders`, rows holding it), or `REPEAT`.
    slots: KmerMap<(u32, u32)>,
    /// The holders of every informative 21-mer, each one's rows ascending.
    holders: Vec<u32>,
}

/// What a query shares with the indexed rows.
pub struct Shared {
    /// Its informative 21-mers.
    pub informative: usize,
    /// The row sharing the most of them (the first such row) and how many; `None` when none
    /// shares one.
    pub best: Option<(u32, usize)>,
    /// Every row sharing one, ascending, with how many it shares.
    pub rows: Vec<(u32, usize)>,
}

impl Index {
    /// The index of `sequences`, what it holds charged to `meter`.
    pub fn build(sequences: &[String], meter: &mut Meter) -> Result<Index> {
        if sequences.len() >= REPEAT as usize {
            return Err(crate::Error::new(
                "the audit takes fewer than 2^32 - 1 rows",
            ));
        }
        let mut slots: KmerMap<(u32, u32)> = KmerMap::default();
        // Pass 1: how many rows hold each 21-mer.
        for_each_batch(sequences, meter, |_, kmers| {
            for &kmer in kmers {
                let slot = slots.entry(kmer).or_insert((0, 0));
                slot.1 = slot.1.saturating_add(1);
            }
            slots.capacity() as u64 * SLOT_BYTES
        })?;
        // Room for each informative 21-mer's holders; repeats hold none.
        let mut total = 0u64;
        for slot in slots.values_mut() {
            if slot.1 as usize > MAX_HOLDERS {
                *slot = (REPEAT, 0);
            } else {
                slot.0 = u32::try_from(total).map_err(|_| {
                    crate::Error::new("the audit's index holds at most 2^32 rows of 21-mers")
                })?;
                total += u64::from(slot.1);
                slot.1 = 0;
            }
        }
        meter.add(total * 4)?;
        let mut holders = vec![0u32; total as usize];
        // Pass 2: the holders, rows in order.
        for_each_batch(sequences, meter, |row, kmers| {
            for kmer in kmers {
                if let Some(slot) = slots.get_mut(kmer)
                    && slot.0 != REPEAT
                {
                    holders[(slot.0 + slot.1) as usize] = row as u32;
                    slot.1 += 1;
                }
            }
            0
        })?;
        Ok(Index { slots, holders })
    }

    /// What `query` shares with the indexed rows. `skip` leaves one row out (a row queried
    /// against an index of its own table).
    pub fn shared_except(&self, query: &str, skip: Option<u32>) -> Shared {
        let mut kmers = Vec::new();
        canonical_kmers(query, &mut kmers);
        let mut informative = 0;
        let mut hits: Vec<u32> = Vec::new();
        for kmer in &kmers {
            match self.slots.get(kmer) {
                Some(&(REPEAT, _)) => {}
                Some(&(start, len)) => {
                    informative += 1;
                    let rows = &self.holders[start as usize..(start + len) as usize];
                    hits.extend(rows.iter().filter(|&&r| Some(r) != skip));
                }
                None => informative += 1,
            }
        }
        hits.sort_unstable();
        let mut rows: Vec<(u32, usize)> = Vec::new();
        for row in hits {
            match rows.last_mut() {
                Some((last, n)) if *last == row => *n += 1,
                _ => rows.push((row, 1)),
            }
        }
        // The first row with the most: a strictly larger count replaces it.
        let best = rows
            .iter()
            .fold(None, |best: Option<(u32, usize)>, &(r, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((r, n)),
            });
        Shared {
            informative,
            best,
            rows,
        }
    }

    pub fn shared(&self, query: &str) -> Shared {
        self.shared_except(query, None)
    }
}

/// Bytes per hash-map slot of the index (key, value and hashbrown's control byte).
const SLOT_BYTES: u64 = 8 + 8 + 1;

/// Runs `each(row, distinct 21-mers of row)` over every row in order, the 21-mers of a batch
/// of rows found in parallel (and charged while held); `each` returns what the index holds
/// now in bytes, which the meter is topped up to.
fn for_each_batch(
    sequences: &[String],
    meter: &mut Meter,
    mut each: impl FnMut(usize, &[u64]) -> u64,
) -> Result<()> {
    let mut charged = 0u64;
    let mut batch_bytes = 0u64;
    for (b, batch) in sequences.chunks(BUILD_BATCH).enumerate() {
        let kmers: Vec<Vec<u64>> = batch
            .par_iter()
            .map(|s| {
                let mut out = Vec::new();
                canonical_kmers(s, &mut out);
                out
            })
            .collect();
        let held: u64 = kmers.iter().map(|k| k.len() as u64 * 8).sum();
        if held > batch_bytes {
            meter.add(held - batch_bytes)?;
            batch_bytes = held;
        }
        for (i, kmers) in kmers.iter().enumerate() {
            let now = each(b * BUILD_BATCH + i, kmers);
            if now > charged {
                meter.add(now - charged)?;
                charged = now;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_kmers(s: &str) -> Vec<u64> {
        let mut out: Vec<u64> = (0..s.len().saturating_sub(K - 1))
            .map(|i| &s[i..i + K])
            .filter(|w| w.bytes().all(|b| b"ACGT".contains(&b)))
            .map(|w| {
                let rc = reverse_complement(w);
                let pack = |x: &str| x.bytes().fold(0u64, |a, b| (a << 2) | code(b));
                pack(w).min(pack(&rc))
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    #[test]
    fn rolling_canonical_kmers_equal_the_windows_read_one_by_one() {
        let s = "ACGTTGCANNACGTACGTACGTACGTACGTTTGACCANACGGGTTTAAACCCGGGTTTAAACCCGGGTAC";
        let mut out = Vec::new();
        canonical_kmers(s, &mut out);
        assert_eq!(out, naive_kmers(s));
        assert!(!out.is_empty());
        // A sequence and its reverse complement have the same canonical 21-mers.
        let mut rc = Vec::new();
        canonical_kmers(&reverse_complement(s), &mut rc);
        assert_eq!(out, rc);
        canonical_kmers("ACGTACGTACGTACGTACGT", &mut out);
        assert!(out.is_empty(), "20 nt hold no 21-mer");
    }

    #[test]
    fn majority_ties_go_to_the_first_sorted_label() {
        assert_eq!(majority_label(&[1, 0, 1, 0, 2], 3), 0);
        assert_eq!(majority_label(&[2, 1, 1], 3), 1);
    }
}
