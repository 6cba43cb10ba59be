//! The connect tokens that got a connection, each remembered until it
//! expires, so that a token connects once for its whole life (not only
//! until enough other tokens pushed it out).

use std::collections::HashMap;

use super::crypto::KEY_BYTES;

/// Used tokens remembered per client slot at most. Past that the server
/// forgets, nearest expiry first, a token whose challenge has expired: its
/// recorded response is refused as expired, and a new request under it
/// gets a new server nonce and so fresh connection keys, under which no
/// packet of the earlier connection authenticates. If every remembered
/// token's challenge is still live (more connections within a challenge's
/// lifetime than this allows), new connections wait: the bound is a rate.
pub(crate) const USED_TOKENS_PER_SLOT: usize = 64;

/// Client-to-server token keys of used tokens, with the token's and its
/// challenge's expiry (seconds since the Unix epoch).
#[derive(Debug, Default)]
pub(crate) struct UsedTokens {
    expiry: HashMap<[u8; KEY_BYTES], (u64, u64)>,
    /// When expired tokens were last forgotten: at most once a second, so
    /// the table holds what is live, not every token since it last filled.
    pruned_at: u64,
}

impl UsedTokens {
    /// Whether the token with this key got a connection and has not
    /// expired at `now_secs`.
    pub(crate) fn contains(&self, key: &[u8; KEY_BYTES], now_secs: u64) -> bool {
        self.expiry.get(key).is_some_and(|&(e, _)| now_secs < e)
    }

    /// Whether a token can be remembered at `now_secs` within `cap`,
    /// forgetting one whose challenge expired if need be.
    pub(crate) fn has_room(&mut self, now_secs: u64, cap: usize) -> bool {
        if now_secs > self.pruned_at || self.expiry.len() >= cap.max(1) {
            self.expiry.retain(|_, &mut (e, _)| now_secs < e);
            self.pruned_at = now_secs;
        }
        if self.expiry.len() < cap.max(1) {
            return true;
        }
        let forgettable = self
            .expiry
            .iter()
            .filter(|(_, &(_, challenge))| challenge <= now_secs)
            .min_by_key(|(_, &(e, _))| e)
            .map(|(k, _)| *k);
        forgettable.is_some_and(|k| self.expiry.remove(&k).is_some())
    }

    /// Remembers a token until `expires_at`; its challenge expires at
    /// `challenge_expires_at`. Call [`UsedTokens::has_room`] first.
    pub(crate) fn insert(
        &mut self,
        key: [u8; KEY_BYTES],
        expires_at: u64,
        challenge_expires_at: u64,
    ) {
        self.expiry.insert(key, (expires_at, challenge_expires_at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_until_expiry_within_the_cap() {
        let mut u = UsedTokens::default();
        assert!(u.has_room(10, 2));
        u.insert([1; 32], 100, 15);
        assert!(u.has_room(10, 2));
        u.insert([2; 32], 50, 15);
        assert!(u.contains(&[1; 32], 99) && !u.contains(&[1; 32], 100));
        // Full, and both challenges live: no room (the rate bound).
        assert!(!u.has_room(14, 2));
        assert_eq!(u.expiry.len(), 2);
        // Challenges expired: the one nearest its expiry goes.
        assert!(u.has_room(15, 2));
        u.insert([3; 32], 80, 20);
        assert!(u.contains(&[1; 32], 15) && u.contains(&[3; 32], 15));
        assert!(!u.contains(&[2; 32], 15));
        // Expired tokens go first.
        assert!(u.has_room(90, 2));
        u.insert([4; 32], 200, 95);
        assert!(u.contains(&[1; 32], 90) && u.contains(&[4; 32], 90));
        assert_eq!(u.expiry.len(), 2);
    }

    #[test]
    fn expired_tokens_are_forgotten_before_the_table_fills() {
        let mut u = UsedTokens::default();
        for i in 0..10u8 {
            assert!(u.has_room(10, 64));
            u.insert([i; 32], 20, 12);
        }
        assert_eq!(u.expiry.len(), 10);
        // Far below the cap, the next connection after they expired
        // forgets them.
        assert!(u.has_room(21, 64));
        assert_eq!(u.expiry.len(), 0);
    }
}
