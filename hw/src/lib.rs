//! The matrix unit in RTL: see issue 5.
