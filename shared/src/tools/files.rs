//! What the file tools share: reading a file with a size cap, and turning
//! I/O errors into messages the model can act on.
//!
//! The tools themselves live one per module: [`super::read_file`],
//! [`super::write_file`], [`super::edit_file`] and [`super::glob`].

use std::io;
use std::path::Path;

use tokio::io::AsyncReadExt;

use crate::hooks::ToolOutput;

/// The most bytes a file tool reads from one file. The model sees at most
/// [`super::MAX_OUTPUT_CHARS`] characters anyway; the cap keeps a stray
/// `read_file` on a multi-gigabyte log from filling memory.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// The start of a file, as much as was read.
pub(crate) struct FilePrefix {
    /// At most [`MAX_FILE_BYTES`] bytes from the start of the file.
    pub bytes: Vec<u8>,
    /// The file's full size.
    pub size: u64,
}

impl FilePrefix {
    /// Whether the file was longer than what was read.
    pub(crate) fn is_partial(&self) -> bool {
        (self.bytes.len() as u64) < self.size
    }
}

/// Reads up to [`MAX_FILE_BYTES`] of the file at `path`. `shown` is the path
/// as the model wrote it, for error messages.
pub(crate) async fn read_prefix(path: &Path, shown: &str) -> Result<FilePrefix, ToolOutput> {
    let metadata = tokio::fs::metadata(path)
        .await
        .map_err(|error| io_error("read", shown, &error))?;
    if metadata.is_dir() {
        return Err(ToolOutput::error(format!(
            "{shown} is a directory, not a file (use glob to list files)"
        )));
    }
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|error| io_error("read", shown, &error))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .await
        .map_err(|error| io_error("read", shown, &error))?;
    Ok(FilePrefix {
        bytes,
        size: metadata.len(),
    })
}

/// An I/O failure, in words: "File not found: notes.txt" reads better to
/// the model than "No such file or directory (os error 2)".
pub(crate) fn io_error(action: &str, shown: &str, error: &io::Error) -> ToolOutput {
    let text = match error.kind() {
        io::ErrorKind::NotFound => format!("File not found: {shown}"),
        io::ErrorKind::PermissionDenied => format!("Permission denied: cannot {action} {shown}"),
        io::ErrorKind::IsADirectory => format!("Cannot {action} {shown}: it is a directory"),
        _ => format!("Cannot {action} {shown}: {error}"),
    };
    ToolOutput::error(text)
}
