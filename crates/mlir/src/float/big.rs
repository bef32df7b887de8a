//! Little-endian base-2^32 natural numbers: just enough arithmetic for exact conversions between
//! binary floats and decimal digits (both directions need values far wider than `u128`).

use std::cmp::Ordering;

/// A natural number in little-endian 32-bit limbs, kept without high zero limbs (zero is empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Big(Vec<u32>);

impl Big {
    pub(super) fn from_u128(value: u128) -> Big {
        let mut big = Big((0..4).map(|i| (value >> (32 * i)) as u32).collect());
        big.trim();
        big
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of significant bits.
    pub(super) fn bits(&self) -> u32 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u32 - 1) * 32 + (32 - top.leading_zeros()),
        }
    }

    /// Bit `i` (0 is the least significant).
    pub(super) fn bit(&self, i: u32) -> bool {
        self.0.get((i / 32) as usize).is_some_and(|d| (d >> (i % 32)) & 1 == 1)
    }

    pub(super) fn mul_small(&mut self, factor: u32) {
        let mut carry = 0u64;
        for limb in self.0.iter_mut() {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    pub(super) fn add_small(&mut self, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in self.0.iter_mut() {
            if carry == 0 {
                break;
            }
            let sum = u64::from(*limb) + carry;
            *limb = sum as u32;
            carry = sum >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    /// Divides in place, returning the remainder.
    pub(super) fn divrem_small(&mut self, divisor: u32) -> u32 {
        let mut rem = 0u64;
        for limb in self.0.iter_mut().rev() {
            let current = (rem << 32) | u64::from(*limb);
            *limb = (current / u64::from(divisor)) as u32;
            rem = current % u64::from(divisor);
        }
        self.trim();
        rem as u32
    }

    /// Multiplies by `2^bits`.
    pub(super) fn shl(&mut self, bits: u32) {
        let words = (bits / 32) as usize;
        let bits = bits % 32;
        if bits != 0 {
            let mut carry = 0u32;
            for limb in self.0.iter_mut() {
                let next = *limb >> (32 - bits);
                *limb = (*limb << bits) | carry;
                carry = next;
            }
            if carry != 0 {
                self.0.push(carry);
            }
        }
        if words > 0 && !self.is_zero() {
            self.0.splice(0..0, std::iter::repeat_n(0, words));
        }
    }

    /// Subtracts `other`, which must not be larger.
    pub(super) fn sub(&mut self, other: &Big) {
        let mut borrow = 0i64;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let v = i64::from(*limb) - i64::from(other.0.get(i).copied().unwrap_or(0)) - borrow;
            borrow = i64::from(v < 0);
            *limb = v.rem_euclid(1 << 32) as u32;
        }
        self.trim();
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Big) -> Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Big) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_carries_across_limbs() {
        let mut n = Big::from_u128(u128::from(u64::MAX));
        n.add_small(1);
        assert_eq!(n, Big::from_u128(1 << 64));
        n.shl(33);
        assert_eq!(n.bits(), 98);
        assert!(n.bit(97) && !n.bit(96));
        n.mul_small(10);
        assert_eq!(n.divrem_small(10), 0);
        assert_eq!(n, Big::from_u128(1 << 97));
        n.sub(&Big::from_u128(1));
        assert_eq!(n, Big::from_u128((1 << 97) - 1));
        assert!(n < Big::from_u128(1 << 97));
        assert!(Big::from_u128(0).is_zero());
    }
}
