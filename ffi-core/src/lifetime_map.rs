//! The hash map of the runtime's process-lifetime tables: the function registry, the type registry,
//! the loaded modules and their symbols.
//!
//! Why not `HashMap`: these tables live until the process exits, and hashbrown holds its
//! allocation by a pointer into its middle, so at exit a leak checker (valgrind memcheck) sees no
//! pointer to the start of the table and reports it, and everything only it holds (registered
//! functions, their names, modules), as "possibly lost", burying real leaks of a program that
//! uses rffi. Here the entries live in a `Vec`, and the index is a `Vec` of slots (open
//! addressing, linear probing, FxHash): every allocation is held by a pointer to its start and
//! stays "still reachable". Lookups cost the same as hashbrown's for tables this small.

use core::borrow::Borrow;
use core::hash::{BuildHasher, Hash};
use rustc_hash::FxBuildHasher;

/// A slot of the index: `EMPTY`, `REMOVED`, or an entry's position plus one.
const EMPTY: u32 = 0;
const REMOVED: u32 = u32::MAX;

pub(crate) struct LifetimeMap<K, V> {
    entries: Vec<(K, V)>,
    /// A power of two long (or empty), at most half full of entries and removed marks.
    slots: Vec<u32>,
    removed: usize,
}

impl<K, V> Default for LifetimeMap<K, V> {
    fn default() -> Self {
        LifetimeMap {
            entries: Vec::new(),
            slots: Vec::new(),
            removed: 0,
        }
    }
}

fn hash_of<Q: Hash + ?Sized>(key: &Q) -> usize {
    FxBuildHasher.hash_one(key) as usize
}

impl<K: Hash + Eq, V> LifetimeMap<K, V> {
    /// The slot holding `key`, if present.
    fn find<Q>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = hash_of(key) & mask;
        loop {
            match self.slots[i] {
                EMPTY => return None,
                REMOVED => {}
                s if self.entries[s as usize - 1].0.borrow() == key => return Some(i),
                _ => {}
            }
            i = (i + 1) & mask;
        }
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.find(key)
            .map(|i| &self.entries[self.slots[i] as usize - 1].1)
    }

    pub(crate) fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.find(key).is_some()
    }

    /// Inserts or replaces; returns the value replaced.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(i) = self.find(key.borrow()) {
            let entry = &mut self.entries[self.slots[i] as usize - 1];
            return Some(core::mem::replace(&mut entry.1, value));
        }
        if (self.entries.len() + self.removed + 1) * 2 > self.slots.len() {
            self.rebuild((self.entries.len() + 1) * 4);
        }
        self.entries.push((key, value));
        let position = self.entries.len() as u32;
        self.place(position);
        None
    }

    /// Removes `key`; returns its value.
    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.find(key)?;
        let at = self.slots[i] as usize - 1;
        self.slots[i] = REMOVED;
        self.removed += 1;
        let last = self.entries.len() - 1;
        if at != last {
            // The last entry moves into the hole: repoint its slot.
            let moved = self.find(self.entries[last].0.borrow())?;
            self.slots[moved] = at as u32 + 1;
        }
        Some(self.entries.swap_remove(at).1)
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Puts entry `position` (1-based) in the first free slot of its probe sequence.
    fn place(&mut self, position: u32) {
        let mask = self.slots.len() - 1;
        let mut i = hash_of(&self.entries[position as usize - 1].0) & mask;
        while self.slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = position;
    }

    fn rebuild(&mut self, at_least: usize) {
        self.slots = vec![EMPTY; at_least.next_power_of_two().max(8)];
        self.removed = 0;
        for position in 1..=self.entries.len() as u32 {
            self.place(position);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LifetimeMap;
    use std::collections::HashMap;

    /// Random inserts, replacements and removals agree with std's HashMap throughout.
    #[test]
    fn behaves_like_a_hash_map() {
        let mut ours: LifetimeMap<Box<[u8]>, u32> = LifetimeMap::default();
        let mut std_map: HashMap<Box<[u8]>, u32> = HashMap::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for step in 0..20_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let key: Box<[u8]> = format!("k{}", seed % 300).into_bytes().into();
            match seed % 3 {
                0 => assert_eq!(ours.remove(&*key), std_map.remove(&*key), "step {step}"),
                _ => assert_eq!(
                    ours.insert(key.clone(), step),
                    std_map.insert(key, step),
                    "step {step}"
                ),
            }
            if step % 97 == 0 {
                for (k, v) in &std_map {
                    assert_eq!(ours.get(&**k), Some(v));
                }
                assert_eq!(ours.keys().count(), std_map.len());
            }
        }
        assert!(!ours.contains_key(&b"absent"[..]));
    }
}
