//! Architecture configuration (`ArchConfig`): see issue 4.
