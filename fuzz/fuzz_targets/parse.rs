//! Fuzz target: the HLO parser never panics on any input; when it accepts the input, the
//! printed module re-parses to an equal module and printing is a fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(m) = hlo::parse(text) {
        let p1 = hlo::print(&m);
        let m2 = hlo::parse(&p1).expect("printed module must parse");
        assert!(m == m2, "print→parse changed the module");
        assert_eq!(hlo::print(&m2), p1, "printing is not a fixed point");
    }
});
