//! Part of a log line written from its end backwards, as the digits of a number
//! come (least significant first): no digit counting, no copy per field, and the
//! finished part goes into the log in one copy. The phout writer and the stpd
//! writer put out a line per shot this way.

/// Up to `N` bytes written from the end backwards.
///
/// Writing more than `N` bytes panics: callers size `N` for the longest line
/// part they write (a `u64` takes at most 20 digits).
pub struct Backwards<const N: usize> {
    bytes: [u8; N],
    start: usize,
}

impl<const N: usize> Default for Backwards<N> {
    fn default() -> Self {
        Backwards {
            bytes: [0; N],
            start: N,
        }
    }
}

/// "00" to "99", two bytes each.
const PAIRS: [u8; 200] = {
    let mut pairs = [0; 200];
    let mut n = 0;
    while n < 100 {
        pairs[2 * n] = b'0' + (n / 10) as u8;
        pairs[2 * n + 1] = b'0' + (n % 10) as u8;
        n += 1;
    }
    pairs
};

impl<const N: usize> Backwards<N> {
    /// Put `byte` before what is written.
    pub fn byte(&mut self, byte: u8) {
        self.start -= 1;
        self.bytes[self.start] = byte;
    }

    /// Put `bytes` before what is written.
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &byte in bytes.iter().rev() {
            self.byte(byte);
        }
    }

    /// Put the two digits of `n % 100` before what is written.
    pub fn pair(&mut self, n: u64) {
        let at = (n % 100) as usize * 2;
        self.start -= 2;
        self.bytes[self.start..self.start + 2].copy_from_slice(&PAIRS[at..at + 2]);
    }

    /// Put `value` in decimal before what is written, two digits at a time.
    pub fn number(&mut self, mut value: u64) {
        while value >= 100 {
            self.pair(value);
            value /= 100;
        }
        if value >= 10 {
            self.pair(value);
        } else {
            self.byte(b'0' + value as u8);
        }
    }

    /// Put `value` in decimal, with a `-` when negative, before what is written.
    pub fn signed(&mut self, value: i64) {
        self.number(value.unsigned_abs());
        if value < 0 {
            self.byte(b'-');
        }
    }

    /// What is written, in order.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parts_come_out_in_order() {
        let mut line = Backwards::<64>::default();
        line.byte(b'\n');
        line.bytes(b"tag");
        line.byte(b' ');
        line.signed(-7);
        line.byte(b' ');
        line.number(0);
        line.byte(b' ');
        line.number(u64::MAX);
        assert_eq!(line.as_bytes(), b"18446744073709551615 0 -7 tag\n");
        let mut min = Backwards::<24>::default();
        min.signed(i64::MIN);
        assert_eq!(min.as_bytes(), i64::MIN.to_string().as_bytes());
    }

    proptest! {
        #[test]
        fn numbers_read_as_format_writes_them(value in any::<u64>(), shift in 0u32..64, signed in any::<i64>()) {
            let mut line = Backwards::<48>::default();
            line.signed(signed);
            line.byte(b' ');
            line.number(value >> shift);
            let expected = format!("{} {signed}", value >> shift);
            prop_assert_eq!(line.as_bytes(), expected.as_bytes());
        }
    }
}
