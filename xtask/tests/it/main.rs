//! xtask's tests, as one test binary: the layout every lesson's tests
//! follow (see rule 7 in `xtask::check`).
//! - [`book`]: the real repository passes `cargo xtask check`;
//! - [`carry`]: `cargo xtask carry` on a made-up chain in a real git
//!   repository;
//! - [`fixture`]: the generator and every check rule, on a made-up
//!   repository;
//! - [`translation`]: the same made-up repository with a Chinese edition:
//!   its generated pages and the rules for translations;
//! - [`fork`]: `cargo xtask fork` writes lessons that build, test and run
//!   on their own.

mod book;
mod carry;
mod fixture;
mod fork;
mod translation;
