//! Importers for layouts other benchmarks ship, beyond GENEB's own tables:
//!
//! - **Genomic Benchmarks**: `<task>/{train,test}/<class>/<n>.txt`, one sequence per file
//!   (plain or gzip), the class folder's name is the label.
//! - **BED + FASTA** (BEND style): `<task>/<name>.bed` beside the reference `<genome>.fa` (or
//!   `.fasta`, `.fna`, each optionally `.gz`). The BED file is tab-separated with a header line
//!   (it may start with `#`) naming its columns: `chrom` (or `chromosome`, `chr`), `start`
//!   (or `chromStart`), `end` (or `chromEnd`), `label`, `split` (`train`/`test`; `valid`,
//!   `val`, `validation` and `dev` rows are skipped, as GENEB uses only train and test), and
//!   optionally `strand` (`-` takes the reverse complement). Coordinates are 0-based and
//!   end-exclusive, as in every BED file. The task id is the BED file's stem; the reference
//!   is held in memory, so genomes of a few GB need as much RAM.
//!
//! GUE (`train.csv`/`dev.csv`/`test.csv`, columns `sequence,label`) and the NT downstream CSVs
//! need no importer: they are train/test pairs, and `dev.csv` is skipped as GENEB skips it.

use super::dataset::{Collector, Part, label_of, push_bases};
use super::text::{Lines, quote};
use crate::{Error, Result};
use std::collections::HashMap;

/// Genomic Benchmarks: one file holding one sequence (it may span lines) of class `class`.
pub(crate) fn read_sequence_file(
    file: &str,
    bytes: &[u8],
    part: Part,
    class: &str,
    collector: &mut Collector,
) -> Result<()> {
    let mut lines = Lines::new(file, bytes)?;
    let mut sequence = String::new();
    while let Some(line) = lines.next_line()? {
        if line.text.starts_with('>') {
            return Err(Error::at_line(
                file,
                line.number,
                "a FASTA header in a Genomic Benchmarks sequence file: these hold one bare sequence each (name FASTA files .fa)",
            ));
        }
        push_bases(&mut sequence, line.text, file, line.number, 1)?;
    }
    if sequence.is_empty() {
        return Err(Error::in_file(file, "empty sequence file"));
    }
    collector.push(part, sequence, class);
    Ok(())
}

/// A reference genome: record name (the header's first word) → its bases, as written.
pub(crate) struct Reference {
    records: HashMap<String, String>,
}

impl Reference {
    /// Reads every FASTA file in `files` (name, bytes) into one reference.
    pub(crate) fn read(files: &[(&str, &[u8])]) -> Result<Reference> {
        let mut records: HashMap<String, String> = HashMap::new();
        let mut origin: HashMap<String, &str> = HashMap::new();
        for &(file, bytes) in files {
            let mut lines = Lines::new(file, bytes)?;
            let mut current: Option<String> = None;
            while let Some(line) = lines.next_line()? {
                if let Some(header) = line.text.strip_prefix('>') {
                    let name = header.split_whitespace().next().unwrap_or_default();
                    if name.is_empty() {
                        return Err(Error::at_line(
                            file,
                            line.number,
                            "a reference record needs a name after `>`",
                        ));
                    }
                    if let Some(first) = origin.insert(name.to_string(), file) {
                        return Err(Error::at_line(
                            file,
                            line.number,
                            format!("record {} is also in {first}; keep one", quote(name)),
                        ));
                    }
                    records.insert(name.to_string(), String::new());
                    current = Some(name.to_string());
                } else if !line.text.trim().is_empty() {
                    let Some(name) = &current else {
                        return Err(Error::at_line(
                            file,
                            line.number,
                            "expected a FASTA header line starting with `>` before the first sequence",
                        ));
                    };
                    let bases = records.get_mut(name).expect("inserted at its header");
                    push_bases(bases, line.text, file, line.number, 1)?;
                }
            }
        }
        Ok(Reference { records })
    }
}

/// Column positions of a BED file's header.
struct BedColumns {
    chrom: usize,
    start: usize,
    end: usize,
    label: usize,
    split: usize,
    strand: Option<usize>,
    count: usize,
}

const BED_HELP: &str = "a BED task needs a tab-separated header line naming the columns chrom, start, end, label and split (strand optional), e.g. `#chrom\tstart\tend\tlabel\tsplit`";

impl BedColumns {
    fn parse(header: &str, file: &str, line: usize) -> Result<BedColumns> {
        let names: Vec<String> = header
            .trim_start_matches('#')
            .split('\t')
            .map(|n| n.trim().to_ascii_lowercase())
            .collect();
        let find = |aliases: &[&str]| names.iter().position(|n| aliases.contains(&n.as_str()));
        let need = |aliases: &[&str]| {
            find(aliases).ok_or_else(|| {
                Error::at_line(
                    file,
                    line,
                    format!("no {} column in the header; {BED_HELP}", quote(aliases[0])),
                )
            })
        };
        Ok(BedColumns {
            chrom: need(&["chrom", "chromosome", "chr"])?,
            start: need(&["start", "chromstart"])?,
            end: need(&["end", "chromend"])?,
            label: need(&["label"])?,
            split: need(&["split"])?,
            strand: find(&["strand"]),
            count: names.len(),
        })
    }
}

fn reverse_complement(bases: &str) -> String {
    bases
        .bytes()
        .rev()
        .map(|b| match b {
            b'A' => 'T',
            b'T' => 'A',
            b'C' => 'G',
            b'G' => 'C',
            _ => 'N',
        })
        .collect()
}

/// BED regions → sequences from `reference`, with the BED's label and split columns.
pub(crate) fn read_bed(
    file: &str,
    bytes: &[u8],
    reference: &Reference,
    collector: &mut Collector,
) -> Result<()> {
    let mut lines = Lines::new(file, bytes)?;
    let mut columns: Option<BedColumns> = None;
    while let Some(line) = lines.next_line()? {
        let text = line.text.trim_end();
        if text.is_empty() || text.starts_with("track") || text.starts_with("browser") {
            continue;
        }
        let Some(columns) = &columns else {
            columns = Some(BedColumns::parse(text, file, line.number)?);
            continue;
        };
        if text.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = text.split('\t').collect();
        if fields.len() != columns.count {
            return Err(Error::at_line(
                file,
                line.number,
                format!(
                    "{} tab-separated fields, but the header names {}",
                    fields.len(),
                    columns.count
                ),
            ));
        }
        let split = fields[columns.split].trim();
        let part = match Part::parse(split) {
            Some(part) => part,
            None if ["valid", "val", "validation", "dev"]
                .iter()
                .any(|s| split.eq_ignore_ascii_case(s)) =>
            {
                continue;
            }
            None => {
                return Err(Error::at_line(
                    file,
                    line.number,
                    format!(
                        "split {} is not train or test (validation rows may say valid, val, validation or dev and are skipped)",
                        quote(split)
                    ),
                ));
            }
        };
        let coordinate = |index: usize, what: &str| {
            fields[index].trim().parse::<usize>().map_err(|_| {
                Error::at_line(
                    file,
                    line.number,
                    format!("{what} {} is not a whole number ≥ 0", quote(fields[index])),
                )
            })
        };
        let (start, end) = (
            coordinate(columns.start, "start")?,
            coordinate(columns.end, "end")?,
        );
        let chrom = fields[columns.chrom].trim();
        let Some(bases) = reference.records.get(chrom) else {
            return Err(Error::at_line(
                file,
                line.number,
                format!(
                    "chromosome {} is not in the reference FASTA beside this BED file (its record names must match the BED's chrom column)",
                    quote(chrom)
                ),
            ));
        };
        if start >= end || end > bases.len() {
            return Err(Error::at_line(
                file,
                line.number,
                format!(
                    "region {chrom}:{start}-{end} is empty or runs past the end of {chrom} ({} bases); BED coordinates are 0-based, end-exclusive",
                    bases.len()
                ),
            ));
        }
        let mut sequence = bases[start..end].to_string();
        if columns.strand.is_some_and(|s| fields[s].trim() == "-") {
            sequence = reverse_complement(&sequence);
        }
        let label = label_of(fields[columns.label], file, line.number)?;
        collector.push(part, sequence, label);
    }
    if columns.is_none() {
        return Err(Error::in_file(file, format!("empty BED file; {BED_HELP}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverse_complement_keeps_n() {
        assert_eq!(reverse_complement("AACGTN"), "NACGTT");
    }
}
