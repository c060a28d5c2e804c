//! FASTA: `>id key=value …` headers (keys `label` and `split`; other words ignored), the
//! sequence on one or more lines, blank lines ignored.

use super::dataset::{Collector, Part, label_of, push_bases};
use super::text::{Lines, quote};
use crate::{Error, Result};

/// Where a FASTA file's labels and splits come from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FastaLayout<'a> {
    /// A task on its own: `label=` and `split=` in every header.
    SplitInHeaders,
    /// `train.fa` or `test.fa`: `label=` in every header.
    Part(Part),
    /// `train/<class>.fa` or `test/<class>.fa`: every record is that class.
    Class(Part, &'a str),
}

const SPLIT_HELP: &str = "say which split each sequence is in: write `split=train` or `split=test` in \
     every header (`>seq1 label=1 split=train`), or give train.fa and test.fa in a folder named \
     after the task, or one file per class in train/ and test/ folders (train/<class>.fa)";

const LABEL_HELP: &str = "write the class in the header as `label=` (`>seq1 label=1`), or give one \
     file per class in train/ and test/ folders (train/<class>.fa)";

struct Record {
    header_line: usize,
    id: String,
    part: Part,
    label: String,
    sequence: String,
}

/// `label=` and `split=` of one header line.
struct Header<'h> {
    id: &'h str,
    label: Option<&'h str>,
    split: Option<&'h str>,
}

fn parse_header<'h>(text: &'h str, file: &str, line: usize) -> Result<Header<'h>> {
    let mut words = text[1..].split_whitespace();
    let mut header = Header {
        id: "",
        label: None,
        split: None,
    };
    // The first word is the id unless it is already a `key=value`.
    let mut first = words.next();
    if let Some(word) = first.filter(|w| !w.starts_with("label=") && !w.starts_with("split=")) {
        header.id = word;
        first = None;
    }
    for word in first.into_iter().chain(words) {
        let (slot, value, key) = if let Some(value) = word.strip_prefix("label=") {
            (&mut header.label, value, "label")
        } else if let Some(value) = word.strip_prefix("split=") {
            (&mut header.split, value, "split")
        } else {
            continue;
        };
        if slot.is_some() {
            return Err(Error::at_line(
                file,
                line,
                format!("the header has `{key}=` twice"),
            ));
        }
        *slot = Some(value);
    }
    Ok(header)
}

fn record_from_header(
    text: &str,
    file: &str,
    line: usize,
    layout: FastaLayout<'_>,
) -> Result<Record> {
    let header = parse_header(text, file, line)?;
    let named = if header.id.is_empty() {
        String::new()
    } else {
        format!(" of {}", quote(header.id))
    };
    let split = match header.split {
        Some(value) => Some(Part::parse(value).ok_or_else(|| {
            Error::at_line(
                file,
                line,
                format!(
                    "unknown split {}: GENEB uses only split=train and split=test",
                    quote(value)
                ),
            )
        })?),
        None => None,
    };
    let part = match (layout, split) {
        (FastaLayout::SplitInHeaders, Some(part)) => part,
        (FastaLayout::SplitInHeaders, None) => {
            return Err(Error::at_line(
                file,
                line,
                format!("no split in the header{named}: {SPLIT_HELP}"),
            ));
        }
        (FastaLayout::Part(part) | FastaLayout::Class(part, _), Some(said)) if said != part => {
            return Err(Error::at_line(
                file,
                line,
                format!(
                    "the header says split={} but the file is in the {} split",
                    said.name(),
                    part.name()
                ),
            ));
        }
        (FastaLayout::Part(part) | FastaLayout::Class(part, _), _) => part,
    };
    let label = match (layout, header.label) {
        (FastaLayout::Class(_, class), Some(said)) if said.trim() != class => {
            return Err(Error::at_line(
                file,
                line,
                format!(
                    "the header says label={} but the file is the class {}",
                    quote(said),
                    quote(class)
                ),
            ));
        }
        (FastaLayout::Class(_, class), _) => class.to_string(),
        (_, Some(label)) => label_of(label, file, line)?.to_string(),
        (_, None) => {
            return Err(Error::at_line(
                file,
                line,
                format!("no label in the header{named}: {LABEL_HELP}"),
            ));
        }
    };
    Ok(Record {
        header_line: line,
        id: header.id.to_string(),
        part,
        label,
        sequence: String::new(),
    })
}

fn finish(record: Record, file: &str, collector: &mut Collector) -> Result<()> {
    if record.sequence.is_empty() {
        let named = if record.id.is_empty() {
            String::new()
        } else {
            format!(" {}", quote(&record.id))
        };
        return Err(Error::at_line(
            file,
            record.header_line,
            format!("the record{named} has no sequence"),
        ));
    }
    collector.push(record.part, record.sequence, &record.label);
    Ok(())
}

/// Reads a FASTA file into `collector`.
pub(crate) fn read_fasta(
    file: &str,
    bytes: &[u8],
    layout: FastaLayout<'_>,
    collector: &mut Collector,
) -> Result<()> {
    let mut lines = Lines::new(file, bytes)?;
    let mut record: Option<Record> = None;
    while let Some(line) = lines.next_line()? {
        if line.text.starts_with('>') {
            if let Some(done) = record.take() {
                finish(done, file, collector)?;
            }
            record = Some(record_from_header(line.text, file, line.number, layout)?);
        } else if !line.text.trim().is_empty() {
            let Some(current) = record.as_mut() else {
                return Err(Error::at_line(
                    file,
                    line.number,
                    "expected a FASTA header line starting with `>` before the first sequence",
                ));
            };
            push_bases(&mut current.sequence, line.text, file, line.number, 1)?;
        }
    }
    match record {
        Some(last) => finish(last, file, collector),
        None => Err(Error::in_file(
            file,
            "no FASTA records (no line starts with `>`)",
        )),
    }
}
