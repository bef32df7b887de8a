//! A table of unique items in first-insertion order, for the writer's attributes, types and
//! strings. Each item is stored once (the lookup index holds only item numbers and hashes), so
//! interning a new attribute costs one hash and no copy of it, and looking a string up by its
//! bytes allocates nothing.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

const EMPTY: u32 = u32::MAX;

pub(super) struct Interner<T> {
    pub items: Vec<T>,
    /// Each item's hash, to compare before comparing items and to grow without rehashing.
    hashes: Vec<u64>,
    /// Open addressing (linear probing) over item numbers; a power of two long, at most 7/8 full.
    slots: Vec<u32>,
    hasher: foldhash::fast::FixedState,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<T> Interner<T> {
    /// Room for `capacity` items before any reallocation.
    pub fn with_capacity(capacity: usize) -> Self {
        let slots = (capacity + capacity / 7 + 1).next_power_of_two().max(16);
        Self {
            items: Vec::with_capacity(capacity),
            hashes: Vec::with_capacity(capacity),
            slots: vec![EMPTY; slots],
            hasher: foldhash::fast::FixedState::default(),
        }
    }

    /// The number of `key`, made by `make` and added if no equal item is there yet.
    pub fn intern_with<Q>(&mut self, key: &Q, make: impl FnOnce() -> T) -> u32
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        match self.find(hash, |item| item.borrow() == key) {
            Ok(index) => index,
            Err(slot) => self.insert(slot, hash, make()),
        }
    }

    /// The number of `item`, added if no equal item is there yet.
    pub fn intern(&mut self, item: T) -> u32
    where
        T: Hash + Eq,
    {
        let hash = self.hasher.hash_one(&item);
        match self.find(hash, |other| *other == item) {
            Ok(index) => index,
            Err(slot) => self.insert(slot, hash, item),
        }
    }

    /// The number of the item with `hash` that `eq` accepts, or the empty slot where it goes.
    fn find(&self, hash: u64, eq: impl Fn(&T) -> bool) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            let index = self.slots[slot];
            if index == EMPTY {
                return Err(slot);
            }
            if self.hashes[index as usize] == hash && eq(&self.items[index as usize]) {
                return Ok(index);
            }
            slot = (slot + 1) & mask;
        }
    }

    fn insert(&mut self, slot: usize, hash: u64, item: T) -> u32 {
        let index = self.items.len() as u32;
        self.items.push(item);
        self.hashes.push(hash);
        self.slots[slot] = index;
        if self.items.len() * 8 > self.slots.len() * 7 {
            self.grow();
        }
        index
    }

    fn grow(&mut self) {
        let mut slots = vec![EMPTY; self.slots.len() * 2];
        let mask = slots.len() - 1;
        for (index, &hash) in self.hashes.iter().enumerate() {
            let mut slot = hash as usize & mask;
            while slots[slot] != EMPTY {
                slot = (slot + 1) & mask;
            }
            slots[slot] = index as u32;
        }
        self.slots = slots;
    }
}
