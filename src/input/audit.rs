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
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

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
    let mut meter = Meter::new(&format!("task {id}"), "the audit's 21-mer index");
    let training = Distinct::of(&data.train.sequences, &mut meter)?;
    let index = Index::build(&training, &mut meter)?;
    let majority = majority_label(&data.train.y, data.labels.len());
    // Equal test rows have equal findings: each distinct one is looked up once.
    let test = Distinct::of(&data.test.sequences, &mut meter)?;
    let findings: Vec<RowFinding> = test
        .sequences
        .par_iter()
        .map(|&t| {
            let shared = index.shared(t);
            let containment = match shared.informative {
                0 => 0.0,
                n => shared.best.map_or(0, |(_, count)| count) as f64 / n as f64,
            };
            let leak = if training.first_row(t).is_some() {
                Some(Leak::Exact)
            } else if training.first_row(&reverse_complement(t)).is_some() {
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
        .collect();
    Ok(test.numbers.iter().map(|&d| findings[d as usize]).collect())
}

/// The cluster of each row of a table (named by its first row, 1-based), rows linked when
/// they are equal, one is the other's reverse complement, or either shares at least half of its
/// informative 21-mers with the other; informative here means held by at most 64 rows of the
/// table. `source` names the table in a budget error.
pub fn similarity_clusters(sequences: &[String], source: &str) -> Result<Vec<String>> {
    let mut meter = Meter::new(source, "the similarity split's 21-mer index");
    let distinct = Distinct::of(sequences, &mut meter)?;
    let index = Index::build(&distinct, &mut meter)?;
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
                .filter_map(|x| distinct.first_row(&x));
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
/// A table, not a `match`: the compiler made the match a jump table whose branch on random
/// bases was mispredicted three times in four, the rolling 21-mer's main cost.
const CODES: [u8; 256] = {
    let mut codes = [4u8; 256];
    codes[b'A' as usize] = 0;
    codes[b'C' as usize] = 1;
    codes[b'G' as usize] = 2;
    codes[b'T' as usize] = 3;
    codes
};

fn code(base: u8) -> u64 {
    u64::from(CODES[usize::from(base)])
}

/// Bits of a packed 21-mer.
const BITS: u32 = 2 * K as u32;
const MASK: u64 = (1 << BITS) - 1;

/// A bijection of the 42-bit packed 21-mers (multiplications by odd numbers and xor-shifts by
/// half the width each undo): the index files 21-mers by their top bits, which in packed
/// canonical 21-mers crowd (they start with A or C more often; low-complexity ones are near 0).
const fn scramble(kmer: u64) -> u64 {
    let mut x = kmer.wrapping_mul(0x9e37_79b9_7f4a_7c15) & MASK;
    x ^= x >> (BITS / 2);
    x = x.wrapping_mul(0xc2b2_ae3d_27d4_eb4f) & MASK;
    x ^ (x >> (BITS / 2))
}

/// Calls `each` with the scrambled canonical 21-mer of every window of A/C/G/T of `sequence`,
/// in order, repeats included.
fn for_each_kmer(sequence: &str, mut each: impl FnMut(u64)) {
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
            each(scramble(forward.min(reverse)));
        }
    }
}

/// The distinct scrambled canonical 21-mers of `sequence`, sorted, into `out` (cleared first).
fn distinct_kmers(sequence: &str, out: &mut Vec<u64>) {
    out.clear();
    for_each_kmer(sequence, |kmer| out.push(kmer));
    out.sort_unstable();
    out.dedup();
}

/// murmur3's 64-bit finaliser: hashbrown wants the top bits of a hash to vary, and scrambled
/// 21-mers have 22 zero bits on top.
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

/// The distinct sequences of a list of rows and the rows holding each. Equal rows hold the same
/// 21-mers, so the index reads each distinct sequence once however many rows repeat it: a table
/// of near-identical rows is mostly repeats (one 200-nt sequence with one base changed has 600
/// variants), and reading each of its 100,000 rows three times was most of its audit.
pub struct Distinct<'a> {
    /// Each distinct sequence, in the order of its first row.
    sequences: Vec<&'a str>,
    /// Each row's distinct sequence (its position in `sequences`).
    numbers: Vec<u32>,
    /// Distinct sequence d's rows are `rows[starts[d]..starts[d + 1]]`, ascending.
    starts: Vec<u32>,
    rows: Vec<u32>,
    number_of: HashMap<&'a str, u32>,
}

/// Estimated bytes per row of a [`Distinct`]: its number and place among its sequence's rows,
/// and at worst (every row distinct) a map entry (key, value, control byte, 7/8 load), the
/// sequence's slice and its start (twice while the rows are sorted).
const DISTINCT_BYTES: u64 = 4 + 4 + (16 + 8 + 1) * 8 / 7 + 16 + 4 + 4;

impl<'a> Distinct<'a> {
    /// The distinct sequences of `rows`, charged to `meter` before they are allocated.
    pub fn of(rows: &'a [String], meter: &mut Meter) -> Result<Distinct<'a>> {
        if rows.len() >= REPEAT as usize {
            return Err(crate::Error::new(
                "the audit takes fewer than 2^32 - 1 rows",
            ));
        }
        meter.add(rows.len() as u64 * DISTINCT_BYTES)?;
        let mut number_of: HashMap<&str, u32> = HashMap::new();
        let mut sequences = Vec::new();
        let numbers: Vec<u32> = rows
            .iter()
            .map(|s| {
                *number_of.entry(s.as_str()).or_insert_with(|| {
                    sequences.push(s.as_str());
                    sequences.len() as u32 - 1
                })
            })
            .collect();
        // Each distinct sequence's rows, in order: a counting sort of the rows by number.
        let mut starts = vec![0u32; sequences.len() + 1];
        numbers.iter().for_each(|&d| starts[d as usize + 1] += 1);
        for d in 0..sequences.len() {
            starts[d + 1] += starts[d];
        }
        let mut next = starts.clone();
        let mut placed = vec![0u32; rows.len()];
        for (row, &d) in numbers.iter().enumerate() {
            placed[next[d as usize] as usize] = row as u32;
            next[d as usize] += 1;
        }
        Ok(Distinct {
            sequences,
            numbers,
            starts,
            rows: placed,
            number_of,
        })
    }

    /// The rows holding distinct sequence `d`, ascending.
    fn rows_of(&self, d: usize) -> &[u32] {
        &self.rows[self.starts[d] as usize..self.starts[d + 1] as usize]
    }

    /// The first row equal to `sequence`, if any.
    pub fn first_row(&self, sequence: &str) -> Option<u32> {
        let &d = self.number_of.get(sequence)?;
        self.rows_of(d as usize).first().copied()
    }
}

/// The row of an index entry that marks a 21-mer held by more than `MAX_HOLDERS` rows.
const REPEAT: u32 = u32::MAX;

/// Top bits of a scrambled 21-mer that say which part of the index files it: at most 256 parts
/// (threads building it).
const PART_BITS: u32 = 8;
/// The entries are first filed in 4,096 regions by the scrambled 21-mer's top bits — few enough
/// that the region being written to is in cache — then each region is sorted where it lies.
const REGION_BITS: u32 = 12;
/// The sketch has a one-byte cell for every 16 windows (a cell of mostly unrelated 21-mers
/// reaches 65 windows by chance far too rarely to matter, and it stays in cache), at least 2^12
/// and at most 2^24.
const WINDOWS_PER_CELL: u64 = 16;
const MAX_SKETCH_BITS: u32 = 24;
/// The directory has a bucket for every 8 entries, at most 2^28 buckets.
const ENTRIES_PER_BUCKET: u64 = 8;
const MAX_BUCKET_BITS: u32 = 28;

/// Which rows hold each informative 21-mer of a set of sequences: a sorted list of
/// (21-mer, row) entries, 8 bytes each, with a directory of buckets by the scrambled 21-mer's
/// top bits. A hash map of 21-mers to their holders cost three times that, built on one thread.
pub struct Index {
    /// The scrambled 21-mer's top bits that name its bucket.
    bucket_bits: u32,
    /// Bucket b's entries are `entries[starts[b]..starts[b + 1]]`.
    starts: Vec<u32>,
    /// (the scrambled 21-mer's bits below its region's) << 32 | row, ascending; a repeat is one
    /// entry whose row is `REPEAT`.
    entries: Vec<u64>,
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

/// One of the index's parts, a range of the scrambled 21-mers' top `PART_BITS` bits. Each part
/// is built on its own thread, which reads every row and keeps the 21-mers in its range: no two
/// threads write the same memory, and each sees the rows in order.
#[derive(Clone, Copy)]
struct Part {
    first: u64,
    end: u64,
}

impl Part {
    fn holds(self, kmer: u64) -> bool {
        let top = kmer >> (BITS - PART_BITS);
        self.first <= top && top < self.end
    }

    /// Its first cell in a table indexed by the scrambled 21-mers' top `bits` bits.
    fn first_cell(self, bits: u32) -> usize {
        (self.first << (bits - PART_BITS)) as usize
    }
}

/// `n` parts of (nearly) equal ranges.
fn parts(n: usize) -> Vec<Part> {
    let n = n.clamp(1, 1 << PART_BITS) as u64;
    let bound = |p: u64| (p << PART_BITS).div_ceil(n);
    (0..n)
        .map(|p| Part {
            first: bound(p),
            end: bound(p + 1),
        })
        .collect()
}

/// `table`, indexed by the scrambled 21-mers' top `bits` bits, cut into the parts' cells.
fn split_by_part<'a, T>(mut table: &'a mut [T], bits: u32, parts: &[Part]) -> Vec<&'a mut [T]> {
    parts
        .iter()
        .map(|part| {
            let cells = ((part.end - part.first) << (bits - PART_BITS)) as usize;
            let (mine, rest) = std::mem::take(&mut table).split_at_mut(cells);
            table = rest;
            mine
        })
        .collect()
}

/// How many rows hold a 21-mer the sketch could not call informative, counted exactly.
struct Unsure {
    holders: u32,
    /// The last distinct sequence counted (or, in the last pass, filed).
    last: u32,
}

/// Estimated bytes per entry of a hash map of `Unsure` (key, value, control byte, 7/8 load).
const UNSURE_BYTES: u64 = (8 + 8 + 1) * 8 / 7;

/// Bits enough to number `n` things.
fn bits_for(n: u64) -> u32 {
    u64::BITS - n.saturating_sub(1).leading_zeros()
}

/// The budget's one-line error for `meter`, when a part of the index went over its room.
fn over_budget(meter: &mut Meter) -> crate::Error {
    meter.add(u64::MAX).err().unwrap_or_else(|| {
        crate::Error::new("the audit's 21-mer index needs more than geneb's memory budget")
    })
}

impl Index {
    /// The index of `sequences`, what it holds charged to `meter` before it is allocated.
    ///
    /// Three passes over the rows, each on every core (one part a thread): (1) a saturating
    /// count of windows per cell of a sketch — a 21-mer whose cell has at most `MAX_HOLDERS`
    /// windows is held by at most that many rows, surely informative, and needs no count of its
    /// own; (2) the entries per region, and the exact holders of the 21-mers the sketch is
    /// unsure of (repeats: few distinct ones however many rows hold them); (3) the entries
    /// filed in their regions, each region sorted. Nothing depends on the number of parts.
    ///
    /// Each distinct sequence is read once and counts for as many rows as hold it.
    pub fn build(distinct: &Distinct, meter: &mut Meter) -> Result<Index> {
        let sequences = &distinct.sequences;
        let holding = |d: usize| distinct.starts[d + 1] - distinct.starts[d];
        let windows_of = |s: &str| (s.len() as u64).saturating_sub(K as u64 - 1);
        let windows: u64 = sequences.iter().map(|s| windows_of(s)).sum();
        let row_windows: u64 = (0..sequences.len())
            .map(|d| windows_of(sequences[d]) * u64::from(holding(d)))
            .sum();
        // Entries are at most the rows' windows (a repeat's one entry stands for 65 of them).
        if row_windows >= u64::from(u32::MAX) {
            return Err(crate::Error::new(
                "the audit's index holds fewer than 2^32 - 1 21-mers",
            ));
        }
        let parts = parts(rayon::current_num_threads());
        let mut charged = 0u64;
        let mut charge = |meter: &mut Meter, bytes: u64| {
            charged += bytes;
            meter.add(bytes).map(|()| charged)
        };

        // Pass 1: the sketch.
        let sketch_bits = bits_for(windows / WINDOWS_PER_CELL).clamp(REGION_BITS, MAX_SKETCH_BITS);
        charge(meter, 1 << sketch_bits)?;
        let mut sketch = vec![0u8; 1 << sketch_bits];
        let sketch_shift = BITS - sketch_bits;
        split_by_part(&mut sketch, sketch_bits, &parts)
            .into_par_iter()
            .zip(&parts)
            .for_each(|(cells, &part)| {
                let first = part.first_cell(sketch_bits);
                for (d, s) in sequences.iter().enumerate() {
                    let rows = holding(d) as usize;
                    for_each_kmer(s, |kmer| {
                        if part.holds(kmer) {
                            let cell = &mut cells[(kmer >> sketch_shift) as usize - first];
                            *cell = (usize::from(*cell) + rows).min(MAX_HOLDERS + 1) as u8;
                        }
                    });
                }
            });
        let sure = |kmer: u64| usize::from(sketch[(kmer >> sketch_shift) as usize]) <= MAX_HOLDERS;

        // Pass 2: entries per region, counted at region_ends[r + 1].
        let region_shift = BITS - REGION_BITS;
        let low_mask = (1u64 << region_shift) - 1;
        let mut region_ends = vec![0u32; (1 << REGION_BITS) + 1];
        // The unsure 21-mers' maps grow on every thread at once: they share what is left.
        let room = crate::budget::limit().saturating_sub(charge(meter, 0)?);
        let taken = AtomicU64::new(0);
        let counted: Vec<Option<KmerMap<Unsure>>> =
            split_by_part(&mut region_ends[1..], REGION_BITS, &parts)
                .into_par_iter()
                .zip(&parts)
                .map(|(counts, &part)| {
                    let first = part.first_cell(REGION_BITS);
                    let mut unsure: KmerMap<Unsure> = KmerMap::default();
                    let mut over = false;
                    for (d, s) in sequences.iter().enumerate() {
                        let rows = holding(d);
                        for_each_kmer(s, |kmer| {
                            if over || !part.holds(kmer) {
                                return;
                            }
                            if sure(kmer) {
                                counts[(kmer >> region_shift) as usize - first] += rows;
                                return;
                            }
                            if unsure.len() == unsure.capacity() && !unsure.contains_key(&kmer) {
                                let more = unsure.capacity().max(4) as u64 * UNSURE_BYTES;
                                over = taken.fetch_add(more, Ordering::Relaxed) + more > room;
                                if over {
                                    return;
                                }
                            }
                            let held = unsure.entry(kmer).or_insert(Unsure {
                                holders: 0,
                                last: REPEAT,
                            });
                            if held.last != d as u32 {
                                held.last = d as u32;
                                held.holders += rows;
                            }
                        });
                        if over {
                            return None;
                        }
                    }
                    for (&kmer, held) in &mut unsure {
                        // A repeat's one entry, or one per holder.
                        counts[(kmer >> region_shift) as usize - first] +=
                            if held.holders as usize > MAX_HOLDERS {
                                1
                            } else {
                                held.holders
                            };
                        held.last = REPEAT;
                    }
                    Some(unsure)
                })
                .collect();
        charge(meter, taken.load(Ordering::Relaxed))?;
        let mut unsure = counted
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| over_budget(meter))?;
        // region_ends[r + 1] becomes region r's start, the cursor pass 3 files it at, and then
        // its end.
        let mut total = 0u32;
        for cell in &mut region_ends[1..] {
            let count = *cell;
            *cell = total;
            total += count;
        }
        // Which sketch cells hold an unsure 21-mer that is informative after all: pass 3 looks
        // up no repeat in the maps (a table of near-identical rows is almost all repeats).
        charge(meter, sketch.len() as u64)?;
        let mut unsure_informative = vec![false; sketch.len()];
        for (&kmer, held) in unsure.iter().flatten() {
            if held.holders as usize <= MAX_HOLDERS {
                unsure_informative[(kmer >> sketch_shift) as usize] = true;
            }
        }
        let part_starts: Vec<u32> = parts
            .iter()
            .map(|part| region_ends[part.first_cell(REGION_BITS) + 1])
            .collect();

        // Pass 3: the entries, filed in their regions, each region sorted.
        charge(meter, u64::from(total) * 8)?;
        let mut entries = vec![0u64; total as usize];
        let mut part_entries = Vec::with_capacity(parts.len());
        let mut rest = entries.as_mut_slice();
        for (p, &begin) in part_starts.iter().enumerate() {
            let end = part_starts.get(p + 1).copied().unwrap_or(total);
            let (mine, after) = std::mem::take(&mut rest).split_at_mut((end - begin) as usize);
            part_entries.push(mine);
            rest = after;
        }
        let kept: Vec<u32> = split_by_part(&mut region_ends[1..], REGION_BITS, &parts)
            .into_par_iter()
            .zip(part_entries)
            .zip(&mut unsure)
            .zip(&parts)
            .zip(&part_starts)
            .map(|((((cursors, mine), unsure), &part), &begin)| {
                let first = part.first_cell(REGION_BITS);
                let mut file = |kmer: u64, row: u32| {
                    let cursor = &mut cursors[(kmer >> region_shift) as usize - first];
                    mine[(*cursor - begin) as usize] = (kmer & low_mask) << 32 | u64::from(row);
                    *cursor += 1;
                };
                for (d, s) in sequences.iter().enumerate() {
                    let rows = distinct.rows_of(d);
                    for_each_kmer(s, |kmer| {
                        if !part.holds(kmer) {
                            return;
                        }
                        if sure(kmer) {
                            rows.iter().for_each(|&row| file(kmer, row));
                        } else if unsure_informative[(kmer >> sketch_shift) as usize]
                            && let Some(held) = unsure.get_mut(&kmer)
                            && held.holders as usize <= MAX_HOLDERS
                            && held.last != d as u32
                        {
                            held.last = d as u32;
                            rows.iter().for_each(|&row| file(kmer, row));
                        }
                    });
                }
                for (&kmer, held) in unsure.iter() {
                    if held.holders as usize > MAX_HOLDERS {
                        file(kmer, REPEAT);
                    }
                }
                // Each region sorted (a 21-mer's entries together, rows ascending) and rid of
                // the entries a row's repeated windows made, moved down over the gaps.
                let (mut kept, mut from) = (0usize, 0usize);
                for end in cursors.iter_mut() {
                    let to = (*end - begin) as usize;
                    mine[from..to].sort_unstable();
                    let region_first = kept;
                    for i in from..to {
                        if kept == region_first || mine[kept - 1] != mine[i] {
                            mine[kept] = mine[i];
                            kept += 1;
                        }
                    }
                    from = to;
                    *end = begin + kept as u32;
                }
                kept as u32
            })
            .collect();
        drop(sketch);
        drop(unsure_informative);
        drop(unsure);
        // The parts' entries moved together.
        let mut next = 0u32;
        for ((&begin, &kept), part) in part_starts.iter().zip(&kept).zip(&parts) {
            entries.copy_within(begin as usize..(begin + kept) as usize, next as usize);
            let regions = part.first_cell(REGION_BITS) + 1
                ..(part.end << (REGION_BITS - PART_BITS)) as usize + 1;
            for end in &mut region_ends[regions] {
                *end = *end - begin + next;
            }
            next += kept;
        }
        entries.truncate(next as usize);

        // The directory: entries ascend by bucket (regions in order, each sorted), so each
        // bucket's start is found in one walk.
        let bucket_bits =
            bits_for(u64::from(next) / ENTRIES_PER_BUCKET).clamp(REGION_BITS, MAX_BUCKET_BITS);
        charge(meter, ((1u64 << bucket_bits) + 1) * 4)?;
        let mut starts = Vec::with_capacity((1 << bucket_bits) + 1);
        let below = BITS - bucket_bits;
        for (region, ends) in region_ends.windows(2).enumerate() {
            for (at, &entry) in (ends[0]..).zip(&entries[ends[0] as usize..ends[1] as usize]) {
                let bucket =
                    region << (bucket_bits - REGION_BITS) | (entry >> 32 >> below) as usize;
                starts.resize(bucket + 1, at);
            }
        }
        starts.resize((1 << bucket_bits) + 1, next);
        Ok(Index {
            bucket_bits,
            starts,
            entries,
        })
    }

    /// What `query` shares with the indexed rows. `skip` leaves one row out (a row queried
    /// against an index of its own table).
    pub fn shared_except(&self, query: &str, skip: Option<u32>) -> Shared {
        let mut kmers = Vec::new();
        distinct_kmers(query, &mut kmers);
        // In stages, each loop's reads independent of each other so that their cache misses
        // overlap: the buckets' bounds, then the 21-mers' entries within them.
        let shift = BITS - self.bucket_bits;
        let bounds: Vec<(u32, u32)> = kmers
            .iter()
            .map(|&kmer| {
                let bucket = (kmer >> shift) as usize;
                (self.starts[bucket], self.starts[bucket + 1])
            })
            .collect();
        // Each bucket's first entry: a 21-mer below it has none, and a search starts in the
        // cache line just read.
        let firsts: Vec<u64> = bounds
            .iter()
            .map(|&(start, end)| {
                if start < end {
                    self.entries[start as usize] >> 32
                } else {
                    u64::MAX
                }
            })
            .collect();
        let mut informative = 0;
        let mut hits: Vec<u32> = Vec::new();
        for ((&kmer, &(start, end)), &first) in kmers.iter().zip(&bounds).zip(&firsts) {
            let low = kmer & ((1 << (BITS - REGION_BITS)) - 1);
            if low < first {
                informative += 1;
                continue;
            }
            let bucket = &self.entries[start as usize..end as usize];
            let from = bucket.partition_point(|&e| e >> 32 < low);
            let len = bucket[from..].partition_point(|&e| e >> 32 == low);
            match &bucket[from..from + len] {
                [repeat] if *repeat as u32 == REPEAT => {}
                held => {
                    informative += 1;
                    hits.extend(held.iter().map(|&e| e as u32).filter(|&r| Some(r) != skip));
                }
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
                scramble(pack(w).min(pack(&rc)))
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
        distinct_kmers(s, &mut out);
        assert_eq!(out, naive_kmers(s));
        assert!(!out.is_empty());
        // A sequence and its reverse complement have the same canonical 21-mers.
        let mut rc = Vec::new();
        distinct_kmers(&reverse_complement(s), &mut rc);
        assert_eq!(out, rc);
        distinct_kmers("ACGTACGTACGTACGTACGT", &mut out);
        assert!(out.is_empty(), "20 nt hold no 21-mer");
    }

    /// The inverse of an odd number modulo 2^42 (Newton's iteration doubles the bits right).
    fn inverse(odd: u64) -> u64 {
        let mut x = odd;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(x)));
        }
        x & MASK
    }

    #[test]
    fn scrambling_loses_no_21_mer() {
        // Undone step by step: equal scrambled 21-mers are equal 21-mers.
        let unscramble = |y: u64| {
            let mut x = y ^ (y >> (BITS / 2));
            x = x.wrapping_mul(inverse(0xc2b2_ae3d_27d4_eb4f)) & MASK;
            x ^= x >> (BITS / 2);
            x.wrapping_mul(inverse(0x9e37_79b9_7f4a_7c15)) & MASK
        };
        let mut x = 0x1234_5678_9abc_def0u64;
        for kmer in [0, 1, MASK, MASK - 1, 1 << 41]
            .into_iter()
            .chain((0..10_000).map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                x >> 22
            }))
        {
            assert!(scramble(kmer) <= MASK);
            assert_eq!(unscramble(scramble(kmer)), kmer, "{kmer:#x}");
        }
    }

    #[test]
    fn parts_cover_every_cell_once() {
        for n in [1, 2, 3, 7, 64] {
            let parts = parts(n);
            assert_eq!(parts[0].first, 0);
            assert_eq!(parts[n - 1].end, 1 << PART_BITS);
            assert!(parts.windows(2).all(|w| w[0].end == w[1].first));
            let mut table = vec![0u8; 1 << 20];
            let cells: Vec<usize> = split_by_part(&mut table, 20, &parts)
                .iter()
                .map(|c| c.len())
                .collect();
            assert_eq!(cells.iter().sum::<usize>(), 1 << 20);
        }
    }

    /// Which rows hold each 21-mer, counted naively.
    fn naive_holders(rows: &[String]) -> HashMap<u64, Vec<u32>> {
        let mut holders: HashMap<u64, Vec<u32>> = HashMap::new();
        for (row, s) in rows.iter().enumerate() {
            let mut kmers = Vec::new();
            distinct_kmers(s, &mut kmers);
            for kmer in kmers {
                holders.entry(kmer).or_default().push(row as u32);
            }
        }
        holders
    }

    /// What a query shares with the rows of `holders`, counted naively.
    fn naive_shared(holders: &HashMap<u64, Vec<u32>>, query: &str) -> (usize, Vec<(u32, usize)>) {
        let mut informative = 0;
        let mut counts: std::collections::BTreeMap<u32, usize> = Default::default();
        let mut kmers = Vec::new();
        distinct_kmers(query, &mut kmers);
        for kmer in kmers {
            let held = holders.get(&kmer).map_or(&[][..], Vec::as_slice);
            if held.len() <= MAX_HOLDERS {
                informative += 1;
                held.iter()
                    .for_each(|&r| *counts.entry(r).or_default() += 1);
            }
        }
        (informative, counts.into_iter().collect())
    }

    #[test]
    fn the_index_counts_exactly_where_the_sketch_is_unsure() {
        let mut state = 7u64;
        let mut random = |n: usize| -> String {
            (0..n)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    b"ACGT"[(state >> 62) as usize] as char
                })
                .collect()
        };
        // A 3,000-nt block in 70 rows: its 21-mers are repeats and fill sketch cells, where the
        // tails' 21-mers (one in 40 rows, the rest in one) need their holders counted exactly.
        let block = random(3000);
        let shared_tail = random(300);
        let rows: Vec<String> = (0..120)
            .map(|i| {
                let mut s = if i < 70 { block.clone() } else { String::new() };
                if i % 3 == 0 {
                    s += &shared_tail;
                }
                s + &random(300)
            })
            .collect();
        // The sketch as the index builds it: some informative 21-mer shares a full cell.
        let windows: usize = rows.iter().map(|s| s.len() - (K - 1)).sum();
        let bits = bits_for(windows as u64 / WINDOWS_PER_CELL).clamp(REGION_BITS, MAX_SKETCH_BITS);
        let mut cells = vec![0usize; 1 << bits];
        rows.iter()
            .for_each(|s| for_each_kmer(s, |k| cells[(k >> (BITS - bits)) as usize] += 1));
        let mut tail_kmers = Vec::new();
        distinct_kmers(&shared_tail, &mut tail_kmers);
        assert!(
            tail_kmers
                .iter()
                .any(|&k| cells[(k >> (BITS - bits)) as usize] > MAX_HOLDERS),
            "the fixture must send informative 21-mers down the exact count"
        );
        // The same rows with copies between them: row 72 held by 41 rows (its own 21-mers
        // informative, every copy a holder), row 74 by 71 (its own 21-mers repeats by the
        // copies alone), though each is read once.
        let mut copied = rows.clone();
        for copy in 0..70 {
            copied.insert(10 + 2 * copy, rows[74].clone());
            if copy < 40 {
                copied.push(rows[72].clone());
            }
        }
        let queries = [
            rows[0].clone(),
            rows[3].clone(),
            rows[71].clone(),
            rows[72].clone(),
            rows[74].clone(),
            shared_tail.clone() + &random(100),
            block[..500].to_string(),
        ];
        for rows in [&rows, &copied] {
            let holders = naive_holders(rows);
            let want: Vec<_> = queries.iter().map(|q| naive_shared(&holders, q)).collect();
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut meter = Meter::new("test", "the index");
                let distinct = Distinct::of(rows, &mut meter).unwrap();
                let index = pool
                    .install(|| Index::build(&distinct, &mut meter))
                    .unwrap();
                for (query, want) in queries.iter().zip(&want) {
                    let shared = index.shared(query);
                    assert_eq!(
                        &(shared.informative, shared.rows),
                        want,
                        "{} rows, {threads} thread(s)",
                        rows.len()
                    );
                }
            }
        }
    }

    #[test]
    fn majority_ties_go_to_the_first_sorted_label() {
        assert_eq!(majority_label(&[1, 0, 1, 0, 2], 3), 0);
        assert_eq!(majority_label(&[2, 1, 1], 3), 1);
    }
}
