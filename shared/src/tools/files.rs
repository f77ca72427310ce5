//! `read_file`, `write_file`, `edit_file` and `glob`. (Being written.)
