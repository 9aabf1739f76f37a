//! Tests of the isa crate: property round trips, assembler errors, docs staleness, binary format.

mod asm_tests;
mod docs_tests;
mod props;
mod roles_tests;
