//! Built-in presets: JSON files under `arch/presets/`, embedded at compile time.

/// `(name, JSON text)` of every preset, in listing order.
pub const PRESETS: &[(&str, &str)] = &[
    ("tpu-v1", include_str!("../presets/tpu-v1.json")),
    ("tpu-v4", include_str!("../presets/tpu-v4.json")),
    ("tpu-v5e", include_str!("../presets/tpu-v5e.json")),
    ("tpu-v5p", include_str!("../presets/tpu-v5p.json")),
    ("tpu-v6e", include_str!("../presets/tpu-v6e.json")),
    ("mini", include_str!("../presets/mini.json")),
];

/// The JSON text of preset `name`, if there is one.
pub fn preset_json(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
