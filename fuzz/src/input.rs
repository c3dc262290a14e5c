//! Reading fuzzer bytes as fields. Past the end every read gives zeros, so every input is a
//! complete (if short) case, and libFuzzer's mutations of one field leave the others in place.

pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Up to `n` bytes (fewer at the end).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.data.split_at(n.min(self.data.len()));
        self.data = tail;
        head
    }

    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let b = self.bytes(N);
        out[..b.len()].copy_from_slice(b);
        out
    }

    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    pub fn bool(&mut self) -> bool {
        self.u8() & 1 != 0
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    pub fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.array())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    pub fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.array())
    }

    /// A length-prefixed byte string of at most `max` bytes.
    pub fn string(&mut self, max: usize) -> &'a [u8] {
        let n = usize::from(self.u8()) % (max + 1);
        self.bytes(n)
    }

    /// An integer drawn mostly from where layouts break: small values, powers of two and their
    /// neighbours, the ends of the integer types; sometimes any 64 bits.
    pub fn edgy_i64(&mut self) -> i64 {
        const EDGES: [i64; 16] = [
            0,
            1,
            -1,
            2,
            i64::MAX,
            i64::MIN,
            i64::MAX - 1,
            i64::MIN + 1,
            1 << 62,
            (1 << 62) - 1,
            1 << 61,
            1 << 32,
            1 << 31,
            u32::MAX as i64,
            i32::MAX as i64,
            i32::MIN as i64,
        ];
        let sel = self.u8();
        match sel % 8 {
            0..=3 => i64::from(self.u8() as i8),
            4 => EDGES[usize::from(sel >> 3) % EDGES.len()],
            5 => {
                let p = 1i64.wrapping_shl(u32::from(self.u8() % 64));
                match sel >> 6 {
                    0 => p,
                    1 => p.wrapping_sub(1),
                    2 => p.wrapping_add(1),
                    _ => p.wrapping_neg(),
                }
            }
            _ => self.i64(),
        }
    }

    /// `edgy_i64` as the unsigned bits of a `u64`.
    pub fn edgy_u64(&mut self) -> u64 {
        self.edgy_i64() as u64
    }
}
