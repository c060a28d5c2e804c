//! Validated examples → `Dataset`: sequence alphabet, labels in numpy `unique` order, and the
//! checks a probe needs (train and test rows, two classes in train).

use super::text::quote;
use crate::input::split::SplitSettings;
use crate::task::{Dataset, MadeSplit, Split};
use crate::{Error, Result};
use std::collections::HashMap;

/// Which split an example belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Train,
    Test,
}

impl Part {
    /// `train` / `test`, case-insensitive; the only splits GENEB has.
    pub(crate) fn parse(text: &str) -> Option<Part> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("train") {
            Some(Part::Train)
        } else if text.eq_ignore_ascii_case("test") {
            Some(Part::Test)
        } else {
            None
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Part::Train => "train",
            Part::Test => "test",
        }
    }
}

/// Bases as the models see them: upper case, IUPAC ambiguity codes → `N`, RNA `U` → `T`.
/// 0 marks a byte that is not allowed.
const BASES: [u8; 256] = {
    let mut table = [0u8; 256];
    let pairs: [(u8, u8); 15] = [
        (b'A', b'A'),
        (b'C', b'C'),
        (b'G', b'G'),
        (b'T', b'T'),
        (b'U', b'T'),
        (b'N', b'N'),
        (b'R', b'N'),
        (b'Y', b'N'),
        (b'S', b'N'),
        (b'W', b'N'),
        (b'K', b'N'),
        (b'M', b'N'),
        (b'B', b'N'),
        (b'D', b'N'),
        (b'H', b'N'),
    ];
    let mut i = 0;
    while i < pairs.len() {
        table[pairs[i].0 as usize] = pairs[i].1;
        table[pairs[i].0.to_ascii_lowercase() as usize] = pairs[i].1;
        i += 1;
    }
    table[b'V' as usize] = b'N';
    table[b'v' as usize] = b'N';
    table
};

const ALPHABET_HINT: &str = "a sequence may contain only A, C, G, T (or U) and the IUPAC ambiguity codes R Y S W K M B D H V N";

/// Appends the bases of `raw` (surrounding whitespace ignored) to `out`; on a character that is
/// not allowed, returns it and its 1-based character position in `raw`.
fn append_bases(out: &mut String, raw: &str) -> std::result::Result<(), (char, usize)> {
    let leading = raw.len() - raw.trim_start().len();
    let bases = raw.trim();
    out.reserve(bases.len());
    for (offset, &byte) in bases.as_bytes().iter().enumerate() {
        match BASES[usize::from(byte)] {
            0 => {
                // Everything before `offset` is ASCII (valid bases), so byte offset = char offset.
                let bad = bases[offset..]
                    .chars()
                    .next()
                    .unwrap_or(char::REPLACEMENT_CHARACTER);
                return Err((bad, leading + offset + 1));
            }
            base => out.push(char::from(base)),
        }
    }
    Ok(())
}

/// Appends the bases of `raw` to `out`. `column` is the 1-based character column of `raw`'s
/// first character on line `line`, for the error.
pub(crate) fn push_bases(
    out: &mut String,
    raw: &str,
    file: &str,
    line: usize,
    column: usize,
) -> Result<()> {
    append_bases(out, raw).map_err(|(bad, position)| {
        Error::at_line(
            file,
            line,
            bad_base_message(bad, &format!("column {}", column + position - 1)),
        )
    })
}

/// One sequence given directly (not in a file), normalised like the sequences of task files.
pub(crate) fn normalize_sequence(raw: &str) -> Result<String> {
    let mut out = String::new();
    append_bases(&mut out, raw).map_err(|(bad, position)| {
        Error::new(bad_base_message(bad, &format!("position {position}")))
    })?;
    if out.is_empty() {
        return Err(Error::new("empty sequence"));
    }
    Ok(out)
}

fn bad_base_message(bad: char, place: &str) -> String {
    let (what, hint) = match bad {
        '0'..='9' => (format!("a digit ({bad:?})"), ""),
        ' ' | '\t' => (
            "a space".to_string(),
            " (spaces are not allowed inside a sequence)",
        ),
        '-' | '.' => (format!("a gap ({bad:?})"), " (remove alignment gaps)"),
        c if c.is_control() => (format!("a control character ({})", c.escape_unicode()), ""),
        c => (format!("{c:?}"), ""),
    };
    format!("the sequence has {what} at {place}: {ALPHABET_HINT}{hint}")
}

/// A label cell: any non-empty text, surrounding whitespace ignored.
pub(crate) fn label_of<'t>(raw: &'t str, file: &str, line: usize) -> Result<&'t str> {
    let label = raw.trim();
    if label.is_empty() {
        return Err(Error::at_line(
            file,
            line,
            "empty label: every sequence needs a class label",
        ));
    }
    Ok(label)
}

/// Collects one task's examples, then orders its labels and checks it as a whole.
#[derive(Default)]
pub(crate) struct Collector {
    label_ids: HashMap<String, usize>,
    label_names: Vec<String>,
    train: Split,
    test: Split,
    /// Rows of a table without a split column, split by `finish`, and their groups (when the
    /// table has the group column).
    unsplit: Split,
    groups: Vec<String>,
}

impl Collector {
    fn label_id(&mut self, label: &str) -> usize {
        match self.label_ids.get(label) {
            Some(&id) => id,
            None => {
                let id = self.label_names.len();
                self.label_ids.insert(label.to_string(), id);
                self.label_names.push(label.to_string());
                id
            }
        }
    }

    pub(crate) fn push(&mut self, part: Part, sequence: String, label: &str) {
        let id = self.label_id(label);
        let split = match part {
            Part::Train => &mut self.train,
            Part::Test => &mut self.test,
        };
        split.sequences.push(sequence);
        split.y.push(id);
    }

    /// A row of a table without a split column; `group` is its group column's value.
    pub(crate) fn push_unsplit(&mut self, sequence: String, label: &str, group: Option<String>) {
        let id = self.label_id(label);
        self.unsplit.sequences.push(sequence);
        self.unsplit.y.push(id);
        self.groups.extend(group);
    }

    /// The task's dataset, or one per fold when geneb split it into folds. `train_source` /
    /// `test_source` name what the errors about each split point to.
    pub(crate) fn finish(
        self,
        train_source: &str,
        test_source: &str,
        split: &SplitSettings,
    ) -> Result<Vec<Dataset>> {
        let Collector {
            label_names,
            mut train,
            mut test,
            mut unsplit,
            groups,
            ..
        } = self;
        let (labels, new_id) = numpy_unique_order(&label_names);
        for y in train
            .y
            .iter_mut()
            .chain(test.y.iter_mut())
            .chain(unsplit.y.iter_mut())
        {
            *y = new_id[*y];
        }
        if unsplit.is_empty() {
            let data = checked(labels, train, test, None, train_source, test_source)?;
            return Ok(vec![data]);
        }
        let groups = if split.by_similarity {
            crate::input::audit::similarity_clusters(&unsplit.sequences, train_source)?
        } else {
            groups
        };
        let groups = (groups.len() == unsplit.len()).then_some(groups.as_slice());
        crate::input::split::make(&unsplit.y, &labels, groups, split, train_source)?
            .into_iter()
            .map(|(sides, made)| {
                let take = |rows: &[usize]| Split {
                    sequences: rows.iter().map(|&r| unsplit.sequences[r].clone()).collect(),
                    y: rows.iter().map(|&r| unsplit.y[r]).collect(),
                };
                let (train, test) = (take(&sides.train), take(&sides.test));
                checked(
                    labels.clone(),
                    train,
                    test,
                    Some(made),
                    train_source,
                    test_source,
                )
            })
            .collect()
    }
}

/// The most classes a task may have: the result's evidence stores class indices in 16 bits.
pub(crate) const MAX_CLASSES: usize = 1 << 16;

/// The checks a probe needs: train and test rows, two classes in train, at most
/// [`MAX_CLASSES`] classes.
fn checked(
    labels: Vec<String>,
    train: Split,
    test: Split,
    made_split: Option<MadeSplit>,
    train_source: &str,
    test_source: &str,
) -> Result<Dataset> {
    if train.is_empty() {
        return Err(Error::in_file(
            train_source,
            "no training rows: GENEB needs a train and a test split",
        ));
    }
    if test.is_empty() {
        return Err(Error::in_file(
            test_source,
            "no test rows: GENEB needs a train and a test split",
        ));
    }
    // Said here, naming the file, rather than by the probe's memory estimate or the result's
    // evidence encoding (16-bit class indices) later, which know no file.
    if labels.len() > MAX_CLASSES {
        return Err(Error::in_file(
            train_source,
            format!(
                "{} distinct labels: geneb probes at most {MAX_CLASSES} classes (is the label \
                 column an id?)",
                labels.len()
            ),
        ));
    }
    let mut seen = vec![false; labels.len()];
    train.y.iter().for_each(|&y| seen[y] = true);
    if seen.iter().filter(|&&s| s).count() < 2 {
        let only = &labels[train.y[0]];
        return Err(Error::in_file(
            train_source,
            format!(
                "the training rows have only one class (label {}); a probe needs at least two classes",
                quote(only)
            ),
        ));
    }
    Ok(Dataset {
        labels,
        train,
        test,
        made_split,
    })
}

/// Labels in numpy `unique` order and each label's index into them.
pub(crate) fn label_indices(labels: &[String]) -> (Vec<String>, Vec<usize>) {
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    let mut names = Vec::new();
    let ids: Vec<usize> = labels
        .iter()
        .map(|label| {
            *first_seen.entry(label.as_str()).or_insert_with(|| {
                names.push(label.clone());
                names.len() - 1
            })
        })
        .collect();
    let (order, new_id) = numpy_unique_order(&names);
    (order, ids.into_iter().map(|id| new_id[id]).collect())
}

/// Distinct labels in numpy `unique` order and each first-seen label's new index. When every
/// label is a number the reference reads the column as numbers (integers, else floats): numeric
/// order, and spellings of one number (`1`, `01`, `+1`; `0.5`, `.50`) are one class, written
/// canonically. Otherwise numpy sorts `str` by code point, which is UTF-8 byte order.
fn numpy_unique_order(names: &[String]) -> (Vec<String>, Vec<usize>) {
    let integers: Option<Vec<i128>> = names.iter().map(|n| n.parse().ok()).collect();
    if let Some(values) = integers {
        return distinct_in_order(&values, |a, b| a.cmp(b), i128::to_string);
    }
    let floats: Option<Vec<f64>> = names
        .iter()
        .map(|n| n.parse::<f64>().ok().filter(|v| v.is_finite()))
        .collect();
    if let Some(values) = floats {
        return distinct_in_order(&values, f64::total_cmp, f64::to_string);
    }
    distinct_in_order(names, |a, b| a.cmp(b), String::clone)
}

fn distinct_in_order<T: Clone>(
    values: &[T],
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
    name: impl Fn(&T) -> String,
) -> (Vec<String>, Vec<usize>) {
    let mut distinct = values.to_vec();
    distinct.sort_unstable_by(&cmp);
    distinct.dedup_by(|a, b| cmp(a, b).is_eq());
    let new_id = values
        .iter()
        .map(|v| distinct.binary_search_by(|d| cmp(d, v)).unwrap_or_default())
        .collect();
    (distinct.iter().map(name).collect(), new_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn integer_labels_sort_numerically_and_merge_spellings() {
        let (labels, ids) = numpy_unique_order(&strings(&["10", "2", "-1", "02"]));
        assert_eq!(labels, ["-1", "2", "10"]);
        assert_eq!(ids, [2, 1, 0, 1]);
    }

    #[test]
    fn float_labels_sort_by_value_as_pandas_reads_them() {
        let (labels, ids) = numpy_unique_order(&strings(&["10.5", "9.5", "0.50", ".5", "-2"]));
        assert_eq!(labels, ["-2", "0.5", "9.5", "10.5"]);
        assert_eq!(ids, [3, 2, 1, 1, 0]);
    }

    #[test]
    fn other_labels_sort_by_code_point() {
        let (labels, ids) = numpy_unique_order(&strings(&["b", "B", "10", "2", "é", "a"]));
        assert_eq!(labels, ["10", "2", "B", "a", "b", "é"]);
        assert_eq!(ids, [4, 2, 0, 1, 5, 3]);
    }

    #[test]
    fn bases_are_normalised_and_bad_ones_located() {
        let mut out = String::new();
        push_bases(&mut out, "  acgtuRYSWKMBDHVn ", "f", 3, 5).unwrap();
        assert_eq!(out, "ACGTTNNNNNNNNNNN");
        let err = push_bases(&mut String::new(), " ACxT", "f", 3, 5).unwrap_err();
        assert_eq!(
            (err.line, err.message.contains("'x' at column 8")),
            (Some(3), true)
        );
        let err = push_bases(&mut String::new(), "ACéT", "f", 1, 1).unwrap_err();
        assert!(err.message.contains("'é' at column 3"), "{}", err.message);
        assert_eq!(normalize_sequence(" acgu ").unwrap(), "ACGT");
        assert!(
            normalize_sequence("AC1")
                .unwrap_err()
                .message
                .contains("a digit ('1') at position 3")
        );
        assert!(normalize_sequence("  ").is_err());
    }

    #[test]
    fn more_classes_than_the_evidence_holds_are_refused_naming_the_file() {
        let split = |n: usize| Split {
            sequences: vec!["ACGT".to_string(); n],
            y: (0..n).collect(),
        };
        let labels: Vec<String> = (0..MAX_CLASSES + 1).map(|i| i.to_string()).collect();
        let e = checked(
            labels,
            split(MAX_CLASSES + 1),
            split(1),
            None,
            "t.csv",
            "t.csv",
        )
        .unwrap_err();
        assert_eq!(e.file.as_deref(), Some("t.csv"));
        assert!(e.message.starts_with("65537 distinct labels"), "{e}");
        let labels: Vec<String> = (0..MAX_CLASSES).map(|i| i.to_string()).collect();
        assert!(checked(labels, split(MAX_CLASSES), split(1), None, "t.csv", "t.csv").is_ok());
    }

    #[test]
    fn label_indices_follow_numpy_unique() {
        let (order, y) = label_indices(&strings(&["b", "a", "b", "c"]));
        assert_eq!((order, y), (strings(&["a", "b", "c"]), vec![1, 0, 1, 2]));
        let (order, y) = label_indices(&strings(&["10", "9", "10"]));
        assert_eq!((order, y), (strings(&["9", "10"]), vec![1, 0, 1]));
    }
}
