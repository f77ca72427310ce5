//! The terminal front end. (Being written.)
