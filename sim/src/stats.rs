//! The statistics registry: counters declared once with a hierarchical name, a unit and a
//! description, then updated through a typed handle ([`StatId`], an index), never by string on
//! the hot path.
//!
//! Invariants: names are unique (declaring one twice is a simulator bug and panics); listing is in
//! declaration order, so output is deterministic; values are `u64` counts.

/// A handle to a declared statistic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StatId(u32);

/// The declaration of a statistic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatDecl {
    /// Hierarchical name, e.g. `chip0.core0.mxu1.busy_cycles`.
    pub name: String,
    /// Unit: `cycles`, `bytes`, `flops`, `instructions`, `events`, ...
    pub unit: &'static str,
    /// One-line description.
    pub desc: &'static str,
}

/// The registry.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    decls: Vec<StatDecl>,
    values: Vec<u64>,
}

/// One statistic with its value, as listed.
#[derive(Clone, Copy, Debug)]
pub struct StatEntry<'a> {
    /// The declaration.
    pub decl: &'a StatDecl,
    /// The value.
    pub value: u64,
}

impl Stats {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a statistic. Panics if the name is already declared (a simulator bug).
    pub fn declare(&mut self, name: String, unit: &'static str, desc: &'static str) -> StatId {
        assert!(
            self.find(&name).is_none(),
            "statistic {name} declared twice"
        );
        self.decls.push(StatDecl { name, unit, desc });
        self.values.push(0);
        StatId((self.values.len() - 1) as u32)
    }

    /// Adds `v` to a statistic.
    #[inline]
    pub fn add(&mut self, id: StatId, v: u64) {
        self.values[id.0 as usize] += v;
    }

    /// Sets a statistic.
    #[inline]
    pub fn set(&mut self, id: StatId, v: u64) {
        self.values[id.0 as usize] = v;
    }

    /// The value of a statistic.
    #[inline]
    pub fn get(&self, id: StatId) -> u64 {
        self.values[id.0 as usize]
    }

    /// Looks a statistic up by name (cold path: reports and tests).
    pub fn find(&self, name: &str) -> Option<StatId> {
        self.decls
            .iter()
            .position(|d| d.name == name)
            .map(|i| StatId(i as u32))
    }

    /// The value of the statistic named `name`, if declared.
    pub fn value(&self, name: &str) -> Option<u64> {
        self.find(name).map(|id| self.get(id))
    }

    /// All statistics in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = StatEntry<'_>> {
        self.decls
            .iter()
            .zip(&self.values)
            .map(|(decl, &value)| StatEntry { decl, value })
    }

    /// Appends every statistic of `other` with its value, after this registry's (a pod's
    /// registry is its chips' in chip order, then the fabric's). The names must not collide:
    /// each registry holds one chip's statistics (`chipN.…`) or the fabric's (`ici.…`).
    pub fn absorb(&mut self, other: Stats) {
        debug_assert!(other.decls.iter().all(|d| self.find(&d.name).is_none()));
        self.decls.extend(other.decls);
        self.values.extend(other.values);
    }

    /// Number of statistics.
    pub fn len(&self) -> usize {
        self.decls.len()
    }

    /// True if none is declared.
    pub fn is_empty(&self) -> bool {
        self.decls.is_empty()
    }

    /// The registry as a JSON object `{name: {value, unit, desc}}` in declaration order.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for e in self.iter() {
            m.insert(
                e.decl.name.clone(),
                serde_json::json!({"value": e.value, "unit": e.decl.unit, "desc": e.decl.desc}),
            );
        }
        serde_json::Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absorb_appends_in_order_with_values() {
        let mut a = Stats::new();
        let x = a.declare("chip0.x".into(), "bytes", "x");
        a.add(x, 3);
        let mut b = Stats::new();
        let y = b.declare("chip1.x".into(), "bytes", "x");
        b.add(y, 5);
        a.absorb(b);
        let names: Vec<_> = a.iter().map(|e| (e.decl.name.clone(), e.value)).collect();
        assert_eq!(
            names,
            [("chip0.x".to_string(), 3), ("chip1.x".to_string(), 5)]
        );
    }

    #[test]
    #[should_panic(expected = "declared twice")]
    fn duplicate_names_are_a_bug() {
        let mut s = Stats::new();
        s.declare("a".into(), "x", "y");
        s.declare("a".into(), "x", "y");
    }
}
