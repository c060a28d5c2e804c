//! One error type for everything the user can get wrong. Its message is written for the user:
//! which file, which line, what is wrong — the CLI prints it as one line and exits 2, the wasm
//! surface turns it into a JS `Error` the page shows.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The file the problem is in, as the user named it (path or dropped file name).
    pub file: Option<String>,
    /// 1-based line number in that file, where the problem has one.
    pub line: Option<usize>,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            file: None,
            line: None,
            message: message.into(),
        }
    }

    pub fn in_file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Error {
            file: Some(file.into()),
            line: None,
            message: message.into(),
        }
    }

    /// The error, said of `file` unless it already names one (a byte source's read error, said
    /// of the file the reader was given).
    pub fn or_in_file(mut self, file: impl Into<String>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.into());
        }
        self
    }

    pub fn at_line(file: impl Into<String>, line: usize, message: impl Into<String>) -> Self {
        Error {
            file: Some(file.into()),
            line: Some(line),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: {}", self.message),
            (Some(file), None) => write!(f, "{file}: {}", self.message),
            _ => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for Error {}
