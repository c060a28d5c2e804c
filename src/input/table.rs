//! CSV / TSV tables: a header naming the columns (any order, extra columns ignored), RFC 4180
//! quoting (`""` inside quotes, quoted fields may span lines), blank lines skipped.

use super::dataset::{Collector, Part, label_of, push_bases};
use super::text::{Line, Lines, quote};
use crate::{Error, Result};

/// What a table holds: a GENEB task table (split per row, or none: then geneb splits it, keeping
/// the groups of `group_column` apart) or one split of a train/test pair.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TableKind<'g> {
    Geneb { group_column: Option<&'g str> },
    Part(Part),
}

/// One cell, with where its content starts (for errors).
struct Field {
    text: String,
    line: usize,
    column: usize,
}

/// Splits lines into records; keeps state across lines while a quoted field is open.
struct RecordSplitter {
    file: String,
    delimiter: u8,
    fields: Vec<Field>,
    current: String,
    current_line: usize,
    current_column: usize,
    in_quotes: bool,
    quote_line: usize,
    quote_column: usize,
}

/// Characters (not bytes) in a UTF-8 slice, for 1-based columns.
fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

impl RecordSplitter {
    fn new(file: &str, delimiter: u8) -> Self {
        RecordSplitter {
            file: file.to_string(),
            delimiter,
            fields: Vec::new(),
            current: String::new(),
            current_line: 0,
            current_column: 0,
            in_quotes: false,
            quote_line: 0,
            quote_column: 0,
        }
    }

    /// Feeds one line; `Ok(true)` when it completed a record (then in `self.fields`).
    fn feed(&mut self, line: &Line<'_>) -> Result<bool> {
        let text = line.text;
        let bytes = text.as_bytes();
        let mut i = 0;
        let mut column = 1;
        let mut at_field_start;
        if self.in_quotes {
            self.current.push('\n');
            at_field_start = false;
        } else {
            self.fields.clear();
            self.start_field(line.number, column);
            at_field_start = true;
        }
        loop {
            if self.in_quotes {
                let Some(offset) = bytes[i..].iter().position(|&b| b == b'"') else {
                    self.current.push_str(&text[i..]);
                    return Ok(false);
                };
                self.current.push_str(&text[i..i + offset]);
                column += char_count(&bytes[i..i + offset]);
                i += offset;
                if bytes.get(i + 1) == Some(&b'"') {
                    self.current.push('"');
                    i += 2;
                    column += 2;
                    continue;
                }
                self.in_quotes = false;
                i += 1;
                column += 1;
                match bytes.get(i) {
                    None => {
                        self.finish_field();
                        return Ok(true);
                    }
                    Some(&b) if b == self.delimiter => {
                        self.finish_field();
                        i += 1;
                        column += 1;
                        self.start_field(line.number, column);
                        at_field_start = true;
                    }
                    Some(_) => {
                        let after = text[i..].chars().next().unwrap_or_default();
                        return Err(Error::at_line(
                            &self.file,
                            line.number,
                            format!(
                                "unexpected {after:?} at column {column}, after a closing quote: \
                                 a quoted field must end at a separator; write a quote inside it as \"\""
                            ),
                        ));
                    }
                }
            } else if at_field_start && bytes.get(i) == Some(&b'"') {
                self.in_quotes = true;
                self.quote_line = line.number;
                self.quote_column = column;
                i += 1;
                column += 1;
                self.current_column = column;
                at_field_start = false;
            } else {
                match bytes[i..].iter().position(|&b| b == self.delimiter) {
                    None => {
                        self.current.push_str(&text[i..]);
                        self.finish_field();
                        return Ok(true);
                    }
                    Some(offset) => {
                        self.current.push_str(&text[i..i + offset]);
                        column += char_count(&bytes[i..i + offset]) + 1;
                        i += offset + 1;
                        self.finish_field();
                        self.start_field(line.number, column);
                        at_field_start = true;
                    }
                }
            }
        }
    }

    fn start_field(&mut self, line: usize, column: usize) {
        self.current_line = line;
        self.current_column = column;
    }

    fn finish_field(&mut self) {
        self.fields.push(Field {
            text: std::mem::take(&mut self.current),
            line: self.current_line,
            column: self.current_column,
        });
    }

    /// The error for a file that ends inside a quoted field, if it does.
    fn check_closed(&self) -> Result<()> {
        if self.in_quotes {
            return Err(Error::at_line(
                &self.file,
                self.quote_line,
                format!(
                    "unterminated quote: the quoted field that opens at column {} never closes \
                     (a closing \" is missing)",
                    self.quote_column
                ),
            ));
        }
        Ok(())
    }
}

/// Where a row's split comes from.
enum SplitFrom {
    Column(usize),
    File(Part),
    /// No split column: geneb splits the rows (`crate::input::split`), by the group column if given.
    Made {
        group: Option<usize>,
    },
}

/// Column positions of the fields a table needs.
struct Columns {
    count: usize,
    sequence: usize,
    label: usize,
    split: SplitFrom,
}

fn find_columns(file: &str, line: usize, header: &[Field], kind: TableKind) -> Result<Columns> {
    let names: Vec<String> = header
        .iter()
        .map(|f| f.text.trim().to_ascii_lowercase())
        .collect();
    let find = |wanted: &str| -> Result<Option<usize>> {
        let mut at = names
            .iter()
            .enumerate()
            .filter(|(_, n)| *n == wanted)
            .map(|(i, _)| i);
        match (at.next(), at.next()) {
            (Some(first), Some(second)) => Err(Error::at_line(
                file,
                line,
                format!(
                    "two `{wanted}` columns (columns {} and {}); keep one",
                    first + 1,
                    second + 1
                ),
            )),
            (first, _) => Ok(first),
        }
    };
    let needed = match kind {
        TableKind::Geneb { .. } => {
            "a task table needs the columns text and label (and split, or geneb splits it)"
        }
        TableKind::Part(_) => "a train/test file needs the columns text (or sequence) and label",
    };
    let missing = |what: &str| {
        let found: Vec<String> = header
            .iter()
            .take(12)
            .map(|f| quote(f.text.trim()))
            .collect();
        let more = if header.len() > 12 { ", …" } else { "" };
        Error::at_line(
            file,
            line,
            format!(
                "no {what} column; the header (first line) has {}{more}; {needed}",
                found.join(", ")
            ),
        )
    };
    let sequence = match (find("text")?, find("sequence")?) {
        (Some(_), Some(_)) => {
            return Err(Error::at_line(
                file,
                line,
                "both a `text` and a `sequence` column; keep one",
            ));
        }
        (Some(at), None) | (None, Some(at)) => at,
        (None, None) => return Err(missing("`text` (sequence)")),
    };
    let label = find("label")?.ok_or_else(|| missing("`label`"))?;
    // A pair's files may carry a split column too; the file name decides.
    let split = match kind {
        TableKind::Part(part) => SplitFrom::File(part),
        TableKind::Geneb { group_column } => match (find("split")?, group_column) {
            (Some(at), _) => SplitFrom::Column(at),
            (None, None) => SplitFrom::Made { group: None },
            (None, Some(column)) => {
                let wanted = column.trim().to_ascii_lowercase();
                let at = find(&wanted)?
                    .ok_or_else(|| missing(&format!("`{}` (the group column)", column.trim())))?;
                SplitFrom::Made { group: Some(at) }
            }
        },
    };
    Ok(Columns {
        count: header.len(),
        sequence,
        label,
        split,
    })
}

/// The header's line number and a splitter holding its fields. `tab` forces TSV; otherwise a
/// header with tabs and no commas is TSV too.
fn read_header(file: &str, lines: &mut Lines<'_>, tab: bool) -> Result<(usize, RecordSplitter)> {
    loop {
        match lines.next_line()? {
            None => return Err(Error::in_file(file, "the file is empty")),
            Some(line) if line.text.trim().is_empty() => continue,
            Some(line) => {
                let tab = tab || (line.text.contains('\t') && !line.text.contains(','));
                let mut splitter = RecordSplitter::new(file, if tab { b'\t' } else { b',' });
                if !splitter.feed(&line)? {
                    splitter.check_closed()?; // a quoted header name spanning lines: reject
                }
                return Ok((line.number, splitter));
            }
        }
    }
}

/// The columns of a task table that has no split column and could group its rows (all but the
/// sequence and label columns); `None` when the table has a split column.
pub(crate) fn group_candidates(file: &str, bytes: &[u8], tab: bool) -> Result<Option<Vec<String>>> {
    let mut lines = Lines::new(file, bytes)?;
    let (_, splitter) = read_header(file, &mut lines, tab)?;
    let names: Vec<String> = splitter
        .fields
        .iter()
        .map(|f| f.text.trim().to_string())
        .collect();
    if names.iter().any(|n| n.eq_ignore_ascii_case("split")) {
        return Ok(None);
    }
    Ok(Some(
        names
            .into_iter()
            .filter(|n| !["text", "sequence", "label"].contains(&n.to_ascii_lowercase().as_str()))
            .collect(),
    ))
}

/// The rows of a labels table (beside a user's own embeddings): `label`, and `split` or the
/// group column when the table has them, one entry per data row in file order.
pub(crate) struct LabelRows {
    pub(crate) labels: Vec<String>,
    pub(crate) split: Option<Vec<Part>>,
    pub(crate) groups: Option<Vec<String>>,
}

/// Reads a labels table: a `label` column (required), `split` (optional), and `group_column`
/// (required when named and the table has no split column).
pub(crate) fn read_label_rows(
    file: &str,
    bytes: &[u8],
    tab: bool,
    group_column: Option<&str>,
) -> Result<LabelRows> {
    let mut lines = Lines::new(file, bytes)?;
    let (header_line, mut splitter) = read_header(file, &mut lines, tab)?;
    let names: Vec<String> = splitter
        .fields
        .iter()
        .map(|f| f.text.trim().to_ascii_lowercase())
        .collect();
    let count = names.len();
    let find = |wanted: &str| {
        names
            .iter()
            .position(|n| *n == wanted.trim().to_ascii_lowercase())
    };
    let label = find("label").ok_or_else(|| {
        Error::at_line(
            file,
            header_line,
            "no `label` column: a labels table beside embeddings needs `label` (one row per \
             embedding row, in order) and optionally `split`",
        )
    })?;
    let split = find("split");
    let group = match (split, group_column) {
        (None, Some(column)) => Some(find(column).ok_or_else(|| {
            Error::at_line(
                file,
                header_line,
                format!("no `{}` (the group column) column", column.trim()),
            )
        })?),
        _ => None,
    };
    let mut rows = LabelRows {
        labels: Vec::new(),
        split: split.map(|_| Vec::new()),
        groups: group.map(|_| Vec::new()),
    };
    while let Some(line) = lines.next_line()? {
        if !splitter.in_quotes && line.text.trim().is_empty() {
            continue;
        }
        if !splitter.feed(&line)? {
            continue;
        }
        let fields = &splitter.fields;
        if fields.len() != count {
            return Err(Error::at_line(
                file,
                fields[0].line,
                format!(
                    "this row has {} fields but the header has {count}",
                    fields.len()
                ),
            ));
        }
        rows.labels
            .push(label_of(&fields[label].text, file, fields[label].line)?.to_string());
        if let (Some(at), Some(parts)) = (split, rows.split.as_mut()) {
            parts.push(split_of(&fields[at], file)?);
        }
        if let (Some(at), Some(groups)) = (group, rows.groups.as_mut()) {
            groups.push(group_of(&fields[at], file)?);
        }
    }
    splitter.check_closed()?;
    if rows.labels.is_empty() {
        return Err(Error::in_file(
            file,
            "the file has a header but no data rows",
        ));
    }
    Ok(rows)
}

/// Reads a table into `collector`. `tab` forces TSV; otherwise a header with tabs and no
/// commas is TSV too.
pub(crate) fn read_table(
    file: &str,
    bytes: &[u8],
    kind: TableKind,
    tab: bool,
    collector: &mut Collector,
) -> Result<()> {
    let mut lines = Lines::new(file, bytes)?;
    let (header_number, mut splitter) = read_header(file, &mut lines, tab)?;
    let columns = find_columns(file, header_number, &splitter.fields, kind)?;
    let separator = if splitter.delimiter == b'\t' {
        "tab"
    } else {
        "comma"
    };
    let mut rows = 0;
    while let Some(line) = lines.next_line()? {
        if !splitter.in_quotes && line.text.trim().is_empty() {
            continue;
        }
        if !splitter.feed(&line)? {
            continue;
        }
        let fields = &splitter.fields;
        let row_line = fields[0].line;
        if fields.len() != columns.count {
            return Err(Error::at_line(
                file,
                row_line,
                format!(
                    "this row has {} {separator}-separated fields but the header has {}; \
                     quote a field that contains a {separator}",
                    fields.len(),
                    columns.count
                ),
            ));
        }
        let cell = &fields[columns.sequence];
        let mut sequence = String::new();
        push_bases(&mut sequence, &cell.text, file, cell.line, cell.column)?;
        if sequence.is_empty() {
            return Err(Error::at_line(
                file,
                cell.line,
                "empty sequence: every row needs a DNA sequence",
            ));
        }
        let label_cell = &fields[columns.label];
        let label = label_of(&label_cell.text, file, label_cell.line)?;
        let part = match columns.split {
            SplitFrom::File(part) => part,
            SplitFrom::Column(at) => split_of(&fields[at], file)?,
            SplitFrom::Made { group } => {
                let group = match group {
                    Some(at) => Some(group_of(&fields[at], file)?),
                    None => None,
                };
                collector.push_unsplit(sequence, label, group);
                rows += 1;
                continue;
            }
        };
        collector.push(part, sequence, label);
        rows += 1;
    }
    splitter.check_closed()?;
    if rows == 0 {
        return Err(Error::in_file(
            file,
            "the file has a header but no data rows",
        ));
    }
    Ok(())
}

fn group_of(cell: &Field, file: &str) -> Result<String> {
    let group = cell.text.trim();
    if group.is_empty() {
        return Err(Error::at_line(
            file,
            cell.line,
            "empty group: every row needs a value in the group column (rows of one patient or \
             donor share it)",
        ));
    }
    Ok(group.to_string())
}

fn split_of(cell: &Field, file: &str) -> Result<Part> {
    Part::parse(&cell.text).ok_or_else(|| {
        let value = cell.text.trim();
        let message = if value.is_empty() {
            "empty split: each row's split must be train or test".to_string()
        } else {
            format!(
                "unknown split {}: GENEB uses only train and test (drop other rows, e.g. validation)",
                quote(value)
            )
        };
        Error::at_line(file, cell.line, message)
    })
}
