//! A plain list of sequences to embed (`geneb embed --input`): FASTA, a table with a `text` or
//! `sequence` column, or one sequence per line. Sequences keep their input order; each gets the
//! same normalisation the task readers apply.

use super::InputFile;
use super::dataset::normalize_sequence;
use super::text::Lines;
use crate::{Error, Result};

pub struct NamedSequence {
    /// The FASTA id, or the 1-based line number for plain lists and tables.
    pub id: String,
    pub sequence: String,
}

pub fn read_sequences(file: &InputFile) -> Result<Vec<NamedSequence>> {
    let mut lines = Lines::new(&file.name, &file.bytes)?;
    let mut out: Vec<NamedSequence> = Vec::new();
    let mut fasta: Option<(String, String, usize)> = None;
    let mut table_column: Option<(usize, char)> = None;
    let mut first = true;
    // Each sequence is kept twice while it is normalised: that copy is charged too.
    let finish = |record: (String, String, usize),
                  lines: &mut Lines,
                  out: &mut Vec<NamedSequence>|
     -> Result<()> {
        let (id, raw, line) = record;
        lines.charge(raw.len() as u64)?;
        if raw.is_empty() {
            return Err(Error::at_line(
                &file.name,
                line,
                format!("record '{id}' has no sequence"),
            ));
        }
        let sequence =
            normalize_sequence(&raw).map_err(|e| Error::at_line(&file.name, line, e.message))?;
        out.push(NamedSequence { id, sequence });
        Ok(())
    };
    while let Some(line) = lines.next_line()? {
        let text = line.text.trim();
        if first {
            if text.is_empty() {
                continue;
            }
            first = false;
            if !text.starts_with('>') {
                table_column = header_column(text);
                if table_column.is_some() {
                    continue;
                }
            }
        }
        let number = line.number;
        if let Some(header) = text.strip_prefix('>') {
            let id = header
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            if let Some(record) = fasta.take() {
                finish(record, &mut lines, &mut out)?;
            }
            if id.is_empty() {
                return Err(Error::at_line(
                    &file.name,
                    number,
                    "FASTA header without an id",
                ));
            }
            fasta = Some((id, String::new(), number));
        } else if let Some((_, raw, _)) = fasta.as_mut() {
            // The line's text is the reader's buffer: copied before the record grows, as the
            // record's growth is charged to the same reader (a 60-column FASTA of gigabases
            // would otherwise double its record past the budget unnoticed).
            let piece = text.to_string();
            let needed = raw.len() + piece.len();
            if needed > raw.capacity() {
                let grown = needed.max(raw.capacity() * 2);
                lines.charge(grown as u64)?;
                raw.reserve_exact(grown - raw.len());
            }
            raw.push_str(&piece);
        } else if !text.is_empty() {
            let raw = match table_column {
                Some((column, separator)) => {
                    text.split(separator).nth(column).ok_or_else(|| {
                        Error::at_line(
                            &file.name,
                            number,
                            "this row has fewer columns than the header",
                        )
                    })?
                }
                None => text,
            };
            finish(
                (
                    number.to_string(),
                    raw.trim().trim_matches('"').to_string(),
                    number,
                ),
                &mut lines,
                &mut out,
            )?;
        }
    }
    if let Some(record) = fasta.take() {
        finish(record, &mut lines, &mut out)?;
    }
    if out.is_empty() {
        return Err(Error::in_file(
            &file.name,
            "no sequences: give FASTA, a table with a text or sequence column, or one sequence per line",
        ));
    }
    Ok(out)
}

/// A header row naming the sequence column (`text` as GENEB tables, `sequence` as GUE/NT):
/// its index and the separator.
fn header_column(line: &str) -> Option<(usize, char)> {
    let separator = if line.contains('\t') { '\t' } else { ',' };
    line.split(separator)
        .map(|c| c.trim().trim_matches('"').to_ascii_lowercase())
        .position(|c| c == "text" || c == "sequence")
        .map(|column| (column, separator))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<NamedSequence>> {
        read_sequences(&InputFile {
            name: "in.txt".into(),
            bytes: text.as_bytes().to_vec(),
        })
    }

    #[test]
    fn fasta_tables_and_plain_lines() {
        let fasta = read(">a desc\nACG\ntt\n>b\nNNA\n").unwrap();
        assert_eq!(
            fasta
                .iter()
                .map(|s| (s.id.as_str(), s.sequence.as_str()))
                .collect::<Vec<_>>(),
            [("a", "ACGTT"), ("b", "NNA")]
        );
        let table = read("label,text\n1,acgt\n0,\"GGC\"\n").unwrap();
        assert_eq!(
            table
                .iter()
                .map(|s| s.sequence.as_str())
                .collect::<Vec<_>>(),
            ["ACGT", "GGC"]
        );
        let plain = read("ACGT\n\nRYA\n").unwrap();
        assert_eq!(
            plain
                .iter()
                .map(|s| (s.id.as_str(), s.sequence.as_str()))
                .collect::<Vec<_>>(),
            [("1", "ACGT"), ("3", "NNA")]
        );
    }

    #[test]
    fn bad_input_names_file_and_line() {
        assert_eq!(
            read("ACGT\nAC9T\n")
                .err()
                .unwrap()
                .to_string()
                .split(':')
                .take(2)
                .collect::<Vec<_>>(),
            ["in.txt", "2"]
        );
        assert!(
            read(">a\n>b\nAC\n")
                .err()
                .unwrap()
                .to_string()
                .starts_with("in.txt:1: record 'a' has no sequence")
        );
        assert!(
            read("\n\n")
                .err()
                .unwrap()
                .to_string()
                .contains("no sequences")
        );
    }
}
