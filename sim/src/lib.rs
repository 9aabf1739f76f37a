//! The cycle-approximate simulator: see issue 4.
