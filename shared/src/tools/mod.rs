//! The five base tools every lesson from chapter 2 on gives the model:
//! `bash`, `read_file`, `write_file`, `edit_file` and `glob`.
//!
//! Each tool module offers a `spec()` (what the model is told) and a `call()`
//! that takes the model's raw JSON input and returns a [`ToolOutput`]. Bad
//! input and failures are `is_error` outputs that say what went wrong; no
//! tool panics. Every path goes through [`Workspace`], which refuses to leave
//! the workspace directory.

pub mod bash;
pub mod files;
pub mod input;
pub mod workspace;

pub use crate::hooks::ToolOutput;
pub use workspace::Workspace;
