//! The instruction set: see issue 4.
