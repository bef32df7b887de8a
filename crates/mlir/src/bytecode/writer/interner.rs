//! A table of unique items in first-insertion order, for the writer's attributes, types and
//! strings. Each item is stored once (the lookup index holds only item numbers and hashes), so
//! interning a new attribute costs one hash and no copy of it, and looking a string up by its
//! bytes allocates nothing.
//!
//! Most items a writer interns are new (a module's attributes are mostly distinct already), and
//! probing a large hash table for each is a cache miss that stalls the writer. A bit per hash value
//! (`seen`, small enough to stay in cache) proves most new items new without probing: they are
//! only appended, and the table indexes them later, in one pass, when an item whose bit is set
//! must be looked up.
//!
//! Items the caller knows to be distinct ([`Interner::push_distinct`]: a context's attributes,
//! which the context already uniques) are appended without even a hash; they are hashed only if
//! a lookup comes after them.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

const EMPTY: u64 = u64::MAX;

pub(super) struct Interner<T> {
    pub items: Vec<T>,
    /// The hash of each item but the last ones [`Interner::push_distinct`] appended, to index and
    /// grow without hashing items again; those (`hashes.len()..`) are hashed before a lookup.
    hashes: Vec<u64>,
    /// Open addressing (linear probing), a power of two long and at most half full: each slot holds
    /// an item's number and the high half of its hash, so that a probe compares items only when
    /// that half matches and reads nothing outside this table otherwise.
    slots: Vec<u64>,
    /// Items `indexed..` are not in `slots` yet.
    indexed: usize,
    /// One bit per value of a hash's high bits, set for every item's hash: a clear bit proves an
    /// item new. Eight bits per slot.
    seen: Vec<u64>,
    hasher: foldhash::fast::FixedState,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<T> Interner<T> {
    /// Room for `capacity` items before any reallocation. The lookup table is made by the first
    /// lookup (sized for `capacity`): a table only ever appended to never has one.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            items: Vec::with_capacity(capacity),
            hashes: Vec::new(),
            slots: Vec::new(),
            indexed: 0,
            seen: Vec::new(),
            hasher: foldhash::fast::FixedState::default(),
        }
    }

    /// The number of `key`, made by `make` and added if no equal item is there yet.
    pub fn intern_with<Q>(&mut self, key: &Q, make: impl FnOnce() -> T) -> u32
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hasher = self.hasher.clone();
        self.hash_pending(|item| hasher.hash_one(item.borrow()));
        let hash = self.hasher.hash_one(key);
        match self.find(hash, |item| item.borrow() == key) {
            Some(index) => index,
            None => self.push(hash, make()),
        }
    }

    /// The number of `item`, added if no equal item is there yet.
    pub fn intern(&mut self, item: T) -> u32
    where
        T: Hash + Eq,
    {
        let hasher = self.hasher.clone();
        self.hash_pending(|item| hasher.hash_one(item));
        let hash = self.hasher.hash_one(&item);
        match self.find(hash, |other| *other == item) {
            Some(index) => index,
            None => self.push(hash, item),
        }
    }

    /// The number of the item with `hash` that `eq` accepts.
    fn find(&mut self, hash: u64, eq: impl Fn(&T) -> bool) -> Option<u32> {
        let (word, bit) = self.seen_bit(hash);
        if self.seen[word] & bit == 0 {
            return None;
        }
        self.index_pending();
        let mask = self.slots.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            let entry = self.slots[slot];
            if entry == EMPTY {
                return None;
            }
            let index = entry as u32;
            if entry >> 32 == hash >> 32 && eq(&self.items[index as usize]) {
                return Some(index);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Appends `item`, which the caller knows equals no item in the table, and returns its number.
    pub fn push_distinct(&mut self, item: T) -> u32 {
        self.items.push(item);
        self.items.len() as u32 - 1
    }

    /// Hashes the items [`Interner::push_distinct`] appended since the last lookup (making the
    /// table first if there is none).
    fn hash_pending(&mut self, hash: impl Fn(&T) -> u64) {
        if self.slots.is_empty() {
            self.hashes.reserve(self.items.capacity());
            self.resize((self.items.capacity() * 2).next_power_of_two().max(16));
        }
        for index in self.hashes.len()..self.items.len() {
            let hash = hash(&self.items[index]);
            self.hashes.push(hash);
            let (word, bit) = self.seen_bit(hash);
            self.seen[word] |= bit;
        }
        while self.items.len() * 2 > self.slots.len() {
            self.grow();
        }
    }

    fn push(&mut self, hash: u64, item: T) -> u32 {
        let index = self.items.len() as u32;
        self.items.push(item);
        self.hashes.push(hash);
        let (word, bit) = self.seen_bit(hash);
        self.seen[word] |= bit;
        if self.items.len() * 2 > self.slots.len() {
            self.grow();
        }
        index
    }

    /// The word and bit of `seen` for `hash` (from its high bits; the slot comes from the low).
    fn seen_bit(&self, hash: u64) -> (usize, u64) {
        let bit = (hash >> 32) as usize & (self.seen.len() * 64 - 1);
        (bit / 64, 1 << (bit % 64))
    }

    /// Puts the items not yet in `slots` there: independent probes, which the processor overlaps.
    fn index_pending(&mut self) {
        let mask = self.slots.len() - 1;
        for (index, &hash) in self.hashes.iter().enumerate().skip(self.indexed) {
            let mut slot = hash as usize & mask;
            while self.slots[slot] != EMPTY {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = entry(hash, index as u32);
        }
        self.indexed = self.items.len();
    }

    /// Doubles `slots` and `seen`, indexing every item again.
    fn grow(&mut self) {
        self.resize(self.slots.len() * 2);
    }

    /// Makes `slots` `len` long (and `seen` to match), indexing every item again.
    fn resize(&mut self, len: usize) {
        self.slots = vec![EMPTY; len];
        self.seen = vec![0; len / 8];
        self.indexed = 0;
        for &hash in &self.hashes {
            let (word, bit) = self.seen_bit(hash);
            self.seen[word] |= bit;
        }
    }
}

/// A slot: the high half of `hash` and the item number (never [`EMPTY`]: item numbers stay below
/// `u32::MAX`).
fn entry(hash: u64, index: u32) -> u64 {
    (hash & !0xFFFF_FFFF) | u64::from(index)
}

#[cfg(test)]
mod tests {
    use super::Interner;

    /// Numbers are first-insertion order, equal items get one number, across the table growing
    /// and with lookups between pending (not yet indexed) items.
    #[test]
    fn equal_items_get_one_number_in_first_insertion_order() {
        let mut table: Interner<(u32, String)> = Interner::with_capacity(4);
        for i in 0..5000u32 {
            assert_eq!(table.intern((i % 3, format!("item {i}"))), i);
            if i % 7 == 0 {
                // An item seen before, looked up while later ones are still pending.
                assert_eq!(table.intern((i / 2 % 3, format!("item {}", i / 2))), i / 2);
            }
        }
        for i in (0..5000u32).rev() {
            assert_eq!(table.intern((i % 3, format!("item {i}"))), i);
        }
        assert_eq!(table.items.len(), 5000);
        assert_eq!(table.intern((0, "new".to_owned())), 5000);
    }

    /// Items appended as distinct are numbered in order and found by lookups made after them,
    /// across the table growing.
    #[test]
    fn distinct_items_are_found_by_later_lookups() {
        let mut table: Interner<(u32, String)> = Interner::with_capacity(2);
        for i in 0..1000u32 {
            assert_eq!(table.push_distinct((i, format!("item {i}"))), i);
        }
        assert_eq!(table.intern((7, "item 7".to_owned())), 7);
        assert_eq!(table.intern((1, "new".to_owned())), 1000);
        assert_eq!(table.push_distinct((2, "after a lookup".to_owned())), 1001);
        assert_eq!(table.intern((999, "item 999".to_owned())), 999);
        assert_eq!(table.intern((2, "after a lookup".to_owned())), 1001);
        assert_eq!(table.items.len(), 1002);
    }

    #[test]
    fn strings_are_found_by_their_bytes() {
        let mut table: Interner<Box<[u8]>> = Interner::default();
        assert_eq!(table.intern_with(&b"a"[..], || Box::from(&b"a"[..])), 0);
        assert_eq!(table.intern_with(&b"b"[..], || Box::from(&b"b"[..])), 1);
        assert_eq!(table.intern_with(&b"a"[..], || unreachable!("already there")), 0);
        assert_eq!(table.items, [Box::from(&b"a"[..]), Box::from(&b"b"[..])]);
    }
}
