//! Shared helpers for the workspace integration tests (tests/tests/*.rs).
