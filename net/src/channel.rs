//! The channel protocol inside an authenticated connection payload: byte
//! 0 names the channel, the rest is that channel's body.
//!
//! ```text
//! channel  direction        body
//! 0        server → client  fragment header + part of a session packet
//! 1        server → client  connect chunk slice (hello + first snapshot)
//! 2        client → server  connect chunk ack
//! 3        client → server  session client message (ack, full request)
//! 4        client → server  the client's answer to the server's hello
//! ```

/// The channel byte inside a connection-layer payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Channel {
    Fragment = 0,
    Slice = 1,
    ChunkAck = 2,
    Message = 3,
    Answer = 4,
}

impl Channel {
    /// The channel of `b`, `None` for an unknown byte.
    pub(crate) fn from_byte(b: u8) -> Option<Self> {
        [
            Self::Fragment,
            Self::Slice,
            Self::ChunkAck,
            Self::Message,
            Self::Answer,
        ]
        .into_iter()
        .find(|c| *c as u8 == b)
    }
}

/// Splits a payload into its channel and body.
pub(crate) fn split(payload: &[u8]) -> Option<(Channel, &[u8])> {
    let (&first, body) = payload.split_first()?;
    Some((Channel::from_byte(first)?, body))
}

/// The connect chunk: a 1-byte hello length, the server's session hello,
/// the first session packet.
pub(crate) fn connect_chunk(hello: &[u8], packet: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + hello.len() + packet.len());
    // A hello is at most `Hello::MAX_LEN` (38) bytes.
    out.push(u8::try_from(hello.len()).unwrap_or(u8::MAX));
    out.extend_from_slice(hello);
    out.extend_from_slice(packet);
    out
}

/// The hello and the packet of a connect chunk, `None` if malformed.
pub(crate) fn parse_connect_chunk(chunk: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&len, rest) = chunk.split_first()?;
    let len = usize::from(len);
    (rest.len() >= len).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_chunks_round_trip_and_short_ones_are_refused() {
        let c = connect_chunk(b"hello", b"packet");
        assert_eq!(
            parse_connect_chunk(&c),
            Some((&b"hello"[..], &b"packet"[..]))
        );
        assert_eq!(parse_connect_chunk(&[9, 1, 2]), None);
        assert_eq!(parse_connect_chunk(&[]), None);
    }

    #[test]
    fn unknown_channels_are_refused() {
        assert_eq!(split(&[3, 1]), Some((Channel::Message, &[1u8][..])));
        assert_eq!(split(&[5, 1]), None);
        assert_eq!(split(&[]), None);
    }
}
