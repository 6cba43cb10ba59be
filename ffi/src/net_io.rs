//! Datagrams in and out of both network endpoints: the argument checks of
//! `tp_net_*_handle`, and the datagram `tp_net_*_poll_transmit` holds back
//! when the caller's buffer is too small.

// Pointers are dereferenced only through `boundary` and `out`, each call
// in an `unsafe` block stating the caller's contract.
#![allow(unsafe_code)]

use std::net::SocketAddr;

use tickpack_net::Handled;

use crate::boundary::{call, slice};
use crate::error::{set_last, Error, TpStatus};
use crate::net_address::TpAddress;
use crate::net_event::TpHandled;
use crate::out::{copy_out, write_opt, Out, OutBuf};

/// The buffer every datagram in and out goes through, and the datagram of
/// a `poll_transmit` whose buffer was too small.
#[derive(Default)]
pub(crate) struct Datagrams {
    buf: Vec<u8>,
    pending: Option<(SocketAddr, Vec<u8>)>,
}

impl Datagrams {
    /// Hands `datagram` to `handle` in our buffer: it is decrypted in place,
    /// and the caller's bytes are not ours to change.
    pub(crate) fn handle(
        &mut self,
        datagram: &[u8],
        handle: impl FnOnce(&mut [u8]) -> Handled,
    ) -> Handled {
        let mut bytes = std::mem::take(&mut self.buf);
        bytes.clear();
        bytes.extend_from_slice(datagram);
        let h = handle(&mut bytes);
        self.buf = bytes;
        h
    }

    /// Writes the held-back datagram, else the one `poll` makes, to `out`,
    /// its length to `written` and its destination to `to`; holds it back
    /// again when `out` is too small. `TP_STATUS_EMPTY` when there is none.
    pub(crate) fn transmit(
        &mut self,
        out: OutBuf<u8>,
        written: Out<usize>,
        to: Option<Out<TpAddress>>,
        poll: impl FnOnce(&mut Vec<u8>) -> Option<SocketAddr>,
    ) -> Result<(), Error> {
        let (dest, bytes) = match self.pending.take() {
            Some(p) => p,
            None => {
                let mut buf = std::mem::take(&mut self.buf);
                match poll(&mut buf) {
                    Some(dest) => (dest, buf),
                    None => {
                        self.buf = buf;
                        return Err(Error::new(TpStatus::Empty, "no datagram to send"));
                    }
                }
            }
        };
        write_opt(to, dest.into());
        let r = copy_out(out, &bytes, written, "out");
        if r.is_err() {
            self.pending = Some((dest, bytes));
        } else {
            self.buf = bytes;
        }
        r
    }
}

/// The body of `tp_net_{client,server}_handle`: checks every argument,
/// then `handle` feeds the datagram from `from` to the endpoint (through
/// its [`Datagrams::handle`]); writes the outcome to `*handled` unless
/// null and keeps a refusal's reason for `tp_last_error_message`.
///
/// # Safety
/// `from` is valid for a read; `datagram` is valid for reads of `len`
/// bytes; `handled` is null or valid for a write.
pub(crate) unsafe fn handle_datagram(
    from: *const TpAddress,
    datagram: *const u8,
    len: usize,
    handled: *mut TpHandled,
    handle: impl FnOnce(SocketAddr, &[u8]) -> Result<Handled, Error>,
) -> TpStatus {
    let mut reason = None;
    let status = call(|| {
        // SAFETY: forwarded from this function's contract.
        let (handled, from, datagram) = unsafe {
            (
                Out::optional(handled, "handled")?,
                slice(from, 1, "from")?,
                slice(datagram, len, "datagram")?,
            )
        };
        let from = from
            .first()
            .ok_or_else(|| Error::null("from"))?
            .to_socket()?;
        let (h, why) = TpHandled::of(&handle(from, datagram)?);
        reason = why;
        write_opt(handled, h);
        Ok(())
    });
    if let Some(reason) = reason.filter(|_| status == TpStatus::Ok) {
        set_last(Some(&reason));
    }
    status
}
