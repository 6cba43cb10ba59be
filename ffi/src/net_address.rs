//! Socket addresses as C sees them: a family, a port and 16 address bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::error::Error;

/// `TpAddress::family` of an IPv4 address.
pub const TP_ADDRESS_IPV4: u8 = 4;
/// `TpAddress::family` of an IPv6 address.
pub const TP_ADDRESS_IPV6: u8 = 6;

/// A UDP address: what `recvfrom` gave you, or where to `sendto`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TpAddress {
    /// `TP_ADDRESS_IPV4` or `TP_ADDRESS_IPV6`; any other value is refused.
    pub family: u8,
    /// The port, in host byte order.
    pub port: u16,
    /// The address in network byte order: the first 4 bytes for IPv4
    /// (the rest are ignored when read and zero when written), all 16 for
    /// IPv6.
    pub bytes: [u8; 16],
}

impl TpAddress {
    /// The socket address, or an error for an unknown family.
    pub(crate) fn to_socket(self) -> Result<SocketAddr, Error> {
        let [a, b, c, d, ..] = self.bytes;
        let ip = match self.family {
            TP_ADDRESS_IPV4 => IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
            TP_ADDRESS_IPV6 => IpAddr::V6(Ipv6Addr::from(self.bytes)),
            other => {
                return Err(Error::invalid(format_args!(
                    "address family {other} is neither TP_ADDRESS_IPV4 nor TP_ADDRESS_IPV6"
                )))
            }
        };
        Ok(SocketAddr::new(ip, self.port))
    }
}

impl From<SocketAddr> for TpAddress {
    fn from(addr: SocketAddr) -> Self {
        let mut bytes = [0u8; 16];
        let family = match addr.ip() {
            IpAddr::V4(ip) => {
                bytes[..4].copy_from_slice(&ip.octets());
                TP_ADDRESS_IPV4
            }
            IpAddr::V6(ip) => {
                bytes = ip.octets();
                TP_ADDRESS_IPV6
            }
        };
        Self {
            family,
            port: addr.port(),
            bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn addresses_round_trip_and_unknown_families_are_refused() {
        for text in ["127.0.0.1:4000", "[::1]:65535", "[2001:db8::7]:1"] {
            let addr: SocketAddr = text.parse().unwrap();
            assert_eq!(TpAddress::from(addr).to_socket().unwrap(), addr);
        }
        let bad = TpAddress {
            family: 5,
            ..TpAddress::default()
        };
        assert!(bad.to_socket().is_err());
    }
}
