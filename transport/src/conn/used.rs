//! The connect tokens that got a connection, each remembered until it
//! expires, so that a token connects once for its whole life (not only
//! until enough other tokens pushed it out).

use std::collections::HashMap;

use super::crypto::KEY_BYTES;

/// Used tokens remembered per client slot at most: a server whose slots
/// turn over faster than that within a token's lifetime forgets the tokens
/// nearest their expiry first. Forgetting costs no safety: a reconnection
/// under a forgotten token gets fresh connection keys (HKDF with a new
/// server nonce), so no packet of the earlier connection authenticates.
pub(crate) const USED_TOKENS_PER_SLOT: usize = 64;

/// Client-to-server token keys of used tokens, with their expiry (seconds
/// since the Unix epoch).
#[derive(Debug, Default)]
pub(crate) struct UsedTokens {
    expiry: HashMap<[u8; KEY_BYTES], u64>,
}

impl UsedTokens {
    /// Whether the token with this key got a connection and has not
    /// expired at `now_secs`.
    pub(crate) fn contains(&self, key: &[u8; KEY_BYTES], now_secs: u64) -> bool {
        self.expiry.get(key).is_some_and(|&e| now_secs < e)
    }

    /// Remembers a token until `expires_at`, keeping at most `cap`.
    pub(crate) fn insert(
        &mut self,
        key: [u8; KEY_BYTES],
        expires_at: u64,
        now_secs: u64,
        cap: usize,
    ) {
        if !self.expiry.contains_key(&key) && self.expiry.len() >= cap.max(1) {
            self.expiry.retain(|_, &mut e| now_secs < e);
            if self.expiry.len() >= cap.max(1) {
                let soonest = self.expiry.iter().min_by_key(|(_, &e)| e).map(|(k, _)| *k);
                if let Some(k) = soonest {
                    self.expiry.remove(&k);
                }
            }
        }
        self.expiry.insert(key, expires_at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_until_expiry_within_the_cap() {
        let mut u = UsedTokens::default();
        u.insert([1; 32], 100, 10, 2);
        u.insert([2; 32], 50, 10, 2);
        assert!(u.contains(&[1; 32], 99) && !u.contains(&[1; 32], 100));
        // Full: the one nearest its expiry goes.
        u.insert([3; 32], 80, 10, 2);
        assert!(u.contains(&[1; 32], 10) && u.contains(&[3; 32], 10));
        assert!(!u.contains(&[2; 32], 10));
        // Expired ones go first.
        u.insert([4; 32], 200, 90, 2);
        assert!(u.contains(&[1; 32], 90) && u.contains(&[4; 32], 90));
        assert_eq!(u.expiry.len(), 2);
    }
}
