//! Unit tests of the scan module: every op on every type against a naive reference (`ops`,
//! `lists`), the error paths (`errors`), zone skipping and the segment scanner (`segments`).

mod cases;
mod errors;
mod lists;
mod ops;
mod reference;
mod segments;
