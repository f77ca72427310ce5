//! xtask's tests, as one test binary: the layout every lesson's tests
//! follow (see rule 7 in `xtask::check`).
//! - [`book`]: the real repository passes `cargo xtask check`;
//! - [`fixture`]: the generator and every check rule, on a made-up
//!   repository;
//! - [`translation`]: the same made-up repository with a Chinese edition:
//!   its generated pages and the rules for translations.

mod book;
mod fixture;
mod translation;
