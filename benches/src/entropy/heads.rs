//! Per value context, the head alphabet (126 symbols: leaf 0, leaf 1,
//! then leaf 2..=63 with the bit below the top) in the two forms the
//! prototypes need: frequencies over `2^15` with a bucket lookup (rANS,
//! as the range coder's `ClassCdf`), and a Huffman-shaped binary tree
//! with a 12-bit probability per node (the binary coder).

#![forbid(unsafe_code)]

/// Head symbols.
pub const SYMBOLS: usize = 126;
/// Bits of the head frequency total.
pub const FREQ_BITS: u32 = 15;
const FREQ_TOTAL: u32 = 1 << FREQ_BITS;
const BUCKET_BITS: u32 = 9;
const BUCKET_SHIFT: u32 = FREQ_BITS - BUCKET_BITS;
const SPLIT: u8 = 0x80;
/// The flag of a tree child that is a leaf (the symbol in the low bits).
pub const LEAF: u8 = 0x80;

/// Slots of a value context (see `tickpack::model::value`).
const TOP_SLOT: usize = 63;
const SECOND_SLOT: usize = 64;
const SIGN_SLOT: usize = 79;

/// One value context's head frequencies and lookup, tree, and the top
/// and sign probabilities.
#[derive(Debug, Clone)]
pub struct Heads {
    /// Chance of class 63 rather than 64.
    pub top: u16,
    /// Chance of a positive sign.
    pub sign: u16,
    /// `cum[s]..cum[s + 1]` is symbol `s`'s share of `2^15`.
    pub cum: [u16; SYMBOLS + 1],
    first: [u8; 1 << BUCKET_BITS],
    /// Internal nodes, root first.
    pub nodes: Vec<Node>,
    /// Per symbol, its path from the root.
    pub paths: [Path; SYMBOLS],
}

impl Heads {
    /// The alphabet of a value context's 80 slots, as the codec derives
    /// it (`ClassCdf::from_nodes`): a symbol's weight is the product of
    /// its leaf's six node probabilities and its second bit's, its
    /// frequency `1 + floor(weight · (2^15 - 126) / 2^84)`, the rest to
    /// the heaviest symbol.
    pub fn new(slots: &[u16]) -> Self {
        let p = |slot: usize| u128::from(slots.get(slot).copied().unwrap_or(2048));
        let one = 4096u128;
        let mut weight = [0u128; SYMBOLS];
        for leaf in 0..64usize {
            let mut node = 1usize;
            let mut product = 1u128;
            for i in (0..6).rev() {
                let bit = (leaf >> i) & 1;
                product *= if bit == 1 {
                    one - p(node - 1)
                } else {
                    p(node - 1)
                };
                node = node * 2 + bit;
            }
            if leaf < 2 {
                weight[leaf] = product * one;
            } else {
                let p2 = p(SECOND_SLOT + (leaf - 2).min(14));
                weight[2 * leaf - 2] = product * p2;
                weight[2 * leaf - 1] = product * (one - p2);
            }
        }
        let spread = u128::from(FREQ_TOTAL) - SYMBOLS as u128;
        let mut freq = [0u32; SYMBOLS];
        let mut sum = 0u32;
        for (f, &w) in freq.iter_mut().zip(&weight) {
            *f = 1 + ((w * spread) >> 84) as u32;
            sum += *f;
        }
        let mut top = 0;
        for (s, &w) in weight.iter().enumerate() {
            if w > weight[top] {
                top = s;
            }
        }
        freq[top] += FREQ_TOTAL - sum;
        let mut cum = [0u16; SYMBOLS + 1];
        let mut acc = 0u32;
        for (s, &f) in freq.iter().enumerate() {
            acc += f;
            cum[s + 1] = acc as u16;
        }
        let mut first = [0u8; 1 << BUCKET_BITS];
        let mut s = 0usize;
        for (b, f) in first.iter_mut().enumerate() {
            while u32::from(cum[s + 1]) <= (b as u32) << BUCKET_SHIFT {
                s += 1;
            }
            let whole = u32::from(cum[s + 1]) >= (b as u32 + 1) << BUCKET_SHIFT;
            *f = s as u8 | if whole { 0 } else { SPLIT };
        }
        let (nodes, paths) = tree(&freq);
        Self {
            top: p(TOP_SLOT) as u16,
            sign: p(SIGN_SLOT) as u16,
            cum,
            first,
            nodes,
            paths,
        }
    }

    /// Symbol `s`'s start and frequency.
    #[inline(always)]
    pub fn range(&self, s: usize) -> (u32, u32) {
        let s = s.min(SYMBOLS - 1);
        let start = u32::from(self.cum[s]);
        (start, u32::from(self.cum[s + 1]) - start)
    }

    /// The symbol holding `target` (below `2^15`), its start and frequency.
    #[inline(always)]
    pub fn find(&self, target: u32) -> (u32, u32, u32) {
        let entry = self.first[(target >> BUCKET_SHIFT) as usize & ((1 << BUCKET_BITS) - 1)];
        let mut s = usize::from(entry & !SPLIT);
        if entry & SPLIT != 0 {
            while s < SYMBOLS - 1 && u32::from(self.cum[s + 1]) <= target {
                s += 1;
            }
        }
        let (start, freq) = self.range(s);
        (s as u32, start, freq)
    }
}

/// A tree node: its chance of a 0 and its two children (a node index,
/// or [`LEAF`] plus a symbol).
pub type Node = (u16, [u8; 2]);
/// A symbol's path from the root: bits (first decision lowest), length.
pub type Path = (u32, u8);

/// A Huffman tree over `freq` (every frequency at least 1): internal
/// nodes root first, each with its chance of a 0 (the left subtree's
/// share, 12 bits, clamped to `1..4096`), and each symbol's path.
fn tree(freq: &[u32; SYMBOLS]) -> (Vec<Node>, [Path; SYMBOLS]) {
    // Build bottom-up: items are (weight, child encoding); internal nodes
    // get indices in creation order, then are renumbered root first.
    let mut items: Vec<(u64, u16)> = freq
        .iter()
        .enumerate()
        .map(|(s, &f)| (u64::from(f), 0x100 | s as u16))
        .collect();
    let mut built: Vec<(u64, u64, [u16; 2])> = Vec::new();
    while items.len() > 1 {
        // Two lightest, ties by order (deterministic).
        items.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        let (Some(a), Some(b)) = (items.pop(), items.pop()) else {
            break;
        };
        built.push((a.0, b.0, [a.1, b.1]));
        items.push((a.0 + b.0, (built.len() - 1) as u16));
    }
    // Renumber: root (last built) is 0, children in breadth-first order.
    let n = built.len();
    let mut order = Vec::with_capacity(n);
    let mut index = vec![0u8; n];
    if n > 0 {
        order.push(n - 1);
    }
    let mut k = 0;
    while k < order.len() {
        let node = order[k];
        index[node] = k as u8;
        for &c in &built[node].2 {
            if c & 0x100 == 0 {
                order.push(usize::from(c));
            }
        }
        k += 1;
    }
    let nodes: Vec<Node> = order
        .iter()
        .map(|&node| {
            let (w0, w1, kids) = built[node];
            let p = ((w0 * 4096 + (w0 + w1) / 2) / (w0 + w1)).clamp(1, 4095) as u16;
            let enc = |c: u16| {
                if c & 0x100 != 0 {
                    LEAF | (c & 0x7f) as u8
                } else {
                    index[usize::from(c)]
                }
            };
            (p, [enc(kids[0]), enc(kids[1])])
        })
        .collect();
    let mut paths: [Path; SYMBOLS] = [(0, 0); SYMBOLS];
    let mut stack = vec![(0u8, 0u32, 0u8)];
    while let Some((node, bits, len)) = stack.pop() {
        let Some(&(_, kids)) = nodes.get(usize::from(node)) else {
            continue;
        };
        for (b, &c) in kids.iter().enumerate() {
            let (bits, len) = (bits | (b as u32) << len, len + 1);
            if c & LEAF != 0 {
                paths[usize::from(c & !LEAF)] = (bits, len);
            } else {
                stack.push((c, bits, len));
            }
        }
    }
    (nodes, paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_paths_reach_their_symbols() {
        let mut slots = [2048u16; 80];
        for (i, s) in slots.iter_mut().enumerate() {
            *s = [4090, 30, 2048, 3900, 7][i % 5];
        }
        let h = Heads::new(&slots);
        assert_eq!(h.nodes.len(), SYMBOLS - 1);
        for s in 0..SYMBOLS {
            let (bits, len) = h.paths[s];
            assert!(len > 0 && len < 32);
            let mut node = 0u8;
            for k in 0..len {
                let c = h.nodes[usize::from(node)].1[((bits >> k) & 1) as usize];
                if k + 1 == len {
                    assert_eq!(c, LEAF | s as u8);
                } else {
                    node = c;
                }
            }
        }
        for t in 0..FREQ_TOTAL {
            let (s, start, f) = h.find(t);
            assert!(start <= t && t < start + f && (s as usize) < SYMBOLS);
        }
    }
}
